"""Posterior sampling (HMC) of the teacher weights against the Bayes-optimal fixed point.

Default tests (tiny): the HMC gradient against central finite differences, the closed Gibbs-error
kernel against Monte Carlo over x, and concentration on the teacher for k = 1 with many samples.
Default tests: HMC against a quadrature posterior (d = 2, k = 1); k = 1 at d = 20 against the
GLM's replica formula (the Nishimori identity and the Gibbs error; no exclusion at that size).
Full tests (`make verify`): k = 1 (a GLM) at d = 80 against its exact replica limit, which excludes
the Gaussian-channel fixed point (the decisive check); and the d = 40, k = 20, β = 1 comparison with
the fixed point, kept as an expected failure with its reason (docs/guide/bayes.md, sampling section).
Error bars are standard errors over independent data sets; the finite-size allowance
δ_d = E f*² − 1 = 9/d + 20/d² is the teacher's excess signal power under the Gaussian prior.
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


def test_fast_potential_matches_reference():
    # the BLAS + numba potential against the plain einsum one: both sum the same n terms in a
    # different order, so they agree to a few ulp times the size of the sums (1e-12 relative
    # leaves ~1e3 ulp of room at n ≤ 600); covers c = 1, k = 1 and a non-contiguous W
    rng = np.random.default_rng(13)
    for d, k, n, c, beta in [(6, 3, 25, 2, 1.0), (10, 5, 150, 3, 0.0), (4, 1, 40, 1, 1.0),
                             (12, 6, 600, 2, 0.0)]:
        data = S.make_data(d, k, n, 0.3, beta, rng)
        W = rng.standard_normal((c, d, k)).swapaxes(1, 2)       # non-contiguous view
        U0, g0 = S.potential_reference(W, data)
        U1, g1 = S.potential(W, data)
        assert g1.shape == g0.shape == (c, k, d)
        assert np.all(np.abs(U1 - U0) <= 1e-12 * np.abs(U0)), (d, k, U0, U1)
        assert np.max(np.abs(g1 - g0)) <= 1e-12 * np.max(np.abs(g0)), (d, k)


def test_hmc_fast_follows_reference_chain():
    # same algorithm, same random draws: with the step size held (no warm-up, so the dual
    # averaging cannot amplify rounding) the fast and reference chains agree to rounding along
    # 30 trajectories (accept/reject decisions included), and the generator ends in the same
    # state (same number and kind of draws).  With adaptation on, a rounding difference grows
    # ~2x per trajectory (chaotic leapfrog), so longer runs are compared statistically (below)
    d, k, n = 8, 4, 96
    out = []
    for impl in ("reference", "fast"):
        rng = np.random.default_rng(11)
        data = S.make_data(d, k, n, 0.5, 0.0, rng)
        run = S.hmc(data, S.starts(data, 3, False, rng), warmup=0, samples=30, leapfrog=20,
                    rng=rng, observe=lambda W: W.copy(), impl=impl)
        out.append((run, rng.bit_generator.state))
    (a, sa), (b, sb) = out
    assert sa == sb
    assert np.max(np.abs(a.observed - b.observed)) < 1e-12
    assert np.max(np.abs(a.gibbs - b.gibbs)) < 1e-12
    assert a.accept == pytest.approx(b.accept, abs=1e-12) and 0.1 < a.accept


def test_hmc_fast_statistically_equivalent_to_reference():
    # two independent sets of 16 random-start chains (different seeds, same data set), one per
    # implementation: the per-chain posterior means of the Gibbs error and of the potential U
    # (evaluated by the reference code for both) are i.i.d. within each set and from the same
    # distribution if the samplers are the same, so their difference is within 4 combined SE.
    # Power, measured: running the fast sampler with Δ = 0.4 instead of 0.5 moves the mean of U
    # by 1.7 (≈ 10 combined SE), so a wrong likelihood scale in the fast potential fails here
    d, k, n = 6, 3, 54
    data = S.make_data(d, k, n, 0.5, 0.0, np.random.default_rng(21))
    stats = []
    for impl, seed in (("reference", 22), ("fast", 23)):
        rng = np.random.default_rng(seed)
        run = S.hmc(data, S.starts(data, 16, False, rng), warmup=150, samples=300, leapfrog=10,
                    rng=rng, impl=impl, observe=lambda W: S.potential_reference(W, data)[0])
        per_chain = np.stack([run.gibbs.mean(0), run.observed.mean(0)], 1)      # (16, 2)
        stats.append((per_chain.mean(0), per_chain.std(0, ddof=1) / 4.0))
    (m0, s0), (m1, s1) = stats
    se = np.hypot(s0, s1)
    assert np.all(np.abs(m0 - m1) <= 4 * se), (m0, m1, se)
    assert se[1] < 0.5                 # U resolves the Δ = 0.4 alternative (shift 1.7)


def test_hmc_rejects_unknown_impl():
    data = S.make_data(4, 2, 10, 0.5, 0.0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="impl"):
        S.hmc(data, S.starts(data, 2, False, np.random.default_rng(1)), warmup=1, samples=1,
              impl="numpy")


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
    """n/d clearly after the first and after the second transition of the fixed point (every
    branch coincides there: no coexistence, so a pure phase is compared with a pure phase), each
    ≥ 0.5 × (band width) away from the bands measured at this d."""
    from solvers.theory.bayes import Setup, transitions
    st = Setup(activation="cubic", d=D, gamma=K / D, Delta=DELTA, beta=BETA)
    f1, f2, f3 = transitions(st, features=[1, 2, 3])["features"]
    return st, [0.5 * (f1["ends"] + f2["appears"]), 0.5 * (f2["ends"] + f3["appears"])]


@pytest.mark.full
@pytest.mark.xfail(strict=False, reason="open and explained: the fixed point is not the "
                   "Bayes-optimal posterior of units with O(1) readouts (features 1, 2 at beta = 1; "
                   "see test_hmc_k1_follows_glm_formula_not_gaussian_channel and docs/guide/bayes.md, sampling "
                   "section); at d = 40 the comparison also lacks power (SE of q_1 ~ 0.1 with 4-8 "
                   "data sets). Kept as the measurement, not loosened")
def test_hmc_against_fixed_point_d40():
    # teacher-started chains only (random starts stay stuck, docs/guide/bayes.md); error bars over data sets;
    # allowance 3 SE + δ_d (δ_d = E f*² − 1 = 9/d + 20/d² = 0.24 at d = 40); a comparison whose
    # SE exceeds 0.05 is reported as having no power rather than counted as agreement
    from solvers.theory.bayes import curve
    st, pts = _points()
    dlt = _excess_power(D)
    failures, rows = [], []
    for j, s in enumerate(pts):
        m = S.measure(D, K, s, DELTA, BETA, instances=8, chains=2, warmup=400, samples=600,
                      seed=100 + j, which=("informed",))
        th = curve(st, n_over_d=[m["n_over_d"]], selection="potential")
        q_th, eps_th = np.array(th["q"][0]), th["eps_bo"][0]
        r = m["informed"]
        qm, qse = S.summary(r["q_inst"])
        pm, pse = S.summary(r["pair_inst"])
        gm, gse = S.summary(r["gibbs_inst"])
        for name, got, se, want in (("q1", qm[0], qse[0], q_th[0]), ("q2", qm[1], qse[1], q_th[1]),
                                    ("gibbs/2", gm, gse, eps_th)):
            ok = abs(got - want) <= 3 * se + dlt and se <= 0.05
            rows.append(f"n/d={m['n_over_d']:.3f} {name:8s} sampled {got:.4f} ± {se:.4f} "
                        f"fixed point {want:.4f} {'ok' if ok else 'OUT'}")
            if not ok:
                failures.append(rows[-1])
        rows.append(f"n/d={m['n_over_d']:.3f} Nishimori q1 {qm[0]:.3f} vs chain-chain {pm[0]:.3f}"
                    f" ± {pse[0]:.3f}; acceptance {r['accept']:.2f}")
        if abs(qm[0] - pm[0]) > 3 * math.hypot(qse[0], pse[0]):
            failures.append(rows[-1])
    print("\n".join(rows))
    assert not failures, "\n".join(failures)


def _excess_power(d: int) -> float:
    """E f*² − 1 for one unit under the Gaussian prior at finite d: 9/d + 20/d² (A = |w*|²/d ~
    χ²_d/d in E σ(√A z)²); the scale of the O(1/d) norm corrections to the Gibbs error."""
    return 9.0 / d + 20.0 / d ** 2


def _k1_against_glm(d, instances, warmup, samples, exclude_fixed_point):
    """HMC at k = 1 against the GLM replica formula (and, optionally, the exclusion of the
    Gaussian-channel fixed point); the failures, each with its row of numbers."""
    from solvers.theory.bayes import Setup, curve
    from solvers.theory.bayes.glm import GLM
    ref = GLM(v=1.0, s=DELTA)
    st = Setup(activation="cubic", d=d, readouts=[1.0], Delta=DELTA, beta=None)
    dlt = _excess_power(d)
    rows, failures = [], []
    for j, s in enumerate((2.0,)):
        m = S.measure(d, 1, s, DELTA, BETA, instances=instances, chains=2, warmup=warmup,
                      samples=samples, seed=500 + j, which=("informed",))
        r = m["informed"]
        q, qse = S.summary(r["q_inst"][:, 0])
        pq, pse = S.summary(r["pair_inst"][:, 0])
        g, gse = S.summary(r["gibbs_inst"])
        eps_glm, q_glm = ref.gibbs_half(s), ref.overlap(s)
        eps_fp = curve(st, n_over_d=[s], selection="informed")["eps_bo"][0]
        rows.append(f"n/d={s}: q {q:.3f}±{qse:.3f} (pair {pq:.3f}±{pse:.3f}) GLM {q_glm:.3f}; "
                    f"Gibbs/2 {g:.3f}±{gse:.3f} GLM {eps_glm:.3f} fixed point {eps_fp:.3f} "
                    f"δ_d {dlt:.3f}")
        checks = {"nishimori": abs(q - pq) <= 3 * math.hypot(qse, pse),
                  "glm": abs(g - eps_glm) <= 3 * gse + dlt}
        if exclude_fixed_point:
            checks["fixed point excluded"] = g - 3 * gse - dlt > eps_fp
        failures += [f"{rows[-1]}: {k}" for k, ok in checks.items() if not ok]
    print("\n".join(rows))
    return failures


@pytest.mark.full
def test_hmc_k1_follows_glm_formula_not_gaussian_channel():
    # k = 1, v = 1, Δ = 0.1: the model is a GLM, whose Bayes-optimal limit is the (proven) replica
    # formula of solvers/theory/bayes/glm.py.  The extensive-width fixed-point system treats the
    # output as a Gaussian channel; for one O(1)-readout unit that is not the posterior.
    # Informed starts (the teacher) keep the chains in the teacher's state; the Gibbs error of such
    # chains is biased low if anything (they remember the start), so "Gibbs/2 − 3 SE − δ_d > ε_FP"
    # is a conservative exclusion.  δ_d = E f*² − 1 is the stated finite-size allowance.
    failures = _k1_against_glm(80, instances=12, warmup=400, samples=800,
                               exclude_fixed_point=True)
    assert not failures, "\n".join(failures)


def test_hmc_k1_follows_glm_formula_small():
    # the same comparison in the default run (~6 s of CPU): d = 20, 6 data sets, shorter chains.
    # The Nishimori identity (chain-teacher against chain-chain overlap, 3 combined SE) and
    # Gibbs/2 against the GLM formula within 3 SE + δ_d (δ_d = 0.5 at d = 20: a weak bound that
    # a broken sampler or a wrong formula still fails; measured 0.43 ± 0.06 against 0.36).  No
    # exclusion of the Gaussian-channel fixed point: at d = 20 it has no power (the full test).
    failures = _k1_against_glm(20, instances=6, warmup=200, samples=300,
                               exclude_fixed_point=False)
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("name", ["solvers.theory.bayes.sampling",
                                  "solvers.theory.bayes.finite_size"])
def test_docstring_examples_run(name):
    import doctest
    import importlib
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0, (name, result)
