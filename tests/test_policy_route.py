"""The automatic policy picks the fastest verified route: in the modes basis the stiff solver
(RODAS4, ``modes_fast``) checked by a second run 100x tighter, and says so in ``meta.route``."""
import os
import time

import pytest

from cli_support import write_spec
from specs import erf_K2
from solvers.hierarchy import precision
from solvers.hierarchy.verify import agreement_digits

pytestmark = [pytest.mark.second_basis, pytest.mark.contract]  # oracle (tests/conftest.py)

SPEC = erf_K2(4, 64) + """
[training]
eta = 0.5
[solve]
alpha_max = 300
n_points = 12
basis = "modes"
digits = 7
"""


def _cpu():
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def test_the_plan_offers_the_fast_route_first():
    stiff = dict(stiffness=precision.FAST_MIN_STIFFNESS, fast_solver=True)
    p = precision.plan("modes", "auto", 9, 32, **stiff)
    assert p.faster is not None and p.faster.integrator == "rodas4"
    assert p.faster.verify == "tighter" and p.faster.rtol == precision.fast_rtol(9)
    assert p.faster.check.rtol == precision.fast_rtol(9) / precision.FAST_CHECK_FACTOR
    assert p.faster.route == "modes/float64/rodas4/tighter"
    assert precision.plan("levels", "auto", 9, 32, **stiff).faster is None
    assert precision.plan("modes", "auto", 12, 32, **stiff).faster is None  # beyond float64
    # only where the stiff solver can run the problem, and its modes are stiff
    assert precision.plan("modes", "auto", 9, 32, stiffness=100.0).faster is None
    assert precision.plan("modes", "auto", 9, 32, stiffness=1.0, fast_solver=True).faster is None


def test_the_fast_route_waits_for_stiff_modes(tmp_path):
    from solvers.app.solve import solve_spec
    from solvers.app.spec import load_spec
    # eta lambda_1 = 1.4 here: the explicit RK7(8) pair is the faster route (precision.py)
    res = solve_spec(load_spec(write_spec(tmp_path, SPEC.replace("alpha_max = 300",
                                                                 "alpha_max = 50"))))
    assert res["meta"]["route"] == "modes/float64/rk78/tighter"
    assert res["meta"]["routes_tried"] == []


def test_the_fast_route_runs_and_carries_its_digits(tmp_path, monkeypatch):
    # a small case made to take the stiff route (the threshold at 0): the machinery, its digits
    # and its cost relative to one plain call are what is tested here
    monkeypatch.setattr(precision, "FAST_MIN_STIFFNESS", 0.0)
    from solvers.app.solve import problem_of, solve_spec
    from solvers.app.spec import load_spec
    from solvers.hierarchy.modes_fast import solve_modes_fast
    from solvers.hierarchy.odes import integrate_problem
    spec = load_spec(write_spec(tmp_path, SPEC.replace("digits = 7", "digits = 5")))
    w, c = time.perf_counter(), _cpu()
    res = solve_spec(spec)
    wall, cpu = time.perf_counter() - w, _cpu() - c
    meta = res["meta"]
    assert meta["route"] == "modes/float64/rodas4/tighter" and meta["routes_tried"] == []
    assert meta["agreement_digits"] >= 5
    # the digits claimed, against an independent integrator: the explicit RK7(8) in float64
    # at rtol 1e-13 (good to ~1e-10 relative on eps_g here)
    problem = problem_of(spec)
    grid = spec.solve.alpha_grid()
    ref = integrate_problem(problem, grid, basis="modes", arithmetic="float64", rtol=1e-13)
    assert agreement_digits(res["eps_g"], ref.eps_g) >= 5
    # cost: the policy's CPU time is that of the returned run plus its check at a 100x looser
    # tolerance, which an order-4 method does in 100^(-1/4) = 0.32 of the time: ~1.3x the plain
    # call at the returned rtol (plus the set-up both share).  2.5x bounds it with room for
    # timing noise on a shared machine; the RK7(8) pair it replaces was ~10x.
    w, c = time.perf_counter(), _cpu()
    solve_modes_fast(problem, grid, rtol=precision.fast_rtol(5) / 100)
    plain_wall, plain_cpu = time.perf_counter() - w, _cpu() - c
    assert cpu <= 2.5 * plain_cpu + 1.0, (cpu, plain_cpu, wall, plain_wall)


def test_a_fast_pair_that_disagrees_falls_back_to_a_verified_route(tmp_path, monkeypatch):
    from solvers.app.solve import solve_spec
    from solvers.app.spec import load_spec
    # a tolerance far too loose for 7 digits: the RODAS4 pair cannot agree, so its result must
    # not be returned; the RK7(8) pair answers and the tried route is named
    monkeypatch.setattr(precision, "fast_rtol", lambda digits: 1e-3)
    monkeypatch.setattr(precision, "FAST_MIN_STIFFNESS", 0.0)
    res = solve_spec(load_spec(write_spec(tmp_path, SPEC.replace("alpha_max = 300",
                                                                 "alpha_max = 100"))))
    meta = res["meta"]
    assert meta["routes_tried"] == ["modes/float64/rodas4/tighter"]
    assert meta["route"] == "modes/float64/rk78/tighter" and meta["agreement_digits"] >= 7
