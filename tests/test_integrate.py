"""Tests of the adaptive RKF7(8) integrator: coefficients, orders, accuracy, number types, errors."""
from __future__ import annotations

from fractions import Fraction
from itertools import pairwise

import mpmath
import numpy as np
import pytest

from solvers.integrators import rk78 as integ
from solvers.integrators.rk78 import IntegrationError, fixed_step_rk4, integrate
from solvers.core.numbers import Float64Context, FlintContext, MpmathContext

pytestmark = [pytest.mark.closed_form, pytest.mark.higher_precision]  # oracle (tests/conftest.py)

# --- the tableau, exactly ---------------------------------------------------------------------


def _dense(coefs, n=13):
    return [coefs.get(j, Fraction(0)) for j in range(n)]


A = [_dense(row) for row in integ._A]
B8, B7 = _dense(integ._B8), _dense(integ._B7)


def test_tableau_shape_and_row_sums():
    assert len(integ._C) == len(A) == 13
    for i, row in enumerate(integ._A):
        assert all(0 <= j < i for j in row), "explicit: A strictly lower triangular"
        assert all(isinstance(v, Fraction) for v in row.values())
        assert sum(row.values(), Fraction(0)) == integ._C[i]  # c_i = sum_j a_ij, exactly


def _rooted_trees(max_order):
    """All rooted trees up to max_order, each a canonical (sorted) tuple of child subtrees."""
    def grow(t):  # every tree obtained from t by attaching one new leaf
        yield tuple(sorted(t + ((),)))
        for k, child in enumerate(t):
            for g in grow(child):
                yield tuple(sorted(t[:k] + (g,) + t[k + 1:]))

    levels = [[()]]
    while len(levels) < max_order:
        levels.append(sorted({g for t in levels[-1] for g in grow(t)}))
    return levels


def _order_conditions(b, max_order):
    """For each order p <= max_order, the trees t with sum_i b_i Phi_i(t) != 1/gamma(t)."""
    memo = {}

    def phi_gamma(t):  # internal weights Phi_i(t) and density gamma(t)
        if t not in memo:
            phi, gamma, size = [Fraction(1)] * 13, 1, 1
            for child in t:
                cphi, cgamma, csize = phi_gamma(child)
                a_cphi = [sum(a * p for a, p in zip(row, cphi, strict=True)) for row in A]
                phi = [p * q for p, q in zip(phi, a_cphi, strict=True)]
                gamma, size = gamma * cgamma, size + csize
            memo[t] = (phi, gamma * size, size)
        return memo[t]

    levels = _rooted_trees(max_order)
    failures = []
    for trees in levels:
        failures.append([t for t in trees
                         if sum(bi * p for bi, p in zip(b, phi_gamma(t)[0], strict=True))
                         != Fraction(1, phi_gamma(t)[1])])
    return levels, failures


def test_order_conditions_exact():
    """Every order condition (all 200 rooted trees up to order 8), in exact arithmetic."""
    levels, fail8 = _order_conditions(B8, 8)
    assert [len(t) for t in levels] == [1, 1, 2, 4, 9, 20, 48, 115]  # OEIS A000081
    assert all(not f for f in fail8), "propagated formula must have order 8"
    _, fail7 = _order_conditions(B7, 8)
    assert all(not f for f in fail7[:7]), "embedded formula must have order 7"
    assert fail7[7], "embedded formula must not have order 8 (else the estimate is useless)"


# --- observed orders with fixed steps ---------------------------------------------------------

def _coupled(t, y):
    # y1 = exp(sin t), y2 = 1 / (exp(sin t) + 1): nonlinear, coupled, non-autonomous.
    c = mpmath.cos(t)
    out = np.empty(2, dtype=object)
    out[:] = [y[0] * c, -c * y[0] * y[1] ** 2]
    return out


def test_observed_orders_dps60():
    with MpmathContext(dps=60) as ctx:
        t_end = ctx.convert(1)
        exact = mpmath.exp(mpmath.sin(t_end))
        exact = [exact, 1 / (exact + 1)]
        errs8, errs7 = [], []
        # The 7th-order error has a large opposite-sign h^8 term, so its observed order climbs
        # to 7 from below (6.1, 6.4, 6.8, 6.9 from n=8 on); hence the fairly small steps.
        for n in (16, 32, 64, 128):
            h = t_end / n
            y8 = y7 = ctx.array([1, Fraction(1, 2)])
            for k in range(n):
                y8, _ = integ._single_step(_coupled, k * h, y8, h, ctx=ctx)
                _, y7 = integ._single_step(_coupled, k * h, y7, h, ctx=ctx)
            errs8.append(max(abs(y8[i] - exact[i]) for i in range(2)))
            errs7.append(max(abs(y7[i] - exact[i]) for i in range(2)))
        for errs, p in ((errs8, 8), (errs7, 7)):
            orders = [float(mpmath.log(a / b, 2)) for a, b in pairwise(errs)]
            assert abs(orders[-1] - p) < 0.5, (p, orders)
            assert abs(orders[-2] - p) < 0.5, (p, orders)


