"""Every spec in examples/ runs through the command line (in-process) and gives finite JSON.

Each example names its commands in ``# run: scaling-odes ...`` comment lines; those are the
commands this test runs, so what the files tell a user to type is what is checked.  Paths in
them are relative to the repository root; outputs are redirected into a temporary directory.
"""
from __future__ import annotations

import json
import math
import shlex
import shutil
from pathlib import Path

import pytest

pytestmark = [pytest.mark.contract]

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.toml"))


def run_lines(path: Path) -> list[list[str]]:
    """The argument vectors of the ``# run:`` lines of an example."""
    out = []
    for line in path.read_text().splitlines():
        if line.startswith("# run:"):
            words = shlex.split(line[len("# run:"):])
            assert words[0] == "scaling-odes", line
            out.append(words[1:])
    return out


def _numbers(x, where="$"):
    """Yield (path, value) for every number in a JSON document; numeric strings too."""
    if isinstance(x, bool) or x is None:
        return
    if isinstance(x, (int, float)):
        yield where, float(x)
    elif isinstance(x, str):
        try:
            yield where, float(x)
        except ValueError:
            return
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from _numbers(v, f"{where}[{i}]")
    elif isinstance(x, dict):
        for k, v in x.items():
            yield from _numbers(v, f"{where}.{k}")


def test_every_example_has_a_run_line():
    assert EXAMPLES, "examples/ is empty"
    for path in EXAMPLES:
        assert run_lines(path), f"{path.name} has no '# run: scaling-odes ...' line"
    names = {tuple(w for w in argv[:2] if not w.endswith(".toml"))
             for path in EXAMPLES for argv in run_lines(path)}
    for command in (("solve",), ("simulate",), ("linear", "curve"), ("linear", "window"),
                    ("linear", "feature-scaling"), ("plateau",), ("asymptotic",), ("floor",), ("sweep",),
                    ("bayes",), ("bayes", "transitions"), ("bayes", "limit"), ("kernel",),
                    ("kernel-mc",), ("compare",), ("onestep",), ("onestep-sim",), ("plrf", "curve"),
                    ("plrf", "frontier"), ("plrf", "simulate")):
        assert command in names, f"no example runs `scaling-odes {' '.join(command)}`"
    # a subcommand added later needs an example too (the housekeeping ones take no spec)
    from solvers.app.cli.main import build_parser
    sub = next(a for a in build_parser()._actions if a.choices and hasattr(a, "_name_parser_map"))
    for name in set(sub.choices) - {"demo", "regenerate", "figures", "cache"}:
        assert any(n[0] == name for n in names), f"no example runs `scaling-odes {name}`"


CASES = [(p, i, argv) for p in EXAMPLES for i, argv in enumerate(run_lines(p))]


@pytest.mark.parametrize("path,i,argv", CASES,
                         ids=[f"{p.stem}-{i}" for p, i, _ in CASES])
def test_example_runs(path, i, argv, tmp_path, monkeypatch, capsys):
    from solvers.app.cli.main import main
    monkeypatch.setenv("SCALING_ODES_SERIAL", "1")    # one core per test (xdist runs two)
    # the example and its spec into the temporary directory: sweeps write next to the file
    (tmp_path / "examples").mkdir()
    shutil.copy(path, tmp_path / "examples" / path.name)
    monkeypatch.chdir(tmp_path)
    argv = list(argv)
    if "-o" in argv:
        argv[argv.index("-o") + 1] = str(tmp_path / "out.json")
    code = main(argv)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    if argv[0] == "sweep":
        import xarray as xr
        nc = tmp_path / "examples" / "sweep-results" / "sweep.nc"
        with xr.open_dataset(nc) as ds:
            for name in ("eps_g_sim", "eps_g_ode"):
                values = ds[name].values
                assert values.size and all(math.isfinite(v) for v in values.ravel()), name
        return
    doc = json.loads((tmp_path / "out.json").read_text())
    numbers = list(_numbers(doc))
    assert numbers, "no numbers in the output"
    bad = [(w, v) for w, v in numbers if not math.isfinite(v)]
    assert not bad, bad[:5]
