"""Adaptive explicit Runge–Kutta integration at any precision.

The integrator is written once against a number context (:mod:`solvers.core.numbers`), so the same
code runs on float64 arrays, object arrays of mpmath ``mpf`` and object arrays of flint ``arb``.

Method: Fehlberg's embedded 13-stage Runge–Kutta pair of orders 7 and 8 ("RKF7(8)"),

    E. Fehlberg (1968), "Classical fifth-, sixth-, seventh-, and eighth-order Runge-Kutta
    formulas with stepsize control", NASA Technical Report TR R-287 (the RK7(8) table).

It is chosen because all its coefficients are short exact rationals, so at any precision they
are exact to the last digit.  (Prince & Dormand's RK8(7)13M, J. Comput. Appl. Math. 7 (1981)
67-75, is published as rational *approximations*: checked in exact arithmetic, even sum(b) = 1
is off by 4e-18, which would cap the accuracy near 1e-18 at any precision.)
``tests/test_integrate.py`` checks every order condition of both formulas exactly.

We propagate the 8th-order solution (local extrapolation), although Fehlberg designed the pair
to carry on with the 7th-order formula.  The error estimate is the one for the 7th-order
formula, ``41/840 h (k1 + k11 - k12 - k13)``, so the error per step that is actually made is
normally well below the tolerance.  The controller exponent is 1/8 (the estimate is O(h^8)).
Known weakness: when f does not depend on y at all (pure quadrature, y' = g(t)) the estimate is
exactly zero, because k1 = k12 and k11 = k13; step control then only ever grows h.  Do not
use this integrator for bare quadratures.

Cost at high precision: the number of steps grows like tol**(-1/8) (the controller acts on an
O(h^8) estimate).  For an O(1) linear system that is ~100 steps per unit time at tol 1e-20, ~7e5
at 1e-50 and ~2e13 at 1e-110.  Beyond ~30-40 digits a Taylor method, whose order grows with the
precision, is the better tool; see ``bench/bench_integrator.py``.
"""
from __future__ import annotations

import math
from fractions import Fraction as F

import mpmath
import numpy as np

__all__ = ["IntegrationError", "EndOfLearning", "integrate", "fixed_step_rk4"]


class IntegrationError(RuntimeError):
    """The integration could not continue (step-size underflow, too many steps, non-finite values)."""


class EndOfLearning(Exception):
    """Raised by a monitor at a state that is a fixed point to within the run's precision (a
    student that has learned its teacher, solvers.hierarchy.odes): the integrator stops and
    reports that state at every remaining output time (``stats["held_from"]`` = its t)."""


# --- Fehlberg RK7(8) Butcher tableau, exact ---------------------------------------------------
# Rows of A as {column: coefficient}; stage indices are 0-based (stage 1 of the paper is 0).
_C = [F(0), F(2, 27), F(1, 9), F(1, 6), F(5, 12), F(1, 2), F(5, 6), F(1, 6), F(2, 3), F(1, 3),
      F(1), F(0), F(1)]
_A = [
    {},
    {0: F(2, 27)},
    {0: F(1, 36), 1: F(1, 12)},
    {0: F(1, 24), 2: F(1, 8)},
    {0: F(5, 12), 2: F(-25, 16), 3: F(25, 16)},
    {0: F(1, 20), 3: F(1, 4), 4: F(1, 5)},
    {0: F(-25, 108), 3: F(125, 108), 4: F(-65, 27), 5: F(125, 54)},
    {0: F(31, 300), 4: F(61, 225), 5: F(-2, 9), 6: F(13, 900)},
    {0: F(2), 3: F(-53, 6), 4: F(704, 45), 5: F(-107, 9), 6: F(67, 90), 7: F(3)},
    {0: F(-91, 108), 3: F(23, 108), 4: F(-976, 135), 5: F(311, 54), 6: F(-19, 60),
     7: F(17, 6), 8: F(-1, 12)},
    {0: F(2383, 4100), 3: F(-341, 164), 4: F(4496, 1025), 5: F(-301, 82), 6: F(2133, 4100),
     7: F(45, 82), 8: F(45, 164), 9: F(18, 41)},
    {0: F(3, 205), 5: F(-6, 41), 6: F(-3, 205), 7: F(-3, 41), 8: F(3, 41), 9: F(6, 41)},
    {0: F(-1777, 4100), 3: F(-341, 164), 4: F(4496, 1025), 5: F(-289, 82), 6: F(2193, 4100),
     7: F(51, 82), 8: F(33, 164), 9: F(12, 41), 11: F(1)},
]
_B8 = {5: F(34, 105), 6: F(9, 35), 7: F(9, 35), 8: F(9, 280), 9: F(9, 280), 11: F(41, 840),
       12: F(41, 840)}  # order 8, propagated
