"""Which features the fixed point describes: readout size against the noise the channel sees.

The fixed-point system gives every unit a Gaussian output channel: only g_σ (the output's
second-moment kernel) enters, through the channel free entropy −½ ln(Δ + ε).  For unit i the true
channel is y = v_i σ(w_i·x/√d) + (everything else), and "everything else" has power
s_i = Δ + ε − v_i² [g(1) − g(q_i)] (the noise plus the other units' residual).  When
r_i = v_i²/s_i ≪ 1 the unit's own contribution is a small non-Gaussian term on top of a large
Gaussian one and the replacement is exact to leading order; at r_i = O(1) the unit is a
generalised linear model with a non-Gaussian channel (:mod:`.glm`), learned gradually rather than
by the Gaussian-channel jump.

Measured size of the correction.  For one unit the channel free entropy gain
ΔΨ(q) = Ψ_out(q) − Ψ_out(0) depends on (v, s) only through r = v²/s (rescaling y by 1/v shifts
Ψ_out by −ln v).  The correction is

    c(r) = max_{q ∈ Q} |ΔΨ_true(q) − ΔΨ_gauss(q)| / ΔΨ_gauss(q_top),

the largest error of the Gaussian replacement in the information the channel carries, relative to
the total information it carries (Q = {0.1, 0.3, 0.5, 0.7, 0.9, 0.99}, q_top = 0.99), with
ΔΨ_true from the GLM quadrature :func:`.glm.psi_out` (cubic σ = He₃/√6, whose g(q) = q³) and
ΔΨ_gauss from :func:`.glm.psi_out_gaussian`.  :data:`CORRECTION_TABLE` holds c(r) measured by
:func:`measure_correction` (recomputed in tests/test_bayes_regime.py); between its points c is
interpolated linearly in (ln r, ln c); below the smallest r it is extrapolated as c ∝ r, the
measured small-r law (c = 1.846 r and 1.843 r at r = 0.005, 0.01: the unit's own non-Gaussian
term is O(r²) against an O(r) gain); above the largest it is held at its last value.  A finer
quadrature rule changes c by < 5e−4 at the points checked.  The numbers are for cubic σ; other
activations with k⋆ ≥ 3 have a non-Gaussian output of the same kind and are reported with the
same table (an estimate there, which the report's ``measure`` line says).

Threshold: a feature is in the Gaussian regime when c(r_i) < 1e−2 (one percent of the
information of its channel misdescribed), i.e. r_i below ≈ 0.0054 by the table (c ≈ 1.85 r):
a readout must be some 200 times weaker than the rest of the output; c peaks at 0.31 (r ≈ 2).
A transition of a feature outside the regime is reported as a warning: it is the system's
prediction, not the posterior's (measured with HMC: k = 1, d = 80, n/d = 2, Gibbs/2 =
0.372 ± 0.035 against 0.360 from the GLM formula and 0.100 from the fixed point; k = 20, d = 40,
β = 1: q₂ = 0.31 ± 0.08 where the fixed point has 0).

Example
-------
>>> from solvers.theory.bayes import Setup, transitions
>>> from solvers.theory.bayes.regime import readout_regime
>>> st = Setup(activation="cubic", d=60, readouts=[1.0, 1e-3], Delta=0.5, beta=None)
>>> rep = readout_regime(st, transitions(st, features=[1, 2]))
>>> [f["in_gaussian_regime"] for f in rep["features"]]
[False, True]
>>> len(rep["warnings"])
1

For the hierarchy β = 1, d = k = 200, Δ = 0.1, features 1–30 or so are outside (feature 20 has
r = 0.010, c = 0.019 at its switch; feature 40 r = 0.0031, c = 0.0058).
"""
from __future__ import annotations

import math

import numpy as np

from . import glm

THRESHOLD = 1e-2
Q_POINTS = (0.1, 0.3, 0.5, 0.7, 0.9, 0.99)

# (r = v²/s, c(r)) measured by measure_correction (cubic σ, default quadrature rule; a finer rule
# (30, 100, 20, 2000 nodes) changes c by < 5e−4 at r = 0.005, 0.01, 0.1, 1); see the docstring.
# Small r: c ≈ 1.85 r (the unit's own non-Gaussian term is O(r²) against an O(r) gain).
CORRECTION_TABLE = np.array([
    (0.005, 0.009231), (0.01, 0.018430), (0.02, 0.033053), (0.05, 0.053311), (0.1, 0.085095),
    (0.2, 0.155669), (0.5, 0.248397), (1.0, 0.293488), (2.0, 0.307365), (5.0, 0.288786),
    (10.0, 0.262973), (30.0, 0.211467)])


