"""``scaling-odes simulate``: the JSON contract, the shared realisation with ``solve``, errors."""
import json

import numpy as np
import pytest

from solvers.app.solve import problem_of
from solvers.app.spec import load_spec
from cli_support import run_cli as _run, write_spec as _write
from specs import erf_spec, toml_list as _toml_list

pytestmark = [pytest.mark.contract, pytest.mark.simulation]  # oracle (tests/conftest.py)

SPEC = erf_spec(eta=0.5, sigma_J=0.1, seed=3, alpha_max=20, basis='"modes"', dps='"float64"',
                digits=8)


def test_simulate_writes_the_json_contract(tmp_path, capsys):
    spec = _write(tmp_path, SPEC)
    out = tmp_path / "sim.json"
    code, _, err = _run(["simulate", spec, "-o", out, "--no-progress"], capsys)
    assert code == 0, err
    res = json.loads(out.read_text())
    assert res["alpha"] == [0.0, 5.0, 10.0, 15.0, 20.0]
    assert len(res["eps_g"]) == 5 and all(np.isfinite(res["eps_g"]))
    assert np.shape(res["R1"]) == (5, 2, 2) and np.shape(res["Q1"]) == (5, 2, 2)
    modes = res["init"]["modes"]
    assert np.shape(modes["R"]) == (4, 2, 2) and np.shape(modes["T"]) == (4, 2, 2)
    meta = res["meta"]
    assert meta["seed"] == 3 and meta["N"] == 64 and meta["steps_per_second"] > 0
    # learning happens: eps_g falls by more than 10x from its initial value over 20 alpha
    assert res["eps_g"][-1] < res["eps_g"][0] / 10


def test_init_modes_reproduce_the_state_in_solve(tmp_path, capsys):
    """[init.modes] built from the JSON gives exactly the state of init = "random"."""
    spec = _write(tmp_path, SPEC)
    out = tmp_path / "sim.json"
    assert _run(["simulate", spec, "-o", out, "--no-progress"], capsys)[0] == 0
    modes = json.loads(out.read_text())["init"]["modes"]
    explicit = SPEC.replace('seed = 3', 'seed = 3\ninit = "explicit"') + "[init.modes]\n" + \
        "".join(f"{k} = {_toml_list(modes[k])}\n" for k in ("R", "Q", "T"))
    espec = _write(tmp_path, explicit, "explicit.toml")
    a, b = problem_of(load_spec(spec)).init, problem_of(load_spec(espec)).init
    for k in ("R", "Q", "T"):
        # Fraction (exact decimal) == float64 value: equality is exact, no tolerance
        assert np.all(getattr(a, k) == getattr(b, k)), k
    solved = []
    for s in (spec, espec):
        code, text, err = _run(["solve", s, "--json"], capsys)
        assert code == 0, err
        solved.append(json.loads(text)["eps_g"])
    assert solved[0] == solved[1]
    # and the ODE starts where the simulation starts: the same eps_g formula of the same
    # order parameters, evaluated by two codes (generated module vs simulate), to rounding
    sim0 = json.loads(out.read_text())["eps_g"][0]
    assert solved[0][0] == pytest.approx(sim0, rel=1e-13)


def test_several_seeds_and_holdout(tmp_path, capsys):
    text = SPEC + "[simulate]\nseeds = [1, 2]\nn_jobs = 1\neps_holdout = 4000\n"
    spec = _write(tmp_path, text)
    code, out, err = _run(["simulate", spec, "--json", "--no-progress"], capsys)
    assert code == 0, err
    res = json.loads(out)
    ens = res["ensemble"]
    assert ens["seeds"] == [1, 2] and len(ens["runs"]) == 2
    assert ens["runs"][0]["eps_g"] == res["eps_g"] and res["meta"]["seed"] == 1
    assert ens["runs"][1]["eps_g"] != res["eps_g"]          # independent seeds
    mean = np.mean([r["eps_g"] for r in ens["runs"]], axis=0)
    assert np.allclose(ens["eps_g_mean"], mean, rtol=1e-14)
    # Monte-Carlo eps_g on 4000 fresh samples: relative standard error ~ sqrt(2/4000) = 2.2 %
    # (eps = <d^2>/2 with d roughly Gaussian); 5 standard errors = 11 %.
    hold, exact = np.array(res["eps_g_holdout"]), np.array(res["eps_g"])
    assert np.all(np.abs(hold / exact - 1) < 0.11), hold / exact


