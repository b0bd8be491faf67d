"""Execute notebooks/10_one_step.ipynb at reduced size and check what it reports."""
import pytest

pytest.importorskip("nbformat")
pytest.importorskip("nbclient")

from test_notebooks import run_small  # noqa: E402

pytestmark = [pytest.mark.closed_form, pytest.mark.simulation]  # oracle (tests/conftest.py)


def test_10_one_step(monkeypatch, tmp_path):
    s = run_small("10_one_step.ipynb", "10_one_step_summary.json", monkeypatch, tmp_path)
    assert s["rf_vs_mm"] < 1e-10                 # RF limit = Mei–Montanari (float64)
    # plain random features (no step) at d = 200, 2 seeds: network within 25 % of the theory
    # (seed spread ~5-10 % at this size; d = 500 runs agree to 1-3 %)
    assert all(abs(g) < 0.25 for g in s["protocol_rel_gap"]["0.0"]), s["protocol_rel_gap"]
    for k in ("gamma", "r", "c"):                # one real step vs Result 3.1
        mean, sem = s["measured"][k]
        assert abs(mean - s["formula"][k]) <= 4 * sem + 0.01 * s["formula"][k], k
    c, b = s["c"], s["beta_s"]
    # sRF rows: c·MP(β) moments (d = 300: moment fluctuations ~1/d, a few 1e-3 relative)
    assert abs(s["srf_m1"] / c - 1) < 0.01 and abs(s["srf_m2"] / (c * c * (1 + b)) - 1) < 0.03
    # the real step's bulk: mean c (to 4 %: O(1/√d) spike leakage), second moment well above
    # c²(1 + β) at η = 3, α0 = 0.5 (24 % at d = 1000): the bulk is not c·MP(β) there
    assert abs(s["bulk_m1"] / c - 1) < 0.04
    assert s["bulk_m2"] > 1.1 * c * c * (1 + b)
    assert abs(s["outlier"] / s["p_r2"] - 1) < 0.1     # one outlier ≈ p r²
    assert (tmp_path / "one_step_curves.png").stat().st_size > 0
