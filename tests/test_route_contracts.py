"""What a run promises before and after it computes: output paths checked before any work, a
result that records the spec it ran (and re-runs from its own JSON to the same numbers), one
spec file for several subcommands, and plain progress lines at least once per interval.

The reference of every round trip is the first run itself (a contract: the second run must
reproduce its numbers exactly, as the spec, the seeds and the route are the same)."""
import json
import sys
import time

import numpy as np
import pytest

from cli_support import run_cli, write_spec
from specs import ERF_K2_L4

pytestmark = [pytest.mark.contract]  # oracle (tests/conftest.py)

# erf K = M = 2, L = 4, N = 64, alpha <= 10: well under a second per solve on the default route
SMALL = ERF_K2_L4 + """
[training]
eta = 0.5
sigma_J = 0.1
[solve]
alpha_max = 10
n_points = 5
spacing = "linear"
"""


def _no_work(monkeypatch):
    """Any computation reached is a failure: the refusals must come first."""
    def boom(*a, **k):
        raise AssertionError("computation started before the output paths were checked")
    import solvers.app.compare as compare
    import solvers.app.solve as solve
    import solvers.app.sweep as sweep
    import solvers.app.cli.simulate as simulate
    monkeypatch.setattr(solve, "solve_spec", boom)
    monkeypatch.setattr(compare, "compare_spec", boom)
    monkeypatch.setattr(simulate, "simulate_spec", boom)
    monkeypatch.setattr(sweep, "run_sweep", boom)


@pytest.mark.parametrize("args, knob", [
    (["compare", "{spec}", "--plot", "x.jpgx"], "--plot x.jpgx"),
    (["compare", "{spec}", "--plot", "{tmp}/missing/fig.png"], "does not exist"),
    (["compare", "{spec}", "--plot", "{tmp}/noext"], "no suffix"),
    (["solve", "{spec}", "-o", "{tmp}/missing/dir/x.json"], "-o"),
    (["simulate", "{spec}", "-o", "{tmp}/missing/x.json"], "-o"),
    (["compare", "{spec}", "-o", "{tmp}"], "is a directory"),
    (["sweep", "{spec}", "--out", "{spec}"], "--out"),
])
def test_output_paths_fail_before_any_work(tmp_path, capsys, monkeypatch, args, knob):
    path = write_spec(tmp_path, SMALL + "[sweep]\n[sweep.axes]\nseed = [0]\n")
    _no_work(monkeypatch)
    started = time.process_time()
    code, out, err = run_cli([a.format(spec=path, tmp=tmp_path) for a in args], capsys)
    took = time.process_time() - started
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and knob in lines[0], err
    # the 2 s bound, in process, as CPU time so that a loaded machine cannot fail it
    # (matplotlib's list of formats is the slowest part, ~0.3 s); that no work starts is
    # checked by _no_work, independently of time
    assert took < 2.0


def _run_json(tmp_path, capsys, command, spec_path, name):
    out = tmp_path / name
    code, _, err = run_cli([command, spec_path, "-o", out], capsys)
    assert code == 0, err
    return json.loads(out.read_text())


def test_solve_meta_is_self_describing(tmp_path, capsys):
    res = _run_json(tmp_path, capsys, "solve", write_spec(tmp_path, SMALL), "a.json")
    meta = res["meta"]
    for key in ("version", "route", "agreement_digits", "wall_s", "beta", "N", "seed",
                "sigma_J", "noise", "weight_decay", "batch_size", "spec"):
        assert key in meta, key
    # the default route: basis "auto" -> the verified float64 modes pair
    assert meta["route"].startswith("modes/float64/") and meta["basis"] == "modes"
    assert meta["agreement_digits"] >= meta["digits"] == 6
    spec = meta["spec"]
    # every default filled in, the resolved basis in place of "auto"
    assert spec["solve"]["basis"] == "modes" and spec["solve"]["digits"] == 6
    assert spec["training"]["noise"] == "0" and spec["training"]["batch_size"] == 1
    assert spec["model"]["normalisation"] == "paper"


@pytest.mark.parametrize("command", ["solve", "simulate", "compare"])
def test_the_json_re_runs_to_the_same_numbers(tmp_path, capsys, command):
    first = _run_json(tmp_path, capsys, command, write_spec(tmp_path, SMALL), "first.json")
    again = _run_json(tmp_path, capsys, command, tmp_path / "first.json", "again.json")
    assert again["meta"]["spec"] == first["meta"]["spec"]
    if command == "compare":
        pairs = [(first["theory"]["eps_g"], again["theory"]["eps_g"]),
                 (first["simulation"]["eps_g"], again["simulation"]["eps_g"])]
    else:
        pairs = [(first["eps_g"], again["eps_g"]), (first["Q1"], again["Q1"])]
    for a, b in pairs:
        # same spec, same seed, same route: the same floating-point operations
        assert a == b


