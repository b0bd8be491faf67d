"""One sizing model for the work of ``solve``, ``simulate``, ``compare``, ``sweep`` and
``onestep-sim`` (and, by :func:`work_estimate`, the announcement of the closed-form and
linearisation subcommands from their own laws in :mod:`solvers.app.validate`): the route
that will run, its precision, and the CPU time, wall time and memory it is expected to take.

The same numbers announce a run (one line on stderr before it starts, :func:`announce`) and
refuse one beyond the limits (:func:`check`, ``SCALING_ODES_MAX_HOURS`` /
``SCALING_ODES_MAX_MEMORY_GB`` of :mod:`solvers.app.validate`), so an announcement and a
refusal cannot disagree.

The constants are measured CPU seconds of whole ``scaling-odes solve`` processes on this machine
class (AMD EPYC, two cores shared with other work; BENCHMARKS.md, "Sizing model"), fitted as

* a start-up of ``START_CPU`` (interpreter, NumPy, mpmath, python-flint);
* the exact spectrum (``validate.spectrum_seconds``) and, for a system not checked in or
  cached, its generation (``solvers.core.codegen_time``);
* the ODE solve by route: the plan of ``solvers.hierarchy.precision.plan`` itself
  (:func:`plan_of`, the spec's facts; the solve makes the same plan from its problem), its
  route, precisions and tolerances:

  - ``modes/float64/rodas4`` (the stiff pair, RODAS4 at 10^-(digits+3) and 10x tighter): its
    step count grows like ln(1 + η α_max) and rtol^(-1/4) and barely with L; a step costs
    milliseconds (the reduced Woodbury solve, the η² source's I4 terms);
  - ``modes/float64/rk78`` (the pair at 1e-13 and 1e-15): explicit, so its step count follows
    the stiffness η λ_1 α_max (a power 0.67 fits: the step is stability-bound only part of
    the time); 13 right-hand sides a step;
  - ``*/flint/taylor/settle`` (arbitrary precision, a pair at dps and a quarter more): the
    Taylor series is explicit too, so beyond a few tens of steps (ln(1 + η α_max)) its step
    count follows the stiffness, η λ_1 α_max / 13 at order 21; each step a jet of order ~1.2 x
    the tolerance's digits over L x n entries at that precision.

Where the pair runs in two processes at once (``background.concurrent_allowed``) the wall time
is that of the tighter run; otherwise the CPU time.  The wall times assume the CPUs are free: on
a loaded machine they stretch by the load, the CPU times do not.
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass

# CPU seconds of starting a subcommand that solves (Python, NumPy, mpmath, flint, the spec)
START_CPU = 1.0
# resident memory of that process before the work (MiB): the imports and the interpreter
BASE_MIB = 150.0

# modes/float64/rodas4: steps of the check run = RODAS_STEPS ln(1 + η α_max)
# (rtol / 1e-10)^(-1/4) (n / 7)^RODAS_N_STEPS; seconds a step = RODAS_STEP (1 + L /
# RODAS_L) (n / 7)^RODAS_N_COST, a third of it without the η² source (order = 1).  Measured:
# erf K = M = 2, L = 16, 64, 256, α_max = 300, 2000, η = 0.1, 0.5 (1196 .. 1933 steps, 4.1 ..
# 5.6 ms a step), K = M = 3 (n = 15: 1.32x the steps, 1.48x the cost a step), order 1 1.5 ms.
RODAS_STEPS, RODAS_N_STEPS = 300.0, 0.37
RODAS_STEP, RODAS_L, RODAS_N_COST, RODAS_ORDER1 = 4.0e-3, 600.0, 0.5, 0.37
# the first run of a pair at 10x (rodas4) / 100x (rk78) the tolerance of the check: order 4
# and 8 both give it 10^(-1/4) = 100^(-1/8) = 0.56 of the check's steps
FIRST_RUN_SHARE = 0.56

# modes/float64/rk78: steps of the check run = RK_STEPS (η λ_1 α_max)^RK_POWER, 13 right-hand
# sides a step at RK_FEVAL (1 + L / RK_L) (n / 7) seconds; the family's variants (label noise,
# weight decay, batches, other activations) RK_FAMILY times that.  Measured: erf K = M = 2, L =
# 1 .. 64, η λ_1 α_max = 140 .. 3900 (380 .. 3578 steps; 83 .. 95 µs a right-hand side); label
# noise at L = 16: 131 µs.
RK_STEPS, RK_POWER, RK_FEVAL, RK_L, RK_FAMILY = 13.9, 0.67, 85e-6, 600.0, 1.5
# A ReLU student: its right-hand side costs RELU_FEVAL_N n (the printed coefficients'
# arcsines and square roots, ~2.7x erf's per state variable) plus RELU_ORTHANT for each call of
# the four-field orthant probability (compiled float64 quadrature), which the printed
# coefficients make far more often than n grows: relu_orthant_calls(K, M) times (2, 27, 132 at
# K = M = 2, 3, 4).  Fitted to in-process solves (relu/relu, L = 1, η = 0.5, σ_J = 0.3, 12
# points; ms a right-hand side of the pair): 0.24 at K = M = 2 (α ≤ 300), 1.27 at 3 (α ≤ 800),
# 4.7 at 4 (α ≤ 1000).  (Before the compiled quadrature: 2.5, 38 and 180 ms, the old
# n-linear factor 17x and 44x low at K = 3, 4.)  A ReLU teacher of another student makes no
# orthant calls (erf/relu: 0.16 ms a right-hand side, the family's cost).  Its steps do not
# follow erf's stiffness law at L = 1: they grow linearly in η λ_1 α_max and every output point
# costs one (the steps land on them): RELU_STEPS0 + η λ_1 α_max / RELU_STEP_X + n_points,
# measured for the check run: K = M = 2 to α = 30 at 12, 20 and 200 points 40, 46, 259 steps,
# to its end of learning α = 221, 90; K = M = 3 to α = 100, 67, to α = 760, 247; K = M = 4 to
# α = 908, 273.  A noise-free student that reaches its end of learning is held from there
# without steps (meta.converged_at_alpha), where this law, counting to α_max, is an upper
# bound.  RELU_START: numba and the compiled kernels' load in the process (1.4 s measured).
RELU_FEVAL_N, RELU_ORTHANT = 32e-6, 29e-6
RELU_STEPS0, RELU_STEP_X = 20.0, 1.5
RELU_START = 1.5
# the steps at the plan's tolerance against the fit's (5 digits: rtol 1e-10): the default
# digits run the pair at 1e-13 and 1e-15, 2.3-4.5x the CPU of whole processes (K = M = 3, 4
# to α = 800, 1000: 43 and 103 s); a power of -1/6, not RK7(8)'s -1/8 (the right-hand side is
# only piecewise smooth).  Not modelled: near its end of learning a run at the default digits
# takes far more steps than this law (the covariance turns singular): K = M = 2 to α = 269
# 2466 steps against 90 at 5 digits, K = M = 3 to α = 579 2780 against 247; whole processes
# there measured 2.1x (K = M = 2, α ≤ 300) and 1.7x (K = M = 3, α ≤ 800) the estimate.
RELU_RTOL_POWER = -1 / 6


def relu_orthant_calls(K: int, M: int) -> int:
    """Calls of the four-field orthant probability in the printed ``coefficients`` of a ReLU
    student (relu/relu; a ReLU student of another teacher makes no more of them).  They come
    from the η² term's ⟨θ(x_i) θ(x_j) relu(u_a) relu(u_b)⟩ over four distinct fields: each
    student pair i < j with an ordered pair of the other K + M - 2 fields, less the
    K(K-1)(K-2)/2 M that the printer's common subexpressions share.  Counted in the printed
    modules (relu/relu K, M = 2..4 x 1..4 and 3, 4; tests/test_sizing.py checks two)."""
    m = K + M - 2
    return K * (K - 1) // 2 * m * (m - 1) - M * K * (K - 1) * (K - 2) // 2


# */flint/taylor/settle: steps of a run = TAYLOR_STEPS ln(1 + η α_max) + η λ_1 α_max
# TAYLOR_STIFF / p, a jet of order p = 1.2 digits(rtol) + 3.5 over L n entries: TAYLOR_STEP +
# TAYLOR_ENTRY p L n (1 + dps / 100)^1.6 seconds (the last factor: a multiplication at that
# precision).  Measured: erf K = M = 2, modes L = 4, 16 and levels L = 4, 8, α_max = 100 ..
# 2000, 6 and 12 digits (32 .. 779 steps; 779 at L = 16, η = 0.5, α_max = 2000: stability).
TAYLOR_STEPS, TAYLOR_STIFF, TAYLOR_STEP, TAYLOR_ENTRY = 7.0, 21 / 13, 3e-3, 6.9e-6
# A ReLU student's jets (its level-1 coefficients: arcsines, square roots and the orthant
# probability's series, at order p) add TAYLOR_RELU p n seconds to a step of each run, whatever
# L.  Measured (relu/relu, L = 1, 5 digits, dps = "auto" levels, the verifying pair, steps
# between alpha = 5 and 50): 0.30 s a step of the pair at K = M = 2, 0.95 at 3 and 4 (the
# erf model above says 3-5 ms).
TAYLOR_RELU = 1.5e-3
# simulate starts without SymPy or flint
SIM_START_CPU = 0.35
# a sweep's own process: the spec stack, xarray and writing the dataset (measured: 4 small cells
# in one process took 3.4 s CPU, 0.7 s of them the cells)
SWEEP_START = 2.5

# an estimate of at least this many seconds is announced (shorter runs stay quiet)
ANNOUNCE_FROM = 2.0


@dataclass(frozen=True)
class Estimate:
    """What a run is expected to take.  ``route``: the route that will run (as ``meta.route``
    names it); ``precision``: its arithmetic and the digits it verifies; ``cpu_s``, ``wall_s``:
    seconds on a free machine; ``bytes``: peak resident memory."""

    command: str
    route: str
    precision: str
    cpu_s: float
    wall_s: float
    bytes: float

    def line(self) -> str:
        from solvers.core.codegen_time import describe
        return (f"scaling-odes: {self.command}: {self.route}, {self.precision}: about "
                f"{describe(self.wall_s)} ({describe(self.cpu_s)} CPU) and "
                f"{_mib(self.bytes)} expected")

    def __add__(self, other: "Estimate") -> "Estimate":
        return Estimate(self.command, f"{self.route} + {other.route}", self.precision,
                        self.cpu_s + other.cpu_s, self.wall_s + other.wall_s,
                        max(self.bytes, other.bytes))


def _mib(b: float) -> str:
    return f"{b / 2 ** 30:.3g} GiB" if b >= 2 ** 30 else f"{b / 2 ** 20:.0f} MiB"


def _n(K: int, M: int) -> int:
    return K * M + K * (K + 1) // 2


def top_eigenvalue(spec) -> float:
    """λ_1 of the spec's spectrum in float64 (mean 1 over the L levels)."""
    d = spec.data
    if d.eigenvalues is not None:
        return float(max(d.eigenvalues))
    import numpy as np
    raw = np.arange(1, d.L + 1, dtype=float) ** -(1 + float(d.beta))
    return float(d.L / raw.sum())


