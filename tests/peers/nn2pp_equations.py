"""nn2pp's order-parameter ODEs at L = 1, re-implemented from its equations.

Peer: ``sgoldt/nn2pp`` (S. Goldt, C++/Armadillo), files ``scmpp_ode.cpp`` (function
``propagate``: the ODE right-hand side and its forward-Euler loop; the Gaussian integrals
``I2_*``, ``I3_*``, ``I4_*``, ``J2_*``) and ``libnn2pp.h`` (``eg_analytical``: the closed-form
generalisation error; ``learn`` / ``update_gradients``: the SGD step the ODEs describe).
Inputs are isotropic (Σ = I), so in the project's language this is the level system at L = 1
with ν_1 = 1 and X^(1) = X^(0).

Their model and ODE (what ``propagate`` adds per Euler step, divided by dt)
---------------------------------------------------------------------------
Student φ(ξ) = Σ_i v_i g(λ_i), teacher φ*(ξ) = Σ_n A_n g(ν_n), fields λ = w ξ/√N, ν = B ξ/√N,
one activation g for both: ``--g 0`` linear g(x) = x, ``--g 1`` erf g(x) = erf(x/√2) (ReLU
and the others exist only in the simulator).  With C the joint covariance of (λ, ν) built from
(Q, R, T) and the integrals I2 = <g g>, I3 = <g' · g>, I4 = <g' g' g g>, J2 = <g' g'>::

    dR_in/dα = -wd R_in + lr v_i [ Σ_m A_m I3(i, n, m) - Σ_j v_j I3(i, n, j) ]
    dQ_ik/dα = -2 wd Q_ik
               + lr v_i [ Σ_m A_m I3(i, k, m) - Σ_j v_j I3(i, k, j) ] + (i <-> k)
               + lr² v_i v_k [ σ² J2(i, k) + Σ_nm A_n A_m I4(i, k, n, m)
                               - 2 Σ_jn v_j A_n I4(i, k, j, n) + Σ_jl v_j v_l I4(i, k, j, l) ]
    dv_i/dα  = -wd v_i + lr2 [ Σ_n A_n I2(i, n) - Σ_k v_k I2(i, k) ]      (only with --both)

Every term is evaluated at the state at the start of the step (the covariance matrix is built
once per step; v is updated after Q and R).  The η² bracket is always present (the project's
order 2).  Their ε_g (``eg_analytical``) is the clean error ½<(φ* − φ)²>, without the label noise.

Map to the project's conventions (the committee-machine family: docs/theory/conventions.md)
------------------------------------------------------------------------------------
* readouts: their student ``v`` = our student_readout v, their teacher ``A`` = our
  teacher_readout u (the sums carry no 1/K: their default A = 1, v ≈ 1 is our
  normalisation = "none"; our "paper" v = √M/K, u = 1/√M is passed as explicit v, A).
* first-layer step: w ← w + (lr/√N) v Δ g'(λ) ξ (``learn``): their ``lr`` = our ``eta``.
* second-layer step: v ← v + (lr2/N) Δ g(λ) (``learn``, the 1/N on the readout step is theirs
  too): their ``lr2`` = our ``eta_readout``; when ``--lr2`` is not given they use lr2 = lr.
* weight decay: w ← w − (wd/N) w, not multiplied by the learning rate, in the simulator and in
  the ODE (dR/dα = −wd R): their ``wd`` = our ``eta · weight_decay``, i.e. our κ = wd / lr
  (exact for a constant learning rate; their code has no schedules).
* label noise: y = φ* + σ ε with σ the standard deviation (``--sigma``): our
  ``noise`` (a variance) = σ².  The noise term in dQ is lr² σ² v_i v_k J2, ours
  η² ν noise v_i v_j <g'g'> with ν = 1, B = 1: the same.
* readout decay: with a trained second layer and wd > 0 they also decay the readout
  (dv/dα gets −wd v, a line their source itself marks with a question mark).  The family's
  ``weight_decay_readout`` κ_v gives dv/dα −η_v κ_v v, so theirs is κ_v = wd / lr2; with
  κ_v = 0 (the default) the family decays only the first layer and their dv/dα = ours − wd v.
* their ODE has no mini-batch size (B = 1) and no order switch (always order 2).

All functions take plain nested sequences / numpy arrays and a ``lib`` (:data:`FLOAT64`,
or :data:`MPMATH`, whose precision is the caller's ``mpmath.workdps`` scope).

>>> import numpy as np
>>> Q, R, T = np.eye(1), np.zeros((1, 1)), np.eye(1)
>>> round(eps_g(Q, R, T, [1.0], [1.0]), 12)          # two independent erf units: 2·(1/π) asin(1/2)
0.333333333333
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import mpmath
import numpy as np


@dataclass(frozen=True)
class Lib:
    """The elementary functions a number type brings (float64 via math, or mpmath)."""

    name: str
    sqrt: object
    asin: object
    pi: object
    convert: object


FLOAT64 = Lib("float64", math.sqrt, math.asin, math.pi, float)
MPMATH = Lib("mpmath", mpmath.sqrt, mpmath.asin, mpmath.pi, mpmath.mpf)

ACTIVATIONS = ("erf", "linear")        # nn2pp's ODE: --g 1 and --g 0


def covariance(Q, R, T, lib=FLOAT64):
    """The joint covariance of the fields (λ_1..λ_K, ν_1..ν_M) as a nested list."""
    Q, R, T = (np.asarray(x, dtype=object) for x in (Q, R, T))
    K, M = R.shape
    top = [[lib.convert(Q[i, j]) for j in range(K)] + [lib.convert(R[i, n]) for n in range(M)]
           for i in range(K)]
    bottom = [[lib.convert(R[j, n]) for j in range(K)] + [lib.convert(T[n, m]) for m in range(M)]
              for n in range(M)]
    return top + bottom


class _Erf:
    """Closed forms for g(x) = erf(x/√2) (Saad & Solla 1995), on entries of a covariance C."""

    def __init__(self, lib):
        self.lib = lib

    def I2(self, C, a, b):
        s = self.lib.sqrt
        return 2 / self.lib.pi * self.lib.asin(C[a][b] / (s(1 + C[a][a]) * s(1 + C[b][b])))

    def I3(self, C, a, b, c):
        # <g'(z_a) z_b g(z_c)>; independent of C[b][b], linear in C[a][b], C[b][c]
        one_a = 1 + C[a][a]
        lam3 = one_a * (1 + C[c][c]) - C[a][c] ** 2
        return (2 / self.lib.pi / self.lib.sqrt(lam3)
                * (C[b][c] * one_a - C[a][b] * C[a][c]) / one_a)

    def I4(self, C, a, b, c, d):
        # <g'(z_a) g'(z_b) g(z_c) g(z_d)>
        ea, eb = 1 + C[a][a], 1 + C[b][b]
        lam4 = ea * eb - C[a][b] ** 2
        lam0 = (lam4 * C[c][d] - C[b][c] * C[b][d] * ea - C[a][c] * C[a][d] * eb
                + C[a][b] * C[a][c] * C[b][d] + C[a][b] * C[a][d] * C[b][c])
        lam1 = (lam4 * (1 + C[c][c]) - C[b][c] ** 2 * ea - C[a][c] ** 2 * eb
                + 2 * C[a][b] * C[a][c] * C[b][c])
        lam2 = (lam4 * (1 + C[d][d]) - C[b][d] ** 2 * ea - C[a][d] ** 2 * eb
                + 2 * C[a][b] * C[a][d] * C[b][d])
        s = self.lib.sqrt
        return 4 / self.lib.pi ** 2 / s(lam4) * self.lib.asin(lam0 / s(lam1 * lam2))

    def J2(self, C, a, b):
        # <g'(z_a) g'(z_b)>: the output-noise term
        s = self.lib.sqrt
        return 2 / self.lib.pi / s(1 + C[a][a] + C[b][b] - C[a][b] ** 2 + C[a][a] * C[b][b])


class _Linear:
    """g(x) = x: every integral is a covariance entry (or 1)."""

    def __init__(self, lib):
        self.lib = lib

    def I2(self, C, a, b):
        return C[a][b]

    def I3(self, C, a, b, c):
        return C[b][c]

    def I4(self, C, a, b, c, d):
        return C[c][d]

    def J2(self, C, a, b):
        return self.lib.convert(1)


def integrals(activation: str, lib=FLOAT64):
    """The I2, I3, I4, J2 of nn2pp's ODE for ``activation`` ("erf" or "linear")."""
    if activation not in ACTIVATIONS:
        raise ValueError(f"nn2pp's ODE has activation 'erf' or 'linear', got {activation!r}")
    return (_Erf if activation == "erf" else _Linear)(lib)


