"""A trained readout on the fast routes: the Taylor jets and the arb_mat algebra carrying v.

The reference is the route a trained readout had before: the embedded RK7(8) on numpy object
arrays of arb, with the generated ``rhs_levels / rhs_modes(..., readout=v)`` and
``readout_rates`` (solvers.hierarchy.odes ``_with_readout``): a different integrator on a
different assembly of the same printed coefficients, so it checks the jets' recurrences (v as
an input, the rates as outputs), the integrator's carrying of v (series, step size, dense
output) and the padded row of the arb_mat state.

* The Taylor series against that RK7(8): erf K = M = 2 and ReLU student / erf teacher K = 2,
  M = 1, both bases, label noise + weight decay + batch, with and without a power schedule
  (and order 1: e2 = 0, the jets' a-only extension), ε_g and v agreeing to the tolerances.
* ``ArbMatRHS`` of a trained system against the object-array right-hand side at a random
  state and v, to the working precision.
* ``solve`` with dps = "auto" on a trained spec runs (and verifies) the Taylor route.
"""
from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np
import pytest

import solvers
from solvers.app.solve import problem_of
from solvers.app.spec import parse_spec
from solvers.core.arb_rhs import ArbMatRHS
from solvers.core.numbers import context
from solvers.core.registry import load
from solvers.hierarchy.odes import integrate_problem

pytestmark = [pytest.mark.second_basis]


@pytest.fixture(scope="module", autouse=True)
def _cache(tmp_path_factory):
    """Generated modules of the trained systems in a cache of this file's own."""
    mp = pytest.MonkeyPatch()
    mp.setenv("SCALING_ODES_CACHE", str(tmp_path_factory.mktemp("trained-jets-cache")))
    yield
    mp.undo()


def _doc(student, teacher, K, M, basis, *, L=4, schedule=False, order=2):
    tr = {"eta": 0.5, "eta_readout": 0.3, "sigma_J": 0.3, "seed": 4, "order": order,
          "noise": 0.1, "weight_decay": 0.05, "batch_size": 2}
    if schedule:
        tr["schedule"] = {"kind": "power", "alpha0": "0.5", "p": 1}
    return {"model": {"student_activation": student, "teacher_activation": teacher, "K": K,
                      "M": M, "readout": "trained"},
            "data": {"L": L, "beta": 1.0, "N": 256}, "training": tr,
            "solve": {"alpha_max": 2, "n_points": 3, "spacing": "linear", "basis": basis}}


def _problem(*args, **kw):
    return problem_of(parse_spec(_doc(*args, **kw)))


def _rel(a, b):
    return abs(a - b) / abs(b)


# (student, teacher, K, M, basis, schedule, order, α grid, dps, rtol).  The ReLU pair's
# coefficients cost ~40 ms per evaluation at these precisions (its I3/I4 forms), so its
# reference RK7(8) runs a shorter α range at a looser tolerance.
CASES = [
    ("erf", "erf", 2, 2, "levels", False, 2, ["1/2", "2"], 40, 1e-22),
    ("erf", "erf", 2, 2, "levels", True, 2, ["1/2", "2"], 40, 1e-22),
    ("erf", "erf", 2, 2, "modes", False, 2, ["1/2", "2"], 40, 1e-22),
    ("erf", "erf", 2, 2, "modes", True, 2, ["1/2", "2"], 40, 1e-22),
    ("erf", "erf", 2, 2, "levels", True, 1, ["1/2", "2"], 40, 1e-22),
    ("relu", "erf", 2, 1, "levels", False, 2, ["1/4", "1/2"], 30, 1e-18),
    ("relu", "erf", 2, 1, "modes", True, 2, ["1/4", "1/2"], 30, 1e-18),
]


def _id(c):
    return f"{c[0]}-{c[1]}-K{c[2]}M{c[3]}-{c[4]}{'-power' if c[5] else ''}-order{c[6]}"


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_taylor_matches_object_array_rk78(case):
    student, teacher, K, M, basis, schedule, order, grid, dps, rtol = case
    problem = _problem(student, teacher, K, M, basis, schedule=schedule, order=order)
    alphas = ["0"] + grid
    ref = integrate_problem(problem, alphas, basis=basis, dps=dps, rtol=rtol,
                            matrix_rhs=False, short_scalars=False)
    got = integrate_problem(problem, alphas, basis=basis, dps=dps, rtol=rtol,
                            integrator="taylor")
    assert got.stats["order"] > 1 and got.stats["n_steps"] >= 1
    # each run is accurate to ~rtol relative per step (measured: the two differ by 1e-23 to
    # 1e-25 at rtol 1e-22); 100 x rtol leaves room for the global error's accumulation over the
    # few dozen steps, and is still 18 (14) digits the pair must share, far below the
    # 1e-3..1e-1 a missing or wrong readout term would change ε_g and v by over α ~ 1
    tol = 100 * rtol
    with mpmath.workdps(dps):
        for a, b in zip(got.eps_g, ref.eps_g, strict=True):
            assert _rel(a, b) <= tol, (case, a, b)
        for vg, vr in zip(got.readouts, ref.readouts, strict=True):
            for x, y in zip(vg, vr, strict=True):
                assert _rel(mpmath.mpf(x.mid()), mpmath.mpf(y.mid())) <= tol, (case, x, y)
    # the readout moved (the comparison is not of two constant v)
    assert abs(float(got.readouts[-1][0].mid()) - float(got.readouts[0][0].mid())) > 1e-4
    # the level-1 state, via R1, Q1 (float64 output)
    assert np.allclose(got.R1, ref.R1, rtol=1e-14, atol=0)
    assert np.allclose(got.Q1, ref.Q1, rtol=1e-14, atol=0)


