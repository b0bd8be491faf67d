"""The exact expected-loss recursion of one W against seeded one-pass SGD on the same W.

Reference: the simulator (independent code: it only runs SGD and evaluates P(θ) from W, b, σ).
Each comparison is a z-score (mean over runs minus theory, over the standard error); the
recursion must sit within 3 standard errors at every reported r.  Runs: 4000 for r ≤ 32 (cheap,
and where the wrong variants differ most), 400 to r = 1500.  The steps are far from the edge
(‖K‖ ≈ 0.17 and 0.11, γ(B+1)λ_max ≤ 0.5), where the single-run loss has no heavy tail, so the
standard errors are trustworthy.  The seeds are fixed: the test is deterministic.

The same test must reject the B² variant of the recursion (the batch factor B(B+1) replaced by
B², i.e. the Gaussian fourth moment forgotten): it is stepped here by its own loop.
"""
from __future__ import annotations

import numpy as np
import pytest

from solvers.theory.plrf import recursion as R
from solvers.theory.plrf.model import Problem, features, modes
from solvers.theory.plrf.sgd import mean_curve

pytestmark = [pytest.mark.simulation]

EARLY = np.array([1, 2, 3, 5, 8, 12, 20, 32])
LATE = np.unique(np.round(np.logspace(0, np.log10(1500), 16)).astype(int))


def _b_squared_variant(m, gamma, B, r_max):
    a = 1 - 2 * gamma * B * m.lam + gamma ** 2 * B * B * m.lam ** 2
    c = 2 * gamma ** 2 * B * m.lam ** 2
    S, out = m.w.copy(), []
    for _ in range(r_max + 1):
        p = m.p_star + 0.5 * S.sum()
        out.append(p)
        S = a * S + c * p
    return np.array(out)


@pytest.mark.parametrize("B, gamma", [(1, 0.2), (4, 0.12)])
def test_recursion_matches_sgd_and_rejects_b_squared(B, gamma):
    pb = Problem(1.0, 0.7, 200, 50, B, gamma)
    W = features(pb, 0)
    m = modes(pb, W)
    sp = R.Spectrum(m.lam, np.ones_like(m.lam), m.w, m.p_star)
    z_theory, z_variant = [], []
    for runs, rs, seed in ((4000, EARLY, 11), (400, LATE, 12)):
        mc = mean_curve(pb, W, rs, runs, seed=seed)
        th = R.loss_curve(sp, gamma, B, rs)["loss"]
        var = _b_squared_variant(m, gamma, B, int(rs[-1]))[rs]
        z_theory.append((mc["loss"] - th) / mc["sem"])
        z_variant.append((mc["loss"] - var) / mc["sem"])
    z_theory, z_variant = np.concatenate(z_theory), np.concatenate(z_variant)
    assert np.max(np.abs(z_theory)) < 3, z_theory
    assert np.max(np.abs(z_variant)) > 3, z_variant


def test_literal_inputs_match_the_joint_gaussian_shortcut():
    """The simulator's two input routes (x in R^v, or (Wᵀx, bᵀx) from their joint law) both
    follow the recursion within 3 standard errors (400 runs, r ≤ 40)."""
    pb = Problem(0.8, 0.6, 120, 30, 2, 0.15)
    W = features(pb, 5)
    m = modes(pb, W)
    sp = R.Spectrum(m.lam, np.ones_like(m.lam), m.w, m.p_star)
    rs = np.array([1, 3, 10, 40])
    th = R.loss_curve(sp, pb.gamma, pb.batch, rs)["loss"]
    for inputs in ("full", "features"):
        mc = mean_curve(pb, W, rs, 400, seed=2, inputs=inputs)
        assert np.max(np.abs(mc["loss"] - th) / mc["sem"]) < 3, inputs
