"""The precision policy (solvers.hierarchy.precision) and the scoped precision of the contexts."""
import flint
import mpmath
import pytest

from solvers.core.numbers import context
from solvers.hierarchy import precision, runner

pytestmark = [pytest.mark.contract, pytest.mark.higher_precision]  # oracle (tests/conftest.py)


def test_plan_follows_the_documented_policy():
    p = precision.plan("levels", "auto", 12, 64)
    assert (p.arithmetic, p.verify, p.dps) == ("flint", "settle", precision.estimated_dps(64, 12, "levels"))
    p = precision.plan("modes", "auto", 8, 64)          # few digits: float64, checked, else flint
    assert (p.arithmetic, p.verify, p.rtol) == ("float64", "tighter", precision.FLOAT64_RTOL)
    assert p.fallback.verify == "settle" and p.fallback.arithmetic == "flint"
    assert precision.plan("modes", "auto", 12, 64).arithmetic == "flint"
    p = precision.plan("levels", "float64", 6, 16)
    assert (p.arithmetic, p.verify) == ("float64", "modes")
    assert precision.plan("modes", "float64", 6, 16).verify == "float64"   # screened (verify.py)
    p = precision.plan("levels", 80, 20, 16)                # a fixed dps is verified too
    assert (p.arithmetic, p.dps, p.verify, p.rtol) == ("flint", 80, "fixed", precision.default_rtol(20, "taylor"))
    # the integrator: Taylor series on flint arb, RK7(8) on float64 (and mpmath)
    for b in ("levels", "modes"):
        assert precision.plan(b, "float64", 10, 8).integrator == "rk78"
        assert precision.plan(b, 40, 10, 8).integrator == "taylor"
        assert precision.plan(b, "auto", 12, 8).integrator == "taylor"
    assert precision.choose_integrator("levels", "mpmath", 30, 8) == "rk78"
    # tolerances: the Taylor route 10^-(digits+3) (measured, precision.default_rtol); RK7(8)
    # and float64 10^-(digits+5)
    assert precision.plan("levels", "auto", 12, 64).rtol == 1e-15
    assert precision.plan("modes", "float64", 6, 16).rtol == precision.default_rtol(6) == 1e-11
    assert precision.plan("modes", "auto", 8, 64).fallback.rtol == 1e-11


def test_settle_raises_precision_until_two_runs_agree():
    calls = []

    def run(dps, tighter):          # a "computation" with 10^-(dps/2) error: needs dps >= 2 digits
        calls.append(dps)
        with mpmath.workdps(dps + 10):
            return [mpmath.mpf(1) / 3 + mpmath.mpf(10) ** (-(dps // 2))]

    second, dps2, dps1, agree = runner.settle(run, lambda v: v, digits=20, dps=20, max_rounds=6)
    assert agree >= 20 and dps2 > dps1 >= 20 and calls[0] == 20
    with pytest.raises(precision.PrecisionLost):
        runner.settle(run, lambda v: v, digits=20, dps=20, max_rounds=6, fixed=True)


@pytest.mark.parametrize("kind", ["flint", "mpmath"])
def test_precision_is_scoped_and_restored(kind):
    """workdps / extradps nest inside the context's own scope; everything is restored, also
    when the block raises (flint's precision is process-wide)."""
    digits = (lambda: flint.ctx.dps) if kind == "flint" else (lambda: mpmath.mp.dps)
    before = (flint.ctx.prec, mpmath.mp.prec)
    with context(kind, 60) as ctx:
        assert digits() == 60
        with ctx.workdps(30):
            assert digits() == 30
        with pytest.raises(ZeroDivisionError):
            with ctx.extradps(10):
                assert digits() == 70
                1 / 0
        assert digits() == 60
    assert (flint.ctx.prec, mpmath.mp.prec) == before
    with context("float64") as f, f.workdps(100):
        assert f.dps == 15                 # float64 has no precision to set


def test_a_fixed_dps_runs_the_planned_integrator(monkeypatch):
    """A user-given dps runs (the plan's fixed route) with the integrator the plan picks (the
    Taylor series on flint), for the run and for its check; it used to fall back to RK7(8)."""
    from fractions import Fraction

    from derive import spectra
    from derive.keys import SystemKey
    from solvers.core.problem import Problem, random_init
    from solvers.app.solve import run
    from solvers.hierarchy import odes

    seen = []
    real = odes.integrate_problem

    def spy(*args, **kw):
        step = kw.get("step")          # the runs of a plan come as its steps
        seen.append((step.arithmetic, step.integrator) if step else
                    (kw.get("arithmetic"), kw.get("integrator", "rk78")))
        return real(*args, **kw)

    monkeypatch.setattr(odes, "integrate_problem", spy)
    s = spectra.power_law(4, 1)
    prob = Problem(SystemKey("linear", 1, 1), s, Fraction(1, 10), 1,
                   random_init(1, 1, 64, s, Fraction(1, 100), 0))
    run(prob, [0, 5], basis="levels", dps=40, digits=20)
    flint_runs = [i for a, i in seen if a == "flint"]
    assert flint_runs and set(flint_runs) == {precision.plan("levels", 40, 20, 4).integrator}
    assert flint_runs[0] == "taylor"


def test_settle_raises_precision_past_a_breakdown():
    """A run that breaks down at low precision (IntegrationError) is a failed round: settle
    raises the precision and goes on instead of stopping with the error."""
    from solvers.integrators.rk78 import IntegrationError
    calls = []

    def run(dps, tighter):
        calls.append(dps)
        if dps < 40:
            raise IntegrationError("step size underflow")
        with mpmath.workdps(dps + 10):
            return [mpmath.mpf(1) / 3 + mpmath.mpf(10) ** (-(dps // 2))]

    second, dps2, dps1, agree = runner.settle(run, lambda v: v, digits=20, dps=20, max_rounds=6)
    assert agree >= 20 and dps1 >= 40 and calls[0] == 20
    with pytest.raises(precision.PrecisionLost):
        runner.settle(run, lambda v: v, digits=20, dps=20, max_rounds=1, fixed=True)