@pytest.mark.parametrize("basis", ["levels", "modes"])
def test_arb_mat_rhs_equals_object_array_rhs(basis):
    """ArbMatRHS (v as the padded row L) against rhs_levels / rhs_modes(..., readout=v) and
    η_v · readout_rates, at a random state and v, with noise, decay and batch."""
    L, dps = 3, 40
    problem = _problem("erf", "erf", 2, 2, basis, L=4)
    key = problem.key
    mod = load(key, "mpmath")
    rng = np.random.default_rng(7)
    with context("flint", dps) as ctx:
        num = problem.numeric(ctx)
        y0 = num.y_levels if basis == "levels" else num.y_modes
        # a state near the initial one (realisable level 1), and v away from v0
        y = np.array([[x * ctx.convert(Fraction(1) + Fraction(int(rng.integers(-50, 50)), 1000))
                       for x in row] for row in y0], dtype=object)
        v = np.array([ctx.convert(Fraction(int(rng.integers(300, 900)), 1000))
                      for _ in range(key.K)], dtype=object)
        rhs = ArbMatRHS(mod, num, ctx, basis)
        out = rhs(0, rhs.state(y, v))
        extra = dict(noise=num.noise, decay=num.decay, readout=v)
        if basis == "levels":
            want = mod.rhs_levels(y, num.T_levels, num.c, num.nu, num.eta, num.e2, ctx, **extra)
            level1, t1 = mod.closure(y, num.c)[0], num.T_levels[0]
        else:
            want = mod.rhs_modes(y, num.T_modes, num.lam, num.w, num.eta, num.e2, ctx, **extra)
            level1, t1 = num.lam @ y, num.lam @ num.T_modes
        dv = [num.eta_v * r for r in mod.readout_rates(np.concatenate([level1, v]), t1, ctx)]
        got, got_v = rhs.split(out)
        assert got.shape == want.shape == (len(y0), mod.N_STATE)
        with mpmath.workdps(dps):
            for r in range(len(y0)):
                # per row: its entries span that row's scale; rounding is 10^-dps of it
                scale = max(abs(mpmath.mpf(x.mid())) for x in want[r])
                for a, b in zip(got[r], want[r], strict=True):
                    assert abs(mpmath.mpf((a - b).mid())) <= mpmath.mpf(10) ** (5 - dps) * scale
            for a, b in zip(got_v, dv, strict=True):
                assert _rel(mpmath.mpf(a.mid()), mpmath.mpf(b.mid())) <= mpmath.mpf(10) ** (5 - dps)
            # the padding of row L stays zero
            assert all(out[len(y0), j] == 0 for j in range(key.K, mod.N_STATE))


def test_solve_auto_runs_the_taylor_route():
    doc = _doc("erf", "erf", 2, 2, "levels", L=8)
    doc["solve"]["digits"] = 10
    r = solvers.solve(doc)
    assert "/taylor/" in r.meta["route"], r.meta["route"]
    assert r.meta["agreement_digits"] >= 10
    v = np.asarray(r.v)
    assert v.shape == (3, 2) and not np.allclose(v[-1], v[0], rtol=1e-3)


def test_arb_mat_rk78_matches_object_array_rk78():
    """The RK7(8) on the arb_mat state (v in row L, short row-independent scalars) against the
    same method on object arrays: modes basis, power schedule, noise + decay + batch."""
    problem = _problem("erf", "erf", 2, 2, "modes", schedule=True)
    alphas, rtol = ["0", "1/2", "2"], 1e-18
    ref = integrate_problem(problem, alphas, basis="modes", dps=30, rtol=rtol,
                            matrix_rhs=False, short_scalars=False)
    got = integrate_problem(problem, alphas, basis="modes", dps=30, rtol=rtol)
    # the error norms differ slightly (row L's zero padding enters the rms), so the step
    # sequences differ: each run is within ~rtol per step, 100 x rtol over the run
    with mpmath.workdps(30):
        for a, b in zip(got.eps_g, ref.eps_g, strict=True):
            assert _rel(a, b) <= 100 * rtol, (a, b)
        for vg, vr in zip(got.readouts, ref.readouts, strict=True):
            for x, y in zip(vg, vr, strict=True):
                assert _rel(mpmath.mpf(x.mid()), mpmath.mpf(y.mid())) <= 100 * rtol, (x, y)
