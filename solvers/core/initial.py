"""The random initial weights of a seed, shared by the ODE's ``init = "random"`` and the simulator.

Both sides of a theory-vs-simulation comparison start from one realisation: the teacher
B_na ~ N(0, 1), the student J_ia ~ N(0, sigma_J^2), optionally rotated by a Haar W, drawn from
``np.random.SeedSequence(seed).spawn(5)`` (children: teacher, student, rotation, training
inputs, held-out inputs; the simulator's label noise uses a sixth child, which does not move
these five).

``informed = True`` (``[training] init = "informed"``) starts the student at the teacher where it
can: rows i < min(K, M) of J are the teacher's rows B_i (in the original basis, so also after a
rotation), the others are the random draws of ``informed = False`` (same streams, so the
random rows and the teacher are those of the random start of the same seed).  With
untrainable = "zero" the untrainable components are zeroed afterwards, as for random starts.

``modes = {"R", "Q", "T"}`` (a simulation started from given overlaps, e.g. those a run wrote:
``[training] init = {from = "run.json"}``) builds weights with exactly these mode overlaps, up to
rounding (:func:`weights_from_modes`): in each eigen-block the Gram matrix N [[Q_k, R_k],
[R_k^T, T_k]] is factored and embedded in a random orthonormal frame of the block's N/L
coordinates drawn from the student's stream.  The overlaps fix the weights only up to that
frame, which does not change the law of the SGD that follows (the inputs are isotropic within
a block).  This module holds the draw and the mode overlaps so that solvers/core does not
import the simulator (and the simulator does not own the ODE's initial condition).

>>> m = initial_mode_overlaps(K=1, M=1, N=8, sigma_J=0.5, seed=0, L=2)
>>> m["R"].shape, m["Q"].shape
((2, 1, 1), (2, 1, 1))
"""
from __future__ import annotations

from numbers import Integral

import numpy as np

__all__ = ["streams", "haar_orthogonal", "draw_weights", "mode_overlaps",
           "initial_mode_overlaps"]


def streams(seed):
    """Independent generators: teacher, student, rotation, training inputs, held-out inputs."""
    return [np.random.Generator(np.random.PCG64(s))
            for s in np.random.SeedSequence(seed).spawn(5)]


def haar_orthogonal(rng, N):
    """Haar-distributed orthogonal matrix: QR of a Gaussian matrix, signs fixed by diag(R) > 0."""
    Q, R = np.linalg.qr(rng.standard_normal((N, N)))
    return Q * np.sign(np.diag(R))


def weights_from_modes(modes, N, rng):
    """(J~ (K, N), B~ (M, N)) in the eigenbasis whose mode overlaps are ``modes`` (float64
    arrays R (L, K, M), Q (L, K, K), T (L, M, M)); ValueError if a block's Gram matrix is not
    positive semi-definite (beyond rounding) or has rank above N / L."""
    R, Q, T = (np.asarray(modes[k], dtype=np.float64) for k in ("R", "Q", "T"))
    L, K, M = R.shape
    b = N // L
    Jt, Bt = np.zeros((K, N)), np.zeros((M, N))
    for k in range(L):
        G = N * np.block([[Q[k], R[k]], [R[k].T, T[k]]])
        G = 0.5 * (G + G.T)
        w, V = np.linalg.eigh(G)
        top = max(float(np.abs(w).max()), np.finfo(float).tiny)
        if w.min() < -1e-10 * top:
            raise ValueError(f"mode {k}: the overlaps [[Q, R], [R^T, T]] are not positive "
                             f"semi-definite (eigenvalue {w.min() / N:.3g}): no weights have "
                             f"them")
        keep = w > 1e-13 * top
        F = V[:, keep] * np.sqrt(w[keep])
        if F.shape[1] > b:
            raise ValueError(f"mode {k}: the overlaps have rank {F.shape[1]}, more than the "
                             f"N / L = {b} coordinates of the block")
        O, _ = np.linalg.qr(rng.standard_normal((b, max(F.shape[1], 1))))
        W = F @ O[:, :F.shape[1]].T
        Jt[:, k * b:(k + 1) * b], Bt[:, k * b:(k + 1) * b] = W[:K], W[K:]
    return Jt, Bt


def draw_weights(seed, K, M, N, sigma_J, *, rotate=False, n_trainable=None, untrainable="zero",
                 J0=None, B0=None, informed=False, modes=None):
    """(J, B, W) in the original basis (W = None unless rotated) and the eigenbasis (J~, B~).

    With untrainable = "zero" the components a >= n_trainable of J~ are set to zero and
    J = J~ W^T; J0 (K, N), B0 (M, N) replace the random draws (the streams are still made).
    """
    g_teacher, g_student, g_rot, _, _ = streams(seed)
    if modes is not None:
        Jt, Bt = weights_from_modes(modes, N, g_student)
        W = haar_orthogonal(g_rot, N) if rotate else None
        J, B = (Jt @ W.T, Bt @ W.T) if rotate else (Jt.copy(), Bt.copy())
        return J, B, W, Jt, Bt
    B = B0 if B0 is not None else g_teacher.standard_normal((M, N))
    J = J0 if J0 is not None else sigma_J * g_student.standard_normal((K, N))
    if informed:
        J = np.array(J)
        J[:min(K, M)] = B[:min(K, M)]
    n_tr = N if n_trainable is None else n_trainable
    if rotate:
        W = haar_orthogonal(g_rot, N)
        Jt, Bt = J @ W, B @ W
    else:
        W = None
        Jt, Bt = J.copy(), B.copy()
    if n_tr < N and untrainable == "zero":
        Jt[:, n_tr:] = 0.0
        J = Jt @ W.T if W is not None else Jt.copy()
    return J, B, W, np.ascontiguousarray(Jt), np.ascontiguousarray(Bt)


def mode_overlaps(U, V, block):
    """(L, p, q) array of U[:, block k] V[:, block k]^T / N for row-layout U (p, N), V (q, N).

    einsum's own loops, not BLAS: a BLAS call wakes OpenBLAS's worker threads, which then spin
    on the CPU the simulator's C kernel's second thread runs on."""
    p, N = U.shape
    q = V.shape[0]
    L = N // block
    return np.einsum("pla,qla->lpq", U.reshape(p, L, block), V.reshape(q, L, block)) / N


def _int(name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def initial_mode_overlaps(*, K, M, N, sigma_J, seed, L=None, eigenvalues=None, rotate=False,
                          n_trainable=None, untrainable="zero", J0=None, B0=None,
                          informed=False):
    """Mode overlaps {"R": (L, K, M), "Q": (L, K, K), "T": (L, M, M)} of the seed's weights,
    for L eigen-blocks of N / L coordinates (L given, or len(eigenvalues))."""
    K, M, N = _int("K", K, 1), _int("M", M, 1), _int("N", N, 1)
    seed = _int("seed", seed, 0)
    L = len(eigenvalues) if eigenvalues is not None else _int("L", L, 1)
    if N % L:
        raise ValueError(f"L = {L} must divide N = {N}")
    *_, Jt, Bt = draw_weights(seed, K, M, N, float(sigma_J), rotate=rotate,
                              n_trainable=n_trainable, untrainable=untrainable, J0=J0, B0=B0,
                              informed=informed)
    block = N // L
    return {"R": mode_overlaps(Jt, Bt, block), "Q": mode_overlaps(Jt, Jt, block),
            "T": mode_overlaps(Bt, Bt, block)}
