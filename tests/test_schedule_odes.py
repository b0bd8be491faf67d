"""Learning-rate schedules in the ODEs ([training] schedule; conventions in
docs/theory/conventions.md): η(α) = η (1 + α/α0)^(-p) ("power": the RK7(8) evaluates η at every
stage's α, the Taylor series carries η(α)'s series; tests/test_taylor_schedule.py compares the
two) and piecewise-constant "steps" (integrated piece by piece, the integrator restarted at each
switching α, on every route including the Taylor series).

References are independent of the code under test: the linear K = M = 1 equations written out
in the modes basis and integrated by mpmath's Taylor-series ODE solver; two constant-η solves
chained by an explicit initial condition; the other basis; the simulator.
"""
from __future__ import annotations

import dataclasses
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from cache_support import generated_cache_fixtures
from solvers.app.solve import problem_of, solve_spec
from solvers.app.spec import parse_spec
from solvers.core.layout import unpack_state
from solvers.core.numbers import exact_fraction, to_mpf
from solvers.core.problem import explicit_init
from solvers.hierarchy import precision
from solvers.hierarchy.odes import integrate_problem
from solvers.hierarchy.verify import agreement_digits

# oracles (tests/conftest.py): written-out ODEs at higher precision, chained constant solves and
# the other basis, the simulator
pytestmark = [pytest.mark.higher_precision, pytest.mark.second_basis, pytest.mark.simulation]

DIGITS = 12


# the run-wide generated-module cache (tests/cache_support.py)
run_cache, cache = generated_cache_fixtures()


LAM = ["2", "0.5"]
INIT = (["0.05", "-0.05"], ["0.02", "0.03"], ["0.5", "0.5"])     # R_k, Q_k, T_k (modes)


def _linear_doc(schedule, basis, alphas, eta="0.3", **solve):
    return {"model": {"activation": "linear", "K": 1, "M": 1},
            "data": {"eigenvalues": [float(x) for x in LAM]},
            "training": {"eta": eta, "order": 2, "init": "explicit",
                         **({"schedule": schedule} if schedule else {})},
            "init": {"modes": {"R": [[[v]] for v in INIT[0]], "Q": [[[v]] for v in INIT[1]],
                               "T": [[[v]] for v in INIT[2]]}},
            "solve": {"alphas": alphas, "basis": basis, "digits": 12, **solve}}


def _power_reference(eta, a0, p, alphas, dps=30):
    """ε_g of linear K = M = 1 (order 2, B = 1) with η(α) = η (1 + α/α0)^(-p), written out from
    the conventions (tests/ode_support.py)."""
    from ode_support import linear_modes_eps

    def mp(x):
        return mpmath.mpf(Fraction(x).numerator) / Fraction(x).denominator

    return linear_modes_eps(LAM, INIT, alphas,
                            lambda a: mp(eta) * (1 + a / mp(a0)) ** (-mp(p)), dps=dps)


@pytest.mark.parametrize("basis", ["levels", "modes"])
def test_power_schedule_against_the_written_out_linear_odes(cache, basis):
    alphas = [0.5, 2.0, 6.0]
    sched = {"kind": "power", "alpha0": "0.5", "p": "0.75"}
    res = solve_spec(parse_spec(_linear_doc(sched, basis, alphas)))
    # the policy runs the Taylor series, which carries η(α) in its jets
    assert "/taylor/" in res["meta"]["route"] and res["meta"]["agreement_digits"] >= DIGITS
    assert res["meta"]["schedule"] == {"kind": "power", "alpha0": 0.5, "p": 0.75}
    got = [mpmath.mpf(e) for e in res["eps_g"]]
    ref = _power_reference("0.3", "0.5", "0.75", alphas)
    # the solve claims 12 verified digits; the reference carries ~30
    with mpmath.workdps(30):
        for g, r in zip(got, ref, strict=True):
            assert abs(g - r) <= 2 * mpmath.mpf(10) ** -DIGITS * abs(r), (g, r)
    # not vacuous: the constant-η curve differs far beyond that
    const = solve_spec(parse_spec(_linear_doc(None, basis, alphas)))
    assert agreement_digits(got, [mpmath.mpf(e) for e in const["eps_g"]]) < 3


def _modes_state_init(state, T):
    """An explicit modes initial condition from a run's final (L, N_STATE) modes state, every
    bit kept (exact_fraction goes through mpmath.mpf, which rounds to mpmath's precision)."""
    with mpmath.workprec(1000):
        exact = np.array([[exact_fraction(to_mpf(x)) for x in row] for row in state],
                         dtype=object)
    R, Q = unpack_state(exact, 1, 1)
    return explicit_init("modes", R, Q, T)


@pytest.mark.parametrize("basis, arithmetic, integrator", [("levels", "flint", "taylor"),
                                                           ("modes", "flint", "rk78"),
                                                           ("modes", "float64", "rk78")])
