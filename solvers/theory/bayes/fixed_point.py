"""The closed system q_i = m_σ(snr_i), snr_i = s v_i²/(Δ+ε), ε = Σ v_i² G(1−q_i)  (s = n/d).

Scalar reduction ε = Φ(ε): Φ is non-decreasing with upward jumps at ε_i* = s v_i²/λ_σ − Δ (where
feature i drops off its learned branch).  Between consecutive jumps the learned set is fixed and
Φ is continuous; stable solutions are the downward crossings of Φ(ε) − ε there, located by a
grid scan and refined by Brent's method.  When every ε_i* lies below ε_max = g(1) Σ v_i², the
uninformed point ε = ε_max is a solution too.  Every solution carries the potential

    Ψ = ½ Σ_i [q_i + ln(1−q_i)] − (s/2) ln(Δ + ε)

(∂Ψ/∂q_i = 0 is the fixed point); the Bayes-optimal one is the global maximum of Ψ.
Numbers: float64 (m_σ by vectorised Newton in t = −ln(1−q); G from its exact series near δ = 0);
about 12 significant digits, checked against the mpmath channel in the tests.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq

from .activation import Activation
from .channel import Jump, branch_t_np

SELECTIONS = ("potential", "uninformed", "informed")


@dataclass
class Solution:
    eps: float
    q: np.ndarray          # per feature, in the caller's order
    t: np.ndarray          # −ln(1−q) (0 where q = 0)
    kc: int
    psi: float

    def as_dict(self) -> dict:
        return {"eps": self.eps, "kc": self.kc, "psi": self.psi}


class Problem:
    """Readouts v_i² (normalised to Σ = 1), noise Δ, activation and its jump (λ_σ, q_σ)."""

    def __init__(self, act: Activation, jump: Jump, v2, Delta: float):
        v2 = np.asarray(v2, float)
        if v2.ndim != 1 or v2.size == 0:
            raise ValueError("readouts: need a non-empty list of v_i²")
        if np.any(~np.isfinite(v2)) or np.any(v2 <= 0):
            raise ValueError("readouts: every v_i² must be a finite number > 0")
        if not Delta > 0 or not math.isfinite(Delta):
            raise ValueError(f"Delta = {Delta} must be a finite number > 0")
        self.act, self.jump, self.Delta = act, jump, float(Delta)
        self.norm = float(v2.sum())
        self.order = np.argsort(-v2, kind="stable")       # strongest first
        self.v2 = v2[self.order] / self.norm
        self.tail = np.concatenate([np.cumsum(self.v2[::-1])[::-1], [0.0]])  # Σ_{j≥i} v_j²
        self.g1 = act.g1
        self.lam_s = jump.lam_f
        self.eps_max = self.g1                           # g(1) Σ v² with Σ v² = 1

    @property
    def k(self) -> int:
        return self.v2.size

    def jumps(self, s: float) -> np.ndarray:
        """ε_i* = s v_i²/λ_σ − Δ (sorted order: decreasing)."""
        return s * self.v2 / self.lam_s - self.Delta

    def _learned_count(self, s, eps, left=False):
        js = self.jumps(s)
        # learned ⇔ ε < ε_i* (right-continuous); left limit at a jump: ε ≤ ε_i*
        return int(np.count_nonzero(js >= eps)) if left else int(np.count_nonzero(js > eps))

    def phi(self, s: float, eps, count: int):
        """Φ(ε) with the first ``count`` (strongest) features on their learned branch.

        ``eps`` may be an array (one vectorised channel solve for all of it).
        """
        eps_arr = np.atleast_1d(np.asarray(eps, float))
        if count == 0:
            out = np.full(eps_arr.shape, self.g1 * self.tail[0])
        else:
            snr = s * self.v2[None, :count] / (self.Delta + eps_arr[:, None])
            t = branch_t_np(self.act, snr, self.jump)
            G = self.act.gap_np(np.exp(-t))
            out = G @ self.v2[:count] + self.g1 * self.tail[count]
        return float(out[0]) if np.ndim(eps) == 0 else out

    def state(self, s: float, eps: float, count: int) -> Solution:
        t = np.zeros(self.k)
        if count:
            snr = s * self.v2[:count] / (self.Delta + eps)
            t[:count] = branch_t_np(self.act, snr, self.jump)
        qs = -np.expm1(-t)
        psi = 0.5 * float(np.sum(qs - t)) - 0.5 * s * math.log(self.Delta + eps)
        q_out, t_out = np.empty(self.k), np.empty(self.k)
        q_out[self.order], t_out[self.order] = qs, t
        return Solution(float(eps), q_out, t_out, int(count), psi)

    def solutions(self, s: float, points: int | None = None) -> list[Solution]:
        """All stable solutions at s = n/d, sorted by ε (most informed first)."""
        if not s > 0:
            raise ValueError(f"n/d = {s} must be > 0")
        js = self.jumps(s)
        inside = np.unique(js[(js > 0) & (js < self.eps_max)])
        edges = np.concatenate([[0.0], inside, [self.eps_max]])
        n_int = edges.size - 1
        if points is None:
            points = int(min(33, max(5, 4000 // max(n_int, 1))))
        found = []
        for a, b in zip(edges[:-1], edges[1:]):
            count = self._learned_count(s, b, left=True)   # constant on (a, b)
            if count == 0:
                continue                                   # Φ = ε_max > ε: no crossing inside

            def f(e, count=count):
                return self.phi(s, e, count) - e
            grid = np.linspace(a, b, points)
            vals = self.phi(s, grid, count) - grid
            for e0, e1, f0, f1 in zip(grid[:-1], grid[1:], vals[:-1], vals[1:]):
                if f0 > 0 >= f1:
                    root = e1 if f1 == 0 else brentq(f, e0, e1, xtol=1e-16, rtol=1e-15)
                    found.append(self.state(s, root, count))
        if js.max() < self.eps_max:     # uninformed point: all features off
            found.append(self.state(s, self.eps_max, 0))
        found.sort(key=lambda sol: sol.eps)
        return found

    def select(self, sols: list[Solution], selection: str = "potential") -> Solution:
        if selection not in SELECTIONS:
            raise ValueError(f"selection = {selection!r} must be one of {', '.join(SELECTIONS)}")
        if not sols:
            raise ArithmeticError("no stable fixed point found")
        if selection == "informed":
            return sols[0]
        if selection == "uninformed":
            return sols[-1]
        return max(sols, key=lambda sol: sol.psi)

    def solve(self, s: float, selection: str = "potential") -> tuple[Solution, list[Solution]]:
        sols = self.solutions(s)
        return self.select(sols, selection), sols

    # -- per-feature transitions ----------------------------------------------------------------
    def _bisect(self, pred, lo, hi, rtol=1e-11):
        """pred(lo) False, pred(hi) True; returns the switching s to rtol."""
        if pred(lo) or not pred(hi):
            raise ArithmeticError("transition not bracketed")
        while hi - lo > rtol * hi:
            mid = 0.5 * (lo + hi)
            if pred(mid):
                hi = mid
            else:
                lo = mid
        return 0.5 * (lo + hi)

    def transitions(self, feature: int, which=("appears", "switch", "ends"),
                    bracket=None) -> dict:
        """For feature i (0-based, caller's order), as functions of s = n/d:

        appears: smallest s with a stable solution where q_i > 0 (learned branch appears);
        switch:  smallest s where the max-Ψ solution has q_i > 0 (Bayes-optimal switch);
        ends:    largest s with a stable solution where q_i = 0 (uninformed branch ends);
        q_jump:  q_i of the Bayes-optimal solution just after the switch.
        """
        i = int(feature)
        v2 = self.v2[np.nonzero(self.order == i)[0][0]]
        lo = self.lam_s * self.Delta / v2                    # snr_i ≤ λ_σ for every ε ≥ 0
        hi = self.lam_s * (self.Delta + self.eps_max) / v2 * (1 + 1e-9)
        if bracket is not None:                              # a narrower (checked) bracket
            lo, hi = bracket
        learned = lambda sols: [sol.q[i] > 0 for sol in sols]          # noqa: E731
        preds = {"appears": lambda s: any(learned(self.solutions(s))),
                 "ends": lambda s: all(learned(self.solutions(s))),
                 "switch": lambda s: self.select(self.solutions(s)).q[i] > 0}
        out = {"feature": i + 1}
        for name in which:
            out[name] = self._bisect(preds[name], lo, hi)
        if "switch" in out:
            after = self.select(self.solutions(out["switch"] * (1 + 1e-9)))
            out["q_jump"] = float(after.q[i])
        return out


def power_law_readouts(k: int, beta: float) -> np.ndarray:
    """v_i² = i^(−2β) / Σ_{j≤k} j^(−2β)."""
    i = np.arange(1, k + 1, dtype=float)
    w = i ** (-2.0 * beta)
    return w / w.sum()
