"""The figure gallery: every figure's data regenerated at reduced size through the code path of
`scaling-odes figures` (cached pieces, plot, checks), resumption from the cache, and the gallery
page (docs/gallery.md lists Figures 1-20, every image it shows exists)."""
from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from solvers.app.gallery import all_figures, runner

pytestmark = [pytest.mark.contract, pytest.mark.closed_form, pytest.mark.simulation]  # oracle (tests/conftest.py)
# one xdist worker runs the whole module: its module-scoped fixture is computed once (make test
# runs --dist loadgroup)
pytestmark.append(pytest.mark.xdist_group("test_gallery"))

ROOT = Path(__file__).resolve().parents[1]

# checks that hold at any size (identities, rigorous bounds, fixed-point residuals): they must pass
# at the reduced size too; the others (exponents, finite-size deviations) need the paper's sizes
ROBUST = ("interlacing", "≥ Eq. (8)", "max F bound", "Newton residual", "vs exact fixed point",
          "vs exact plateau", "spectrum mean", "deviation shrinks", "plateau shrinks",
          "linear response")


@pytest.fixture(scope="module")
def reduced(tmp_path_factory):
    out = tmp_path_factory.mktemp("gallery")
    done = runner.run(None, small=True, out=out, cache_dir=out / "cache", records=out / "records.json",
                      gallery=out / "gallery.md", progress=False)
    return out, done


def test_every_figure_regenerates_at_reduced_size(reduced):
    out, done = reduced
    assert set(done) == set(all_figures()) and set(range(1, 21)) <= set(done)
    for n, rec in done.items():
        assert rec["size"] == "small" and rec["files"], n
        for f in rec["files"]:
            p = Path(f) if Path(f).is_absolute() else out / f
            assert p.exists() and p.stat().st_size > 5_000, (n, f)
        assert rec["checks"], n
        for c in rec["checks"]:
            if any(key in c["name"] for key in ROBUST):
                assert c["ok"] is True, (n, c)
    text = (out / "gallery.md").read_text()
    assert text.count("status: **reduced-size placeholder**") == len(done)


def test_rerun_uses_the_cache(reduced):
    out, _ = reduced
    again = runner.run([4, 14], small=True, out=out, cache_dir=out / "cache", records=None, gallery=None,
                       progress=False)
    assert all(r["pieces_computed"] == 0 and r["pieces_cached"] > 0 for r in again.values())


def test_gallery_page_lists_every_figure_and_its_images_exist():
    page = (ROOT / "docs" / "gallery.md").read_text()
    listed = {int(n) if n.isdigit() else n for n in re.findall(r"^## Figure (\w+)$", page, flags=re.M)}
    assert set(range(1, 21)) <= listed and listed == set(all_figures())
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", page)
    assert images
    for img in images:
        assert (ROOT / "docs" / img).exists(), img
    records = json.loads((ROOT / "docs" / "figures" / "records.json").read_text())
    for n in all_figures():
        r = records.get(str(n), {})
        status = "full size" if r.get("full") else "placeholder" if r.get("small") else "not yet generated"
        section = page.split(f"## Figure {n}\n")[1].split("\n## Figure")[0]
        assert status in section, (n, status)


def test_bad_figure_number_is_one_line_exit_2():
    p = subprocess.run([sys.executable, "-m", "solvers.app.cli.main", "figures", "--fig", "21"],
                       capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "21" in p.stderr
