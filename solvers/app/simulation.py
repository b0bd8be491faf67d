"""The ``[simulate]`` section and the arguments a spec gives ``solvers.sim.simulate``.

Shared by the ``simulate`` subcommand (``solvers.app.cli.simulate``) and sweeps
(``solvers.app.sweep``); it lives outside the CLI so that neither imports the other's module.
"""
from __future__ import annotations

from solvers.app import sections
from solvers.app.sections import SIMULATE_SCHEMA

SIMULATE_KEYS = tuple(SIMULATE_SCHEMA)


def simulate_options(spec) -> dict:
    """The validated ``[simulate]`` section: seeds, n_jobs, n_trainable, untrainable, eps_holdout,
    generator."""
    opts = sections.read(spec, "simulate", SIMULATE_SCHEMA)
    opts["seeds"] = list(opts["seeds"]) if opts["seeds"] is not None else [spec.training.seed]
    N = spec.data.N
    if opts["n_trainable"] is not None and opts["n_trainable"] > (N or 0):
        raise sections.error(spec, "simulate", f"n_trainable = {opts['n_trainable']} must be "
                                              f"an integer between 1 and N = {N}")
    if spec.training.init not in ("random", "informed", "explicit") or (
            spec.training.init == "explicit" and spec.init.basis != "modes"):
        got = spec.training.init if spec.training.init != "explicit" else "explicit [init.levels]"
        raise sections.error(spec, "training", f"simulate needs training.init = \"random\", "
                                              f"\"informed\" or explicit [init.modes] "
                                              f"(got {got!r}): a simulation starts from "
                                              f"drawn weights or from weights with given mode "
                                              f"overlaps")
    from solvers.app.spec import SpecError
    from solvers.app.validate import check_simulate_section, check_simulation
    try:        # caps, step count (int64) and time estimate, before the simulator is called
        check_simulate_section(spec, opts)
        check_simulation(spec, opts)
    except SpecError:
        raise
    except ValueError as e:
        raise SpecError(f"{spec.path}: {' '.join(str(e).split())}") from None
    return opts


def eigenvalues_of(spec) -> list[float]:
    """The spectrum the ODEs use (``solve.spectrum_of``), descending, as float64.

    Computed here in decimal arithmetic at 40 digits and rounded once, rather than through the
    SymPy spectrum: importing SymPy would cost this command about a second of start-up, which is
    as long as a million SGD steps (and mpmath ~50 ms, 1.5 % of the command at its defaults;
    ``decimal`` is built in).  The values are the correctly rounded eigenvalues; the ODE side
    rounds SymPy's evaluation of the same exact numbers, so the two agree to an ulp (checked in
    tests/test_cli_simulate.py).
    """
    from decimal import Decimal, localcontext
    from fractions import Fraction
    d = spec.data
    with localcontext() as ctx:
        ctx.prec = 40
        if d.eigenvalues is not None:
            lam = [Decimal(Fraction(v).numerator) / Decimal(Fraction(v).denominator)
                   for v in d.eigenvalues]
        else:
            beta = Fraction(d.beta)
            e = -(1 + Decimal(beta.numerator) / Decimal(beta.denominator))
            raw = [Decimal(l) ** e for l in range(1, d.L + 1)]
            total = sum(raw, Decimal(0))
            lam = [d.L * r / total for r in raw]
        return sorted((float(v) for v in lam), reverse=True)


def simulate_kwargs(spec, options: dict) -> dict:
    """Arguments of ``solvers.sim.simulate.simulate`` (all but seed) for a spec."""
    m, d, t = spec.model, spec.data, spec.training
    return dict(activation=m.activation, K=m.K, M=m.M, N=d.N, eta=float(t.eta),
                sigma_J=float(t.sigma_J), alphas=_step_grid(spec),
                eigenvalues=eigenvalues_of(spec), rotate=d.rotate,
                n_trainable=options["n_trainable"], untrainable=options["untrainable"],
                eps_holdout=options["eps_holdout"], generator=options["generator"],
                **family_kwargs(spec),
                **_init_kwargs(spec))


def _step_grid(spec) -> list:
    """The [solve] grid for the simulator, which records at whole SGD steps (alpha = round(alpha
    N) / N).  More points than there are steps in [alpha_min, alpha_max] is refused (SpecError);
    points closer than one step (a log grid near alpha_min) are merged, and a warning says how
    many: the result's ``alpha`` lists the points recorded, never silently fewer."""
    import warnings
    import numpy as np
    from solvers.app.spec import SpecError
    grid, N = spec.solve.alpha_grid(), spec.data.N
    if N is None:
        return grid
    # the distinct steps (np.unique would import numpy.ma: ~10 ms of the command's start)
    steps = sorted(set(np.rint(np.asarray(grid, dtype=float) * N).tolist()))
    if len(steps) == len(grid):
        return grid
    s = spec.solve
    what = "alphas" if s.spacing == "explicit" else f"n_points = {s.n_points}"
    available = int(steps[-1] - steps[0]) + 1
    if len(grid) > available:
        raise SpecError(f"{spec.path}: [solve] {what}: the simulation records at whole SGD "
                        f"steps (alpha = steps / N, N = {N}) and alpha {grid[0]:g} .. "
                        f"{grid[-1]:g} holds only {available}; give at most {available} points "
                        f"or a larger N")
    warnings.warn(f"[solve] {what}: {len(grid) - len(steps)} point(s) less than one SGD step "
                  f"(1/N = {1 / N:g}) from their neighbour were merged: the simulation records "
                  f"{len(steps)}", UserWarning, stacklevel=2)
    return grid


def _init_kwargs(spec) -> dict:
    """``init`` of ``simulate``: "informed", or the [init.modes] overlaps as float64 (weights
    with these overlaps, solvers.core.initial.weights_from_modes; exact decimals written by
    ``simulate`` are float64 values, so nothing is rounded)."""
    t = spec.training
    if t.init == "informed":
        return {"init": "informed"}
    if t.init == "explicit":
        return {"init": {k: [[[float(x) for x in row] for row in mat]
                             for mat in getattr(spec.init, k)] for k in ("R", "Q", "T")}}
    return {}


def family_kwargs(spec) -> dict:
    """The committee-machine family's options of a spec as ``simulate`` arguments (only those
    that differ from today's model, so a spec without them runs exactly as before).  Exact
    numbers stay Fractions: the simulator rounds each once (schedule boundaries compared
    exactly in steps)."""
    m, t = spec.model, spec.training
    out = {}
    for key in ("student_activation", "teacher_activation"):
        if getattr(m, key) is not None:
            out[key] = getattr(m, key)
    if m.normalisation != "paper":
        out["normalisation"] = m.normalisation
    for key in ("student_readout", "teacher_readout"):
        if getattr(m, key) is not None:
            out[key] = list(getattr(m, key))
    if m.readout != "fixed":
        out.update(readout=m.readout, eta_readout=t.eta_readout)
        if t.weight_decay_readout:
            out["weight_decay_readout"] = t.weight_decay_readout
    if t.noise:
        out["noise"] = t.noise
    if t.weight_decay:
        out["weight_decay"] = t.weight_decay
    if t.batch_size != 1:
        out["batch_size"] = t.batch_size
    if t.schedule is not None:
        out["schedule"] = {k: (list(v) if isinstance(v, tuple) else v)
                           for k, v in t.schedule_dict().items()}
    return out
