"""Bayes-optimal baseline for an extensive-width teacher with hierarchical readouts.

Python API (the command line ``scaling-odes bayes`` is a thin layer over it)::

    from solvers.theory.bayes import Setup, curve, transitions, limit
    st = Setup(activation="cubic", d=200, gamma=1, Delta=0.1, beta=1.0)
    res = curve(st, n_over_d=[1, 10, 100])          # eps_bo, kc, q, fixed_points, ...
    tr = transitions(st, features=[1, 2])            # appears / switch / ends / q_jump
    lim = limit(st, alpha=[1.0])                     # d → ∞ forms

Pieces: :mod:`.activation` (g_σ from derive.bayes), :mod:`.channel` (m_σ, λ_σ, q_σ),
:mod:`.fixed_point` (all stable solutions, Ψ, selection, transitions), :mod:`.limits` (d → ∞),
:mod:`.regime` (which features the Gaussian output channel describes), :mod:`.glm_channel`
(``Setup(channel="glm")``, experimental: units with O(1) readouts as generalised linear models,
curve only).
"""
from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass, field

import mpmath
import numpy as np

from .activation import Activation, ActivationError, resolve
from .channel import Jump, jump_min, jump_pair, m_mp, m_np
from .fixed_point import SELECTIONS, Problem, Solution, power_law_readouts
from .glm_channel import GLM_UNITS, MixedProblem
from .limits import LimitLtHalf, limit_gt_half, phi_profile

__all__ = ["Setup", "curve", "transitions", "limit", "Activation", "ActivationError", "Jump",
           "jump_pair", "jump_min", "m_mp", "m_np", "Problem", "Solution", "power_law_readouts",
           "LimitLtHalf", "limit_gt_half", "phi_profile", "SELECTIONS", "CHANNELS", "GLM_UNITS"]

CHANNELS = ("gaussian", "glm")


def _cached(fn):
    """A read-only property computed once per Setup and kept in its ``_cache``."""
    name = fn.__name__

    @functools.wraps(fn)
    def get(self):
        if name not in self._cache:
            self._cache[name] = fn(self)
        return self._cache[name]

    return property(get)


@dataclass
class Setup:
    """One Bayes-optimal problem: activation, d, k = γd, Δ, readouts (power law or list)."""

    activation: str = "cubic"
    d: int = 200
    gamma: float = 1.0
    Delta: float = 0.1
    beta: float | None = 1.0
    readouts: list | None = None
    hermite: list | None = None
    hermite_start: int = 3
    drop_low_orders: bool = False
    dps: int = 30
    channel: str = "gaussian"
    glm_units: str = "outside"
    _cache: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        if self.d < 1:
            raise ValueError(f"d = {self.d} must be >= 1")
        if not self.Delta > 0:
            raise ValueError(f"Delta = {self.Delta} must be > 0")
        if self.readouts is None:
            if self.beta is None or not self.beta > 0:
                raise ValueError(f"beta = {self.beta} must be > 0")
            if not self.gamma > 0:
                raise ValueError(f"gamma = {self.gamma} must be > 0")
            if self.k < 1:
                raise ValueError(f"k = gamma*d = {self.gamma * self.d} rounds to 0 features")
        elif len(self.readouts) == 0:
            raise ValueError("readouts must not be empty")
        if self.channel not in CHANNELS:
            raise ValueError(f"channel = {self.channel!r} must be one of {', '.join(CHANNELS)}")
        if self.glm_units not in GLM_UNITS:
            raise ValueError(f"glm_units = {self.glm_units!r} must be one of "
                             f"{', '.join(GLM_UNITS)}")

    @property
    def k(self) -> int:
        if self.readouts is not None:
            return len(self.readouts)
        return int(round(self.gamma * self.d))

    @_cached
    def act(self) -> Activation:
        return resolve(self.activation, self.hermite, self.hermite_start, self.drop_low_orders)

    @_cached
    def jump(self) -> Jump:
        return jump_pair(self.act, self.dps)

    @_cached
    def problem(self) -> Problem:
        v2 = (np.asarray([float(v) for v in self.readouts]) if self.readouts is not None
              else power_law_readouts(self.k, float(self.beta)))
        return Problem(self.act, self.jump, v2, float(self.Delta))

    @_cached
    def mixed(self) -> MixedProblem:
        """The system with the GLM channel for the units chosen by ``glm_units``."""
        return MixedProblem(self.problem, self.glm_units)

    def meta(self) -> dict:
        from solvers import __version__
        p = self.problem
        with mpmath.workdps(self.dps):
            lam_s, q_s = mpmath.nstr(self.jump.lam, self.dps), mpmath.nstr(self.jump.q, self.dps)
        g = str(self.act.g) if self.act.name != "tanh3" else "series (see activation_note)"
        return {"version": __version__, "activation": self.act.name, "g": g,
                "activation_note": self.act.note,
                "d": self.d, "k": self.k, "Delta": float(self.Delta),
                "beta": None if self.readouts is not None else float(self.beta),
                "readouts": "list" if self.readouts is not None else "power law",
                "readouts_sum_before_normalisation": p.norm, "dps": self.dps,
                "lambda_sigma_digits": lam_s, "q_sigma_digits": q_s,
                "numbers": "channel (λ_σ, q_σ) at dps digits; fixed points in float64 (~12 digits)",
                "channel": self.channel}


