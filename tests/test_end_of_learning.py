"""The end of learning: ε_g -> 0 below what the working precision resolves.

Independent routes:
* exact: a student that starts at its teacher (``init = "informed"``, K = M, same activation
  and readouts) computes the teacher's function, so ε_g = 0 and every SGD update (proportional
  to the error) vanishes: the ODE's solution is constant;
* higher precision: a run held at the float64 error bound (reporting ε_g = 0 from there) against
  the same ODE integrated at 30 digits, which resolves ε_g far below that bound;
* the agreement rule itself on hand-made sequences.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

import solvers
from cache_support import generated_cache_fixtures
from cli_support import run_cli, write_spec
from solvers.app.solve import problem_of
from solvers.hierarchy import odes
from solvers.hierarchy.precision import eps_g_bound
from solvers.hierarchy.verify import agreement_digits
from test_relu_learns import _aligned_spec

# oracles (tests/conftest.py): the exact constant solution, a 30-digit run, hand-made sequences
pytestmark = [pytest.mark.closed_form, pytest.mark.higher_precision]

run_cache, cache = generated_cache_fixtures()


@pytest.mark.closed_form
def test_agreement_is_absolute_within_the_error_bound():
    """Values that differ by at most the bound agree whatever their relative difference (ε_g ≈ 0
    has no significant digits); above it the relative digits count, and a difference beyond
    the bound is never hidden."""
    a, b = [0.25, 1e-3, 2e-12, 0.0], [0.25, 1e-3 * (1 + 1e-7), -3e-12, 7e-12]
    assert agreement_digits(a, b) < 1                       # 0 vs 7e-12: no digit in common
    assert agreement_digits(a, b, floor=1e-11) == pytest.approx(7.0, abs=0.01)
    assert agreement_digits([0.0], [2e-11], floor=1e-11) < 0.01   # beyond the bound: counted
    # float64, ReLU: sqrt(u) of the state's scale; a smooth activation 100 u, both at least rtol
    assert eps_g_bound(2.0, "float64", None, 1e-11, relu=True) == pytest.approx(2 * 2**-26)
    assert eps_g_bound(2.0, "flint", 40, 1e-20, relu=False) == pytest.approx(2e-20)
    assert eps_g_bound(2.0, "flint", 40, 1e-30, relu=False) == pytest.approx(2e-38)


def _informed(act, basis, dps, **training):
    return {"model": {"activation": act, "K": 2, "M": 2},
            "data": {"L": 4, "N": 1024},
            "training": {"eta": 0.5, "seed": 3, "init": "informed", **training},
            "solve": {"alpha_max": 50, "n_points": 5, "basis": basis, "dps": dps, "digits": 6}}


@pytest.mark.closed_form
@pytest.mark.parametrize("act", ["erf", "relu"])
@pytest.mark.parametrize("basis,dps", [("modes", "float64"), ("levels", "auto")])
def test_an_informed_start_solves_and_reports_zero(act, basis, dps, cache):
    """Student = teacher: ε_g = 0 exactly at every α (it was refused as "eps_g = -5.55e-17 < 0"
    before; the ReLU right-hand side is 0/0 there), the overlaps stay the teacher's."""
    r = solvers.solve(_informed(act, basis, dps))
    assert np.all(r.eps_g == 0)
    assert r.meta["converged_at_alpha"] == 0
    assert r.meta["eps_g_bound"] > 0
    assert np.allclose(r.R1, r.R1[0]) and np.allclose(r.Q1, r.Q1[0])
    assert np.allclose(r.R1[0], r.Q1[0])        # R = Q (= T): the student is the teacher


@pytest.mark.closed_form
def test_an_informed_start_on_the_command_line(tmp_path, capsys, cache):
    spec = write_spec(tmp_path, '[model]\nactivation = "relu"\nK = 2\nM = 2\n'
                                '[data]\nL = 2\nN = 256\n'
                                '[training]\neta = 0.3\ninit = "informed"\n'
                                '[solve]\nalpha_max = 20\nn_points = 4\n')
    code, out, err = run_cli(["solve", spec, "--json"], capsys)
    assert code == 0, err
    res = json.loads(out)
    assert res["eps_g"] == [0.0] * 4 and res["meta"]["converged_at_alpha"] == 0.0


@pytest.mark.closed_form
def test_label_noise_moves_an_informed_start(cache):
    """With label noise the teacher is no fixed point: nothing is held, ε_g starts at 0 (a
    rounding residue of 4e-17, within its bound, reported as 0) and grows."""
    spec = _informed("erf", "modes", "float64", noise=0.01)
    spec["solve"] = {"alphas": [0, 10, 50], "basis": "modes", "dps": "float64", "digits": 6}
    r = solvers.solve(spec)
    assert r.alpha[0] == 0 and r.eps_g[0] == 0 and r.eps_g[-1] > 1e-4
    assert "converged_at_alpha" not in r.meta


@pytest.mark.full
@pytest.mark.higher_precision
def test_the_held_end_of_learning_matches_a_run_at_30_digits(cache):
    """A ReLU student from an aligned start (fields at correlation ~0.999, K = M = 2, L = 1):
    float64 modes holds once ε_g is within its bound (sqrt(u) · max|T¹| ≈ 1.5e-8) and reports 0
    from there; flint at 30 digits (Taylor series, rtol 1e-14, bound ~1e-14) resolves ε_g far
    below it.  They agree within the float64 bound everywhere and to 1e-5 relative above it.
    (~30 s CPU on a loaded machine: make verify.)"""
    problem = problem_of(_aligned_spec("modes", "float64"))     # J = B + 0.05 noise, L = 1
    alphas = [0, 10, 30, 60, 90, 120, 150]
    low = odes.integrate_problem(problem, alphas, basis="modes", arithmetic="float64", rtol=1e-11)
    high = odes.integrate_problem(problem, alphas, basis="modes", arithmetic="flint", dps=30,
                                  rtol=1e-14, integrator="taylor")
    assert low.stats["held_from"] < 150
    a, b = low.eps_float(), high.eps_float()
    bound = low.stats["eps_g_bound"]
    assert b[-1] > 0 and b[-1] < bound           # the 30-digit run resolves what was held
    above = a > bound
    assert np.all(np.abs(a - b)[~above] <= bound)
    assert np.all(np.abs(a - b)[above] <= 1e-5 * a[above])