def test_steps_schedule_equals_two_chained_constant_solves(cache, basis, arithmetic,
                                                           integrator):
    """η = 0.3 up to α = 1.5, then 0.1: the same as a solve at η = 0.3 to α = 1.5 whose final
    state starts a solve at η = 0.1 for the remaining α (independent route: no schedule)."""
    a1, end = Fraction(3, 2), Fraction(4)
    sched = {"kind": "steps", "alphas": ["1.5"], "etas": ["0.1"]}
    problem = problem_of(parse_spec(_linear_doc(sched, "modes", [0.5])))
    assert problem.schedule == ("steps", (a1,), (Fraction(1, 10),))
    dps, rtol = (40, 1e-24) if arithmetic == "flint" else (None, 1e-14)
    kw = dict(arithmetic=arithmetic, dps=dps, rtol=rtol, integrator=integrator)
    # output points on both sides of the switch and on it
    stepped = integrate_problem(problem, ["0.5", "1.5", "2", "4"], basis=basis, **kw)
    plain = dataclasses.replace(problem, schedule=None)
    first = integrate_problem(plain, ["0.5", "1.5"], basis="modes", arithmetic="flint", dps=40,
                              rtol=1e-24, integrator="taylor")
    second_problem = dataclasses.replace(plain, eta=Fraction(1, 10),
                                         init=_modes_state_init(first.states[-1],
                                                                problem.init.T))
    second = integrate_problem(second_problem, [str(Fraction(1, 2)), str(end - a1)],
                               basis="modes", arithmetic="flint", dps=40, rtol=1e-24,
                               integrator="taylor")
    chained = first.eps_g + second.eps_g
    # flint runs at rtol 1e-24 carry ~20 digits; float64 at rtol 1e-14 about 12 (ε_g is a
    # difference of O(1) numbers)
    want = 18 if arithmetic == "flint" else 11
    assert agreement_digits(stepped.eps_g, chained) >= want
    # not vacuous: without the switch the curve is another one after α = 1.5
    constant = integrate_problem(plain, ["0.5", "1.5", "2", "4"], basis="modes",
                                 arithmetic="float64", rtol=1e-14)
    assert agreement_digits(stepped.eps_g[2:], constant.eps_g[2:]) < 3


def test_power_schedule_keeps_the_taylor_route_and_refuses_the_stiff_modes_kernel(cache):
    problem = problem_of(parse_spec(_linear_doc({"kind": "power", "alpha0": 1, "p": 1},
                                                "levels", [1.0])))
    assert not problem.autonomous
    # the stiff modes kernel (constant η) refuses a schedule instead of ignoring it
    from solvers.hierarchy import modes_fast
    with pytest.raises(ValueError, match="schedule"):
        modes_fast.inputs_from_problem(problem)
    for dps in ("auto", 40):
        assert precision.plan("levels", dps, 12, 2).integrator == "taylor"
        assert precision.plan("levels", dps, 12, 2).integrator == "taylor"


def test_erf_power_schedule_levels_agree_with_modes(cache):
    """erf K = M = 2, L = 8: both bases under the policy, each verified to the digits asked."""
    digits = 10

    def doc(basis):
        return {"model": {"activation": "erf", "K": 2, "M": 2},
                "data": {"L": 8, "beta": 1.0, "N": 512},
                "training": {"eta": "0.5", "schedule": {"kind": "power", "alpha0": 1, "p": 1}},
                "solve": {"alpha_max": 2.0, "n_points": 3, "basis": basis, "digits": digits}}

    levels, modes = (solve_spec(parse_spec(doc(b))) for b in ("levels", "modes"))
    for r in (levels, modes):
        assert r["meta"]["agreement_digits"] >= digits
        assert "rodas4" not in r["meta"]["route"] and "/taylor/" in r["meta"]["route"]
    eps = [[mpmath.mpf(e) for e in r["eps_g"]] for r in (levels, modes)]
    # each claims `digits` verified digits, so they may differ by two units of the last
    assert agreement_digits(*eps) >= digits - 0.5


# -- the simulator against the ODEs -----------------------------------------------------------

def _compare_spec(schedule, N=1024, seeds=(0, 1)):
    return {"model": {"activation": "erf", "K": 2, "M": 2},
            "data": {"L": 4, "beta": 1.0, "N": N},
            "training": {"eta": 0.5, "sigma_J": 0.1, "seed": seeds[0],
                         **({"schedule": schedule} if schedule else {})},
            "solve": {"alpha_max": 10, "n_points": 21, "spacing": "linear",
                      "basis": "modes", "dps": "float64", "digits": 8},
            "simulate": {"seeds": list(seeds), "n_jobs": 1}}


@pytest.mark.parametrize("schedule", [{"kind": "power", "alpha0": 1, "p": 1},
                                      {"kind": "steps", "alphas": [1, 4], "etas": [0.1, 1]}])
def test_simulation_with_a_schedule_within_the_finite_size_scale(cache, schedule):
    """erf K = M = 2, L = 4, N = 1024, two seeds (each against its own realisation's ODE),
    α ≤ 10, the setting of tests/test_compare.py with η(α) scheduled: the relative RMS deviation
    stays within the compare subcommand's 3/√N (justified there: rms·√N ≤ 1.24 over 48
    constant-η runs).  The simulator uses η at each step's start α = t/N, the ODE η(α): an
    O(1/N) difference, far below N^-1/2."""
    import solvers
    res = solvers.compare(_compare_spec(schedule))
    assert res.within and res.rms_deviation < res.finite_size_scale, res.rms_deviation
    # the scheduled simulation against the constant-η theory of the same realisations
    from solvers.app.compare import deviation
    const = solvers.compare(_compare_spec(None))
    wrong = deviation(const.eps_g_theory_runs, res.simulation.eps_g_runs, 1024)
    # measured rms·√N: 0.19 (power) and 0.45 (steps) against the scheduled ODE, 31 and 11.7
    # against the constant-η one: the test tells the schedule apart from its absence
    assert not wrong["within"], wrong["rms_deviation"]
