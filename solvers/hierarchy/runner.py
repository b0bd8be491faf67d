"""The second step of plan → run → verify: executing a plan.

``execute(plan, problem, alphas)`` runs the steps a :class:`solvers.hierarchy.precision.Plan`
lists, in order (the faster route where the plan offers one, the plan's pair or its fixed-dps
run and reference, the fallback, the rungs of the ``settle`` ladder), each one
``odes.integrate_problem`` (or ``modes_fast.solve_modes_fast``) run; after each run or pair it
hands the results to :mod:`solvers.hierarchy.verify`, which accepts them, refuses them or names
the plan's next step.  Nothing here decides a precision or a tolerance, and nothing calls the
planner once a run has started: the plan carries every step it may need.

``settle`` (the one "rerun until it agrees" loop, also used by the linear routes) and
``solve_auto`` (settle on ε_g of ODE runs) make their ladder first, then climb it.
"""
from __future__ import annotations

import dataclasses
from fractions import Fraction

from solvers.core.numbers import to_mpf
from solvers.core.progress import phase
from solvers.core.registry import ensure_printed
# odes.integrate_problem looked up at call time: one place to stub the runs in tests
from solvers.hierarchy import background, odes, precision, stability, verify
from solvers.integrators.rk78 import IntegrationError


def execute(p, problem, alphas, *, progress=None):
    """The trajectory at ``alphas`` under plan ``p``; ``stats["route"]`` names the route that
    produced it (``basis/arithmetic/integrator/verification``), ``stats["routes_tried"]``
    those whose check failed before it.

    Before any run a learning rate above the known stability bound is refused
    (``stability.check_eta``).  Modes-basis runs are watched (``stability.Watch``): a state
    leaving the realisable set stops the run.  ``progress``: None, a
    :class:`solvers.core.progress.Progress` (one labelled phase per run) or a callable
    ``tick(alpha)``.
    """
    _check_etas(problem)
    tried = []
    if p.faster is not None:
        traj = _route(p.faster, problem, alphas, progress=progress, fallback=False)
        if traj is not None:
            return traj
        tried.append(p.faster.route)
    traj = _route(p, problem, alphas, progress=progress)
    traj.stats["route"] = traj.stats.get("route") or p.route
    if tried:
        traj.stats["routes_tried"] = tried + traj.stats.get("routes_tried", [])
    return traj


def _check_etas(problem) -> None:
    """The stability bound for every learning rate a schedule uses: each piece of "steps";
    a power schedule (p >= 0) never exceeds its starting η."""
    if problem.schedule is None or problem.schedule[0] != "steps":
        stability.check_eta(problem)
        return
    for eta in sorted({problem.eta, *problem.schedule[2]}, reverse=True):
        stability.check_eta(dataclasses.replace(problem, eta=eta, schedule=None))


def _watch(problem, basis):
    return stability.Watch(problem) if basis == "modes" else None


def _last(alphas) -> float:
    a = list(alphas)[-1]
    return float(a) if not isinstance(a, str) else float(Fraction(a))


def _name(p) -> str:
    return {"rodas4": "modes RODAS4", "rk78": "RK7(8)", "taylor": "Taylor"}.get(
        p.integrator, p.integrator) + (" float64" if p.arithmetic == "float64" else "")


def _route(p, problem, alphas, *, progress, fallback=True):
    if p.verify == "settle":
        traj = _climb_plan(p, problem, alphas, progress=progress,
                           monitor=_watch(problem, p.basis))
        traj.stats["route"] = p.route
        return traj
    if p.verify == "fixed":
        return _fixed(p, problem, alphas, progress)
    if p.verify == "tighter":
        try:
            first, second, together = _tighter_pair(p, problem, alphas, progress=progress)
        except IntegrationError:
            first, second, together = None, None, False
        traj = verify.tighter_pair(p, first, second, together)
        if traj is not None:
            return traj
        if not fallback:
            return None
        traj = _route(p.fallback, problem, alphas, progress=progress)
        traj.stats["routes_tried"] = [p.route] + traj.stats.get("routes_tried", [])
        return traj
    with phase(progress, f"{_name(p)}, rtol {p.rtol:.0e}", _last(alphas)) as tick:
        traj = odes.integrate_problem(problem, alphas, step=p.first, progress=tick,
                                      monitor=_watch(problem, p.basis))
    if p.verify == "float64":
        with phase(progress, f"check: RK7(8) float64, rtol {p.check.rtol:.0e}",
                   float(traj.alpha[-1])) as tick:
            second = odes.integrate_problem(problem, alphas, step=p.check, progress=tick)
        return verify.float64_checked(p, traj, second)
    # "modes": a float64 level run against the modes basis
    with phase(progress, "check: modes basis, float64", _last(alphas)) as tick:
        modes = odes.integrate_problem(problem, alphas, step=p.check, progress=tick,
                                       monitor=_watch(problem, "modes"))
    traj.stats["agreement_digits"] = verify.check_float64_levels(traj, modes, p.digits)
    return traj


