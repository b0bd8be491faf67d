"""The Python API (``from solvers import solve, simulate, compare, load_spec``): the same JSON
and the same one-line errors as the command line, float64 arrays, exact strings on request;
and the argument checks of the lower-level functions it rests on."""
import json
from fractions import Fraction

import numpy as np
import pytest
import sympy as sp

import solvers
from derive import spectra
from derive.keys import SystemKey
from solvers import SpecError, compare, load_spec, simulate, solve
from solvers.core.problem import Problem, expected_init, random_init
from cli_support import run_cli, write_spec
from specs import ERF_K2_L4, toml_doc

pytestmark = [pytest.mark.contract, pytest.mark.second_basis]  # oracle (tests/conftest.py)

SPEC = {"model": {"activation": "erf", "K": 2, "M": 2},
        "data": {"L": 4, "beta": 1.0, "N": 64},
        "training": {"eta": 0.5, "sigma_J": 0.1, "seed": 3},
        "solve": {"alpha_max": 20, "n_points": 5, "spacing": "linear", "basis": "modes",
                  "dps": "float64", "digits": 8}}
TOML = ERF_K2_L4 + ("[training]\neta = 0.5\nsigma_J = 0.1\nseed = 3\n[solve]\nalpha_max = 20\n"
                    "n_points = 5\nspacing = \"linear\"\nbasis = \"modes\"\ndps = \"float64\"\n"
                    "digits = 8\n")
RUN_DEPENDENT = ("wall_s", "cpu_s", "steps_per_second", "concurrent_runs", "threads", "kernel")


def _same_json(a: dict, b: dict):
    """Equal up to the run's timings (meta keys that differ between two identical runs)."""
    def strip(x):
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if k not in RUN_DEPENDENT}
        return [strip(v) for v in x] if isinstance(x, list) else x
    assert strip(json.loads(json.dumps(a))) == strip(json.loads(json.dumps(b)))


# -- the three ways to give a spec; the CLI's JSON -----------------------------------------

def test_dict_path_and_spec_give_the_cli_json(tmp_path, capsys):
    path = write_spec(tmp_path, TOML)
    code, out, err = run_cli(["solve", path, "--json"], capsys)
    assert code == 0, err
    cli = json.loads(out)
    for given in (SPEC, path, str(path), load_spec(path)):
        r = solve(given)
        _same_json(r.to_dict(), cli)
        _same_json(json.loads(r.to_json()), cli)
    r = solve(SPEC)
    assert r.alpha.tolist() == [0.0, 5.0, 10.0, 15.0, 20.0]
    assert r.eps_g.dtype == np.float64 and r.R1.shape == (5, 2, 2) and r.Q1.shape == (5, 2, 2)
    assert r.meta["basis"] == "modes"


def test_simulate_gives_the_cli_json(tmp_path, capsys):
    path = write_spec(tmp_path, TOML + "[simulate]\nseeds = [3, 4]\nn_jobs = 1\n")
    code, out, err = run_cli(["simulate", path, "--json", "--no-progress"], capsys)
    assert code == 0, err
    r = simulate(path)
    _same_json(r.to_dict(), json.loads(out))
    assert r.seeds == [3, 4] and r.eps_g_runs.shape == (2, 5)
    assert np.array_equal(r.eps_g, r.runs[0].eps_g)
    # the init overlaps: exact decimal strings in the JSON, float64 here, the same numbers
    assert r.init["T"].shape == (4, 2, 2)
    assert r.init["R"][0, 0, 0] == float(json.loads(out)["init"]["modes"]["R"][0][0][0])
    ds = r.to_xarray()
    assert ds["eps_g_runs"].dims == ("seed", "alpha") and list(ds.seed.values) == [3, 4]


def test_numpy_values_and_fractions_in_a_dict():
    spec = json.loads(json.dumps(SPEC))
    spec["data"]["N"] = np.int64(64)
    spec["training"]["eta"] = Fraction(1, 2)
    spec["solve"] = {"alphas": np.array([0.0, 10.0]), "basis": "modes", "dps": "float64",
                     "digits": 8}
    s = load_spec(spec)
    assert s.data.N == 64 and s.training.eta == Fraction(1, 2) and s.solve.alphas == (0, 10)
    spec["training"]["eta"] = Fraction(1, 3)
    with pytest.raises(SpecError, match="no exact decimal form"):
        load_spec(spec)


# -- errors: SpecError (a ValueError), the CLI's one line -----------------------------------

@pytest.mark.parametrize("edit", [
    lambda d: d["training"].update(eta=-0.5),
    lambda d: d["data"].update(N=66),                          # L = 4 does not divide N
    lambda d: d["training"].update(rate=1),                    # unknown key
    lambda d: d["solve"].update(dps=10),                       # dps < 15
    lambda d: d["model"].update(K=3, M=3, activation="erf") or d["data"].update(L=100000),
])
def test_errors_are_the_cli_one_liners(tmp_path, capsys, edit):
    doc = json.loads(json.dumps(SPEC))
    edit(doc)
    path = write_spec(tmp_path, toml_doc(doc))
    code, _, err = run_cli(["solve", path, "--json"], capsys)
    assert code == 2
    cli_line = err.strip().removeprefix("scaling-odes: error: ")
    with pytest.raises(SpecError) as exc:
        solve(path)
    assert str(exc.value) == cli_line and "\n" not in cli_line
    assert isinstance(exc.value, ValueError)
    with pytest.raises(SpecError) as exc:            # the dict form names "<spec>" instead
        solve(doc)
    assert str(exc.value) == cli_line.replace(str(path), "<spec>", 1)


