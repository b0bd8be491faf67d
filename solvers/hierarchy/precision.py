"""The precision policy: one place decides the arithmetic, the integrator, the digits and how a
result is verified, for ``solve``, the level and mode runs, and the linear routes.

The policy reads in one direction, plan → run → verify, each step in its own module:

    plan    this module: ``plan(basis, dps, digits, L, …)`` (``plan_for(problem, …)``) ─►
            a ``Plan`` made once, before any run: every run it may need as a ``Step``
            (arithmetic, integrator, dps, rtol, the digits of the shared scalars, the inputs of
            ε_g's error bound), the checking run, the reference runs, the ``settle`` ladder
            (``Rung``: where the precision goes after a failed round), the faster route and the
            fallback; pure decisions, nothing runs here
    run     solvers.hierarchy.runner executes a plan's steps (``execute``); each step is one
            solvers.hierarchy.odes.integrate_problem (or modes_fast) run
    verify  solvers.hierarchy.verify reads the runs' results against the plan (agreement of
            a pair, the sign of ε_g, the reference's digits) and decides: accept, refuse, or
            the plan's next step (the check run, the next rung, the fallback)

Nothing after the first run calls back into this module (tests/test_walk_direction.py).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

# float64 runs are checked by a second run at 100x tighter tolerance; below rtol ~ 1e-15 the
# rounding of float64 itself dominates, so the first run sits at 1e-13 (~9 digits of eps_g).
FLOAT64_MAX_DIGITS = 9
FLOAT64_RTOL = 1e-13
# the rounds of ``settle`` (a pair each) before a solve at dps = "auto" gives up
SETTLE_ROUNDS = 5
# the float64 modes reference that screens a fixed-dps level run: two tolerances
REFERENCE_RTOLS = (1e-13, 1e-15)


class PrecisionLost(RuntimeError):
    """A result would have fewer correct digits than asked for."""


@dataclass(frozen=True)
class Step:
    """One run, decided before it starts.  ``tighter``: the run's place in a checking pair
    (0 the first run, n the check tightened n times).  The rest is what
    ``odes.integrate_problem`` needs: ``scalar_dps`` the digits of the row-independent scalars
    (``short_dps``), ``roundoff`` the unit roundoff u and ``bound_rate`` = max(u_eff, rtol),
    which times max |T^(1)| is the absolute error bound of ε_g (``eps_g_bound``);
    ``resolution_rate`` times max |T^(1)| is what a float64 overlap state resolves of ε_g (0 in
    arbitrary precision: ``STATE_ROUNDINGS``).  A step of a
    generic ladder (``ladder`` without ``step``) carries only ``dps`` and ``tighter``."""

    dps: int | None
    tighter: int = 0
    basis: str | None = None
    arithmetic: str | None = None     # "float64" | "flint" | "mpmath" | "scipy"
    integrator: str | None = None     # "rk78" | "taylor" | "rodas4"
    rtol: float | None = None
    scalar_dps: int | None = None
    roundoff: float | None = None
    bound_rate: float | None = None
    resolution_rate: float = 0.0


@dataclass(frozen=True)
class Rung:
    """One round of ``settle``: ``first`` (run only when ``fresh``; otherwise the previous
    round's check is this round's first run) against ``check``.  After a failed round: the
    index of the next rung when more than half the digits agreed (``near``: the check becomes
    the first run, the next check a quarter more digits and tighter again) or fewer
    (``far``: a fresh pair at half as many digits again); None past the last round, where
    ``near_dps`` / ``far_dps`` name the precision the next round would have started at."""

    first: Step
    check: Step
    fresh: bool
    near: int | None
    far: int | None
    near_dps: int
    far_dps: int


@dataclass(frozen=True)
class Plan:
    """How one solve runs, made once (``plan``) and carried by the runner and the verifier.

    verify: "fixed" (a run at a fixed dps: screened by the float64 modes ``reference`` pair,
    then, where that reference cannot vouch for the digits, checked by ``check`` or refused),
    "float64" (a float64 modes run and its ``check`` 100x tighter), "modes" (a float64 level run
    checked against the modes basis: ``check``), "tighter" (``first`` and its ``check`` at a
    ``check_factor`` (100x; the modes fast route 10x) tighter tolerance, falling back to
    ``fallback`` when they disagree), "settle" (the ``ladder``: raise the precision until two
    runs agree, starting at ``dps``).

    faster: a route tried before this one (the modes basis's stiff float64 solver,
    ``hierarchy.modes_fast``, RODAS4), present only where the problem allows it; when its pair
    disagrees, this plan runs.  ``auto_dps``: the precision the automatic policy would start
    at, for the refusal of a fixed dps.  ``route``: the name in ``meta.route``.
    """

    basis: str
    arithmetic: str            # "float64" | "flint"
    integrator: str            # "rk78" | "taylor" | "rodas4" (choose_integrator; rodas4: faster)
    dps: int | None
    rtol: float
    verify: str
    digits: int
    route: str
    first: Step | None = None
    check: Step | None = None
    reference: tuple = ()      # Steps of the float64 modes reference ("fixed")
    ladder: tuple = ()         # Rungs ("settle")
    fallback: "Plan | None" = None
    faster: "Plan | None" = None
    check_factor: float = 100.0
    auto_dps: int | None = None


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


def plan(basis: str, dps, digits: int, L: int, jets: bool = True, *, relu: bool = False,
         stiffness: float = 0.0, fast_solver: bool = False) -> Plan:
    """The precision policy of ``[solve] dps``, refused first when the arithmetic cannot meet
    it (``check_request``):

    * ``"auto"``: levels basis -> arbitrary precision (python-flint arb) raised until two runs
      agree on ``digits`` significant digits of ε_g; modes basis -> float64 when ``digits`` <=
      FLOAT64_MAX_DIGITS: first the stiff RODAS4 solver (``faster``, where the problem allows
      it, ``fast_solver``, and its modes are stiff, ``stiffness`` = η λ_1 >=
      FAST_MIN_STIFFNESS; checked by a run FAST_CHECK_FACTOR tighter, ε_g evaluated exactly
      from its float64 states), then the RK7(8) (checked 100x tighter); arbitrary precision
      otherwise or when neither pair agrees.
    * an integer: one arbitrary-precision run at that many digits, verified or refused.
    * ``"float64"``: one float64 run; in the levels basis it is checked against the modes basis
      and refused (PrecisionLost) when the closure has cancelled the asked-for digits away.

    ``relu``: a ReLU student or teacher (the error bound of ε_g keeps half the digits).  A
    power schedule gets the same integrators (the Taylor series carries η(α)); the stiff
    solver, whose η is constant, is not offered for it (``fast_solver`` False).
    ``jets=False`` (a system without Taylor jets): the RK7(8) where the Taylor series would run
    (``choose_integrator``).
    """
    check_request(basis, dps, digits)

    def pick(arithmetic):
        return choose_integrator(basis, arithmetic, digits, L, jets)

    def step(arithmetic, integrator, d, rtol, tighter=0, on=basis):
        return make_step(on, arithmetic, integrator, d, rtol, relu, tighter)

    def named(arithmetic, integrator, verify, **kw):
        return Plan(basis, arithmetic, integrator, kw.pop("dps", None), kw.pop("rtol"), verify,
                    digits, f"{basis}/{arithmetic}/{integrator}/{verify}", **kw)

    if dps == "float64":
        integrator = pick("float64")
        rtol = default_rtol(digits, integrator)
        first = step("float64", integrator, None, rtol)
        if basis == "levels":
            return named("float64", integrator, "modes", rtol=rtol, first=first,
                         check=step("float64", integrator, None, rtol, on="modes"))
        return named("float64", integrator, "float64", rtol=rtol, first=first,
                     check=step("float64", "rk78", None, max(default_rtol(digits) / 100, 1e-16),
                                1))
    integrator = pick("flint")
    rtol = default_rtol(digits, integrator)
    if dps == "auto":
        settle_plan = settle_plan_of(basis, digits, L, integrator=integrator, relu=relu)
        if not (basis == "modes" and digits <= FLOAT64_MAX_DIGITS):
            return settle_plan
        fast = None
        if fast_solver and stiffness >= FAST_MIN_STIFFNESS:
            r = fast_rtol(digits)
            fast = named("float64", "rodas4", "tighter", rtol=r, check_factor=FAST_CHECK_FACTOR,
                         first=step("float64", "rodas4", None, r),
                         check=step("float64", "rodas4", None, r / FAST_CHECK_FACTOR, 1))
        integrator = pick("float64")
        return named("float64", integrator, "tighter", rtol=FLOAT64_RTOL, fallback=settle_plan,
                     faster=fast, first=step("float64", integrator, None, FLOAT64_RTOL),
                     check=step("float64", integrator, None, FLOAT64_RTOL / 100, 1))
    d = int(dps)
    return named("flint", integrator, "fixed", dps=d, rtol=rtol,
                 first=step("flint", integrator, d, rtol),
                 check=step("flint", integrator, checking_dps(d), rtol / 100, 1),
                 reference=tuple(step("float64", "rk78", None, r, t, on="modes")
                                 for t, r in enumerate(REFERENCE_RTOLS)),
                 auto_dps=estimated_dps(L, digits, basis))


def settle_plan_of(basis: str, digits: int, L: int, *, arithmetic: str = "flint",
                   integrator: str = "auto", start_dps: int | None = None,
                   rounds: int = SETTLE_ROUNDS, relu: bool = False) -> Plan:
    """The "settle" plan: the ladder of pairs from ``start_dps`` (default ``estimated_dps``),
    each check at ``checking_dps`` and 100x the tolerance of its first run
    (``default_rtol``); ``integrator`` "auto": ``choose_integrator``."""
    if integrator == "auto":
        integrator = choose_integrator(basis, arithmetic, digits, L)
    rtol = default_rtol(digits, integrator)
    start = start_dps or estimated_dps(L, digits, basis)
    rungs = ladder(start, rounds, step=lambda d, t: make_step(
        basis, arithmetic, integrator, d, rtol / 100 ** t, relu, t))
    return Plan(basis, arithmetic, integrator, start, rtol, "settle", digits,
                f"{basis}/{arithmetic}/{integrator}/settle", ladder=rungs)


def plan_for(problem, basis: str, dps, digits: int, jets: bool = True) -> Plan:
    """``plan`` with the facts of a :class:`solvers.core.problem.Problem`: its L, whether an
    activation is ReLU, and whether the stiff modes solver can run it and how stiff it is."""
    lam1 = max(float(v) for v in problem.spectrum.eigenvalues)
    return plan(basis, dps, digits, problem.L, jets=jets, relu=is_relu(problem.key),
                stiffness=float(Fraction(problem.eta)) * lam1,
                fast_solver=fast_solver_runs(problem.key, problem.plain_training,
                                             problem.schedule is not None, problem.init.basis))


def is_relu(key) -> bool:
    """Whether the system has a ReLU student or teacher (``eps_g_bound``)."""
    return "relu" in (key.activation, key.teacher)


def fast_solver_runs(key, plain_training: bool, scheduled: bool, init_basis: str) -> bool:
    """Whether the stiff float64 modes solver can run a problem: its index-vectorised kernel
    (solvers.core.modes_kernel) has the erf and linear integrals of the original model only
    (no label noise, weight decay, batches, trained readout), a constant η, and it starts
    from a modes-basis initial condition."""
    return key.is_plain() and plain_training and not scheduled and init_basis == "modes"


def make_step(basis: str, arithmetic: str, integrator: str, dps: int | None, rtol,
              relu: bool = False, tighter: int = 0) -> Step:
    """The ``Step`` of one run: the digits of its shared scalars and its error-bound inputs
    decided with it (float64 and SciPy work at 15 digits)."""
    arbitrary = arithmetic in ("flint", "mpmath")
    working = int(dps) if arbitrary else 15
    u = unit_roundoff(arithmetic, working if arbitrary else None)
    u_eff = math.sqrt(u) if relu else SMOOTH_ROUNDINGS * u
    return Step(int(dps) if arbitrary else None, tighter, basis, arithmetic, integrator, rtol,
                short_dps(rtol, working), u, max(u_eff, float(Fraction(str(rtol)))),
                0.0 if arbitrary else STATE_ROUNDINGS * u)


def ladder(dps: int, rounds: int, fixed: bool = False, step=None) -> tuple:
    """The rungs of ``settle`` from ``dps``: at most ``rounds`` rounds (one with ``fixed``).
    Each round pairs a run at dps with a check at ``checking_dps(dps)``, tightened once more;
    after a failed round the precision grows by a quarter, the check becoming the next first
    run (``near``), or, when fewer than half the digits agreed, by half again with a fresh pair
    (``far``).  ``step(dps, tighter)``: the Step of a run (default: dps and tighter only)."""
    step = step or (lambda d, t: Step(d, t))
    rungs = []

    def grow(d, t, left):
        i = len(rungs)
        rungs.append(None)
        d2 = checking_dps(d)
        near = grow(d2, t + 1, left - 1) if left > 1 and not fixed else None
        far = grow(int(d2 * 1.5), 0, left - 1) if left > 1 and not fixed else None
        # a fixed round names its own precision when it fails
        rungs[i] = Rung(step(d, t), step(d2, t + 1), t == 0, near, far,
                        d if fixed else d2, d if fixed else int(d2 * 1.5))
        return i

    grow(int(dps), 0, 1 if fixed else rounds)
    return tuple(rungs)


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

# Above the bound, a float64 run's ε_g still carries only what its state resolves: the overlaps
# are O(T) numbers rounded to u each, and ε_g's first derivatives in them are O(1) (its
# gradient vanishes only along realisable directions, not along roundings), so a rounding of
# the state moves ε_g by about u max|T^(1)|, whatever the integrator.  Two float64 runs of a
# checking pair share that floor and agree through it; their relative digits are therefore
# capped at log10(|ε_g| / resolution) (verify.carried_digits), resolution = STATE_ROUNDINGS u
# max|T^(1)| (a Step's ``resolution_rate`` times max|T^(1)|).  Measured (erf K = M = 1, L = 4,
# η = 1, α = 100): the float64 pair's ε_g = 8.57e-11 is off by 7.5e-17 = 0.47 u T^(1), 17x
# below the resolution; other systems were not measured.  Arbitrary-precision
# pairs differ in their dps (a settle ladder, a fixed dps's check), so their comparison sees
# the floor itself; the fast route's states are exact products of float64 factors.
STATE_ROUNDINGS = 8


def unit_roundoff(arithmetic: str, dps: int | None) -> float:
    """u of a run: 2^-52 for float64 (and SciPy), 10^-dps for arbitrary precision."""
    if arithmetic in ("float64", "scipy") or dps is None:
        return 2.0 ** -52
    return 10.0 ** -int(dps)


def eps_g_bound(scale: float, arithmetic: str, dps: int | None, rtol, relu: bool) -> float:
    """Absolute error bound of ε_g for a run (see above); ``scale`` = max |T^(1)|.  A run
    computes it from its Step: ``step.bound_rate * scale``."""
    return make_step("modes", arithmetic, "rk78", dps, rtol, relu).bound_rate * float(scale)