# -- one run of a step, and a pair ---------------------------------------------------------------

def _run(step, problem, alphas, *, progress, label):
    """One run of ``step``, shown as the progress phase ``label``."""
    with phase(progress, label, _last(alphas)) as tick:
        if step.integrator == "rodas4":
            from solvers.hierarchy.modes_fast import EXACT_EPS_ACTIVATIONS, solve_modes_fast
            # ε_g evaluated exactly from the float64 state: in float64 its evaluation, not the
            # integration, capped the digits where ε_g ends far below the order parameters
            return solve_modes_fast(problem, alphas, rtol=step.rtol, progress=tick,
                                    monitor=_watch(problem, step.basis),
                                    exact_eps=problem.key.activation in EXACT_EPS_ACTIVATIONS)
        return odes.integrate_problem(problem, alphas, step=step, progress=tick,
                                      monitor=_watch(problem, step.basis))


def _tighter_pair(p, problem, alphas, *, progress):
    """((ε_g, its bound) of ``p.first``, the run of ``p.check``): concurrently when two CPUs
    are free (the first in a forked child, as in ``settle``), else one after the other."""
    r1, r2 = p.first, p.check
    job = None
    if background.concurrent_allowed():
        try:
            job = background.Background(
                lambda: verify.values_and_bound(_run(r1, problem, alphas, progress=None,
                                                     label="")),
                expected=(IntegrationError,))
        except OSError:                         # no fork: serial
            job = None
    if job is None:
        try:
            first = _run(r1, problem, alphas, progress=progress,
                         label=f"run 1/2: {_name(p)}, rtol {r1.rtol:.0e}")
            first = verify.values_and_bound(first)
        except IntegrationError:
            first = None
        second = _run(r2, problem, alphas, progress=progress,
                      label=f"run 2/2 (check): {_name(p)}, rtol {r2.rtol:.0e}")
        return first, second, False
    with job:
        second = _run(r2, problem, alphas, progress=progress,
                      label=f"run 2/2 (check, run 1/2 alongside in a second process): "
                            f"{_name(p)}, rtol {r2.rtol:.0e}")
        return job.result(), second, True


# -- a fixed dps ---------------------------------------------------------------------------------

def _fixed(p, problem, alphas, progress):
    """The run at the plan's fixed dps, screened by the float64 modes reference and, where
    that cannot vouch for the digits, checked by the plan's check run (or refused)."""
    last, L = _last(alphas), problem.L
    try:
        with phase(progress, f"run 1/2 at {p.dps} digits, rtol {p.rtol:.0e}", last) as tick:
            first = odes.integrate_problem(problem, alphas, step=p.first, progress=tick)
    except IntegrationError as exc:
        raise verify.broke_down(p, L, exc) from None
    verify.check_sign(first, p, L)
    with phase(progress, "check: modes basis, float64 at two tolerances", last) as tick:
        reference = _reference(p, problem, alphas, tick)
    if verify.vouched_by_reference(p, L, first, reference):
        return first
    try:
        with phase(progress, f"run 2/2 (check) at {p.check.dps} digits, rtol "
                             f"{p.check.rtol:.0e}", last) as tick:
            second = odes.integrate_problem(problem, alphas, step=p.check, progress=tick)
    except IntegrationError:
        raise verify.check_broke_down(p, L) from None
    return verify.fixed_checked(p, L, first, second)


def _reference(p, problem, alphas, progress=None):
    """The plan's float64 modes reference runs (two tolerances), or None when float64 cannot
    run it.  Cheap (no closure, no arbitrary precision) and independent of the level basis's
    cancellation, so it screens a fixed-dps level run first."""
    loose, tight = p.reference
    try:
        a = odes.integrate_problem(problem, alphas, step=loose)
        b = odes.integrate_problem(problem, alphas, step=tight, progress=progress)
    except (IntegrationError, precision.PrecisionLost, ValueError, OverflowError,
            ZeroDivisionError):
        return None
    return a, b


# -- the one "rerun until it agrees" loop -------------------------------------------------------

def settle(run, values, *, digits: int, dps: int, max_rounds: int, fixed: bool = False,
           what: str = "eps_g", concurrent: bool = False, quiet_run=None, info=None,
           floor=None):
    """Raise the precision until two runs agree to ``digits`` significant digits.

    ``run(dps, tighter)`` computes at ``dps`` digits; ``tighter`` is 0 for a first run and
    n >= 1 for a checking run, which ODE runs give a 100^n x tighter tolerance; ``values(result)``
    is the sequence compared.  The rungs are made first (``precision.ladder``): after a failed
    round the precision grows by a quarter (by half again when fewer than half the digits
    agreed); in the first case the last checking run is the next round's first run, and the
    next check is 100x tighter again (n + 1), so that every accepted pair differs in tolerance
    as well as in digits (a pair at one tolerance would share its truncation error and check
    only the rounding).  ``fixed``: only the one given ``dps`` is tried.  The rest as
    ``climb``.  Returns (checking run, its dps, the dps it was checked against, agreeing
    digits).
    """
    rungs = precision.ladder(dps, max_rounds, fixed)
    quiet = None if quiet_run is None else (lambda s: quiet_run(s.dps, s.tighter))
    return climb(lambda s: run(s.dps, s.tighter), values, digits=digits, ladder=rungs,
                 what=what, concurrent=concurrent, quiet_run=quiet, info=info, floor=floor)


