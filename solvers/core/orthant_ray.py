"""Plackett's ray for the four-field orthant probability P4 (solvers/core/orthant.py): its
derivative along the ray, the minors and the integrand in s = sqrt(1 - t), and the grading of the
quadrature panels, written once for every arithmetic.

The arithmetic comes in as arguments (``sqrt``, ``asin``, ``pi``, ``clamp``, ``clip``): mpmath
and python-flint call these functions in Python, the float64 path compiles the same functions
with numba (solvers/core/orthant_jit.py), so they use nothing numba cannot compile (no dicts,
no isinstance, scalars only).  A leaf module: it imports nothing of the package.
"""
from __future__ import annotations

import itertools
import math

PAIRS = ((0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3))
# per pair of PAIRS, the other two fields; and the position in PAIRS of the pair (a, b), either
# order (tuples, not a dict: numba compiles the functions below)
OTHERS = ((2, 3), (1, 3), (1, 2), (0, 3), (0, 2), (0, 1))
INDEX = ((-1, 0, 1, 2), (0, -1, 3, 4), (1, 3, -1, 5), (2, 4, 5, -1))
# the 24 relabellings of the four fields, under which P4 is invariant
RELABELLINGS = tuple(itertools.permutations(range(4)))


def canonical(r):
    """The correlations of the relabelling of the four fields that is first in lexicographic
    order: one representative of the 24 orderings of the same four fields (P4 is the same for
    all of them), so that P4 computed from it is the same number for every ordering."""
    best = r
    for p in RELABELLINGS:
        a, b, c, d = p
        t = (r[INDEX[a][b]], r[INDEX[a][c]], r[INDEX[a][d]], r[INDEX[b][c]],
             r[INDEX[b][d]], r[INDEX[c][d]])
        if t < best:
            best = t
    return best


def ray_derivative(r, t, sqrt, asin, pi):
    """d/dt P4(t r) = Σ_ab r_ab dP4/dr_ab(t r), in the arithmetic of the given functions."""
    s = [t * x for x in r]
    total = 0
    for k, (a, b) in enumerate(PAIRS):
        c, d = OTHERS[k]
        rab = s[k]
        rca, rcb, rda, rdb = s[INDEX[c][a]], s[INDEX[c][b]], s[INDEX[d][a]], s[INDEX[d][b]]
        rcd = s[INDEX[c][d]]
        one = 1 - rab * rab
        num = rcd * one - (rca * rda + rcb * rdb - rab * (rca * rdb + rcb * rda))
        vc = one - (rca * rca + rcb * rcb - 2 * rab * rca * rcb)
        vd = one - (rda * rda + rdb * rdb - 2 * rab * rda * rdb)
        rc = num / (sqrt(vc) * sqrt(vd))
        total = total + r[k] * (0.25 + asin(rc) / (2 * pi)) / (2 * pi * sqrt(one))
    return total


def minors(r, clamp, sqrt, clip):
    """Per pair (a, b) of PAIRS: the minors of the correlation matrix R that make the minors of
    S(u) = (1 - u) R + u I polynomials in u without cancellation near u = 0 (t = 1 - u on
    Plackett's ray).  ``clamp(x)`` = max(x, 0), ``clip(x, m)`` clips x into [-m, m]: the
    principal minors are kept non-negative and the three-field ones below the two-field ones
    they contain, and the cofactor within Cauchy–Schwarz of the two it couples, as they are for
    every positive semi-definite R.  A rank-deficient R (aligned fields, the end of learning)
    then gives exactly zero minors rather than a rounding residue of either sign, and the
    integrand stays analytic at s = 0.  Scalars only (the float64 kernels loop over arrays)."""
    out = []
    for k, (a, b) in enumerate(PAIRS):
        c, d = OTHERS[k]
        rab = r[k]
        rca, rcb, rda, rdb = r[INDEX[c][a]], r[INDEX[c][b]], r[INDEX[d][a]], r[INDEX[d][b]]
        rcd = r[INDEX[c][d]]
        d2 = clamp((1 - rab) * (1 + rab))
        m_ac, m_bc = clamp((1 - rca) * (1 + rca)), clamp((1 - rcb) * (1 + rcb))
        m_ad, m_bd = clamp((1 - rda) * (1 + rda)), clamp((1 - rdb) * (1 + rdb))
        d3c = clip(clamp((1 - rab * rab) - (rca * rca + rcb * rcb - 2 * rab * rca * rcb)),
                   min(d2, m_ac, m_bc))
        d3d = clip(clamp((1 - rab * rab) - (rda * rda + rdb * rdb - 2 * rab * rda * rdb)),
                   min(d2, m_ad, m_bd))
        cof3 = clip((1 - rab * rab) * rcd - (rca * rda + rcb * rdb - rab * (rca * rdb + rcb * rda)),
                    sqrt(d3c * d3d))
        cof2 = (rcd - rdb * rcb) + (rcd - rda * rca)
        out.append((rab, d2, d3c, d2 + m_ac + m_bc, d3d, d2 + m_ad + m_bd, cof3, cof2, rcd))
    return out


def ray_integrand(minors, s, sqrt, asin, pi, clip=None):
    """The integrand of P4 = 1/16 + ∫_0^1 (...) ds after t = 1 - s² on Plackett's ray.

    At t = 1 - u the minors of t R + (1 - t) I are polynomials in u whose coefficients are
    minors of R (``minors``), so nothing cancels as u -> 0; the substitution u = s² turns the
    square-root end-point singularity of a singular R into an analytic integrand in s, and the
    near-singular case into singularities at distance ~ sqrt(smallest eigenvalue) from s = 0,
    which the callers' rules grade towards.  ``clip``: clamps the partial correlation into
    [-1, 1] against rounding (float and mpmath contexts)."""
    u = s * s
    v = 1 - u
    v2 = v * v
    v3 = v2 * v
    total = 0
    for rab, d2, d3c, e2c, d3d, e2d, cof3, cof2, rcd in minors:
        one = d2 * v2 + u * (1 + v)
        vc = d3c * v3 + e2c * u * v2 + 3 * u * u * v + u * u * u
        vd = d3d * v3 + e2d * u * v2 + 3 * u * u * v + u * u * u
        num = cof3 * v3 + cof2 * u * v2 + rcd * u * u * v
        rc = num / (sqrt(vc) * sqrt(vd))
        if clip is not None:
            rc = clip(rc)
        # dt = 2 s ds; 2 s / sqrt(one) stays finite as s -> 0 when r_ab = ±1
        total = total + rab * (0.25 + asin(rc) / (2 * pi)) * (2 * s / sqrt(one)) / (2 * pi)
    return total


def grading(low: float, floor: float, ratio: int = 2, margin: int = 1) -> list[float]:
    """Split points of [0, 1] in s, shrinking by ``ratio`` towards 0 down to ~sqrt of the
    smallest eigenvalue (where the integrand's nearest singularities sit; ``margin`` more
    panels), and not below sqrt(floor): below the working precision's resolution the matrix is
    singular and the integrand analytic at s = 0.  A well-conditioned matrix gets one or two
    panels."""
    depth = 0.5 * math.log(1 / max(low, floor, 1e-300)) / math.log(ratio)   # numba: no base
    n = max(0, min(int(math.ceil(depth)) + margin, 400))
    return [0.0] + [float(ratio) ** -k for k in range(n, 0, -1)] + [1.0]
