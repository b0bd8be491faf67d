"""Stability: refuse a learning rate above the known bound, stop a run that leaves the
realisable set.

**The bound (order 2).**  At perfect learning (R = Q = T, mode by mode) the η² term of the
hierarchy vanishes together with its source (ζ − σ)², but not its first derivative, so the
Jacobian there is η A + η² B and the fixed point is stable for small η and loses stability
where an eigenvalue of A + η B crosses zero, at

    η_c = min { η > 0 : det(A + η B) = 0 } = min { −1/μ : μ real < 0 eigenvalue of A⁻¹B }.

(Beyond it SGD cannot converge: ε_g does not go to zero and the student norms grow without
bound — at η = 100, erf K = M = 2, L = 16 the ODE's Q^(1) is ~6000 by α = 50 and still
growing, a stiff run that takes minutes to say nothing.)  In the modes basis the mode-k block
of the Jacobian is λ_k G + (rank-one coupling through the level-1 state v1 = Σ_j λ_j X_j), so
the zero-crossing condition only involves Σ_k λ_k (…)_k: it depends on the spectrum and the
teacher through ν_1 = Σ_k w_k λ_k and the level-1 teacher T^(1) only.  The bound is therefore
computed on a one-mode system (λ = ν_1, weight 1, teacher T^(1)/ν_1): a few milliseconds at any
L, and equal to the full-Jacobian value (checked at L = 4 and 16 for expected and random
teachers, tests/test_stability.py).  The crossing is real: the largest real part of the
eigenvalues of A + ηB is checked to be negative just below η_c.

* linear activation: the student only enters through u = (√M/K) Σ_i J_i, which follows plain
  linear SGD with rate η M/K; its error modes obey −2η'Λ + η'²(w∘λ)λᵀ, unstable from
  η'ν_1/2 = 1, so η_c = 2K/(M ν_1) exactly (2 for K = M = 1 on a power law).
* erf, K = M: the one-mode reduction above (4.6137 for K = M = 2, 4.0558 for K = M = 1 on a
  power law with the expected teacher).
* erf, K ≠ M (no perfect-learning point) and order 1 (no η² term: perfect learning is stable
  at every η): no bound; the run is watched instead.

**The watch.**  In the modes basis (no closure, no cancellation) every state must be
realisable: each mode's Gram matrix [[Q_k, R_k], [R_kᵀ, T_k]] and the level-1 one are positive
semidefinite, every number is finite and 0 ≤ ε_g ≤ 2M (erf: |I2| < 1).  :class:`Watch` checks
this after an accepted step (at most every ``interval`` seconds, so it costs nothing measurable)
and raises :class:`Unstable` naming what broke.  The level basis is not watched: at a too-small
working precision its closure cancels digits, and that must stay a failed round of the
precision policy, not a divergence.
"""
from __future__ import annotations

import math
import time
from fractions import Fraction

import numpy as np

from solvers.core.orthant import PSD_TOL  # noqa: F401  (one tolerance for every PSD test)


class Unstable(ValueError):
    """The run diverges or has left the realisable set (one-line message names the cause)."""


def _float(x) -> float:
    return float(x.mid()) if hasattr(x, "mid") else float(x)


def teacher_level1(problem) -> tuple[np.ndarray, float]:
    """(T^(1) as an M x M float array, ν_1) of a problem, without its level-basis numbers."""
    lam = np.array([float(v) for v in problem.spectrum.eigenvalues])
    w = np.array([float(v) for v in problem.spectrum.weights])
    init = problem.init
    T = np.vectorize(float, otypes=[float])(np.asarray(init.T, dtype=object))
    T1 = np.tensordot(lam, T, axes=1) if init.basis == "modes" else T[1]
    return 0.5 * (T1 + T1.T), float(w @ lam)


def eta_bound(problem):
    """``(eta_c, how)``: the largest stable learning rate of perfect learning and how it was
    obtained, or None where no bound is known (order 1, erf with K != M)."""
    key = problem.key
    if problem.order != 2 or not problem.plain_training:
        return None
    T1, nu1 = teacher_level1(problem)
    if key.is_plain("linear"):
        return 2 * key.K / (key.M * nu1), "linear: 2K/(M nu_1)"
    if key.K != key.M or not key.is_plain():
        # perfect learning (student = teacher) is a fixed point only for the original model
        return None
    return _one_mode_bound(key, T1, nu1), "linearisation at perfect learning"


def _one_mode_bound(key, T1, nu1) -> float:
    from solvers.core.numbers import Float64Context
    from solvers.core.registry import load
    mod = load(key, "numpy")
    K = key.K
    iu = np.triu_indices(K)
    T0 = T1 / nu1
    y = np.array([np.concatenate([T0.ravel(), T0[iu]])])
    T = np.array([T0[iu]])
    lam, w = np.array([nu1]), np.array([1.0])
    ctx = Float64Context()
    with np.errstate(all="ignore"):
        A = np.asarray(mod.jac_modes(y, T, lam, w, 1.0, 0.0, ctx), dtype=float)
        B = np.asarray(mod.jac_modes(y, T, lam, w, 0.0, 1.0, ctx), dtype=float)
    return perfect_learning_bound(A, B)