def test_same_seed_same_output(tmp_path, capsys):
    spec = _write(tmp_path, SPEC)
    runs = [json.loads(_run(["simulate", spec, "--json", "--no-progress"], capsys)[1])
            for _ in range(2)]
    assert runs[0]["eps_g"] == runs[1]["eps_g"] and runs[0]["R1"] == runs[1]["R1"]


@pytest.mark.parametrize("extra,needle", [
    ("[simulate]\nbogus = 1\n", "unknown key 'bogus'"),
    ("[simulate]\nn_trainable = 65\n", "n_trainable = 65 must be an integer between 1 and N = 64"),
    ("[simulate]\nseeds = [1, 1]\n", "duplicates"),
    ("[simulate]\nseeds = []\n", "must not be empty"),
    ("[simulate]\nuntrainable = \"x\"\n", "untrainable"),
    ("[simulate]\neps_holdout = -1\n", "eps_holdout"),
    ("[simulate]\ngenerator = \"mt19937\"\n", 'generator = "mt19937" must be one of "xoshiro"'),
])
def test_bad_simulate_section_is_one_line(tmp_path, capsys, extra, needle):
    spec = _write(tmp_path, SPEC + extra)
    code, out, err = _run(["simulate", spec, "--no-progress"], capsys)
    assert code == 2 and out == ""
    assert needle in err and err.count("\n") == 1 and "Traceback" not in err


def test_simulate_needs_random_init(tmp_path, capsys):
    spec = _write(tmp_path, SPEC.replace("seed = 3", 'seed = 3\ninit = "expected"'))
    code, _, err = _run(["simulate", spec], capsys)
    assert code == 2 and 'training.init = "random"' in err and err.count("\n") == 1


def test_simulate_missing_file(tmp_path, capsys):
    code, _, err = _run(["simulate", tmp_path / "nope.toml"], capsys)
    assert code == 2 and "no such file" in err


def test_generator_choice(tmp_path, capsys):
    """All input sources run; they are different streams (same weights, same eps_g at alpha 0)."""
    out = {}
    for g in ("xoshiro", "numpy", "float32"):
        spec = _write(tmp_path, SPEC + f'[simulate]\ngenerator = "{g}"\n', f"{g}.toml")
        code, text, err = _run(["simulate", spec, "--json", "--no-progress"], capsys)
        assert code == 0, err
        out[g] = json.loads(text)
        assert out[g]["meta"]["generator"] == g
    assert out["xoshiro"]["eps_g"][0] == out["numpy"]["eps_g"][0]
    assert out["xoshiro"]["eps_g"][1:] != out["numpy"]["eps_g"][1:]
    assert out["float32"]["eps_g"][0] == out["xoshiro"]["eps_g"][0]
    assert out["float32"]["eps_g"][1:] != out["xoshiro"]["eps_g"][1:]
    default = json.loads(_run(["simulate", _write(tmp_path, SPEC), "--json", "--no-progress"],
                              capsys)[1])
    assert default["eps_g"] == out["float32"]["eps_g"]


def test_absurd_alpha_max_is_one_line(tmp_path, capsys):
    spec = _write(tmp_path, SPEC.replace("alpha_max = 20", "alpha_max = 1e300"))
    code, out, err = _run(["simulate", spec, "--no-progress"], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("data", ["L = 16\nbeta = 1.0", "L = 7\nbeta = 0.37",
                                  "eigenvalues = [\"0.3333333333333333333333\", 2.5, 0.1]"])
def test_simulator_spectrum_matches_the_ode_spectrum(tmp_path, data):
    """The command's mpmath spectrum (no SymPy at start-up) vs the SymPy spectrum of solve."""
    from solvers.app.cli.simulate import eigenvalues_of
    from solvers.app.solve import spectrum_of
    text = SPEC.replace("L = 4\nbeta = 1.0\nN = 64", data + "\nN = 336")
    spec = load_spec(_write(tmp_path, text))
    ours = np.array(eigenvalues_of(spec))
    exact = np.array([float(v) for v in spectrum_of(spec).eigenvalues])
    assert np.all(np.abs(ours - exact) <= np.spacing(exact)), ours - exact
    assert np.all(np.diff(ours) < 0)
