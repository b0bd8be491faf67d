"""Execute notebooks/03_linear_theory.ipynb at reduced size and check what it reports."""
import pytest

pytest.importorskip("nbformat")
pytest.importorskip("nbclient")

from test_notebooks import run_summary  # noqa: E402

pytestmark = [pytest.mark.closed_form]  # oracle (tests/conftest.py)


def test_03_linear_theory(monkeypatch, tmp_path):
    summary = run_summary("03_linear_theory.ipynb", "03_linear_summary.json", monkeypatch, tmp_path)
    # the exact curve lies above Eq. (8) at finite η (η² fluctuation term), more so for larger η
    assert 0 < summary["gap_eta_0.1"] < summary["gap_eta_0.5"] < summary["gap_eta_1.0"]
    assert summary["route_agreement"] >= 30
    assert abs(summary["exponent_beta1"] - 0.5) < 0.02
