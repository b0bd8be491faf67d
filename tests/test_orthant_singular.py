"""The four-field orthant probability at the end of learning: singular and nearly singular
correlation matrices (a student field aligned with a teacher field), in every number context.

Independent routes:
* a rank-deficient matrix is a Gaussian of fewer dimensions, whose orthant probability is
  Sheppard's closed form (two or three fields) or an elementary limit (1/2, 0);
* a nearly singular matrix against Plackett's integral in its original variable t, by
  tanh-sinh at 60 digits on panels graded towards t = 1 (the run-time routes integrate in
  s = sqrt(1 - t) with minors expanded in 1 - t: another variable and another integrand).
"""
from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from solvers.core import orthant as O
from solvers.core.numbers import context
from solvers.core.orthant_ray import ray_derivative

pytestmark = [pytest.mark.closed_form, pytest.mark.higher_precision]

KINDS = (("float64", None), ("mpmath", 30), ("flint", 30))


def _corr(F):
    """The six correlations (PAIRS order) of the fields F (rows), as exact decimal strings."""
    with mpmath.workdps(60):
        C = [[mpmath.fsum(a * b for a, b in zip(F[i], F[j], strict=True)) for j in range(4)]
             for i in range(4)]
        return [mpmath.nstr(C[a][b] / mpmath.sqrt(C[a][a] * C[b][b]), 50)
                for a, b in O.PAIRS]


def _value(kind, dps, r):
    ctx = context(kind, dps)
    with ctx:
        v = ctx.orthant4(*[ctx.convert(x) if kind != "float64" else float(mpmath.mpf(x))
                           for x in r])
    with mpmath.workdps(60):
        return mpmath.mpf(v.mid().str(50, radius=False)) if kind == "flint" else mpmath.mpf(v)


def _sheppard2(r):
    return mpmath.mpf(1) / 4 + mpmath.asin(r) / (2 * mpmath.pi)


def _sheppard3(r12, r13, r23):
    return mpmath.mpf(1) / 8 + (mpmath.asin(r12) + mpmath.asin(r13) + mpmath.asin(r23)) / (4 * mpmath.pi)


def _tol(kind):
    # float64: the minors of correlations carrying 1e-16 rounding, a few hundred ulps;
    # the arbitrary-precision contexts: their working precision (30 digits) less two
    return 1e-14 if kind == "float64" else 1e-28


def _cases():
    """(name, correlations, exact P4 as a function of them).  The singular ones are given
    exactly (entries ±1 and repeated values), so that they stay singular in every context:
    at a singular matrix P4 moves by ~sqrt(perturbation) (the probability that two opposite
    fields are both positive grows like the square root of the gap between them), so rounded
    inputs would test the inputs' rounding, not the reduction."""
    q, a, b, c = "0.3", "0.2", "-0.45", "0.1"
    neg = {x: "-" + x if not x.startswith("-") else x[1:] for x in (a, b)}
    with mpmath.workdps(60):
        y1 = [mpmath.mpf(v) for v in ("1", "0.2", "-0.3")]
        y2 = [mpmath.mpf(v) for v in ("0.4", "1", "0.5")]
        w = [mpmath.mpf(v) for v in ("-0.2", "0.3", "1")]
    return [
        # end of learning, K = M = 2: x1 = y1, x2 = y2 (fields x1, x2, y1, y2) -> P(y1, y2 > 0)
        ("aligned pairs", [q, "1", q, q, "1", q], lambda r: _sheppard2(r[PAIR[(0, 1)]])),
        # three copies of one field (z1 = z2 = z4) and another: P(z1 > 0, z3 > 0)
        ("three copies", ["1", q, "1", q, "1", q], lambda r: _sheppard2(r[PAIR[(0, 2)]])),
        ("one field", ["1"] * 6, lambda r: mpmath.mpf(1) / 2),
        # z2 = -z1: the orthant is empty
        ("opposite", ["-1", a, b, neg[a], neg[b], c], lambda r: mpmath.mpf(0)),
        # z4 = z1 + z2 is positive whenever z1 and z2 are: P(z1, z2, z3 > 0), rank 3 (not on
        # the orthant's boundary: rounded inputs move P4 by their square only)
        ("implied", _corr([y1, y2, w, [x + y for x, y in zip(y1, y2, strict=True)]]),
         lambda r: _sheppard3(r[PAIR[(0, 1)]], r[PAIR[(0, 2)]], r[PAIR[(1, 2)]])),
    ]


