"""The compute-optimal frontier: at compute f = B·d·r, the size d*(f) that minimises the loss
and the loss P*(f) there, from deterministic-equivalent curves over a ladder of d; the fitted
exponents (d* ~ f^ξ, P* ~ f^(−η)) next to the phase's predicted ones (:mod:`derive.plrf`).

For each f the discrete minimum over the ladder must be interior (both neighbours valid, with
r = f/(Bd) ≥ ``r_min``); d* and P* are then the vertex of the parabola through the three points
around it in (log d, log P).  The exponents are least-squares slopes in log f.  Their
uncertainty has two parts: the standard error of the fit (the residual scatter of the refined
minima — it reads ±0.000 on a long ladder) and the drift of a finite ladder's exponent with d.
The drift is measured on the ladder itself: the exponents of its lower and upper sub-ladders
(the smallest and the largest ⌈(n+1)/2⌉ sizes, sharing the middle one) differ by the change
of the local exponent over that span; half that difference is the drift, and ``xi_err`` /
``eta_err`` add it to the standard error in quadrature.
"""
from __future__ import annotations

import math

import numpy as np

from .deterministic import equivalent
from .model import Problem
from .recursion import loss_curve


def gamma_auto(alpha: float, v, scale: float = 0.5) -> float:
    """scale/Σ_{j≤v} σ_j: ‖K‖ ≈ scale/2 at every d (γ ∝ d^(2α−1) when v ∝ d below the line)."""
    if v == math.inf:
        from scipy.special import zeta
        return scale / float(zeta(2 * alpha))
    j = np.arange(1, int(v) + 1, dtype=float)
    return scale / float(np.sum(j ** (-2 * alpha)))


def noiseless(sp, gamma: float, batch: int, r) -> np.ndarray:
    """The loss without SGD noise: gradient descent on the population loss with step γB,
    P* + ½ Σ w (1 − γBλ)^(2r)."""
    r = np.asarray(r, dtype=float)
    rate = 2.0 * np.log(np.abs(1.0 - gamma * batch * sp.lam))
    return sp.p_star + 0.5 * np.exp(r[:, None] * rate[None, :]) @ sp.w


def loss_table(alpha, beta, ds, v_over_d, batch, gamma, f, r_min=10, noise=True,
               cells=(250, 1000)):
    """P(f/(Bd), d) for each d (rows) and f (columns); NaN where r < r_min."""
    table = np.full((len(ds), len(f)), np.nan)
    gammas = []
    for i, d in enumerate(ds):
        v = math.inf if v_over_d == math.inf else int(round(v_over_d * d))
        g = gamma_auto(alpha, v) if gamma == "auto" else float(gamma)
        gammas.append(g)
        pb = Problem(alpha, beta, v, int(d), batch, g)
        sp = equivalent(pb, *cells).spectrum
        r = np.floor(np.asarray(f) / (batch * d))
        ok = r >= r_min
        if not ok.any():
            continue
        if noise:
            table[i, ok] = loss_curve(sp, g, batch, r[ok].astype(np.int64), rtol=1e-6)["loss"]
        else:
            table[i, ok] = noiseless(sp, g, batch, r[ok])
    return table, gammas


def minima(ds, f, table):
    """Refined (f, d*, P*) where the discrete minimum over d is interior."""
    logd = np.log(np.asarray(ds, dtype=float))
    out = []
    for k, fk in enumerate(f):
        col = table[:, k]
        valid = np.isfinite(col)
        if valid.sum() < 3:
            continue
        i = int(np.nanargmin(col))
        if i == 0 or i == len(ds) - 1 or not (valid[i - 1] and valid[i + 1]):
            continue
        x, y = logd[i - 1:i + 2], np.log(col[i - 1:i + 2])
        c2, c1, c0 = np.polyfit(x, y, 2)
        if not c2 > 0:
            continue
        xs = -c1 / (2 * c2)
        out.append((float(fk), float(math.exp(xs)), float(math.exp(c0 + c1 * xs + c2 * xs ** 2))))
    return out


