"""``scaling-odes simulate SPEC.toml`` and ``scaling-odes sweep SWEEP.toml``.

``simulate`` runs finite-N online SGD (``solvers.sim.simulate``) for the model, data and training of
a spec (the same file ``solve`` reads) on the spec's ``[solve]`` alpha grid.  Optional section:

    [simulate]
    seeds = [0, 1, 2]        # default: [training.seed]
    n_jobs = 2               # threads for several seeds (default: all cores)
    n_trainable = 100        # only the first N_l eigen-directions are trainable (default: all N)
    untrainable = "zero"     # or "frozen": initial value of the untrainable components
    eps_holdout = 0          # > 0: also estimate eps_g on that many fresh samples per alpha
    generator = "float32"    # training inputs: "float32" (fastest, default), "xoshiro" (float64
                             # ziggurat, the default before) or "numpy" (PCG64, the reference)

Keys outside ``[simulate]`` that only matter to the ODEs (``training.order``, ``[solve]`` basis,
dps, digits) are ignored: SGD contains all orders in eta.  ``training.init`` must be "random"
(or "informed": the student's rows i < min(K, M) start at the teacher's, solvers.core.initial;
or explicit [init.modes], e.g. init = {from = "run.json"}: weights with exactly these overlaps):
a simulation starts from drawn weights, and its realisation is what ``init`` in the output holds.

Output (JSON), for the first seed:
    alpha, eps_g, R1, Q1, [eps_g_holdout], [v (n_alpha x K: readout = "trained")]
    init  {"modes": {"R": L x K x M, "Q": L x K x K, "T": L x M x M}}  the mode overlaps at
          alpha = 0, as *exact* decimal strings of the float64 values.  Pasted into
          ``[init.modes]`` with ``training.init = "explicit"`` they reproduce the state exactly
          at any precision (a TOML float would be read through its shortest repr, which is a
          different rational number).  ``solve`` with init = "random" and the same seed starts
          from the same realisation anyway (``solvers.core.problem.random_init``).
    meta  {steps_per_second, seed, N, ..., kernel ("c", "numba", or "numba-family" for a
          model other than today's), [model: the family's options when not today's]}
With several seeds, ``ensemble`` adds eps_g_mean, eps_g_std and the per-seed runs.
"""
from __future__ import annotations

import time
from decimal import Decimal

import numpy as np

from solvers.app.simulation import (SIMULATE_KEYS, eigenvalues_of,  # noqa: F401
                                     simulate_kwargs, simulate_options)
from solvers.app.cli.common import spec_command
from solvers.app.spec import load_spec

def exact_decimal(x: float) -> str:
    """The exact value of a float64 as a decimal string (no exponent, no rounding)."""
    return format(Decimal(float(x)), "f")


def _exact_nested(a):
    return np.vectorize(exact_decimal, otypes=[object])(np.asarray(a, dtype=float)).tolist()


def _finite_list(a, what):
    a = np.asarray(a, dtype=float)
    if not np.all(np.isfinite(a)):
        raise ValueError(f"the simulation produced non-finite {what}; reduce eta")
    return a.tolist()


def result_to_json(res, wall_s: float | None = None) -> dict:
    """One SimulationResult as the JSON contract of ``simulate``."""
    from solvers import __version__
    cfg = res.config
    out = {
        "alpha": _finite_list(res.alpha, "alpha"),
        "eps_g": _finite_list(res.eps_g, "eps_g"),
        "R1": _finite_list(res.R1, "R1"),
        "Q1": _finite_list(res.Q1, "Q1"),
        "init": {"modes": {k: _exact_nested(res.init_modes[k]) for k in ("R", "Q", "T")}},
    }
    if res.eps_g_holdout is not None:
        out["eps_g_holdout"] = _finite_list(res.eps_g_holdout, "eps_g_holdout")
    out["meta"] = {
        "steps_per_second": float(res.steps_per_second) if np.isfinite(res.steps_per_second)
        else 0.0,
        "seed": int(res.seed), "N": int(res.N), "L": int(len(res.eigenvalues)),
        "activation": cfg["activation"], "K": cfg["K"], "M": cfg["M"], "eta": cfg["eta"],
        "sigma_J": cfg["sigma_J"], "rotate": cfg["rotate"], "n_trainable": cfg["n_trainable"],
        "untrainable": cfg["untrainable"], "eps_holdout": cfg["eps_holdout"],
        "generator": cfg["generator"], "version": __version__,
        "kernel": res.kernel, "threads": res.threads,
    }
    if "init" in cfg:       # "informed" or "modes" (absent: a random start)
        out["meta"]["init"] = cfg["init"]
    if "model" in cfg:      # the committee-machine family's options (absent: today's model)
        out["meta"]["model"] = cfg["model"]
    if res.modes is not None:   # modes_at: the state a restart of the ODEs starts from
        out["state_at"] = {"alpha": res.modes["alpha"], "modes": {
            k: _exact_nested(res.modes[k]) for k in ("R", "Q", "T")}}
    if res.v is not None:   # readout = "trained": the student readout at each alpha
        out["v"] = _finite_list(res.v, "v")
    if wall_s is not None:
        out["meta"]["wall_s"] = wall_s
    return out