def test_rk4_baseline_order():
    with MpmathContext(dps=30) as ctx:
        errs = []
        for n in (16, 32):
            y = fixed_step_rk4(_coupled, [0, 1], ctx.array([1, Fraction(1, 2)]), ctx=ctx,
                               n_steps_per_interval=n)[-1]
            errs.append(abs(y[0] - mpmath.exp(mpmath.sin(1))))
        assert abs(float(mpmath.log(errs[0] / errs[1], 2)) - 4) < 0.5


# --- adaptive accuracy on y' = A y -------------------------------------------------------------

LIN_A = [[Fraction(-1, 2), 1, 0, 0],
         [-1, Fraction(-1, 2), Fraction(3, 10), 0],
         [0, 0, Fraction(-1, 5), 2],
         [0, 0, -2, Fraction(-1, 5)]]
LIN_Y0 = [1, Fraction(1, 2), -1, Fraction(1, 4)]


def _linear_reference(t_end, dps):
    """exp(A t) y0 with mpmath.expm at higher precision, returned as mpf at the current dps."""
    with MpmathContext(dps=dps + 30) as hi:
        ref = mpmath.expm(mpmath.matrix(hi.array(LIN_A).tolist()) * hi.convert(t_end))
        ref = ref * mpmath.matrix(hi.array(LIN_Y0).tolist())
        return [ref[i] for i in range(4)]


def _solve_linear(ctx, t_points, rtol, **kw):
    a = ctx.array(LIN_A)
    return integrate(lambda t, y: a.dot(y), t_points, ctx.array(LIN_Y0), ctx=ctx,
                     rtol=rtol, atol=rtol, **kw)


# The step count grows like rtol**(-1/8) (the controller acts on an O(h^8) estimate): for this A
# ~120 steps per unit time at 1e-20, ~7e5 at 1e-50, ~2e13 at 1e-110.  So the interval shrinks
# with the precision to keep ~100-200 steps; what is tested is that the digits are delivered.
@pytest.mark.parametrize("dps, t_end", [(30, 1), (60, Fraction(2, 10**4)), (120, Fraction(1, 10**11))])
def test_accuracy_ladder(dps, t_end):
    rtol = Fraction(1, 10 ** (dps - 10))
    ref = _linear_reference(t_end, dps)
    with MpmathContext(dps=dps) as ctx:
        stats = {}
        y = _solve_linear(ctx, [0, t_end], rtol, stats=stats, max_steps=5000)[-1]
        err = max(abs(y[i] - ref[i]) for i in range(4)) / max(abs(r) for r in ref)
        # The controller bounds the estimated local error per step by ~rtol (relative to |y|
        # ~ 1); the global error is at most the sum over the ~100-200 steps, and exp(A t) is
        # non-expanding here.  Propagating the 8th-order solution makes each step's actual
        # error far smaller than the 7th-order estimate, so 100*rtol is a loose but honest
        # bound.  A float64-rounded coefficient (checked by hand) makes the dps-60 and 120
        # runs stall on a ~1e-17 error-estimate floor, which max_steps turns into a failure.
        assert err < 100 * ctx.convert(rtol), (err, stats)
        assert 20 < stats["n_steps"] < 1000, stats


def _arb_to_mpf(x):
    man, exp = x.mid().man_exp()  # the midpoint is a binary number: exact conversion
    return mpmath.ldexp(mpmath.mpf(int(man)), int(exp))


def test_number_types_agree():
    t_points = [0, Fraction(1, 2), 1]
    with Float64Context() as ctx:
        y64 = _solve_linear(ctx, t_points, 1e-12)
    with MpmathContext(dps=30) as ctx:
        ymp = _solve_linear(ctx, t_points, "1e-20")
    with FlintContext(dps=30) as ctx:
        yfl = _solve_linear(ctx, t_points, "1e-20")
    assert y64[-1].dtype == np.float64
    with mpmath.workdps(30):
        yfl = [[_arb_to_mpf(v) for v in y] for y in yfl]
        ref = _linear_reference(1, 30)
        for k in (1, 2):
            for i in range(4):
                assert abs(y64[k][i] - float(ymp[k][i])) < 1e-10
                assert abs(ymp[k][i] - yfl[k][i]) < mpmath.mpf("1e-25")
        assert max(abs(ymp[2][i] - ref[i]) for i in range(4)) < mpmath.mpf("1e-18")


