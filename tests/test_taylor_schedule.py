"""The Taylor integrator under a power learning-rate schedule η(α) = η (1 + α/a0)^(-p).

The series carries η(α) as Cauchy products of the constant-η jets with the series of
s(α) = η(α)/η and s² (solvers/integrators/taylor.py).  References, independent of that code:
the series of s against mpmath.taylor of the closed form (numerical differentiation at higher
precision); whole runs against the RK7(8), which evaluates η(α) pointwise at every stage; a
p = 0 schedule (s = 1 through the schedule's code path) against the constant-η run, bit for bit.
"""
from __future__ import annotations

from fractions import Fraction

import mpmath
import pytest

from solvers.app.solve import problem_of, solve_spec
from solvers.app.spec import parse_spec
from solvers.core.numbers import context
from solvers.hierarchy.odes import integrate_problem
from solvers.hierarchy.verify import agreement_digits
from solvers.integrators.taylor import rate_series

pytestmark = [pytest.mark.closed_form, pytest.mark.second_basis, pytest.mark.higher_precision]


def _doc(basis, schedule, L=8, digits=10, **training):
    return {"model": {"activation": "erf", "K": 2, "M": 2},
            "data": {"L": L, "beta": 1.0, "N": 512},
            "training": {"eta": "0.5", **({"schedule": schedule} if schedule else {}),
                         **training},
            "solve": {"alpha_max": 4.0, "n_points": 3, "basis": basis, "digits": digits}}


POWER = {"kind": "power", "alpha0": "0.5", "p": "0.75"}


@pytest.mark.parametrize("a0, p, t", [("0.5", "0.75", "0"), ("0.5", "0.75", "3.25"),
                                      ("2", "1", "0.125"), ("1", "0", "7"),
                                      ("0.1", "2.5", "1")])
def test_rate_series_is_the_taylor_series_of_the_closed_form(a0, p, t):
    a0, p, t = Fraction(a0), Fraction(p), Fraction(t)
    n = 30
    ctx = context("flint", 40)
    with ctx:
        s, q = rate_series(("power", a0, p), t, n, ctx)
        s, q = ([x.mid().str(45, radius=False) for x in w] for w in (s, q))
    with mpmath.workdps(80):
        s, q = ([mpmath.mpf(x) for x in w] for w in (s, q))
        mp = [mpmath.mpf(x.numerator) / x.denominator for x in (a0, p, t)]
        ref_s = mpmath.taylor(lambda a: (1 + a / mp[0]) ** (-mp[1]), mp[2], n - 1)
        ref_q = mpmath.taylor(lambda a: (1 + a / mp[0]) ** (-2 * mp[1]), mp[2], n - 1)
        # 30 digits relative to the coefficient's own size: ours are rounded once at 40 digits,
        # mpmath's numerical derivatives at 80 digits carry well over 30 (an exact zero for p = 0
        # must come out as one)
        for mine, ref in ((s, ref_s), (q, ref_q)):
            for k, (x, y) in enumerate(zip(mine, ref, strict=True)):
                assert abs(x - y) <= mpmath.mpf(10) ** -30 * max(abs(y), 10 ** -60), (k, x, y)


@pytest.mark.parametrize("basis, training", [
    ("levels", {}),
    # noise, weight decay and a batch: the η² term (e2 = η(α)²/B) and -η(α) κ y under the schedule
    ("modes", {"noise": "0.05", "weight_decay": "0.02", "batch_size": 2})])
def test_taylor_agrees_with_rk78_on_a_power_schedule(basis, training):
    problem = problem_of(parse_spec(_doc(basis, POWER, **training)))
    assert not problem.autonomous
    alphas = ["0", "0.5", "4"]
    # each route at the tolerance that gives 20 digits of ε_g by the policy's rules
    # (precision.default_rtol: 10^-(digits+3) for Taylor, 10^-(digits+5) for the RK7(8)); dps 40
    # leaves 20 digits for rounding and the L = 8 closure (estimated_dps would ask for 51 at
    # L = 8 from a far larger α; the agreement below is what says it sufficed)
    taylor = integrate_problem(problem, alphas, basis=basis, dps=40, rtol=1e-23,
                               integrator="taylor")
    rk78 = integrate_problem(problem, alphas, basis=basis, dps=40, rtol=1e-25, integrator="rk78")
    assert agreement_digits(taylor.eps_g, rk78.eps_g) >= 20
    # not vacuous: the constant-η curve is another one far beyond those digits
    const = integrate_problem(problem_of(parse_spec(_doc(basis, None, **training))), alphas,
                              basis=basis, dps=40, rtol=1e-23, integrator="taylor")
    assert agreement_digits(taylor.eps_g[1:], const.eps_g[1:]) < 3


