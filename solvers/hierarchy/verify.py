"""The third step of plan → run → verify: the runs' results read against the plan.

:mod:`solvers.hierarchy.precision` plans (a ``Plan`` made once), :mod:`solvers.hierarchy.runner`
executes its steps, and this module decides from what they returned: a pair accepted (its
agreeing digits recorded in ``stats["agreement_digits"]``, ``meta.agreement_digits`` in the
JSON), a result refused (``PrecisionLost``, naming the digits verified and a dps that would
do), or the plan's next step (the next rung of the ``settle`` ladder, the check run of a
fixed dps).  Nothing here runs anything or plans anything: every precision, tolerance and
rung it names comes from the plan.

The level basis cancels digits in its closure (about 1.3 L of them for erf K = M = 2, more for
larger L); a user's fixed ``dps`` may leave none.  A fixed-dps run is screened first by the
modes basis in float64 (two tolerances; cheap, and free of the closure): a disagreement beyond
that reference's own digits is refused at once, and when ``digits`` is within the
reference's reach the agreement is the verification.  Otherwise the plan's check run (more
digits, a 100x tighter tolerance) must agree on the requested ``digits`` of ε_g.  A negative
ε_g (a mean squared error) or a breakdown of the integrator at a fixed dps is precision loss
too, refused without the second run.
"""
from __future__ import annotations

import math

import mpmath

from solvers.core.numbers import to_mpf
from solvers.hierarchy.precision import PrecisionLost


def agreement_digits(a, b, floor: float = 0.0) -> float:
    """Smallest number of agreeing significant digits over two ε_g sequences (exact compare).

    ``floor``: an absolute error bound of ε_g (``eps_g_bound``, the larger of the two runs').
    Values both within it of 0 agree whatever their difference: at the end of learning ε_g ≈ 0
    has no significant digits to compare, only an absolute error.  Above it the digits are
    relative: a pair at ε_g = 1e-10 that differs by 1e-17 agrees on 7 digits, even where the
    bound is larger than the difference."""
    if len(a) != len(b):
        raise ValueError(f"two eps_g sequences of {len(a)} and {len(b)} values")
    worst = math.inf
    for x, y in zip(a, b):
        x, y = to_mpf(x), to_mpf(y)
        scale = max(abs(x), abs(y))
        if scale == 0 or scale <= floor:
            continue
        diff = mpmath.fsub(x, y, exact=True)
        if diff != 0:
            worst = min(worst, float(-mpmath.log10(abs(diff) / scale)))
    return worst


def bound(*trajectories) -> float:
    """The larger absolute error bound of ε_g of some runs (``precision.eps_g_bound``, recorded
    by each run in ``stats["eps_g_bound"]``; 0 where a run has none)."""
    return max((t.stats.get("eps_g_bound", 0.0) for t in trajectories), default=0.0)


def carried_digits(traj) -> float:
    """Relative digits a float64 overlap state holds of its nonzero ε_g: log10(|ε_g| /
    resolution) at the smallest (``precision.STATE_ROUNDINGS``, ``stats["eps_g_resolution"]``;
    inf for runs that record none).  A pair of such runs shares this floor and agrees through
    it, so their agreement is capped here."""
    res = traj.stats.get("eps_g_resolution", 0.0)
    small = [abs(float(e)) for e in traj.eps_g if e != 0]
    if not res or not small:
        return math.inf
    return math.log10(min(small) / res)


def _below_the_state(agree: float, traj, digits: int) -> str:
    """The reason a float64 pair's agreement is not its digits ('' when it is)."""
    held = carried_digits(traj)
    if held >= digits or held > agree:
        return ""
    e = min((abs(float(x)) for x in traj.eps_g if x != 0), default=0.0)
    return (f"a float64 state holds only {max(held, 0):.1f} digits of eps_g = {e:.3g} "
            f"(its overlaps round at {traj.stats['eps_g_resolution']:.1g})")


def values_and_bound(traj):
    """(ε_g as exact mpf, its error bound) of a run: what a pair compares."""
    return [to_mpf(v) for v in traj.eps_g], bound(traj)


# -- pairs and the settle ladder ----------------------------------------------------------------

def pair_agreement(first, second) -> float:
    """Agreeing digits of two (values, bound) results; -inf when either run broke down (None).
    They agree where they differ by no more than the larger of their two bounds."""
    if first is None or second is None:
        return -math.inf
    return agreement_digits(first[0], second[0], max(first[1], second[1]))


def agrees(agree: float, digits: int) -> bool:
    return agree >= digits


def next_rung(rung, agree: float, digits: int, what: str = "eps_g") -> int:
    """The plan's next rung after a failed round (``Rung.near`` when more than half the digits
    agreed, else ``Rung.far``); PrecisionLost past the ladder's last."""
    near = agree > digits / 2
    nxt, dps = (rung.near, rung.near_dps) if near else (rung.far, rung.far_dps)
    if nxt is None:
        raise PrecisionLost(f"{what} did not settle to {digits} digits up to dps = {dps}")
    return nxt


