"""The per-level state layout of the generated modules (docs/theory/conventions.md: R_in row-major, then the
upper triangle of Q_ij; teacher T_nm, n <= m) and the conversions to and from matrices."""
from __future__ import annotations

from functools import lru_cache

import numpy as np


@lru_cache(maxsize=None)
def triu(n: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.triu_indices(n)``, made once per n and read-only: the modes route packs, unpacks
    and pairs indices several times per step, and making the indices afresh each time cost
    ~20 µs a call (235 k calls in one small RODAS4 run)."""
    iu = np.triu_indices(n)
    for a in iu:
        a.setflags(write=False)
    return iu


def pack_state(R, Q):
    """(L, K, M), (L, K, K) -> (L, N_STATE) in the documented state order."""
    L, K, _ = R.shape
    iu = triu(K)
    return np.concatenate([R.reshape(L, -1), Q[:, iu[0], iu[1]]], axis=1)


def pack_teacher(T):
    """(..., M, M) -> (..., N_TEACHER): the upper triangle, row-major."""
    iu = triu(T.shape[-1])
    return T[..., iu[0], iu[1]]


def unpack_state(y, K, M):
    """(..., N_STATE) -> R (..., K, M), Q (..., K, K) symmetric."""
    y = np.asarray(y)
    R = y[..., :K * M].reshape(y.shape[:-1] + (K, M))
    Q = np.empty(y.shape[:-1] + (K, K), dtype=y.dtype)
    iu = triu(K)
    Q[..., iu[0], iu[1]] = y[..., K * M:]
    Q[..., iu[1], iu[0]] = y[..., K * M:]
    return R, Q
