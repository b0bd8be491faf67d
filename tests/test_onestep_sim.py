"""One step + ridge: the sRF theory against seeded finite-d simulations (direct sRF, its
Gaussian equivalent, the real two-layer protocol) and Result 3.1 against one real step.

Tolerances: 4 standard errors over seeds (the statistical part) plus a finite-size allowance.
The allowances are measured, not tuned: at d = 200–400, 8 seeds, β ∈ {0.5, 1, 2}, λ = 0.05 the
sRF test errors sat within 1.5 standard errors of the theory (|Δ| ≤ 4 %); training errors,
whose seed spread is tiny, showed O(1/d) shifts up to 5 % (4 standard errors) — hence 5 % and
10 %.  The real protocol sits above the sRF theory by 2–10 % at d = 300–600 (the sRF is the
d → ∞ limit of the network; the paper reports 1–5 % at d = 2000).
"""
from __future__ import annotations

import numpy as np
import pytest

from solvers.theory.onestep import Setup, curve
from solvers.theory.onestep.simulate import measure_step, repeat

pytestmark = [pytest.mark.simulation]


def _check(th, sim, key, rel):
    for a, t, s, e in zip(sim["alpha"], th[key], sim[key], sim[key + "_sem"], strict=True):
        assert abs(s - t) <= 4 * e + rel * t, (key, a, t, s, e)


@pytest.mark.parametrize("beta", [0.5, 1.0, 2.0])
def test_srf_simulation_matches_theory(beta):
    st = Setup("tanh", "tanh", 1.0, 1.5, beta, 0.05)
    al = [0.5, 2.0]
    th = curve(st, al)
    sim = repeat("srf", range(4), d=200, beta=beta, alpha=al, student=st.student_act,
                 target=st.target_act, lam=0.05, srf=th["srf"])
    _check(th, sim, "eps_g", 0.05)
    _check(th, sim, "train_error", 0.10)


def test_gaussian_equivalent_map_matches_srf():
    """The conditional Gaussian map (full W0 x, not its projection) gives the sRF's error."""
    st = Setup("erf", "sin2", 1.0, 2.0, 1.0, 0.05)
    al = [0.5, 2.0]
    th = curve(st, al)
    kw = dict(d=200, beta=1.0, alpha=al, student=st.student_act, target=st.target_act,
              lam=0.05, srf=th["srf"])
    a, b = repeat("srf", range(4), **kw), repeat("gaussian", range(4), **kw)
    for i in range(len(al)):
        tol = 4 * np.hypot(a["eps_g_sem"][i], b["eps_g_sem"][i]) + 0.05 * th["eps_g"][i]
        assert abs(a["eps_g"][i] - b["eps_g"][i]) <= tol
    _check(th, b, "eps_g", 0.05)


def test_protocol_close_to_theory_small_d():
    """The real step + ridge (d = 400): the theory below the network by at most ~12 %."""
    st = Setup("tanh", "tanh", 0.5, 1.0, 1.0, 0.01)
    al = [0.667, 3.0]
    th = curve(st, al)
    sim = repeat("protocol", range(3), d=400, beta=1.0, alpha=al, student=st.student_act,
                 target=st.target_act, lam=0.01, alpha0=0.5, eta=1.0)
    for t, s, e in zip(th["eps_g"], sim["eps_g"], sim["eps_g_sem"], strict=True):
        assert -4 * e <= s - t <= 0.12 * t + 4 * e


@pytest.mark.parametrize("noise", [0.0, 0.5])
def test_one_real_step_gives_result_3_1(noise):
    """γ, r, c read off one gradient step (d = p = 1000, 4 seeds) vs Result 3.1 (label noise
    enters through E y² = m2⋆ + Δ): within 4 standard errors (the seed spread of ‖u‖ dominates
    r) plus 0.3 % for the O(1/d) bias (measured: c low by 0.2 % at d = 1000, 0.05 % at 2000)."""
    st = Setup("tanh", "tanh", 0.5, 1.0, noise=noise)
    ref = st.srf()
    ms = [measure_step(1000, 1000, 0.5, 1.0, st.student_act, st.target_act, noise, seed=s)
          for s in range(4)]
    for key in ("gamma", "r", "c"):
        v = np.array([m[key] for m in ms])
        sem = v.std(ddof=1) / 2
        assert abs(v.mean() - ref[key]) <= 4 * sem + 3e-3 * ref[key], (key, v.mean(), ref[key])


def _gauss_mean(g, n=80):
    """E g(z), z ~ N(0, 1), by Gauss–Hermite (an independent route to the activation constants)."""
    z, w = np.polynomial.hermite_e.hermegauss(n)
    return float(np.sum(w * g(z)) / np.sum(w))