def tighter_pair(p, first, second, together: bool):
    """A "tighter" pair (``first``: (values, bound) or None; ``second``: the check run or None):
    the check run with its agreement when they agree on ``p.digits``, else None (the plan's
    fallback runs)."""
    agree = (-math.inf if second is None
             else pair_agreement(first, values_and_bound(second)))
    if second is not None:
        agree = min(agree, carried_digits(second))
    if not agrees(agree, p.digits):
        return None
    second.stats["agreement_digits"] = agree
    second.stats["concurrent_runs"] = together
    second.stats["route"] = p.route
    return second


# -- a float64 run -------------------------------------------------------------------------------

def float64_checked(p, first, second):
    """A float64 modes run and its check at the plan's tighter tolerance."""
    agree = agreement_digits(first.eps_g, second.eps_g, bound(first, second))
    why = _below_the_state(agree, first, p.digits)
    agree = min(agree, carried_digits(first))
    if agree < p.digits:
        why = why or f"a run at rtol = {p.check.rtol:g} disagrees"
        raise PrecisionLost(f"dps = \"float64\" verified only {max(agree, 0):.1f} of the "
                            f"{p.digits} digits asked for ({why}); ask for fewer digits or "
                            f"use dps = \"auto\"")
    first.stats["agreement_digits"] = agree
    return first


def check_float64_levels(levels, modes, digits: int) -> float:
    """Digits the float64 level run shares with the modes run; PrecisionLost below ``digits``."""
    agree = min(agreement_digits(levels.eps_g, modes.eps_g, bound(levels, modes)),
                carried_digits(levels), carried_digits(modes))
    if agree < digits:
        raise PrecisionLost(
            f"float64 in the level basis has lost its digits: eps_g agrees with the modes basis "
            f"to only {max(agree, 0):.1f} digits (asked for {digits}); use basis = \"modes\" "
            f"or an arbitrary-precision dps")
    return agree


# -- a fixed dps ---------------------------------------------------------------------------------

def _round_up(x: float, step: int = 5) -> int:
    return int(step * math.ceil(x / step))


def suggested_dps(auto_dps: int, dps: int, digits: int, agree: float | None) -> int:
    """A dps that should reach ``digits``: the digits lost at ``dps`` (dps - agree) plus the
    ones wanted and a margin; when nothing agreed, the loss is unknown (at least dps, and at
    least ``auto_dps``, where the automatic policy starts)."""
    if agree is None or agree < 1:
        return _round_up(max(auto_dps, dps + digits + 10))
    return _round_up(max(dps + (digits - agree) + 5, digits + 10))


def lost(p, L: int, agree, what) -> PrecisionLost:
    """The refusal of a fixed-dps run: what failed, the digits verified, a dps to use."""
    use = suggested_dps(p.auto_dps, p.dps, p.digits, agree)
    got = 0.0 if agree is None else max(agree, 0.0)
    return PrecisionLost(f"dps = {p.dps} is too small for L = {L} in the {p.basis} basis: "
                         f"{what}; {got:.1f} of the {p.digits} digits asked for are verified; "
                         f"use dps >= {use} or dps = \"auto\"")


def broke_down(p, L: int, exc) -> PrecisionLost:
    return lost(p, L, None, f"the integration broke down ({' '.join(str(exc).split())}), the "
                            f"signature of digits lost to cancellation")


def check_broke_down(p, L: int) -> PrecisionLost:
    return lost(p, L, None, f"the check at dps = {p.check.dps} broke down")


def check_sign(traj, p, L: int) -> None:
    for a, e in zip(traj.alpha, traj.eps_g):
        if e < 0:
            raise lost(p, L, None, f"eps_g = {float(e):.3g} < 0 at alpha = {float(a):g} (a mean "
                                   f"squared error cannot be negative: the closure cancelled "
                                   f"every digit)")


def vouched_by_reference(p, L: int, first, reference) -> bool:
    """Whether the float64 modes ``reference`` (its two runs, or None where float64 could not
    run it) verifies the fixed-dps run ``first`` on its own: True when ``p.digits`` is within
    the reference's digits and they agree; PrecisionLost when they disagree earlier than the
    reference's own digits; False when the plan's check run must decide."""
    if reference is None:
        return False
    a, modes = reference
    # what the float64 pair agrees on, and no more than its states hold (carried_digits)
    ref_digits = min(agreement_digits(a.eps_g, modes.eps_g, bound(a, modes)),
                     carried_digits(a), carried_digits(modes), 15.0)
    agree = agreement_digits(first.eps_g, modes.eps_g, bound(first, modes))
    if agree < p.digits and agree < ref_digits - 1:
        # the stable basis, itself good to ref_digits, disagrees earlier: digits were lost
        raise lost(p, L, agree, f"the modes basis (float64, verified to {ref_digits:.1f} "
                                f"digits) agrees on eps_g to {max(agree, 0):.1f} digits")
    if p.digits <= ref_digits - 1:
        first.stats["agreement_digits"] = min(agree, ref_digits)
        first.stats["checked_against"] = "modes basis, float64"
        return True
    return False


def fixed_checked(p, L: int, first, second):
    """The fixed-dps run ``first`` verified by the plan's check run ``second``, or refused."""
    agree = agreement_digits(first.eps_g, second.eps_g, bound(first, second))
    if agree < p.digits:
        raise lost(p, L, agree, f"a check at dps = {p.check.dps} agrees on eps_g to "
                                f"{max(agree, 0):.1f} digits")
    first.stats["agreement_digits"] = agree
    first.stats["checked_against_dps"] = p.check.dps
    return first