def test_run_time_value_errors_become_spec_errors():
    """A ValueError found while computing (float64 level basis out of range) is the user's:
    SpecError, one line, the original chained."""
    doc = json.loads(json.dumps(SPEC))
    doc["data"] = {"L": 400, "beta": 1.0, "N": 400}
    doc["solve"].update(basis="levels")
    with pytest.raises(SpecError, match="out of float64 range at L = 400") as exc:
        solve(doc)
    assert isinstance(exc.value.__cause__, ValueError)


def test_simulate_refuses_expected_init_as_the_cli_does(tmp_path, capsys):
    path = write_spec(tmp_path, TOML.replace("seed = 3", "seed = 3\ninit = \"expected\""))
    code, _, err = run_cli(["simulate", path, "--json"], capsys)
    assert code == 2
    with pytest.raises(SpecError) as exc:
        simulate(path)
    assert str(exc.value) == err.strip().removeprefix("scaling-odes: error: ")
    with pytest.raises(SpecError, match="unknown section \\[bogus\\]"):
        compare({**SPEC, "bogus": {}})
    # the sections of the other subcommands are accepted by each: one file serves them all
    parsed = load_spec({**SPEC, "linear": {}, "asymptotic": {"alpha0": 100}})
    assert set(parsed.extra) == {"linear", "asymptotic"}


# -- numbers: float64 arrays, exact strings, grids that do not start at 0 -------------------

@pytest.mark.higher_precision
def test_exact_strings_beyond_float64():
    """digits = 18 in the level basis: the JSON's strings are kept (exact()), eps_g is the
    float64 of the string; the modes basis at 22 digits (a second basis, no closure) agrees
    to within one unit of the 18th digit."""
    base = {"data": {"L": 4, "beta": 1, "N": 64}, "training": {"eta": 0.5, "seed": 0},
            "solve": {"alphas": [10], "digits": 18}}
    r = solve(base)
    s = r.exact("eps_g")[0]
    assert isinstance(s, str) and len(s.replace("0.", "", 1).lstrip("0")) == 18
    assert r.eps_g_exact == [s] and r.eps_g.dtype == np.float64 and r.eps_g[0] == float(s)
    ref = solve({**base, "solve": {"alphas": [10], "digits": 22, "basis": "modes"}})
    ref = ref.exact("eps_g")[0]
    # eps_g ~ 0.014: the 18th significant digit is 1e-19; one unit allows the rounding of
    # the printed value plus the verified error (the runs agree to 18 digits)
    assert abs(Fraction(s) - Fraction(ref)) <= Fraction(1, 10 ** 19), (s, ref)
    with pytest.raises(ValueError, match="eps_g"):
        r.exact("R1")


def test_exact_strings_of_a_float64_run_carry_the_verified_digits():
    r = solve(SPEC)
    strs = r.exact("eps_g")
    assert all(len(x.replace("0.", "", 1).lstrip("0")) == 8 for x in strs[1:])
    # 8 significant digits: the rounding error is at most half a unit of the 8th digit
    assert np.allclose([float(x) for x in strs], r.eps_g, rtol=5e-8, atol=0)


def test_grid_not_starting_at_zero_is_integrated_from_zero():
    """alphas = [0.5, 1, 2] reports ε_g at those α (integrated from α = 0), the same values
    as the grid [0, 0.5, 1, 2] (float64 modes, rtol-level agreement), and the first point is
    not the initial ε_g."""
    doc = json.loads(json.dumps(SPEC))
    doc["solve"] = {"alphas": [0.5, 1, 2], "basis": "modes", "dps": "float64", "digits": 8}
    late = solve(doc)
    doc["solve"]["alphas"] = [0, 0.5, 1, 2]
    full = solve(doc)
    assert late.alpha.tolist() == [0.5, 1, 2]
    np.testing.assert_allclose(late.eps_g, full.eps_g[1:], rtol=1e-9)
    assert abs(late.eps_g[0] - full.eps_g[0]) > 1e-3 * full.eps_g[0]


def test_progress_callback_gets_plain_floats():
    """Level basis in python-flint: the integrator's time is an arb ball; the callback must
    see floats, increasing, ending at the last α."""
    seen = []
    doc = {"data": {"L": 4, "beta": 1, "N": 64}, "training": {"eta": 0.5, "seed": 0},
           "solve": {"alphas": [1, 5], "digits": 10}}
    solve(doc, progress=seen.append)
    assert seen and all(type(t) is float for t in seen)
    assert seen[-1] == 5.0


