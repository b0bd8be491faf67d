"""The long-time error of online SGD with label noise or weight decay: the floor.

Without label noise and weight decay a student that can copy its teacher learns it: ε_g → 0.
Label noise (at order 2: the η² term carries it) and weight decay move the fixed point of the
order-parameter ODEs off perfect learning, and ε_g settles at the clean error of that fixed
point.  :func:`floor` finds it by the general numeric route
(:func:`solvers.theory.variants.asymptotic_numeric`: Newton from the end of an integrated
trajectory, verified by a rerun at higher precision) and reports the slowest relaxation rate.

An independent estimate, :func:`linear_response`: SGD linearised about the teacher.  Near
perfect learning the weight error δJ of a student with fixed readouts v follows, per step,
δJ ← δJ − η ĝ ĝᵀ δJ + (η/B) Σ_μ s ε_μ g_μ   (g = ∇_J σ: components v_i g'(x_i) ξ/√N; s² the
noise variance; B the batch size; ĝĝᵀ the batch average), so its stationary covariance C
obeys H C + C H − (η/B) N <g gᵀ C g gᵀ> = (η/B) s² H with H = <g gᵀ>.  For large N,
H = A ⊗ Σ/N with A_ij = v_i v_j <g'(x_i) g'(x_j)>, every term is proportional to Σ/N, and
C = X ⊗ 1 with the K×K equation

    A X + X A − (η/B) 𝔅(X) = (η/B) s² A,   𝔅(X)_ij = v_i v_j Σ_kl X_kl v_k v_l <g'_i g'_j g'_k g'_l>,

(|ξ|²/N → Tr Σ/N = 1); then ε_g = ½ Tr(A X).  The averages are at the teacher's overlaps
(x = y at perfect learning): closed forms for erf, orthant probabilities for ReLU (g' = θ,
so a product of derivatives is the probability that the distinct fields are all positive).
It is exact to first order in s² and needs perfect learning (no weight decay, K = M, one
activation, fixed readouts); the η² term of the ODE is kept in full.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["derivative_moment", "linear_response", "linear_response_refusal"]


def derivative_moment(activation: str, Q, idx) -> float:
    """<Π_{a in idx} g'(x_a)> over x ~ N(0, Q), units ``idx`` (repeats allowed), for
    g = erf(·/√2) (g' = √(2/π) e^{−x²/2}: (2/π)^{n/2} / √det(1 + diag(m) Q_sub), m the
    multiplicities) or g = ReLU (g' = θ: the orthant probability of the distinct units)."""
    units = sorted(set(idx))
    sub = np.asarray(Q, float)[np.ix_(units, units)]
    if activation == "erf":
        m = np.diag([idx.count(u) for u in units]).astype(float)
        return (2 / math.pi) ** (len(idx) / 2) / math.sqrt(
            np.linalg.det(np.eye(len(units)) + m @ sub))
    if activation == "relu":
        n = len(units)
        d = np.sqrt(np.diag(sub))
        r = sub / np.outer(d, d)
        pairs = [(a, b) for a in range(n) for b in range(a + 1, n)]
        if n == 1:
            return 0.5
        if n == 2:
            return 0.25 + math.asin(r[0, 1]) / (2 * math.pi)
        if n == 3:
            return 0.125 + sum(math.asin(r[a, b]) for a, b in pairs) / (4 * math.pi)
        from solvers.core.orthant import orthant4_float
        return float(orthant4_float(*(r[a, b] for a, b in pairs)))
    raise ValueError(f"no derivative moments for activation {activation!r}")


def linear_response_refusal(key, *, noise, weight_decay, order, trained=False) -> str | None:
    """Why :func:`linear_response` does not apply to a variant, or None."""
    if trained:
        return "a trained readout moves"
    if weight_decay != 0:
        return "weight decay moves the fixed point away from the teacher"
    if noise == 0 or order != 2:
        return "no label noise at order 2: the floor is 0"
    if key.student != key.teacher_activation or key.student not in ("erf", "relu"):
        return "it needs one activation, erf or relu, for student and teacher"
    if key.K != key.M:
        return "it needs K = M (the student can copy the teacher)"
    return None


def linear_response(activation: str, v, Q, eta: float, noise: float, batch_size: int = 1
                    ) -> float:
    """ε_g floor of SGD linearised about the teacher (module docstring): student readouts
    ``v`` (K,), level-1 teacher overlaps ``Q`` (K, K) = T^(1) (the fields at perfect
    learning), learning rate η, label-noise variance, batch size."""
    v = np.asarray(v, float)
    K = len(v)
    rate = eta / batch_size
    A = np.array([[v[i] * v[j] * derivative_moment(activation, Q, [i, j]) for j in range(K)]
                  for i in range(K)])
    op = np.zeros((K * K, K * K))
    for k in range(K):
        for l in range(K):
            X = np.zeros((K, K))
            X[k, l] = 1.0
            B = np.array([[v[i] * v[j] * v[k] * v[l]
                           * derivative_moment(activation, Q, [i, j, k, l]) for j in range(K)]
                          for i in range(K)])
            op[:, k * K + l] = (A @ X + X @ A - rate * B).ravel()
    X = np.linalg.solve(op, rate * noise * A.ravel()).reshape(K, K)
    return 0.5 * float(np.trace(A @ X))
