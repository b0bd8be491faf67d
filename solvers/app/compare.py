"""Theory against simulation for one spec: the ``compare`` subcommand's engine.

One spec drives both.  The simulation runs first (``[simulate]`` section: seeds, generator, …;
``training.init`` must be "random"); then, for every simulated seed, the ODEs are solved for
that seed's realisation (``init = "random"`` draws the simulator's teacher and initial student
for a seed, :func:`solvers.core.problem.random_init`) at exactly the α the simulator recorded
(steps = round(α N), so α = steps / N, not the requested grid), with the spec's ``[solve]``
precision.  Nothing is interpolated; the cost is one ODE solve per seed.

The deviation.  SGD at finite N fluctuates around the ODE of its own realisation by
O(N^-1/2) *relative* to the curve (the order parameters are averages over N directions; near
perfect learning the gradient noise vanishes with the error, so the fluctuation shrinks with
ε_g itself).  The measure is therefore the relative one, the vertical distance on the log-log
plot::

    rms_deviation = sqrt( mean over seeds and α of ((ε_sim - ε_theory) / ε_theory)^2 )

(each seed against the theory of its own realisation), compared with
``finite_size_scale = 3 / sqrt(N)``; ``within`` says whether it is below.  Pooling over seeds
keeps the single-run scale (more seeds do not shrink it).  The absolute RMS is reported too
(``rms_absolute``); it is not the criterion: ε_g is O(0.1) for erf and 3/√N is 0.19 at
N = 256, so no curve could fail an absolute test.  Measured: rms_deviation · √N ≈ 0.6 on
average, at most 1.24 over 12 seeds each at N = 128 … 1024 (erf K = M = 2, L = 4, η = 0.5,
σ_J = 0.1, α ≤ 10; ``tests/test_compare.py``), so 3/√N leaves room for seed-to-seed spread,
while halving η in the theory gives ≥ 7/√N at N = 512.

The plateau escape is exponentially sensitive to fluctuations: across it the relative
deviation is no longer O(N^-1/2), and ``within`` may be false for a correct theory.  Compare
before the escape, with several seeds and read the band, or restart.

The restart (``[compare] restart_alpha = α0``). The simulator also keeps each seed's mode
overlaps R, Q, T at α0 (α0 is added to its record points if the grid misses it; it records at
whole steps, α0 = round(α0 N) / N), and the ODEs are solved a second time per seed, from that
state, for α ≥ α0: the curve a theory predicts *given* the run's state at α0. ``rms_deviation``
and ``within`` are then those of the restarted curves over α > α0 (at α0 the two agree by
construction); ``restart.from_start`` holds the deviation of the ODE from the initial weights
over the same α, for contrast. Before α0 there is no restarted curve. A time-dependent learning
rate (``schedule``) or a trained readout is refused with a restart: the first would need the
schedule shifted by α0, the second the readout at α0, and neither is carried.
"""
from __future__ import annotations

import dataclasses
import math
import time

import numpy as np

SCALE_FACTOR = 3.0
RESTART = ("restart at alpha0 = {a0:g}: restart.eps_g_runs[s] is the ODE solved from seed s's "
           "simulated mode overlaps at alpha0, a prediction for alpha > alpha0 only; "
           "rms_deviation and within are over alpha > alpha0; theory is the ODE from the "
           "initial weights (restart.from_start: its deviation over the same alpha)")
DEVIATION = "sqrt(mean over seeds and alpha of ((eps_sim - eps_theory) / eps_theory)^2)"


def restart_alpha(spec) -> float | None:
    """The validated ``[compare] restart_alpha`` as the α the simulator records (whole SGD
    steps), or None (no restart).  Bad values raise SpecError (one line)."""
    from solvers.app import sections
    a0 = sections.read(spec, "compare", sections.COMPARE_SCHEMA)["restart_alpha"]
    if a0 is None:
        return None
    knob = f"restart_alpha = {a0:g}"
    grid, N, t = spec.solve.alpha_grid(), spec.data.N, spec.training
    if N is None:
        raise sections.error(spec, "compare", f"{knob} needs [data] N (the simulation's size)")
    steps = round(a0 * N)
    if steps < 1:
        raise sections.error(spec, "compare", f"{knob} is less than one SGD step (1/N = "
                                              f"{1 / N:g}): the restart needs a simulated state")
    if steps >= round(max(grid) * N):
        raise sections.error(spec, "compare", f"{knob} must be below the last alpha of [solve] "
                                              f"({max(grid):g}): nothing left to compare after it")
    if t.schedule is not None:
        raise sections.error(spec, "compare", f"{knob} with [training] schedule is not "
                                              f"supported (the ODEs would need the schedule "
                                              f"shifted by alpha0); remove one of them")
    if spec.model.readout != "fixed":
        raise sections.error(spec, "compare", f"{knob} with [model] readout = "
                                              f"\"{spec.model.readout}\" is not supported (the "
                                              f"restart carries R, Q, T, not the readout)")
    return steps / N


