"""The float64 orthant probability P4 compiled with numba (solvers/core/orthant_jit.py): its values,
its smallest eigenvalue, its canonical ordering and memo, its refusals.

Independent routes:
* closed forms: independent fields 1/16; exchangeable r = 1/2: 1/5; block-diagonal (two
  independent pairs): the product of Sheppard's 1/4 + asin(r)/(2π); aligned pairs (x1 = y1,
  x2 = y2, rank 2): Sheppard's form of the two distinct fields;
* orthant4_mpmath at 30 digits on the same float64 inputs (tanh-sinh with its error estimate, in
  another arithmetic: the compiled rules, grading and rounding are what differ);
* the smallest eigenvalue against mpmath's symmetric eigensolver at 30 digits.
"""
from __future__ import annotations

import itertools
import math
from pathlib import Path

import mpmath
import numpy as np
import pytest

from solvers.core import orthant as O
from solvers.core.artifacts import numba_dir
from solvers.core.numbers import context

pytestmark = [pytest.mark.closed_form, pytest.mark.higher_precision]

U = 2.0 ** -53              # float64's unit roundoff

# |float64 - exact| of an O(1) integral summed over at most 28 panels x 27 nodes x 6 terms, each
# term carrying a few units of rounding: measured <= 2e-17 on well-conditioned matrices and
# the closed forms, 1e-13 allows for the worst-case sum of the rounding errors
WELL = 1e-13


def _corr(F):
    """The six correlations (PAIRS order) of the rows of F, rounded to float64."""
    C = F @ F.T
    s = np.sqrt(np.diag(C))
    C = C / np.outer(s, s)
    return tuple(float(C[a, b]) for a, b in O.PAIRS)


def _fresh(r):
    """P4 in float64 with the memo cleared (a computation, not a look-up)."""
    O._MEMO.clear()
    return O.orthant4_float(*r)


def _mp(r, dps=30):
    with mpmath.workdps(dps):
        return O.orthant4_mpmath(*[mpmath.mpf(x) for x in r])


def _sheppard(r):
    return 0.25 + math.asin(r) / (2 * math.pi)


def _closed_forms():
    out = [pytest.param((0.0,) * 6, 1 / 16, id="independent"),
           pytest.param((0.5,) * 6, 1 / 5, id="exchangeable 1/2")]
    for r12, r34 in ((0.3, -0.7), (0.95, 0.2), (-0.999, 0.5)):
        out.append(pytest.param((r12, 0.0, 0.0, 0.0, 0.0, r34), _sheppard(r12) * _sheppard(r34),
                                id=f"blocks {r12} {r34}"))
    for q in (0.3, -0.6):
        # fields x1, x2, y1, y2 with x1 = y1, x2 = y2 and corr(y1, y2) = q
        out.append(pytest.param((q, 1.0, q, q, 1.0, q), _sheppard(q), id=f"aligned pairs {q}"))
    return out


@pytest.mark.parametrize("r,exact", _closed_forms())
def test_closed_forms_scalar_and_array(r, exact):
    assert abs(_fresh(r) - exact) < WELL
    got = O.orthant4_float(*[np.full(3, x) for x in r])
    assert got.shape == (3,) and np.all(np.abs(got - exact) < WELL)
    zero_d = O.orthant4_float(*[np.asarray(x) for x in r])      # 0-d arrays: a float back
    assert isinstance(zero_d, float) and abs(zero_d - exact) < WELL


def test_random_matrices_against_mpmath_at_30_digits():
    rng = np.random.default_rng(2024)
    for _ in range(4):
        r = _corr(rng.standard_normal((4, 6)))
        assert abs(_fresh(r) - _mp(r)) < WELL, r


# P4 is a function of the correlations whose gradient grows like 1/sqrt(smallest eigenvalue)
# near a singular matrix (the probability that two nearly equal fields are both positive moves
# by the square root of their gap), and the float64 minors of the (exact) float64 inputs
# carry a few units of rounding: the error is ~ C u / sqrt(max(smallest eigenvalue, u)).
# Measured C <= 65 over 120 random nearly aligned matrices with eigenvalues 1e-16 .. 1e-2
# (largest near 1e-11; the NumPy implementation before the compiled one has the same worst
# cases to three digits: the inputs' conditioning, not the quadrature), so 250.
C_NEAR = 250