def plan_of(spec):
    """The precision plan of the spec's solve (``precision.plan``), from the spec's facts: L,
    a ReLU activation, whether the stiff modes solver can run it (``precision.fast_solver_runs``:
    a random, expected or modes initial condition, the original model and training, a constant
    η) and its stiffness η λ_1.  ValueError (one line) for a request the arithmetic cannot
    meet."""
    from solvers.hierarchy import precision
    m, d, s, t = spec.model, spec.data, spec.solve, spec.training
    key = m.system_key()
    plain = t.noise == 0 and t.weight_decay == 0 and t.batch_size == 1
    init_basis = "modes" if spec.init is None else spec.init.basis
    return precision.plan(s.basis, s.dps, s.digits, d.L, relu=precision.is_relu(key),
                          stiffness=float(t.eta) * top_eigenvalue(spec),
                          fast_solver=precision.fast_solver_runs(key, plain,
                                                                 t.schedule is not None,
                                                                 init_basis))


def working_dps(plan) -> int | str:
    """The precision a plan's first run works at: "float64" or its dps."""
    return "float64" if plan.arithmetic == "float64" else plan.dps


def _concurrent() -> bool:
    from solvers.hierarchy import background
    return background.concurrent_allowed()


def solve_estimate(spec, alpha_max: float | None = None, n_points: int | None = None,
                   command: str = "solve", start: bool = True) -> Estimate:
    """The ODE solve of ``spec`` (its ``[solve]`` grid, or ``alpha_max`` / ``n_points``)."""
    from solvers.app.validate import _bytes_per_number, spectrum_seconds
    m, d, s, t = spec.model, spec.data, spec.solve, spec.training
    grid = None if alpha_max is not None else spec.solve.alpha_grid()
    top = float(alpha_max if alpha_max is not None else grid[-1])
    points = n_points or s.n_points
    n, L, eta = _n(m.K, m.M), d.L, float(t.eta)
    order_factor = 1.0 if t.order == 2 else RODAS_ORDER1
    family = not (m.system_key().is_plain() and t.noise == 0 and t.weight_decay == 0
                  and t.batch_size == 1)
    setup = (START_CPU if start else 0.0) + spectrum_seconds(L, d.beta)
    second_share = 1.0 / (1.0 + FIRST_RUN_SHARE)
    plan = plan_of(spec)
    dps = working_dps(plan)
    if plan.faster is not None:
        fast = plan.faster
        rtol = fast.check.rtol
        steps = RODAS_STEPS * math.log1p(eta * top) * (rtol / 1e-10) ** -0.25 \
            * (n / 7) ** RODAS_N_STEPS
        per = RODAS_STEP * (1 + L / RODAS_L) * (n / 7) ** RODAS_N_COST * order_factor
        ode = steps * (1 + FIRST_RUN_SHARE) * per
        route, prec = fast.route, f"float64, {s.digits} digits verified"
    elif plan.arithmetic == "float64":
        x = eta * top_eigenvalue(spec) * top
        relu = "relu" in (m.student, m.teacher)
        per = 13 * RK_FEVAL * (1 + L / RK_L) * (n / 7) * (RK_FAMILY if family else 1.0)
        if m.student == "relu":
            steps = (RELU_STEPS0 + x / RELU_STEP_X) * (plan.rtol / 1e-10) ** RELU_RTOL_POWER \
                + points
            # fitted on relu/relu itself: the family's factor only for its training options
            options = not (t.noise == 0 and t.weight_decay == 0 and t.batch_size == 1)
            per = 13 * (RELU_FEVAL_N * (1 + L / RK_L) * n * (RK_FAMILY if options else 1.0)
                        + RELU_ORTHANT * relu_orthant_calls(m.K, m.M))
        else:
            steps = RK_STEPS * max(x, 1.0) ** RK_POWER
        ode = steps * (1 + FIRST_RUN_SHARE) * per + (RELU_START if relu else 0.0)
        route, prec = plan.route, f"float64, {s.digits} digits verified"
    else:
        dps2 = plan.check.dps if plan.verify == "fixed" else plan.ladder[0].check.dps
        # the Taylor model's order from the tolerance's digits (digits + 3)
        rtol_digits = round(-math.log10(plan.rtol))
        p = 1.2 * rtol_digits + 3.5
        steps = TAYLOR_STEPS * max(math.log1p(eta * top), 1.0) + \
            eta * top_eigenvalue(spec) * top * TAYLOR_STIFF / p
        entries = L * n * (1.5 if family else 1.0)
        relu_jets = TAYLOR_RELU * p * n if m.student == "relu" else 0.0
        ode = sum(steps * (TAYLOR_STEP + p * entries * TAYLOR_ENTRY * (1 + q / 100) ** 1.6
                           + relu_jets) for q in (dps, dps2))
        route, prec = plan.route, \
            f"arbitrary precision from {dps} digits, {s.digits} digits verified"
        second_share = (1 + dps2 / 100) ** 1.6 / ((1 + dps / 100) ** 1.6 + (1 + dps2 / 100) ** 1.6)
    gen = _generation_seconds(spec) if not route.endswith("rodas4/tighter") else 0.0
    cpu = setup + gen + ode
    wall = setup + gen + (ode * second_share if _concurrent() else ode)
    state = L * (n + m.M * (m.M + 1) // 2)
    mem = BASE_MIB * 2 ** 20 + (points + 30) * state * _bytes_per_number(dps) * 2 \
        + _generation_bytes(spec, gen)
    return Estimate(command, route, prec, cpu, wall, mem)


def _generation_seconds(spec) -> float:
    """Seconds of printing the spec's system, 0 when it is checked in or cached."""
    from solvers.app.validate import _codegen_seconds
    m = spec.model
    key = m.system_key()
    from solvers.core.registry import printed
    if printed(key):
        return 0.0
    return _codegen_seconds(m.K, m.M, m.student, m.teacher)


def _generation_bytes(spec, gen_seconds: float) -> float:
    if not gen_seconds:
        return 0.0
    from solvers.app.validate import parsed_activation
    from solvers.core.codegen_time import estimate_peak_bytes
    m = spec.model
    return estimate_peak_bytes(parsed_activation(m.student), m.K, m.M,
                               teacher=parsed_activation(m.teacher))


def simulate_estimate(spec, options: dict, command: str = "simulate",
                      start: bool = True) -> Estimate:
    """``simulate``: steps x samples per step x seeds at the input generator's measured rate
    (``validate.step_seconds``), holdout samples, the family's loop; seeds run on the cores."""
    from solvers.app.validate import (_HOLDOUT_SECONDS, FAMILY_LOOP_SLOWDOWN, _family_model,
                                      step_seconds)
    from solvers.sim.simulate import available_cpus
    m, d = spec.model, spec.data
    alphas = spec.solve.alpha_grid()
    seeds = len(options["seeds"])
    family = _family_model(spec)
    per_seed = max(alphas) * d.N * spec.training.batch_size * \
        step_seconds(d.N, m.K, m.M, options["generator"]) * \
        (FAMILY_LOOP_SLOWDOWN if family else 1.0) + \
        len(alphas) * options["eps_holdout"] * d.N * (m.K + m.M) / 4 * _HOLDOUT_SECONDS
    setup = SIM_START_CPU if start else 0.0
    threads = max(1, min(options.get("n_jobs") or available_cpus(), seeds))
    cpu = setup + per_seed * seeds
    wall = setup + per_seed * math.ceil(seeds / threads)
    mem = BASE_MIB * 2 ** 20 + 8.0 * d.N * (m.K + m.M) * 4 * threads
    kernel = "numba family loop" if family else f"{options['generator']} inputs"
    return Estimate(command, f"online SGD ({kernel})",
                    f"N = {d.N}, {seeds} seed(s)", cpu, wall, mem)


def compare_estimate(spec, options: dict, restart_alpha: float | None = None) -> Estimate:
    """``compare``: the simulation, then one solve per seed at the simulated α, and with a
    restart at ``restart_alpha`` one more per seed over the α after it."""
    # one process with both stacks: the solve's start-up (START_CPU) covers the simulator's
    sim = simulate_estimate(spec, options, "compare", start=False)
    one = solve_estimate(spec, command="compare")
    seeds = len(options["seeds"])
    route, cpu, wall = f"{sim.route}, then {seeds} x {one.route}", one.cpu_s, one.wall_s
    if restart_alpha is not None:
        grid = spec.solve.alpha_grid()
        later = solve_estimate(spec, alpha_max=max(grid) - restart_alpha,
                               n_points=1 + sum(a > restart_alpha for a in grid),
                               command="compare", start=False)
        route += f" and {seeds} restart(s)"
        cpu, wall = cpu + later.cpu_s, wall + later.wall_s
    return Estimate("compare", route, one.precision, sim.cpu_s + seeds * cpu,
                    sim.wall_s + seeds * wall, max(sim.bytes, one.bytes))


def sweep_estimate(cells, n_jobs: int) -> Estimate:
    """``sweep``: the sum of its pending cells over ``n_jobs`` worker processes (each starts
    once).  ``cells``: (what, spec, [simulate] options or None) of each task, "simulate" (one
    seed) or "solve"."""
    cpu, mem, routes = 0.0, BASE_MIB * 2 ** 20, set()
    for what, spec, options in cells:
        if what == "simulate":
            e = simulate_estimate(spec, options, "sweep", start=False)
        else:
            e = solve_estimate(spec, command="sweep", start=False)
            routes.add(e.route)
        cpu += e.cpu_s
        mem = max(mem, e.bytes)
    jobs = max(1, min(n_jobs, len(cells) or 1))
    # the sweep process (xarray, the dataset) and, with several jobs, each worker's start-up
    workers = START_CPU * jobs if jobs > 1 else 0.0
    route = f"{len(cells)} cell(s) on {jobs} process(es)" + \
        (f" ({', '.join(sorted(routes))})" if routes else "")
    return Estimate("sweep", route, "each cell as its spec asks", SWEEP_START + workers + cpu,
                    SWEEP_START + (START_CPU if jobs > 1 else 0.0) + cpu / jobs, mem * jobs)


def faster_route(spec) -> str:
    """For a refused arbitrary-precision solve: the route that would answer within the limits
    (the modes basis at the most digits float64 verifies), as a clause for the refusal, or ""."""
    import dataclasses
    from solvers.app.validate import _hours, time_limit
    from solvers.hierarchy.precision import FLOAT64_MAX_DIGITS
    s = spec.solve
    if s.digits <= FLOAT64_MAX_DIGITS or (spec.init is not None and spec.init.basis != "modes"):
        return ""
    alt = dataclasses.replace(spec, solve=dataclasses.replace(
        s, basis="modes", dps="auto", digits=FLOAT64_MAX_DIGITS))
    est = solve_estimate(alt)
    if est.wall_s > time_limit():
        return ""
    return (f"; digits = {FLOAT64_MAX_DIGITS} (basis = \"modes\") would be answered by "
            f"{est.route} in about {_hours(est.wall_s)}")


# onestep-sim: START + ONESTEP_SECONDS x (matrix products of a run) summed over kinds, seeds
# and α: the features n d p, the Gram / ridge solve n p min(n, p), the test features n_test d p
# and the step's n0 d p (protocol).  Measured on an idle machine (tanh, width 1, α = 0.5, 1, 3,
# 3 seeds, protocol + srf; CPU of the whole process, BLAS on two threads): 1.28 s at d = 200,
# 1.68 s at d = 400, 6.0 s at d = 1000, 18.2 s at d = 1600.  (Under a load of 8-15 the same
# runs took about twice the CPU: idle BLAS threads spin.)
ONESTEP_START, ONESTEP_SECONDS = 1.3, 4.8e-11


def onestep_sim_estimate(st, alphas, sim: dict, run_bytes: float) -> Estimate:
    """``onestep-sim``: the theory, then every (kind, seed) run at every α; ``run_bytes``: the
    peak memory of one run (``solvers.app.cli.onestep.sim_bytes``)."""
    d = sim["d"]
    p = max(1, round(st.beta * d))
    nt = sim["n_test"] or max(2000, 2 * d)
    n0 = max(1, round(st.alpha0 * d))
    work = 0.0
    for kind in sim["kinds"]:
        per = sum(n * d * p + n * p * min(n, p) + nt * d * p
                  for n in (max(1, round(a * d)) for a in alphas))
        work += per + (n0 * d * p if kind == "protocol" else 0)
    cpu = ONESTEP_START + ONESTEP_SECONDS * work * sim["seeds"]
    return Estimate("onestep-sim", f"{len(sim['kinds'])} kind(s) x {sim['seeds']} seed(s)",
                    f"d = {d}, p = {p}, float64", cpu, cpu, BASE_MIB * 2 ** 20 + run_bytes)


def work_estimate(command: str, route: str, precision: str, cpu_s: float,
                  nbytes: float = 0.0, start: float = START_CPU) -> Estimate:
    """A single-process subcommand's work sized by its own model (``cpu_s`` of the work,
    ``nbytes`` of its data): the process start-up added; wall = CPU (one core)."""
    cpu = start + cpu_s
    return Estimate(command, route, precision, cpu, cpu, BASE_MIB * 2 ** 20 + nbytes)


def size_solve(spec) -> None:
    """Everything a solve of ``spec`` is refused for before it starts (ValueError, one line):
    the trajectory's memory (``validate.check_solve``), then the estimate of its route, with
    the float64 route that would answer fewer digits when arbitrary precision is too long."""
    from solvers.app.validate import check_solve
    check_solve(spec, working_dps(plan_of(spec)))
    m, d = spec.model, spec.data
    try:
        # the float routes' steps grow with eta * alpha_max: both knobs are named
        check(solve_estimate(spec), f"[solve] alpha_max, [training] eta = "
                                    f"{float(spec.training.eta):g}, L = {d.L}, K = {m.K}, "
                                    f"M = {m.M}, digits = {spec.solve.digits}")
    except ValueError as e:
        raise ValueError(f"{e}{faster_route(spec)}") from None


def check(est: Estimate, label: str) -> None:
    """Refuse (ValueError, one line) an estimate beyond the time or memory limit; the line
    gives both, and both knobs."""
    from solvers.app.validate import _gib, _hours, memory_limit, time_limit
    if est.bytes > memory_limit() or est.wall_s > time_limit():
        raise ValueError(f"{label}: {est.command} ({est.route}, {est.precision}) would take "
                         f"about {_hours(est.wall_s)} and {_gib(est.bytes)} of memory (limits "
                         f"{_hours(time_limit())}, SCALING_ODES_MAX_HOURS; "
                         f"{_gib(memory_limit())}, SCALING_ODES_MAX_MEMORY_GB)")


def announce(est: Estimate, stream=None) -> None:
    """The estimate as one line on stderr, before the work, when it is worth saying (at least
    ANNOUNCE_FROM seconds) and progress is not switched off (SCALING_ODES_PROGRESS=off)."""
    from solvers.core.progress import choose_mode
    stream = sys.stderr if stream is None else stream
    if est.wall_s < ANNOUNCE_FROM or choose_mode(stream) == "off":
        return
    try:
        stream.write(est.line() + "\n")
        stream.flush()
    except (ValueError, OSError):
        pass


def sized(est: Estimate, label: str) -> Estimate:
    """``check`` then ``announce``: what every subcommand does with its estimate."""
    check(est, label)
    announce(est)
    return est


__all__ = ["Estimate", "plan_of", "relu_orthant_calls", "working_dps", "solve_estimate",
           "simulate_estimate",
           "compare_estimate",
           "sweep_estimate", "onestep_sim_estimate", "work_estimate", "size_solve", "check",
           "announce", "sized", "top_eigenvalue"]
