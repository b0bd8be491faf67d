"""``channel = "glm"`` (experimental; beyond the source): units with O(1) readouts as GLMs.

The closed system gives every unit a Gaussian output channel (:mod:`.fixed_point`).  Here a chosen
set G of units — by default those that can leave the Gaussian-channel regime of :mod:`.regime`
(c(r_max) ≥ 1 %, with r_max = v_i²/Δ the largest readout-to-rest ratio the unit can have at any
n/d), or every unit on request — is treated as a generalised linear model: unit i ∈ G sees the
channel y = v_i σ(w_i·x/√d) + (Gaussian noise of power s_i), s_i = Δ + Σ_{j≠i} v_j² G(1−q_j)
(the noise plus every other unit's residual), and its overlap is the global maximiser of

    f_i(q) = ½ [q + ln(1−q)] + (n/d) Ψ_out(q; v_i, s_i),
    Ψ_out(q; v, s) = Ψ_gauss(q; v, s) + E(q, v²/s),

with Ψ_gauss = −½ ln(2πe (s + v² G(1−q))) (which alone gives back the present system exactly)
and E the tabulated correction of the exact one-unit channel (:mod:`.glm_table`).  The other
units keep the Gaussian channel: given q_G they form the present system with noise
Δ' = Δ + Σ_{i∈G} v_i² G(1−q_i) (solved by :class:`.fixed_point.Problem`, max-Ψ selection).  The
two blocks are iterated to a joint fixed point from an uninformed and an informed start of q_G;
among the solutions the one with the largest

    Ψ_mix = ½ Σ_i [q_i + ln(1−q_i)] − (n/2d) ln(Δ + ε) + (n/d) Σ_{i∈G} E(q_i, r_i)

is returned (Ψ_mix is the potential of the coupled equations up to the dependence of E on the
other units through r_i, which the iteration ignores: a selection heuristic, stated in ``meta``).

What it is and is not.  Exact for k = 1 (the GLM replica formula, :class:`.glm.GLM`); with E ≡ 0
it is the present system (tests/test_bayes_glm_channel.py, to 1e−8); for several O(1) units it
is an approximation — each unit's channel is exact only against Gaussian rest, while the other
O(1) units are not Gaussian.  Cubic σ = He₃/√6 only (the table is for g = x³).  Measured against
HMC (BENCHMARKS.md, "Bayes-optimal GLM channel against HMC"): k = 20, d = 40 and k = 40, d = 80
(β = 1) — q₁, q₂ > 0 where the Gaussian system has 0, within 1–2.6 SE, Gibbs/2 closer than the
Gaussian system's at d = 40, between the two channels at d = 80; flat readouts inside the
Gaussian system's coexistence region not reproduced (no collective jump) — hence experimental.

Example
-------
One unit with v² = 1 at Δ = 0.1 is a GLM (Gibbs/2 = 0.360 by the one-unit replica formula at
n/d = 2; the Gaussian system gives 0.100):

>>> from solvers.theory.bayes import Setup, curve
>>> st = Setup(activation="cubic", d=80, readouts=[1.0], Delta=0.1, beta=None, channel="glm")
>>> res = curve(st, n_over_d=[2.0])
>>> round(res["eps_bo"][0], 2), res["meta"]["glm_features"]
(0.36, [1])
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.interpolate import RectBivariateSpline
from scipy.optimize import brentq

from . import glm_table
from .fixed_point import Problem
from .regime import THRESHOLD, correction

GLM_UNITS = ("outside", "all")


class Correction:
    """E(q, r) and ∂E/∂q from the table: bicubic spline in (q, ln r), E(1, r) = 0 appended;
    below r_min continued as E(q, r_min) (r/r_min)²; above r_max refused."""

    def __init__(self, table=None):
        if table is None:
            from .glm_table_data import E as table
        E = np.asarray(table, float)
        q = np.concatenate([glm_table.Q_TABLE, [1.0]])
        E = np.vstack([E, np.zeros((1, E.shape[1]))])
        self.zero = not np.any(E)
        self._s = RectBivariateSpline(q, np.log(glm_table.R_TABLE), E, kx=3, ky=3)

    def __call__(self, q, r, dq: int = 0):
        q, r = np.broadcast_arrays(np.asarray(q, float), np.asarray(r, float))
        if np.any(r > glm_table.R_MAX * (1 + 1e-12)):
            raise ValueError(f"glm channel: readout-to-noise ratio r = {float(np.max(r)):.4g} "
                             f"is beyond the table (r <= {glm_table.R_MAX:g})")
        if self.zero:
            return np.zeros(q.shape)
        lr = np.log(np.maximum(r, glm_table.R_MIN))
        val = self._s.ev(q, lr, dx=dq)
        small = r < glm_table.R_MIN
        return np.where(small, val * (r / glm_table.R_MIN) ** 2, val)


class Zero(Correction):
    """E ≡ 0: the Gaussian channel written as a GLM (gives back the present system)."""

    def __init__(self):
        self.zero = True


def glm_set(v2: np.ndarray, Delta: float, units: str = "outside",
            threshold: float = THRESHOLD) -> np.ndarray:
    """Indices (sorted order) of the units treated as GLMs: c(v²/Δ) ≥ threshold, or all."""
    if units not in GLM_UNITS:
        raise ValueError(f"glm_units = {units!r} must be one of {', '.join(GLM_UNITS)}")
    if units == "all":
        return np.arange(v2.size)
    return np.nonzero(np.atleast_1d(correction(v2 / Delta)) >= threshold)[0]


@dataclass
class MixedSolution:
    eps: float
    q: np.ndarray              # caller's order
    psi: float
    kc: int
    iterations: int
    start: str
    glm_q: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def as_dict(self) -> dict:
        return {"eps": self.eps, "kc": self.kc, "psi": self.psi, "start": self.start,
                "iterations": self.iterations}


# unit grid for the global maximisation of f_i: uniform in q up to 0.9, then uniform in
# t = −ln(1−q) up to t = 14 (1 − q ≈ 8e−7)
_QGRID = np.unique(np.concatenate([np.linspace(0.0, 0.9, 1801),
                                   -np.expm1(-np.linspace(math.log(10.0), 14.0, 1200))]))


class MixedProblem:
    """The present system with the units G on the GLM channel (see the module docstring)."""

    def __init__(self, problem: Problem, units: str = "outside", corr: Correction | None = None,
                 glm_index=None):
        if problem.act.name != "cubic":
            raise ValueError(f"channel = 'glm' is available for activation = 'cubic' only (its "
                             f"table is for g = x^3), not {problem.act.name!r}")
        self.p = problem
        self.corr = Correction() if corr is None else corr
        v2, Delta = problem.v2, problem.Delta
        self.G = (np.asarray(glm_index, int) if glm_index is not None
                  else glm_set(v2, Delta, units))
        rmax = float(np.max(v2[self.G] / Delta)) if self.G.size else 0.0
        if rmax > glm_table.R_MAX:
            raise ValueError(f"channel = 'glm': the strongest readout has v^2/Delta = {rmax:.4g} "
                             f"(Delta = {Delta:g}), beyond the GLM table's r <= "
                             f"{glm_table.R_MAX:g}; raise Delta")
        rest = np.setdiff1d(np.arange(problem.k), self.G)
        self.rest = rest
        self.c_rest = float(v2[rest].sum()) if rest.size else 0.0
        self._rest_cache = {}

    # -- blocks ------------------------------------------------------------------------------
    def _gap(self, q):
        return self.p.act.gap_np(1.0 - np.asarray(q, float))

    def _rest(self, s, Dp):
        """The Gaussian units at noise Δ' (max-Ψ selection): (ε_rest, q_rest) in sorted order."""
        if self.rest.size == 0:
            return 0.0, np.zeros(0)
        key = (s, Dp)
        if key not in self._rest_cache:
            sub = Problem(self.p.act, self.p.jump, self.p.v2[self.rest], Dp / self.c_rest)
            sol, _ = sub.solve(s)              # sol.q follows self.rest (its caller's order)
            self._rest_cache = {key: (self.c_rest * sol.eps, sol.q.copy())}
        return self._rest_cache[key]

    def _best(self, s, v2, ext):
        """Global maximiser of f_i for every GLM unit (v_i², external noise s_i): grid, then the
        root of f_i′ in the bracket around the grid maximum, in t = −ln(1−q) (exact 1 − q when
        the maximum lies beyond the grid, at large n/d)."""
        corr, act = self.corr, self.p.act
        Q = _QGRID[None, :]
        r = (v2 / ext)[:, None]
        tot = ext[:, None] + v2[:, None] * self._gap(Q)
        f = 0.5 * (Q + np.log1p(-Q)) + s * (-0.5 * np.log(tot) + corr(Q, r))
        j = np.argmax(f, axis=1)
        out = np.empty(v2.size)
        for u in range(v2.size):
            vu, eu, ru = v2[u], ext[u], v2[u] / ext[u]

            def df(t):
                # f_i′ at q = 1 − e^{−t}: ½(1 − e^t) + n/d [v² g′(q) / (2 (s_i + v² G)) + ∂_qE]
                q = -math.expm1(-t)
                gap = float(act.gap_np(math.exp(-t)))
                return (0.5 * (1.0 - math.exp(t))
                        + s * (0.5 * vu * float(act.gp_np(q)) / (eu + vu * gap)
                               + float(corr(q, ru, dq=1))))
            if j[u] == 0 and df(0.0) <= 0:
                out[u] = 0.0
                continue
            lo = -math.log1p(-_QGRID[max(j[u] - 1, 0)])
            if j[u] == _QGRID.size - 1:
                hi = lo
                while df(hi) > 0:               # the maximum lies beyond the grid
                    lo, hi = hi, hi + 4.0
                    if hi > 36.0:               # 1 − q below 2e−16: not representable
                        raise ArithmeticError(f"channel = 'glm': a GLM unit's overlap reaches "
                                              f"1 − q < 1e−15 at n/d = {s:.6g} (float64 range)")
            else:
                hi = -math.log1p(-_QGRID[j[u] + 1])
            if not df(lo) > 0 > df(hi):
                # the maximum sits on a grid node to round-off: widen the bracket once
                lo = -math.log1p(-_QGRID[max(j[u] - 3, 0)])
                hi = -math.log1p(-_QGRID[min(j[u] + 3, _QGRID.size - 1)])
                if not df(lo) > 0 > df(hi):
                    raise ArithmeticError(f"channel = 'glm': no maximum of a GLM unit's "
                                          f"potential bracketed at n/d = {s:.6g}")
            t = brentq(df, lo, hi, xtol=1e-15, rtol=1e-15)
            out[u] = -math.expm1(-t)
        return out

    def psi_mix(self, s, q_sorted):
        v2, Delta = self.p.v2, self.p.Delta
        own = v2 * self._gap(q_sorted)
        eps = float(own.sum())
        t = -np.log1p(-q_sorted)
        psi = 0.5 * float(np.sum(q_sorted - t)) - 0.5 * s * math.log(Delta + eps)
        if self.G.size:
            ext = Delta + eps - own[self.G]
            psi += s * float(np.sum(self.corr(q_sorted[self.G], v2[self.G] / ext)))
        return psi, eps

    # -- joint solve --------------------------------------------------------------------------
    def _map(self, s, qG):
        """One block update: the Gaussian units at the GLM units' residual, then every GLM
        unit's best response to the noise the others leave it."""
        vG, Delta = self.p.v2[self.G], self.p.Delta
        ownG = vG * self._gap(qG)
        eps_rest, q_rest = self._rest(s, Delta + float(ownG.sum()))
        ext = Delta + eps_rest + float(ownG.sum()) - ownG
        # units with the same readout and the same noise have the same best response (flat
        # readouts: one maximisation instead of k)
        pairs, inv = np.unique(np.stack([vG, ext]), axis=1, return_inverse=True)
        return self._best(s, pairs[0], pairs[1])[np.ravel(inv)], q_rest

    def _iterate(self, s, qG, start, tol=1e-12, max_iter=400, memory=6):
        """The joint fixed point q_G = map(q_G), Anderson-accelerated (the plain iteration
        contracts slowly when many units share ε); the history is dropped whenever the residual
        grows, and an accelerated point outside [0, 1) falls back to the plain update."""
        F, Gs = [], []
        best = math.inf
        for it in range(1, max_iter + 1):
            g, q_rest = self._map(s, qG)
            f = g - qG
            res = float(np.max(np.abs(f))) if f.size else 0.0
            if res < tol:
                qG = g
                break
            if res > 10 * best:
                F, Gs = [], []
            best = min(best, res)
            F.append(f)
            Gs.append(g)
            F, Gs = F[-(memory + 1):], Gs[-(memory + 1):]
            if len(F) > 1:
                dF = np.array([a - b for a, b in zip(F[1:], F[:-1])]).T
                dG = np.array([a - b for a, b in zip(Gs[1:], Gs[:-1])]).T
                gam = np.linalg.lstsq(dF, f, rcond=None)[0]
                nxt = g - dG @ gam
                if np.all(np.isfinite(nxt)) and np.all(nxt >= 0) and np.all(nxt < 1):
                    g = nxt
            qG = g
        else:
            raise ArithmeticError(f"channel = 'glm': the GLM and Gaussian blocks did not settle at "
                                  f"n/d = {s:.6g} within {max_iter} iterations (last residual "
                                  f"{res:.2g})")
        q = np.zeros(self.p.k)
        q[self.G] = qG
        if self.rest.size:
            q[self.rest] = q_rest
        psi, eps = self.psi_mix(s, q)
        q_out = np.empty(self.p.k)
        q_out[self.p.order] = q
        return MixedSolution(eps, q_out, psi, int(np.count_nonzero(q > 0)), it, start, qG.copy())

    def solutions(self, s: float) -> list[MixedSolution]:
        starts = {"uninformed": np.zeros(self.G.size),
                  "informed": np.full(self.G.size, 1.0 - 1e-6)}
        found = []
        for name, q0 in starts.items():
            sol = self._iterate(s, q0, name)
            if not any(abs(sol.eps - f.eps) <= 1e-10 * max(1.0, f.eps) for f in found):
                found.append(sol)
        found.sort(key=lambda x: x.eps)
        return found

    def solve(self, s: float):
        sols = self.solutions(s)
        return max(sols, key=lambda x: x.psi), sols
