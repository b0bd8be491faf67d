"""The modes basis at scale: a stiff float64 solver with no printed modules (any K, M, L).

Why a new solver.  In the modes basis every mode k obeys (solvers/core/modes_kernel.py)

    dΩ_k/dα = λ_k (G Ω_k + Ω_k Gᵀ) (+ e2 λ_k w_k F),   G = [[P, S], [0, 0]],

with P, S (and F) functions of the level-1 overlaps v1 = Σ_k λ_k Ω_k only.  The fastest rate is
≈ λ_1 |P| and λ_1 ∝ L, so the explicit RK7(8) of ``solvers.hierarchy.odes`` is stability-bound (its step
is ~1/(λ_1 |P|) for the whole run).  Freezing G and propagating each mode exactly is not
enough either: the modes are coupled through v1 with a strength of the same order as the
stiffness (it scales like the level-2 overlaps), and an exponential integrator that treats the
coupling explicitly is unstable at large steps (measured: spectral radius 1.5 at α = 1000,
h = 100, L = 64, K = M = 2, while the true linearisation is stable).  So the coupling is
treated implicitly as well.

State.  Ω_k is carried in factored form Ω_k = Z_k diag(s_k) Z_kᵀ, Z_k = [J_k; B_k] of shape
(K+M) x r with s = ±1 (+1 for every realisable initial condition): the flow is a congruence, so
J_k obeys dJ_k/dα = λ_k (P J_k + S B_k) with B_k constant -- the mean-field weight dynamics in
the eigenbasis.  r is the rank of the initial Ω_k: N/L for a finite-N realisation (1 for the
paper's Figure 6, L = N) and at most K + M, so the factored state is never larger than the
overlaps and often much smaller.  For order 2 the η² source is not a congruence; it is carried
as an extra symmetric part D_k of Q_k (Q_k = J_k s J_kᵀ + D_k, dD_k/dα = λ_k (P D_k + D_k P) +
e2 λ_k w_k F).

Integrator.  RODAS4 (Hairer & Wanner, Solving ODEs II, §IV.7; the coefficients of rodas.f):
a 6-stage, order-4, L-stable, stiffly accurate Rosenbrock method with an embedded order-3
error estimate, using the exact Jacobian.  The Jacobian is "block diagonal + coupling through
v1": in the eigenbasis of P the block-diagonal part λ_k P is diagonal, so (I/(γh) − 𝒥) is solved
by the Woodbury identity on the reduced space of level-1 perturbations (dimension
n_v = KM + K(K+1)/2).  The reduced operator needs only K x K x (K or M) tensors summed over the
modes once per step; the derivatives of P, S by v1 are closed forms
(``modes_kernel.CoefficientDerivative``, checked against complex steps), those of F complex-step
derivatives of the I4 closed form (exact to rounding).  The reduced system is solved densely for
n_v ≤ 300 and otherwise by GCR whose Krylov directions are shared by the six stages of a step.
BLAS runs single-threaded inside the solver (the work is many small products; on the shared
2-core machine multi-threaded OpenBLAS made 40 x 40 eigendecompositions 50x slower).

Error control: scaled RMS norm of the embedded estimate over the J entries (and the D entries,
on the scale of the Q_k entries they add to), rtol relative, atol = rtol · 1e-4 · (size of a
teacher-factor entry) absolute.  Order 2 is exact but costs K(K+1)/2 (K+M)² I4 evaluations per
right-hand side and per reduced direction: meant for small K.

Accuracy and cost: bench/bench_modes_fast.py; correctness: tests/test_modes_fast.py.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from solvers.core import modes_kernel as mk
from solvers.integrators.rk78 import IntegrationError
from solvers.hierarchy.trajectory import Trajectory

__all__ = ["ModesInputs", "factor_overlaps", "inputs_from_overlaps", "inputs_from_problem",
           "random_inputs", "expected_inputs", "solve_modes_fast", "IntegrationError"]

ARITHMETIC = "float64-rodas4"
METHODS = {"rodas4": ARITHMETIC, "rk78": "float64-rk78"}   # method -> Trajectory.arithmetic


# -- inputs ----------------------------------------------------------------------------------

@dataclass
class ModesInputs:
    """Everything the solver needs, as float64 arrays.

    lam, w: eigenvalues and direction fractions (L,); J (L, r, K), B (L, r, M): student and
    teacher factors with Ω_k = Z_k diag(s_k) Z_kᵀ, Z_k = [J_kᵀ, B_kᵀ]ᵀ; s (L, r) = ±1.
    ``factor_error``: max over modes and over the Q, R, T blocks of |block − its
    reconstruction|_max / |block|_max.
    """

    activation: str
    K: int
    M: int
    lam: np.ndarray
    w: np.ndarray
    eta: float
    order: int
    J: np.ndarray
    B: np.ndarray
    s: np.ndarray
    factor_error: float = 0.0
    meta: dict = field(default_factory=dict)

    def __post_init__(self):
        mk.check_activation(self.activation)
        if self.order not in (1, 2):
            raise ValueError(f"order must be 1 or 2, got {self.order!r}")
        self.lam = np.ascontiguousarray(self.lam, dtype=float)
        self.w = np.ascontiguousarray(self.w, dtype=float)
        L = self.lam.size
        if self.J.shape[0] != L or self.J.shape[2] != self.K or self.B.shape[2] != self.M:
            raise ValueError(f"factor shapes {self.J.shape}, {self.B.shape} do not fit L = {L}, "
                             f"K = {self.K}, M = {self.M}")
        if not (np.all(np.isfinite(self.lam)) and np.all(self.lam > 0)):
            raise ValueError("eigenvalues must be finite and > 0")
        if not self.eta > 0:
            raise ValueError(f"eta must be > 0, got {self.eta}")

    @property
    def L(self) -> int:
        return self.lam.size

    @property
    def r(self) -> int:
        return self.J.shape[1]

    def overlaps(self, J=None, D=None):
        """Mode overlaps R (L, K, M), Q (L, K, K), T (L, M, M) of the factors (default: initial)."""
        J = self.J if J is None else J
        Js = J * self.s[:, :, None]
        R = np.swapaxes(Js, 1, 2) @ self.B
        Q = np.swapaxes(Js, 1, 2) @ J
        T = np.swapaxes(self.B * self.s[:, :, None], 1, 2) @ self.B
        if D is not None:
            Q = Q + D
        return R, Q, T


def factor_overlaps(R, Q, T, rel_tol: float = 1e-12):
    """Factor mode overlaps as Ω_k = Z_k diag(s_k) Z_kᵀ (block LDLᵀ with rank truncation).

    The teacher block is factored first (T_k = B̂ B̂ᵀ over its eigenvalues above rel_tol times
    the largest), the student rows along it follow from R_k, and the Schur complement
    Q_k − J_B J_Bᵀ is factored on its own scale (eigenvalues above rel_tol · max|Q_k,ii|, with
    signs), so a tiny student (σ_J = 1e-6) is never truncated against the O(1) teacher.
    Modes whose R_k is not in the range of T_k (no realisable Ω_k does that) fall back to the
    full eigendecomposition of Ω_k.  Returns (J (L, r, K), B (L, r, M), s (L, r), error).
    """
    with _blas_threads(1):     # many tiny eigendecompositions: threads only cost time
        return _factor_overlaps(R, Q, T, rel_tol)


def _factor_overlaps(R, Q, T, rel_tol, chunk=256):
    R, Q, T = (np.asarray(a, dtype=float) for a in (R, Q, T))
    L, K, M = R.shape
    parts = [_factor_chunk(R[a:a + chunk], Q[a:a + chunk], T[a:a + chunk], rel_tol)
             for a in range(0, L, chunk)]
    r = max(p[0].shape[2] for p in parts)

    def pad(x, axis):
        width = [(0, 0)] * x.ndim
        width[axis] = (0, r - x.shape[axis])
        return np.pad(x, width, constant_values=0.0 if axis == 2 else 1.0)
    Z = np.concatenate([pad(p[0], 2) for p in parts])
    sgn = np.concatenate([pad(p[1], 1) for p in parts])
    err = max(p[2] for p in parts)
    J = np.ascontiguousarray(np.swapaxes(Z[:, :K, :], 1, 2))
    B = np.ascontiguousarray(np.swapaxes(Z[:, K:, :], 1, 2))
    return J, B, sgn, err


def _factor_chunk(R, Q, T, rel_tol):
    """Z (n, K+M, r_chunk), signs (n, r_chunk), max relative reconstruction error per block."""
    L, K, M = R.shape
    Q = 0.5 * (Q + np.swapaxes(Q, 1, 2))
    T = 0.5 * (T + np.swapaxes(T, 1, 2))
    muT, UT = np.linalg.eigh(T)                                   # ascending
    topT = np.abs(muT).max(axis=1, keepdims=True)
    keepT = muT > rel_tol * np.where(topT > 0, topT, 1.0)
    sq = np.sqrt(np.where(keepT, muT, 1.0))
    Bh = np.where(keepT[:, None, :], UT * sq[:, None, :], 0.0)      # (L, M, M) columns
    JB = np.where(keepT[:, None, :], (R @ UT) / sq[:, None, :], 0.0)  # (L, K, M)
    scaleR = np.abs(R).max(axis=(1, 2)) + np.sqrt(np.abs(Q).max(axis=(1, 2)) * topT[:, 0])
    bad = np.abs(R - JB @ np.swapaxes(Bh, 1, 2)).max(axis=(1, 2)) > 1e-10 * np.where(
        scaleR > 0, scaleR, 1.0)
    Sch = Q - JB @ np.swapaxes(JB, 1, 2)
    Sch = 0.5 * (Sch + np.swapaxes(Sch, 1, 2))
    muQ, UQ = np.linalg.eigh(Sch)
    topQ = np.abs(np.diagonal(Q, axis1=1, axis2=2)).max(axis=1, keepdims=True)
    keepQ = np.abs(muQ) > rel_tol * np.where(topQ > 0, topQ, 1.0)
    JQ = np.where(keepQ[:, None, :], UQ * np.sqrt(np.abs(muQ))[:, None, :], 0.0)
    # columns: teacher-aligned (M of them, some zero) then the Schur part (K of them)
    Z = np.zeros((L, K + M, K + M))
    Z[:, :K, :M] = JB
    Z[:, K:, :M] = Bh
    Z[:, :K, M:] = JQ
    sgn = np.ones((L, K + M))
    sgn[:, M:] = np.where(keepQ, np.sign(muQ), 1.0)
    keep = np.concatenate([keepT, keepQ], axis=1)
    if np.any(bad):
        Om = np.block([[Q[bad], R[bad]], [np.swapaxes(R[bad], 1, 2), T[bad]]])
        mu, U = np.linalg.eigh(Om)
        Z[bad] = U * np.sqrt(np.abs(mu))[:, None, :]
        sgn[bad] = np.where(mu < 0, -1.0, 1.0)
        keep[bad] = mu != 0
    # order the kept columns first in each mode; drop columns that are zero in every mode
    order = np.argsort(~keep, axis=1, kind="stable")
    Z = np.take_along_axis(Z, order[:, None, :], axis=2)
    sgn = np.take_along_axis(sgn, order, axis=1)
    r = max(1, int(keep.sum(axis=1).max()))
    Z, sgn = Z[:, :, :r], sgn[:, :r]
    # reconstruction error, each block on its own scale
    Zs = Z * sgn[:, None, :]
    err = 0.0
    for got, ref in ((Zs[:, :K] @ np.swapaxes(Z[:, :K], 1, 2), Q),
                     (Zs[:, :K] @ np.swapaxes(Z[:, K:], 1, 2), R),
                     (Zs[:, K:] @ np.swapaxes(Z[:, K:], 1, 2), T)):
        scale = np.abs(ref).max(axis=(1, 2))
        e = np.abs(got - ref).max(axis=(1, 2))
        err = max(err, float(np.max(np.where(scale > 0, e / np.where(scale > 0, scale, 1.0), e))))
    return Z, sgn, err


def inputs_from_overlaps(lam, R, Q, T, *, eta, order=1, w=None, activation="erf",
                         K=None, M=None, rel_tol=1e-12) -> ModesInputs:
    """Inputs from mode overlaps R (L, K, M), Q (L, K, K), T (L, M, M) (floats or exact numbers)."""
    def arr(a):
        a = np.asarray(a)
        return a.astype(float) if a.dtype != object else np.vectorize(float, otypes=[float])(a)
    R, Q, T = arr(R), arr(Q), arr(T)
    lam = arr(lam)
    L = lam.size
    if R.shape[0] != L:
        raise ValueError(f"{R.shape[0]} modes of overlaps for {L} eigenvalues")
    K = R.shape[1] if K is None else K
    M = R.shape[2] if M is None else M
    w = np.full(L, 1.0 / L) if w is None else arr(w)
    J, B, s, err = factor_overlaps(R, Q, T, rel_tol)
    return ModesInputs(activation, K, M, lam, w, float(eta), int(order), J, B, s, err)


def inputs_from_problem(problem) -> ModesInputs:
    """Inputs from a :class:`solvers.core.problem.Problem` without ``problem.numeric``.

    (``numeric`` builds the level-basis quantities too; in float64 they overflow from L ≈ 256
    on.)  Eigenvalues and weights are rounded once from their exact values; the initial
    condition must be given in the modes basis.
    """
    init = problem.init
    if init.basis != "modes":
        raise ValueError("solve_modes_fast needs the initial condition in the modes basis "
                         "(random_init / expected_init / explicit modes); level-basis data must "
                         "first be converted at high precision")
    lam = [float(v) for v in problem.spectrum.eigenvalues]
    w = [float(v) for v in problem.spectrum.weights]
    key = problem.key
    if not problem.plain_training or problem.schedule is not None:
        raise ValueError("the float64 modes kernel has no label noise, weight decay, batch "
                         "size or learning-rate schedule; use the generated system "
                         "(solvers.hierarchy.odes)")
    if not key.is_plain():
        raise ValueError(f"the float64 modes kernel covers erf and linear with teacher = student "
                         f"and the paper's readouts, not {key.description}; use the generated "
                         f"system (solvers.hierarchy.odes)")
    return inputs_from_overlaps(lam, init.R, init.Q, init.T, eta=float(Fraction(problem.eta)),
                                order=problem.order, w=w, activation=key.activation,
                                K=key.K, M=key.M)


def _eigenvalues(L, beta, eigenvalues):
    from solvers.core.eigenvalues import power_law_eigenvalues
    if eigenvalues is not None:
        if L is not None or beta is not None:
            raise ValueError("give either L and beta (power law) or eigenvalues, not both")
        lam = np.asarray(eigenvalues, dtype=float)
        if lam.ndim != 1 or lam.size == 0 or np.any(np.diff(lam) >= 0) or np.any(lam <= 0):
            raise ValueError("eigenvalues must be positive and strictly decreasing")
        return lam
    if L is None or beta is None:
        raise ValueError("give either L and beta (power law) or eigenvalues")
    return power_law_eigenvalues(L, beta)


def random_inputs(K, M, N, *, eta, sigma_J, seed, L=None, beta=None, eigenvalues=None,
                  order=1, activation="erf") -> ModesInputs:
    """The finite-N realisation that ``simulate`` / ``random_init`` use for this seed (no SymPy).

    Power-law eigenvalues in float64 (mean 1), the initial mode overlaps of
    ``solvers.core.initial.initial_mode_overlaps``, factored (rank N/L when N/L < K + M).
    """
    from solvers.core.initial import initial_mode_overlaps
    lam = _eigenvalues(L, beta, eigenvalues)
    m = initial_mode_overlaps(K=K, M=M, N=N, sigma_J=sigma_J, seed=seed, eigenvalues=lam)
    inp = inputs_from_overlaps(lam, m["R"], m["Q"], m["T"], eta=eta, order=order,
                               activation=activation, K=K, M=M)
    inp.meta.update(init="random", N=N, sigma_J=sigma_J, seed=seed, beta=beta)
    return inp


def expected_inputs(K, M, *, eta, sigma_J, L=None, beta=None, eigenvalues=None, order=1,
                    activation="erf") -> ModesInputs:
    """The teacher/student average: R_k = 0, Q_k = σ_J² w_k I, T_k = w_k I (rank K + M)."""
    lam = _eigenvalues(L, beta, eigenvalues)
    L = lam.size
    w = np.full(L, 1.0 / L)
    J = np.zeros((L, K + M, K))
    B = np.zeros((L, K + M, M))
    J[:, np.arange(K), np.arange(K)] = sigma_J * np.sqrt(w)[:, None]
    B[:, K + np.arange(M), np.arange(M)] = np.sqrt(w)[:, None]
    inp = ModesInputs(activation, K, M, lam, w, float(eta), int(order), J, B,
                      np.ones((L, K + M)))
    inp.meta.update(init="expected", sigma_J=sigma_J, beta=beta)
    return inp


# -- the system with its structured linear solves --------------------------------------------

_CS = 1e-30   # complex-step size (relative to a unit-normalised direction)


class _System:
    """y = [J (L r K) | D (L K K) for order 2] as one flat float64 vector."""

    dense_max = 300       # reduced systems up to this size are solved densely
    gcr_tol = 1e-13       # relative residual of the reduced (GCR) solves

    def __init__(self, inp: ModesInputs):
        self.inp = inp
        self.act, self.K, self.M, self.eta = inp.activation, inp.K, inp.M, inp.eta
        L, r, K, M = inp.L, inp.r, inp.K, inp.M
        self.L, self.r = L, r
        self.lam = inp.lam
        self.order2 = inp.order == 2
        self.e2 = inp.eta ** 2 if self.order2 else 0.0
        self.lw = inp.lam * inp.w                                  # λ_k w_k
        self.lr = np.repeat(inp.lam, r)                            # λ per factor row
        self.wf = (inp.lam[:, None] * inp.s).reshape(-1)           # v1 weights λ_k s_kρ
        self.Bf = np.ascontiguousarray(inp.B.reshape(L * r, M))
        self.T1 = (self.Bf * self.wf[:, None]).T @ self.Bf
        self.T1 = 0.5 * (self.T1 + self.T1.T)
        self.nJ = L * r * K
        self.n = self.nJ + (L * K * K if self.order2 else 0)
        self.iu = np.triu_indices(K)
        self.iuM = np.triu_indices(M)
        Tm = inp.overlaps()[2]                                     # (L, M, M), constant
        self.T_upper = np.ascontiguousarray(Tm[:, self.iuM[0], self.iuM[1]])
        self.n_v = K * M + len(self.iu[0])
        self.counts = dict(n_fevals=0, n_jacobians=0, n_solves=0, gcr_iterations=0)

    # state <-> arrays
    def split(self, y):
        Jf = y[:self.nJ].reshape(self.L * self.r, self.K)
        D = y[self.nJ:].reshape(self.L, self.K, self.K) if self.order2 else None
        return Jf, D

    def join(self, Jf, D=None):
        if not self.order2:
            return Jf.reshape(-1)
        return np.concatenate([Jf.reshape(-1), D.reshape(-1)])

    def initial_state(self):
        D = np.zeros((self.L, self.K, self.K)) if self.order2 else None
        return self.join(np.ascontiguousarray(self.inp.J.reshape(-1, self.K)), D)

    def v1(self, Jf, D):
        Jw = Jf * self.wf[:, None]
        R1 = Jw.T @ self.Bf
        Q1 = Jw.T @ Jf
        if D is not None:
            Q1 = Q1 + np.tensordot(self.lam, D, axes=1)
        return R1, 0.5 * (Q1 + Q1.T)

    def f(self, y):
        self.counts["n_fevals"] += 1
        Jf, D = self.split(y)
        R1, Q1 = self.v1(Jf, D)
        P, S = mk.coefficients(R1, Q1, self.T1, self.eta, self.act)
        dJ = self.lr[:, None] * (Jf @ P + self.Bf @ S.T)
        if not self.order2:
            return dJ.reshape(-1), (R1, Q1, P)
        F = mk.order2_term(R1, Q1, self.T1, self.act)
        X = P @ D
        dD = (self.lam[:, None, None] * (X + np.swapaxes(X, 1, 2))
              + self.e2 * self.lw[:, None, None] * F)
        return self.join(dJ, dD), (R1, Q1, P)

    def observables(self, y):
        Jf, D = self.split(y)
        R1, Q1 = self.v1(Jf, D)
        return R1, Q1, float(mk.eps_g(R1, Q1, self.T1, self.act))

    def overlaps(self, y):
        Jf, D = self.split(y)
        return self.inp.overlaps(Jf.reshape(self.L, self.r, self.K), D)[:2]

    # --- derivatives of the coefficients by v1 ---------------------------------------------
    def _dcoef(self, dR, dQ):
        """(dP, dS, dF|None) for batches of level-1 perturbations dR (b, K, M), dQ (b, K, K)."""
        dP, dS = self.cur["dG"](dR, dQ)
        dF = None
        if self.order2:   # complex step through the I4 closed form
            nrm = np.maximum(np.abs(dR).max(axis=(1, 2)), np.abs(dQ).max(axis=(1, 2)))
            nrm = np.where(nrm > 0, nrm, 1.0)
            R1, Q1, T1 = self.cur["R1"], self.cur["Q1"], self.T1.astype(complex)
            nb = nrm[:, None, None]
            dF = (mk.order2_term(R1 + 1j * _CS * dR / nb, Q1 + 1j * _CS * dQ / nb, T1,
                                 self.act).imag * (nb / _CS))
        return dP, dS, dF

    def _unflat(self, u):
        """Reduced vectors (b, n_v) -> dR~ (b, K, M), dQ~ (b, K, K) symmetric."""
        return mk.unpack(u, self.K, self.M)

    def _flat(self, dR, dQ):
        return np.concatenate([dR.reshape(dR.shape[0], -1), dQ[:, self.iu[0], self.iu[1]]],
                              axis=1)

    def _coupling(self, u):
        """u (b, n_v) in the rotated basis -> (dP~, dS~, dF~) in the rotated basis."""
        V = self.cur["V"]
        dRt, dQt = self._unflat(u)
        dP, dS, dF = self._dcoef(V @ dRt, V @ dQt @ V.T)
        dPt, dSt = V.T @ dP @ V, V.T @ dS
        dFt = None if dF is None else V.T @ dF @ V
        return dPt, dSt, dFt

    def _reduce(self, dPt, dSt, dFt):
        """Level-1 perturbation (rotated, reduced) produced by the coupling terms.

        With x' = c λ (J~ dP~ + B dS~ᵀ) (row-scaled), dR~1 = x'ᵀ W B and dQ~1 = X + Xᵀ,
        X = x'ᵀ W J~;
        per row i of dP~/dS~ this is one small product with the precomputed
        TW[i] = [[TA_i, TC_i], [TB_i, TA_iᵀ]] ((K+M) x (M+K)), batched over i.
        """
        c = self.cur
        lhs = np.concatenate([dPt, dSt], axis=2).transpose(1, 0, 2)    # (K, b, K+M)
        out = np.matmul(lhs, c["TW"]).transpose(1, 0, 2)                # (b, K, M+K)
        dR, X = out[:, :, :self.M], out[:, :, self.M:]
        if self.order2:
            X = X + np.matmul(dPt.transpose(1, 0, 2), c["TDt"]).transpose(1, 0, 2)
            X = X + 0.5 * self.e2 * c["TE"][None] * dFt
        return self._flat(dR, X + np.swapaxes(X, 1, 2))

    def _apply(self, u):
        return u - self._reduce(*self._coupling(u))

    def prepare(self, y, aux, tau) -> bool:
        """Set up (I/τ − 𝒥(y)) solves; False when the diagonal part is (nearly) singular."""
        self.counts["n_jacobians"] += 1
        R1, Q1, P = aux
        K, M, L, r = self.K, self.M, self.L, self.r
        d, V = np.linalg.eigh(P)
        den = 1.0 - tau * self.lam[:, None] * d[None, :]            # (L, K)
        if self.order2:
            den2 = 1.0 - tau * self.lam[:, None, None] * (d[:, None] + d[None, :])[None]
            if den2.min() < 0.1:
                return False
        if den.min() < 0.1:
            return False
        Jf, D = self.split(y)
        c = np.repeat(tau / den, r, axis=0)                           # (L r, K)
        Jt = Jf @ V
        cur = self.cur = dict(V=V, c=c, Jt=Jt, R1=R1, Q1=Q1,
                              dG=mk.CoefficientDerivative(R1, Q1, self.T1, self.eta, self.act))
        # TA_ijm = Σ_k c_ki λ_k² R~_k,jm, TB_imn = Σ_k c_ki λ_k² T_k,mn,
        # TC_ijl = Σ_k c_ki λ_k² Q~_k,jl
        # with the rotated mode overlaps of the J-part (R~_k = J~_kᵀ s B_k, Q~_k = J~_kᵀ s J~_k);
        # the symmetric ones from their upper triangles.
        cl2T = (tau / den * (self.lam ** 2)[:, None]).T              # (K, L)
        Jt3 = Jt.reshape(L, r, K)
        Js3 = np.swapaxes(Jt3 * self.inp.s[:, :, None], 1, 2)        # (L, K, r)
        TA = (cl2T @ (Js3 @ self.inp.B).reshape(L, K * M)).reshape(K, K, M)
        TB = _unpack_sym(cl2T @ self.T_upper, M, self.iuM)
        Qt = Js3 @ Jt3
        TC = _unpack_sym(cl2T @ Qt[:, self.iu[0], self.iu[1]], K, self.iu)
        TW = np.empty((K, K + M, M + K))
        TW[:, :K, :M] = TA
        TW[:, :K, M:] = TC
        TW[:, K:, :M] = TB
        TW[:, K:, M:] = np.swapaxes(TA, 1, 2)
        cur["TW"] = TW
        if self.order2:
            c2 = tau / den2                                           # (L, K, K)
            Dt = V.T @ D @ V
            l2c2 = (self.lam ** 2)[:, None, None] * c2
            cur.update(c2=c2, Dt=Dt)
            # TDt[i, l, j] = Σ_k λ_k² c2_k,ij D~_k,lj
            cur["TDt"] = np.einsum("kij,klj->ilj", l2c2, Dt, optimize=True)
            cur["TE"] = np.einsum("k,kij->ij", self.inp.w, l2c2)    # Σ_k λ_k² w_k c2_k
        if self.n_v <= self.dense_max:
            cols = self._apply(np.eye(self.n_v))                      # rows: images of e_i
            cur["inv"] = np.linalg.inv(cols.T)
        else:
            cur["inv"] = None
            cur["gP"] = None
        return True

    def _reduced_solve(self, ub):
        """Solve (I − 𝒦𝒢) u = ub: dense inverse, or GCR with directions kept for the step.

        GCR keeps q_i = (I − 𝒦𝒢) p_i orthonormal (classical Gram–Schmidt applied twice);
        the six stage solves of a step share the directions, so later stages mostly need
        only the projection onto the stored ones.
        """
        cur = self.cur
        if cur["inv"] is not None:
            return cur["inv"] @ ub
        nb = np.linalg.norm(ub)
        u = np.zeros_like(ub)
        if nb == 0:
            return u
        if cur.get("gP") is None:
            cap = min(self.n_v, 64)
            cur["gP"], cur["gQ"] = np.empty((cap, self.n_v)), np.empty((cap, self.n_v))
            cur["gm"] = 0
        m = cur["gm"]
        Ps, Qs = cur["gP"], cur["gQ"]
        a = Qs[:m] @ ub
        u = a @ Ps[:m]
        res = ub - a @ Qs[:m]
        it = 0
        while np.linalg.norm(res) > self.gcr_tol * nb:
            if m >= self.n_v + 1 or it >= 2 * self.n_v:
                raise IntegrationError("GCR did not converge on the reduced system")
            p = res.copy()
            q = self._apply(p[None])[0]
            for _ in range(2):
                a = Qs[:m] @ q
                q -= a @ Qs[:m]
                p -= a @ Ps[:m]
            nq = np.linalg.norm(q)
            if nq == 0:
                raise IntegrationError("GCR broke down on the reduced system")
            if m == len(Ps):                      # grow the store
                Ps = np.concatenate([Ps, np.empty_like(Ps)])
                Qs = np.concatenate([Qs, np.empty_like(Qs)])
                cur["gP"], cur["gQ"] = Ps, Qs
            Ps[m], Qs[m] = p / nq, q / nq
            a = Qs[m] @ res
            u += a * Ps[m]
            res -= a * Qs[m]
            m += 1
            it += 1
        cur["gm"] = m
        self.counts["gcr_iterations"] += it
        return u

    def solve(self, b):
        """x with (I/τ − 𝒥) x = b (𝒥 and τ of the last ``prepare``)."""
        self.counts["n_solves"] += 1
        cur = self.cur
        V, c, Jt = cur["V"], cur["c"], cur["Jt"]
        bJ, bD = self.split(b)
        xt = c * (bJ @ V)
        Jw = xt * self.wf[:, None]
        dR = Jw.T @ self.Bf
        X = Jw.T @ Jt
        dQ = X + X.T
        if self.order2:
            Xt = cur["c2"] * (V.T @ bD @ V)
            dQ = dQ + np.tensordot(self.lam, Xt, axes=1)
        u = self._reduced_solve(self._flat(dR[None], dQ[None])[0])
        dPt, dSt, dFt = self._coupling(u[None])
        dPt, dSt = dPt[0], dSt[0]
        xt = xt + c * self.lr[:, None] * (Jt @ dPt + self.Bf @ dSt.T)
        if not self.order2:
            return (xt @ V.T).reshape(-1)
        Y = dPt @ cur["Dt"]
        src = (self.lam[:, None, None] * (Y + np.swapaxes(Y, 1, 2))
               + self.e2 * self.lw[:, None, None] * dFt[0])
        Xt = Xt + cur["c2"] * src
        XD = V @ Xt @ V.T
        return self.join(xt @ V.T, 0.5 * (XD + np.swapaxes(XD, 1, 2)))

    def error_scale(self, y1, y2, rtol, atol_J):
        """Per-component error scale: atol + rtol |J| on J; on D (order 2) the scale of the
        Q_k entries it adds to, rtol · max(|D_k,ij|, sqrt(Q_k,ii Q_k,jj)), so that the η² part
        is followed to the accuracy of Q itself, not of its own (initially zero) size."""
        sc = atol_J + rtol * np.maximum(np.abs(y1), np.abs(y2))
        if self.order2:
            J, D = self.split(y1)
            qd = (J * J * self.inp.s.reshape(-1)[:, None]).reshape(self.L, self.r, self.K).sum(1)
            qd = np.abs(qd + np.diagonal(D, axis1=1, axis2=2))
            g = np.sqrt(qd[:, :, None] * qd[:, None, :]).reshape(-1)
            sc[self.nJ:] = np.maximum(sc[self.nJ:], atol_J * self.bscale + rtol * g)
        return sc

    def norm_weights(self):
        """Weights of the squared scaled errors in the RMS norm: all 1.

        (Weighting mode k by λ_k / mean λ, its weight in v1, was measured on bench (a) and (b):
        at equal ε_g accuracy it needs as many steps for K = M = 2 and more for K = M = 40.)"""
        return np.ones(self.n)

    @property
    def bscale(self):
        """Typical size of a teacher-factor entry: sqrt(mean_k tr T_k / M)."""
        if not hasattr(self, "_bscale"):
            T = self.inp.overlaps()[2]
            self._bscale = math.sqrt(max(np.trace(T, axis1=1, axis2=2).mean() / self.M, 1e-300))
        return self._bscale


def _unpack_sym(upper, p, iu):
    T = np.empty(upper.shape[:-1] + (p, p))
    T[..., iu[0], iu[1]] = upper
    T[..., iu[1], iu[0]] = upper
    return T


# -- ε_g from the factored state in extended precision ---------------------------------------
# ε_g ends orders of magnitude below the O(1) Gaussian integrals it is the difference of (erf
# K = M = 3, L = 32, β = 0.5, η = 0.5: ε_g(5000) = 6.6e-7), so its float64 evaluation keeps only
# ~1e-16 / ε_g of relative accuracy, whatever the accuracy of the state.  The state itself does
# not suffer: ε_g is the mean of a square, so its gradient by the student factor J is
# O(√ε_g) and an error δJ of the integrated state moves ε_g by only O(√ε_g |δJ|).  Evaluating ε_g
# from the float64 factors J, B exactly (their products by the mode weights split into two
# floats, Dekker; the sums and the Gaussian integrals in arb) removes the evaluation's
# cancellation; what is left is the integration error, which a second run at a tighter
# tolerance measures.

EPS_EXACT_DPS = 40      # working digits of the arb evaluation (its balls are checked below)
EXACT_EPS_ACTIVATIONS = ("erf", "linear")     # the closed forms of I2 below


def _two_product(a, b):
    """(p, e) of float64 arrays with p + e = a·b exactly (Dekker's splitting; no FMA needed).

    Exact unless a product over- or underflows (|a·b| > 1e300 or < 1e-290 or so); the factors
    here are O(1) times mode weights, far from both.
    """
    split = 134217729.0                     # 2^27 + 1

    def halves(x):
        c = split * x
        hi = c - (c - x)
        return hi, x - hi
    p = a * b
    ah, al = halves(a)
    bh, bl = halves(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


class _ExactEps:
    """ε_g of a state of ``_System`` from its exact float64 factors, in arb (python-flint).

    R1 = Jᵀ W B, Q1 = Jᵀ W J (+ Σ_k λ_k D_k), T1 = Bᵀ W B with W = diag(λ_k s_kρ) as in
    ``_System.v1``, then ε_g = ½ (Σ I2(T1)/M + M/K² Σ I2(Q1) − 2/K Σ I2(Q1, R1, T1)) with I2 the
    closed form of the activation (erf: (2/π) asin(C12 / √((1 + C11)(1 + C22))); linear: C12).
    Returns a float (the ball's midpoint; its radius is checked to be below 1e-20 relative).
    """

    def __init__(self, system):
        from flint import arb_mat
        from solvers.core.numbers import context
        if system.act not in EXACT_EPS_ACTIVATIONS:
            raise ValueError(f"no exact eps_g for activation {system.act!r}")
        self.s = system
        self.ctx = context("flint", EPS_EXACT_DPS)
        with self.ctx:
            self.WB = self._weighted(system.Bf)
            T1 = arb_mat(system.Bf.T.tolist()) * self.WB
            self.T1 = T1
            M = system.M
            self.tt = sum((self._I2(T1[a, a], T1[a, b], T1[b, b])
                           for a in range(M) for b in range(M)), 0 * T1[0, 0])
            if system.order2:
                self.lam = arb_mat([system.lam.tolist()])

    def _weighted(self, X):
        from flint import arb_mat
        p, e = _two_product(self.s.wf[:, None], X)
        return arb_mat(p.tolist()) + arb_mat(e.tolist())     # exact: e is below p's last bit

    def _I2(self, c11, c12, c22):
        if self.s.act == "linear":
            return c12
        from flint import arb
        return 2 * (c12 / ((1 + c11) * (1 + c22)).sqrt()).asin() / arb.pi()

    def __call__(self, y) -> float:
        from flint import arb_mat
        s = self.s
        K, M = s.K, s.M
        Jf, D = s.split(y)
        with self.ctx:
            Jt = arb_mat(Jf.T.tolist())
            R1 = Jt * self.WB
            Q1 = Jt * self._weighted(Jf)
            if D is not None:
                dq = self.lam * arb_mat(D.reshape(s.L, K * K).tolist())
                Q1 = Q1 + arb_mat(K, K, [dq[0, i] for i in range(K * K)])
            T1 = self.T1
            ss = sum(self._I2(Q1[i, i], Q1[i, j], Q1[j, j]) for i in range(K) for j in range(K))
            sy = sum(self._I2(Q1[i, i], R1[i, m], T1[m, m]) for i in range(K) for m in range(M))
            eps = (self.tt / M + ss * M / K ** 2 - 2 * sy / K) / 2
            mid = float(eps.mid())
            if not eps.rad() <= 1e-20 * max(abs(mid), 1e-300):
                raise IntegrationError(f"exact eps_g lost its precision: {eps}")
            return mid


# -- RODAS4 ----------------------------------------------------------------------------------
# Hairer & Wanner, Solving ODEs II (2nd ed.), §IV.7; coefficients of rodas.f (RODAS4, the
# "IMETH = 1" set).  Transformed formulation: (I/(γh) − 𝒥) k_i = f(Y_i) + Σ_j C_ij k_j / h,
# Y_i = y + Σ_j A_ij k_j; stages 5 and 6 are stiffly accurate (Y_6 = Y_5 + k_5, y_new = Y_6 + k_6)
# and k_6 is the embedded error estimate.  The order is checked in tests/test_modes_fast.py.
_GAMMA = 0.25
_A = {2: (1.544,),
      3: (0.9466785280815826, 0.2557011698983284),
      4: (3.314825187068521, 2.896124015972201, 0.9986419139977817),
      5: (1.221224509226641, 6.019134481288629, 12.53708332932087, -0.6878860361058950)}
_C = {2: (-5.6688,),
      3: (-2.430093356833875, -0.2063599157091915),
      4: (-0.1073529058151375, -9.594562251023355, -20.47028614809616),
      5: (7.496443313967647, -10.24680431464352, -33.99990352819905, 11.70890893206160),
      6: (8.083246795921522, -7.981132988064893, -31.52159432874371, 16.31930543123136,
          -6.058818238834054)}
_SAFETY, _FAC_MIN, _FAC_MAX = 0.9, 0.2, 6.0


def _rodas4_step(system, y, f0, aux, h):
    """One RODAS4 step of size h from (y, f(y)); returns (y_new, error vector) or None."""
    if not system.prepare(y, aux, _GAMMA * h):
        return None
    k = [system.solve(f0)]
    y5 = None
    for i in range(2, 7):
        if i <= 5:
            yi = y.copy()
            for a, kj in zip(_A[i], k):
                yi += a * kj
            if i == 5:
                y5 = yi
        else:
            yi = y5 + k[4]
        fi = system.f(yi)[0]
        rhs = fi.copy()
        for cc, kj in zip(_C[i], k):
            rhs += (cc / h) * kj
        k.append(system.solve(rhs))
    return y5 + k[4] + k[5], k[5]


def _integrate(system, alphas, y0, *, rtol, atol, h0, max_steps, progress, fixed_h=None,
               monitor=None):
    """Adaptive RODAS4 hitting every output time exactly; returns the states at ``alphas``."""
    ts = [float(a) for a in alphas]
    if any(not b > a for a, b in zip(ts, ts[1:])):
        raise ValueError("alphas must be strictly increasing")
    out = [y0.copy()]
    stats = system.counts
    stats.update(n_steps=0, n_rejected=0)
    t, y = ts[0], y0.copy()
    f0, aux = system.f(y)
    wts = system.norm_weights()

    def norm(e, y1, y2):
        return float(np.sqrt(np.mean(wts * (e / system.error_scale(y1, y2, rtol, atol)) ** 2)))

    if len(ts) < 2:
        return out
    if fixed_h is not None:
        h = fixed_h
    elif h0 is not None:
        h = float(h0)
    else:   # Hairer–Wanner's starting step, capped by the first output interval
        d0 = norm(y, y, y)
        d1 = norm(f0, y, y)
        h = 0.01 * d0 / d1 if d0 > 1e-5 and d1 > 1e-5 else 1e-6
        h = min(h, ts[1] - ts[0])
    attempts = 0
    for t_next in ts[1:]:
        while t < t_next:
            attempts += 1
            if attempts > max_steps:
                raise IntegrationError(f"more than {max_steps} steps (alpha = {t:g})")
            last = t + 1.01 * h >= t_next
            h_try = t_next - t if last else h
            res = _rodas4_step(system, y, f0, aux, h_try)
            if res is None:                     # (I/τ − diagonal part) nearly singular
                stats["n_rejected"] += 1
                h = 0.5 * h_try
                continue
            y_new, err_v = res
            err = norm(err_v, y, y_new) if fixed_h is None else 0.0
            if not np.all(np.isfinite(y_new)) or not math.isfinite(err):
                stats["n_rejected"] += 1
                h = 0.2 * h_try
            elif err <= 1.0:
                t = t_next if last else t + h_try
                y = y_new
                f0, aux = system.f(y)
                stats["n_steps"] += 1
                if monitor is not None and monitor.due():
                    monitor.level1(t, *system.observables(y))
                if progress is not None:
                    progress(t)
                if fixed_h is None:
                    # elementary controller (the estimate is O(h^4)); measured on bench (b),
                    # Gustafsson's predictive variant (rodas.f) saves only ~2% of the
                    # attempted steps.
                    e = max(err, 1e-10)
                    fac = min(_FAC_MAX, max(_FAC_MIN, _SAFETY * e ** -0.25))
                    h_new = h_try * fac
                    h = max(h, h_new) if last else h_new
                continue
            else:
                stats["n_rejected"] += 1
                h = h_try * max(_FAC_MIN, _SAFETY * err ** -0.25)
            if h < 1e-14 * max(abs(t), 1.0):
                raise IntegrationError(f"step size underflow at alpha = {t:g}")
        out.append(y.copy())
    return out


# -- public entry point ----------------------------------------------------------------------

def solve_modes_fast(problem_or_inputs, alphas, *, rtol: float = 1e-8, atol: float | None = None,
                     order: int | None = None, h0: float | None = None,
                     max_steps: int = 1_000_000, progress=None, keep_states="auto",
                     threads: int | None = 1, fixed_step: float | None = None,
                     method: str = "rodas4", monitor=None, exact_eps: bool = False) -> Trajectory:
    """Integrate the modes basis in float64; returns ``integrate_problem``'s Trajectory.

    problem_or_inputs: a :class:`solvers.core.problem.Problem` (modes-basis initial condition) or
    :class:`ModesInputs` (``random_inputs``, ``expected_inputs``, ``inputs_from_overlaps``).
    alphas: output times, strictly increasing.  With a Problem the initial condition is the
    state at α = 0 (a grid starting later is integrated from 0, only its points are returned;
    negative or non-finite values are a ValueError); ModesInputs hold a state at alphas[0].
    rtol: relative tolerance on the student factor J (≈ √Q).  Measured (bench/bench_modes_fast.py)
    at the default 1e-8: ε_g to ~2e-8 relative for K = M = 2 (L up to 1024), to 1e-6 .. 3e-6
    for K = M = 40 (β = 1.5 .. 1), worst at the specialisation transition (2.5e-7 at rtol 1e-9).
    atol: absolute tolerance on J; default rtol · 1e-4 · (size of a teacher-factor entry).
    order: override the problem's order (1 or 2).
    keep_states: store the (L, N_STATE) mode overlaps per output (the layout of
    ``integrate_problem``'s modes states); "auto" keeps them when they need < 200 MB.
    threads: BLAS threads (the work is many small matrix products: 1 is fastest on a shared
    machine; None leaves the BLAS setting alone).  fixed_step: constant step, no error control
    (order tests).
    monitor: a :class:`solvers.hierarchy.stability.Watch` (``due()``, ``level1(t, R1, Q1, eps)``)
    asked after every accepted RODAS4 step; it raises when the run leaves the realisable set.
    method: "rodas4" (stiff, the default) or "rk78": the explicit RK7(8) of solvers.integrators.rk78 on
    the same factored right-hand side, whose step is bounded by stability (~λ_1 |P| sets it).
    Measured (bench/bench_modes_fast.py, rtol 1e-8): K = M = 2, L = 1024, η = 0.1: RODAS4
    0.8 s, rk78 10.4 s (ε_g to 2e-8 and 3e-10); K = M = 40, L = 512, η = 0.01 (mildly stiff):
    RODAS4 46 s CPU, rk78 73 s (ε_g to 3e-6 and 3e-8; RODAS4 needs rtol 1e-10, 205 s, for the
    latter).  The stiff method wins as λ_1 ∝ L and η grow.
    exact_eps: evaluate ε_g from the float64 factors exactly (arb, ``_ExactEps``) instead of in
    float64.  Where ε_g ends far below the O(1) order parameters its float64 evaluation loses
    digits whatever the state's accuracy (erf K = M = 3, L = 32, β = 0.5, η = 0.5, ε_g(5000) =
    6.6e-7: off by up to 1.6e-10 relative); costs ~1 ms per output point for K = M = 3, L = 32
    (BENCHMARKS.md, the modes route at 9 digits).  R1, Q1 and the states stay float64.
    """
    started = time.perf_counter()
    if isinstance(problem_or_inputs, ModesInputs):
        inp = problem_or_inputs
    else:
        inp = inputs_from_problem(problem_or_inputs)
    if order is not None and order != inp.order:
        inp = ModesInputs(inp.activation, inp.K, inp.M, inp.lam, inp.w, inp.eta, int(order),
                          inp.J, inp.B, inp.s, inp.factor_error, dict(inp.meta))
    from_zero = not isinstance(problem_or_inputs, ModesInputs)
    if from_zero:
        # a Problem's initial condition is the state at alpha = 0 (as in integrate_problem)
        from solvers.hierarchy.odes import checked_alphas
        requested = [float(a) for _, a in checked_alphas(alphas)]
        skip = 0 if requested[0] == 0 else 1
        alphas = [0.0] * skip + requested
    else:
        skip = 0
        alphas = [float(Fraction(a)) if isinstance(a, str) else float(a) for a in alphas]
        if not all(math.isfinite(a) for a in alphas):
            raise ValueError("alphas must be finite numbers")
    if not rtol > 0:
        raise ValueError(f"rtol must be > 0, got {rtol}")
    system = _System(inp)
    if atol is None:
        atol = rtol * 1e-4 * system.bscale
    n_state = inp.K * inp.M + inp.K * (inp.K + 1) // 2
    if keep_states == "auto":
        keep_states = len(alphas) * inp.L * n_state * 8 < 200e6

    if method not in METHODS:
        raise ValueError(f"method must be one of {tuple(METHODS)}, got {method!r}")
    with _blas_threads(threads):
        if method == "rodas4":
            ys = _integrate(system, alphas, system.initial_state(), rtol=rtol, atol=atol, h0=h0,
                            max_steps=max_steps, progress=progress, fixed_h=fixed_step,
                            monitor=monitor)
        else:
            from solvers.integrators.rk78 import integrate
            from solvers.core.numbers import Float64Context
            counts = {}
            ys = integrate(lambda t, y: system.f(y)[0], alphas, system.initial_state(),
                           ctx=Float64Context(), rtol=rtol, atol=atol, h0=h0,
                           max_steps=max_steps, progress=progress, stats=counts)
            system.counts.update(counts)
        eps, R1s, Q1s, states = [], [], [], []
        exact = _ExactEps(system) if exact_eps else None
        for y in ys:
            R1, Q1, e = system.observables(y)
            if exact is not None and math.isfinite(e):
                e = exact(y)
            if not math.isfinite(e):
                raise IntegrationError(f"eps_g is not finite ({e})")
            eps.append(e)
            R1s.append(R1)
            Q1s.append(Q1)
            if keep_states:
                states.append(mk.pack(*system.overlaps(y)))
    stats = dict(system.counts)
    stats.update(wall_s=time.perf_counter() - started, rtol=rtol, atol=atol, rank=inp.r,
                 factor_error=inp.factor_error, L=inp.L, K=inp.K, M=inp.M, order=inp.order,
                 reduced_dim=system.n_v,
                 reduced_solver="dense" if system.n_v <= system.dense_max else "gcr")
    stats["method"] = method
    stats["eps_evaluation"] = f"arb, {EPS_EXACT_DPS} digits" if exact_eps else "float64"
    return Trajectory(list(alphas), eps, np.array(R1s), np.array(Q1s), "modes", METHODS[method],
                      15, stats, states).drop_first(skip)


class _NoLimit:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _blas_threads(threads):
    if threads is None:
        return _NoLimit()
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:      # pragma: no cover - threadpoolctl ships with SciPy's stack
        return _NoLimit()
    return threadpool_limits(limits=int(threads), user_api="blas")
