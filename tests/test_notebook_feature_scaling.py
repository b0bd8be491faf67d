"""Execute notebooks/04_feature_scaling.ipynb at reduced size (N = 256, 8 W) and check its summary."""
from __future__ import annotations


import numpy as np
import pytest

from solvers.theory.feature_scaling import fit_exponent

from test_notebooks import run_small

pytestmark = [pytest.mark.closed_form, pytest.mark.simulation]  # oracle (tests/conftest.py)

pytest.importorskip("nbclient")


def test_04_feature_scaling(monkeypatch, tmp_path):
    s = run_small("04_feature_scaling.ipynb", "feature_scaling_summary.json", monkeypatch, tmp_path)
    assert s["N"] == 256
    assert (tmp_path / "figure16.png").stat().st_size > 0
    N_ls = s["N_l"]
    sel = [i for i, n in enumerate(N_ls) if n <= s["N"] // 16]
    for b, d in s["figure16"].items():
        beta = float(b)
        # rotated mask never beats the eigenbasis mask (Fig. 16), by Eq. (88) averaged over W
        assert all(r > e for r, e in zip(d["rot"], d["exact"], strict=True))
        # exact sum vs Eq. (74) slope: they differ by the 1/N_l Euler-Maclaurin correction,
        # (1+beta)/(2 N_l) at the smallest N_l = 8 of the fit window
        em_slope = fit_exponent([N_ls[i] for i in sel], [d["em"][i] for i in sel])
        assert abs(s["exponents"][b]["eigenbasis"] - em_slope) < (1 + beta) / 16
        if beta >= 0.75:
            # the paper's claim: the same exponent with the rotated mask.  At N = 256 both carry
            # the same finite-N_l/N distortion; measured at N = 1024 (4 W, N_l = 8..64) the
            # difference is 0.021, 0.008, 0.006 for beta = 0.75, 1, 1.5; 0.1 allows for N = 256.
            assert abs(s["exponents"][b]["rotated"] - s["exponents"][b]["eigenbasis"]) < 0.1
        # the large-N deterministic equivalent tracks the W-average (finite-N deviations ~1/N_l)
        assert np.all(np.abs(np.array(d["free"]) / np.array(d["rot"]) - 1) < 0.2)
    for n, v in s["figure3"].items():
        assert v["max_rel_em"] < 0.05      # Eq. (79) vs the exact sum on the Fig. 3 grid