_B7 = {0: F(41, 840), 5: F(34, 105), 6: F(9, 35), 7: F(9, 35), 8: F(9, 280), 9: F(9, 280),
       10: F(41, 840)}  # order 7, embedded
_ERR = {i: _B8.get(i, 0) - _B7.get(i, 0) for i in sorted(set(_B8) | set(_B7))}
_ERR = {i: e for i, e in _ERR.items() if e}  # 41/840 * (-k1 - k11 + k12 + k13)
_ORDER_EST = 7  # order of the formula the error estimate refers to

_SAFETY, _FAC_MIN, _FAC_MAX = 0.9, 0.2, 5.0
_STRETCH = F(101, 100)  # a last step may be up to 1% longer than proposed
_PI_BETA = 0.04  # Hairer & Wanner's DOPRI5 default; measured in bench/bench_integrator.py


class _Tableau:
    """The tableau converted once per call, so coefficients are exact at the caller's precision."""

    def __init__(self, ctx):
        def vec(coefs):
            idx = np.array(sorted(coefs), dtype=int)
            return idx, _array(ctx, [ctx.convert(coefs[i]) for i in idx])

        self.c = [ctx.convert(c) for c in _C]
        self.a = [vec(row) for row in _A]
        self.b8, self.err = vec(_B8), vec(_ERR)


def _array(ctx, values):
    """1-d array of already converted numbers: float64 if they are floats, else object."""
    if all(isinstance(v, float) for v in values):
        return np.array(values, dtype=float)
    out = np.empty(len(values), dtype=object)
    out[:] = values  # slice assignment: never lets numpy iterate into the number objects
    return out


class _ArraySpace:
    """States as numpy arrays: float64, or object arrays of mpf / arb."""

    def __init__(self, ctx):
        self.ctx = ctx
        one = ctx.convert(1)
        if hasattr(one, "mid"):  # flint arb balls: keep only the midpoint between steps
            vmid = np.frompyfunc(lambda x: x.mid(), 1, 1)
            self.mid = lambda x: vmid(x) if isinstance(x, np.ndarray) else x.mid()
        else:
            self.mid = lambda x: x

    @staticmethod
    def stages(y):
        y = np.asarray(y)
        return np.empty((len(_C), y.size), dtype=y.dtype)

    @staticmethod
    def store(K, i, f):
        K[i] = np.reshape(f, -1)

    @staticmethod
    def increment(coef_idx, K, h, y):
        """h * sum_j coef_j K[j], shaped like y: one dot product (numpy runs the object loop
        in C); K holds the stage derivatives flattened, (stages, y.size)."""
        idx, coefs = coef_idx
        return np.dot(coefs * h, K[idx]).reshape(np.shape(y))

    @staticmethod
    def stage(K, i, y):
        return K[i].reshape(np.shape(y))

    @staticmethod
    def finite(arr) -> bool:
        arr = np.asarray(arr)
        if arr.dtype != object:
            return bool(np.isfinite(arr).all())
        for v in arr.flat:
            ok = v.is_finite() if hasattr(v, "is_finite") else mpmath.isfinite(v)
            if not ok:
                return False
        return True

    def scaled_rms(self, x, y1, y2, atol, rtol) -> float:
        """rms of x_i / (atol + rtol max(|y1_i|, |y2_i|)), formed in the number type."""
        scale = atol + rtol * np.maximum(abs(y1), abs(y2))
        return _rms(_to_floats(self.ctx, x / scale))


