"""The precision policy: one place decides the arithmetic, the integrator, the digits and how a
result is verified, for ``solve``, the level and mode runs, and the linear routes.

The policy reads in one direction, plan → run → verify, each step in its own module:

    plan    this module: ``plan(basis, dps, digits, L)`` ─► Plan(arithmetic, integrator, dps,
            rtol, verify); pure decisions, nothing runs here
    run     solvers.hierarchy.odes.integrate_problem(…, dps, rtol, integrator): one run;
            numbers.context(arithmetic, dps) scopes the precision, the NumericProblem and the
            right-hand side (row-independent scalars at ``short_dps(rtol, dps)``) and the
            integrator share it
    verify  solvers.hierarchy.verify: ``solve`` executes the plan and checks its result by a
            second run (``settle``, the one "rerun until it agrees" loop: more digits and, for
            ODE runs, a 100x tighter tolerance; a tighter pair; a fixed dps checked or refused)

``solvers.app.solve.run`` calls ``verify.solve``; nothing here imports the other two.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import mpmath

from solvers.core.numbers import to_mpf

# float64 runs are checked by a second run at 100x tighter tolerance; below rtol ~ 1e-15 the
# rounding of float64 itself dominates, so the first run sits at 1e-13 (~9 digits of eps_g).
FLOAT64_MAX_DIGITS = 9
FLOAT64_RTOL = 1e-13


class PrecisionLost(RuntimeError):
    """A result would have fewer correct digits than asked for."""


@dataclass(frozen=True)
class Plan:
    """How one solve runs.

    faster: a route tried before this one when the problem allows it — the modes basis's
    stiff float64 solver (``hierarchy.modes_fast``, RODAS4; needs a modes-basis initial
    condition), checked like "tighter"; when its pair disagrees, this plan runs.

    verify: "fixed" (a run at a fixed dps, verified by a second run or refused:
    ``hierarchy.verify.run_fixed_dps``), "float64" (a float64 modes run screened the same way:
    ``verify_float64``), "none" (one unverified run), "modes" (a float64 level run checked against the
    modes basis), "tighter" (a float64 run checked by a second one at a ``check_factor``
    (100x; the modes fast route 10x) tighter tolerance, falling back to ``fallback`` when they
    disagree), "settle" (raise the precision until two
    runs agree, starting at ``dps``).
    """

    arithmetic: str            # "float64" | "flint"
    integrator: str            # "rk78" | "taylor" | "rodas4" (choose_integrator; rodas4: faster)
    dps: int | None
    rtol: float
    verify: str
    fallback: "Plan | None" = None
    faster: "Plan | None" = None   # tried first where the problem allows it (modes_fast)
    check_factor: float = 100.0    # "tighter": the check runs at rtol / check_factor

    def route(self, basis: str) -> str:
        """The route's name for ``meta.route``: basis/arithmetic/integrator/verification."""
        return f"{basis}/{self.arithmetic}/{self.integrator}/{self.verify}"


# Digits of ε_g from which the Taylor integrator beats the RK7(8) on flint arb.  Measured
# (BENCHMARKS.md, Taylor section; erf K = M = 2, α ≤ 300, CPU time): Taylor was cheaper at every
# digit count tried, 1.4x at 3 digits (L = 8, 16) to 9.6x at 12 (L = 64); so every flint run uses it.
TAYLOR_MIN_DIGITS = 1


def choose_integrator(basis: str, arithmetic: str, digits: int, L: int,
                      jets: bool = True) -> str:
    """The integrator for a run: the Taylor series (solvers.integrators.taylor) for flint runs
    from TAYLOR_MIN_DIGITS digits on, the embedded RK7(8) otherwise (float64 and mpmath).
    A power learning-rate schedule chooses the same (the Taylor series carries η(α)'s own
    series), and so does a trained readout (its v is carried by the jets too).
    ``jets=False``: a system without Taylor jets: the RK7(8)."""
    if arithmetic == "flint" and digits >= TAYLOR_MIN_DIGITS and jets:
        return "taylor"
    return "rk78"