@pytest.mark.parametrize("gap", [1e-5, 1e-9, 1e-13])
def test_nearly_aligned_fields_against_mpmath(gap):
    rng = np.random.default_rng(int(-math.log10(gap)))
    Y, D = rng.standard_normal((2, 6)), rng.standard_normal((2, 6))
    r = _corr(np.vstack([Y + math.sqrt(gap) * D, Y]))
    low = O._kernels().smallest_eigenvalue(r)
    assert 0 < low < 10 * gap
    tol = WELL + C_NEAR * U / math.sqrt(max(low, U))
    assert abs(_fresh(r) - _mp(r)) < tol, (gap, low)


def test_smallest_eigenvalue_against_mpmath():
    """Jacobi's rotations are backward stable: the eigenvalue of a matrix within a few units of
    rounding of R (norm <= 4), so within ~1e-15 of the exact one; 1e-14 allows 20 units."""
    rng = np.random.default_rng(5)
    cases = [_corr(rng.standard_normal((4, 6))) for _ in range(3)]
    Y, D = rng.standard_normal((2, 6)), rng.standard_normal((2, 6))
    cases += [_corr(np.vstack([Y + 1e-5 * D, Y])), (0.3, 1.0, 0.3, 0.3, 1.0, 0.3),
              (0.99, 0.9, -0.9, 0.9, -0.9, 0.5), (0.0,) * 6, (1.0,) * 6]
    for r in cases:
        R = mpmath.eye(4)
        for (a, b), x in zip(O.PAIRS, r, strict=True):
            R[a, b] = R[b, a] = mpmath.mpf(x)
        with mpmath.workdps(30):
            want = min(mpmath.eigsy(R, eigvals_only=True))
        assert abs(O._kernels().smallest_eigenvalue(r) - want) < 1e-14, r
    assert O._kernels().smallest_eigenvalue((0.1, math.nan, 0.0, 0.0, 0.0, 0.0)) == -math.inf


def test_every_ordering_gives_the_same_number_and_the_memo_returns_it():
    """P4 is invariant under relabelling the four fields; computed from the canonical
    ordering, every ordering gives the same float, fresh, from the memo or in an array."""
    r = _corr(np.random.default_rng(9).standard_normal((4, 6)))
    pair = {p: k for k, p in enumerate(O.PAIRS)}
    orders = [tuple(r[pair[tuple(sorted((p[a], p[b])))]] for a, b in O.PAIRS)
              for p in itertools.permutations(range(4))]
    assert len(set(orders)) == 24                      # 24 different argument lists
    values = {_fresh(x) for x in orders}
    assert len(values) == 1
    O._MEMO.clear()
    assert {O.orthant4_float(*x) for x in orders} == values     # the first computes, then hits
    assert len(O._MEMO) == 1
    arrays = O.orthant4_float(*[np.array(col) for col in zip(*orders, strict=True)])
    assert set(arrays.tolist()) == values
    assert abs(values.pop() - _mp(r)) < WELL


BAD = (0.99, 0.9, -0.9, 0.9, -0.9, 0.5)       # smallest eigenvalue about -1.1


@pytest.mark.parametrize("r,message", [
    (BAD, "not positive semi-definite"),
    ((0.3, math.nan, 0.1, 0.2, 0.0, 0.1), "a correlation is not finite"),
    ((0.3, math.inf, 0.1, 0.2, 0.0, 0.1), "a correlation is not finite"),
])
def test_refusals_scalar_and_array(r, message):
    for _ in range(2):                         # a refusal is not remembered: refused again
        with pytest.raises(ValueError, match=message):
            O.orthant4_float(*r)
    good = (0.3, 0.1, -0.2, 0.25, 0.4, 0.05)
    with pytest.raises(ValueError, match=message):
        O.orthant4_float(*[np.array([g, x]) for g, x in zip(good, r, strict=True)])


def test_rules_that_differ_are_refused(monkeypatch):
    monkeypatch.setattr(O, "FLOAT64_TOL", 0.0)
    r = (0.99, 0.5, 0.5, 0.5, 0.5, 0.3)
    O._MEMO.clear()
    with pytest.raises(ValueError, match="float64 quadrature rules differ by"):
        O.orthant4_float(*r)
    with pytest.raises(ValueError, match="float64 quadrature rules differ by"):
        O.orthant4_float(*[np.full(2, x) for x in r])


def test_the_float64_context_calls_the_compiled_kernels_cached_with_the_artifacts():
    ctx = context("float64")
    r = (0.3, 0.1, -0.2, 0.25, 0.4, 0.05)
    assert ctx.orthant4(*r) == _fresh(r)
    kernels = O._kernels()
    for kernel in (kernels.p4, kernels.p4_many, kernels.canonical, kernels.smallest_eigenvalue):
        assert Path(kernel._cache._cache_path).is_relative_to(numba_dir()), kernel
