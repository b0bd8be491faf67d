"""channel = "glm": units with O(1) readouts as generalised linear models (glm_channel.py).

Oracles, each independent of the code under test's own solve:
- the present Gaussian-channel system (fixed_point.Problem): the GLM channel with its correction
  E set to zero is the same equations, so it must return the same overlaps and ε;
- the one-unit GLM replica formula (glm.GLM: a 1-D spline of Ψ_out at the exact (v, s), a second
  route to E) for k = 1;
- the quadrature that defines the table (glm_table.entry), off the table's nodes;
- the small-readout law: the exact channel differs from the Gaussian one by O(r²) per unit, so
  with every unit a GLM the shift of ε from the present system is O(r) and halves when r halves.
"""
import numpy as np
import pytest

from solvers.theory.bayes import Setup, curve
from solvers.theory.bayes import glm_table as T
from solvers.theory.bayes.glm_channel import Correction, MixedProblem, Zero

pytestmark = [pytest.mark.quadrature]  # oracle (tests/conftest.py)


@pytest.mark.parametrize("d, gamma, units, points", [
    (40, 0.5, "all", (1.5, 2.3, 3.775, 6.825, 20.0, 1e4)),
    (200, 1.0, "outside", (2.4, 10.0, 100.0))])
def test_gaussian_channel_written_as_glm_is_the_present_system(d, gamma, units, points):
    # same equations, solved by a different route (block iteration with per-unit global
    # maximisation vs the scalar reduction ε = Φ(ε)); both converge to ~1e−13 in q, so 1e−8 (the
    # required agreement) is far above round-off and far below any modelling difference
    st = Setup(activation="cubic", d=d, gamma=gamma, Delta=0.1, beta=1.0)
    mp = MixedProblem(st.problem, units, corr=Zero())
    assert mp.G.size > 0
    for s in points:
        got, _ = mp.solve(s)
        want, _ = st.problem.solve(s)
        assert np.max(np.abs(got.q - want.q)) < 1e-8, s
        assert abs(got.eps - want.eps) < 1e-8, s
        assert abs(got.psi - want.psi) < 1e-8 * max(1.0, abs(want.psi)), s


def test_small_readouts_reduce_to_the_present_system():
    # flat readouts v² = 1/k at Δ = 1: r ≤ v²/Δ = 0.0025 at k = 400, below the regime threshold
    # (c ≈ 1.85 r < 1 %), so no unit is a GLM and the result is the present system's
    kw = dict(activation="cubic", d=400, readouts=[1.0] * 400, Delta=1.0, beta=None)
    glm = Setup(channel="glm", **kw)
    assert glm.mixed.G.size == 0
    s = [300.0, 2400.0, 6000.0]
    a, b = curve(glm, n_over_d=s), curve(Setup(**kw), n_over_d=s)
    assert np.max(np.abs(np.subtract(a["eps_bo"], b["eps_bo"]))) < 1e-8
    assert np.max(np.abs(np.subtract(a["q"], b["q"]))) < 1e-8


def test_every_unit_a_glm_shift_is_linear_in_the_readout_ratio():
    # every unit a GLM (glm_units = "all"), flat readouts, Δ = 1, n/d = 2 × the collective jump:
    # the shift of ε from the present system is O(r) with r ≈ 1/k, so doubling k halves it
    # (measured 0.00973, 0.00503, 0.00249, 0.00123 at k = 50..400: ratios 1.93, 2.02, 2.02); 10 %
    # covers the O(r²) next order at r = 0.01-0.02.  Extrapolated, the shift is 1e−8 at r ≈ 2e−8.
    shift = {}
    for k in (50, 100):
        s = 2.0 * 1.4557767406 * k * (1.0 + 1.0)
        kw = dict(activation="cubic", d=k, readouts=[1.0] * k, Delta=1.0, beta=None)
        a = curve(Setup(channel="glm", glm_units="all", **kw), n_over_d=[s])["eps_bo"][0]
        b = curve(Setup(**kw), n_over_d=[s])["eps_bo"][0]
        shift[k] = a - b
    assert shift[50] > 0 and shift[100] > 0           # the exact channel carries less information
    assert abs(shift[50] / shift[100] - 2) < 0.2


