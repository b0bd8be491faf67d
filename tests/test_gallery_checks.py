"""The gallery's checks themselves: every verdict states its tolerance and its reference, an escape
that is never seen cannot pass, the power-law-vs-exponential measure of Fig. 1 against closed
forms, the page is the rendering of the records, and the demo's plateau labels say what the
flat-slope measure found."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from solvers.app.gallery import all_figures
from solvers.app.gallery.base import check, slope
from solvers.app.gallery.erf_figs import _W_EARLY, _slope_growth
from solvers.app.gallery.gallery_md import render
from solvers.app.gallery.sim_figs import escape_agrees

pytestmark = [pytest.mark.contract, pytest.mark.closed_form]  # oracle (tests/conftest.py)

ROOT = Path(__file__).resolve().parents[1]
RECORDS = ROOT / "docs" / "figures" / "records.json"


def test_a_verdict_without_tolerance_or_reference_is_refused():
    with pytest.raises(ValueError, match="tol= and ref="):
        check("x", 1.0, 1.0, True)
    with pytest.raises(ValueError, match="tol= and ref="):
        check("x", 1.0, 1.0, True, tol="< 1")
    assert check("x", 1.0, note="reported only")["ok"] is None       # a report needs neither
    c = check("x", 1.0, 1.0, True, tol="|Δ| < 0.1", ref="closed form")
    assert (c["ok"], c["tol"], c["ref"]) == (True, "|Δ| < 0.1", "closed form")


def test_every_stored_verdict_states_tolerance_and_reference():
    records = json.loads(RECORDS.read_text())
    verdicts = 0
    for n, by_size in records.items():
        for size, rec in by_size.items():
            for c in rec["checks"]:
                if c["ok"] is not None:
                    verdicts += 1
                    assert c.get("tol") and c.get("ref"), (n, size, c["name"])
    assert verdicts > 100


def test_the_page_is_the_rendering_of_the_records():
    records = json.loads(RECORDS.read_text())
    page = (ROOT / "docs" / "gallery.md").read_text()
    assert page == render(records)
    for n in all_figures():
        section = page.split(f"## Figure {n}\n")[1].split("\n## Figure")[0]
        # a table row ends in its verdict: never blank
        for row in section.splitlines():
            if row.startswith("| ") and not row.startswith(("| check", "|---")):
                assert row.rstrip().endswith(("✅ |", "❌ |", "reported |")), (n, row)


def test_an_escape_not_seen_fails():
    step = 1.13
    assert not escape_agrees(math.inf, math.inf, step)        # equal infinities are no agreement
    assert not escape_agrees(4000.0, math.inf, step)
    assert escape_agrees(4157.0, 4157.0, step)
    # two grid steps apart passes, three fail
    assert escape_agrees(4000.0 * step ** 2 * (1 - 1e-12), 4000.0, step)
    assert not escape_agrees(4000.0 * step ** 3, 4000.0, step)


@pytest.mark.parametrize("alpha_max", [3500.0, 10000.0])
def test_slope_growth_tells_power_law_from_exponential(alpha_max):
    a = np.linspace(1.0, alpha_max, 2001)
    late = (alpha_max / 3, alpha_max)

    def growth(eps):
        return _slope_growth(-slope(a, eps, *_W_EARLY), -slope(a, eps, *late), _W_EARLY, late)

    # closed forms: a power law has a constant local slope (growth 0 to rounding) ...
    assert abs(growth(a ** -0.5)) < 1e-9
    # ... an exponential the slope c·α (growth 1; a least-squares slope over a window is the slope
    # at a point near, not at, the window's geometric centre: 5 % covers that offset here)
    assert abs(growth(np.exp(-0.004 * a)) - 1) < 0.05


def test_demo_labels_say_what_the_flat_slope_measure_found():
    from solvers.app.demo import plateau_label, plateau_length
    a = np.linspace(0, 3000, 601)
    # a shoulder: the local slope never drops below 0.1 (here 0.3 throughout)
    shoulder = np.concatenate([[1.0], a[1:] ** -0.3])
    assert plateau_length(a, shoulder) == 0
    assert "no stretch flatter than slope 0.1" in plateau_label(16, a, shoulder, 0.0)
    # a plateau still going at alpha_max: the length is a lower bound
    flat = np.concatenate([[1.0], 0.005 + 1e-9 * a[1:]])
    length = plateau_length(a, flat)
    assert length > 2500
    assert "cut at α_max" in plateau_label(1, a, flat, length)
    # a plateau that ends (exponential fall after alpha = 1500) is not cut
    ends = np.concatenate([[1.0], 0.005 * np.exp(-np.maximum(a[1:] - 1500, 0) / 50)])
    length = plateau_length(a, ends)
    assert 1000 < length < 1500
    assert "cut" not in plateau_label(1, a, ends, length)
