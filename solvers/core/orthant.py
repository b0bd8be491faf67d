"""The four-field orthant probability P4 = P(z1 > 0, z2 > 0, z3 > 0, z4 > 0) in every number
context, without SymPy.

A ReLU student at order 2 needs ⟨θ(x_i) θ(x_j) relu(c) relu(d)⟩, which contains P4 of the four
fields' correlations r = (r12, r13, r14, r23, r24, r34) (derive/family/orthant.py, where the
symbolic function ``Orthant4`` lives).  Its gradient is elementary (Price's theorem),

    dP4/dr_ab = (1/4 + asin(r_cd|ab) / (2π)) / (2π sqrt(1 - r_ab²)),

with r_cd|ab the partial correlation of the other two fields given z_a = z_b = 0, and P4 itself
is Plackett's one-dimensional integral along the ray t·r from the independent case:

    P4(r) = 1/16 + ∫_0^1 Σ_ab r_ab · dP4/dr_ab(t r) dt.

The integrand is analytic on [0, 1] for a positive-definite correlation matrix but has
square-root singularities just beyond t = 1 when the matrix is nearly singular (a student unit
aligned with a teacher unit), so each context integrates adaptively and refuses (ValueError)
rather than return fewer digits than it carries:

* mpmath: Gauss–Legendre, then tanh-sinh quadrature (``mpmath.quad``) with guard digits, the
  error estimate checked; from the fields' canonical ordering, remembered with the precision
  (the same memo as float64's);
* python-flint arb: ``acb.integral`` (rigorous enclosure; the branch cuts of sqrt and asin are
  checked on every ball), the midpoint returned; for nearly aligned fields (smallest eigenvalue
  of the correlation matrix below ALIGNED) mpmath's tanh-sinh rule at flint's precision, whose
  error estimate is checked (faster there);
* float64: Gauss–Legendre on panels graded towards t = 1, compared with a rule of fewer nodes,
  compiled with numba (solvers/core/orthant_jit.py, 10–80 µs a matrix) from the four fields'
  canonical ordering, with a memo of the last few matrices (a right-hand side asks for the same
  fields in several orders); arrays broadcast (the generated ε_g and coefficients vectorise
  over numpy arrays), each entry integrated like a scalar.

The ray's minors, integrand and panel grading are written once, for every arithmetic, in
solvers/core/orthant_ray.py.

>>> import mpmath
>>> with mpmath.workdps(30):
...     print(mpmath.nstr(orthant4_mpmath(*[mpmath.mpf(1) / 2] * 6), 25))  # exchangeable r = 1/2: 1/5
0.2
"""
from __future__ import annotations

import math

import numpy as np

from solvers.core.orthant_ray import (PAIRS, canonical, grading, minors, ray_derivative,
                                      ray_integrand)

def _smallest_eigenvalue(r):
    """The smallest eigenvalue of the correlation matrix of r (float64 screen; arrays
    broadcast; -inf where r is not finite)."""
    rr = np.broadcast_arrays(*[np.asarray(float(x.mid()) if hasattr(x, "mid") else x,
                                          dtype=float) for x in r])
    R = np.zeros(rr[0].shape + (4, 4))
    R[..., range(4), range(4)] = 1.0
    for (a, b), x in zip(PAIRS, rr):
        R[..., a, b] = R[..., b, a] = x
    finite = np.all(np.isfinite(R), axis=(-2, -1))
    low = np.full(finite.shape, -math.inf)
    if np.any(finite):
        low[finite] = np.linalg.eigvalsh(R[finite])[..., 0]
    return low if low.ndim else float(low)


def _check_positive_semidefinite(r, tol: float):
    """ValueError unless the correlation matrix of r is positive semi-definite to within
    ``tol`` (a matrix further outside the cone is not a state of the ODEs).  Returns the
    smallest eigenvalue, clamped at 0 (the smallest over an array)."""
    low = float(np.min(_smallest_eigenvalue(r)))
    _check_low(low, tol)
    return max(low, 0.0)