def _with_record_point(spec, a0: float):
    """The spec whose [solve] grid also holds α0 (unchanged when its step is recorded anyway)."""
    grid, N = spec.solve.alpha_grid(), spec.data.N
    if round(a0 * N) in {round(a * N) for a in grid}:
        return spec
    alphas = tuple(sorted((*grid, a0)))
    return dataclasses.replace(spec, solve=dataclasses.replace(
        spec.solve, alphas=alphas, alpha_max=None, alpha_min=None, n_points=len(alphas),
        spacing="explicit"))


def compare_spec(spec, progress: bool = False) -> dict:
    """Simulate, then solve every seed's realisation at the simulated α (and, with
    ``[compare] restart_alpha``, every seed's simulated state at α0); the JSON-ready
    comparison (keys in :mod:`solvers.app.cli.compare`)."""
    from solvers import __version__
    from solvers.app.cli.simulate import simulate_spec
    from solvers.app.solve import _refuse_family_options
    _refuse_family_options(spec)        # before the simulation, not after it
    a0 = restart_alpha(spec)
    if a0 is not None:
        spec = _with_record_point(spec, a0)
    started = time.perf_counter()
    sim = simulate_spec(spec, progress=progress, modes_at=a0)
    alphas = tuple(float(a) for a in sim["alpha"])
    runs = sim["ensemble"]["runs"] if "ensemble" in sim else [sim]
    seeds = [r["meta"]["seed"] for r in runs]
    theories = [_solve_seed(spec, seed, alphas, progress) for seed in seeds]
    eps_th = [[float(e) for e in t["eps_g"]] for t in theories]
    eps_sim = [r["eps_g"] for r in runs]
    out = {"alpha": list(alphas), "theory": theories[0], "simulation": sim}
    if len(seeds) > 1:
        out["theory_ensemble"] = {"seeds": seeds, "eps_g_runs": [t["eps_g"] for t in theories]}
    if a0 is None:
        out.update(_judged(eps_th, eps_sim, alphas, spec.data.N))
    else:
        restarted = [_restart_seed(spec, r, alphas, progress) for r in runs]
        k0 = alphas.index(a0)
        # over alpha > alpha0: at alpha0 the restarted curve starts from the run's own state
        curve = lambda e: [float(x) for x in e[1:]]                  # noqa: E731
        late_sim = [r[k0 + 1:] for r in eps_sim]
        out["restart"] = {
            "alpha0": a0, "alpha": list(alphas[k0:]), "theory": restarted[0],
            "eps_g_runs": [t["eps_g"] for t in restarted],
            # the ODE from the initial weights over the same alpha > alpha0
            "from_start": _from_start([e[k0 + 1:] for e in eps_th], late_sim, alphas[k0:],
                                      spec.data.N),
            # the restarted ODE's eps_g at alpha0 against the run's: rounding only
            "eps_g_alpha0_mismatch": max(abs(float(t["eps_g"][0]) - r[k0])
                                         for t, r in zip(restarted, eps_sim, strict=True))}
        out.update(_judged([curve(t["eps_g"]) for t in restarted], late_sim, alphas[k0 + 1:],
                           spec.data.N))
    from solvers.theory.exponent import late_exponent
    # the theory's fit is the first seed's (in "theory"); the simulation's, of the seeds' mean
    sim_eps = sim["ensemble"]["eps_g_mean"] if "ensemble" in sim else sim["eps_g"]
    out["late_exponent"] = {"theory": theories[0]["late_exponent"],
                            "simulation": late_exponent(alphas, sim_eps)}
    if "v" in theories[0] and all("v" in r for r in runs):
        # a trained readout: the learned v against the simulation's, absolute (v is O(1))
        diff = [np.asarray(r["v"], float) - np.asarray(t["v"], float)
                for t, r in zip(theories, runs)]
        out["v_rms_absolute"] = float(np.sqrt(np.mean([np.mean(d ** 2) for d in diff])))
    verified = [t["meta"].get("agreement_digits") for t in theories]
    out["meta"] = {"version": __version__, "N": spec.data.N, "seeds": seeds,
                   # the theory's route and the digits every seed's solve verified
                   "route": theories[0]["meta"]["route"],
                   **({"agreement_digits": min(verified)} if None not in verified else {}),
                   "deviation": DEVIATION, "finite_size_scale": f"{SCALE_FACTOR:g}/sqrt(N)",
                   **({"restart": RESTART.format(a0=a0)} if a0 is not None else {}),
                   "wall_s": time.perf_counter() - started,
                   # the spec as it ran, [simulate] resolved: fed back, it re-runs to these numbers
                   "spec": sim["meta"]["spec"]}
    return out