def test_the_sweep_summary_re_runs_to_the_same_cells(tmp_path, capsys):
    xr = pytest.importorskip("xarray")
    path = write_spec(tmp_path, SMALL + "[sweep]\nn_jobs = 1\n[sweep.axes]\nseed = [0, 1]\n")
    code, _, err = run_cli(["sweep", path, "--out", tmp_path / "one"], capsys)
    assert code == 0, err
    summary = json.loads((tmp_path / "one" / "sweep.json").read_text())
    assert summary["meta"]["spec"]["sweep"]["axes"] == {"seed": [0, 1]}
    code, _, err = run_cli(["sweep", tmp_path / "one" / "sweep.json", "--out",
                            tmp_path / "two"], capsys)
    assert code == 0, err
    with xr.open_dataset(tmp_path / "one" / "sweep.nc") as a, \
            xr.open_dataset(tmp_path / "two" / "sweep.nc") as b:
        for var in ("eps_g_ode", "eps_g_sim", "Q1_ode"):
            np.testing.assert_array_equal(a[var].values, b[var].values)


def test_one_spec_serves_several_subcommands(tmp_path, capsys):
    """[asymptotic], [plateau], [sweep] and [simulate] in one file: solve and simulate take it
    (each section is validated by the subcommand that reads it)."""
    path = write_spec(tmp_path, SMALL + "[asymptotic]\nalpha0 = 100\n[plateau]\ndps = 30\n"
                                        "[simulate]\nseeds = [0]\n[sweep]\n[sweep.axes]\n"
                                        "seed = [0]\n")
    for command in ("solve", "simulate"):
        code, _, err = run_cli([command, path, "-o", tmp_path / f"{command}.json"], capsys)
        assert code == 0, err
    # a JSON that is not a result of this tool is refused in one line
    bad = tmp_path / "other.json"
    bad.write_text('{"alpha": [1]}')
    code, _, err = run_cli(["solve", bad], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "meta.spec" in err


class _Stamped:
    """A non-terminal stderr that records when each line arrives."""

    def __init__(self):
        self.lines = []

    def write(self, text):
        for line in text.splitlines():
            if line.strip():
                self.lines.append((time.perf_counter(), line))
        return len(text)

    def flush(self):
        pass

    def isatty(self):
        return False


PROGRESS_INTERVAL = 0.3


def _plain_progress_of_a_compare(tmp_path, monkeypatch):
    """A compare of ~2-4 s with a 0.3 s interval: (start, [(time, line)], end) of its plain
    progress lines, from the simulation and from the solve."""
    monkeypatch.setenv("SCALING_ODES_PROGRESS", "plain")
    monkeypatch.setenv("SCALING_ODES_PROGRESS_INTERVAL", str(PROGRESS_INTERVAL))
    stamped = _Stamped()
    monkeypatch.setattr(sys, "stderr", stamped)
    path = write_spec(tmp_path, SMALL.replace("alpha_max = 10", "alpha_max = 300").replace(
        "N = 64", "N = 1024") + "[simulate]\ngenerator = \"numpy\"\n")
    from solvers.app.cli import main as cli
    started = time.perf_counter()
    assert cli.main(["compare", str(path), "-o", str(tmp_path / "c.json")]) == 0
    ended = time.perf_counter()
    text = [line for _, line in stamped.lines]
    assert any(line.startswith("SGD") for line in text), text
    assert any(line.startswith("solve (seed 0)") for line in text), text
    assert all("\r" not in line for line in text)
    return started, stamped.lines, ended


def test_compare_prints_plain_progress_from_both_phases(tmp_path, monkeypatch):
    _plain_progress_of_a_compare(tmp_path, monkeypatch)


@pytest.mark.bench
def test_compare_prints_plain_progress_every_interval(tmp_path, monkeypatch):
    """The plain lines never more than interval + 1 s of wall time apart (the heartbeat wakes
    at most once per interval; the slack covers the set-up between two phases), the first
    within that too.  A wall-clock bound: a loaded machine can stretch a gap, so only
    `make verify` runs it."""
    started, lines, ended = _plain_progress_of_a_compare(tmp_path, monkeypatch)
    gaps = np.diff([started] + [t for t, _ in lines] + [ended])
    assert gaps.max() <= PROGRESS_INTERVAL + 1.0, (gaps.max(), [line for _, line in lines])
