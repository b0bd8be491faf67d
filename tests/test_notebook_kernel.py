"""Execute notebooks/09_kernel_curves.ipynb at reduced size and check what it reports."""
import json

import pytest

pytest.importorskip("nbformat")
pytest.importorskip("nbclient")

from test_notebooks import _check_kernel_environment, _execute  # noqa: E402


def test_09_kernel_curves(monkeypatch, tmp_path):
    nb = _execute("09_kernel_curves.ipynb", monkeypatch, tmp_path)
    _check_kernel_environment(nb)
    s = json.loads((tmp_path / "09_kernel_summary.json").read_text())
    assert s["small"] is True
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