def rhs(Q, R, T, v, A, *, lr, lr2=None, wd=0, sigma=0, activation="erf", both=False,
        decay_readout=True, lib=FLOAT64):
    """(dQ/dα, dR/dα, dv/dα) of nn2pp's ``propagate`` at one state (its increment over dt).

    Parameters
    ----------
    Q, R, T : (K, K), (K, M), (M, M) order parameters (symmetric Q, T).
    v, A : student (K) and teacher (M) second-layer weights.
    lr, lr2 : learning rates of the first and the second layer (lr2 = lr when None, as in
        nn2pp's ``main``).
    wd : weight-decay constant (not scaled by lr; see the module docstring).
    sigma : standard deviation of the teacher's output noise.
    both : train the second layer (``--both``); dv/dα is zero otherwise.
    decay_readout : nn2pp decays the trained readout too (−wd v); False drops that one term,
        which is the family's model (weight decay on the first layer only).

    Returns
    -------
    dQ (K, K), dR (K, M), dv (K) : numpy object arrays of ``lib`` numbers.

    >>> dQ, dR, dv = rhs([[1.0]], [[0.5]], [[1.0]], [1.0], [1.0], lr=0.5)
    >>> float(dR[0, 0]) > 0 and float(dv[0]) == 0
    True
    """
    g = integrals(activation, lib)
    C = covariance(Q, R, T, lib)
    K, M = np.asarray(R, dtype=object).shape
    cv = [lib.convert(x) for x in v]
    cA = [lib.convert(x) for x in A]
    lr, wd, sigma = lib.convert(lr), lib.convert(wd), lib.convert(sigma)
    lr2 = lr if lr2 is None else lib.convert(lr2)
    xs = list(range(K))                   # student fields in C
    ys = [K + n for n in range(M)]        # teacher fields in C

    def delta3(a, b):
        """<g'(z_a) z_b (φ* − φ)>."""
        return (sum(cA[m] * g.I3(C, a, b, ys[m]) for m in range(M))
                - sum(cv[j] * g.I3(C, a, b, xs[j]) for j in range(K)))

    def delta4(a, b):
        """<g'(z_a) g'(z_b) (φ* − φ)²>."""
        tt = sum(cA[n] * cA[m] * g.I4(C, a, b, ys[n], ys[m]) for n in range(M) for m in range(M))
        st = sum(cv[j] * cA[n] * g.I4(C, a, b, xs[j], ys[n]) for j in range(K) for n in range(M))
        ss = sum(cv[j] * cv[l] * g.I4(C, a, b, xs[j], xs[l]) for j in range(K) for l in range(K))
        return tt - 2 * st + ss

    dR = np.empty((K, M), dtype=object)
    for i in range(K):
        for n in range(M):
            dR[i, n] = -wd * C[i][ys[n]] + lr * cv[i] * delta3(i, ys[n])
    dQ = np.empty((K, K), dtype=object)
    for i in range(K):
        for k in range(i, K):
            first = lr * (cv[i] * delta3(i, k) + cv[k] * delta3(k, i))
            second = lr ** 2 * cv[i] * cv[k] * (sigma ** 2 * g.J2(C, i, k) + delta4(i, k))
            dQ[i, k] = dQ[k, i] = -2 * wd * C[i][k] + first + second
    dv = np.empty(K, dtype=object)
    for i in range(K):
        if both:
            decay = wd * cv[i] if decay_readout else 0
            dv[i] = -decay + lr2 * (sum(cA[n] * g.I2(C, i, ys[n]) for n in range(M))
                                         - sum(cv[j] * g.I2(C, i, j) for j in range(K)))
        else:
            dv[i] = lib.convert(0)
    return dQ, dR, dv