def test_k1_is_the_glm_replica_formula():
    # k = 1, v² = 1, Δ = 0.1 (r = 10): the channel is a single GLM and must reproduce the one-unit
    # replica formula of glm.GLM (Gibbs/2 = 0.360 at n/d = 2, the value HMC confirms at d = 80:
    # 0.372 ± 0.035).  The two routes interpolate the same quadrature differently (a 2-D table in
    # (q, ln r) vs a 1-D spline at r = 10): E differs by ≤ 3e−5 at the points checked below, which
    # moves the maximiser by ≤ 5e−4 where the potential is flat; tolerance 1e−3 on q and Gibbs/2
    from solvers.theory.bayes.glm import GLM
    ref = GLM(v=1.0, s=0.1)
    st = Setup(activation="cubic", d=80, readouts=[1.0], Delta=0.1, beta=None, channel="glm")
    pts = [1.0, 2.0, 3.0]
    res = curve(st, n_over_d=pts)
    for s, q, eps in zip(pts, res["q"], res["eps_bo"], strict=True):
        assert abs(q[0] - ref.overlap(s)) < 1e-3, s
        assert abs(eps - ref.gibbs_half(s)) < 1e-3, s
    assert abs(res["eps_bo"][1] - 0.360) < 2e-3
    assert res["meta"]["glm_features"] == [1]


def test_table_interpolation_against_the_quadrature():
    # off-node points (q between rows, r between columns) and the r² continuation below the table:
    # the bicubic interpolation error sets the tolerances quoted in test_k1_is_the_glm_replica_formula
    C = Correction()
    for q, r, tol in ((0.5, 10.0, 1e-5), (0.05, 10.0, 1e-5), (0.95, 10.0, 1e-4), (0.5, 0.3, 1e-5),
                      (0.2, 50.0, 2e-4)):
        assert abs(float(C(q, r)) - T.entry(q, r)) < tol, (q, r)
    # below r_min: E(q, r_min)(r/r_min)², within 5 % of the quadrature (the O(r³) next order)
    e = T.entry(0.5, 0.0025)
    assert abs(float(C(0.5, 0.0025)) / e - 1) < 0.05
    assert float(C(1.0, 3.0)) == 0.0 and float(C(0.5, 0.0)) == 0.0


def test_stored_table_is_in_sync_with_its_generator():
    # glm_table_data.py is generated (python -m solvers.theory.bayes.glm_table); four entries
    # recomputed by the same quadrature must agree to round-off
    assert T.check() < 1e-12


def test_docstring_example():
    import doctest

    from solvers.theory.bayes import glm_channel
    res = doctest.testmod(glm_channel)
    assert res.attempted > 0 and res.failed == 0


def test_refusals():
    with pytest.raises(ValueError, match="cubic"):
        Setup(activation="erf3", d=20, Delta=0.1, channel="glm").mixed
    with pytest.raises(ValueError, match="beyond the GLM table"):
        Setup(activation="cubic", d=20, readouts=[1.0], Delta=1e-3, beta=None, channel="glm").mixed
    with pytest.raises(ValueError, match="channel"):
        Setup(activation="cubic", d=20, channel="exact")
    from solvers.theory.bayes import limit, transitions
    st = Setup(activation="cubic", d=20, Delta=0.1, channel="glm")
    with pytest.raises(ValueError, match="gaussian"):
        transitions(st, features=[1])
    with pytest.raises(ValueError, match="gaussian"):
        limit(st, alpha=[1.0])


