"""Every solve verified: `solve` runs a plan of the precision policy (``precision.plan``) and
checks its result; a fixed working precision is verified the way ``dps = "auto"`` is, by a
second run.

The level basis cancels digits in its closure (about 1.3 L of them for erf K = M = 2, more for
larger L); a user's fixed ``dps`` may leave none.  `run_fixed_dps` runs at the given dps and
compares it first with the modes basis in float64 (two tolerances; cheap, and free of the
closure): a disagreement beyond that reference's own digits is refused at once, and when
``digits`` is within the reference's reach the agreement is the verification.  Otherwise it
runs once more with more digits and a 100x tighter tolerance, and returns the first run only
when the two agree on the requested ``digits`` of ε_g; otherwise it raises `PrecisionLost` naming the
digits obtained and a dps that would do.  ``stats["agreement_digits"]`` of the result is the
number of verified digits (``meta.agreement_digits`` in the JSON).

A negative ε_g (a mean squared error) or a breakdown of the integrator at a fixed dps is
precision loss too, refused without the second run.

The third step of plan → run → verify: :mod:`solvers.hierarchy.precision` decides (``plan``),
:mod:`solvers.hierarchy.odes` runs (``integrate_problem``), this module executes the plan and
checks the result.  Every check is here: ``settle`` (the one "rerun until it agrees" loop,
also used by the linear routes), ``solve_auto`` (settle on ε_g of ODE runs),
``run_fixed_dps``, ``verify_float64``, ``check_float64_levels`` and the tighter pairs.
"""
from __future__ import annotations

import math
from fractions import Fraction

from solvers.core.numbers import to_mpf
from solvers.core.progress import phase
from solvers.core.registry import ensure_printed
# odes.integrate_problem looked up at call time: one place to stub the runs in tests
from solvers.hierarchy import background, odes, precision, stability
from solvers.hierarchy.precision import (PrecisionLost, agreement_digits, checking_dps,
                                         default_rtol, estimated_dps)
from solvers.integrators.rk78 import IntegrationError


# -- the one "rerun until it agrees" loop, and the checks built on it --------------------------

def settle(run, values, *, digits: int, dps: int, max_rounds: int, fixed: bool = False,
           what: str = "eps_g", concurrent: bool = False, quiet_run=None, info=None,
           floor=None):
    """Raise the precision until two runs agree to ``digits`` significant digits.

    ``run(dps, tighter)`` computes at ``dps`` digits; ``tighter`` is 0 for a first run and
    n >= 1 for a checking run, which ODE runs give a 100^n x tighter tolerance; ``values(result)``
    is the sequence compared.  After a failed round the precision grows by a quarter (by half
    again when fewer than half the digits agreed); in the first case the last checking run is
    the next round's first run, and the next check is 100x tighter again (n + 1), so that every
    accepted pair differs in tolerance as well as in digits (a pair at one tolerance would
    share its truncation error and check only the rounding).  A run that breaks down
    (IntegrationError: at too small a precision the closure's cancellation makes the
    integration fail) counts as a round with no digit agreed.
    ``fixed``: only the one given ``dps`` is tried.

    ``concurrent``: the two runs of a round are independent (both precisions are fixed before
    either starts), so when ``background.concurrent_allowed()`` (two CPUs, not switched off by
    SCALING_ODES_SERIAL=1) the first runs in a forked child — as ``quiet_run`` (default ``run``:
    e.g. ``run`` without its progress bar) — while this process runs the check; only the first
    run's ``values`` come back (exact mpf).  A child's IntegrationError is a failed round as
    above; any other exception of the child is raised here.  Same rounds, same result as serial.
    ``info``: a dict given here gets ``info["concurrent"]``: whether some pair really ran in
    two processes (the fork can be refused), for the result's metadata.
    ``floor(result)``: the absolute error bound of its values (``precision.eps_g_bound``); two
    runs agree where they differ by no more than the larger of their two bounds.
    Returns (checking run, its dps, the dps it was checked against, agreeing digits).
    """
    parallel = concurrent and background.concurrent_allowed()
    if info is not None:
        info["concurrent"] = False
    quiet_run = quiet_run or run
    floor = floor or (lambda result: 0.0)

    def attempt(d, tighter):
        try:
            return run(d, tighter)
        except IntegrationError:
            return None

    def compared(result):
        """(values, their bound) of a run, None for a run that broke down."""
        return None if result is None else ([to_mpf(v) for v in values(result)], floor(result))

    def both(d1, d2):
        """(values of the run at d1, the checking run at d2), concurrently when allowed."""
        job = None
        if parallel:
            try:
                job = background.Background(lambda: compared(quiet_run(d1, 0)),
                                            expected=(IntegrationError,))
            except OSError:                     # no fork (process or memory limits): serial
                job = None
        if job is None:
            first = compared(attempt(d1, 0))
            return first, attempt(d2, 1)
        if info is not None:
            info["concurrent"] = True
        with job:
            second = attempt(d2, 1)
            return job.result(), second

    need_first, tightened = True, 0
    for _ in range(max_rounds):
        dps2 = checking_dps(dps)
        if need_first:
            first, second = both(dps, dps2)
            tightened = 1
        else:                                   # the last checking run is this round's first
            tightened += 1
            second = attempt(dps2, tightened)
        checked = None if second is None else compared(second)
        agree = (-math.inf if first is None or checked is None
                 else agreement_digits(first[0], checked[0], max(first[1], checked[1])))
        if agree >= digits:
            return second, dps2, dps, agree
        if fixed:
            break
        first = checked
        if agree > digits / 2:
            dps, need_first = dps2, first is None
        else:
            dps, need_first = int(dps2 * 1.5), True
    raise PrecisionLost(f"{what} did not settle to {digits} digits up to dps = {dps}")