class _ArbMatSpace:
    """States as python-flint ``arb_mat``: every vector operation is one call into C.

    ``scalar_dps``: precision of the method's scalars h·a_ij.  Rounding them changes the
    Runge–Kutta method slightly (the same for every component), not the state, so a few more
    digits than the tolerance asks for suffice; short mantissas make the state-sized
    scalar products several times cheaper.
    """

    def __init__(self, ctx, scalar_dps=None):
        self.ctx = ctx
        self.scalar_dps = scalar_dps

    def _scalars(self, coefs, h):
        if self.scalar_dps is None:
            return [c * h for c in coefs]
        with self.ctx.workdps(self.scalar_dps):
            return [(c * h).mid() for c in coefs]

    @staticmethod
    def mid(x):
        return x.mid()

    @staticmethod
    def stages(y):
        return [None] * len(_C)

    @staticmethod
    def store(K, i, f):
        K[i] = f

    def increment(self, coef_idx, K, h, y):
        idx, coefs = coef_idx
        acc = None
        for j, s in zip(idx, self._scalars(coefs, h)):
            term = K[j] * s
            acc = term if acc is None else acc + term
        return acc

    @staticmethod
    def stage(K, i, y):
        return K[i]

    @staticmethod
    def finite(x) -> bool:
        return all(v.is_finite() for v in x.entries())

    def scaled_rms(self, x, y1, y2, atol, rtol) -> float:
        # A norm needs ~3 digits: do it in float64 when the entries fit (one C-level float
        # conversion each, then numpy), else exactly in arb, entry by entry (~5x slower).
        with np.errstate(all="ignore"):
            e, a, b = (np.array([float(v) for v in m.entries()]) for m in (x, y1, y2))
            s = float(atol) + float(rtol) * np.maximum(np.abs(a), np.abs(b))
            r = e / s
            if np.all(np.isfinite(r)) and np.all(s > 0) and np.all(np.isfinite(s)):
                return float(np.sqrt(np.mean(np.square(r)))) if r.size else 0.0
        total, n = 0.0, 0
        for e, a, b in zip(x.entries(), y1.entries(), y2.entries()):
            r = abs(e) / (atol + rtol * max(abs(a), abs(b)))
            total += float(r.mid()) ** 2 if r.is_finite() else math.inf
            n += 1
        return math.sqrt(total / n) if n else 0.0


def _space(ctx, y, scalar_dps=None):
    if type(y).__name__ == "arb_mat":
        return _ArbMatSpace(ctx, scalar_dps)
    return _ArraySpace(ctx)


def _midpoint_fn(ctx):
    return _ArraySpace(ctx).mid


def _to_floats(ctx, arr) -> np.ndarray:
    if arr.dtype != object:
        return np.asarray(arr, dtype=float)
    return np.array([ctx.to_float(v) for v in arr.flat], dtype=float)


def _rms(x: np.ndarray) -> float:
    with np.errstate(over="ignore"):  # an overflow to inf just means "error far too large"
        return float(np.sqrt(np.mean(np.square(x)))) if x.size else 0.0


def _step(fun, t, y, h, tab, K, sp):
    """One RKF7(8) step; K[0] must already hold fun(t, y).  Returns (y8, err estimate y8 - y7)."""
    for i in range(1, len(_C)):
        sp.store(K, i, fun(t + tab.c[i] * h, y + sp.increment(tab.a[i], K, h, y)))
    return y + sp.increment(tab.b8, K, h, y), sp.increment(tab.err, K, h, y)


def _single_step(fun, t, y, h, *, ctx):
    """One step with both formulas, ``(y_order8, y_order7)``; used by the convergence tests."""
    tab = _Tableau(ctx)
    sp = _space(ctx, y)
    K = sp.stages(y)
    sp.store(K, 0, fun(t, y))
    y8, err = _step(fun, t, y, h, tab, K, sp)
    return y8, y8 - err


def _initial_step(fun, t0, y0, f0, span, sp, rtol, atol) -> float:
    """Hairer, Nørsett & Wanner (1993), Sec. II.4 heuristic, in floats from scaled ratios."""
    d0 = sp.scaled_rms(y0, y0, y0, atol, rtol)
    d1 = sp.scaled_rms(f0, y0, y0, atol, rtol)
    h0 = 1e-6 if d0 < 1e-5 or d1 < 1e-5 or not np.isfinite(d0 / d1) else 0.01 * d0 / d1
    h0 = min(h0, span)
    if not h0 > 0:      # d1 past ~1e300 d0: the rates leave no step that float64 can hold
        raise IntegrationError(f"the initial rates are {d1:.3g} times the state's scale: no "
                               "representable step resolves them")
    hc = sp.ctx.convert(h0)
    f1 = fun(t0 + hc, y0 + f0 * hc)
    d2 = sp.scaled_rms(f1 - f0, y0, y0, atol, rtol) / h0 if sp.finite(f1) else np.inf
    dmax = max(d1, d2)
    if not np.isfinite(dmax):
        h1 = 1e-3 * h0
    elif dmax <= 1e-15:
        h1 = max(1e-6, 1e-3 * h0)
    else:
        h1 = (0.01 / dmax) ** (1.0 / (_ORDER_EST + 1))
    return min(100 * h0, h1, span)


