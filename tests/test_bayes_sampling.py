"""Posterior sampling (HMC) of the teacher weights against the Bayes-optimal fixed point.

Default tests (tiny): the HMC gradient against central finite differences, the closed Gibbs-error
kernel against Monte Carlo over x, and concentration on the teacher for k = 1 with many samples.
Full test (`make verify`): d = 40, k = 20, cubic σ = He₃/√6, β = 1, Δ = 0.1, at n/d around the
first two transitions (from `transitions`), both starts; each start is compared with the
matching branch of the fixed point (selection = "informed" / "uninformed").

Tolerance of the full test, fixed before the run: |sampled − theory| ≤ 3 SE + 1/√d, where SE is
the standard error over all chains of all data sets (instances × chains, so it holds both the
between-chain and the data-set-to-data-set spread at this d) and 1/√d = 0.158 is the O(1/√d)
finite-size allowance (the theory is a d → ∞ statement; the norms |w|²/d alone fluctuate by
√(2/d) = 0.22 per unit, and q enters the free energy at O(1)).
Run length: 600 warm-up + 600 kept HMC iterations (second half averaged); a 4-chain trace at
n/d = 5.2 from the uninformed start was still drifting after 300 + 300 (q₁ of one chain
0.39 → 1.07 between the first and third block of 150), so 300 + 300 is not enough.
"""
import math
import os

import numpy as np
import pytest

from solvers.theory.bayes import sampling as S

pytestmark = [pytest.mark.sampling]  # oracle (tests/conftest.py)


def test_gradient_matches_finite_differences():
    rng = np.random.default_rng(3)
    data = S.make_data(6, 3, 25, 0.1, 1.0, rng)
    W = rng.standard_normal((2, 3, 6))
    U, g = S.potential(W, data)
    h = 1e-6
    for idx in [(0, 0, 0), (1, 2, 5), (0, 1, 3)]:
        Wp, Wm = W.copy(), W.copy()
        Wp[idx] += h
        Wm[idx] -= h
        fd = (S.potential(Wp, data)[0][idx[0]] - S.potential(Wm, data)[0][idx[0]]) / (2 * h)
        assert abs(fd - g[idx]) <= 1e-6 * max(1.0, abs(g[idx]))


def test_gibbs_kernel_matches_monte_carlo():
    # the closed kernel C³ + 3/2 C (A−1)(B−1) against direct averaging over fresh x
    rng = np.random.default_rng(4)
    d, k = 8, 3
    Wt = rng.standard_normal((k, d))
    W = Wt + 0.7 * rng.standard_normal((k, d))
    v = S.readouts(k, 1.0)
    X = rng.standard_normal((400_000, d))
    diff = S.sigma(X @ W.T / math.sqrt(d)) @ v - S.sigma(X @ Wt.T / math.sqrt(d)) @ v
    mc, se = np.mean(diff ** 2), np.std(diff ** 2) / math.sqrt(X.shape[0])
    assert abs(S.gen_error(W, Wt, v) - mc) < 5 * se


def test_posterior_concentrates_on_teacher_k1():
    # k = 1, n = 400 ≫ d = 8: the posterior sits at w = w* up to O(√(d/n)), from a random start
    # too; at d = 8 the teacher norm |w*|²/d is itself random, so the overlap is read as a cosine
    rng = np.random.default_rng(5)
    data = S.make_data(8, 1, 400, 0.1, 1.0, rng)
    for informed in (True, False):
        run = S.hmc(data, S.starts(data, 2, informed, rng), warmup=150, samples=50,
                    leapfrog=10, rng=rng)
        q = run.cosine[:, :, 0].mean()
        assert q > 0.95, (informed, q)
        assert run.gibbs.mean() / 2 < 0.02


