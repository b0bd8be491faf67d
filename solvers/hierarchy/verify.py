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

from solvers.hierarchy import precision
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
    try:
        first = integrate_problem(problem, alphas, basis=basis, arithmetic=arithmetic, dps=dps,
                                  rtol=rtol, progress=progress, integrator=integrator)
    except IntegrationError as exc:
        raise _lost(problem, dps, digits, basis, None,
                    f"the integration broke down ({' '.join(str(exc).split())}), the signature "
                    f"of digits lost to cancellation") from None
    check_sign(first, problem, dps, digits, basis)
    ref = _float64_modes_reference(problem, alphas)
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
        second = integrate_problem(problem, alphas, basis=basis, arithmetic=arithmetic,
                                   dps=dps2, rtol=rtol / 100, integrator=integrator)
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


def _float64_modes_reference(problem, alphas):
    """The modes basis in float64 at two tolerances: (the finer run, digits they agree on), or
    None when float64 cannot run it.  Cheap (no closure, no arbitrary precision) and independent
    of the level basis's cancellation, so it screens a fixed-dps level run first."""
    try:
        a = integrate_problem(problem, alphas, basis="modes", arithmetic="float64", rtol=1e-13)
        b = integrate_problem(problem, alphas, basis="modes", arithmetic="float64", rtol=1e-15)
    except (IntegrationError, PrecisionLost, ValueError, OverflowError, ZeroDivisionError):
        return None
    return b, min(agreement_digits(a.eps_g, b.eps_g), 15.0)


def verify_float64(first, problem, alphas, *, basis: str, digits: int):
    """A float64 run checked by a second one at a 100x tighter tolerance (floor 1e-16)."""
    rtol = max(default_rtol(digits) / 100, 1e-16)
    second = integrate_problem(problem, alphas, basis=basis, arithmetic="float64", rtol=rtol)
    agree = agreement_digits(first.eps_g, second.eps_g)
    if agree < digits:
        raise PrecisionLost(f"dps = \"float64\" verified only {max(agree, 0):.1f} of the {digits} "
                            f"digits asked for (a run at rtol = {rtol:g} disagrees); ask for "
                            f"fewer digits or use dps = \"auto\"")
    first.stats["agreement_digits"] = agree
    return first


# -- running a plan of the policy (solvers.hierarchy.precision) and verifying its result ------

def solve(problem, alphas, *, basis: str, dps, digits: int, progress=None):
    """The trajectory at ``alphas`` (starting at 0) under ``precision.plan``."""
    return _execute(precision.plan(basis, dps, digits, problem.L), problem, alphas,
                    basis=basis, digits=digits, progress=progress)


def _execute(p, problem, alphas, *, basis, digits, progress):
    if p.verify == "settle":
        return solve_auto(problem, alphas, basis=basis, digits=digits, arithmetic=p.arithmetic,
                          start_dps=p.dps, progress=progress, integrator=p.integrator)
    if p.verify == "fixed":
        # a fixed dps is verified like "auto" (a second run), or refused
        return run_fixed_dps(problem, alphas, basis=basis, dps=p.dps, digits=digits,
                             progress=progress, integrator=p.integrator)
    traj = integrate_problem(problem, alphas, basis=basis, arithmetic=p.arithmetic, dps=p.dps,
                             rtol=p.rtol, progress=progress, integrator=p.integrator)
    if p.verify == "float64":
        return verify_float64(traj, problem, alphas, basis=basis, digits=digits)
    if p.verify == "modes":
        modes = integrate_problem(problem, alphas, basis="modes", arithmetic=p.arithmetic,
                                  rtol=p.rtol, integrator=p.integrator)
        traj.stats["agreement_digits"] = check_float64_levels(traj, modes, digits)
    elif p.verify == "tighter":
        second = integrate_problem(problem, alphas, basis=basis, arithmetic=p.arithmetic,
                                   rtol=p.rtol / 100, integrator=p.integrator)
        agree = agreement_digits(traj.eps_g, second.eps_g)
        if agree < digits:
            return _execute(p.fallback, problem, alphas, basis=basis, digits=digits,
                            progress=progress)
        second.stats["agreement_digits"] = agree
        return second
    return traj