def integrate(fun, t_points, y0, *, ctx, rtol, atol, h0=None, max_steps=1_000_000,
              progress=None, stats=None, scalar_dps=None, monitor=None):
    """Integrate dy/dt = fun(t, y) from t_points[0] and return a list of states, one per t_point
    (the first is y0 itself). t_points: increasing sequence of numbers (int/float/Fraction/ctx numbers).
    Steps are clipped so that every output time is hit exactly (no interpolation).

    rtol, atol: tolerances (floats, Fractions or decimal strings; strings allow values below
    1e-308).  The scaled error ``err_i / (atol + rtol * max(|y_i|, |y_new_i|))`` is formed in
    the number type and only then converted to float, so huge or tiny states are safe.
    h0: first trial step (default: automatic).  max_steps: bound on attempted steps
    (accepted + rejected).  progress: ``progress(t)`` after each accepted step, t a float;
    monitor: ``monitor(t, y)`` after each accepted step (it may raise to stop the run;
    :class:`EndOfLearning` to hold y from there).
    stats: if a dict, receives ``n_steps`` (accepted), ``n_rejected`` and ``n_fevals``.
    y0 may be a numpy array (float64 or object) or a python-flint ``arb_mat`` (then ``fun``
    returns arb_mat too); scalar_dps: see ``_ArbMatSpace`` (arb_mat states only).

    Raises IntegrationError on step-size underflow, too many steps, or when fun returns a
    non-finite value at an accepted state.
    """
    mid = _midpoint_fn(ctx)  # scalars (t, h)
    ts = [mid(ctx.convert(t)) for t in t_points]
    if any(not b > a for a, b in zip(ts, ts[1:])):
        raise ValueError("t_points must be strictly increasing")
    out = [y0]
    counts = stats if stats is not None else {}  # filled in place: valid even after a raise
    counts.update(n_steps=0, n_rejected=0, n_fevals=0)
    if len(ts) < 2:
        return out

    tab = _Tableau(ctx)
    sp = _space(ctx, y0, scalar_dps)
    rtol_c, atol_c = ctx.convert(rtol), ctx.convert(atol)
    if not (atol_c > 0 and rtol_c >= 0):  # atol > 0 keeps the error scale away from 0
        raise ValueError(f"need atol > 0 and rtol >= 0, got atol={atol!r}, rtol={rtol!r}")
    K = sp.stages(y0)
    # Underflow threshold: a step below ~16 ulps of the time scale cannot advance t.
    span = ts[-1] - ts[0]
    ulp = ctx.convert(F(16, 10 ** ctx.dps))
    stretch = ctx.convert(_STRETCH)

    t, y = ts[0], y0
    sp.store(K, 0, fun(t, y))
    counts["n_fevals"] += 1
    if not sp.finite(K[0]):
        raise IntegrationError(f"fun returned a non-finite value at t={ctx.to_float(t):.17g}")
    if h0 is None:
        hf = _initial_step(fun, t, y, sp.stage(K, 0, y), ctx.to_float(span), sp, rtol_c, atol_c)
        counts["n_fevals"] += 1
        h = mid(ctx.convert(hf))
    else:
        h = mid(ctx.convert(h0))
    attempts, just_rejected, saw_nonfinite = 0, False, False
    norm_old = 1e-4  # Hairer's initial "facold"

    for t_next in ts[1:]:
        while t < t_next:
            remaining = mid(t_next - t)
            # Land exactly on t_next.  Stretch by <= 1% rather than leave a sliver, and split a
            # remainder between h and 2h into two equal steps instead of one long + one tiny.
            clipped = not remaining > h * stretch
            if clipped:
                h_try = remaining
            elif remaining < 2 * h:
                h_try = mid(remaining / 2)
            else:
                h_try = h
            if not abs(h_try) > ulp * max(abs(t), abs(span)):
                why = " after non-finite trial values" if saw_nonfinite else ""
                if abs(h_try) > ulp * max(abs(t), 1) and not saw_nonfinite:
                    # a step that t of order 1 would resolve: too short only against the span
                    why = (f": the range of {ctx.to_float(span):.3g} in t is too long for "
                           f"steps of this size at {ctx.dps} digits (alpha_max)")
                raise IntegrationError(f"step size underflow (h={ctx.to_float(h_try):.3g}) at "
                                       f"t={ctx.to_float(t):.17g}{why}")
            attempts += 1
            if attempts > max_steps:
                raise IntegrationError(f"max_steps={max_steps} exceeded at t={ctx.to_float(t):.17g}")

            y_new, err = _step(fun, t, y, h_try, tab, K, sp)
            counts["n_fevals"] += len(_C) - 1
            y_new = sp.mid(y_new)
            if sp.finite(y_new) and sp.finite(err):
                norm = sp.scaled_rms(err, y, y_new, atol_c, rtol_c)
            else:
                # Overflow / NaN inside a trial step may just mean the step was too long
                # (float64 overflow, sqrt of a negative at an overshooting stage): reject and
                # shrink.  A genuinely broken fun is caught at the next accepted state or ends
                # as a step-size underflow.
                norm, saw_nonfinite = np.inf, True

            if norm <= 1.0:
                factor = _accept_factor(norm, norm_old)
                factor = max(_FAC_MIN, min(factor, 1.0 if just_rejected else _FAC_MAX))
                norm_old = max(norm, 1e-4)
                t = t_next if clipped else mid(t + h_try)  # output times are hit exactly
                y = y_new
                counts["n_steps"] += 1
                sp.store(K, 0, fun(t, y))
                counts["n_fevals"] += 1
                if not sp.finite(K[0]):
                    raise IntegrationError(
                        f"fun returned a non-finite value at t={ctx.to_float(t):.17g}")
                h_new = mid(h_try * ctx.convert(factor))
                # A step shortened only to land on an output time says nothing against the
                # longer step proposed before it; keep that proposal unless the error grew.
                if not (h_try < h and factor >= 1 and h > h_new):
                    h = h_new
                just_rejected = False
                if monitor is not None:
                    try:
                        monitor(t, y)
                    except EndOfLearning:
                        counts["held_from"] = ctx.to_float(t)
                        return out + [y] * (len(ts) - len(out))
                if progress is not None:
                    progress(ctx.to_float(t))     # a plain float, never an arb ball or mpf
            else:
                factor = max(_FAC_MIN, _SAFETY * norm ** (-1.0 / (_ORDER_EST + 1)))
                h = mid(h_try * ctx.convert(factor))
                counts["n_rejected"] += 1
                just_rejected = True
        out.append(y)
    return out