def _learned_at(eps_theory) -> int:
    """How many leading points every theory curve is above 0: a student that learns its teacher
    reaches its end of learning (ε_g held and reported as 0), after which a relative deviation
    has no digit to compare while the runs still fluctuate at O(1/√N) of nothing."""
    n = len(eps_theory[0])
    return next((i for i in range(n) if min(e[i] for e in eps_theory) <= 0), n)


def _judged(eps_theory, eps_runs, alphas, N: int) -> dict:
    """:func:`deviation` over the α up to the theory's end of learning, and ``judged_alpha_max``,
    the last α it covers (every α when no theory curve reaches 0); ValueError when the theory
    is at its end of learning from the first α on (nothing to judge)."""
    k = _learned_at(eps_theory)
    if k == 0:
        raise ValueError(f"the theory's eps_g is 0 (the end of learning) from alpha = "
                         f"{alphas[0]:g} on: no relative deviation to judge")
    return {**deviation([e[:k] for e in eps_theory], [r[:k] for r in eps_runs], N),
            "judged_alpha_max": alphas[k - 1]}


def _from_start(eps_theory, eps_runs, alphas, N: int) -> dict:
    """The contrast of a restart: the deviation of the ODE from the initial weights over the
    α after α0 (``alphas[0]``) up to ``alpha_max``, the last α where every seed's curve is
    above 0 (α0 itself when none is); the restarted comparison is the one the run is judged
    by."""
    k = _learned_at(eps_theory)
    out = {"alpha_max": alphas[k]}
    if k:
        out.update(deviation([e[:k] for e in eps_theory], [r[:k] for r in eps_runs], N))
    return out


def _restart_seed(spec, run: dict, alphas: tuple, progress: bool) -> dict:
    """``solve`` from the mode overlaps ``run`` recorded at α0, at the recorded α ≥ α0 (the
    ODEs are autonomous without a schedule: solved on α - α0, reported on α)."""
    from fractions import Fraction
    from solvers.app.solve import solve_spec
    from solvers.app.spec import InitSpec
    from solvers.core.progress import Progress
    state = run["state_at"]
    a0 = state["alpha"]

    def exact(a):           # the run's exact decimals of float64 values, as the schema holds them
        return tuple(exact(x) for x in a) if isinstance(a, list) else Fraction(a)
    init = InitSpec("modes", *(exact(state["modes"][k]) for k in ("R", "Q", "T")))
    later = alphas[alphas.index(a0):]
    shifted = tuple(a - a0 for a in later)
    one = dataclasses.replace(
        spec, init=init,
        training=dataclasses.replace(spec.training, init="explicit", seed=run["meta"]["seed"]),
        solve=dataclasses.replace(spec.solve, alphas=shifted, alpha_max=None, alpha_min=None,
                                  n_points=len(shifted), spacing="explicit"))
    seed = run["meta"]["seed"]
    out = solve_spec(one, progress=Progress(f"restart (seed {seed})", enabled=bool(progress)))
    out["alpha"] = list(later)
    out["meta"] = dict(out["meta"], alpha0=a0)
    return out


def _solve_seed(spec, seed: int, alphas: tuple, progress: bool) -> dict:
    """``solve`` of the realisation of ``seed`` at exactly ``alphas``."""
    from solvers.app.solve import solve_spec
    one = dataclasses.replace(
        spec, training=dataclasses.replace(spec.training, seed=seed),
        solve=dataclasses.replace(spec.solve, alphas=alphas, alpha_max=None, alpha_min=None,
                                  n_points=len(alphas), spacing="explicit"))
    from solvers.core.progress import Progress
    # one labelled phase per run of the precision policy, as in ``solve``
    return solve_spec(one, progress=Progress(f"solve (seed {seed})", enabled=bool(progress)))