def test_k20_d40_glm_channel_numbers():
    # the setting where the Gaussian-channel system is 5-6 SE off HMC on q₂ (docs/guide/bayes.md,
    # sampling section; measured HMC numbers in BENCHMARKS.md, last section).  Here only the
    # structural facts of the GLM channel are asserted: no jump from q = 0 (every unit learns
    # gradually, q_i > 0 at every n/d), so less error than the Gaussian channel before its first
    # jump (n/d = 2.3 < 2.31, the d = 40 switch of feature 1), and more after its jumps (the
    # exact channel of an O(1) readout carries less information at large q)
    st = Setup(activation="cubic", d=40, gamma=0.5, Delta=0.1, beta=1.0, channel="glm")
    gs = Setup(activation="cubic", d=40, gamma=0.5, Delta=0.1, beta=1.0)
    pts = [2.3, 3.775, 6.825]
    a, b = curve(st, n_over_d=pts), curve(gs, n_over_d=pts)
    assert all(min(q) > 0 for q in a["q"])
    assert b["eps_bo"][0] == 1.0 and a["eps_bo"][0] < 1.0
    assert a["eps_bo"][1] > b["eps_bo"][1] and a["eps_bo"][2] > b["eps_bo"][2]
    assert a["meta"]["glm_features"] == list(range(1, 21)) and len(a["q"][0]) == 20


@pytest.mark.full
@pytest.mark.sampling
def test_hmc_k20_d40_follows_the_glm_channel():
    # k = 20, d = 40, β = 1, Δ = 0.1, teacher-started HMC (16 data sets × 2 chains, 400 + 600),
    # errors over data sets, at n/d = 1.5 (before feature 1's band) and 4.5 (between the bands of
    # features 1 and 2, 2.17–2.56 and 5.01–5.40 at d = 40), where the Gaussian-channel system has
    # q₂ = 0 (q₁ = 0 too at 1.5).  Checks: q₁..q₃ within 3 SE of the GLM channel; the Gaussian
    # q₂ = 0 excluded at 4.5 by 3 SE (measured with other seeds: q₂ = 0.303 ± 0.065 vs GLM 0.230);
    # Nishimori on q₁.  With 8 data sets (seeds 900, 901) every q was within 3 SE of the GLM
    # channel but q₂ = 0.477 ± 0.161 missed the exclusion by 0.04 SE: 16 data sets for power.
    # Measured cost of 8 data sets: 23 + 53 s CPU (BENCHMARKS.md, Bayes-optimal GLM channel)
    from solvers.theory.bayes import sampling as S
    failures, rows = [], []
    for j, s in enumerate((1.5, 4.5)):
        m = S.measure(40, 20, s, 0.1, 1.0, instances=16, chains=2, warmup=400, samples=600,
                      seed=910 + j, which=("informed",))
        r = m["informed"]
        qm, qse = S.summary(r["q_inst"])
        pm, pse = S.summary(r["pair_inst"])
        st = Setup(activation="cubic", d=40, gamma=0.5, Delta=0.1, beta=1.0, channel="glm")
        q_glm = curve(st, n_over_d=[m["n_over_d"]])["q"][0]
        for i in range(3):
            ok = abs(qm[i] - q_glm[i]) <= 3 * qse[i]
            rows.append(f"n/d={m['n_over_d']:.3f} q{i + 1}: HMC {qm[i]:.3f} ± {qse[i]:.3f}, GLM "
                        f"channel {q_glm[i]:.3f} {'ok' if ok else 'OUT'}")
            if not ok:
                failures.append(rows[-1])
        if s == 4.5 and not qm[1] - 3 * qse[1] > 0:
            failures.append(f"n/d = 4.5: q2 = {qm[1]:.3f} ± {qse[1]:.3f} does not exclude the "
                            "Gaussian channel's 0")
        if abs(qm[0] - pm[0]) > 3 * np.hypot(qse[0], pse[0]):
            failures.append(f"n/d = {s}: Nishimori q1 {qm[0]:.3f} vs chain-chain {pm[0]:.3f}")
    print("\n".join(rows))
    assert not failures, "\n".join(failures)
