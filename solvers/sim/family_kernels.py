"""numba step loop of the committee-machine family (solvers/sim/family.py): any activation pair,
readouts, trained readout, label noise, weight decay, mini-batches, per-step learning rates.

Today's model keeps its own kernels (kernels.py, csrc/sgd_rows.c), bit for bit as before; this
loop runs every other variant, row layout, every generator.  It draws the inputs from the same
stream as they do (sample t of the run, counted over all batch members, is the t-th block of
N normals), so at batch size 1 it follows the same trajectory up to rounding
(tests/test_sim_family.py checks it against the original kernels and against the literal NumPy
loop of ``naive_simulate``).

Two loops: at batch size 1 ``family_steps_fused`` does what today's kernels do, drawing the
next sample before the update and fusing the update of each row with that row's next field (J
is read once per step; the current sample and its fields are carried between calls, so the
stream does not depend on how steps are split into calls); with B > 1 ``family_steps`` draws
each sample, takes its fields, accumulates the B gradients and then updates J (two passes).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from solvers.core.artifacts import numba_kernels
from solvers.sim import kernels as _kernels
from solvers.sim.kernels import _dot_simd, _draw, _hand_back

_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


@njit(cache=True, nogil=True)
def _g(code, c, x):
    """Activation code 0 erf(x/sqrt2), 1 linear, 2 relu, 3 polynomial sum c_k x^k."""
    if code == 0:
        return math.erf(x * _INV_SQRT2)
    if code == 1:
        return x
    if code == 2:
        return x if x > 0.0 else 0.0
    r = 0.0
    for k in range(c.shape[0] - 1, -1, -1):
        r = r * x + c[k]
    return r


@njit(cache=True, nogil=True)
def _gprime(code, dc, x):
    if code == 0:
        return _SQRT_2_OVER_PI * math.exp(-0.5 * x * x)
    if code == 1:
        return 1.0
    if code == 2:
        return 1.0 if x > 0.0 else 0.0
    r = 0.0
    for k in range(dc.shape[0] - 1, -1, -1):
        r = r * x + dc[k]
    return r


@njit(cache=True, nogil=True, inline="always")     # inlined: no call per sample in the loops
def _clean_error(v, u, x, y, sc, scf, tc, tcf):
    """zeta - sigma of one sample from its fields x (student), y (teacher), before label noise."""
    sig = 0.0
    for i in range(x.shape[0]):
        sig += v[i] * _g(sc, scf, x[i])
    zeta = 0.0
    for n in range(y.shape[0]):
        zeta += u[n] * _g(tc, tcf, y[n])
    return zeta - sig


@njit(cache=True, nogil=True, fastmath={"reassoc"})
def _axpy_scaled(Ji, d, c, z, n):
    """Ji[:n] = d Ji[:n] + c z[:n]."""
    for a in range(n):
        Ji[a] = d * Ji[a] + c * z[a]


@njit(cache=True, nogil=True, fastmath={"reassoc"})
def _axpy(Gi, c, z, n):
    for a in range(n):
        Gi[a] += c * z[a]


@njit(cache=True, nogil=True)
def family_steps(gen, rng, state, bits, J, B, s, n_tr, etas, kappa, v, u, eta_v, kappa_v,
                 trained, noise, bsz, sc, sdc, scf, tc, tcf, z, x, y, G, dv):
    """len(etas) SGD steps in place on J (K, N) (and v with ``trained``); row layout.

    etas: the learning rate of each step; kappa, kappa_v: weight decay of J and of a trained
    v (v_i <- v_i (1 - eta_v kappa_v / N) + ...); noise: sqrt(noise variance) * eps for each sample of
    these steps (len(etas) * bsz values) or an empty array; sc, scf / tc, tcf: activation codes
    and float64 coefficients of student / teacher (sdc: coefficients of g_s'); G (K, N), dv (K,)
    scratch.  Returns -1, or the step at which a field or the error became non-finite.
    """
    K = J.shape[0]
    M = B.shape[0]
    N = z.shape[0]
    isq = 1.0 / math.sqrt(N)
    has_noise = noise.shape[0] > 0
    dv_decay = 1.0 - eta_v * kappa_v / N
    for t in range(etas.shape[0]):
        eta = etas[t]
        d = 1.0 - eta * kappa / N
        if bsz > 1:
            for i in range(K):
                G[i, :n_tr] = 0.0
        for i in range(K):
            dv[i] = 0.0
        for mu in range(bsz):
            _draw(gen, rng, state, bits, s, z)
            for i in range(K):
                x[i] = _dot_simd(J[i], z) * isq
            for n in range(M):
                y[n] = _dot_simd(B[n], z) * isq
            delta = _clean_error(v, u, x, y, sc, scf, tc, tcf)
            if has_noise:
                delta += noise[t * bsz + mu]
            if not math.isfinite(delta):
                return t
            for i in range(K):
                c = (eta / bsz) * v[i] * delta * _gprime(sc, sdc, x[i]) * isq
                if bsz == 1:
                    _axpy_scaled(J[i], d, c, z, n_tr)
                else:
                    _axpy(G[i], c, z, n_tr)
                if trained:
                    dv[i] += delta * _g(sc, scf, x[i])
        if bsz > 1:
            for i in range(K):
                _axpy_scaled(J[i], d, 1.0, G[i], n_tr)
        if trained:
            for i in range(K):
                v[i] = v[i] * dv_decay + eta_v / (N * bsz) * dv[i]
    return -1


@njit(cache=True, nogil=True, fastmath={"reassoc"})
def _decay_update_dot(Ji, d, c, z, zn, n):
    """Ji[:n] = d Ji[:n] + c z[:n], then return Ji[:n] . zn[:n]: one pass over the row."""
    s = 0.0
    for a in range(n):
        v = d * Ji[a] + c * z[a]
        Ji[a] = v
        s += v * zn[a]
    return s


@njit(cache=True, nogil=True)
def family_prime(gen, rng, state, bits, J, B, s, z, x, y):
    """Draw the first sample into z and its fields into x, y (for family_steps_fused)."""
    _draw(gen, rng, state, bits, s, z)
    isq = 1.0 / math.sqrt(z.shape[0])
    for i in range(x.shape[0]):
        x[i] = _dot_simd(J[i], z) * isq
    for n in range(y.shape[0]):
        y[n] = _dot_simd(B[n], z) * isq


@njit(cache=True, nogil=True)
def family_steps_fused(gen, rng, state, bits, J, B, s, n_tr, etas, kappa, v, u, eta_v, kappa_v,
                       trained, noise, sc, sdc, scf, tc, tcf, z, x, y):
    """As family_steps at batch size 1, fused: on entry (z, x, y) hold the current sample and
    its fields (family_prime), on exit the next one."""
    K = J.shape[0]
    M = B.shape[0]
    N = z.shape[0]
    isq = 1.0 / math.sqrt(N)
    has_noise = noise.shape[0] > 0
    c = np.empty(K)
    zn = np.empty(N)
    state_z, state_x, state_y = z, x, y
    z, x, y = z.copy(), x.copy(), y.copy()
    dv_decay = 1.0 - eta_v * kappa_v / N
    for t in range(etas.shape[0]):
        eta = etas[t]
        d = 1.0 - eta * kappa / N
        for i in range(K):
            if not math.isfinite(x[i]):
                return t
        delta = _clean_error(v, u, x, y, sc, scf, tc, tcf)
        if has_noise:
            delta += noise[t]
        if not math.isfinite(delta):
            return t
        for i in range(K):
            c[i] = eta * v[i] * delta * _gprime(sc, sdc, x[i]) * isq
        if trained:
            for i in range(K):
                v[i] = v[i] * dv_decay + eta_v / N * delta * _g(sc, scf, x[i])
        _draw(gen, rng, state, bits, s, zn)
        for i in range(K):
            x[i] = _decay_update_dot(J[i], d, c[i], z, zn, n_tr)
            if n_tr < N:
                x[i] += _dot_simd(J[i, n_tr:], zn[n_tr:])
            x[i] *= isq
        for n in range(M):
            y[n] = _dot_simd(B[n], zn) * isq
        z, zn = zn, z
    _hand_back(state_z, state_x, state_y, z, x, y)
    return -1


# ... and kernels.py's helpers, with what is compiled into them.
numba_kernels(globals(), [_kernels.__file__, *_kernels.COMPILED_IN])