def _points(st: Setup, n_over_d=None, alpha=None):
    if (n_over_d is None) == (alpha is None):
        raise ValueError("give either n_over_d or alpha (= n/d²)")
    if n_over_d is not None:
        s = [float(v) for v in n_over_d]
    else:
        s = [float(a) * st.d for a in alpha]
    if not s:
        raise ValueError("no points (empty n_over_d / alpha)")
    for v in s:
        if not (v > 0 and math.isfinite(v)):
            raise ValueError(f"n/d = {v} must be a finite number > 0")
    return s


def curve(st: Setup, n_over_d=None, alpha=None, selection: str = "potential",
          progress=None) -> dict:
    """ε^BO, k_c, q per feature and every stable fixed point at each n/d."""
    if selection not in SELECTIONS:
        raise ValueError(f"selection = {selection!r} must be one of {', '.join(SELECTIONS)}")
    started = time.perf_counter()
    s_list = _points(st, n_over_d, alpha)
    if st.channel == "glm":
        return _curve_glm(st, s_list, selection, progress, started)
    p = st.problem
    out = _curve_points(st, s_list, lambda s: p.solve(s, selection), progress)
    meta = st.meta()
    meta.update(selection=selection, wall_time=time.perf_counter() - started)
    out["meta"] = meta
    return out


def _curve_points(st: Setup, s_list, solve, progress) -> dict:
    """The curve's per-point lists; ``solve(s)`` gives (selected solution, all solutions)."""
    out = {"n_over_d": s_list, "alpha": [s / st.d for s in s_list], "eps_bo": [], "kc": [],
           "q": [], "fixed_points": [], "lambda_sigma": st.jump.lam_f, "q_sigma": st.jump.q_f}
    for s in s_list:
        sel, sols = solve(s)
        out["eps_bo"].append(sel.eps)
        out["kc"].append(sel.kc)
        out["q"].append([float(v) for v in sel.q])
        out["fixed_points"].append([sol.as_dict() for sol in sols])
        if progress:
            progress(1)
    return out


def _curve_glm(st: Setup, s_list, selection, progress, started) -> dict:
    mp = st.mixed

    def solve(s):
        sols = mp.solutions(s)
        return ({"informed": sols[0], "uninformed": sols[-1]}.get(selection)
                or max(sols, key=lambda x: x.psi)), sols

    out = _curve_points(st, s_list, solve, progress)
    glm_features = sorted(int(st.problem.order[i]) + 1 for i in mp.G)
    meta = st.meta()
    meta.update(selection=selection, wall_time=time.perf_counter() - started, channel="glm",
                glm_units=st.glm_units, glm_features=glm_features,
                channel_note=(
                    "experimental: the features in glm_features are generalised linear models "
                    "(exact one-unit channel, tabulated for cubic sigma) against Gaussian noise "
                    "Delta + the other features' residual; the rest keep the Gaussian channel. "
                    "Exact for k = 1; for several O(1) readouts an approximation. fixed_points "
                    "lists the solutions reached from an uninformed and an informed start; "
                    "selection by Psi_mix (solvers/theory/bayes/glm_channel.py)"))
    out["meta"] = meta
    return out