def test_hmc_matches_quadrature_posterior_d2():
    # detailed balance end to end: at d = 2, k = 1 the posterior is a 2-D density, integrated on
    # a grid (spacing 0.0125, |w| ≤ 5: discretisation error ≪ the HMC error bar); 16 independent
    # random-start chains give the standard error of E w and E|w|²
    rng = np.random.default_rng(7)
    data = S.make_data(2, 1, 12, 0.5, 1.0, rng)
    g = np.linspace(-5, 5, 801)
    W1, W2 = np.meshgrid(g, g, indexing="ij")
    Wg = np.stack([W1.ravel(), W2.ravel()], 1)[:, None, :]
    U = np.concatenate([S.potential(Wg[i:i + 40000], data)[0] for i in range(0, len(Wg), 40000)])
    p = np.exp(-(U - U.min()))
    p /= p.sum()
    exact = np.r_[(p[:, None] * Wg[:, 0, :]).sum(0), (p * (Wg[:, 0, :] ** 2).sum(1)).sum()]
    run = S.hmc(data, S.starts(data, 16, False, rng), warmup=300, samples=1500, leapfrog=10,
                rng=rng, observe=lambda W: np.concatenate([W[:, 0, :], (W[:, 0, :] ** 2).sum(1)[:, None]], 1))
    per_chain = run.observed.mean(axis=0)
    m, se = per_chain.mean(0), per_chain.std(0, ddof=1) / math.sqrt(per_chain.shape[0])
    assert np.all(np.abs(m - exact) < 4 * se), (m, se, exact)
    assert np.all(se < 0.05)          # the test can fail: the bar is tight, not vacuous


D, K, DELTA, BETA = 40, 20, 0.1, 1.0


def _points():
    from solvers.theory.bayes import Setup, transitions
    st = Setup(activation="cubic", d=D, gamma=K / D, Delta=DELTA, beta=BETA)
    f1, f2 = transitions(st, features=[1, 2])["features"]
    # inside the first coexistence band, between the transitions, inside the second band
    return st, [0.5 * (f1["appears"] + f1["ends"]), 0.5 * (f1["ends"] + f2["appears"]),
                0.5 * (f2["appears"] + f2["ends"])]


@pytest.mark.full
@pytest.mark.xfail(strict=False, reason="issue 14, open: at d = 40, k = 20 the sampled q_1 and Gibbs "
                   "error/2 miss the fixed point beyond 3 SE + 1/sqrt(d) (see the README's sampling "
                   "section); kept as the measurement, not loosened")
def test_hmc_against_fixed_point_d40():
    from solvers.theory.bayes import curve
    st, pts = _points()
    tol_fs = 1 / math.sqrt(D)
    failures, rows = [], []
    for j, s in enumerate(pts):
        m = S.measure(D, K, s, DELTA, BETA, instances=4, chains=2, warmup=600, samples=600,
                      seed=100 + j)
        for start in ("informed", "uninformed"):
            th = curve(st, n_over_d=[m["n_over_d"]], selection=start)
            q_th, eps_th = np.array(th["q"][0]), th["eps_bo"][0]
            r = m[start]
            qm, qse = S.summary(r["q"])
            cm, _ = S.summary(r["cosine"])
            rows.append(f"n/d={m['n_over_d']:.4f} {start:10s} diagnostics: cosine q1 {cm[0]:.4f}"
                        f" q2 {cm[1]:.4f}; theory q1..3 {np.round(q_th[:3], 4)}")
            gm, gse = S.summary(r["gibbs_half"])
            for name, got, se, want in (("q1", qm[0], qse[0], q_th[0]),
                                        ("q2", qm[1], qse[1], q_th[1]),
                                        ("gibbs/2", gm, gse, eps_th)):
                ok = abs(got - want) <= 3 * se + tol_fs
                rows.append(f"n/d={m['n_over_d']:.4f} {start:10s} {name:8s} sampled "
                            f"{got:.4f} ± {se:.4f}  theory {want:.4f}  "
                            f"{'ok' if ok else 'OUT'} (acc {r['accept']:.2f})")
                if not ok:
                    failures.append(rows[-1])
    print("\n".join(rows))
    assert not failures, "\n".join(failures)
