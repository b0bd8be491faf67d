"""The late-time exponent of a learning curve, with an uncertainty that says how far the curve
is from a power law.

A curve ε(α) ≈ C α^(−p) above a floor ε_∞ is fitted by least squares in (log α, log(ε − ε_∞)) on
a window.  Two numbers make the uncertainty: the slope's standard error (scatter about the
line: noise, rounding) and the drift, half the difference between the exponents fitted on the
window's lower and upper halves (a curve that is still bending — entering or leaving its
power-law range — drifts, however smooth it is).  ``uncertainty`` is their root-sum-square:
a finite-size curve whose local exponent changes across the window is not given more digits
than it has.

>>> import numpy as np
>>> a = np.geomspace(10, 1000, 30)
>>> r = fit_exponent(a, 3 * a ** -0.5)
>>> round(r["exponent"], 12), r["uncertainty"] < 1e-12
(0.5, True)
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["fit_exponent", "late_exponent", "MIN_POINTS"]

MIN_POINTS = 6      # per fit of the whole window (each half needs 3 for a slope with scatter)


def _slope(x, y):
    """(slope, standard error) of the least-squares line through (x, y)."""
    n = len(x)
    A = np.vstack([x, np.ones(n)]).T
    coef, res, *_ = np.linalg.lstsq(A, y, rcond=None)
    resid = y - A @ coef
    sxx = float(np.sum((x - x.mean()) ** 2))
    se = math.sqrt(float(resid @ resid) / max(n - 2, 1) / sxx) if n > 2 and sxx > 0 else math.inf
    return float(coef[0]), se


def fit_exponent(alpha, values, *, window=None, floor: float = 0.0) -> dict:
    """Exponent p of ``values`` ≈ C α^(−p) + ``floor`` on ``window`` = (lo, hi) (default: the
    last decade of ``alpha``, or all of it when it spans less).  ValueError when the window
    holds fewer than MIN_POINTS points with α > 0 and values above the floor.

    Returns dict(exponent, uncertainty, standard_error, drift, window=[lo, hi], n_points).
    """
    a = np.asarray(alpha, dtype=float)
    v = np.asarray(values, dtype=float) - float(floor)
    if a.shape != v.shape or a.ndim != 1:
        raise ValueError(f"alpha and values must be lists of one length (got {a.shape} and "
                         f"{v.shape})")
    pos = a[a > 0]
    if pos.size == 0:
        raise ValueError("no alpha > 0 to fit an exponent on")
    if window is None:
        hi = float(pos.max())
        lo = max(float(pos.min()), hi / 10)
    else:
        lo, hi = (float(w) for w in window)
        if not 0 < lo < hi:
            raise ValueError(f"the window must be 0 < lo < hi, got [{lo:g}, {hi:g}]")
    keep = (a >= lo) & (a <= hi) & (v > 0) & np.isfinite(v)
    n = int(keep.sum())
    if n < MIN_POINTS:
        raise ValueError(f"the window [{lo:g}, {hi:g}] holds {n} points of the curve above "
                         f"the floor; the fit needs at least {MIN_POINTS}")
    x, y = np.log(a[keep]), np.log(v[keep])
    slope, se = _slope(x, y)
    mid = n // 2
    first, _ = _slope(x[:mid + 1], y[:mid + 1])
    second, _ = _slope(x[mid:], y[mid:])
    drift = abs(first - second) / 2
    return {"exponent": -slope, "uncertainty": math.hypot(se, drift), "standard_error": se,
            "drift": drift, "window": [float(a[keep].min()), float(a[keep].max())],
            "n_points": n}


def late_exponent(alpha, values, *, floor: float = 0.0, resolved: float = 1e-6) -> dict:
    """The ``late_exponent`` field of a curve's JSON: :func:`fit_exponent` on the late part of
    the curve, or, when it gives nothing to fit, ``{"reason": ...}`` saying why (a field that
    is always present and never null).

    The window is the last decade of the points whose excess over ``floor`` (a known limit of
    the curve, subtracted and recorded) is resolved, above ``resolved`` times the value (a
    curve that has reached its floor within its digits has no exponent left there); widened to
    the last MIN_POINTS of them when the decade holds fewer."""
    a = np.asarray(alpha, dtype=float)
    v = np.asarray(values, dtype=float)
    excess = v - float(floor)
    ok = (a > 0) & np.isfinite(v) & (excess > resolved * np.abs(v))
    out = {}
    if ok.sum() >= MIN_POINTS:
        pts = a[ok]
        hi = float(pts.max())
        lo = min(max(float(pts.min()), hi / 10), float(np.sort(pts)[-MIN_POINTS]))
        try:
            out = fit_exponent(a[ok], v[ok], window=(lo, hi) if lo < hi else None,
                               floor=floor)
        except ValueError as e:
            out = {"reason": str(e)}
    else:
        out = {"reason": f"{int(ok.sum())} points of the curve lie resolved above its floor; "
                         f"the fit needs at least {MIN_POINTS}"}
    if floor:
        out["floor"] = float(floor)
    return out
