"""``scaling-odes simulate SPEC.toml`` and ``scaling-odes sweep SWEEP.toml``.

``simulate`` runs finite-N online SGD (``solvers.sim.simulate``) for the model, data and training of
a spec (the same file ``solve`` reads) on the spec's ``[solve]`` alpha grid.  Optional section:

    [simulate]
    seeds = [0, 1, 2]        # default: [training.seed]
    n_jobs = 2               # threads for several seeds (default: all cores)
    n_trainable = 100        # only the first N_l eigen-directions are trainable (default: all N)
    untrainable = "zero"     # or "frozen": initial value of the untrainable components
    eps_holdout = 0          # > 0: also estimate eps_g on that many fresh samples per alpha
    generator = "xoshiro"    # training inputs: "xoshiro" (fast, default) or "numpy" (PCG64,
                             # the reference stream)

Keys outside ``[simulate]`` that only matter to the ODEs (``training.order``, ``[solve]`` basis,
dps, digits) are ignored: SGD contains all orders in eta.  ``training.init`` must be "random":
a simulation starts from drawn weights, and its realisation is what ``init`` in the output holds.

Output (JSON), for the first seed:
    alpha, eps_g, R1, Q1, [eps_g_holdout]
    init  {"modes": {"R": L x K x M, "Q": L x K x K, "T": L x M x M}}  the mode overlaps at
          alpha = 0, as *exact* decimal strings of the float64 values.  Pasted into
          ``[init.modes]`` with ``training.init = "explicit"`` they reproduce the state exactly
          at any precision (a TOML float would be read through its shortest repr, which is a
          different rational number).  ``solve`` with init = "random" and the same seed starts
          from the same realisation anyway (``solvers.core.problem.random_init``).
    meta  {steps_per_second, seed, N, ...}
With several seeds, ``ensemble`` adds eps_g_mean, eps_g_std and the per-seed runs.
"""
from __future__ import annotations

import sys
import time
from decimal import Decimal
from fractions import Fraction

import numpy as np

from solvers.app.spec import SpecError, load_spec

# the simulator's input sources, spelled out so that reading a spec does not import numba
GENERATORS = ("xoshiro", "numpy")
SIMULATE_KEYS = ("seeds", "n_jobs", "n_trainable", "untrainable", "eps_holdout", "generator")


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def simulate_options(spec) -> dict:
    """The validated ``[simulate]`` section: seeds, n_jobs, n_trainable, untrainable, eps_holdout,
    generator."""
    raw = spec.extra.get("simulate", {})
    where = f"{spec.path}: [simulate]"
    for k in raw:
        if k not in SIMULATE_KEYS:
            raise SpecError(f"{where} unknown key '{k}' (allowed: {', '.join(SIMULATE_KEYS)})")
    seeds = raw.get("seeds", [spec.training.seed])
    if not isinstance(seeds, list) or not seeds or not all(_is_int(s) and s >= 0 for s in seeds):
        raise SpecError(f"{where} seeds = {seeds!r} must be a non-empty list of integers >= 0")
    if len(set(seeds)) != len(seeds):
        raise SpecError(f"{where} seeds = {seeds!r} contains duplicates")
    n_jobs = raw.get("n_jobs")
    if n_jobs is not None and not (_is_int(n_jobs) and n_jobs >= 1):
        raise SpecError(f"{where} n_jobs = {n_jobs!r} must be an integer >= 1")
    N = spec.data.N
    n_tr = raw.get("n_trainable")
    if n_tr is not None and not (_is_int(n_tr) and 1 <= n_tr <= (N or 0)):
        raise SpecError(f"{where} n_trainable = {n_tr!r} must be an integer between 1 and N = {N}")
    untrainable = raw.get("untrainable", "zero")
    if untrainable not in ("zero", "frozen"):
        raise SpecError(f"{where} untrainable = {untrainable!r} must be one of \"zero\", \"frozen\"")
    hold = raw.get("eps_holdout", 0)
    if not (_is_int(hold) and hold >= 0):
        raise SpecError(f"{where} eps_holdout = {hold!r} must be an integer >= 0")
    generator = raw.get("generator", "xoshiro")
    if generator not in GENERATORS:
        raise SpecError(f"{where} generator = {generator!r} must be one of "
                        + ", ".join(f'"{g}"' for g in GENERATORS))
    if spec.training.init != "random":
        raise SpecError(f"{spec.path}: simulate needs training.init = \"random\" "
                        f"(got {spec.training.init!r}): a simulation starts from drawn weights")
    from solvers.app.validate import check_simulation_steps
    try:        # step count (int64) and time estimate, before the simulator is called
        check_simulation_steps(spec.solve.alpha_grid(), N, len(seeds))
    except ValueError as e:
        raise SpecError(f"{spec.path}: {e}") from None
    return dict(seeds=seeds, n_jobs=n_jobs, n_trainable=n_tr, untrainable=untrainable,
                eps_holdout=hold, generator=generator)


