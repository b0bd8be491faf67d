"""Execute notebooks/09_kernel_curves.ipynb at reduced size and check what it reports."""
import pytest

pytest.importorskip("nbformat")
pytest.importorskip("nbclient")

from test_notebooks import run_small  # noqa: E402

pytestmark = [pytest.mark.sampling]  # oracle (tests/conftest.py)


def test_09_kernel_curves(monkeypatch, tmp_path):
    s = run_small("09_kernel_curves.ipynb", "09_kernel_summary.json", monkeypatch, tmp_path)
    assert all(abs(z) < 3.5 for z in s["mc_z"]), s["mc_z"]
    assert s["gda_vs_eig"] < 1e-3
    assert abs(s["sum_L_minus_P"]) < 1e-10
    assert s["learnability_chi2"] < 1.6
    # rank-d ridgeless MC vs the exact laws (300 designs), |P − d| ≥ 8
    assert all(r < 0.1 for r in s["rank_d_rel"]), s["rank_d_rel"]
    assert s["ridge_monotone"]
    for a, b, slope, pred in s["exponent_rows"]:
        assert abs(slope - pred) < 0.15, (a, b, slope, pred)
    assert s["lazy_at_rank"] == 0.0
