"""Resumable parameter sweeps of simulations and ODE solves: ``scaling-odes sweep SWEEP.toml``.

SWEEP.toml is an ordinary spec (``[model]``, ``[data]``, ``[training]``, ``[solve]``, optionally
``[simulate]``) -- the base of every cell -- plus a ``[sweep]`` section:

    [sweep]
    what = ["simulate", "solve"]   # which computations each cell runs (default: both)
    out = "results"                # output directory, relative to SWEEP.toml
                                   # (default: <SWEEP stem>.sweep next to the file)
    scheduler = "tcp://host:8786"  # optional: run on an existing dask.distributed cluster
    n_jobs = 2                     # local worker processes (default: all cores; 1 = in-process)
    [sweep.axes]                   # any of: seed, L, beta, M, K, eta, sigma_J, N
    seed = [0, 1, 2]
    L = [1, 4, 16]
    M = [2, 4]

The grid is the Cartesian product of the axes, in the order written.  Each (cell, what) pair is
one task.  Every cell's full spec is validated before anything runs, so a bad combination (L not
dividing N, ...) fails at once with one line naming the cell.

On disk (``out``):
    cells/<what>_<axis=value,...>_<hash>.npz   one file per finished task, written atomically;
        the hash is of the cell's complete spec, so changing the base spec recomputes the cells
        it affects and nothing else.  A restart skips every task whose file exists: a sweep that
        was killed resumes where it stopped.
    sweep.nc   the assembled xarray Dataset (netCDF4 via h5netcdf), rebuilt after every run
        from the cell files; dims = the axes in the order given, then alpha (and i, n / i, j for
        the order parameters, NaN-padded to the largest K, M).  Variables: eps_g_sim, eps_g_ode,
        R1_sim, Q1_sim, R1_ode, Q1_ode, alpha_sim (the alphas the simulation actually hit,
        round(alpha N)/N), steps_per_second, wall_s_sim, wall_s_ode; missing cells are NaN.
        Open with ``xarray.open_dataset(path)`` (written with h5netcdf when h5py is installed,
        else as netCDF3 by SciPy).

Simulation cells take the seed from the ``seed`` axis (or training.seed); with
``init = "random"`` the ODE cells start from the realisation of that same seed, so sim and ODE
of one cell are directly comparable.  ``[simulate] seeds`` / ``n_jobs`` are not allowed here:
the sweep parallelises over cells.

Executors: local processes (``concurrent.futures`` with "spawn"); ``n_jobs = 1`` runs in this
process; ``scheduler`` (an address or a ``distributed.Client``) submits the same tasks to a dask
cluster, whose workers must be able to import this package.  Results come back to this process,
which alone writes files, so workers need no shared file system.
"""
from __future__ import annotations

import copy
import hashlib
import io
import itertools
import json
import os
import re
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from pathlib import Path

import numpy as np

from solvers.app import sections
from solvers.app.spec import (SpecError, load_spec, parse_section, parse_spec, resolved_spec,
                              section_error, spec_to_dict)
from solvers.app.workers import (DirectoryLock, SignalsAsExit, remove_stale_temps, terminate_pool,
                                 worker_init)

AXES = {  # axis -> spec section it overrides
    "seed": "training", "L": "data", "beta": "data", "M": "model", "K": "model",
    "eta": "training", "sigma_J": "training", "N": "data",
}
WHAT = sections.SWEEP_WHAT
SWEEP_KEYS = tuple(sections.SWEEP_SCHEMA)
_SUFFIX = {"simulate": "sim", "solve": "ode"}


# ---- planning ------------------------------------------------------------------------------