def solve_auto(problem: Problem, alphas, *, basis: str, digits: int, arithmetic: str = "flint",
               start_dps: int | None = None, max_rounds: int = 5, progress=None,
               integrator: str = "auto", concurrent: bool | None = None, monitor=None):
    """Raise precision until two runs agree on ε_g to ``digits`` significant digits
    (``settle``).

    The second run of each pair has more digits *and* a 100x tighter tolerance (than the first of
    the pair), so agreement covers both rounding (the closure's cancellation) and truncation.
    Returns the second run.
    ``integrator``: "auto" (``precision.choose_integrator``), "taylor" or "rk78", for every run.
    ``concurrent``: run the two runs of a pair at once in two processes (default: when
    ``background.concurrent_allowed()``, i.e. two CPUs and SCALING_ODES_SERIAL unset); False:
    one after the other.  Same result either way; ``stats["concurrent_runs"]`` says which.
    """
    if integrator == "auto":
        integrator = precision.choose_integrator(basis, arithmetic, digits, problem.L)
    rtol = default_rtol(digits, integrator)

    last = alphas[-1]
    last = float(Fraction(last)) if isinstance(last, str) else float(last)

    def run(dps, tighter, progress=progress):
        r = rtol / 100 ** int(tighter)
        label = (f"run 1/2 at {dps} digits, rtol {r:.0e}" if not tighter else
                 f"run 2/2 (check) at {dps} digits, rtol {r:.0e}")
        with phase(progress, label, last) as tick:
            return odes.integrate_problem(problem, alphas, basis=basis, arithmetic=arithmetic,
                                          dps=dps, rtol=r, progress=tick, integrator=integrator,
                                          monitor=monitor)

    # the first run of a pair in a child process when two CPUs are free (settle);
    # the progress bar follows the checking run, which this process computes
    concurrent = background.concurrent_allowed() if concurrent is None else concurrent
    # a system not checked in is printed here, before a child is forked (whose stderr goes
    # nowhere): once, announced on this process's stderr
    ensure_printed(problem.key)
    info = {}
    second, _, checked, agree = settle(
        run, lambda t: t.eps_g, digits=digits,
        dps=start_dps or estimated_dps(problem.L, digits, basis), max_rounds=max_rounds,
        concurrent=concurrent, quiet_run=lambda d, tighter: run(d, tighter, None), info=info,
        floor=bound)
    second.stats["agreement_digits"] = agree
    second.stats["checked_against_dps"] = checked
    second.stats["concurrent_runs"] = info["concurrent"]
    return second


def check_float64_levels(levels: Trajectory, modes: Trajectory, digits: int) -> float:
    """Digits the float64 level run shares with the modes run; PrecisionLost below ``digits``."""
    agree = agreement_digits(levels.eps_g, modes.eps_g, bound(levels, modes))
    if agree < digits:
        raise PrecisionLost(
            f"float64 in the level basis has lost its digits: eps_g agrees with the modes basis "
            f"to only {max(agree, 0):.1f} digits (asked for {digits}); use basis = \"modes\" "
            f"or an arbitrary-precision dps")
    return agree


def _round_up(x: float, step: int = 5) -> int:
    return int(step * math.ceil(x / step))


