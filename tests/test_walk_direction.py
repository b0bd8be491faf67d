"""One ``solvers.solve`` walks plan -> run -> verify in one direction.

Every Python call made while a solve runs is traced (``sys.setprofile``) and attributed to the
stage of the module its code lives in: the planner (``hierarchy/precision.py``), the runs
(``hierarchy/runner.py``, ``odes.py``, ``modes_fast.py``) or the verifier
(``hierarchy/verify.py``); the result type (``trajectory.py``) and everything outside these
modules belongs to no stage.  The stages, with repeats collapsed, must read
plan* (run+ verify+)+: the plan is made before the first run, nothing calls the planner once a
run has started, and every run is followed by a verification before the next (a tighter pair,
the next rung of the plan's ladder, a fallback route).  Not a number: the oracle is the
package's own structure (contract).
"""
import re
import sys
from pathlib import Path

import pytest

import solvers
# imported before any trace: a module's first import is no step of the walk
import solvers.app.solve  # noqa: F401
import solvers.hierarchy.modes_fast  # noqa: F401

pytestmark = [pytest.mark.contract]

HIERARCHY = Path(solvers.__file__).resolve().parent / "hierarchy"
STAGES = {str(HIERARCHY / "precision.py"): "P",
          str(HIERARCHY / "runner.py"): "R", str(HIERARCHY / "odes.py"): "R",
          str(HIERARCHY / "modes_fast.py"): "R",
          str(HIERARCHY / "verify.py"): "V"}
WALK = re.compile(r"P*(R+V+)+")

BASE = {"model": {"activation": "erf", "K": 2, "M": 2},
        "data": {"L": 4, "beta": 1.0, "N": 64},
        "training": {"eta": 0.5, "sigma_J": 0.1, "seed": 3}}
GRID = {"alphas": [1, 10]}


def _walk(solve_keys, L=4):
    """(the collapsed stage string of one ``solvers.solve``, its result)."""
    seen = []

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_name != "<module>":
            stage = STAGES.get(frame.f_code.co_filename)
            if stage is not None and (not seen or seen[-1] != stage):
                seen.append(stage)

    spec = {**BASE, "data": {**BASE["data"], "L": L}, "solve": {**GRID, **solve_keys}}
    sys.setprofile(profile)
    try:
        result = solvers.solve(spec)
    finally:
        sys.setprofile(None)
    return "".join(seen), result


@pytest.fixture(autouse=True)
def _serial(monkeypatch):
    # the pairs one after the other, in this process, where the profile sees them
    monkeypatch.setenv("SCALING_ODES_SERIAL", "1")


@pytest.mark.parametrize("keys, route", [
    ({}, "modes/float64/rk78/tighter"),                                      # the default
    ({"basis": "levels", "dps": "auto", "digits": 8}, "levels/flint/taylor/settle"),
    ({"basis": "levels", "dps": 40, "digits": 8}, "levels/flint/taylor/fixed"),
    # beyond what the float64 modes reference vouches for: the plan's check run decides
    ({"basis": "levels", "dps": 60, "digits": 15}, "levels/flint/taylor/fixed"),
    ({"basis": "levels", "dps": "float64", "digits": 6}, "levels/float64/rk78/modes"),
    ({"basis": "modes", "dps": "float64", "digits": 6}, "modes/float64/rk78/float64"),
])
def test_one_solve_walks_plan_run_verify(keys, route):
    walk, result = _walk(keys)
    assert result.meta["route"] == route
    assert WALK.fullmatch(walk), walk


def test_the_fast_route_and_its_fallback_walk_forward(monkeypatch):
    from solvers.hierarchy import precision
    # the stiff RODAS4 pair on a small case (threshold at 0), its tolerance too loose for the
    # digits asked: its pair disagrees and the plan's fallback (the RK7(8) pair) answers
    monkeypatch.setattr(precision, "FAST_MIN_STIFFNESS", 0.0)
    monkeypatch.setattr(precision, "fast_rtol", lambda digits: 1e-3)
    walk, result = _walk({"basis": "modes", "dps": "auto", "digits": 7})
    assert result.meta["routes_tried"] == ["modes/float64/rodas4/tighter"]
    assert result.meta["route"] == "modes/float64/rk78/tighter"
    assert WALK.fullmatch(walk) and walk.count("RV") >= 2, walk


def test_a_second_rung_is_the_plans_next_step(monkeypatch):
    from solvers.hierarchy import precision
    # a starting precision too small for 8 digits (the closure of L = 16 alone costs ~20): the
    # first pair cannot agree and the ladder the plan carries gives the next rung
    monkeypatch.setattr(precision, "estimated_dps", lambda L, digits, basis: 15)
    walk, result = _walk({"basis": "levels", "dps": "auto", "digits": 8}, L=16)
    assert result.meta["route"] == "levels/flint/taylor/settle"
    assert result.meta["dps"] > precision.checking_dps(15)          # past the first rung
    assert WALK.fullmatch(walk) and walk.count("RV") >= 2, walk


@pytest.mark.parametrize("data, training, keys, route", [
    ({}, {}, {}, "modes/float64/rk78/tighter"),
    # stiff modes (eta lambda_1 = 20): the RODAS4 pair first; with label noise it cannot run,
    ({"L": 16}, {"eta": 2.0}, {"basis": "modes", "digits": 6}, "modes/float64/rodas4/tighter"),
    ({"L": 16}, {"noise": 0.01, "eta": 2.0}, {"basis": "modes", "digits": 6},
     "modes/float64/rk78/tighter"),
    ({}, {}, {"basis": "levels", "dps": "auto", "digits": 8}, "levels/flint/taylor/settle"),
    ({}, {}, {"basis": "levels", "dps": 40, "digits": 8}, "levels/flint/taylor/fixed"),
    # nor with a power schedule (its eta is not constant)
    ({"L": 16}, {"eta": 2.0, "schedule": {"kind": "power", "p": 0.5, "alpha0": 10}},
     {"basis": "modes", "digits": 6}, "modes/float64/rk78/tighter"),
])
def test_the_sizing_announces_the_plan_that_runs(data, training, keys, route):
    """The route the sizing announces is read off the plan the solve runs: the spec's plan
    (``sizing.plan_of``) is the problem's (``precision.plan_for``), and its route is
    ``meta.route``."""
    from solvers.app import sizing
    from solvers.app.solve import problem_of
    from solvers.app.spec import parse_spec
    from solvers.hierarchy import precision
    spec = parse_spec({**BASE, "data": {**BASE["data"], **data},
                       "training": {**BASE["training"], **training},
                       "solve": {**GRID, **keys}})
    s = spec.solve
    plan = sizing.plan_of(spec)
    assert plan == precision.plan_for(problem_of(spec), s.basis, s.dps, s.digits)
    assert sizing.solve_estimate(spec).route == (plan.faster or plan).route == route
