"""Every small (activation, K, M) on the default ``solve`` path, printed on demand.

Only erf K = M = 1, 2 and linear K = M = 1 are checked in; every other system is printed into
the cache the first time it is needed, and a bug there (a jet module that referred to a number
context it did not have) once broke every such system while the checked-in ones kept the suite
green.  Here each system of the matrix is generated into a cache of this test run (shared by the
xdist workers; the registry's lock makes one of them print a module while the others wait) and
solved through the public entry points with the defaults a user gets (``dps = "auto"``, 12
digits, the level basis).  Each result is checked against an independent route:

* the modes basis (no closure, other arithmetic path) must agree with the level basis on ε_g to
  the requested digits;
* linear K = M = 1 from the averaged initial condition against the exact solution of
  solvers/theory/linear.py;
* invariants: ε_g > 0 (a mean squared error) and Q^(1) = J Σ Jᵀ / N symmetric and positive
  semi-definite.

The larger systems (K, M up to 6) run under ``make verify``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import mpmath
import numpy as np
import pytest

from cache_support import generated_cache_fixtures
from derive import spectra
from derive.keys import SystemKey
from solvers.app.solve import solve_spec
from solvers.app.spec import parse_spec
from solvers.core import registry
from solvers.core.numbers import MpmathContext
from solvers.core.problem import Problem, random_init
from solvers.hierarchy.odes import agreement_digits, integrate_problem
from specs import toml_doc

pytestmark = [pytest.mark.second_basis, pytest.mark.closed_form,
              pytest.mark.higher_precision]  # oracle (tests/conftest.py)
# one xdist worker runs the whole module: its module-scoped fixture is computed once (make test
# runs --dist loadgroup)
pytestmark.append(pytest.mark.xdist_group("test_system_matrix"))

DIGITS = 12                       # [solve] digits of these runs (the default before "auto")
REPO = Path(__file__).resolve().parents[1]

# every K, M <= 3: the seven erf systems not checked in cost ~17 s of CPU to print together
# (BENCHMARKS.md, "On-demand generation"), once per run
MATRIX = [(act, K, M) for act in ("erf", "linear") for K in (1, 2, 3) for M in (1, 2, 3)]


def _matrix_params():
    for act, K, M in MATRIX:
        for order in (1, 2):
            yield pytest.param(act, K, M, order, id=f"{act}-K{K}-M{M}-order{order}")


# the run-wide generated-module cache (tests/cache_support.py)
run_cache, cache = generated_cache_fixtures()


def _doc(act, K, M, order, *, L=2, eta="0.2", alpha_max=5.0, **solve):
    """A small spec: the level basis at DIGITS digits (the default route before basis "auto"),
    dps "auto", unless given."""
    return {"model": {"activation": act, "K": K, "M": M},
            "data": {"L": L, "beta": 1.0, "N": 64},
            "training": {"eta": eta, "order": order, **solve.pop("training", {})},
            "solve": {"alpha_max": alpha_max, "n_points": 3, "basis": "levels", "digits": DIGITS,
                      **solve}}


def _eps(result):
    return [mpmath.mpf(e) for e in result["eps_g"]]


def _check_invariants(result, K):
    assert all(e > 0 for e in _eps(result)), result["eps_g"]
    for q in result["Q1"]:
        q = np.asarray(q, dtype=float)
        assert q.shape == (K, K)
        assert np.array_equal(q, q.T)
        # Q1 = J Σ Jᵀ / N is a Gram matrix: eigenvalues >= 0 up to the rounding of its entries
        # (the run carries >= 12 digits; 1e-12 of the largest entry is far above float64's eps)
        assert np.linalg.eigvalsh(q).min() >= -1e-12 * max(np.abs(q).max(), 1e-300)


@pytest.mark.parametrize("act, K, M, order", list(_matrix_params()))
def test_default_solve_agrees_with_the_modes_basis(cache, act, K, M, order):
    """The level-basis solve (dps auto, 12 digits: the default before basis "auto") of a system
    printed on demand
    agrees with the modes basis — no Cayley–Hamilton closure, its own printed right-hand side —
    on ε_g to the requested digits; both results carry their verification (agreement of two
    runs at different precision and tolerance) in ``meta``."""
    levels = solve_spec(parse_spec(_doc(act, K, M, order)))
    modes = solve_spec(parse_spec(_doc(act, K, M, order, basis="modes")))
    assert levels["meta"]["basis"] == "levels" and modes["meta"]["basis"] == "modes"
    for r in (levels, modes):
        assert r["meta"]["arithmetic"] == "flint"       # 12 digits: beyond float64's reach
        assert r["meta"]["agreement_digits"] >= DIGITS
        _check_invariants(r, K)
    # each claims 12 verified digits, so they may differ by two units of the 12th: 11.7 digits
    assert agreement_digits(_eps(levels), _eps(modes)) >= DIGITS - 0.5
    # the order parameters themselves (integrated at rtol 1e-15 per row): far inside 1e-9
    for key in ("R1", "Q1"):
        np.testing.assert_allclose(levels[key], modes[key], rtol=0, atol=1e-9)


@pytest.mark.parametrize("order", [1, 2])
@pytest.mark.parametrize("basis", ["levels", "modes"])
def test_linear_K1_M1_matches_the_exact_solution(cache, basis, order):
    """Linear K = M = 1 from the averaged initial condition (R = 0, Q = σ_J² T) has an exact
    solution, ε_g = ((1+σ_J²)/2) [exp(ηα A4) T]_1, computed by solvers.theory.linear without the
    ODE integrators (secular equation of the rank-one-updated spectrum)."""
    from solvers.theory.linear import exact_curve
    doc = _doc("linear", 1, 1, order, L=4, eta="0.3", basis=basis,
               training={"init": "expected", "sigma_J": "0.1"})
    result = solve_spec(parse_spec(doc))
    spectrum = spectra.power_law(4, 1)
    exact, meta = exact_curve(spectrum, Fraction("0.3"), result["alpha"], order=order,
                              sigma_J=Fraction("0.1"), digits=DIGITS + 3)
    assert meta["agreement_digits"] >= DIGITS + 3
    assert agreement_digits(_eps(result), exact) >= DIGITS - 0.5   # result: 12 verified digits


@pytest.mark.parametrize("key", [SystemKey("linear", 3, 2), SystemKey("erf", 2, 1)],
                         ids=lambda k: k.tag)
def test_jets_of_an_on_demand_system_run_without_a_number_context(cache, key):
    """Regression: ``jets_extend`` has no number context, and the jet modules of K ≠ M systems
    (rational coefficients such as M/K) once printed ``ctx.convert(1)/2`` into it — a NameError
    on the first Taylor step of every default solve of such a system.  Its coefficient k of
    a(v1(τ)), f(v1(τ)) along a polynomial path must equal the Taylor coefficient of the printed
    coefficient functions (mpmath's numerical differentiation at 50 digits)."""
    jets, mod = registry.load(key, "taylor"), registry.load(key, "mpmath")
    assert str(cache) in jets.__file__                 # printed on demand, not checked in
    s = spectra.power_law(2, 1)
    prob = Problem(key, s, Fraction(1, 5), 2, random_init(key.K, key.M, 64, s, Fraction(1, 10), 3))
    order = 4
    with MpmathContext(50) as ctx:
        num = prob.numeric(ctx)
        t1 = list(num.T_levels[0])
        rng = np.random.default_rng(2)
        path = [list(num.y_levels[0])] + [[mpmath.mpf(float(x)) / 8 for x in
                                           rng.standard_normal(len(num.y_levels[0]))]
                                          for _ in range(order)]
        state, out = jets.jets_start(path[0], t1, num.eta, ctx)
        # the extension gets no context (the precision is the caller's scope): it must not
        # need one
        got = [list(out)] + [list(jets.jets_extend(state, path[k], k))
                             for k in range(1, order + 1)]
        for i in range(jets.N_OUTPUTS):
            def component(tau, i=i):
                v = [sum(path[k][s] * tau**k for k in range(order + 1))
                     for s in range(len(path[0]))]
                # the jets' outputs: a, f, then the label-noise coefficients
                noise = mod.module.noise_coefficients(v, t1, ctx)[:len(mod.FN_INDEX)]
                return (list(mod.coefficients(v, t1, num.eta, ctx)) + list(noise))[i]
            ref = mpmath.taylor(component, 0, order)
            for k in range(order + 1):
                # numerical differentiation at 50 digits keeps ~35: 1e-30 is a wide margin
                assert abs(got[k][i] - ref[k]) <= mpmath.mpf(10) ** -30 * max(abs(ref[0]), 1), (i, k)


def test_default_solve_of_K3_M2_runs(cache):
    """Regression: erf K = 3, M = 2 (rational jet constants, printed on demand) through the
    default solve, order 2 — crashed with a NameError before jet constants were named.  Checked
    against the modes basis in float64 (8 digits: the float64 route's own verified reach)."""
    result = solve_spec(parse_spec(_doc("erf", 3, 2, 2)))
    fast = solve_spec(parse_spec(_doc("erf", 3, 2, 2, basis="modes", digits=8)))
    assert fast["meta"]["arithmetic"] == "float64"
    assert agreement_digits(_eps(result), _eps(fast)) >= 8 - 0.5


# -- the other arithmetic routes on an on-demand system ---------------------------------------

@pytest.fixture(scope="module")
def k3m2_reference(run_cache):
    """erf K = 3, M = 2, order 1 and 2, level basis by the default route (flint, Taylor)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SCALING_ODES_CACHE", str(run_cache))
        return {order: solve_spec(parse_spec(_doc("erf", 3, 2, order, alpha_max=1.0)))
                for order in (1, 2)}


@pytest.mark.parametrize("order", [1, 2])
@pytest.mark.parametrize("route", ["flint-dps", "float64-levels", "float64-modes", "mpmath-levels",
                                   "mpmath-modes", "flint-rk78-modes"])
def test_every_arithmetic_route_runs_an_on_demand_system(cache, k3m2_reference, route, order):
    """erf K = 3, M = 2 printed on demand through every arithmetic route — a fixed dps (flint,
    verified), float64 in both bases (the level one checked against the modes basis), mpmath
    and flint with the RK7(8) — each agrees with the default route on the digits it carries."""
    ref = _eps(k3m2_reference[order])
    if route in ("flint-dps", "float64-levels", "float64-modes"):
        dps, digits, basis = {"flint-dps": (40, 12, "levels"), "float64-levels": ("float64", 8, "levels"),
                              "float64-modes": ("float64", 8, "modes")}[route]
        r = solve_spec(parse_spec(_doc("erf", 3, 2, order, alpha_max=1.0, basis=basis, dps=dps,
                                       digits=digits)))
        assert r["meta"]["arithmetic"] == ("flint" if route == "flint-dps" else "float64")
        _check_invariants(r, 3)
        # both sides verified to `digits` (the reference to 12)
        assert agreement_digits(_eps(r), ref) >= digits - 0.5
        return
    arithmetic, basis = {"mpmath-levels": ("mpmath", "levels"), "mpmath-modes": ("mpmath", "modes"),
                         "flint-rk78-modes": ("flint", "modes")}[route]
    spec = parse_spec(_doc("erf", 3, 2, order, alpha_max=1.0))
    from solvers.app.solve import problem_of
    alphas = [0.0] + spec.solve.alpha_grid()
    traj = integrate_problem(problem_of(spec), alphas, basis=basis, arithmetic=arithmetic, dps=30,
                             rtol=1e-17, integrator="rk78")
    # an unverified single run at rtol 1e-17 (RK7(8), ~4 digits lost in ε_g): 11 digits is what
    # the tolerance supports with a margin
    assert agreement_digits([mpmath.mpf(e) for e in traj.eps_g[1:]], ref) >= 11


# -- the command line ------------------------------------------------------------------------

def _cli(spec_path, env_cache, tmp_path):
    """`scaling-odes solve SPEC --json` as a user runs it (the console script of this venv)."""
    env = dict(os.environ, SCALING_ODES_CACHE=str(env_cache))
    script = Path(sys.executable).parent / "scaling-odes"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "solvers.app.cli.main"]
    return subprocess.run(command + ["solve", str(spec_path), "--json"], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=600)


@pytest.mark.parametrize("act, K, M", [("erf", 3, 2), ("linear", 2, 3)])
def test_cli_default_solve_agrees_with_the_modes_basis(cache, tmp_path, act, K, M):
    """`scaling-odes solve` with the defaults, in a fresh process, on a system printed on demand
    (the shared cache of the run: possibly printed by another worker), against the modes basis
    solved in this process."""
    path = tmp_path / "spec.toml"
    path.write_text(toml_doc(_doc(act, K, M, 2)))
    proc = _cli(path, cache, tmp_path)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["meta"]["basis"] == "levels" and result["meta"]["agreement_digits"] >= DIGITS
    _check_invariants(result, K)
    modes = solve_spec(parse_spec(_doc(act, K, M, 2, basis="modes")))
    assert agreement_digits(_eps(result), _eps(modes)) >= DIGITS - 0.5


def test_cli_announces_the_generation_on_stderr(tmp_path):
    """A system printed on demand is announced with an estimate and the cache, and summed up
    with its time — plain lines when stderr is not a terminal (here: a pipe); a short one's
    lines come at the end of the successful command (solvers.core.notices)."""
    fresh = tmp_path / "cache"
    path = tmp_path / "spec.toml"
    path.write_text(toml_doc(_doc("linear", 2, 2, 1)))
    proc = _cli(path, fresh, tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert "\r" not in proc.stderr
    start = [ln for ln in lines if ln.startswith("scaling-odes: generating linear K=2 M=2 solver")]
    assert len(start) == 1 and "(about " in start[0] and str(fresh) in start[0], proc.stderr
    assert any("linear K=2 M=2 solver generated in" in ln and "Taylor jets" in ln for ln in lines)
    # a second solve finds it in the cache: silent
    again = _cli(path, fresh, tmp_path)
    assert again.returncode == 0 and "generat" not in again.stderr


# -- the registry: announcement, estimate, lock ----------------------------------------------

def test_generation_lines_and_phases(tmp_path):
    lines = []
    key = SystemKey("linear", 3, 1)
    phases = registry.generate(key, tmp_path, say=lines.append)
    assert set(phases) == {"derivation", "printing", "Taylor jets"}
    assert lines[0].startswith("generating linear K=3 M=1 solver (about ")
    assert lines[-1].startswith("linear K=3 M=1 solver generated in ")
    assert (tmp_path / "linear_K3_M1.py").read_text() == registry._render(key, "mpmath")
    assert (tmp_path / "linear_K3_M1_taylor.py").read_text() == registry._render(key, "taylor")


def test_estimate_is_within_a_factor_of_the_measured_time(tmp_path):
    """The announced estimate is the model of solvers/core/codegen_time.py; on erf K = 2, M = 1
    (not checked in) it must be within a factor 4 of the CPU time measured here — the model's
    fit residuals are below 1.5x, and a busy test machine may slow the CPU time by cache
    contention, never by the ~2x a shared core costs the wall time."""
    from solvers.core.codegen_time import estimate_seconds
    from derive.codegen import module_printer as codegen
    key = SystemKey("erf", 2, 1)
    codegen._derive.cache_clear()
    t0 = registry._cpu_seconds()           # with the jets' second process, when there is one
    registry.generate(key, tmp_path, say=lambda _: None)
    took = registry._cpu_seconds() - t0
    est = estimate_seconds("erf", 2, 1)
    assert est / 4 <= took <= 4 * est, (est, took)


def test_a_second_process_waits_for_the_first(tmp_path):
    """Two processes needing the same system at once: the one that finds the lock taken says it
    waits, and reads the modules the other printed instead of printing them again."""
    import fcntl
    key = SystemKey("linear", 2, 1)
    folder = tmp_path / registry._source_hash()
    folder.mkdir(parents=True)
    lock = open(folder / f".{key.tag}.lock", "a")
    fcntl.flock(lock, fcntl.LOCK_EX)
    code = ("from derive.keys import SystemKey; from solvers.core.registry import load; "
            "import solvers.core.registry as r; "
            "s = load(SystemKey('linear', 2, 1), 'numpy'); print(r.cached_module("
            "SystemKey('linear', 2, 1), 'taylor'))")
    env = dict(os.environ, SCALING_ODES_CACHE=str(tmp_path))
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)
    try:
        first = proc.stderr.readline()
        assert "waiting for another process generating the linear K=2 M=1 solver" in first
        lines = []
        registry.generate(key, folder, say=lines.append)       # the lock holder prints
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)
        lock.close()
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert "generating" not in err                              # it found the files
    assert Path(out.strip()) == folder / "linear_K2_M1_taylor.py"


def test_fast_derivatives_are_sympys():
    """derive.codegen.derivatives.diff builds the expression ``sympy.diff`` builds (structurally: the
    printed modules stay byte-identical), on every coefficient of erf K = 2, M = 1 and order 2
    (sums of I3 and I4 terms: products, square roots, arcsines) by every level-1 variable, and
    on the next-level split of its hierarchy."""
    import sympy as sp
    from derive.codegen.derivatives import diff
    from derive.hierarchy import Hierarchy
    h = Hierarchy(SystemKey("erf", 2, 1))
    n, nt = h.n_state, h.n_teacher
    exprs = [h.a[s, t] for s in range(n) for t in range(n + nt)] + list(h.f)
    free = {}
    for e in exprs:
        for v in h.v1.state:
            mine, ref = diff(e, v, free), sp.diff(e, v)
            assert mine == ref and sp.srepr(mine) == sp.srepr(ref)
    for lin, _ in h._parts:
        for y in h.nxt.state + h.nxt.teacher:
            assert sp.srepr(diff(lin, y, free)) == sp.srepr(sp.diff(lin, y))


# -- larger systems (make verify) --------------------------------------------------------------

@pytest.mark.full
@pytest.mark.parametrize("act, K, M", [("erf", 4, 4), ("erf", 2, 6), ("erf", 6, 2), ("erf", 6, 6),
                                       ("linear", 6, 6), ("linear", 5, 3)])
def test_larger_systems_agree_with_the_modes_basis(cache, act, K, M):
    """As the default matrix, order 2, at L = 4 and to α = 20."""
    doc = dict(L=4, alpha_max=20.0)
    levels = solve_spec(parse_spec(_doc(act, K, M, 2, **doc)))
    modes = solve_spec(parse_spec(_doc(act, K, M, 2, basis="modes", **doc)))
    for r in (levels, modes):
        assert r["meta"]["agreement_digits"] >= DIGITS
        _check_invariants(r, K)
    assert agreement_digits(_eps(levels), _eps(modes)) >= DIGITS - 0.5
