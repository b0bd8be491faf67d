"""Sweeps survive faults -- kill -9 of the parent, a second sweep on the same
directory, half-written temp files, cells with non-finite values -- and a restarted sweep equals
a from-scratch run."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from cli_support import run_cli
from specs import erf_K2
from solvers.app import sweep
from solvers.app.workers import DirectoryLock

pytestmark = [pytest.mark.contract]  # oracle (tests/conftest.py)

xr = pytest.importorskip("xarray")

BASE = erf_K2(2, "{N}") + """[training]
eta = 0.5
sigma_J = 0.1
seed = 0
[solve]
alpha_max = {alpha_max}
n_points = 5
spacing = "linear"
basis = "modes"
dps = "float64"
digits = 6
[sweep]
what = {what}
[sweep.axes]
seed = {seeds}
"""


def _proc_table():
    table = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            # "pid (comm) state ppid ..."; comm may contain spaces
            rest = stat[stat.rindex(")") + 2:].split()
            table[int(d.name)] = (rest[0], int(rest[1]))
    return table


def _descendants(pid):
    table = _proc_table()
    out, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, (_, pp) in table.items() if pp in frontier} - out
        out |= frontier
    return out


def _alive(pids):
    table = _proc_table()
    return {p for p in pids if p in table and table[p][0] != "Z"}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_kill_9_leaves_no_sweep_process_and_second_sweep_is_refused(tmp_path):
    exe = Path(sys.executable).with_name("scaling-odes")
    # cells that run for minutes: the kill lands while both workers compute
    path = tmp_path / "long.toml"
    path.write_text(BASE.format(N=512, alpha_max=400000, what='["simulate"]', seeds="[0, 1, 2]"))
    a = subprocess.Popen([str(exe), "sweep", str(path), "--n-jobs", "2", "--no-progress"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 90
        while time.time() < deadline:
            kids = _descendants(a.pid)
            workers = [p for p in kids if b"spawn_main" in Path(f"/proc/{p}/cmdline").read_bytes()
                       if p in _alive([p])]
            if len(workers) >= 2:
                break
            assert a.poll() is None, a.communicate()
            time.sleep(0.3)
        else:
            pytest.fail("the sweep never started two workers")
        # a second sweep on the same directory refuses, in one line
        b = subprocess.run([str(exe), "sweep", str(path), "--no-progress"], capture_output=True,
                           text=True, timeout=120)
        assert b.returncode == 2 and len(b.stderr.strip().splitlines()) == 1, b.stderr
        assert "another sweep" in b.stderr and str(a.pid) in b.stderr
        kids = _descendants(a.pid)
        os.kill(a.pid, signal.SIGKILL)
        a.wait(timeout=10)
        t0 = time.time()
        while _alive(kids) and time.time() - t0 < 10:
            time.sleep(0.2)
        assert not _alive(kids), f"alive 10 s after kill -9: {_alive(kids)}"
        # nobody holds the killed parent's pipes any more
        a.communicate(timeout=5)
    finally:
        if a.poll() is None:
            a.kill()
        for p in _alive(_descendants(a.pid)):
            os.kill(p, signal.SIGKILL)


def test_lock_held_refuses_in_one_line(tmp_path, capsys):
    path = tmp_path / "grid.toml"
    path.write_text(BASE.format(N=32, alpha_max=4, what='["solve"]', seeds="[0]"))
    with DirectoryLock(tmp_path / "grid.sweep"):
        code, out, err = run_cli(["sweep", path, "--no-progress"], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "another sweep" in err


def _dataset(stats):
    with xr.open_dataset(stats["dataset"]) as ds:
        return ds.load()


def test_restart_after_faults_equals_from_scratch(tmp_path):
    text = BASE.format(N=32, alpha_max=4, what='["simulate", "solve"]', seeds="[0, 1, 2]")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    pa, pb = tmp_path / "a" / "grid.toml", tmp_path / "b" / "grid.toml"
    pa.write_text(text)
    pb.write_text(text)
    first = sweep.run_sweep(pa, n_jobs=1, max_cells=3, progress=False)
    assert first["computed"] == 3
    cells = tmp_path / "a" / "grid.sweep" / "cells"
    # what a kill inside the write window leaves, and a poisoned cell from an older version
    (cells / "simulate_seed=0_deadbeef.npz.tmp4242").write_bytes(b"partial")
    (cells.parent / "sweep.nc.tmp4242").write_bytes(b"partial")
    done = sorted(cells.glob("*.npz"))
    with np.load(done[0]) as f:
        poisoned = {k: f[k] for k in f.files}
    poisoned["eps_g"] = poisoned["eps_g"] * np.nan
    np.savez(done[0], **poisoned)
    second = sweep.run_sweep(pa, n_jobs=1, progress=False)
    assert second["computed"] == 6 - 3 + 1 and second["missing"] == 0
    assert not list((tmp_path / "a").rglob("*.tmp*"))
    scratch = sweep.run_sweep(pb, n_jobs=1, progress=False)
    da, db = _dataset(second), _dataset(scratch)
    for var in ("eps_g_sim", "eps_g_ode", "R1_sim", "Q1_sim", "R1_ode", "Q1_ode", "alpha_sim"):
        np.testing.assert_array_equal(da[var].values, db[var].values)
        assert np.all(np.isfinite(da[var].values))
