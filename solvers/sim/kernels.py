"""The numba kernels of the simulator (solvers/sim/simulate.py): every generator, both weight
layouts.  A module of its own so that the C kernel's path (solvers/sim/ckernel.py, generator
"float32" with the row layout) never imports numba; simulate.py loads this on first use.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from solvers.core.artifacts import numba_kernels
from solvers.sim.normals import fill_normals, fill_normals_f32

_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)

# --------------------------------------------------------------------------------------------
@njit(cache=True, nogil=True)
def _g(act, x):
    if act == 0:
        return math.erf(x * _INV_SQRT2)
    return x


@njit(cache=True, nogil=True)
def _gprime(act, x):
    if act == 0:
        return _SQRT_2_OVER_PI * math.exp(-0.5 * x * x)
    return 1.0


@njit(cache=True, nogil=True)
def _error_signal(act, x, y):
    """zeta - sigma for fields x (student) and y (teacher); NaN if any field is non-finite."""
    K = x.shape[0]
    M = y.shape[0]
    sig = 0.0
    for i in range(K):
        if not math.isfinite(x[i]):
            return math.nan
        sig += _g(act, x[i])
    zeta = 0.0
    for n in range(M):
        zeta += _g(act, y[n])
    return zeta / math.sqrt(M) - sig * (math.sqrt(M) / K)


@njit(cache=True, nogil=True)
def _draw(gen, rng, state, bits, s, z):
    """z = s * (next N normals) of the input stream: gen 0 = NumPy's PCG64 stream (the
    reference; bit-identical to rng.standard_normal), 1 = xoshiro lanes + ziggurat, 2 = xoshiro
    lanes + float32 inverse CDF (solvers/sim/normals.py)."""
    if gen == 1:
        fill_normals(state, bits, s, z)
    elif gen == 2:
        fill_normals_f32(state, bits, s, z)
    else:
        for a in range(z.shape[0]):
            z[a] = s[a] * rng.standard_normal()


# The row kernel's sums let LLVM reassociate (fastmath "reassoc" only: no FMA contraction, no
# finite-math assumptions), which vectorises them: 4 dot products + 2 updates at N = 1024 take
# 0.6 us instead of 1.5 us with _dot8.  The order of the additions is then fixed by the compiled
# code (SIMD width of the machine), so a seed is bit-reproducible on one machine, in any process
# or thread, but two machines with different vector units may differ in the last bits.

@njit(cache=True, nogil=True, fastmath={"reassoc"})
def _dot_simd(u, v):
    s = 0.0
    for a in range(u.shape[0]):
        s += u[a] * v[a]
    return s


@njit(cache=True, nogil=True, fastmath={"reassoc"})
def _update_dot(Ji, c, z, zn):
    """Ji += c z, then return Ji . zn: one pass over the row."""
    s = 0.0
    for a in range(Ji.shape[0]):
        v = Ji[a] + c * z[a]
        Ji[a] = v
        s += v * zn[a]
    return s


@njit(cache=True, nogil=True)
def _fields(cols, J, B, z, x, y):
    """x = J z / sqrt(N), y = B z / sqrt(N) for weights in row (J (K, N)) or column (J (N, K))
    layout."""
    if cols:
        x[:] = 0.0
        y[:] = 0.0
        for a in range(z.shape[0]):
            za = z[a]
            for i in range(x.shape[0]):
                x[i] += J[a, i] * za
            for n in range(y.shape[0]):
                y[n] += B[a, n] * za
    else:
        for i in range(x.shape[0]):
            x[i] = _dot_simd(J[i], z)
        for n in range(y.shape[0]):
            y[n] = _dot_simd(B[n], z)
    isq = 1.0 / math.sqrt(z.shape[0])
    for i in range(x.shape[0]):
        x[i] *= isq
    for n in range(y.shape[0]):
        y[n] *= isq


@njit(cache=True, nogil=True)
def _prime(gen, rng, state, bits, J, B, s, z, x, y, cols):
    _draw(gen, rng, state, bits, s, z)
    _fields(cols, J, B, z, x, y)


@njit(cache=True, nogil=True, fastmath={"reassoc"})
def _update_dot2(J0, J1, c0, c1, z, zn):
    """Two rows at once: J0 += c0 z, J1 += c1 z, return (J0 . zn, J1 . zn); z and zn are read
    once for both rows."""
    s0 = 0.0
    s1 = 0.0
    for a in range(J0.shape[0]):
        za = z[a]
        zna = zn[a]
        v0 = J0[a] + c0 * za
        v1 = J1[a] + c1 * za
        J0[a] = v0
        J1[a] = v1
        s0 += v0 * zna
        s1 += v1 * zna
    return s0, s1


@njit(cache=True, nogil=True, fastmath={"reassoc"})
def _dot2(u0, u1, v):
    s0 = 0.0
    s1 = 0.0
    for a in range(v.shape[0]):
        s0 += u0[a] * v[a]
        s1 += u1[a] * v[a]
    return s0, s1


@njit(cache=True, nogil=True)
def _update_fields_rows(J, B, c, z, zn, n_tr, x, y):
    """J[i, :n_tr] += c_i z (row layout), fused with the unscaled fields of the next sample zn.
    Rows go in pairs, so each pass over z and zn serves two rows (at N = 1024, K = M = 2 the step
    went from 2.06 to 2.01-2.02 us under load: within the noise, kept because it reads less)."""
    N = zn.shape[0]
    K = J.shape[0]
    for i in range(0, K - 1, 2):
        x[i], x[i + 1] = _update_dot2(J[i, :n_tr], J[i + 1, :n_tr], c[i], c[i + 1],
                                      z[:n_tr], zn[:n_tr])
    if K % 2:
        x[K - 1] = _update_dot(J[K - 1, :n_tr], c[K - 1], z[:n_tr], zn[:n_tr])
    if n_tr < N:
        for i in range(K):
            x[i] += _dot_simd(J[i, n_tr:], zn[n_tr:])
    M = B.shape[0]
    for n in range(0, M - 1, 2):
        y[n], y[n + 1] = _dot2(B[n], B[n + 1], zn)
    if M % 2:
        y[M - 1] = _dot_simd(B[M - 1], zn)


@njit(cache=True, nogil=True)
def _update_fields_cols(Jt, Bt, c, z, zn, n_tr, x, y):
    """As _update_fields_rows with weights in column layout Jt (N, K), Bt (N, M): each updated
    Jt[a, :] is used at once for the next fields (same sums, same order, as a separate pass).
    The inner loops over i, n vectorise; the sums over a stay serial."""
    K = x.shape[0]
    M = y.shape[0]
    x[:] = 0.0
    y[:] = 0.0
    for a in range(n_tr):
        za = z[a]
        zna = zn[a]
        for i in range(K):
            v = Jt[a, i] + c[i] * za
            Jt[a, i] = v
            x[i] += v * zna
        for n in range(M):
            y[n] += Bt[a, n] * zna
    for a in range(n_tr, zn.shape[0]):
        zna = zn[a]
        for i in range(K):
            x[i] += Jt[a, i] * zna
        for n in range(M):
            y[n] += Bt[a, n] * zna


@njit(cache=True, nogil=True)
def _steps(gen, rng, state, bits, J, B, s, n_tr, eta, act, n_steps, z, x, y, cols):
    """n_steps SGD steps; weights J, B in row layout ((K, N), (M, N)) or, with ``cols``, in
    column layout ((N, K), (N, M); used from K = _COLUMN_KERNEL_MIN_K).

    On entry (z, x, y) hold the current sample and its fields; on exit the next one (so the
    stream consumption is independent of how steps are split into calls).  Returns -1, or the
    step index t at which a field became non-finite (weights non-finite after t steps).
    Only coordinates a < n_tr are updated.  The next sample is drawn before the update, which
    is fused with the next fields (J is streamed once per step).  The sample and fields are
    worked on in local copies, which LLVM knows cannot alias J (measured 5-15 %).
    """
    K = x.shape[0]
    M = y.shape[0]
    N = z.shape[0]
    coef = eta * (math.sqrt(M) / K) / math.sqrt(N)
    isq = 1.0 / math.sqrt(N)
    c = np.empty(K)
    zn = np.empty(N)
    state_z, state_x, state_y = z, x, y
    z, x, y = z.copy(), x.copy(), y.copy()
    for t in range(n_steps):
        delta = _error_signal(act, x, y)
        if not math.isfinite(delta):
            return t
        for i in range(K):
            c[i] = coef * delta * _gprime(act, x[i])
        _draw(gen, rng, state, bits, s, zn)
        if cols:
            _update_fields_cols(J, B, c, z, zn, n_tr, x, y)
        else:
            _update_fields_rows(J, B, c, z, zn, n_tr, x, y)
        for i in range(K):
            x[i] *= isq
        for n in range(M):
            y[n] *= isq
        z, zn = zn, z
    _hand_back(state_z, state_x, state_y, z, x, y)
    return -1


@njit(cache=True, nogil=True)
def _hand_back(state_z, state_x, state_y, z, x, y):
    """End of a fused step loop (here and in family_kernels.py): the loop worked on local copies
    of the sample and its fields (no aliasing with the weights); the caller's arrays get the
    next sample and fields, so the next call starts where this one stopped."""
    state_z[:] = z
    state_x[:] = x
    state_y[:] = y


# The cached kernels above have normals.py's functions and tables compiled into them.
from solvers.generated import normal_f32 as _f32  # noqa: E402
from solvers.sim import normals as _normals, streams as _streams  # noqa: E402

COMPILED_IN = [_normals.__file__, _streams.__file__, _f32.__file__]
numba_kernels(globals(), COMPILED_IN)
