"""The readout-regime report (solvers/theory/bayes/regime.py).

Oracles: the linear channel, whose output is Gaussian, so the measured correction must vanish;
the invariance of the correction under (v, s) → (a v, a² s) (it depends on r = v²/s only);
recomputation of table points by the GLM quadrature; and the HMC measurements quoted in the
module (an O(1)-readout unit is not described by the fixed point) for the classification.
"""
import math

import numpy as np
import pytest

from solvers.theory.bayes import Setup, curve, transitions
from solvers.theory.bayes import regime as R

pytestmark = [pytest.mark.quadrature]  # oracle (tests/conftest.py)

Q2 = (0.5, 0.99)   # two q points keep the quadrature checks short (≈ 1.5 s per ψ_out at q = 0)


def test_correction_vanishes_for_a_gaussian_output():
    # σ(u) = u gives a Gaussian output: any c > quadrature noise would be a defect of the measure
    c = R.measure_correction(1.0, Q2, act=lambda u: u, g=lambda x: x)
    assert c < 1e-8


def test_correction_depends_on_r_only_and_table_is_in_sync():
    c1 = R.measure_correction(0.1, Q2, s=1.0)
    c2 = R.measure_correction(0.1, Q2, s=0.1)
    assert abs(c1 - c2) < 1e-6 * max(c1, 1e-3)         # the rescaling is exact up to round-off
    # the table row r = 0.1 (all six q points) recomputed: quadrature is deterministic, so the
    # tolerance is the 6 digits the table is stored with
    want = dict(R.CORRECTION_TABLE)[0.1]
    assert abs(R.measure_correction(0.1) - want) < 2e-6


def test_interpolation_and_small_r_law():
    r = R.CORRECTION_TABLE[:, 0]
    assert np.allclose(R.correction(r), R.CORRECTION_TABLE[:, 1], rtol=1e-12)
    # below the table: c ∝ r (measured law c ≈ 1.85 r at r = 0.005, 0.01)
    assert abs(R.correction(1e-4) / 1e-4 - 1.846) < 2e-3
    # threshold 1e-2 falls at r ≈ 0.0054
    assert R.correction(0.0050) < R.THRESHOLD < R.correction(0.0060)


def test_o1_readout_is_out_and_its_transition_warns():
    # k = 1, v = 1, Δ = 0.1: HMC at d = 80, n/d = 2 gives Gibbs/2 = 0.372 ± 0.035 against 0.360
    # (GLM) and 0.100 (fixed point) — this unit must be flagged
    st = Setup(activation="cubic", d=80, readouts=[1.0], Delta=0.1, beta=None)
    rep = R.readout_regime(st, transitions(st))
    f = rep["features"][0]
    assert not f["in_gaussian_regime"]
    assert f["r_other"] == pytest.approx(10.0, rel=1e-9)   # s = Δ: nothing else in the output
    assert f["correction_estimate"] > 0.2
    assert len(rep["warnings"]) == 1 and "feature 1" in rep["warnings"][0]
    rep = R.readout_regime(st, curve(st, n_over_d=[0.5, 2.0]))
    assert rep["points"][1]["outside"] == [1]
    assert any("switches between n/d = 0.5 and 2" in w for w in rep["warnings"])


def test_strong_readout_out_weak_readout_in():
    # v² ∝ (1, 1e-3), Δ = 0.5: the strong unit (r ≈ 2–20) is out, the weak one (r ≤ 1e-3/0.5) is in
    st = Setup(activation="cubic", d=60, readouts=[1.0, 1e-3], Delta=0.5, beta=None)
    rep = R.readout_regime(st, transitions(st, features=[1, 2]))
    top, tail = rep["features"]
    assert not top["in_gaussian_regime"] and tail["in_gaussian_regime"]
    assert tail["r_other"] <= 1e-3 / 0.5 and tail["correction_estimate"] < R.THRESHOLD
    assert len(rep["warnings"]) == 1 and rep["warnings"][0].startswith("feature 1:")


def test_flat_small_readouts_are_in():
    # v_i² = 1/k with k = 400, Δ = 1: r ≤ 1/(k Δ) = 2.5e-3 at every point (before and after the
    # collective jump, α_c = λ_σ (Δ + 1) = 2.91) — no warning
    st = Setup(activation="cubic", d=400, readouts=[1.0] * 400, Delta=1.0, beta=None)
    rep = R.readout_regime(st, curve(st, alpha=[1.0, 2.5, 6.0]))
    assert rep["points"][0]["eps_share_outside"] == 0.0
    for p in rep["points"]:
        assert all(p["in_gaussian_regime"]) and p["outside"] == []
        assert max(p["ratio"]) <= 1 / 400
    assert rep["warnings"] == []
    # at Δ = 0.1 the learned state leaves it (ε = 0.05 at α = 3: r = 1/(k(Δ + ε)) ≈ 0.017)
    st = Setup(activation="cubic", d=400, readouts=[1.0] * 400, Delta=0.1, beta=None)
    assert R.readout_regime(st, curve(st, alpha=[3.0]))["points"][0]["outside"] != []
    # the same flat profile at k = 10 (the d = 20 HMC check) is outside: r ≈ 0.07–0.2
    st = Setup(activation="cubic", d=20, readouts=[1.0] * 10, Delta=0.5, beta=None)
    rep = R.readout_regime(st, curve(st, alpha=[0.7, 1.5]))
    assert all(p["outside"] == list(range(1, 11)) for p in rep["points"])


def test_compact_detail_lists_only_features_outside():
    st = Setup(activation="cubic", d=300, gamma=1, Delta=0.1, beta=1.0)
    res = curve(st, n_over_d=[3.0, 30.0])
    full = R.readout_regime(st, res)
    small = R.readout_regime(st, res, detail="outside")
    for a, b in zip(full["points"], small["points"], strict=True):
        assert b["outside"] == a["outside"] and len(b["ratio"]) == len(a["outside"])
        assert b["ratio"] == [a["ratio"][i - 1] for i in a["outside"]]
        assert not any(b["in_gaussian_regime"])
    assert small["warnings"] == full["warnings"]
    assert set(small["v2"]) == {str(i) for p in full["points"] for i in p["outside"]}