def measure_correction(r: float, q_points=Q_POINTS, s: float = 1.0, act=glm.cubic,
                       g=lambda x: x ** 3) -> float:
    """c(r) from the GLM quadrature, v = √(r s) (the default cubic σ with g = x³; ``act``/``g``
    another pair, e.g. the linear channel, where c = 0)."""
    v = math.sqrt(r * s)
    p0 = glm.psi_out(0.0, v, s, act)
    g0 = float(glm.psi_out_gaussian(0.0, v, s, g))
    err = 0.0
    for q in q_points:
        d_true = glm.psi_out(q, v, s, act) - p0
        d_gauss = float(glm.psi_out_gaussian(q, v, s, g)) - g0
        err = max(err, abs(d_true - d_gauss))
    top = float(glm.psi_out_gaussian(max(q_points), v, s, g)) - g0
    return err / top


def correction(r):
    """c(r) from :data:`CORRECTION_TABLE` (log–log interpolation; c ∝ r below the table, held at
    its last value above it).  ``r`` may be an array."""
    r = np.asarray(r, float)
    lr, lc = np.log(CORRECTION_TABLE[:, 0]), np.log(CORRECTION_TABLE[:, 1])
    with np.errstate(divide="ignore"):
        x = np.log(np.maximum(r, 1e-300))
    inside = np.exp(np.interp(x, lr, lc))
    below = CORRECTION_TABLE[0, 1] * r / CORRECTION_TABLE[0, 0]
    out = np.where(r < CORRECTION_TABLE[0, 0], below, inside)
    return float(out) if out.ndim == 0 else out


def unit_channels(act, v2, q, eps: float, Delta: float, threshold: float = THRESHOLD) -> dict:
    """Per unit: ratio = v²/(Δ+ε), r = v²/s (s = Δ + ε − v²[g(1) − g(q)], the power of the rest),
    c(r) and whether c(r) < threshold.  Arrays in, arrays out (caller's order)."""
    v2, q = np.asarray(v2, float), np.asarray(q, float)
    own = v2 * act.gap_np(1.0 - q)                      # v_i² [g(1) − g(q_i)]
    total = Delta + eps
    rest = np.maximum(total - own, Delta)               # ≥ Δ; guards round-off only
    r = v2 / rest
    c = correction(r)
    return {"ratio": v2 / total, "r_other": r, "correction_estimate": np.atleast_1d(c),
            "in_gaussian_regime": np.atleast_1d(c) < threshold}


def _v2_caller_order(problem) -> np.ndarray:
    v2 = np.empty(problem.k)
    v2[problem.order] = problem.v2
    return v2