def _check_low(low: float, tol: float) -> None:
    """The refusal of ``_check_positive_semidefinite`` given the smallest eigenvalue."""
    if low == -math.inf:
        raise ValueError("orthant probability: a correlation is not finite (the right-hand "
                         "side lost its digits before it got here)")
    if not low >= -tol:
        raise ValueError(f"orthant probability: the correlation matrix is not positive "
                         f"semi-definite (smallest eigenvalue {low:.3g}, beyond the tolerance "
                         f"{tol:.1g}): the state is not realisable")


# relative tolerance of the positive-semidefinite test of a state (here and in the modes-basis
# watch, solvers.hierarchy.stability): the states are integrated to rtol <= 1e-8 and a perfectly
# learned Gram matrix is singular, so its smallest eigenvalue may sit a truncation error below
# zero; a diverging or broken run misses by far more.
PSD_TOL = 1e-6


def _cone_tol() -> float:
    """How far below zero the smallest eigenvalue of a state's correlation matrix may sit: the
    states come from an integrator, whose truncation error may push a singular (perfectly
    learned) Gram matrix just outside the cone."""
    return PSD_TOL


# -- mpmath -----------------------------------------------------------------------------------

def orthant4_mpmath(*r):
    """P4 at mpmath's working precision (scoped by the caller's context); ValueError when the
    quadrature's error estimate is not below 10^-dps.  Integrated from the fields' canonical
    ordering and remembered with the precision (the memo below): a right-hand side asks for the
    same four fields in two orders (ReLU K = 2), and a Newton step's Jacobian for the fields of
    its right-hand side again, each ~1 s at 20-30 digits."""
    import mpmath as mp
    dps = mp.mp.dps
    with mp.workdps(dps + 10):
        rr = canonical(tuple(mp.mpf(x) for x in r))
    key = ("mpmath", mp.mp.prec, rr)
    if key in _MEMO:
        return _MEMO[key]
    low = _check_positive_semidefinite(r, _cone_tol())
    with mp.workdps(dps + 10):
        zero, one = mp.mpf(0), mp.mpf(1)
        # the minors of the given (exact) correlations exactly: cubic in them
        with mp.workprec(3 * mp.mp.prec + 64):
            m = minors(rr, lambda x: x if x > 0 else zero, mp.sqrt,
                        lambda x, b: max(-b, min(b, x)))
        m = [[+x for x in row] for row in m]

        def f(s):
            return ray_integrand(m, s, mp.sqrt, mp.asin, mp.pi,
                                  clip=lambda x: max(-one, min(one, x)))

        # tanh-sinh on panels graded by 4 towards s = 0 (the nearly singular end): measured
        # faster than Gauss–Legendre at 30 and 100 digits (bench_orthant.py), and than panels
        # graded by 2 or 8
        # below 10^-dps the smallest eigenvalue is within the inputs' own rounding, which moves P4
        # by ~sqrt(10^-dps) there anyway: no panels below that scale
        pts = [mp.mpf(x) for x in grading(low, 10.0 ** -dps, 4, 0)]
        val, err = mp.quad(f, pts, error=True)
        if not err < mp.mpf(10) ** (-dps - 1):
            raise ValueError(f"orthant probability: quadrature error {mp.nstr(err, 3)} above "
                             f"1e-{dps} (smallest eigenvalue of the correlation matrix "
                             f"{low:.2g})")
        out = mp.mpf(1) / 16 + val
    out = +out
    _remember(key, out)
    return out


# -- python-flint arb -------------------------------------------------------------------------

