"""Seeding of the simulator's input streams (xoshiro256++ lanes from a SeedSequence) and the
ziggurat's tables.

Plain Python (no numba), shared by the numba kernels (solvers/sim/normals.py) and the C kernel
(solvers/sim/ckernel.py).  The stream definition is in normals.py's docstring.
"""
from __future__ import annotations

import math

import numpy as np

LANES = 16             # two 512-bit registers of 64-bit words per state word (measured best)
_JUMP = (0x180EC6D33CFD0ABA, 0xD5A61266F0C9392C, 0xA9582618E03FC9AA, 0x39ABDC4529B1661C)
_MASK64 = (1 << 64) - 1


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


# ---------------------------------------------------------------------------------------------
# Ziggurat tables (the construction is described in solvers/sim/normals.py)
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
