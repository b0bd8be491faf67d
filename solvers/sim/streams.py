"""Seeding of the simulator's input streams: xoshiro256++ lanes from a SeedSequence.

Plain Python (no numba), shared by the numba kernels (solvers/sim/normals.py) and the C kernel
(solvers/sim/ckernel.py).  The stream definition is in normals.py's docstring.
"""
from __future__ import annotations

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
