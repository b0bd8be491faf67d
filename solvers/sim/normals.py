"""Fast reproducible standard normals for the compiled SGD loop: xoshiro256++ lanes, turned into
normals by a float32 inverse CDF (generator "float32", the simulator's default) or a ziggurat
(generator "xoshiro").

Why a generator of our own
--------------------------
A simulation step at N = 1024 is mostly the drawing of its N Gaussian inputs: NumPy's PCG64 +
ziggurat, even called from numba, costs about 3.3 ns per normal on this machine, more than the
whole rest of the step.  PCG64 needs a 128-bit multiply per number and is strictly sequential.
xoshiro256++ (Blackman & Vigna 2019) needs only adds, xors, shifts and rotates on 64-bit words,
so several independent lanes advance together in SIMD registers.

Stream definition (this is the contract that makes a seed reproducible)
-----------------------------------------------------------------------
``state`` is a (4, LANES + 1) uint64 array: LANES vector lanes and one "repair" lane, each a
xoshiro256++ state.  ``fill_normals(state, scratch, scale, z)`` with n = len(z):

1. bits[b*LANES + l] is the next output of lane l, for the blocks b of LANES entries; a final
   partial block of r < LANES entries takes one output each from lanes 0 .. r-1.
2. z[a] = ziggurat(bits[a]): low 8 bits pick the layer k, bit 8 is the sign, the top 52 bits
   are the uniform u = (bits >> 12) 2^-52.  Fast path (about 98.8 %): x = u X_k, accepted if
   u < X_{k+1}/X_k.  Otherwise the wedge/tail test of that same draw, and if it fails, fresh
   draws from the repair lane (layer, sign, uniforms) until one is accepted.

So the stream depends only on the state and the sequence of lengths n; the lanes are
independent streams (lane j = lane 0 advanced by j jumps of 2^128 outputs), the repair lane is
jump LANES.  Lane 0 comes from ``SeedSequence.generate_state``, so different seeds (or spawned
SeedSequence children) give unrelated states.

Ziggurat
--------
256 layers of equal area v under f(x) = exp(-x^2/2): X_1 = r is where the base strip ends,
X_0 = v/f(r) the base strip's virtual width (rectangle [0, r] x [0, f(r)] plus the tail beyond
r), X_{k+1} = f^{-1}(f(X_k) + v/X_k), X_256 = 0.  r is solved here (bisection in float64) so
that the top layer closes: the area mismatch of the last layer is below 1e-14 (checked in the
tests), which is the only approximation of the method; everything else is exact rejection.
The tail uses Marsaglia's exponential method.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, types, uint64
from numba.cpython.unsafe.numbers import trailing_zeros
from numba.extending import intrinsic
from llvmlite import ir

from solvers.core.artifacts import numba_kernels
from solvers.generated import normal_f32 as _T
from solvers.sim import streams as _streams
# The seeding (lanes, jumps, SeedSequence) is plain Python in solvers/sim/streams.py, so that the
# C kernel's path (solvers/sim/ckernel.py) can seed without importing numba.
from solvers.sim.streams import LANES, jump, seed_state, _py_next  # noqa: F401
# ... and so are the ziggurat's tables (the C kernel uses them too).
from solvers.sim.streams import ZIGGURAT, _F, _INV_R, _KI, _R, _RATIO, _WS, _X  # noqa: F401

__all__ = ["LANES", "ZIGGURAT", "seed_state", "fill_normals", "fill_normals_f32",
           "standard_normal", "jump", "next_raw", "KINDS"]

KINDS = ("ziggurat", "float32")   # the two transforms of the lanes' words into normals


# ---------------------------------------------------------------------------------------------
# xoshiro256++
# ---------------------------------------------------------------------------------------------

@intrinsic
def _bits_as_float(typingctx, x):
    """Reinterpret a uint64 as the float64 with the same bits (no conversion)."""
    sig = types.float64(types.uint64)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.float64))

    return sig, codegen


_ONE_BITS = uint64(0x3FF0000000000000)


@njit(inline="always")
def _rotl(x, k):
    return (x << uint64(k)) | (x >> uint64(64 - k))


@njit(inline="always")
def _advance(s0, s1, s2, s3):
    """One xoshiro256++ step on the four state words: (output, new s0, s1, s2, s3)."""
    out = _rotl(s0 + s3, 23) + s0
    t = s1 << uint64(17)
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    return out, s0, s1, s2, _rotl(s3, 45)


@njit(cache=True, nogil=True)
def next_raw(state, lane):
    """Next 64-bit output of one lane (scalar path)."""
    out, state[0, lane], state[1, lane], state[2, lane], state[3, lane] = _advance(
        state[0, lane], state[1, lane], state[2, lane], state[3, lane])
    return out


@njit(inline="always")
def _unit52(b):
    """(b >> 12) * 2^-52 in [0, 1), exactly, via the bits of a float in [1, 2)."""
    return _bits_as_float((b >> uint64(12)) | _ONE_BITS) - 1.0


@njit(inline="always")
def _open_unit(state, lane):
    """A uniform in (0, 1], 53 bits, for logarithms."""
    return ((next_raw(state, lane) >> uint64(11)) + uint64(1)) * (1.0 / 9007199254740992.0)


@njit(cache=True, nogil=True)
def _raw_block(state, bits):
    """bits[b*LANES + l] = next output of lane l; the vector lanes advance together.

    The lane states are worked on in fresh copies and written through a slice view: with the
    state rows or ``bits[a + l]`` indexed directly LLVM either cannot prove the arrays distinct
    or emits scatters (wrap-around of a possibly negative index), and the loop runs 2.5x slower.
    """
    n = bits.shape[0]
    s0 = state[0, :LANES].copy()
    s1 = state[1, :LANES].copy()
    s2 = state[2, :LANES].copy()
    s3 = state[3, :LANES].copy()
    a = 0
    while a + LANES <= n:
        out = bits[a:a + LANES]
        for l in range(LANES):
            out[l], s0[l], s1[l], s2[l], s3[l] = _advance(s0[l], s1[l], s2[l], s3[l])
        a += LANES
    state[0, :LANES] = s0
    state[1, :LANES] = s1
    state[2, :LANES] = s2
    state[3, :LANES] = s3
    for l in range(n - a):
        bits[a + l] = next_raw(state, l)


@njit(cache=True, nogil=True)
def _slow_normal(state, b):
    """The draw b failed the fast path: wedge or tail test, then fresh draws (repair lane)."""
    rep = LANES
    while True:
        k = b & uint64(0xFF)
        neg = (b >> uint64(8)) & uint64(1)
        u = _unit52(b)
        x = u * _X[k]
        if u < _RATIO[k]:
            return -x if neg else x
        if k == 0:
            # tail beyond r: x = r + e1/r with e1, e2 exponential, accepted if 2 e2 > (e1/r)^2
            while True:
                xx = -math.log(_open_unit(state, rep)) * _INV_R
                yy = -math.log(_open_unit(state, rep))
                if yy + yy > xx * xx:
                    x = _R + xx
                    return -x if neg else x
        # wedge of layer k between heights f(X_k) and f(X_{k+1})
        if _F[k] + _unit52(next_raw(state, rep)) * (_F[k + 1] - _F[k]) < math.exp(-0.5 * x * x):
            return -x if neg else x
        b = next_raw(state, rep)


@njit(cache=True, nogil=True)
def _normals_from_bits(state, bits, scale, z, rejected):
    """z[a] = scale[a] * ziggurat(bits[a]).

    The fast path is branch-free (every entry gets u X_k; the indices that fail the test are
    appended to ``rejected`` by an unconditional store and a conditional increment), and the
    ~1.2 % rejected entries are redrawn afterwards in increasing order, which consumes the repair
    lane exactly as handling them in place would.  No call in the main loop keeps its state in
    registers: 7 % faster than branching per entry.
    """
    cnt = 0
    for a in range(z.shape[0]):
        b = bits[a]
        r = b >> uint64(12)
        rejected[cnt] = a
        cnt += r >= _KI[b & uint64(0xFF)]
        z[a] = scale[a] * (np.float64(r) * _WS[b & uint64(0x1FF)])
    for j in range(cnt):
        a = rejected[j]
        z[a] = scale[a] * _slow_normal(state, bits[a])


@njit(cache=True, nogil=True)
def fill_normals(state, scratch, scale, z):
    """z[:] = scale * (next len(z) standard normals of the stream).

    scratch: uint64 work array of length >= 2 len(z) (raw words and rejected indices).
    """
    n = z.shape[0]
    bits = scratch[:n]
    _raw_block(state, bits)
    _normals_from_bits(state, bits, scale, z, scratch[n:2 * n])


# ---------------------------------------------------------------------------------------------
# float32 inputs: inverse CDF, two normals per 64-bit word
# ---------------------------------------------------------------------------------------------
# Stream (generator = "float32"): the words of _raw_block, read as pairs of 32-bit halves (low
# half first), one half h per normal: m = h >> 9 (23 bits), u = (m + 1/2) 2^-23, sign = bit 8,
# z = sign * sqrt(2) erfinv(u).  Central draws (m < M_TAIL, 99.9 %) use a (7, 7) rational function
# of y = (1 - u)(1 + u) in float32, which vectorises (no table look-up, no log, no branch); the
# 0.1 % in the tail are redone in float64 afterwards.  Every draw is accepted, so each step
# consumes exactly ceil(N/2) words.  The deviates have float32 resolution (u on a grid of 2^-23) and are
# bounded by |z| < 5.42 (P(|z| > 5.42) = 6e-8 for a true normal); tests/test_normals_f32.py
# measures the transform against mpmath's erfinv on all 2^23 inputs.

_I32 = ir.IntType(32)
_F32 = ir.FloatType()
_P = tuple(np.float32(c) for c in _T.CENTRAL_P)
_Q = tuple(np.float32(c) for c in _T.CENTRAL_Q)
assert len(_P) == len(_Q) == 8, "_poly7 (and csrc/sgd_rows.c) evaluate degree 7"
_G = np.array(_T.TAIL_G)                 # a global array is a compiled-in constant
_H_TAIL = np.uint32(_T.M_TAIL << 9)       # h >= _H_TAIL  <=>  m >= M_TAIL
_HALF_ULP = np.float32(2.0**-24)
_ONE32 = np.float32(1.0)
_TAIL_C = _T.TAIL_CENTER
_TAIL_IH = 1.0 / _T.TAIL_HALF_WIDTH


@intrinsic
def _unit23(typingctx, h):
    """(h >> 9) 2^-23 as a float32 in [0, 1), exactly, with 32-bit integer operations only
    (numba's own integer arithmetic would widen to 64 bits and halve the vector width)."""
    sig = types.float32(types.uint32)

    def codegen(context, builder, signature, args):
        v = builder.or_(builder.lshr(args[0], ir.Constant(_I32, 9)), ir.Constant(_I32, 0x3F800000))
        return builder.fsub(builder.bitcast(v, _F32), ir.Constant(_F32, 1.0))

    return sig, codegen


@intrinsic
def _with_sign(typingctx, v, h):
    """v with its sign flipped when bit 8 of h is set."""
    sig = types.float32(types.float32, types.uint32)

    def codegen(context, builder, signature, args):
        bit = builder.and_(builder.shl(args[1], ir.Constant(_I32, 23)),
                           ir.Constant(_I32, 0x80000000))
        return builder.bitcast(builder.xor(builder.bitcast(args[0], _I32), bit), _F32)

    return sig, codegen


@njit(inline="always")
def _poly7(s, c):
    return ((((((c[7] * s + c[6]) * s + c[5]) * s + c[4]) * s + c[3]) * s + c[2]) * s + c[1]) * s + c[0]


@njit(cache=True, nogil=True)
def _tail_f32(h):
    """sqrt(2) erfinv(u) in float64 for a tail word (m >= M_TAIL), before the sign."""
    u = ((h >> np.uint32(9)) + 0.5) * 2.0**-23
    sig = math.sqrt(-math.log((1.0 - u) * (1.0 + u)))
    t = (sig - _TAIL_C) * _TAIL_IH
    acc = 0.0
    for j in range(_G.shape[0] - 1, -1, -1):
        acc = acc * t + _G[j]
    return sig * acc


# error_model="numpy": Python's zero-division check on "/" is a branch that stops LLVM from
# vectorising the loop (the denominator is >= 0.07 on the central range anyway).
@njit(cache=True, nogil=True, fastmath={"contract"}, error_model="numpy")
def _central_f32(h, scale, z, is_tail):
    for a in range(z.shape[0]):
        u = _unit23(h[a]) + _HALF_ULP
        y = (_ONE32 - u) * (_ONE32 + u)
        z[a] = scale[a] * np.float64(_with_sign(u * (_poly7(y, _P) / _poly7(y, _Q)), h[a]))
        is_tail[a] = h[a] >= _H_TAIL


@njit(cache=True, nogil=True)
def _normals_f32(h, scale, z, work):
    """z[a] = scale[a] * normal(h[a]): the vectorised float32 pass, then the ~0.1 % tail entries.

    work: uint64 array of >= ceil(len(z)/8) words.  The central pass also stores a 0/1 byte per
    entry (in work); the tail entries are then found eight at a time by scanning those bytes
    as 64-bit words and taking the set bits one by one.  (A plain ``if h[a] >= ...`` in a loop
    is if-converted and vectorised by LLVM, which then evaluates the float64 log for every
    entry: 20x the cost of the whole central pass.)
    """
    n = z.shape[0]
    nw = (n + 7) // 8
    flags = work[:nw]
    flags[nw - 1] = 0                      # the padding bytes of the last word
    _central_f32(h, scale, z, flags.view(np.uint8))
    for k in range(nw):
        w = flags[k]
        while w:
            a = 8 * k + (trailing_zeros(w) >> 3)
            v = _tail_f32(h[a])
            z[a] = scale[a] * (-v if (h[a] >> np.uint32(8)) & np.uint32(1) else v)
            w &= w - np.uint64(1)


@njit(cache=True, nogil=True)
def fill_normals_f32(state, scratch, scale, z):
    """z[:] = scale * (next len(z) normals of the float32 stream).

    scratch: uint64 work array of length >= 2 len(z) (raw words and tail indices), as for
    ``fill_normals``.
    """
    n = z.shape[0]
    words = scratch[:(n + 1) // 2]
    _raw_block(state, words)
    _normals_f32(words.view(np.uint32), scale, z, scratch[n:2 * n])


def standard_normal(state, n, scale=None, kind="ziggurat") -> np.ndarray:
    """Next n normals of the stream (times ``scale``), as the simulator would draw them.

    kind: "ziggurat" (float64 deviates: the simulator's generator "xoshiro") or "float32" (the
    inverse-CDF transform of generator "float32", the simulator's default)."""
    z = np.empty(n)
    scale = np.ones(n) if scale is None else np.asarray(scale, dtype=np.float64)
    if kind == "float32":
        fill_normals_f32(state, np.empty(2 * n, dtype=np.uint64), scale, z)
    elif kind == "ziggurat":
        fill_normals(state, np.empty(2 * n, dtype=np.uint64), scale, z)
    else:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    return z


# The cached functions above have the generated float32 tables and the ziggurat's tables
# (streams.py) compiled in as constants.
numba_kernels(globals(), [_T.__file__, _streams.__file__])
