"""The O(N_l) rotated-mask SGD kernel (feature_scaling.simulate_rotated_mask_reduced) against the
exact second-moment recursion of the literal N-dimensional process and against the literal kernel.

The reduced kernel replaces the frozen coordinates by one Gaussian scalar per step (their
conditional law given the trainable inputs), so its trajectories differ from the literal ones draw
by draw; what must agree is the law.  The oracle is the exact one-step map of C = <e e^T> for the
literal process (Gaussian fourth moments, mask P on the first N_l original coordinates):
  C' = C - g (P Sigma C + C Sigma P) + g^2 P (2 Sigma C Sigma + Sigma Tr(Sigma C)) P,   g = eta/N,
started from each run's own e0, so the SGD noise is the only randomness left to average over.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from solvers.sim.simulate import power_law_eigenvalues
from solvers.theory import feature_scaling as fs

pytestmark = [pytest.mark.closed_form, pytest.mark.simulation]  # oracle (tests/conftest.py)


def _exact_mean_curve(Sigma, e0, N_l, eta, n_steps, every, noise=True):
    N = Sigma.shape[0]
    P = np.zeros(N)
    P[:N_l] = 1.0
    g = eta / N
    C = np.outer(e0, e0)
    out = []
    for t in range(n_steps + 1):
        if t % every == 0:
            out.append(0.5 * np.trace(Sigma @ C) / N)
        SC = Sigma @ C
        PSC = P[:, None] * SC
        quad = 2 * SC @ Sigma + Sigma * np.trace(SC)
        C = C - g * (PSC + PSC.T) + (g * g * (P[:, None] * quad * P[None, :]) if noise else 0.0)
    return np.array(out)


def _seed_e0(lam, N, N_l, sJ, seed):
    # the draws both kernels make for a seed: W, then B, then J (written out: an independent route)
    rng = np.random.default_rng(seed)
    fs.haar_orthogonal(rng, N)
    B = rng.standard_normal(N)
    J = sJ * rng.standard_normal(N)
    return J - B


@pytest.mark.parametrize("N_l", [5, 16])
def test_reduced_kernel_mean_curve_is_the_exact_second_moment(N_l):
    lam = power_law_eigenvalues(4, 1.0)
    N, eta, sJ, amax = 16, 0.5, 0.3, 40.0
    runs = 150
    diffs, diffs_flow = [], []
    for r in range(runs):
        a, e, Sigma, _ = fs.simulate_rotated_mask_reduced(lam, N, N_l, eta, sJ, amax, seed=r, record_every=N)
        e0 = _seed_e0(lam, N, N_l, sJ, r)
        exact = _exact_mean_curve(Sigma, e0, N_l, eta, int(amax * N), N)
        assert e[0] == pytest.approx(exact[0], rel=1e-12)        # the reduced state carries the same eps_g
        diffs.append(e / exact - 1)
        diffs_flow.append(e / _exact_mean_curve(Sigma, e0, N_l, eta, int(amax * N), N, noise=False) - 1)
    diffs = np.array(diffs)
    mean, se = diffs.mean(axis=0), diffs.std(axis=0, ddof=1) / math.sqrt(runs)
    late = a >= 5
    # every recorded alpha (about 35 nearly independent late points): |z| < 4.5 at each
    assert np.all(np.abs(mean[late]) < 4.5 * se[late] + 1e-12), np.max(np.abs(mean[late]) / se[late])
    # power: the same comparison rejects the noiseless flow (no g^2 term), which eta = 0.5 puts
    # several per cent below the SGD mean
    flow = np.array(diffs_flow)
    z_flow = flow.mean(axis=0)[late] / (flow.std(axis=0, ddof=1)[late] / math.sqrt(runs))
    assert np.max(z_flow) > 6, np.max(z_flow)


def test_reduced_and_literal_kernels_agree_in_law():
    lam = power_law_eigenvalues(4, 1.0)
    N, N_l, eta, sJ, amax, burn = 32, 12, 0.5, 0.3, 60.0, 20.0
    d_red, d_lit = [], []
    for r in range(40):
        a, e, Sigma, eu = fs.simulate_rotated_mask_reduced(lam, N, N_l, eta, sJ, amax, seed=700 + r)
        a2, e2, Sigma2, eu2 = fs.simulate_rotated_mask(lam, N, N_l, eta, sJ, amax, seed=700 + r)
        assert np.allclose(Sigma, Sigma2, rtol=0, atol=1e-14)      # same W, B, J for a seed
        assert np.array_equal(eu, eu2)
        target = fs.stationary_eps(Sigma, N_l, eta, np.outer(eu, eu))
        d_red.append(np.mean(e[a >= burn]) / target - 1)
        d_lit.append(np.mean(e2[a2 >= burn]) / target - 1)
    d_red, d_lit = np.array(d_red), np.array(d_lit)
    se = math.hypot(d_red.std(ddof=1), d_lit.std(ddof=1)) / math.sqrt(d_red.size)
    assert abs(d_red.mean() - d_lit.mean()) < 4 * se
    assert abs(d_red.mean()) < 4 * d_red.std(ddof=1) / math.sqrt(d_red.size)


def test_expected_eps_is_the_literal_second_moment_recursion():
    # the O(N_l) closed form (diagonal closure in the eigenbasis of Sigma~, matrix powers) against
    # the N x N recursion of the literal process, step by step, and its window mean
    lam = power_law_eigenvalues(4, 1.0)
    N, eta, sJ = 16, 0.5, 0.3
    for N_l, seed in ((5, 1), (11, 2), (16, 3)):
        e0 = _seed_e0(lam, N, N_l, sJ, seed)
        _, _, Sigma, _ = fs.simulate_rotated_mask_reduced(lam, N, N_l, eta, sJ, 0.0, seed=seed)
        ref = _exact_mean_curve(Sigma, e0, N_l, eta, 640, 16)
        steps = np.arange(0, 641, 16)
        _, Sigma_i, e0_i = fs.rotated_mask_init(lam, N, N_l, sJ, seed)
        assert np.array_equal(Sigma_i, Sigma) and np.array_equal(e0_i, e0)
        got, win = fs.expected_eps_rotated_mask(Sigma, N_l, e0, eta, steps, window=(160, 640, 16))
        assert np.allclose(got, ref, rtol=1e-10, atol=1e-15)
        assert win == pytest.approx(np.mean(ref[10:]), rel=1e-10)