def perfect_learning_bound(A, B) -> float:
    """Smallest η > 0 with max Re eig(A + ηB) = 0, for a stable A (inf when there is none).

    Real crossings are the roots of det(A + ηB) = 0, η = −1/μ over the real negative
    eigenvalues μ of A⁻¹B; a complex pair crossing first is caught by checking the largest
    real part just below the candidate and then found by bisection.
    """
    A, B = np.asarray(A, dtype=float), np.asarray(B, dtype=float)

    def top(eta):
        return float(np.max(np.linalg.eigvals(A + eta * B).real))

    mu = np.linalg.eigvals(np.linalg.solve(A, B))
    real = [-1.0 / m.real for m in mu
            if abs(m.imag) <= 1e-9 * abs(m) and m.real < 0]
    cand = min(real) if real else math.inf
    hi = cand if math.isfinite(cand) else 1e6
    if top(hi * (1 - 1e-6)) < 0:
        return cand
    lo = 0.0
    for _ in range(60):                 # a complex pair crosses first
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if top(mid) < 0 else (lo, mid)
    return hi


def check_eta(problem) -> float | None:
    """Raise :class:`Unstable` when η is above :func:`eta_bound`; returns the bound (or None)."""
    found = eta_bound(problem)
    if found is None:
        return None
    eta_c, how = found
    eta = float(Fraction(problem.eta))
    if eta >= eta_c:
        key = problem.key
        raise Unstable(f"eta = {eta:g} is above the stability bound eta_c = {eta_c:.4g} of "
                       f"{key.description} at order 2 ({how}): "
                       f"SGD cannot converge there and the order parameters grow without "
                       f"bound; use eta < {eta_c:.4g} (or order = 1)")
    return eta_c


class Watch:
    """``monitor(t, y)`` for a modes-basis run: raises :class:`Unstable` when a state is not
    realisable (see the module docstring).  ``interval``: seconds between checks (the first
    accepted step is always checked)."""

    def __init__(self, problem, interval: float = 0.25):
        key = problem.key
        self.K, self.M = key.K, key.M
        # the ε_g bound below is the erf model's (|g| <= 1, paper readouts)
        self.act = "erf" if key.is_plain("erf") else None
        self.lam = np.array([float(v) for v in problem.spectrum.eigenvalues])
        self.T1, _ = teacher_level1(problem)
        init = problem.init
        self.T = (np.vectorize(float, otypes=[float])(np.asarray(init.T, dtype=object))
                  if init.basis == "modes" else None)
        self.interval = interval
        # a trained readout's v_1..v_K follow the modes in the integrator's flat state
        self.n_readout = key.K if getattr(problem, "trained", False) else 0
        self._last = -math.inf
        self.checks = 0

    def due(self) -> bool:
        """Whether ``interval`` seconds have passed since the last check (then one starts)."""
        now = time.perf_counter()
        if now - self._last < self.interval:
            return False
        self._last = now
        self.checks += 1
        return True

    def __call__(self, t, y) -> None:
        if not self.due():
            return
        Y = self._floats(y)
        from solvers.core.layout import unpack_state
        R, Q = unpack_state(Y, self.K, self.M)
        self._state(float(t), np.tensordot(self.lam, R, axes=1),
                    np.tensordot(self.lam, Q, axes=1), modes=(R, Q))

    def level1(self, t, R1, Q1, eps=None) -> None:
        """The check on a level-1 state only (solve_modes_fast's factored states are
        realisable mode by mode by construction); unthrottled: callers ask ``due()``."""
        self._state(float(t), np.asarray(R1, float), np.asarray(Q1, float), eps=eps)

    def _floats(self, y) -> np.ndarray:
        if hasattr(y, "nrows"):                               # arb_mat
            from solvers.core.arb_rhs import from_arb_mat
            y = from_arb_mat(y)
        y = np.asarray(y).reshape(-1)
        if self.n_readout:
            y = y[:-self.n_readout]
        if y.dtype == object:
            y = np.vectorize(_float, otypes=[float])(y)
        return y.reshape(self.lam.size, -1)

    def _state(self, t, R1, Q1, modes=None, eps=None) -> None:
        where = f"at alpha = {t:.6g}"
        if not (np.all(np.isfinite(R1)) and np.all(np.isfinite(Q1))):
            raise Unstable(f"the order parameters are not finite {where}: the run diverges")
        self._psd(np.block([[Q1, R1], [R1.T, self.T1]]), f"the level-1 Gram matrix "
                  f"[[Q, R], [R^T, T]] is not positive semidefinite {where}")
        if modes is not None and self.T is not None:
            R, Q = modes
            G = np.concatenate([np.concatenate([Q, R], axis=2),
                                np.concatenate([np.swapaxes(R, 1, 2), self.T], axis=2)], axis=1)
            self._psd(G, f"a mode's Gram matrix is not positive semidefinite {where}")
        if self.act == "erf":
            if eps is None:
                from solvers.core import modes_kernel as mk
                eps = float(mk.eps_g(R1, Q1, self.T1, "erf"))
            bound = 2.0 * self.M
            if not (math.isfinite(eps) and -1e-9 <= eps <= bound):
                raise Unstable(f"eps_g = {eps:.6g} {where} is outside [0, {bound:g}] (erf): "
                               f"the run diverges")

    @staticmethod
    def _psd(G, what) -> None:
        G = 0.5 * (G + np.swapaxes(G, -1, -2))
        scale = np.max(np.abs(np.diagonal(G, axis1=-2, axis2=-1)), axis=-1)
        low = np.linalg.eigvalsh(G)[..., 0]
        if np.any(low < -PSD_TOL * np.maximum(scale, 1e-300)):
            raise Unstable(f"{what} (smallest eigenvalue {float(np.min(low)):.3g}): the "
                           f"dynamics left the realisable set")