# ``dps = "float64"``: the RK7(8) runs at rtol 10^-(digits+5) and is checked at 100x tighter
# (floor 1e-16); float64 carries ~16 significant digits, so beyond 11 digits the step size
# underflows instead of the request being answered.
FLOAT64_FIXED_MAX_DIGITS = 11


def check_request(basis: str, dps, digits: int) -> None:
    """Refuse, before any work, a request the chosen arithmetic cannot meet (ValueError)."""
    if dps == "float64" and digits > FLOAT64_FIXED_MAX_DIGITS:
        raise ValueError(f"[solve] digits = {digits} with dps = \"float64\": float64 cannot give "
                         f"{digits} digits of eps_g (at most {FLOAT64_FIXED_MAX_DIGITS}: it carries "
                         f"about 16 significant digits and the integration tolerance must stay "
                         f"above its rounding); use dps = \"auto\" or an integer dps")


# The stiff modes solver (RODAS4, order 4): its relative error on ε_g is about its rtol where
# ε_g stays O(1e-3) (bench_modes_fast: 2e-8 at rtol 1e-8), but grows as ε_g falls and then
# shrinks more slowly than the tolerance: the step control holds the error of the student
# factor J relative to J, while ε_g, quadratic in J's deviation from where it converges,
# responds to the error relative to that deviation.  Measured on erf K = M = 3, L = 32, β = 0.5,
# η = 0.5, α ≤ 5000 (ε_g ends at 6.6e-7) against python-flint arb (Taylor, 30 digits, rtol
# 1e-14): digits of ε_g 8.36, 8.86, 9.56 at rtol 1e-10, 1e-11, 1e-12 (the error shrinks 3.2x,
# then 5.1x per decade); the pairs (1e-10, 1e-12) and (1e-11, 1e-12) agree on 8.37 and 8.89.  So
# the first run of the pair sits three digits beyond those asked for and its check runs
# FAST_CHECK_FACTOR tighter: a pair agrees on about the first run's digits as long as the check
# run has a few times less error (5x here, so the returned check run carries more than the
# agreement claims), and 10x instead of the 100x of the other pairs makes the check run
# 10^(1/4) = 1.8x cheaper (order 4).  ε_g is evaluated exactly from the float64 states
# (``modes_fast._ExactEps``): in float64 its evaluation is off by up to 1.6e-10 relative here
# (rounding of O(1) Gaussian integrals), which would eat the 9-digit check's margin.
# BENCHMARKS.md, "the modes route at 9 digits".
FAST_EXTRA_DIGITS = 3
FAST_CHECK_FACTOR = 10.0

# The fast route is tried first only where the modes are stiff, η λ_1 >= FAST_MIN_STIFFNESS (the
# explicit RK7(8)'s step is bound by ~1/(η λ_1)).  Measured: erf K = M = 2, L = 4, η = 0.5
# (η λ_1 = 1.4), α ≤ 300: RK7(8) at rtol 1e-13 2.3 s, RODAS4 at 1e-10 19 s; erf K = M = 3,
# L = 32, β = 0.5, η = 0.5 (η λ_1 ≈ 7), α ≤ 5000: RK7(8) at 1e-14 302 s, RODAS4 at 1e-12 410 s
# (loaded machine), but at 8 digits the RODAS4 pair (1e-9, 1e-11) took 47 CPU s against 55 for
# one RK7(8) run at 1e-14 (the RK7(8) pair runs at 1e-13 and 1e-15 for any digits <= 9);
# K = M = 2, L = 1024, η = 0.1 (η λ_1 ≈ 62): RODAS4 13x faster (bench_modes_fast).  The
# threshold sits between the clear loss (1.4) and the first win (7).
FAST_MIN_STIFFNESS = 5.0


def fast_rtol(digits: int) -> float:
    """Tolerance of the first run of the modes fast route (its check runs FAST_CHECK_FACTOR
    tighter and is the run returned)."""
    return 10.0 ** -(digits + FAST_EXTRA_DIGITS)