# --- failures are loud ------------------------------------------------------------------------

def test_blow_up_raises():
    with Float64Context() as ctx:
        with pytest.raises(IntegrationError, match="underflow"):
            integrate(lambda t, y: y * y, [0, 2], np.array([1.0]), ctx=ctx, rtol=1e-10, atol=1e-10)
    with MpmathContext(dps=30) as ctx:
        # No overflow at arbitrary precision: the steps shrink geometrically towards the pole
        # at t = 1 until they fall below ~1e-29 * t.  A loose rtol keeps that to ~1000 steps.
        stats = {}
        with pytest.raises(IntegrationError, match="underflow"):
            integrate(lambda t, y: y * y, [0, 2], ctx.array([1]), ctx=ctx, rtol=1e-10, atol=1e-10,
                      stats=stats)
        assert stats["n_steps"] > 100  # stats are filled even when the integration fails


def test_nan_raises():
    with Float64Context() as ctx:
        with pytest.raises(IntegrationError, match="non-finite"):
            integrate(lambda t, y: y * np.nan, [0, 1], np.array([1.0]), ctx=ctx, rtol=1e-8, atol=1e-8)
        # NaN only beyond t = 1/2: trial steps are rejected until the step underflows there.
        with pytest.raises(IntegrationError, match="non-finite"):
            integrate(lambda t, y: y * (np.nan if t > 0.5 else 1.0), [0, 0.5, 1], np.array([1.0]),
                      ctx=ctx, rtol=1e-8, atol=1e-8)
    with MpmathContext(dps=30) as ctx:
        with pytest.raises(IntegrationError, match="non-finite"):
            integrate(lambda t, y: y * mpmath.nan, [0, 1], ctx.array([1]), ctx=ctx, rtol=1e-8, atol=1e-8)
    with FlintContext(dps=30) as ctx:
        from flint import arb
        with pytest.raises(IntegrationError, match="non-finite"):
            integrate(lambda t, y: y * arb("nan"), [0, 1], ctx.array([1]), ctx=ctx, rtol=1e-8, atol=1e-8)


def test_max_steps():
    with MpmathContext(dps=30) as ctx:
        with pytest.raises(IntegrationError, match="max_steps"):
            _solve_linear(ctx, [0, 1], "1e-20", max_steps=10)


# --- bookkeeping ------------------------------------------------------------------------------

@pytest.mark.parametrize("make_ctx", [Float64Context, lambda: MpmathContext(30), lambda: FlintContext(30)])
def test_output_times_hit_exactly(make_ctx):
    t_points = [0, Fraction(1, 3), Fraction(1, 3) + Fraction(1, 10**6), 1, 3]
    with make_ctx() as ctx:
        seen, ticks, stats = [], [], {}
        y0 = ctx.array(LIN_Y0)
        a = ctx.array(LIN_A)
        # monitor(t, y) sees the step ends in the number type; progress(t) their float values
        out = integrate(lambda t, y: a.dot(y), t_points, y0, ctx=ctx, rtol=1e-10, atol=1e-10,
                        progress=ticks.append, monitor=lambda t, y: seen.append(t), stats=stats)
        assert all(type(t) is float for t in ticks) and ticks == [ctx.to_float(t) for t in seen]
        assert len(out) == len(t_points) and out[0] is y0
        for tp in t_points[1:]:  # flint: the midpoint of the converted time, exactly
            exact = ctx.convert(tp).mid() if ctx.name == "flint" else ctx.convert(tp)
            assert any(t == exact for t in seen), tp
        assert all(b > a for a, b in pairwise(seen))
        assert seen[-1] == ctx.convert(3)
        assert stats["n_steps"] == len(seen)
        # f(t0, y0), one for the initial-step guess, 12 per attempt, 1 per accepted state
        attempts = stats["n_steps"] + stats["n_rejected"]
        assert stats["n_fevals"] == 2 + 12 * attempts + stats["n_steps"]


def test_given_h0_single_point_and_bad_times():
    with MpmathContext(dps=30) as ctx:
        y0 = ctx.array(LIN_Y0)
        out = integrate(lambda t, y: y, [0], y0, ctx=ctx, rtol=1e-8, atol=1e-8)
        assert len(out) == 1 and out[0] is y0
        a = _solve_linear(ctx, [0, 1], "1e-20", h0=Fraction(1, 1000))[-1]
        b = _solve_linear(ctx, [0, 1], "1e-20")[-1]
        assert max(abs(a[i] - b[i]) for i in range(4)) < mpmath.mpf("1e-18")
        with pytest.raises(ValueError):
            integrate(lambda t, y: y, [0, 1, 1], y0, ctx=ctx, rtol=1e-8, atol=1e-8)