def test_p_zero_schedule_is_bit_identical_to_constant_eta():
    """p = 0 runs the schedule's code path (Cauchy products with s = 1, 0, 0, ...): exact
    products and sums, so every bit of every state equals the constant-η run's."""
    alphas = ["0", "1", "3"]
    zero = problem_of(parse_spec(_doc("levels", {"kind": "power", "alpha0": 1, "p": 0},
                                      weight_decay="0.02")))
    const = problem_of(parse_spec(_doc("levels", None, weight_decay="0.02")))
    assert not zero.autonomous and const.autonomous
    runs = [integrate_problem(p, alphas, basis="levels", dps=30, rtol=1e-18, integrator="taylor")
            for p in (zero, const)]
    bits = [[x.mid().man_exp() for st in r.states for x in st.ravel()] for r in runs]
    assert bits[0] == bits[1]
    assert runs[0].stats["n_steps"] == runs[1].stats["n_steps"]


def test_auto_solve_of_a_power_schedule_runs_the_taylor_route_verified():
    digits = 12
    res = solve_spec(parse_spec(_doc("levels", POWER, L=4, digits=digits)))
    assert "/taylor/" in res["meta"]["route"], res["meta"]["route"]
    assert res["meta"]["agreement_digits"] >= digits
    # the verified digits against an independent route: the RK7(8) at 20 digits
    problem = problem_of(parse_spec(_doc("levels", POWER, L=4)))
    ref = integrate_problem(problem, res["alpha"], basis="levels", dps=40, rtol=1e-25,
                            integrator="rk78")
    got = [mpmath.mpf(e) for e in res["eps_g"]]
    assert len(got) == len(ref.eps_g) == 3
    # 12 claimed digits: two units of the last one
    with mpmath.workdps(40):
        for g, r in zip(got, ref.eps_g, strict=True):
            assert abs(g - r) <= 2 * mpmath.mpf(10) ** -digits * abs(r), (g, r)


def test_the_jets_carry_exactly_one_factor_eta_in_a_and_none_in_f():
    """What the schedule's series rests on (derive/hierarchy.py: a = η·[...], f free of η):
    the printed jets at η and at 1, orders 0..3, give a(η) = η a(1) and f(η) = f(1)."""
    from solvers.core.arb_rhs import ArbMatRHS, to_arb_mat
    from solvers.core.registry import load

    problem = problem_of(parse_spec(_doc("modes", None, L=4, noise="0.1")))
    jets, mod = load(problem.key, "taylor"), load(problem.key, "mpmath")
    n_a = len(mod.A_INDEX)
    ctx = context("flint", 40)
    with ctx:
        num = problem.numeric(ctx)
        rhs = ArbMatRHS(mod, num, ctx, "modes")
        v1 = rhs.level_one(to_arb_mat(num.y_modes))
        eta = ctx.convert(Fraction(3, 7))
        outs = []
        for e in (eta, ctx.convert(1)):
            state, out = jets.jets_start(list(v1), rhs.t1, e, ctx)
            series = [list(out)]
            for k in range(1, 4):     # any coefficients of v1 will do: the claim is per order
                v1k = [ctx.convert(Fraction(j + 1, 5 * k + j)) for j in range(len(v1))]
                series.append(list(jets.jets_extend(state, v1k, k)))
            outs.append(series)
        tol = ctx.convert(10) ** -35   # 40 digits, a few roundings of O(1) numbers
        n_checked = 0
        for with_eta, without in zip(*outs, strict=True):
            for i, (x, y) in enumerate(zip(with_eta, without, strict=True)):
                want = eta * y if i < n_a else y
                assert abs(x - want) <= tol * (1 + abs(want)), (i, x, want)
                n_checked += not (want == 0)
        assert n_checked > 4 * n_a // 2          # not vacuous: most outputs are nonzero