def test_rk78_progress_is_float_on_flint():
    """The lower-level route: integrate_problem on arb numbers calls progress with floats."""
    from solvers.hierarchy.odes import integrate_problem
    s = spectra.power_law(4, 1)
    p = Problem(SystemKey("erf", 2, 2), s, Fraction(1, 2), 2,
                random_init(2, 2, 64, s, Fraction(1, 10), 0))
    seen = []
    integrate_problem(p, [0, 2], basis="levels", arithmetic="flint", dps=40, rtol=1e-12,
                      progress=seen.append)
    assert seen and all(type(t) is float for t in seen)


def test_xarray_and_plot():
    import matplotlib
    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure
    r = solve(SPEC)
    ds = r.to_xarray()
    assert ds["eps_g"].dims == ("alpha",) and ds["R1"].dims == ("alpha", "i", "n")
    np.testing.assert_array_equal(ds["eps_g"].values, r.eps_g)
    assert ds.attrs["basis"] == "modes"
    ax = Figure().add_subplot()
    assert r.plot(ax=ax) is ax
    x, y = ax.get_lines()[0].get_data()
    assert list(x) == [5.0, 10.0, 15.0, 20.0]            # α = 0 left out of a log axis
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"


def test_top_level_names():
    for name in ("solve", "simulate", "compare", "load_spec", "linear", "plateau",
                 "asymptotic", "bayes", "kernel", "SpecError", "PrecisionLost"):
        assert name in dir(solvers) and getattr(solvers, name) is not None
    assert issubclass(solvers.SpecError, ValueError)
    with pytest.raises(AttributeError):
        solvers.no_such_name


def test_thin_wrappers_match_their_subcommands(tmp_path, capsys):
    lin = {"model": {"activation": "linear", "K": 1, "M": 1}, "data": {"L": 4, "beta": 1},
           "training": {"eta": 0.1, "init": "expected"},
           "solve": {"alphas": [0, 10], "digits": 10}}
    path = write_spec(tmp_path, toml_doc(lin), "lin.toml")
    code, out, err = run_cli(["linear", "curve", path, "--json"], capsys)
    assert code == 0, err
    api = solvers.linear(lin)
    assert api["eps_g"] == json.loads(out)["eps_g"]
    ker = {"kernel": {"a": 2.0, "M": 200, "ridge": 0.01, "noise": 0.01, "P": [16, 64]}}
    path = write_spec(tmp_path, toml_doc(ker), "ker.toml")
    code, out, err = run_cli(["kernel", path, "--json"], capsys)
    assert code == 0, err
    assert solvers.kernel(ker)["eps_g"] == json.loads(out)["eps_g"]
    with pytest.raises(SpecError, match="K = M = 1"):
        solvers.linear({**lin, "model": {"activation": "linear", "K": 2, "M": 2}})


# -- lower-level argument checks (each failed on the code before these checks) ---------------

@pytest.mark.closed_form
def test_power_law_accepts_a_float_beta_exactly():
    """A float β is read through its shortest repr: 0.5 -> 1/2, 0.3 -> 3/10 (as in a spec)."""
    a, b = spectra.power_law(32, 0.5), spectra.power_law(32, Fraction(1, 2))
    assert a == b
    s = spectra.power_law(3, 0.3)
    # λ_1 / λ_2 = 2^(1 + β) exactly
    assert sp.simplify(s.eigenvalues[0] / s.eigenvalues[1] - 2 ** sp.Rational(13, 10)) == 0
    assert spectra.power_law(4, np.float64(1.0)) == spectra.power_law(4, 1)
    with pytest.raises(ValueError, match="finite"):
        spectra.power_law(4, float("nan"))
    with pytest.raises(ValueError, match="beta must be > -1"):
        spectra.power_law(4, -1.0)
    e = spectra.explicit([2.0, 0.5])
    assert e.eigenvalues == (sp.Integer(2), sp.Rational(1, 2))


def _problem(eta, init=None, L=4):
    s = spectra.power_law(L, 1)
    init = expected_init(s, 2, 2, Fraction(1, 10)) if init is None else init
    return Problem(SystemKey("erf", 2, 2), s, eta, 2, init)


@pytest.mark.parametrize("eta", [0, -0.1, Fraction(-1, 2), float("inf"), float("nan")])
def test_problem_refuses_eta_not_positive(eta):
    with pytest.raises(ValueError, match="eta"):
        _problem(eta)


def test_problem_reads_a_float_eta_as_its_decimal():
    assert _problem(0.1).eta == Fraction(1, 10)
    assert _problem(1).eta == Fraction(1)


def test_problem_names_both_L_when_spectrum_and_init_differ():
    init = expected_init(spectra.power_law(8, 1), 2, 2, Fraction(1, 10))
    with pytest.raises(ValueError) as exc:
        _problem(Fraction(1, 2), init=init, L=4)
    msg = str(exc.value)
    assert "L = 4" in msg and "8 modes" in msg and "\n" not in msg
    init = expected_init(spectra.power_law(4, 1), 3, 2, Fraction(1, 10))   # K = 3 vs key K = 2
    with pytest.raises(ValueError, match="K = 2"):
        _problem(Fraction(1, 2), init=init, L=4)