def climb(run, values, *, digits: int, ladder, what: str = "eps_g", concurrent: bool = False,
          quiet_run=None, info=None, floor=None):
    """Climb a ladder of ``precision.Rung``: ``run(step)`` computes a rung's step, the
    verifier compares each pair and names the next rung (``verify.next_rung``).  A run that
    breaks down (IntegrationError: at too small a precision the closure's cancellation makes
    the integration fail) counts as a round with no digit agreed.

    ``concurrent``: the two runs of a fresh rung are independent (both steps are fixed before
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

    def attempt(step):
        try:
            return run(step)
        except IntegrationError:
            return None

    def compared(result):
        """(values, their bound) of a run, None for a run that broke down."""
        return None if result is None else ([to_mpf(v) for v in values(result)], floor(result))

    def both(first, check):
        """(values of the first run, the checking run), concurrently when allowed."""
        job = None
        if parallel:
            try:
                job = background.Background(lambda: compared(quiet_run(first)),
                                            expected=(IntegrationError,))
            except OSError:                     # no fork (process or memory limits): serial
                job = None
        if job is None:
            done = compared(attempt(first))
            return done, attempt(check)
        if info is not None:
            info["concurrent"] = True
        with job:
            second = attempt(check)
            return job.result(), second

    i, first = 0, None
    while True:
        rung = ladder[i]
        if rung.fresh:
            first, second = both(rung.first, rung.check)
        else:                                   # the last checking run is this round's first
            second = attempt(rung.check)
        checked = None if second is None else compared(second)
        agree = verify.pair_agreement(first, checked)
        if verify.agrees(agree, digits):
            return second, rung.check.dps, rung.first.dps, agree
        first = checked
        i = verify.next_rung(rung, agree, digits, what)


def _climb_plan(p, problem, alphas, *, progress=None, concurrent=None, monitor=None):
    """The ODE runs of a "settle" plan: its ladder climbed on ε_g (``climb``)."""
    last = _last(alphas)

    def run(step, progress=progress):
        label = (f"run 1/2 at {step.dps} digits, rtol {step.rtol:.0e}" if not step.tighter else
                 f"run 2/2 (check) at {step.dps} digits, rtol {step.rtol:.0e}")
        with phase(progress, label, last) as tick:
            return odes.integrate_problem(problem, alphas, step=step, progress=tick,
                                          monitor=monitor)

    # the first run of a pair in a child process when two CPUs are free (climb);
    # the progress bar follows the checking run, which this process computes
    concurrent = background.concurrent_allowed() if concurrent is None else concurrent
    # a system not checked in is printed here, before a child is forked (whose stderr goes
    # nowhere): once, announced on this process's stderr
    ensure_printed(problem.key)
    info = {}
    second, _, checked, agree = climb(
        run, lambda t: t.eps_g, digits=p.digits, ladder=p.ladder, concurrent=concurrent,
        quiet_run=lambda step: run(step, None), info=info, floor=verify.bound)
    second.stats["agreement_digits"] = agree
    second.stats["checked_against_dps"] = checked
    second.stats["concurrent_runs"] = info["concurrent"]
    return second


def solve_auto(problem, alphas, *, basis: str, digits: int, arithmetic: str = "flint",
               start_dps: int | None = None, max_rounds: int = precision.SETTLE_ROUNDS,
               progress=None, integrator: str = "auto", concurrent: bool | None = None,
               monitor=None):
    """Raise precision until two runs agree on ε_g to ``digits`` significant digits: the
    "settle" plan (``precision.settle_plan_of``), then its ladder climbed.

    The second run of each pair has more digits *and* a 100x tighter tolerance (than the first of
    the pair), so agreement covers both rounding (the closure's cancellation) and truncation.
    Returns the second run.
    ``integrator``: "auto" (``precision.choose_integrator``), "taylor" or "rk78", for every run.
    ``concurrent``: run the two runs of a pair at once in two processes (default: when
    ``background.concurrent_allowed()``, i.e. two CPUs and SCALING_ODES_SERIAL unset); False:
    one after the other.  Same result either way; ``stats["concurrent_runs"]`` says which.
    """
    p = precision.settle_plan_of(basis, digits, problem.L, arithmetic=arithmetic,
                                 integrator=integrator, start_dps=start_dps, rounds=max_rounds,
                                 relu=precision.is_relu(problem.key))
    return _climb_plan(p, problem, alphas, progress=progress, concurrent=concurrent,
                       monitor=monitor)
