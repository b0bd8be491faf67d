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
"""
from __future__ import annotations

import math
from fractions import Fraction

from solvers.core.progress import phase
from solvers.hierarchy import precision, stability
from solvers.hierarchy.odes import (PrecisionLost, agreement_digits, check_float64_levels,
                                    default_rtol, estimated_dps, integrate_problem, solve_auto)
from solvers.integrators.rk78 import IntegrationError


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
            first = integrate_problem(problem, alphas, basis=basis, arithmetic=arithmetic,
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
        agree = agreement_digits(first.eps_g, modes.eps_g)
        if agree < digits and agree < ref_digits - 1:
            # the stable basis, itself good to ref_digits, disagrees earlier: digits were lost
            raise _lost(problem, dps, digits, basis, agree,
                        f"the modes basis (float64, verified to {ref_digits:.1f} digits) agrees "
                        f"on eps_g to {max(agree, 0):.1f} digits")
        if digits <= ref_digits - 1:
            first.stats["agreement_digits"] = min(agree, ref_digits)
            first.stats["checked_against"] = "modes basis, float64"
            return first
    dps2 = precision.checking_dps(dps)
    try:
        with phase(progress, f"run 2/2 (check) at {dps2} digits, rtol {rtol / 100:.0e}",
                   last) as tick:
            second = integrate_problem(problem, alphas, basis=basis, arithmetic=arithmetic,
                                       dps=dps2, rtol=rtol / 100, integrator=integrator,
                                       progress=tick)
    except IntegrationError:
        raise _lost(problem, dps, digits, basis, None,
                    f"the check at dps = {dps2} broke down") from None
    agree = agreement_digits(first.eps_g, second.eps_g)
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
        a = integrate_problem(problem, alphas, basis="modes", arithmetic="float64", rtol=1e-13)
        b = integrate_problem(problem, alphas, basis="modes", arithmetic="float64", rtol=1e-15,
                              progress=progress)
    except (IntegrationError, PrecisionLost, ValueError, OverflowError, ZeroDivisionError):
        return None
    return b, min(agreement_digits(a.eps_g, b.eps_g), 15.0)


def verify_float64(first, problem, alphas, *, basis: str, digits: int, progress=None):
    """A float64 run checked by a second one at a 100x tighter tolerance (floor 1e-16)."""
    rtol = max(default_rtol(digits) / 100, 1e-16)
    with phase(progress, f"check: RK7(8) float64, rtol {rtol:.0e}",
               float(first.alpha[-1])) as tick:
        second = integrate_problem(problem, alphas, basis=basis, arithmetic="float64",
                                   rtol=rtol, progress=tick)
    agree = agreement_digits(first.eps_g, second.eps_g)
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
    # the Taylor jets hold η constant and carry no trained readout: RK7(8) then
    p = precision.plan(basis, dps, digits, problem.L,
                       autonomous=problem.autonomous and not problem.trained)
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
        return integrate_problem(problem, alphas, basis=basis, arithmetic=p.arithmetic,
                                 dps=p.dps, rtol=rtol, progress=tick, integrator=p.integrator,
                                 monitor=_watch(problem, basis))


def _last(alphas) -> float:
    a = list(alphas)[-1]
    return float(a) if not isinstance(a, str) else float(Fraction(a))


def _name(p) -> str:
    return {"rodas4": "modes RODAS4", "rk78": "RK7(8)", "taylor": "Taylor"}.get(
        p.integrator, p.integrator) + (" float64" if p.arithmetic == "float64" else "")


def _tighter_pair(p, problem, alphas, *, basis, progress):
    """(ε_g of the run at p.rtol, the run at p.rtol / p.check_factor): concurrently when two
    CPUs are free (the first in a forked child, as in ``precision.settle``), else one after
    the other."""
    from solvers.core.numbers import to_mpf
    from solvers.hierarchy import background
    r1, r2 = p.rtol, p.rtol / p.check_factor
    job = None
    if background.concurrent_allowed():
        try:
            job = background.Background(
                lambda: [to_mpf(v) for v in _run(p, problem, alphas, basis=basis, rtol=r1,
                                                 progress=None, label="").eps_g],
                expected=(IntegrationError,))
        except OSError:                         # no fork: serial
            job = None
    if job is None:
        try:
            first = _run(p, problem, alphas, basis=basis, rtol=r1, progress=progress,
                         label=f"run 1/2: {_name(p)}, rtol {r1:.0e}").eps_g
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
                 else agreement_digits(first, second.eps_g))
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
        traj = integrate_problem(problem, alphas, basis=basis, arithmetic=p.arithmetic,
                                 dps=p.dps, rtol=p.rtol, progress=tick, integrator=p.integrator,
                                 monitor=_watch(problem, basis))
    if p.verify == "float64":
        return verify_float64(traj, problem, alphas, basis=basis, digits=digits,
                              progress=progress)
    if p.verify == "modes":
        with phase(progress, "check: modes basis, float64", _last(alphas)) as tick:
            modes = integrate_problem(problem, alphas, basis="modes", arithmetic=p.arithmetic,
                                      rtol=p.rtol, integrator=p.integrator, progress=tick,
                                      monitor=_watch(problem, "modes"))
        traj.stats["agreement_digits"] = check_float64_levels(traj, modes, digits)
    return traj
