"""``scaling-odes compare SPEC.toml [-o out.json] [--plot out.png]``: ODE theory against
finite-N simulation for one spec (the engine and the deviation measure:
:mod:`solvers.app.compare`).

The spec is the one ``solve`` and ``simulate`` read, with ``training.init = "random"`` and an
optional ``[simulate]`` section (seeds, generator, n_jobs, …).  JSON keys: ``alpha`` (the α the
simulator recorded), ``theory`` (the ``solve`` JSON at those α for the first seed's
realisation), ``simulation`` (the ``simulate`` JSON), with several seeds ``theory_ensemble``
(``seeds``, ``eps_g_runs``: the theory of each seed's realisation), ``rms_deviation``
(relative, each seed against its own theory, pooled), ``rms_deviation_per_seed``,
``rms_absolute``, ``finite_size_scale`` (3/√N), ``within``, ``judged_alpha_max`` (the last α
these cover: up to the theory's end of learning, where its ε_g is held at 0), ``v_rms_absolute`` (a trained
readout: RMS of v_sim − v_theory over seeds, α and units), ``meta``.

With ``[compare] restart_alpha = α0`` the ODEs are also solved from each seed's simulated mode
overlaps at α0: ``restart`` (``alpha0``, ``alpha`` ≥ α0, ``theory``: the first seed's restarted
``solve`` JSON, ``eps_g_runs``, ``from_start``: the deviation of the ODE from the initial weights
over α > α0 up to its ``alpha_max``, the last α before that ODE's end of learning (ε_g = 0),
``eps_g_alpha0_mismatch``); ``rms_deviation`` and ``within`` are the restarted
curves' over α > α0, ``meta.restart`` says so, and each simulated run has ``state_at`` (the
mode overlaps at α0 as exact decimals).
"""
from __future__ import annotations

from solvers.app.cli.common import emit, spec_command


def cmd_compare(args) -> int:
    from solvers.app.compare import compare_spec, restart_alpha
    from solvers.app.spec import load_spec
    spec = load_spec(args.spec, extra_sections=("simulate", "compare"))
    from solvers.app.simulation import simulate_options
    from solvers.app.sizing import compare_estimate, sized
    sized(compare_estimate(spec, simulate_options(spec), restart_alpha(spec)), str(args.spec))
    # on by default, as in simulate: a bar in a terminal, plain lines in a log
    progress = args.progress if args.progress is not None else True
    result = compare_spec(spec, progress=progress)
    if args.plot:
        save_plot(result, args.plot)
    emit(result, args)
    return 0


def save_plot(result: dict, path) -> None:
    """The comparison figure as a file (PNG, PDF, SVG by the suffix); no display needed."""
    from matplotlib.figure import Figure

    from solvers.app.compare import plot_compare
    fig = Figure(figsize=(5.5, 4), layout="constrained")
    plot_compare(result, fig.add_subplot())
    fig.savefig(path, dpi=120)


def register(sub) -> None:
    p = spec_command(sub, "compare", cmd_compare,
                     "ODE theory vs finite-N simulation of one spec: curves, plot, deviation",
                     "SPEC.toml (same schema as solve, init = \"random\", optional [simulate])")
    p.add_argument("--plot", metavar="FILE", help="write the theory/simulation figure here")
    p.add_argument("--progress", dest="progress", action="store_true", default=None,
                   help="show progress (default; a bar in a terminal, plain lines in a log)")
    p.add_argument("--no-progress", dest="progress", action="store_false")