def eps_g(Q, R, T, v, A, activation="erf", lib=FLOAT64):
    """nn2pp's ``eg_analytical``: ½<(φ* − φ)²> over a clean sample (no label noise)."""
    g = integrals(activation, lib)
    C = covariance(Q, R, T, lib)
    K, M = np.asarray(R, dtype=object).shape
    cv = [lib.convert(x) for x in v]
    cA = [lib.convert(x) for x in A]
    ss = sum(cv[i] * cv[j] * g.I2(C, i, j) for i in range(K) for j in range(K))
    tt = sum(cA[n] * cA[m] * g.I2(C, K + n, K + m) for n in range(M) for m in range(M))
    st = sum(cv[i] * cA[n] * g.I2(C, i, K + n) for i in range(K) for n in range(M))
    return (ss + tt - 2 * st) / 2


def euler(Q, R, T, v, A, *, dt, steps, record_every=None, lib=FLOAT64, **params):
    """Forward Euler as nn2pp's ``propagate`` steps it: every increment from the state at the
    start of the step, ``steps`` steps of ``dt``.  Returns the final (Q, R, v) and, with
    ``record_every``, a list of (α, ε_g) every that many steps (α = k·dt, starting at 0).

    >>> Q, R, v, _ = euler([[1.0]], [[0.0]], [[1.0]], [1.0], [1.0], dt=0.01, steps=10, lr=0.5)
    >>> 0 < float(R[0, 0]) < 1
    True
    """
    Q = np.array(Q, dtype=object)
    R = np.array(R, dtype=object)
    v = np.array(v, dtype=object)
    activation = params.get("activation", "erf")
    dt = lib.convert(dt)
    curve = []
    for k in range(steps + 1):
        if record_every and k % record_every == 0:
            curve.append((k * dt, eps_g(Q, R, T, v, A, activation, lib)))
        if k == steps:
            break
        dQ, dR, dv = rhs(Q, R, T, v, A, lib=lib, **params)
        Q, R, v = Q + dt * dQ, R + dt * dR, v + dt * dv
    return Q, R, v, curve


def peer_parameters(eta, *, eta_readout=None, weight_decay=0, noise=0):
    """The nn2pp command-line parameters (lr, lr2, wd, sigma) of a family spec's
    (eta, eta_readout, weight_decay, noise); see the module docstring for the derivation.

    >>> peer_parameters(0.5, eta_readout=0.2, weight_decay=0.1, noise=0.04)
    {'lr': 0.5, 'lr2': 0.2, 'wd': 0.05, 'sigma': 0.2}
    """
    return {"lr": eta, "lr2": eta if eta_readout is None else eta_readout,
            "wd": eta * weight_decay, "sigma": math.sqrt(noise)}
