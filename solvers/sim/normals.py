"""Fast reproducible standard normals for the compiled SGD loop: xoshiro256++ lanes + ziggurat.

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
from numba.extending import intrinsic

__all__ = ["LANES", "ZIGGURAT", "seed_state", "fill_normals", "standard_normal", "jump",
           "next_raw"]

LANES = 16             # two 512-bit registers of 64-bit words per state word (measured best)
_JUMP = (0x180EC6D33CFD0ABA, 0xD5A61266F0C9392C, 0xA9582618E03FC9AA, 0x39ABDC4529B1661C)
_MASK64 = (1 << 64) - 1


# ---------------------------------------------------------------------------------------------
# Ziggurat tables
# ---------------------------------------------------------------------------------------------

def _ziggurat_tables(n_layers=256):
    def f(x):
        return math.exp(-0.5 * x * x)

    def tail_area(r):
        return math.sqrt(math.pi / 2) * math.erfc(r / math.sqrt(2))

    def top_mismatch(r):
        """f(X_last) + v / X_last - 1 (zero when the top layer has area v exactly)."""
        v = r * f(r) + tail_area(r)
        x = r
        for _ in range(1, n_layers - 1):
            y = f(x) + v / x
            if y >= 1.0:      # overshoot: r too small
                return 1.0
            x = math.sqrt(-2.0 * math.log(y))
        return f(x) + v / x - 1.0

    lo, hi = 3.0, 4.5         # mismatch > 0 at lo, < 0 at hi
    for _ in range(64):
        mid = 0.5 * (lo + hi)
        if top_mismatch(mid) > 0:
            lo = mid
        else:
            hi = mid
    r = hi
    v = r * f(r) + tail_area(r)
    X = np.empty(n_layers + 1)
    X[0], X[1] = v / f(r), r
    for k in range(1, n_layers - 1):
        X[k + 1] = math.sqrt(-2.0 * math.log(f(X[k]) + v / X[k]))
    X[n_layers] = 0.0
    F = np.exp(-0.5 * X * X)
    return {"r": r, "v": v, "X": X, "F": F, "ratio": X[1:] / X[:-1],
            "top_mismatch": top_mismatch(r)}


ZIGGURAT = _ziggurat_tables()
_R = ZIGGURAT["r"]
_INV_R = 1.0 / _R
_X = ZIGGURAT["X"][:-1].copy()        # outer width of layer k
_RATIO = ZIGGURAT["ratio"].copy()     # X_{k+1} / X_k: fast-path acceptance
_F = ZIGGURAT["F"].copy()             # f(X_k), k = 0..256
# Fast-path tables in the integer domain of r = bits >> 12 (u = r 2^-52): r < _KI[k] exactly when
# u < X_{k+1}/X_k (ceil of an exact power-of-2 scaling), and r * _WS[k + 256 sign] equals
# +-u X_k bit for bit.  Saves the float construction and the sign branch per normal.
_KI = np.array([math.ceil(q * 2.0**52) for q in _RATIO], dtype=np.uint64)
_WS = np.concatenate([_X, -_X]) * 2.0**-52


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


@njit(cache=True, nogil=True)
def next_raw(state, lane):
    """Next 64-bit output of one lane (scalar path)."""
    s0 = state[0, lane]
    s1 = state[1, lane]
    s2 = state[2, lane]
    s3 = state[3, lane]
    out = _rotl(s0 + s3, 23) + s0
    t = s1 << uint64(17)
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = _rotl(s3, 45)
    state[0, lane] = s0
    state[1, lane] = s1
    state[2, lane] = s2
    state[3, lane] = s3
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
            a0 = s0[l]
            a1 = s1[l]
            a2 = s2[l]
            a3 = s3[l]
            out[l] = _rotl(a0 + a3, 23) + a0
            t = a1 << uint64(17)
            a2 ^= a0
            a3 ^= a1
            a1 ^= a2
            a0 ^= a3
            a2 ^= t
            s0[l] = a0
            s1[l] = a1
            s2[l] = a2
            s3[l] = _rotl(a3, 45)
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
# Seeding
# ---------------------------------------------------------------------------------------------

def _py_next(s):
    """Reference xoshiro256++ step on Python ints (seeding and tests); returns the output."""
    def rotl(x, k):
        return ((x << k) | (x >> (64 - k))) & _MASK64
    out = (rotl((s[0] + s[3]) & _MASK64, 23) + s[0]) & _MASK64
    t = (s[1] << 17) & _MASK64
    s[2] ^= s[0]
    s[3] ^= s[1]
    s[1] ^= s[2]
    s[0] ^= s[3]
    s[2] ^= t
    s[3] = rotl(s[3], 45)
    return out


def jump(s):
    """Advance a 4-word state (list of ints) by 2^128 outputs, in place (Vigna's jump())."""
    acc = [0, 0, 0, 0]
    for word in _JUMP:
        for bit in range(64):
            if (word >> bit) & 1:
                for i in range(4):
                    acc[i] ^= s[i]
            _py_next(s)
    s[:] = acc


def seed_state(seed_seq) -> np.ndarray:
    """(4, LANES + 1) uint64 state: lane j = jump^j of a state drawn from the SeedSequence."""
    if not isinstance(seed_seq, np.random.SeedSequence):
        seed_seq = np.random.SeedSequence(seed_seq)
    words = [int(w) for w in seed_seq.generate_state(4, np.uint64)]
    if not any(words):       # the one forbidden xoshiro state (probability 2^-256)
        words[0] = 1
    out = np.empty((4, LANES + 1), dtype=np.uint64)
    for lane in range(LANES + 1):
        out[:, lane] = words
        jump(words)
    return out


def standard_normal(state, n, scale=None) -> np.ndarray:
    """Next n normals of the stream (times ``scale``), as the simulator would draw them."""
    z = np.empty(n)
    fill_normals(state, np.empty(2 * n, dtype=np.uint64),
                 np.ones(n) if scale is None else np.asarray(scale, dtype=np.float64), z)
    return z