def eigenvalues_of(spec) -> list[float]:
    """The spectrum the ODEs use (``solve.spectrum_of``), descending, as float64.

    Computed here with mpmath at 40 digits and rounded once, rather than through the SymPy
    spectrum: importing SymPy would cost this command about a second of start-up, which is as
    long as a million SGD steps.  The values are the correctly rounded eigenvalues; the ODE side
    rounds SymPy's evaluation of the same exact numbers, so the two agree to an ulp (checked in
    tests/test_cli_simulate.py).
    """
    import mpmath
    d = spec.data
    with mpmath.workdps(40):
        if d.eigenvalues is not None:
            lam = [mpmath.mpf(Fraction(v).numerator) / Fraction(v).denominator
                   for v in d.eigenvalues]
        else:
            beta = Fraction(d.beta)
            e = -(1 + mpmath.mpf(beta.numerator) / beta.denominator)
            raw = [mpmath.mpf(l) ** e for l in range(1, d.L + 1)]
            lam = [d.L * r / mpmath.fsum(raw) for r in raw]
        return sorted((float(v) for v in lam), reverse=True)


def simulate_kwargs(spec, options: dict) -> dict:
    """Arguments of ``solvers.sim.simulate.simulate`` (all but seed) for a spec."""
    m, d, t = spec.model, spec.data, spec.training
    return dict(activation=m.activation, K=m.K, M=m.M, N=d.N, eta=float(t.eta),
                sigma_J=float(t.sigma_J), alphas=spec.solve.alpha_grid(),
                eigenvalues=eigenvalues_of(spec), rotate=d.rotate,
                n_trainable=options["n_trainable"], untrainable=options["untrainable"],
                eps_holdout=options["eps_holdout"], generator=options["generator"])


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
    }
    if wall_s is not None:
        out["meta"]["wall_s"] = wall_s
    return out


def simulate_spec(spec, progress: bool = False) -> dict:
    """Run the simulation(s) a spec describes; returns the JSON-ready result."""
    from solvers.sim.simulate import simulate, simulate_many
    options = simulate_options(spec)
    kw = simulate_kwargs(spec, options)
    seeds = options["seeds"]
    started = time.perf_counter()
    if len(seeds) == 1:
        results = [simulate(seed=seeds[0], progress=progress, **kw)]
    else:
        results = simulate_many(seeds, n_jobs=options["n_jobs"], progress=progress, **kw)
    wall = time.perf_counter() - started
    runs = [result_to_json(r) for r in results]
    out = dict(runs[0])
    out["meta"] = dict(out["meta"], wall_s=wall)
    if len(seeds) > 1:
        eps = np.array([r.eps_g for r in results])
        out["ensemble"] = {"seeds": seeds, "eps_g_mean": eps.mean(axis=0).tolist(),
                           "eps_g_std": eps.std(axis=0, ddof=1).tolist(), "runs": runs}
    return out


# ---- subcommands -------------------------------------------------------------------------

def cmd_simulate(args) -> int:
    from solvers.app.cli.common import emit
    spec = load_spec(args.spec, extra_sections=("simulate", "sweep"))
    progress = args.progress if args.progress is not None else sys.stderr.isatty()
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
    s = sub.add_parser("simulate", help="finite-N online SGD for a spec (simulation)")
    s.add_argument("spec", help="SPEC.toml (same schema as solve, plus an optional [simulate])")
    s.add_argument("-o", "--output", help="write JSON here")
    s.add_argument("--json", action="store_true", help="write compact JSON to stdout")
    s.add_argument("--progress", dest="progress", action="store_true", default=None,
                   help="show a progress bar (default: when stderr is a terminal)")
    s.add_argument("--no-progress", dest="progress", action="store_false")
    s.set_defaults(func=cmd_simulate)
    w = sub.add_parser("sweep", help="a resumable grid of simulations and/or ODE solves")
    w.add_argument("sweep", help="SWEEP.toml (a spec plus a [sweep] section)")
    w.add_argument("--out", help="output directory (default: [sweep] out, or SWEEP.sweep)")
    w.add_argument("--scheduler", help="address of a dask.distributed scheduler")
    w.add_argument("--n-jobs", type=int, help="local worker processes (default: all cores)")
    w.add_argument("--max-cells", type=int,
                   help="stop after computing this many cells (the rest on a later run)")
    w.add_argument("--progress", dest="progress", action="store_true", default=None,
                   help="show a progress bar (default: when stderr is a terminal)")
    w.add_argument("--no-progress", dest="progress", action="store_false")
    w.set_defaults(func=cmd_sweep)