class Plan:
    """The validated sweep: axes, tasks (what, label, doc, file) and where things go."""

    def __init__(self, path, out=None):
        self.path = Path(path)
        base = load_spec(self.path, extra_sections=("simulate", "sweep"))
        name = str(self.path)
        if base.extra.get("sweep") is None:
            raise SpecError(f"{name}: missing [sweep] section (a sweep file is a spec plus [sweep])")
        raw = dict(base.extra["sweep"])
        if isinstance(raw.get("what"), str):      # what = "solve" is short for ["solve"]
            raw["what"] = [raw["what"]]
        raw = parse_section({"sweep": raw}, "sweep", sections.SWEEP_SCHEMA, name=name)
        what = list(raw["what"])
        self.what = what
        sim_raw = base.extra.get("simulate", {})
        for k in ("seeds", "n_jobs"):
            if k in sim_raw:
                raise SpecError(f"{name}: [simulate] {k} is not used in a sweep (use [sweep.axes] "
                                f"seed and [sweep] n_jobs)")
        axes = raw["axes"]
        if not isinstance(axes, dict):
            raise section_error(name, "sweep", "axes must be a table ([sweep.axes])")
        for k, vals in axes.items():
            if k not in AXES:
                raise SpecError(f"{name}: [sweep.axes] unknown axis '{k}' (allowed: {', '.join(AXES)})")
            if not isinstance(vals, list) or not vals or any(
                    isinstance(v, bool) or not isinstance(v, (int, float)) for v in vals):
                raise SpecError(f"{name}: [sweep.axes] {k} = {vals!r} must be a non-empty list of numbers")
            if len(set(vals)) != len(vals):
                raise SpecError(f"{name}: [sweep.axes] {k} = {vals!r} contains duplicates")
            if k in ("seed", "L", "M", "K", "N") and not all(isinstance(v, int) for v in vals):
                raise SpecError(f"{name}: [sweep.axes] {k} = {vals!r} must be integers")
        if base.data.eigenvalues is not None and ({"L", "beta"} & set(axes)):
            raise SpecError(f"{name}: [sweep.axes] L/beta cannot vary when [data] eigenvalues are given")
        self.axes = {k: list(v) for k, v in axes.items()}
        self.scheduler = raw["scheduler"]
        self.n_jobs = raw["n_jobs"]
        if out is None:
            out = raw["out"]
            out = self.path.parent / out if out is not None else \
                self.path.with_name(self.path.stem + ".sweep")
        self.out = Path(out)
        self.alpha = np.array(base.solve.alpha_grid())
        base_doc = spec_to_dict(base)
        base_doc.pop("sweep", None)
        # what a result records to re-run the same cells (where and how it ran is left out)
        self.resolved = resolved_spec(base, sweep={"what": what, "axes": self.axes})
        self.base_doc = base_doc
        self.K_max = max(self.axes.get("K", [base.model.K]))
        self.M_max = max(self.axes.get("M", [base.model.M]))
        self.tasks = []
        for combo in itertools.product(*self.axes.values()):
            values = dict(zip(self.axes, combo))
            doc = copy.deepcopy(base_doc)
            for k, v in values.items():
                doc[AXES[k]][k] = v
            label = ",".join(f"{k}={v}" for k, v in values.items()) or "base"
            cell_name = f"{name} (cell {label})"
            try:
                spec = parse_spec(doc, name=cell_name, extra_sections=("simulate",))
                if "simulate" in what:
                    from solvers.app.simulation import simulate_options
                    simulate_options(spec)
            except SpecError as e:
                raise SpecError(str(e)) from None
            digest = hashlib.sha1(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()
            index = tuple(self.axes[k].index(v) for k, v in values.items())
            safe = re.sub(r"[^A-Za-z0-9=,.+-]", "_", label)
            for w in what:
                self.tasks.append(dict(what=w, label=label, doc=doc, index=index, name=cell_name,
                                       file=f"{w}_{safe}_{digest[:12]}.npz"))

    @property
    def cell_dir(self) -> Path:
        return self.out / "cells"

    def done(self, task) -> bool:
        path = self.cell_dir / task["file"]
        if not path.exists():
            return False
        try:
            with np.load(path) as f:
                # a cell with non-finite values (older versions accepted them) is recomputed
                return "eps_g" in f.files and _finite_cell(f)
        except Exception:   # a truncated file from a crash: recompute it
            return False


# ---- one task --------------------------------------------------------------------------------

def compute_cell(what: str, doc: dict, name: str) -> dict:
    """Run one task; returns plain arrays (picklable, no files touched)."""
    spec = parse_spec(doc, name=name, extra_sections=("simulate",))
    grid = np.array(spec.solve.alpha_grid())
    started = time.perf_counter()
    if what == "simulate":
        from solvers.app.simulation import simulate_kwargs, simulate_options
        from solvers.sim.simulate import simulate
        res = simulate(seed=spec.training.seed, **simulate_kwargs(spec, simulate_options(spec)))
        N = spec.data.N
        # simulate records at the unique steps round(alpha N); map each requested alpha to it
        idx = np.searchsorted(np.rint(res.alpha * N), np.rint(grid * N))
        return dict(eps_g=res.eps_g[idx], R1=res.R1[idx], Q1=res.Q1[idx], alpha=res.alpha[idx],
                    steps_per_second=np.float64(res.steps_per_second),
                    wall_s=np.float64(time.perf_counter() - started))
    from solvers.app.solve import solve_spec
    out = solve_spec(spec)
    return dict(eps_g=np.array([float(e) for e in out["eps_g"]]), R1=np.array(out["R1"]),
                Q1=np.array(out["Q1"]), alpha=np.array(out["alpha"]),
                steps_per_second=np.float64(np.nan),
                wall_s=np.float64(time.perf_counter() - started))


def _cell(task) -> tuple:
    """(what, spec, [simulate] options) of a task, for the sizing model."""
    spec = parse_spec(task["doc"], name=task["name"], extra_sections=("simulate",), sizing=None)
    if task["what"] != "simulate":
        return task["what"], spec, None
    from solvers.app.simulation import simulate_options
    return task["what"], spec, simulate_options(spec)


def _finite_cell(result) -> bool:
    return all(np.all(np.isfinite(np.asarray(result[k], dtype=float)))
               for k in ("eps_g", "R1", "Q1", "alpha"))


def _compute_task(task):
    return compute_cell(task["what"], task["doc"], task["name"])


def _write_cell(plan: Plan, task, result: dict) -> None:
    """Atomic: write to a temporary name in the same directory, then rename."""
    plan.cell_dir.mkdir(parents=True, exist_ok=True)
    final = plan.cell_dir / task["file"]
    tmp = final.with_name(final.name + f".tmp{os.getpid()}")
    buf = io.BytesIO()
    meta = json.dumps({"what": task["what"], "label": task["label"], "spec": task["doc"]},
                      default=str)
    np.savez(buf, meta=np.array(meta), **result)
    tmp.write_bytes(buf.getvalue())
    os.replace(tmp, final)


# ---- executors -------------------------------------------------------------------------------

def _run_serial(tasks, on_result):
    for t in tasks:
        on_result(t, _compute_task(t))


def _run_processes(tasks, n_jobs, on_result):
    # workers die with this process (kill -9 included): solvers.app.workers
    pool = ProcessPoolExecutor(max_workers=n_jobs, mp_context=get_context("spawn"),
                               initializer=worker_init, initargs=(os.getpid(),))
    try:
        futures = {pool.submit(_compute_task, t): t for t in tasks}
        for fut in as_completed(futures):
            on_result(futures[fut], fut.result())
    except BaseException:
        terminate_pool(pool)
        raise
    pool.shutdown(wait=True)


def _run_dask(tasks, scheduler, on_result):
    from distributed import Client, as_completed as dask_completed
    own = not isinstance(scheduler, Client)
    client = Client(scheduler) if own else scheduler
    try:
        futures = [client.submit(_compute_task, t, pure=False, key=f"sweep-{t['file']}")
                   for t in tasks]
        by_key = {f.key: t for f, t in zip(futures, tasks)}
        for fut in dask_completed(futures):
            on_result(by_key[fut.key], fut.result())
    finally:
        if own:
            client.close()


# ---- assembling the dataset ----------------------------------------------------------------

def assemble(plan: Plan):
    """xarray Dataset of every finished cell (missing cells NaN)."""
    import xarray as xr
    shape = tuple(len(v) for v in plan.axes.values())
    dims = tuple(plan.axes)
    nA, K, M = len(plan.alpha), plan.K_max, plan.M_max
    data = {}
    for w in plan.what:
        s = _SUFFIX[w]
        data[f"eps_g_{s}"] = (dims + ("alpha",), np.full(shape + (nA,), np.nan))
        data[f"R1_{s}"] = (dims + ("alpha", "i", "n"), np.full(shape + (nA, K, M), np.nan))
        data[f"Q1_{s}"] = (dims + ("alpha", "i", "j"), np.full(shape + (nA, K, K), np.nan))
        data[f"wall_s_{s}"] = (dims, np.full(shape, np.nan))
        if w == "simulate":
            data["alpha_sim"] = (dims + ("alpha",), np.full(shape + (nA,), np.nan))
            data["steps_per_second"] = (dims, np.full(shape, np.nan))
    n_done = 0
    for t in plan.tasks:
        if not plan.done(t):
            continue
        s, ix = _SUFFIX[t["what"]], t["index"]
        with np.load(plan.cell_dir / t["file"]) as f:
            data[f"eps_g_{s}"][1][ix] = f["eps_g"]
            k, m = f["R1"].shape[-2:]
            data[f"R1_{s}"][1][ix + (slice(None), slice(0, k), slice(0, m))] = f["R1"]
            data[f"Q1_{s}"][1][ix + (slice(None), slice(0, k), slice(0, k))] = f["Q1"]
            data[f"wall_s_{s}"][1][ix] = f["wall_s"]
            if t["what"] == "simulate":
                data["alpha_sim"][1][ix] = f["alpha"]
                data["steps_per_second"][1][ix] = f["steps_per_second"]
        n_done += 1
    coords = {k: np.asarray(v) for k, v in plan.axes.items()}
    coords["alpha"] = plan.alpha
    ds = xr.Dataset(data, coords=coords)
    ds.attrs.update(
        what=json.dumps(plan.what), base_spec=json.dumps(plan.base_doc, default=str),
        sweep_file=str(plan.path), cells_done=n_done, cells_total=len(plan.tasks),
        note="eps_g_sim: exact eps_g of the finite-N SGD run from its order parameters; "
             "eps_g_ode: the order-parameter ODEs; alpha_sim: alphas the simulation hit",
    )
    return ds


def _write_dataset(plan: Plan, ds) -> Path:
    path = plan.out / "sweep.nc"
    tmp = path.with_name(f"sweep.nc.tmp{os.getpid()}")
    try:
        ds.to_netcdf(tmp, engine="h5netcdf")
    except ImportError:
        # h5netcdf >= 1.5 writes through h5py, which is optional there; netCDF3 (SciPy) holds
        # the same float arrays and attributes and xarray opens it the same way.
        ds.to_netcdf(tmp, engine="scipy")
    os.replace(tmp, path)
    return path


# ---- entry point ---------------------------------------------------------------------------

def run_sweep(path, *, out=None, scheduler=None, n_jobs=None, max_cells=None,
              progress=None) -> dict:
    """Run the missing tasks of a sweep and (re)assemble ``sweep.nc``.

    max_cells: compute at most that many tasks this time (the rest stay missing; a later run
    finishes them).  Returns {"computed", "skipped", "missing", "total", "dataset"}.
    """
    plan = Plan(path, out=out)
    scheduler = scheduler if scheduler is not None else plan.scheduler
    n_jobs = n_jobs if n_jobs is not None else plan.n_jobs
    if n_jobs is not None and n_jobs < 1:
        raise ValueError(f"n_jobs must be >= 1, got {n_jobs}")
    if max_cells is not None and max_cells < 0:
        raise ValueError(f"max_cells must be >= 0, got {max_cells}")
    plan.cell_dir.mkdir(parents=True, exist_ok=True)
    # one sweep per directory; then the half-written files of killed runs can go
    with DirectoryLock(plan.out), SignalsAsExit():
        remove_stale_temps(plan.out, plan.cell_dir)
        return _run_locked(plan, scheduler, n_jobs, max_cells, progress)


def _run_locked(plan, scheduler, n_jobs, max_cells, progress) -> dict:
    started = time.perf_counter()
    pending = [t for t in plan.tasks if not plan.done(t)]
    skipped = len(plan.tasks) - len(pending)
    todo = pending if max_cells is None else pending[:max_cells]
    from solvers.app.sizing import sized, sweep_estimate
    from solvers.core.cpus import available_cpus
    jobs = min(n_jobs or available_cpus(), max(len(todo), 1))
    sized(sweep_estimate([_cell(t) for t in todo], jobs), str(plan.path))   # before any cell
    from solvers.core.progress import Progress
    # on by default: a bar in a terminal, plain lines in a log (at least one per interval)
    enabled = progress if progress is not None else True
    bar = Progress("sweep", unit="cell", enabled=enabled).phase("cells", len(plan.tasks))
    bar(skipped)
    computed = 0

    def on_result(task, result):
        nonlocal computed
        if not _finite_cell(result):
            raise ValueError(f"{task['name']}: {task['what']} produced non-finite values "
                             f"(eps_g, R1 or Q1); the cell is not written (reduce eta?)")
        _write_cell(plan, task, result)
        computed += 1
        bar.update(1)

    try:
        if not todo:
            pass
        elif scheduler is not None:
            _run_dask(todo, scheduler, on_result)
        else:
            if jobs == 1:
                _run_serial(todo, on_result)
            else:
                _run_processes(todo, jobs, on_result)
    finally:
        bar.close(done=computed + skipped == len(plan.tasks))
    dataset = _write_dataset(plan, assemble(plan))
    stats = dict(computed=computed, skipped=skipped, total=len(plan.tasks),
                 missing=len(plan.tasks) - skipped - computed, dataset=str(dataset))
    _write_summary(plan, stats, time.perf_counter() - started)
    return stats


def _write_summary(plan: Plan, stats: dict, wall_s: float) -> None:
    """``sweep.json`` next to the dataset: the counts and ``meta`` (version, time, the spec as
    it ran); given back to ``sweep`` as the spec, it recomputes the same cells."""
    from solvers import __version__
    path = plan.out / "sweep.json"
    doc = dict(stats, meta={"version": __version__, "wall_s": wall_s, "spec": plan.resolved})
    tmp = path.with_name(f"sweep.json.tmp{os.getpid()}")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    os.replace(tmp, path)
