"""α grids: the initial condition is the state at α = 0, whatever grid is asked for."""
from fractions import Fraction

import numpy as np
import pytest

from derive import spectra
from derive.keys import SystemKey
from solvers.core.problem import Problem, expected_init, random_init
from solvers.hierarchy.modes_fast import solve_modes_fast
from solvers.hierarchy.odes import integrate_problem
from solvers.theory.linear import modes_solution

pytestmark = [pytest.mark.closed_form, pytest.mark.second_basis]  # oracle (tests/conftest.py)


def _linear_problem(L=8, eta=Fraction(1, 2), sigma_J=Fraction(1, 10)):
    sp = spectra.power_law(L, 1)
    return Problem(SystemKey("linear", 1, 1), sp, eta, 2, expected_init(sp, 1, 1, sigma_J)), sp


def test_a_grid_not_starting_at_zero_is_integrated_from_zero():
    # reference: the closed-form linear K = M = 1 curve (eigen-decomposition of the modes
    # matrix, solvers.theory.linear), an independent route.  The ODE from the expected initial
    # condition is that average exactly (linear in the state).  RK7(8) at rtol 1e-13 in float64
    # carries ~1e-11 relative on eps_g; 1e-9 leaves room.  Integrating from alpha = 0.5 with the
    # alpha = 0 state (the old behaviour) is off by ~10 % at the first point.
    prob, sp = _linear_problem()
    alphas = np.geomspace(0.5, 200, 7)
    traj = integrate_problem(prob, alphas, basis="modes", arithmetic="float64", rtol=1e-13)
    exact = modes_solution(sp, Fraction(1, 2), order=2, sigma_J=Fraction(1, 10))
    assert traj.alpha == pytest.approx(list(alphas), rel=0, abs=0)
    assert len(traj.eps_g) == len(alphas) and traj.R1.shape[0] == len(alphas)
    for a, e in zip(alphas, traj.eps_float(), strict=True):
        assert e == pytest.approx(exact.eps_g(a), rel=1e-9)


def test_the_fast_modes_solver_starts_at_zero_too():
    # RODAS4 (solve_modes_fast) against the RK7(8) run from 0 on the same grid: rtol 1e-9 /
    # 1e-13 carry ~1e-8 / 1e-11 relative on eps_g (bench_modes_fast); 1e-6 is generous
    sp = spectra.power_law(4, 1)
    prob = Problem(SystemKey("erf", 2, 2), sp, Fraction(1, 2), 2,
                   random_init(2, 2, 64, sp, Fraction(1, 100), 1))
    alphas = np.geomspace(0.5, 300, 9)
    fast = solve_modes_fast(prob, alphas, rtol=1e-9)
    ref = integrate_problem(prob, alphas, basis="modes", arithmetic="float64", rtol=1e-13)
    assert list(fast.alpha) == list(ref.alpha) == list(alphas)
    np.testing.assert_allclose(fast.eps_float(), ref.eps_float(), rtol=1e-6)


@pytest.mark.parametrize("grid,needle", [([3.0, 2.0], "strictly increasing"),
                                         ([1.0, 1.0], "strictly increasing"),
                                         ([-1.0, 2.0], "negative"),
                                         ([0.0, float("nan")], "not a finite"),
                                         ([0.0, float("inf")], "not a finite"),
                                         ([], "empty")])
def test_bad_grids_are_refused_in_one_line(grid, needle):
    prob, _ = _linear_problem(L=2)
    for run in (lambda: integrate_problem(prob, grid, basis="modes", arithmetic="float64"),
                lambda: solve_modes_fast(prob, grid)):
        with pytest.raises(ValueError) as info:
            run()
        msg = str(info.value)
        assert needle in msg and "\n" not in msg