def _accept_factor(norm: float, norm_old: float) -> float:
    """Step growth after an accepted step: Gustafsson's PI control in Hairer's form,
    fac = 0.9 err^-(1/8 - 0.75 beta) err_old^beta.  The integral term alone lets a step that
    is limited by stability (not accuracy) oscillate between accepted and rejected; the
    proportional term damps that.  beta: see _PI_BETA."""
    if norm == 0:
        return _FAC_MAX
    return _SAFETY * norm ** (-(1.0 / (_ORDER_EST + 1) - 0.75 * _PI_BETA)) * norm_old ** _PI_BETA


def fixed_step_rk4(fun, t_points, y0, *, ctx, n_steps_per_interval):
    """Classical RK4 with ``n_steps_per_interval`` equal steps between consecutive t_points.

    The naive baseline for benchmarks; no error control.  Returns one state per t_point.
    """
    mid = _midpoint_fn(ctx)
    ts = [mid(ctx.convert(t)) for t in t_points]
    half, sixth, two = ctx.convert(F(1, 2)), ctx.convert(F(1, 6)), ctx.convert(2)
    out, y = [y0], y0
    for t0, t1 in zip(ts, ts[1:]):
        h = mid((t1 - t0) / n_steps_per_interval)
        for n in range(n_steps_per_interval):
            t = t0 + h * n
            k1 = fun(t, y)
            k2 = fun(t + h * half, y + k1 * (h * half))
            k3 = fun(t + h * half, y + k2 * (h * half))
            k4 = fun(t + h, y + k3 * h)
            y = mid(y + (k1 + (k2 + k3) * two + k4) * (h * sixth))
        out.append(y)
    return out
