"""Notebook 08 (Bayes-optimal baseline) at reduced size."""
from __future__ import annotations

import json

import pytest

from test_notebooks import _check_kernel_environment, _execute

pytestmark = [pytest.mark.closed_form]  # oracle (tests/conftest.py)


def test_08_bayes_optimal(monkeypatch, tmp_path):
    nb = _execute("08_bayes_optimal.ipynb", monkeypatch, tmp_path)
    _check_kernel_environment(nb)
    s = json.loads((tmp_path / "bayes_summary.json").read_text())
    assert s["small"] is True
    assert abs(s["lambda_sigma"]["cubic"] - 1.4557767406190114) < 1e-12
    f1 = s["feature1"]
    assert abs(f1["switch"] - 2.38504) < 5e-6 and f1["appears"] < f1["switch"] < f1["ends"]
    # regime panel (c just after each switch on an n/d grid): features 1-29 outside, as the
    # exactly located switches of gallery figure B2 give (c against the quadrature at 29 and 30)
    assert s["outside_regime"] == list(range(1, 30))
    lo, hi = s["collapse_range"]
    assert 0 < lo and hi / lo < 10            # ε n/(k_c d) stays Θ(1) over six decades of n
    assert abs(s["alpha_star"] - 1.31297) < 5e-5     # 120 nodes at small size
    images = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
              if o.output_type == "display_data" and "image/png" in o.get("data", {})]
    assert len(images) >= 6
