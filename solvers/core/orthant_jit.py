"""The float64 orthant probability P4 compiled with numba: the functions of Plackett's ray
(solvers/core/orthant_ray.py: the minors, the integrand in s, the grading of the panels) compiled
from their one source, the two Gauss–Legendre rules summed and compared in the same compiled
call, one correlation matrix at a time (arrays loop here, each entry with its own grading).

A module of its own so that importing the number contexts does not import numba (~1 s of CPU):
solvers/core/orthant.py's orthant4_float loads it on first use and refuses what these kernels
report (the smallest eigenvalue, the two rules' difference).  The kernels live in the cache of
generated artifacts (solvers/core/artifacts.numba_kernels), dropped when orthant_ray.py
changes: the functions compiled into them are that file's.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from solvers.core import orthant_ray as _ray
from solvers.core.artifacts import numba_kernels

PAIRS = _ray.PAIRS
# the Gauss–Legendre rules on [-1, 1] applied on every panel, 16 nodes checked by 11: frozen
# into the compiled code as constants
_FINE_X, _FINE_W = np.polynomial.legendre.leggauss(16)
_COARSE_X, _COARSE_W = np.polynomial.legendre.leggauss(11)

# the shared functions, compiled; inlined where they are called, so that the functions of the
# arithmetic passed to them become direct calls (passed as values between compiled functions
# they would be run-time addresses, which numba cannot cache)
_minors = njit(inline="always")(_ray.minors)
_ray_integrand = njit(inline="always")(_ray.ray_integrand)
_grading = njit(nogil=True)(_ray.grading)
_canonical = njit(inline="always")(_ray.canonical)


@njit(nogil=True)
def _sqrt(x):
    return math.sqrt(x)


@njit(nogil=True)
def _asin(x):
    return math.asin(x)


@njit(nogil=True)
def _clamp(x):
    return x if x > 0.0 else 0.0


@njit(nogil=True)
def _clip(x, b):
    return max(-b, min(b, x))


@njit(nogil=True)
def _unit(x):
    return max(-1.0, min(1.0, x))


@njit(cache=True, nogil=True)
def smallest_eigenvalue(r):
    """The smallest eigenvalue of the correlation matrix of the six correlations ``r``
    (-inf when one is not finite), by cyclic Jacobi rotations.

    Not LAPACK: numba reaches LAPACK through pointers fetched at run time, and a kernel that
    uses them cannot be cached (it would compile anew, seconds, in every process).  Jacobi's
    method is backward stable, each rotation moving the matrix by a few units of rounding of
    its norm (<= 4 here), so the eigenvalue is within ~1e-15 of the exact one, as LAPACK's
    would be; sweeps stop once every off-diagonal entry is below float64's resolution of the
    geometric mean of its two diagonal entries (then it moves no eigenvalue by more than
    that), quadratic convergence gets there in about five.  The screen compares with a
    tolerance of 1e-6, the grading uses the order of magnitude only (and the floor
    2^-52 below it)."""
    A = np.eye(4)
    for k in range(6):
        if not math.isfinite(r[k]):
            return -math.inf
        a, b = PAIRS[k]
        A[a, b] = r[k]
        A[b, a] = r[k]
    for _sweep in range(50):
        rotated = False
        for p in range(3):
            for q in range(p + 1, 4):
                apq = A[p, q]
                if abs(apq) <= 1.1e-16 * math.sqrt(abs(A[p, p] * A[q, q])) or apq == 0.0:
                    A[p, q] = A[q, p] = 0.0
                    continue
                rotated = True
                # the rotation that zeroes A[p, q] (Rutishauser's form: the smaller angle,
                # updates as corrections)
                theta = 0.5 * (A[q, q] - A[p, p]) / apq
                t = 1.0 / (abs(theta) + math.sqrt(theta * theta + 1.0)) if abs(theta) < 1e150 \
                    else 0.5 / abs(theta)
                if theta < 0.0:
                    t = -t
                c = 1.0 / math.sqrt(t * t + 1.0)
                s = t * c
                tau = s / (1.0 + c)
                A[p, p] -= t * apq
                A[q, q] += t * apq
                A[p, q] = A[q, p] = 0.0
                for j in range(4):
                    if j != p and j != q:
                        g, h = A[j, p], A[j, q]
                        A[j, p] = A[p, j] = g - s * (h + g * tau)
                        A[j, q] = A[q, j] = h + s * (g - h * tau)
        if not rotated:
            break
    return min(A[0, 0], A[1, 1], A[2, 2], A[3, 3])


@njit(nogil=True)
def _rule(m, edges, x, w):
    """∫_0^1 of the integrand over the panels between ``edges``, the rule (x, w) on [-1, 1] in
    each panel."""
    total = 0.0
    for p in range(len(edges) - 1):
        half = 0.5 * (edges[p + 1] - edges[p])
        part = 0.0
        for i in range(x.shape[0]):
            part += w[i] * _ray_integrand(m, edges[p] + half * (x[i] + 1.0), _sqrt, _asin,
                                          math.pi, _unit)
        total += half * part
    return total


@njit(cache=True, nogil=True)
def p4(r, tol):
    """(P4 by the fine rule, |fine - coarse|, smallest eigenvalue) of the six correlations
    ``r`` (a tuple); NaN for P4 when the matrix is further than ``tol`` outside the cone or not
    finite (the caller refuses it by the eigenvalue)."""
    low = smallest_eigenvalue(r)
    if not low >= -tol:
        return math.nan, math.nan, low
    # panels down to sqrt of the smallest eigenvalue, and to sqrt(float64's eigenvalue
    # resolution) at most: below it the matrix is singular to rounding
    edges = _grading(max(low, 0.0), 2.0 ** -52, 2, 1)
    m = _minors(r, _clamp, _sqrt, _clip)
    fine = 1.0 / 16 + _rule(m, edges, _FINE_X, _FINE_W)
    coarse = 1.0 / 16 + _rule(m, edges, _COARSE_X, _COARSE_W)
    return fine, abs(fine - coarse), low


@njit(cache=True, nogil=True)
def canonical(r):
    """orthant_ray.canonical, compiled (a kernel of this module, so that it is cached)."""
    return _canonical(r)


@njit(cache=True, nogil=True)
def p4_many(r0, r1, r2, r3, r4, r5, tol, out, diff, low):
    """``p4`` of every entry of the six flat arrays of correlations, into out, diff, low."""
    for i in range(r0.shape[0]):
        out[i], diff[i], low[i] = p4(canonical((r0[i], r1[i], r2[i], r3[i], r4[i], r5[i])), tol)


numba_kernels(globals(), dependencies=(_ray.__file__,))