def fit_slope(x, y) -> tuple[float, float]:
    """Least-squares slope of log y on log x and its standard error."""
    lx, ly = np.log(x), np.log(y)
    if len(lx) < 3:
        return math.nan, math.nan
    coef, cov = np.polyfit(lx, ly, 1, cov=True)
    return float(coef[0]), float(math.sqrt(cov[0, 0]))


def predicted(alpha: float, beta: float) -> dict:
    """The phase of (α, β) and its exponents (exact expressions evaluated)."""
    from derive import plrf as D
    phase = D.phase_of(alpha, beta)
    if phase is None:
        return {"phase": None, "xi": None, "eta": None}
    xi, eta = D.exponents(phase)
    sub = {D.alpha: alpha, D.beta: beta}
    return {"phase": phase, "xi": float(xi.subs(sub)), "eta": float(eta.subs(sub))}


def exponents(ds, f, table) -> dict:
    """ξ, η and their standard errors from the interior minima of one loss table."""
    pts = minima(ds, f, table)
    fs = np.array([p[0] for p in pts])
    dstar = np.array([p[1] for p in pts])
    lstar = np.array([p[2] for p in pts])
    xi, xi_se = fit_slope(fs, dstar) if pts else (math.nan, math.nan)
    slope, eta_se = fit_slope(fs, lstar) if pts else (math.nan, math.nan)
    return {"f": fs, "d_star": dstar, "loss_star": lstar, "xi": xi, "xi_se": xi_se,
            "eta": -slope, "eta_se": eta_se}


def ladder_drift(ds, f, table) -> dict:
    """The exponents of the lower and upper sub-ladders and half their difference (NaN where a
    sub-ladder has too few sizes or minima to fit)."""
    n = len(ds)
    half = (n + 2) // 2
    if half < 3 or half >= n:
        return {"xi_sub": [math.nan, math.nan], "eta_sub": [math.nan, math.nan],
                "xi_drift": math.nan, "eta_drift": math.nan}
    low = exponents(ds[:half], f, table[:half])
    high = exponents(ds[n - half:], f, table[n - half:])
    return {"xi_sub": [low["xi"], high["xi"]], "eta_sub": [low["eta"], high["eta"]],
            "xi_drift": 0.5 * abs(high["xi"] - low["xi"]),
            "eta_drift": 0.5 * abs(high["eta"] - low["eta"])}


def frontier(alpha, beta, ds, v_over_d=4.0, batch=1, gamma="auto", f=None, r_min=10,
             noise=True, cells=(250, 1000)) -> dict:
    """``cells``: grid points per decade of the equivalent's spectrum (below / above d^(−α)).
    ``xi_err``, ``eta_err``: the fit's standard error and the ladder drift in quadrature (None
    when the ladder is too short to split or a sub-ladder has too few minima)."""
    ds = sorted(int(d) for d in ds)
    if f is None:
        f = np.geomspace(1e3, 1e12, 109)
    f = np.asarray(f, dtype=float)
    table, gammas = loss_table(alpha, beta, ds, v_over_d, batch, gamma, f, r_min, noise,
                               cells)
    ex = exponents(ds, f, table)
    dr = ladder_drift(ds, f, table)
    fs, dstar, lstar = ex["f"], ex["d_star"], ex["loss_star"]
    xi, xi_se, eta, eta_se = ex["xi"], ex["xi_se"], ex["eta"], ex["eta_se"]
    dr["xi_err"] = math.hypot(xi_se, dr["xi_drift"])
    dr["eta_err"] = math.hypot(eta_se, dr["eta_drift"])
    # not measurable (a short ladder): None, not NaN — no number rather than a wrong one
    dr = {k: ([None if not math.isfinite(x) else x for x in v] if isinstance(v, list)
              else (None if not math.isfinite(v) else v)) for k, v in dr.items()}
    return {"f": fs.tolist(), "d_star": dstar.tolist(), "loss_star": lstar.tolist(),
            "xi": xi, "xi_se": xi_se, "eta": eta, "eta_se": eta_se, **dr,
            "predicted": predicted(alpha, beta), "d": ds, "gamma": gammas,
            "f_grid": f.tolist(), "loss_table": [[None if not math.isfinite(x) else float(x)
                                                  for x in row] for row in table]}