def simulate_spec(spec, progress: bool = False, modes_at: float | None = None) -> dict:
    """Run the simulation(s) a spec describes; returns the JSON-ready result.  ``modes_at``:
    a record point whose mode overlaps each run also returns (``state_at``)."""
    from solvers.sim.simulate import simulate, simulate_many
    options = simulate_options(spec)
    kw = simulate_kwargs(spec, options)
    if modes_at is not None:
        kw["modes_at"] = modes_at
    seeds = options["seeds"]
    started = time.perf_counter()
    if len(seeds) == 1:
        results = [simulate(seed=seeds[0], progress=progress, **kw)]
    else:
        results = simulate_many(seeds, n_jobs=options["n_jobs"], progress=progress, **kw)
    wall = time.perf_counter() - started
    runs = [result_to_json(r) for r in results]
    out = dict(runs[0])
    from solvers.app.spec import resolved_spec
    # the spec as it ran (the [simulate] options resolved): fed back as a .json spec it
    # re-runs to these numbers
    out["meta"] = dict(out["meta"], wall_s=wall, spec=resolved_spec(spec, simulate=options))
    if len(seeds) > 1:
        eps = np.array([r.eps_g for r in results])
        out["ensemble"] = {"seeds": seeds, "eps_g_mean": eps.mean(axis=0).tolist(),
                           "eps_g_std": eps.std(axis=0, ddof=1).tolist(), "runs": runs}
    return out


# ---- subcommands -------------------------------------------------------------------------

def cmd_simulate(args) -> int:
    from solvers.app.cli.common import emit
    spec = load_spec(args.spec, extra_sections=("simulate", "sweep"), sizing=None)
    from solvers.app.simulation import simulate_options
    from solvers.app.sizing import announce, simulate_estimate
    announce(simulate_estimate(spec, simulate_options(spec)))   # refused there when too large
    # on by default: a bar in a terminal, plain lines (one per ~10 %) in a log
    # (solvers.core.progress); several seeds show one display labelled "seeds"
    progress = args.progress if args.progress is not None else True
    emit(simulate_spec(spec, progress=progress), args)
    return 0


def cmd_sweep(args) -> int:
    from solvers.app.sweep import run_sweep
    stats = run_sweep(args.sweep, out=args.out, scheduler=args.scheduler, n_jobs=args.n_jobs,
                      max_cells=args.max_cells, progress=args.progress)
    print(f"{stats['computed']} cell(s) computed, {stats['skipped']} already done, "
          f"{stats['missing']} missing; dataset: {stats['dataset']}")
    return 0


def register(sub) -> None:
    s = spec_command(sub, "simulate", cmd_simulate, "finite-N online SGD for a spec (simulation)",
                     "SPEC.toml (same schema as solve, plus an optional [simulate])")
    s.add_argument("--progress", dest="progress", action="store_true", default=None,
                   help="show progress (default; a bar in a terminal, plain lines in a log)")
    s.add_argument("--no-progress", dest="progress", action="store_false")
    w = sub.add_parser("sweep", help="a resumable grid of simulations and/or ODE solves")
    w.add_argument("sweep", help="SWEEP.toml (a spec plus a [sweep] section)")
    w.add_argument("--out", help="output directory (default: [sweep] out, or SWEEP.sweep)")
    w.add_argument("--scheduler", help="address of a dask.distributed scheduler")
    w.add_argument("--n-jobs", type=int, help="local worker processes (default: all cores)")
    w.add_argument("--max-cells", type=int,
                   help="stop after computing this many cells (the rest on a later run)")
    w.add_argument("--progress", dest="progress", action="store_true", default=None,
                   help="show progress (default; a bar in a terminal, plain lines in a log)")
    w.add_argument("--no-progress", dest="progress", action="store_false")
    w.set_defaults(func=cmd_sweep)