def transitions(st: Setup, features=None) -> dict:
    """Per feature (1-based): n/d where the learned branch appears, the Bayes-optimal switch,
    the end of the uninformed branch, and q_i just after the switch; plus Eq. 36 for feature 1."""
    started = time.perf_counter()
    if st.channel != "gaussian":
        raise ValueError("transitions need channel = 'gaussian' (a GLM unit has no jump to "
                         "locate: its overlap grows from the first samples); use curve")
    p = st.problem
    features = list(range(1, min(st.k, 5) + 1)) if features is None else list(features)
    for f in features:
        if not 1 <= f <= st.k:
            raise ValueError(f"feature {f} out of range 1..{st.k}")
    rows = [p.transitions(f - 1) for f in features]
    for r in rows:
        r.update(alpha_appears=r["appears"] / st.d, alpha_switch=r["switch"] / st.d,
                 alpha_ends=r["ends"] / st.d)
    v1 = float(p.v2[0])
    eq36 = st.jump.lam_f * (st.Delta + p.g1) / v1
    meta = st.meta()
    meta.update(wall_time=time.perf_counter() - started)
    return {"features": [{k: float(v) if k != "feature" else int(v) for k, v in r.items()}
                         for r in rows],
            "eq36_n_over_d": eq36, "lambda_sigma": st.jump.lam_f, "q_sigma": st.jump.q_f,
            "meta": meta}


def limit(st: Setup, alpha=None, n_over_d=None, completion: bool = False) -> dict:
    """The d → ∞ forms at the given α (n/d given is converted with the spec's d)."""
    if st.readouts is not None:
        raise ValueError("the d → ∞ limit needs the power-law readouts (beta), not a list")
    if st.channel != "gaussian":
        raise ValueError("limit needs channel = 'gaussian' (the d → ∞ forms are those of the "
                         "Gaussian-channel system)")
    beta = float(st.beta)
    alphas = [s / st.d for s in _points(st, n_over_d, alpha)]
    out = {"alpha": alphas, "beta": beta, "lambda_sigma": st.jump.lam_f,
           "q_sigma": st.jump.q_f}
    if beta > 0.5:
        rows = [limit_gt_half(st.act, st.jump, a, beta, float(st.Delta)) for a in alphas]
        out.update(regime="beta > 1/2", kc_bar=[r["kc_bar"] for r in rows],
                   eps_bar=[r["eps_bar"] for r in rows],
                   kc_exponent=rows[0]["kc_exponent"], eps_exponent=rows[0]["eps_exponent"],
                   kc_at_d=[r["kc_bar"] * st.d ** rows[0]["kc_exponent"] for r in rows],
                   eps_at_d=[r["eps_bar"] * st.d ** rows[0]["eps_exponent"] for r in rows])
    elif beta < 0.5:
        L = LimitLtHalf(st.act, st.jump, beta, float(st.gamma), float(st.Delta))
        sols = [L.solutions(a) for a in alphas]
        sel = [max(ss, key=lambda r: r["psi"]) for ss in sols]
        out.update(regime="beta < 1/2", eps=[r["eps"] for r in sel],
                   kc_fraction=[r["kc_fraction"] for r in sel], fixed_points=sols,
                   alpha_star=L.alpha_star())
        if completion:
            out["completion"] = L.completion()
    else:
        raise ValueError("beta = 1/2 is the boundary between the two limits (no d → ∞ form)")
    out["meta"] = st.meta()
    return out