def suggested_dps(problem, dps: int, digits: int, basis: str, agree: float | None) -> int:
    """A dps that should reach ``digits``: the digits lost at ``dps`` (dps - agree) plus the
    ones wanted and a margin; when nothing agreed, the loss is unknown (at least dps)."""
    guess = estimated_dps(problem.L, digits, basis)
    if agree is None or agree < 1:
        return _round_up(max(guess, dps + digits + 10))
    return _round_up(max(dps + (digits - agree) + 5, digits + 10))


def _lost(problem, dps, digits, basis, agree, what):
    use = suggested_dps(problem, dps, digits, basis, agree)
    got = 0.0 if agree is None else max(agree, 0.0)
    return PrecisionLost(f"dps = {dps} is too small for L = {problem.L} in the {basis} basis: "
                         f"{what}; {got:.1f} of the {digits} digits asked for are verified; "
                         f"use dps >= {use} or dps = \"auto\"")


def bound(*trajectories) -> float:
    """The larger absolute error bound of ε_g of some runs (``precision.eps_g_bound``, recorded
    by each run in ``stats["eps_g_bound"]``; 0 where a run has none)."""
    return max((t.stats.get("eps_g_bound", 0.0) for t in trajectories), default=0.0)


def check_sign(traj, problem, dps, digits, basis):
    for a, e in zip(traj.alpha, traj.eps_g):
        if e < 0:
            raise _lost(problem, dps, digits, basis, None,
                        f"eps_g = {float(e):.3g} < 0 at alpha = {float(a):g} (a mean squared "
                        f"error cannot be negative: the closure cancelled every digit)")


def run_fixed_dps(problem, alphas, *, basis: str, dps: int, digits: int, progress=None,
                  arithmetic: str = "flint", integrator: str = "rk78"):
    rtol = default_rtol(digits, integrator)
    last = _last(alphas)
    try:
        with phase(progress, f"run 1/2 at {dps} digits, rtol {rtol:.0e}", last) as tick:
            first = odes.integrate_problem(problem, alphas, basis=basis, arithmetic=arithmetic,
                                           dps=dps, rtol=rtol, progress=tick, integrator=integrator)
    except IntegrationError as exc:
        raise _lost(problem, dps, digits, basis, None,
                    f"the integration broke down ({' '.join(str(exc).split())}), the signature "
                    f"of digits lost to cancellation") from None
    check_sign(first, problem, dps, digits, basis)
    with phase(progress, "check: modes basis, float64 at two tolerances", last) as tick:
        ref = _float64_modes_reference(problem, alphas, tick)
    if ref is not None:
        modes, ref_digits = ref
        agree = agreement_digits(first.eps_g, modes.eps_g, bound(first, modes))
        if agree < digits and agree < ref_digits - 1:
            # the stable basis, itself good to ref_digits, disagrees earlier: digits were lost
            raise _lost(problem, dps, digits, basis, agree,
                        f"the modes basis (float64, verified to {ref_digits:.1f} digits) agrees "
                        f"on eps_g to {max(agree, 0):.1f} digits")
        if digits <= ref_digits - 1:
            first.stats["agreement_digits"] = min(agree, ref_digits)
            first.stats["checked_against"] = "modes basis, float64"
            return first
    dps2 = checking_dps(dps)
    try:
        with phase(progress, f"run 2/2 (check) at {dps2} digits, rtol {rtol / 100:.0e}",
                   last) as tick:
            second = odes.integrate_problem(problem, alphas, basis=basis, arithmetic=arithmetic,
                                            dps=dps2, rtol=rtol / 100, integrator=integrator,
                                            progress=tick)
    except IntegrationError:
        raise _lost(problem, dps, digits, basis, None,
                    f"the check at dps = {dps2} broke down") from None
    agree = agreement_digits(first.eps_g, second.eps_g, bound(first, second))
    if agree < digits:
        raise _lost(problem, dps, digits, basis, agree,
                    f"a check at dps = {dps2} agrees on eps_g to {max(agree, 0):.1f} digits")
    first.stats["agreement_digits"] = agree
    first.stats["checked_against_dps"] = dps2
    return first


def _float64_modes_reference(problem, alphas, progress=None):
    """The modes basis in float64 at two tolerances: (the finer run, digits they agree on), or
    None when float64 cannot run it.  Cheap (no closure, no arbitrary precision) and independent
    of the level basis's cancellation, so it screens a fixed-dps level run first."""
    try:
        a = odes.integrate_problem(problem, alphas, basis="modes", arithmetic="float64", rtol=1e-13)
        b = odes.integrate_problem(problem, alphas, basis="modes", arithmetic="float64", rtol=1e-15,
                                   progress=progress)
    except (IntegrationError, PrecisionLost, ValueError, OverflowError, ZeroDivisionError):
        return None
    return b, min(agreement_digits(a.eps_g, b.eps_g, bound(a, b)), 15.0)