def plan(basis: str, dps, digits: int, L: int, jets: bool = True) -> Plan:
    """The precision policy of ``[solve] dps``:

    * ``"auto"``: levels basis -> arbitrary precision (python-flint arb) raised until two runs
      agree on ``digits`` significant digits of ε_g; modes basis -> float64 when ``digits`` <=
      FLOAT64_MAX_DIGITS: first the stiff RODAS4 solver (``faster``, tried where η λ_1 >=
      FAST_MIN_STIFFNESS and the initial condition is given by modes; checked by a run
      FAST_CHECK_FACTOR tighter, ε_g evaluated exactly from its float64 states), then the
      RK7(8) (checked 100x tighter); arbitrary precision otherwise or when neither pair agrees.
    * an integer: one arbitrary-precision run at that many digits.
    * ``"float64"``: one float64 run; in the levels basis it is checked against the modes basis
      and refused (PrecisionLost) when the closure has cancelled the asked-for digits away.

    A power schedule gets the same integrators (the Taylor series carries η(α)); the caller
    skips the ``faster`` route, whose stiff solver has a constant η.  ``jets=False`` (a
    system without Taylor jets): the RK7(8) where the Taylor series would run
    (``choose_integrator``).
    """
    def pick(arithmetic):
        return choose_integrator(basis, arithmetic, digits, L, jets)

    if dps == "float64":
        return Plan("float64", pick("float64"), None, default_rtol(digits, pick("float64")),
                    "modes" if basis == "levels" else "float64")
    if dps == "auto":
        settle_plan = Plan("flint", pick("flint"), estimated_dps(L, digits, basis),
                           default_rtol(digits, pick("flint")), "settle")
        if basis == "modes" and digits <= FLOAT64_MAX_DIGITS:
            fast = Plan("float64", "rodas4", None, fast_rtol(digits), "tighter",
                        check_factor=FAST_CHECK_FACTOR)
            return Plan("float64", pick("float64"), None, FLOAT64_RTOL, "tighter", settle_plan,
                        faster=fast)
        return settle_plan
    return Plan("flint", pick("flint"), int(dps), default_rtol(digits, pick("flint")), "fixed")


# Digits of integration tolerance beyond the digits asked of ε_g, per integrator (default_rtol).
RTOL_EXTRA_DIGITS = {"rk78": 5, "taylor": 3}


def default_rtol(digits: int, integrator: str = "rk78") -> float:
    """Integration tolerance on the order parameters for ``digits`` digits of ε_g.

    RK7(8) (and every float64 run): 10^-(digits + 5).  ε_g is a small difference of O(1) order
    parameters (ε_g ~ 1e-3 .. 1e-4 once learning has started), so about four digits cancel; one
    more is margin.

    Taylor series: 10^-(digits + 3).  Measured (bench/bench_taylor_rtol.py, BENCHMARKS.md
    Taylor section): the checking pair of ``settle`` (dps and rtol, dps + max(10, dps/4) and
    rtol/100) agrees on ε_g to digits + k + δ at rtol = 10^-(digits+k), with δ between -0.75 and
    +1.3 for erf K = M = 2 (L = 4, 16, 32, 64; α ≤ 200, 300, 3500; 12 and 30 digits) and the linear
    K = M = 1 system at L = 32, α ≤ 300: the Taylor step control holds every row to the tolerance
    relative to itself, so ε_g keeps nearly all of it.  At k = 3 the pair agreed on 1.55 to 4.2
    digits more than asked in each of those cases (1.55: L = 16, α ≤ 3500, 30 digits).  Where
    ε_g falls far below its start (linear K = M = 1, L = 32, α ≤ 3000: ε_g = 5e-9) δ is -4.7 at
    every k: the pair misses by 0.02 digits at k = 5 as well, and ``settle`` goes on to the next
    round (a verified result either way; the rule only sets the cost).
    """
    return 10.0 ** -(digits + RTOL_EXTRA_DIGITS.get(integrator, RTOL_EXTRA_DIGITS["rk78"]))


