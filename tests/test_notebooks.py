"""Execute the notebooks at reduced size (SCALING_ODES_NB_SMALL=1) and check what they report.

Stored outputs are cleared; the notebooks run here in the kernel "python3", which in the
project's virtualenv is ipykernel's native spec (``python -m ipykernel_launcher``, started with
the interpreter running the tests).  Each notebook prints ``sys.prefix`` in its first code cell,
so a kernel from a different environment is caught.  Notebook 02 writes a JSON summary into the
directory given by SCALING_ODES_NB_OUT.
"""
from __future__ import annotations

import json
import sys
from itertools import pairwise
from pathlib import Path

import pytest

pytestmark = [pytest.mark.second_basis, pytest.mark.closed_form]  # oracle (tests/conftest.py)

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

NB_DIR = Path(__file__).resolve().parent.parent / "notebooks"
CELL_TIMEOUT = 600


def _execute(name: str, monkeypatch, out_dir: Path):
    monkeypatch.setenv("SCALING_ODES_NB_SMALL", "1")
    monkeypatch.setenv("SCALING_ODES_NB_OUT", str(out_dir))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(NB_DIR / name, as_version=4)
    for c in nb.cells:      # stored outputs (for reading on the docs site) are recomputed here
        if c.cell_type == "code":
            c.outputs, c.execution_count = [], None
    client = nbclient.NotebookClient(nb, kernel_name="python3", timeout=CELL_TIMEOUT,
                                     resources={"metadata": {"path": str(NB_DIR)}})
    client.execute()  # raises CellExecutionError on the first failing cell
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
              if o.output_type == "error"]
    assert not errors, errors
    return nb


def _stdout(nb) -> str:
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code"
                   for o in c.outputs if o.output_type == "stream" and o.name == "stdout")


def _check_kernel_environment(nb):
    assert f"prefix: {sys.prefix}" in _stdout(nb), \
        "the notebook ran in a different Python environment than the tests"


def test_01_hierarchy_and_closure(monkeypatch, tmp_path):
    nb = _execute("01_hierarchy_and_closure.ipynb", monkeypatch, tmp_path)
    _check_kernel_environment(nb)
    text = _stdout(nb)
    assert "levels vs modes:" in text and "erf levels vs modes:" in text
    latex = [o.data["text/latex"] for c in nb.cells if c.cell_type == "code" for o in c.outputs
             if o.output_type == "display_data" and "text/latex" in o.get("data", {})]
    assert len(latex) >= 10, "equations should be displayed as LaTeX"


def test_02_figure1(monkeypatch, tmp_path):
    nb = _execute("02_figure1.ipynb", monkeypatch, tmp_path)
    _check_kernel_environment(nb)
    summary = json.loads((tmp_path / "figure1_summary.json").read_text())
    assert summary["small"] is True and summary["n_points"] == 176
    Ls = summary["Ls"]
    assert Ls == [1, 4, 16, 64]
    plateau = [summary["plateau_length"][str(L)] for L in Ls]
    assert all(a >= b for a, b in pairwise(plateau)), plateau
    assert plateau[1] < plateau[0], plateau
    assert (tmp_path / "figure1.png").stat().st_size > 0
    images = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
              if o.output_type == "display_data" and "image/png" in o.get("data", {})]
    assert images, "the figure should be displayed"
    cross = summary["crosscheck"]
    assert cross["agreement_digits"] >= 8.5      # float64 modes vs 80-digit levels (~9.2)
    assert cross["modes_flint30_digits"] >= 11   # 30-digit modes vs 80-digit levels (~13)


def run_summary(name: str, summary: str, monkeypatch, out_dir: Path) -> dict:
    """Execute a notebook at reduced size in this environment; its JSON summary."""
    _check_kernel_environment(_execute(name, monkeypatch, out_dir))
    return json.loads((out_dir / summary).read_text())


def run_small(name: str, summary: str, monkeypatch, out_dir: Path) -> dict:
    """As run_summary, for notebooks whose summary records that they ran small (asserted)."""
    s = run_summary(name, summary, monkeypatch, out_dir)
    assert s["small"] is True
    return s