def verify_float64(first, problem, alphas, *, basis: str, digits: int, progress=None):
    """A float64 run checked by a second one at a 100x tighter tolerance (floor 1e-16)."""
    rtol = max(default_rtol(digits) / 100, 1e-16)
    with phase(progress, f"check: RK7(8) float64, rtol {rtol:.0e}",
               float(first.alpha[-1])) as tick:
        second = odes.integrate_problem(problem, alphas, basis=basis, arithmetic="float64",
                                        rtol=rtol, progress=tick)
    agree = agreement_digits(first.eps_g, second.eps_g, bound(first, second))
    if agree < digits:
        raise PrecisionLost(f"dps = \"float64\" verified only {max(agree, 0):.1f} of the {digits} "
                            f"digits asked for (a run at rtol = {rtol:g} disagrees); ask for "
                            f"fewer digits or use dps = \"auto\"")
    first.stats["agreement_digits"] = agree
    return first


# -- running a plan of the policy (solvers.hierarchy.precision) and verifying its result ------

def solve(problem, alphas, *, basis: str, dps, digits: int, progress=None):
    """The trajectory at ``alphas`` under ``precision.plan``; ``stats["route"]`` names the
    route that produced it (``basis/arithmetic/integrator/verification``).

    Before any run: the request is checked (``precision.check_request``) and a learning rate
    above the known stability bound is refused (``stability.check_eta``).  Modes-basis runs
    are watched (``stability.Watch``): a state leaving the realisable set stops the run.
    ``progress``: None, a :class:`solvers.core.progress.Progress` (one labelled phase per run)
    or a callable ``tick(alpha)``.
    """
    precision.check_request(basis, dps, digits)
    _check_etas(problem)
    p = precision.plan(basis, dps, digits, problem.L)
    tried = []
    if p.faster is not None and _fast_route_applies(p.faster, problem, basis):
        traj = _execute(p.faster, problem, alphas, basis=basis, digits=digits,
                        progress=progress, fallback=False)
        if traj is not None:
            traj.stats["route"] = p.faster.route(basis)
            return traj
        tried.append(p.faster.route(basis))
    traj = _execute(p, problem, alphas, basis=basis, digits=digits, progress=progress)
    traj.stats["route"] = traj.stats.get("route") or p.route(basis)
    if tried:
        traj.stats["routes_tried"] = tried + traj.stats.get("routes_tried", [])
    return traj


def _check_etas(problem) -> None:
    """The stability bound for every learning rate a schedule uses: each piece of "steps";
    a power schedule (p >= 0) never exceeds its starting η."""
    if problem.schedule is None or problem.schedule[0] != "steps":
        stability.check_eta(problem)
        return
    import dataclasses
    for eta in sorted({problem.eta, *problem.schedule[2]}, reverse=True):
        stability.check_eta(dataclasses.replace(problem, eta=eta, schedule=None))


def _fast_route_applies(p, problem, basis) -> bool:
    """The stiff solver first: modes basis, a modes initial condition, and stiff modes
    (η λ_1 >= precision.FAST_MIN_STIFFNESS; below, the explicit RK7(8) is faster)."""
    if not (basis == "modes" and p.integrator == "rodas4" and problem.init.basis == "modes"):
        return False
    if not (problem.key.is_plain() and problem.plain_training and problem.schedule is None):
        # the float64 index-vectorised kernel (solvers.core.modes_kernel) has the erf and
        # linear integrals of the original model only (no label noise, weight decay, batches)
        # and a constant η
        return False
    lam1 = max(float(v) for v in problem.spectrum.eigenvalues)
    return float(Fraction(problem.eta)) * lam1 >= precision.FAST_MIN_STIFFNESS


def _watch(problem, basis):
    return stability.Watch(problem) if basis == "modes" else None


def _run(p, problem, alphas, *, basis, rtol, progress, label):
    """One run of plan ``p`` at ``rtol``, shown as the progress phase ``label``."""
    with phase(progress, label, _last(alphas)) as tick:
        if p.integrator == "rodas4":
            from solvers.hierarchy.modes_fast import EXACT_EPS_ACTIVATIONS, solve_modes_fast
            # ε_g evaluated exactly from the float64 state: in float64 its evaluation, not the
            # integration, capped the digits where ε_g ends far below the order parameters
            return solve_modes_fast(problem, alphas, rtol=rtol, progress=tick,
                                    monitor=_watch(problem, basis),
                                    exact_eps=problem.key.activation in EXACT_EPS_ACTIVATIONS)
        return odes.integrate_problem(problem, alphas, basis=basis, arithmetic=p.arithmetic,
                                      dps=p.dps, rtol=rtol, progress=tick, integrator=p.integrator,
                                      monitor=_watch(problem, basis))