PAIR = {p: k for k, p in enumerate(O.PAIRS)}


@pytest.mark.parametrize("kind,dps", KINDS)
def test_rank_deficient_matrices_reduce_to_fewer_fields(kind, dps):
    for name, r, exact in _cases():
        with mpmath.workdps(60):
            want = exact([mpmath.mpf(x) for x in r])
        got = _value(kind, dps, r)
        tol = _tol(kind)
        if name == "implied" and kind != "float64":
            # its correlations carry 30 digits, so the matrix is rank 3 only to 1e-30; given
            # z1 = z2 = 0 the variance of z4 then vanishes and P4 moves by ~sqrt(1e-30)
            tol = 10.0 ** (-dps / 2)
        assert abs(got - want) < tol, (name, kind, got, want)


def _plackett_t(r, gap):
    """P4 by Plackett's integral in t at 45 digits (the reference route), on panels halving
    towards t = 1 down to below the gap (the integrand's singularities sit ~gap beyond t = 1)."""
    with mpmath.workdps(45):
        rr = [mpmath.mpf(x) for x in r]
        depth = int(math.log2(1 / float(gap))) + 8
        pts = [0] + [1 - mpmath.mpf(2) ** -k for k in range(1, depth)] + [1]
        return mpmath.mpf(1) / 16 + mpmath.quad(
            lambda t: ray_derivative(rr, t, mpmath.sqrt, mpmath.asin, mpmath.pi), pts)


@pytest.mark.parametrize("gap", ["1e-4", "1e-8", "1e-12"])
def test_nearly_aligned_fields_against_plackett_in_t(gap):
    """x_i = y_i + sqrt(gap) d_i: the smallest eigenvalue of the correlation matrix ~ gap."""
    with mpmath.workdps(60):
        y1 = [mpmath.mpf(v) for v in ("1", "0.2", "-0.3", "0.1")]
        y2 = [mpmath.mpf(v) for v in ("0.4", "1", "0.5", "-0.2")]
        d1 = [mpmath.mpf(v) for v in ("0.3", "-0.5", "0.2", "0.7")]
        d2 = [mpmath.mpf(v) for v in ("-0.1", "0.4", "0.6", "0.3")]
        e = mpmath.sqrt(mpmath.mpf(gap))
        F = [[a + e * b for a, b in zip(y1, d1, strict=True)],
             [a + e * b for a, b in zip(y2, d2, strict=True)], y1, y2]
    r = _corr(F)
    want = _plackett_t(r, gap)
    for kind, dps in KINDS[:2]:         # flint integrates nearly aligned fields with mpmath
        got = _value(kind, dps, r)
        # the inputs' rounding (1e-16 in float64, 1e-30 at 30 digits) moves P4 by that over
        # sqrt(gap) (its gradient grows like 1/sqrt(1 - r²)); the minors' own rounding adds as
        # much again
        ulp = 1e-16 if kind == "float64" else 1e-30
        tol = 100 * ulp + 10 * ulp / math.sqrt(float(gap))
        assert abs(got - want) < tol, (kind, gap, got, want)


def test_float64_arrays_mix_singular_and_regular_states():
    r_sing = [float(mpmath.mpf(x)) for x in _cases()[0][1]]
    r_reg = [0.3, 0.1, -0.2, 0.25, 0.4, 0.05]
    got = O.orthant4_float(*[np.array([a, b]) for a, b in zip(r_sing, r_reg, strict=True)])
    one = [O.orthant4_float(*r_sing), O.orthant4_float(*r_reg)]
    assert np.max(np.abs(got - one)) < 1e-15


def test_a_matrix_outside_the_cone_is_still_refused():
    bad = [0.99, 0.9, -0.9, 0.9, -0.9, 0.5]          # smallest eigenvalue about -1.1
    for kind, dps in KINDS[:2]:
        ctx = context(kind, dps)
        with ctx, pytest.raises(ValueError, match="not positive semi-definite"):
            ctx.orthant4(*[ctx.convert(x) for x in bad])
    with pytest.raises(ValueError, match="not positive semi-definite"):
        O.orthant4_float(np.array([0.3, 0.99]), *[np.array([0.1, x]) for x in bad[1:]])