def estimated_dps(L: int, digits: int, basis: str) -> int:
    """Starting precision for the level basis: the closure costs digits growing with L.

    Measured for the linear K=M=1 system (docs/guide/precision.md, Taylor route) as about 2.6 L digits on
    top of the ones wanted; the auto mode verifies and raises it if needed.
    """
    if basis == "modes":
        return digits + 10
    return digits + 10 + int(math.ceil(2.6 * L))


def short_dps(rtol, dps: int) -> int:
    """Digits for the quantities shared by every level row — the generated coefficients of the
    level-1 state and the Runge–Kutta scalars h·a_ij — with ``matrix_rhs``.  Their rounding
    perturbs the dynamics the same way in every row, so it is not amplified by the closure:
    it only has to sit well below the tolerance (15 digits of margin: ε_g is a difference of
    O(1) numbers, and the perturbation acts over the whole run)."""
    digits = -math.log10(float(Fraction(str(rtol)))) if float(rtol) > 0 else dps
    return int(min(dps, max(30, math.ceil(digits) + 15)))


def checking_dps(dps: int) -> int:
    """The working precision of the run that checks a run at ``dps``: a quarter more, at least
    10 digits (also the step by which ``settle`` raises the precision after a failed round)."""
    return dps + max(10, dps // 4)


def agreement_digits(a, b, floor: float = 0.0) -> float:
    """Smallest number of agreeing significant digits over two ε_g sequences (exact compare).

    ``floor``: an absolute error bound of ε_g (``eps_g_bound``, the larger of the two runs').
    A pair that differs by no more than it agrees whatever its relative difference: at the end
    of learning ε_g ≈ 0 has no significant digits to compare, only an absolute error."""
    worst = math.inf
    for x, y in zip(a, b):
        x, y = to_mpf(x), to_mpf(y)
        scale = max(abs(x), abs(y))
        if scale == 0:
            continue
        diff = mpmath.fsub(x, y, exact=True)
        if diff != 0 and not abs(diff) <= floor:
            worst = min(worst, float(-mpmath.log10(abs(diff) / scale)))
    return worst


# -- ε_g at the end of learning -----------------------------------------------------------------
#
# A student that learns its teacher ends with ε_g -> 0 (exponentially in α), far below what the
# working precision resolves: ε_g is a difference of O(T) Gaussian integrals of the state.  Its
# absolute error bound (``eps_g_bound``) is
#
#     bound = max(u_eff, rtol) · max |T^(1)|,
#
# rtol the run's tolerance (the state's error relative to its O(T) entries), u_eff = 100 u for
# smooth activations (u = 2^-52 in float64, 10^-dps in arbitrary precision: a few hundred
# roundings of O(T) terms), u_eff = sqrt(u) when an activation is ReLU: as a student field
# aligns with a teacher field (1 - r -> 0) the printed ReLU integrals divide second-order
# minors of the covariance, which are computed from first-order ones that already cancelled to
# ~1 - r, so they keep only about half the working digits; measured (float64, relu/relu K = M = 2,
# L = 1) the right-hand side stays finite down to ε_g ~ 1e-10, i.e. below sqrt(u) ~ 1.5e-8.
# Below the bound ε_g carries no significant digit: runs agree there absolutely
# (``agreement_digits``), a value within it of 0 is reported as 0 (a negative one too; a more
# negative one is refused), and a noise-free run whose ε_g is within it has reached the end of
# learning (solvers.hierarchy.odes holds the state from there).
SMOOTH_ROUNDINGS = 100


def unit_roundoff(arithmetic: str, dps: int | None) -> float:
    """u of a run: 2^-52 for float64 (and SciPy), 10^-dps for arbitrary precision."""
    if arithmetic in ("float64", "scipy") or dps is None:
        return 2.0 ** -52
    return 10.0 ** -int(dps)


def eps_g_bound(scale: float, arithmetic: str, dps: int | None, rtol, relu: bool) -> float:
    """Absolute error bound of ε_g for a run (see above); ``scale`` = max |T^(1)|."""
    u = unit_roundoff(arithmetic, dps)
    u_eff = math.sqrt(u) if relu else SMOOTH_ROUNDINGS * u
    return max(u_eff, float(Fraction(str(rtol)))) * float(scale)