def readout_regime(setup, result: dict, threshold: float = THRESHOLD,
                   detail: str = "all") -> dict:
    """Which reported features lie in the regime where the Gaussian-channel fixed point holds.

    Parameters
    ----------
    setup : Setup
        The problem the result was computed for.
    result : dict
        The output of :func:`~solvers.theory.bayes.transitions` (has ``"features"``) or of
        :func:`~solvers.theory.bayes.curve` (has ``"eps_bo"``).
    threshold : float
        A unit is in the Gaussian regime when its measured correction c(r) is below this.
    detail : {"all", "outside"}
        For a curve: per-feature lists for every feature ("all"), or only for the features
        outside the regime at that point ("outside": compact for large k; the lists then follow
        the order of ``outside``).

    Returns
    -------
    dict
        ``threshold``, ``measure`` (one line saying what c is), ``warnings`` (list of str) and

        - for transitions: ``features``, one dict per reported feature: ``feature``, ``v2``,
          ``n_over_d`` (the Bayes-optimal switch), ``delta_plus_eps``, ``ratio`` = v²/(Δ+ε) and
          ``r_other`` just after the switch, ``correction_estimate`` (the larger of just before
          and just after), ``in_gaussian_regime``;
        - for a curve: ``points``, one dict per n/d with ``n_over_d``, ``delta_plus_eps`` and
          per-feature lists ``ratio``, ``correction_estimate``, ``in_gaussian_regime``, plus
          ``outside`` (1-based features outside the regime) and ``eps_share_outside`` (the part
          of ε carried by them); and ``v2`` (per feature, normalised; with detail = "outside" a
          map feature → v² over the features outside at some point).
    """
    p = setup.problem
    act, Delta = setup.act, float(setup.Delta)
    v2 = _v2_caller_order(p)
    out = {"threshold": float(threshold),
           "measure": "c(r): largest error of the Gaussian channel in a unit's information gain, "
                      "relative to the gain, r = v²/(power of the rest); cubic σ table"
                      + ("" if act.name == "cubic" else
                         f" (an estimate for activation {act.name})"),
           "warnings": []}
    if "features" in result:
        rows = []
        for row in result["features"]:
            i = int(row["feature"]) - 1
            sw = float(row["switch"])
            after = p.select(p.solutions(sw * (1 + 1e-9)))
            before = p.select(p.solutions(sw * (1 - 1e-9)))
            ua = unit_channels(act, v2[i:i + 1], after.q[i:i + 1], after.eps, Delta, threshold)
            ub = unit_channels(act, v2[i:i + 1], before.q[i:i + 1], before.eps, Delta, threshold)
            c = max(float(ua["correction_estimate"][0]), float(ub["correction_estimate"][0]))
            inside = c < threshold
            rows.append({"feature": i + 1, "v2": float(v2[i]), "n_over_d": sw,
                         "delta_plus_eps": Delta + after.eps, "ratio": float(ua["ratio"][0]),
                         "r_other": float(ua["r_other"][0]), "correction_estimate": c,
                         "in_gaussian_regime": bool(inside)})
            if not inside:
                out["warnings"].append(
                    f"feature {i + 1}: its transition at n/d = {sw:.6g} has v²/(Δ+ε) = "
                    f"{rows[-1]['ratio']:.3g}, outside the Gaussian-channel regime (measured "
                    f"correction {c:.2g} ≥ {threshold:g}): the fixed point's value, not the "
                    "posterior's (a unit with an O(1) readout is learned gradually)")
        out["features"] = rows
        return out
    if "eps_bo" not in result:
        raise ValueError("result: expected the output of curve() or transitions()")
    if detail not in ("all", "outside"):
        raise ValueError(f"detail = {detail!r} must be 'all' or 'outside'")
    pts, prev_q, switched = [], None, []
    flagged = set()
    for s, eps, q in zip(result["n_over_d"], result["eps_bo"], result["q"]):
        q = np.asarray(q, float)
        u = unit_channels(act, v2, q, float(eps), Delta, threshold)
        outside = np.nonzero(~u["in_gaussian_regime"])[0]
        share = float(np.sum(v2[outside] * act.gap_np(1.0 - q[outside]))) / eps if eps > 0 else 0.0
        sel = outside if detail == "outside" else slice(None)
        pts.append({"n_over_d": float(s), "delta_plus_eps": Delta + float(eps),
                    "ratio": u["ratio"][sel].tolist(),
                    "correction_estimate": u["correction_estimate"][sel].tolist(),
                    "in_gaussian_regime": u["in_gaussian_regime"][sel].tolist(),
                    "outside": (outside + 1).tolist(), "eps_share_outside": share})
        if prev_q is not None:
            moved = outside[(prev_q[outside] > 0) != (q[outside] > 0)]
            for i in moved:
                switched.append(
                    f"feature {i + 1}: switches between n/d = {prev_s:.6g} and {s:.6g} with "
                    f"v²/(Δ+ε) = {u['ratio'][i]:.3g}, outside the Gaussian-channel regime "
                    f"(measured correction {u['correction_estimate'][i]:.2g}): the fixed point's "
                    "transition, not the posterior's")
        flagged.update(int(i) + 1 for i in outside)
        prev_q, prev_s = q, s
    cap = 10                                 # one line per switch up to here, then a count
    out["warnings"] += switched[:cap]
    if len(switched) > cap:
        out["warnings"].append(f"… and {len(switched) - cap} more switches of features outside "
                               "the Gaussian-channel regime")
    if flagged:
        f = sorted(flagged)
        names = (f"{f[0]}–{f[-1]}" if f == list(range(f[0], f[-1] + 1)) and len(f) > 1
                 else ", ".join(map(str, f[:10])) + (" …" if len(f) > 10 else ""))
        word = "feature" if len(f) == 1 else "features"
        out["warnings"].insert(0, f"{word} {names}: outside the Gaussian-channel regime at some "
                                  "n/d; q_i there (and that part of ε, eps_share_outside) is the "
                                  "system's value, not the posterior's")
    out["points"] = pts
    out["v2"] = (v2.tolist() if detail == "all"
                 else {str(i): float(v2[i - 1]) for i in sorted(flagged)})
    return out