def _last(alphas) -> float:
    a = list(alphas)[-1]
    return float(a) if not isinstance(a, str) else float(Fraction(a))


def _name(p) -> str:
    return {"rodas4": "modes RODAS4", "rk78": "RK7(8)", "taylor": "Taylor"}.get(
        p.integrator, p.integrator) + (" float64" if p.arithmetic == "float64" else "")


def _eps_and_bound(traj):
    return [to_mpf(v) for v in traj.eps_g], bound(traj)


def _tighter_pair(p, problem, alphas, *, basis, progress):
    """((ε_g, its bound) of the run at p.rtol, the run at p.rtol / p.check_factor): concurrently when two
    CPUs are free (the first in a forked child, as in ``settle``), else one after
    the other."""
    r1, r2 = p.rtol, p.rtol / p.check_factor
    job = None
    if background.concurrent_allowed():
        try:
            job = background.Background(
                lambda: _eps_and_bound(_run(p, problem, alphas, basis=basis, rtol=r1,
                                            progress=None, label="")),
                expected=(IntegrationError,))
        except OSError:                         # no fork: serial
            job = None
    if job is None:
        try:
            first = _eps_and_bound(_run(p, problem, alphas, basis=basis, rtol=r1,
                                        progress=progress,
                                        label=f"run 1/2: {_name(p)}, rtol {r1:.0e}"))
        except IntegrationError:
            first = None
        second = _run(p, problem, alphas, basis=basis, rtol=r2, progress=progress,
                      label=f"run 2/2 (check): {_name(p)}, rtol {r2:.0e}")
        return first, second, False
    with job:
        second = _run(p, problem, alphas, basis=basis, rtol=r2, progress=progress,
                      label=f"run 2/2 (check, run 1/2 alongside in a second process): "
                            f"{_name(p)}, rtol {r2:.0e}")
        return job.result(), second, True


def _execute(p, problem, alphas, *, basis, digits, progress, fallback=True):
    if p.verify == "settle":
        traj = solve_auto(problem, alphas, basis=basis, digits=digits, arithmetic=p.arithmetic,
                          start_dps=p.dps, progress=progress, integrator=p.integrator,
                          monitor=_watch(problem, basis))
        traj.stats["route"] = p.route(basis)
        return traj
    if p.verify == "fixed":
        # a fixed dps is verified like "auto" (a second run), or refused
        return run_fixed_dps(problem, alphas, basis=basis, dps=p.dps, digits=digits,
                             progress=progress, integrator=p.integrator)
    if p.verify == "tighter":
        try:
            first, second, together = _tighter_pair(p, problem, alphas, basis=basis,
                                                    progress=progress)
        except IntegrationError:
            first, second, together = None, None, False
        agree = (-math.inf if first is None or second is None
                 else agreement_digits(first[0], second.eps_g, max(first[1], bound(second))))
        if agree < digits:
            if not fallback:
                return None
            traj = _execute(p.fallback, problem, alphas, basis=basis, digits=digits,
                            progress=progress)
            traj.stats["routes_tried"] = [p.route(basis)] + traj.stats.get("routes_tried", [])
            return traj
        second.stats["agreement_digits"] = agree
        second.stats["concurrent_runs"] = together
        second.stats["route"] = p.route(basis)
        return second
    with phase(progress, f"{_name(p)}, rtol {p.rtol:.0e}", _last(alphas)) as tick:
        traj = odes.integrate_problem(problem, alphas, basis=basis, arithmetic=p.arithmetic,
                                      dps=p.dps, rtol=p.rtol, progress=tick,
                                      integrator=p.integrator, monitor=_watch(problem, basis))
    if p.verify == "float64":
        return verify_float64(traj, problem, alphas, basis=basis, digits=digits,
                              progress=progress)
    if p.verify == "modes":
        with phase(progress, "check: modes basis, float64", _last(alphas)) as tick:
            modes = odes.integrate_problem(problem, alphas, basis="modes", arithmetic=p.arithmetic,
                                           rtol=p.rtol, integrator=p.integrator, progress=tick,
                                           monitor=_watch(problem, "modes"))
        traj.stats["agreement_digits"] = check_float64_levels(traj, modes, digits)
    return traj
