"""Execute the notebooks at reduced size and store them with their outputs (for the docs site).

    .venv/bin/python notebooks/store_outputs.py [NAME.ipynb ...]     # default: all of them

Each notebook runs as the test suite runs it (``SCALING_ODES_NB_SMALL=1``, files into a
temporary ``SCALING_ODES_NB_OUT``, kernel "python3", working directory notebooks/).  Machine
paths (the virtualenv's prefix, the temporary directory) are replaced by ``<venv>`` and
``<out>`` in the stored text, and the wall and CPU time of each run is printed.
"""
from __future__ import annotations

import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import nbclient
import nbformat

HERE = Path(__file__).resolve().parent


def _scrub(nb, replacements):
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for out in cell.outputs:
            if "text" in out:
                for a, b in replacements:
                    out["text"] = out["text"].replace(a, b)
            for key, value in out.get("data", {}).items():
                if key.startswith("text/") and isinstance(value, str):
                    for a, b in replacements:
                        value = value.replace(a, b)
                    out["data"][key] = value


def run(path: Path) -> tuple[float, float]:
    nb = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory(prefix="scaling-odes-nb-") as out:
        os.environ.update(SCALING_ODES_NB_SMALL="1", SCALING_ODES_NB_OUT=out, MPLBACKEND="Agg")
        cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        nbclient.NotebookClient(nb, kernel_name="python3", timeout=1200,
                                resources={"metadata": {"path": str(HERE)}}).execute()
        wall = time.perf_counter() - t0
        cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        _scrub(nb, [(out, "<out>"), (sys.prefix, "<venv>")])
    nbformat.write(nb, path)
    return wall, (cpu1.ru_utime + cpu1.ru_stime) - (cpu0.ru_utime + cpu0.ru_stime)


def main(names) -> None:
    paths = [HERE / n for n in names] if names else sorted(HERE.glob("*.ipynb"))
    for p in paths:
        wall, cpu = run(p)
        size = p.stat().st_size / 1e6
        print(f"{p.name}: {wall:.0f} s wall, {cpu:.0f} s CPU (kernel), {size:.2f} MB stored",
              flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