def deviation(eps_theory, eps_runs, N: int) -> dict:
    """``rms_deviation`` (relative, pooled over runs and α), ``rms_deviation_per_seed``,
    ``rms_absolute``, ``finite_size_scale`` = 3/√N and ``within``.

    ``eps_theory``: one curve for all runs, or one per run (each run's own realisation);
    ``eps_runs``: one simulated curve per run, on the same α.

    Examples
    --------
    >>> d = deviation([0.2, 0.1], [[0.21, 0.1]], N=100)
    >>> round(d["rms_deviation"], 4), d["finite_size_scale"], d["within"]
    (0.0354, 0.3, True)
    """
    sims = np.atleast_2d(np.asarray(eps_runs, dtype=float))
    th = np.asarray(eps_theory, dtype=float)
    if th.ndim == 1 and th.size == sims.shape[1]:
        th = np.broadcast_to(th, sims.shape)
    if th.shape != sims.shape:
        raise ValueError(f"theory {np.shape(eps_theory)} and simulation {sims.shape} curves "
                         f"do not match (one theory, or one per run, on the same alpha)")
    if not np.all(th > 0):
        raise ValueError("eps_g of the theory must be > 0 for a relative deviation")
    from solvers.app.deviation import rms_relative
    scale = SCALE_FACTOR / math.sqrt(N)
    rms = rms_relative(sims, th)
    return {
        "rms_deviation": rms,
        "rms_deviation_per_seed": rms_relative(sims, th, axis=1).tolist(),
        "rms_absolute": float(np.sqrt(np.mean((sims - th) ** 2))),
        "finite_size_scale": scale,
        "within": bool(rms <= scale),
    }


def plot_compare(result: dict, ax=None):
    """Theory line, simulation points (one seed) or mean with a ±1 std band (several seeds),
    log-log over α > 0.  Returns the Axes."""
    if ax is None:
        import matplotlib.pyplot as plt
        _, ax = plt.subplots(figsize=(5.5, 4))
    a = np.asarray(result["alpha"], dtype=float)
    sim = result["simulation"]
    pos = a > 0
    if "ensemble" in sim:
        th = np.array([[float(e) for e in run] for run in
                       result["theory_ensemble"]["eps_g_runs"]]).mean(axis=0)
        mean = np.asarray(sim["ensemble"]["eps_g_mean"])
        std = np.asarray(sim["ensemble"]["eps_g_std"])
        n = len(sim["ensemble"]["seeds"])
        ax.loglog(a[pos], th[pos], "-", color="C0", lw=1.6,
                  label=f"ODE theory (mean over the {n} realisations)")
        lo = np.maximum(mean - std, mean * 1e-3)
        ax.fill_between(a[pos], lo[pos], (mean + std)[pos], color="C1", alpha=0.3, lw=0,
                        label=f"simulation ±1 std ({n} seeds)")
        ax.loglog(a[pos], mean[pos], "o", ms=3, color="C1", label="simulation mean")
    else:
        th = np.array([float(e) for e in result["theory"]["eps_g"]])
        ax.loglog(a[pos], th[pos], "-", color="C0", lw=1.6, label="ODE theory")
        eps = np.asarray(sim["eps_g"])
        ax.loglog(a[pos], eps[pos], "o", ms=3, color="C1",
                  label=f"simulation (seed {sim['meta']['seed']})")
    if "restart" in result:
        r = result["restart"]
        ar = np.asarray(r["alpha"], dtype=float)
        for k, run in enumerate(r["eps_g_runs"]):
            ax.loglog(ar, [float(e) for e in run], "--", color="C2", lw=1.2,
                      label=f"ODE restarted at alpha0 = {r['alpha0']:g}" if k == 0 else None)
    N = result["meta"]["N"]
    ax.set_xlabel(r"$\alpha$")
    ax.set_ylabel(r"$\epsilon_g$")
    ax.set_title(f"N = {N}: rms rel. deviation {result['rms_deviation']:.3g} "
                 f"{'<=' if result['within'] else '>'} 3/sqrt(N) = "
                 f"{result['finite_size_scale']:.3g}", fontsize=9)
    ax.legend(fontsize=8)
    return ax
