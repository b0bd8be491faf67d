"""The fused residual / gradient loop of the HMC potential (numba, one thread).

The potential of :mod:`.sampling` costs two matrix products (pre-activations H = X Wᵀ and the
gradient Gᵀ X, done by BLAS) and an element-wise pass over the n × (chains·k) pre-activations
in between.  In numpy that pass is about ten array operations, each a full sweep over a
6 MB array at d = 80; here it is one sweep that keeps a row of k pre-activations in cache,
computes the row's residual r, its square, and the row of the gradient factor
G = r v dσ(z) / (√d Δ).

Layout (chosen so that both products are single GEMMs over all chains): H is (n, c·k) with
chain ch's units in columns ch·k … ch·k + k − 1.
"""
from __future__ import annotations

import math

from numba import njit

_SQ6 = math.sqrt(6.0)
_C3 = 1.0 / _SQ6            # σ(z) = (z³ − 3z)/√6
_D3 = 3.0 / _SQ6            # σ'(z) = 3(z² − 1)/√6


@njit(cache=True, nogil=True)
def residual_gradient(H, y, v, chains, scale, gscale, G, R2):
    """Fill G (n, chains·k) with r_ch(x) v_j σ'(z) · gscale and R2 (chains,) with Σ_x r_ch(x)²,
    where z = scale · H and r_ch(x) = Σ_j v_j σ(z_{ch,j}) − y."""
    n = H.shape[0]
    k = v.shape[0]
    for ch in range(chains):
        R2[ch] = 0.0
    for i in range(n):
        yi = y[i]
        for ch in range(chains):
            b = ch * k
            r = -yi
            for j in range(k):
                z = H[i, b + j] * scale
                r += v[j] * ((z * z - 3.0) * z * _C3)
            R2[ch] += r * r
            f = r * gscale
            for j in range(k):
                z = H[i, b + j] * scale
                G[i, b + j] = f * v[j] * ((z * z - 1.0) * _D3)


from solvers.core.artifacts import numba_kernels  # noqa: E402

numba_kernels(globals())     # compiled code under the cache of generated artifacts