def orthant4_arb(*r):
    """P4 as an arb at flint's working precision (the caller's context sets it): the rigorous
    enclosure of ``acb.integral``; ValueError when it is wider than the precision allows."""
    from flint import acb, arb, ctx

    if _check_positive_semidefinite(r, _cone_tol()) < ALIGNED:
        # nearly aligned (or singular) fields: acb.integral bisects towards the end point
        # (measured 5x slower than tanh-sinh there, bench_orthant.py) and cannot enclose a
        # singular end point; mpmath at flint's precision instead, with its error estimate
        # checked, returned as an exact arb of the midpoint
        import mpmath as mp
        with mp.workdps(ctx.dps):
            val = orthant4_mpmath(*[mp.mpf(_mid_text(x)) for x in r])
            return arb(mp.nstr(val, ctx.dps + 5, strip_zeros=False, min_fixed=-mp.inf,
                               max_fixed=mp.inf))
    rr = [acb(x.mid() if isinstance(x, arb) else x) for x in r]
    pi = arb.pi()

    def sqrt_(z, analytic):
        return z.sqrt(analytic=analytic)

    def f(t, analytic):
        def asin(z):
            # asin z = -i log(i z + sqrt(1 - z²)): analytic where 1 - z² is off (-inf, 0]
            w = 1 - z * z
            if analytic and not w.real > 0:
                return acb(arb("nan"))
            return -1j * (1j * z + w.sqrt(analytic=analytic)).log(analytic=analytic)
        return ray_derivative(rr, t, lambda z: sqrt_(z, analytic), asin, pi)

    val = acb.integral(f, 0, 1).real + arb(1) / 16
    if not val.is_finite() or val.rad() > val.mid().abs_upper() * arb(2) ** (-ctx.prec + 8):
        raise ValueError(f"orthant probability: enclosure {val.str(5, radius=True)} too wide at "
                         f"{ctx.dps} digits (correlation matrix close to singular?)")
    return arb(val.mid())


# below this smallest eigenvalue of the correlation matrix the flint context integrates with
# mpmath's tanh-sinh rule (see orthant4_arb)
ALIGNED = 0.1


def _mid_text(x) -> str:
    if hasattr(x, "mid"):
        return x.mid().str(radius=False, more=True)
    return str(x)


# -- float64 ----------------------------------------------------------------------------------

# two rules' difference allowed: a few thousand units of rounding (the integrand's terms are
# O(1) and its minors carry errors of a few ulps; measured <= 2e-15 on aligned states)
FLOAT64_TOL = 1e-12

_jit = None

# P4 of the last few scalar correlation matrices, keyed by their canonical ordering
# (orthant_ray.canonical; in mpmath with the precision as well): a right-hand side asks for the
# same four fields in several orders (K = 3: 27 calls, 12 distinct matrices).  Exact: P4 is
# computed from the canonical ordering on every path, so a hit returns the number a new
# computation would.
_MEMO: dict = {}
_MEMO_SIZE = 256            # 0: no memo (bench/bench_orthant_float.py measures both)


def _kernels():
    """The compiled kernels (solvers/core/orthant_jit.py), imported on first use."""
    global _jit
    if _jit is None:
        from solvers.core import orthant_jit
        _jit = orthant_jit
    return _jit


def orthant4_float(*r):
    """P4 in float64 (numpy arrays broadcast); ValueError when two Gauss–Legendre rules differ
    by more than FLOAT64_TOL.  Each correlation matrix is integrated on panels graded towards
    s = 0 down to sqrt of its own smallest eigenvalue, compiled (orthant_jit)."""
    k = _kernels()
    tol = _cone_tol()
    if all(isinstance(x, (float, int)) for x in r):
        key = k.canonical(tuple(float(x) for x in r))
        if key in _MEMO:
            return _MEMO[key]
        fine, diff, low = k.p4(key, tol)
        _refuse(low, diff, tol)
        _remember(key, fine)
        return fine
    rr = np.broadcast_arrays(*[np.asarray(x, dtype=float) for x in r])
    flat = [np.ascontiguousarray(x).reshape(-1) for x in rr]
    fine, diff, low = (np.empty(flat[0].size) for _ in range(3))
    k.p4_many(*flat, tol, fine, diff, low)
    if fine.size:
        _refuse(np.min(low), np.max(diff), tol)
    fine = fine.reshape(rr[0].shape)
    return fine if fine.ndim else float(fine)


def _remember(key, value) -> None:
    if _MEMO_SIZE:
        if len(_MEMO) >= _MEMO_SIZE:
            _MEMO.clear()
        _MEMO[key] = value


def _refuse(low: float, diff: float, tol: float) -> None:
    """The float64 refusals: outside the cone or not finite, or two rules that disagree."""
    _check_low(low, tol)
    if not diff <= FLOAT64_TOL:
        raise ValueError(f"orthant probability: float64 quadrature rules differ by {diff:.1e} "
                         f"(correlation matrix outside the positive semi-definite cone?)")