def _check_step_vs_result_3_1(d, beta, seeds, eta=1.0):
    st = Setup("tanh", "tanh", 0.5, eta, beta)
    ref = st.srf()
    p = int(round(beta * d))
    ms = [measure_step(d, p, 0.5, eta, st.student_act, st.target_act, seed=s) for s in seeds]
    root_n = np.sqrt(len(ms))
    for key in ("gamma", "r", "c"):
        v = np.array([m[key] for m in ms])
        sem = v.std(ddof=1) / root_n
        assert abs(v.mean() - ref[key]) <= 4 * sem + 3e-3 * ref[key], \
            (beta, key, v.mean(), sem, ref[key])
    # r = η μ1 ‖u‖: the seed spread of r is that of ‖u‖ (a property of the samples only), so the
    # ratio r/‖u‖ is pinned far tighter; μ1 = E tanh'(z) by quadrature, not by the package.
    mu1 = _gauss_mean(lambda z: 1 - np.tanh(z) ** 2)
    q = np.array([m["r"] / m["unorm"] for m in ms])
    sem = q.std(ddof=1) / root_n
    assert abs(q.mean() - eta * mu1) <= 4 * sem + 3e-3 * eta * mu1, (beta, q.mean(), sem, mu1)


@pytest.mark.parametrize("beta", [0.5, 1.0, 2.0])
def test_one_real_step_gives_result_3_1_at_every_width(beta):
    """p = βd rows, d = 1000, 4 seeds, η fixed per row: Result 3.1 does not depend on β, and
    neither may the measured γ, r, c.  Same tolerance as above (4 standard errors plus 0.3 % for
    the O(1/d) bias).  Measured (d = 1000, 16 seeds): c low by 0.10–0.11 % at every β, r/‖u‖
    within 0.02–0.11 % of η μ1; r itself swings with ‖u‖ (seeds 0–15 at β = 0.5: 1.9 % low,
    5 standard errors; seeds 100–131: 0.35 % ± 0.46 %), hence the ratio check.  ≈ 3 s CPU."""
    _check_step_vs_result_3_1(1000, beta, range(4))


@pytest.mark.full
@pytest.mark.parametrize("beta", [0.5, 1.0, 2.0])
def test_one_real_step_gives_result_3_1_at_every_width_full(beta):
    """As above at d = 2000, 8 seeds (measured with 16 seeds: c within 0.1 %, r within 0.6 %)."""
    _check_step_vs_result_3_1(2000, beta, range(8))


@pytest.mark.full
def test_t_overlap_matters_full():
    """σ⋆ = sin 2z, r = 1, γ = 0.95, α = 3, λ = 0.01 (β = 1): the spike-bulk overlap t moves ε_g
    from 0.534 (t dropped) to 0.512; the sRF simulation (d = 1000, 8 seeds) must find the
    latter."""
    st = Setup("tanh", "sin2", 1.0, 1.0, 1.0, 0.01)
    from solvers.theory.onestep.fixed_point import solve, tables
    srf = {"gamma": 0.95, "r": 1.0, "c": 1.0}
    th = solve(tables(st.student_act, st.target_act, 0.95, 1.0, 1.0), [3.0], 1.0, 1.0, 0.01)
    assert abs(th["eps_g"][0] - 0.5116) < 5e-4
    sim = repeat("srf", range(8), d=1000, beta=1.0, alpha=[3.0], student=st.student_act,
                 target=st.target_act, lam=0.01, srf=srf)
    assert abs(sim["eps_g"][0] - th["eps_g"][0]) <= 4 * sim["eps_g_sem"][0] + 0.01


@pytest.mark.full
@pytest.mark.parametrize("beta", [0.5, 1.0, 2.0])
def test_srf_simulation_full(beta):
    st = Setup("tanh", "tanh", 0.5, 2.0, beta, 0.01)
    al = [0.3, 1.0, 3.0]
    th = curve(st, al)
    sim = repeat("srf", range(8), d=1000, beta=beta, alpha=al, student=st.student_act,
                 target=st.target_act, lam=0.01, srf=th["srf"])
    _check(th, sim, "eps_g", 0.02)
    _check(th, sim, "train_error", 0.05)


@pytest.mark.full
def test_protocol_full_authors_configuration():
    """d = p = 2000, tanh/tanh, α0 = 0.5, η = 1, λ = 0.01: the theory 0–6 % below the network."""
    st = Setup("tanh", "tanh", 0.5, 1.0, 1.0, 0.01)
    al = [0.667, 1.6, 3.0]
    th = curve(st, al)
    sim = repeat("protocol", range(3), d=2000, beta=1.0, alpha=al, student=st.student_act,
                 target=st.target_act, lam=0.01, alpha0=0.5, eta=1.0)
    for t, s, e in zip(th["eps_g"], sim["eps_g"], sim["eps_g_sem"], strict=True):
        assert -4 * e <= s - t <= 0.06 * t + 4 * e
