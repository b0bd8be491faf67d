"""``scaling-odes sweep``: labelled dataset, resume after interruption, local and dask executors."""

import numpy as np
import pytest

from specs import erf_K2
from solvers.app.cli import main as cli

from solvers.app import sweep

pytestmark = [pytest.mark.contract]  # oracle (tests/conftest.py)

xr = pytest.importorskip("xarray")

SWEEP = erf_K2(2, 32) + """[training]
eta = 0.5
sigma_J = 0.1
seed = 0
[solve]
alpha_max = 4
n_points = 5
spacing = "linear"
basis = "modes"
dps = "float64"
digits = 8
[sweep]
what = {what}
[sweep.axes]
seed = [0, 1]
L = [1, 2]
M = [1, 2]
"""


def _write(tmp_path, what='["simulate", "solve"]', extra=""):
    p = tmp_path / "grid.toml"
    p.write_text(SWEEP.format(what=what) + extra)
    return p


def _open(stats):
    with xr.open_dataset(stats["dataset"]) as ds:
        return ds.load()


_REAL_TASK = sweep._compute_task


class _Counter:
    """Wraps the per-task function to count what is actually computed."""

    def __init__(self, monkeypatch, fail_after=None):
        self.labels, self.fail_after = [], fail_after

        def counted(task):
            if self.fail_after is not None and len(self.labels) >= self.fail_after:
                raise KeyboardInterrupt          # the process is killed during this task
            self.labels.append((task["what"], task["label"]))
            return _REAL_TASK(task)
        monkeypatch.setattr(sweep, "_compute_task", counted)


def test_dataset_is_labelled_and_sim_and_ode_share_the_realisation(tmp_path, monkeypatch):
    path = _write(tmp_path)
    count = _Counter(monkeypatch)
    stats = sweep.run_sweep(path, n_jobs=1, progress=False)
    assert stats == dict(stats, computed=16, skipped=0, missing=0, total=16)
    assert len(count.labels) == 16
    ds = _open(stats)
    assert ds.eps_g_sim.dims == ("seed", "L", "M", "alpha")
    assert list(ds.L.values) == [1, 2] and list(ds.alpha.values) == [0, 1, 2, 3, 4]
    assert ds.R1_sim.dims == ("seed", "L", "M", "alpha", "i", "n")
    assert not np.isnan(ds.eps_g_sim).any() and not np.isnan(ds.eps_g_ode).any()
    # M = 1 cells are NaN-padded in the teacher index
    assert np.isnan(ds.R1_sim.sel(M=1).isel(n=1)).all()
    # at alpha = 0 both start from the same realisation (same seed): same eps_g to rounding
    np.testing.assert_allclose(ds.eps_g_sim.sel(alpha=0), ds.eps_g_ode.sel(alpha=0), rtol=1e-12)
    # different seeds are different realisations
    assert (ds.eps_g_sim.sel(seed=0) != ds.eps_g_sim.sel(seed=1)).all()


def test_interrupted_sweep_finishes_only_the_missing_cells(tmp_path, monkeypatch):
    path = _write(tmp_path, what='["simulate"]')
    # 1) a run limited to 3 cells (a deliberate stop)
    first = _Counter(monkeypatch)
    stats = sweep.run_sweep(path, n_jobs=1, max_cells=3, progress=False)
    assert (stats["computed"], stats["skipped"], stats["missing"]) == (3, 0, 5)
    assert len(first.labels) == 3
    ds = _open(stats)
    assert int(np.isnan(ds.eps_g_sim.isel(alpha=-1)).sum()) == 5
    # 2) a run killed while computing its 3rd cell: 2 more cells finished, the 3rd is lost
    killed = _Counter(monkeypatch, fail_after=2)
    with pytest.raises(KeyboardInterrupt):
        sweep.run_sweep(path, n_jobs=1, progress=False)
    assert len(killed.labels) == 2
    files = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "grid.sweep" / "cells").iterdir()}
    assert len(files) == 5 and not any(".tmp" in f for f in files)
    # 3) the restart computes exactly the 3 missing cells and touches none of the others
    again = _Counter(monkeypatch)
    stats = sweep.run_sweep(path, n_jobs=1, progress=False)
    assert (stats["computed"], stats["skipped"], stats["missing"]) == (3, 5, 0)
    assert len(again.labels) == 3
    assert not set(again.labels) & set(first.labels + killed.labels)
    for name, mtime in files.items():
        assert (tmp_path / "grid.sweep" / "cells" / name).stat().st_mtime_ns == mtime
    resumed = _open(stats)
    # 4) nothing left: a further run computes nothing; and the resumed result equals a
    # from-scratch run (bit-identical: same seeds)
    assert sweep.run_sweep(path, n_jobs=1, progress=False)["computed"] == 0
    fresh = _open(sweep.run_sweep(path, n_jobs=1, out=tmp_path / "fresh", progress=False))
    assert resumed.eps_g_sim.equals(fresh.eps_g_sim)


def test_changed_base_spec_recomputes(tmp_path):
    path = _write(tmp_path, what='["solve"]')
    assert sweep.run_sweep(path, n_jobs=1, progress=False)["computed"] == 8
    path.write_text(path.read_text().replace("eta = 0.5", "eta = 0.25"))
    assert sweep.run_sweep(path, n_jobs=1, progress=False)["computed"] == 8


def test_sweep_on_a_dask_cluster_matches_the_local_run(tmp_path):
    distributed = pytest.importorskip("distributed")
    path = _write(tmp_path, what='["simulate"]')
    local = _open(sweep.run_sweep(path, n_jobs=1, out=tmp_path / "local", progress=False))
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster:
        stats = sweep.run_sweep(path, scheduler=cluster.scheduler_address,
                                out=tmp_path / "dask", progress=False)
    assert stats["computed"] == 8
    assert _open(stats).eps_g_sim.equals(local.eps_g_sim)


def test_cli_sweep_with_local_processes(tmp_path, capsys):
    path = _write(tmp_path, what='["simulate"]',
                  extra="").read_text().replace("seed = [0, 1]", "seed = [0]")
    p = tmp_path / "small.toml"
    p.write_text(path.replace("M = [1, 2]", "M = [2]"))
    code = cli.main(["sweep", str(p), "--n-jobs", "2", "--no-progress"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "2 cell(s) computed, 0 already done, 0 missing" in out
    assert (tmp_path / "small.sweep" / "sweep.nc").exists()


@pytest.mark.parametrize("extra,needle", [
    ("bogus = [1]\n", "unknown axis 'bogus'"),
    # L = 2 does not divide N = 31: caught before anything runs, naming the cell
    ("N = [31]\n", "(cell seed=0,L=2,M=1,N=31): [data] L = 2 does not divide N = 31"),
    ("K = [1.5]\n", "must be integers"),
])
def test_bad_sweep_is_one_line(tmp_path, capsys, extra, needle):
    p = _write(tmp_path, extra=extra)
    code = cli.main(["sweep", str(p), "--no-progress"])
    _, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1, err
    assert needle in err
    assert not (tmp_path / "grid.sweep").exists()


def test_missing_sweep_section(tmp_path, capsys):
    p = tmp_path / "s.toml"
    p.write_text(SWEEP.format(what="[]").split("[sweep]")[0])
    code = cli.main(["sweep", str(p)])
    _, err = capsys.readouterr()
    assert code == 2 and "missing [sweep] section" in err
