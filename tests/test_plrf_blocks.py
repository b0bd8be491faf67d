"""The compressed sums of the deterministic equivalent against the plain term-by-term sums.

Reference: the same Σ_j evaluated term by term (``compress=False``, every σ_j explicitly) — a
second evaluation of the same quantity that shares no code with the block moments.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from solvers.theory.plrf import kernels, size_curve
from solvers.theory.plrf import recursion as R
from solvers.theory.plrf.blocks import TAU, Blocks
from solvers.theory.plrf.deterministic import _stieltjes_on_grid, _Sums, _cutoff, equivalent
from solvers.theory.plrf.model import Problem

pytestmark = [pytest.mark.second_basis]

EPS = np.finfo(float).eps
INF = math.inf


def _plain_pair(s, sig):
    q = sig / (1.0 + sig * s)
    return q.sum(), (q * q).sum(), np.abs(q).sum(), (np.abs(q) ** 2).sum()


@pytest.mark.parametrize("alpha, n", [(1.0, 4000), (0.6, 20000), (0.4, 40000), (1.5, 8000)])
def test_block_sums_match_plain_sums(alpha, n):
    """At s across the regimes the blocks meet (|s|σ ≫ 1 and ≪ 1 inside the compressed range,
    s just above −1/σ_j of a compressed j, i.e. a pole next to the real j axis) both sums agree
    within the stated bound: TAU of Σ|term| for the truncation plus n·ε·Σ|term| for the
    worst-case rounding of either sequential sum."""
    sig = np.arange(1, n + 1, dtype=float) ** (-2 * alpha)
    blk = Blocks(sig, alpha)
    assert blk.j0 < n // 4 and blk.c_first.size > 0          # the range is compressed
    b1, b2 = blk.pack(sig), blk.pack(sig ** 2)
    w = sig ** 2 * np.linspace(1.0, 2.0, n)                   # a second weight for `weighted`
    bw = blk.pack(w)
    pts = []
    for j in (blk.j0 + 5, n // 3, n - 10):
        # s·σ_j = −scale(1 − i·im): a pole at j itself (scale 1) or at a j where σ is 1000×,
        # 3× smaller or larger; plus a point with |s|σ ≪ 1 over the whole compressed range
        for scale in (1e-3, 0.3, 1.0, 3.0, 1e3):
            for im in (1e-9, 1e-3, 0.5):
                pts.append(scale / sig[j] * complex(-1.0, im))
        pts.append(1e-3 / sig[j] * complex(0.3, 0.1))
    tol = TAU + 2 * n * EPS
    for s in pts:
        f0, f1 = kernels.resolvent(s, sig, b1, b2, 1.0, np.zeros(0), np.zeros(0), 0.0)
        p0, p1, a0, a1 = _plain_pair(s, sig)
        assert abs(f0 - p0) <= tol * a0, (s, abs(f0 - p0) / a0)
        assert abs(f1 - p1) <= tol * a1, (s, abs(f1 - p1) / a1)
        g = kernels.weighted(np.array([s]), sig, w, bw)[0]
        ref = w / (1.0 + sig * s)
        assert abs(g - ref.sum()) <= tol * np.abs(ref).sum(), s


@pytest.mark.parametrize("alpha, beta, v, d", [
    (1.0, 0.7, INF, 1000), (0.6, 0.8, INF, 400), (1.0, 1.5, INF, 600), (0.4, 0.7, 1600, 400)])
def test_fast_equivalent_matches_plain(alpha, beta, v, d):
    """The fast route's roots solve the plain equation, and its cells and curve agree."""
    pb = Problem(alpha, beta, v, d, 1, 1.0)
    pb = Problem(alpha, beta, v, d, 1, 0.5 / float(_Sums(pb, _cutoff(pb)).total("sig")))
    g_fast = _stieltjes_on_grid(alpha, v, d, 250, 1000, True)
    g_ref = _stieltjes_on_grid(alpha, v, d, 250, 1000, False)
    c0, x, s_fast, c0_p, x_p, s_ref = g_fast.c0, g_fast.x, g_fast.s, g_ref.c0, g_ref.x, g_ref.s
    # the grid hangs on the spectrum's lower edge, a root of the (compressed) slope: it moves
    # by a few ulps at most
    assert np.max(np.abs(x / x_p - 1)) < 1e-12 and c0 == c0_p
    assert g_fast.J == g_ref.J
    plain = _Sums(Problem(alpha, 1.0, v, d), g_fast.J, compress=False)
    assert plain.blocks.j0 == plain.sig.size
    inv_d, tails = 1.0 / d, plain.tails()
    b1, b2 = plain.packed

    def in_plain(xk, sk):
        z = xk * (1 + 1e-7j)
        f0, f1 = kernels.resolvent(complex(sk), plain.sig, b1, b2, inv_d, *tails)
        return abs((1.0 / sk + z - f0) * sk), abs(z - f0 + sk * f1)

    worst = 0.0
    for k in range(x.size):
        # the fast root in the plain equation: the accepted residual (kernels.TOL) plus the
        # blocks' perturbation of (1/d)Σ, (TAU + J·ε) of its absolute sum (≤ |s|·Σ/d ≤ 2 here)
        resid, deriv = in_plain(x[k], s_fast[k])
        assert resid <= kernels.TOL + 2 * (TAU + plain.sig.size * EPS), (k, resid)
        # first-order distance of two roots each within that residual of the same equation:
        # |Δs| ≤ (r₁ + r₂)/|∂(s·f)/∂s|, ∂(s·f)/∂s = z − f0 + s·f1; a factor 3 for the second order
        bound = 3 * 2 * (kernels.TOL + 2 * (TAU + plain.sig.size * EPS)) / deriv
        worst = max(worst, abs(s_fast[k] - s_ref[k]) / bound)
    # the bisected cells: the same leaves (the counts that decide a bisection agree to ~1e-12),
    # and each pair of roots as close as their residuals in the plain equation allow
    assert g_fast.leaf_x.shape == g_ref.leaf_x.shape
    assert np.max(np.abs(g_fast.leaf_x / g_ref.leaf_x - 1)) < 1e-12
    leaf_rel = 0.0
    for k in range(g_fast.leaf_x.size):
        r1, deriv = in_plain(g_fast.leaf_x[k], g_fast.leaf_s[k])
        r2, _ = in_plain(g_ref.leaf_x[k], g_ref.leaf_s[k])
        bound = 3 * (r1 + r2 + 4 * (TAU + plain.sig.size * EPS)) / deriv
        worst = max(worst, abs(g_fast.leaf_s[k] - g_ref.leaf_s[k]) / bound)
        leaf_rel = max(leaf_rel, bound / abs(g_fast.leaf_s[k]))
    assert worst <= 1.0, worst
    fast, ref = equivalent(pb, compress=True), equivalent(pb, compress=False)
    assert fast.p_star == ref.p_star
    rs = np.unique(np.geomspace(1, 1e8, 30).astype(np.int64))
    p_f = R.loss_curve(fast.spectrum, pb.gamma, 1, rs, rtol=1e-9)["loss"]
    p_r = R.loss_curve(ref.spectrum, pb.gamma, 1, rs, rtol=1e-9)["loss"]
    # p(r) is a sum of non-negative cell terms, each moved by the relative change of its cell:
    # the per-leaf bound above, largest at the lower edge where the density has its square-root
    # zero (bisected leaves come closer to it than the base cells: ~1e-9 there), or the closed
    # form's own rtol 1e-9
    assert np.max(np.abs(p_f / p_r - 1)) < max(1e-9, 2 * leaf_rel), \
        (np.max(np.abs(p_f / p_r - 1)), leaf_rel)


@pytest.mark.contract
def test_sizing_follows_the_compressed_cost():
    """d = 10⁴, v = ∞ (seconds now) passes the estimate; a finite v whose arrays of length v
    alone exceed the memory limit is refused before any work, naming v."""
    size_curve(Problem(1.0, 0.7, INF, 10_000, 1, 0.1), "deterministic", 60)
    size_curve(Problem(1.0, 0.7, 10 ** 6, 1000, 1, 0.1), "deterministic", 60)
    with pytest.raises(ValueError, match="lower v"):
        size_curve(Problem(1.0, 0.7, 10 ** 8, 10_000, 1, 0.1), "deterministic", 60)
