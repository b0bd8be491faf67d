"""Integrate the generated order-parameter ODEs in either basis, at any precision.

* ``integrate_problem`` runs one basis at one number type / precision with the embedded RK7(8)
  of :mod:`solvers.integrators.rk78`: object arrays of python-flint arb (default) or mpmath mpf, or
  float64 arrays; SciPy's DOP853 is available for comparison.
* The precision policy runs it, in one direction: :mod:`solvers.hierarchy.precision` plans
  (each run a ``Step``), :mod:`solvers.hierarchy.runner` executes the plan's steps through
  ``integrate_problem(..., step=...)``, :mod:`solvers.hierarchy.verify` checks their results;
  nothing here imports the other two.
* a learning-rate schedule (``Problem.schedule``): "steps" runs piece by piece, the integrator
  restarted with each piece's constant η at every switching α (any integrator); "power" sets
  η(α) and e2 = η(α)²/B at every right-hand-side call of the RK7(8); the Taylor integrator
  carries η(α)'s series in its jets (SciPy's DOP853 comparison path takes no schedule).
* a trained readout (``Problem.trained``): v_1..v_K are state too.  On flint (arb_mat algebra,
  RK7(8) or Taylor) they are one more row of the state matrix (solvers.core.arb_rhs); on object
  or float64 arrays they follow the level or modes state in the flat state (``_with_readout``).
"""
from __future__ import annotations

import time
from fractions import Fraction

import mpmath
import numpy as np

from solvers.core.arb_rhs import ArbMatRHS, from_arb_mat
from solvers.integrators.rk78 import EndOfLearning, IntegrationError, integrate
from solvers.core.numbers import MpmathContext, context, to_mpf
from solvers.core.problem import Problem, unpack_state
from solvers.core.registry import load
from solvers.hierarchy.trajectory import Trajectory, midpoint as _mid  # noqa: F401  (public here too)
from solvers.hierarchy.precision import (PrecisionLost, estimated_dps, is_relu,  # noqa: F401
                                         make_step, short_dps)
# the comparison of two runs, importable from here too (notebooks, tests); called only by
# the verifier in a solve
from solvers.hierarchy.verify import agreement_digits  # noqa: F401


def _level_one(mod, basis, y, num):
    """Level-1 state and teacher of the (L, N_STATE) state ``y`` in ``basis``."""
    if basis == "levels":
        # the closure's first row is y[1] when there is one: only L = 1 needs its product c @ y
        return (y[1] if len(y) > 1 else mod.closure(y, num.c)[0]), num.T_levels[0]
    return num.lam @ y, num.lam @ num.T_modes


def integrate_problem(problem: Problem, alphas, *, basis: str | None = None, arithmetic: str = "flint",
                      dps: int | None = None, rtol: float = 1e-12, atol: float | None = None,
                      progress=None, matrix_rhs: bool = True,
                      short_scalars: bool = True, integrator: str = "rk78",
                      monitor=None, step=None) -> Trajectory:
    """One run: ``arithmetic`` in {"flint", "mpmath", "float64", "scipy"}; ``dps`` for the first two.

    ``alphas``: the output points, finite, >= 0 and strictly increasing (numbers or decimal
    strings; anything else is a ValueError).  The problem's initial condition is the state at
    α = 0, so a grid that starts later (``np.geomspace(0.5, 5000, 200)``) is integrated from 0
    and only the requested points are returned.
    ``monitor``: ``monitor(t, y)`` after every accepted step (y in the integrator's storage:
    numpy array or arb_mat of the flat state); may raise to stop a run that has gone wrong
    (:mod:`solvers.hierarchy.stability`).

    "float64" runs the same RK7(8) as the arbitrary-precision path on float64 arrays; "scipy" is
    SciPy's DOP853, kept as the comparison (modes basis, L = 64, α ≤ 1000: DOP853 at its tightest
    rtol 1e-13 reaches 1.5e-9 on ε_g, RK7(8) at rtol 1e-14 reaches 7e-13; BENCHMARKS.md).
    A float64 level-basis run is returned as computed: callers check it with
    ``verify.check_float64_levels`` (``solvers.app.solve.run`` does).

    With flint, ``matrix_rhs`` (default) runs the system as arb_mat algebra
    (:mod:`solvers.core.arb_rhs`) and ``short_scalars`` computes the row-independent numbers at
    ``short_dps(rtol, dps)`` digits; both off = the generated module on object arrays, the
    reference the fast path is tested against (BENCHMARKS.md has the speed-ups).

    ``integrator``: "rk78" (default) or "taylor" (flint only: the high-order Taylor integrator of
    :mod:`solvers.integrators.taylor`, tolerance ``rtol``, order from the tolerance).

    ``step``: a run of a plan (:class:`solvers.hierarchy.precision.Step`): its basis,
    arithmetic, dps, rtol and integrator replace those arguments, and the digits of the shared
    scalars and the error bound of ε_g come with it; without one they are decided here
    (``precision.make_step``) from the arguments.
    """
    if step is not None:
        basis, arithmetic, dps, rtol, integrator = (step.basis, step.arithmetic, step.dps,
                                                    step.rtol, step.integrator)
    if basis not in ("levels", "modes"):
        raise ValueError(f"basis must be 'levels' or 'modes', got {basis!r}")
    if integrator not in ("rk78", "taylor"):
        raise ValueError(f"integrator must be 'rk78' or 'taylor', got {integrator!r}")
    if problem.schedule is not None and arithmetic == "scipy":
        raise ValueError("arithmetic = 'scipy' runs a constant eta only: use 'float64' (the "
                         "same RK7(8) as arbitrary precision) for a schedule")
    if problem.trained and arithmetic == "scipy":
        raise ValueError("a trained readout runs with arithmetic flint, mpmath or float64: its "
                         "v is state the SciPy comparison path does not carry")
    if step is None and arithmetic != "scipy":
        step = make_step(basis, arithmetic, integrator, dps, rtol, is_relu(problem.key))
    requested = checked_alphas(alphas)
    # the initial condition is the state at alpha = 0: a grid starting later is integrated from
    # 0 and only the requested points are reported
    skip = 0 if requested[0][1] == 0 else 1
    alphas = ([0.0] if skip else []) + [a for a, _ in requested]
    traj = _integrate_from_zero(problem, alphas, basis, arithmetic, dps, rtol, atol, progress,
                                matrix_rhs, short_scalars, integrator, monitor, step)
    return traj.drop_first(skip)


def checked_alphas(alphas) -> list:
    """``[(alpha as given, its exact Fraction)]`` of an α grid, or a one-line ValueError.

    A grid must be non-empty, finite, >= 0 and strictly increasing (numbers or decimal
    strings); ``integrate_problem`` adds α = 0 in front when it does not start there.
    """
    try:
        items = list(alphas)
    except TypeError:
        raise ValueError(f"alphas must be a sequence of numbers, got {alphas!r}") from None
    if not items:
        raise ValueError("alphas is empty: give at least one alpha >= 0")
    out = []
    for i, a in enumerate(items):
        try:
            value = a if isinstance(a, str) else float(a)
            exact = Fraction(value) if isinstance(value, str) else Fraction(value)
        except (TypeError, ValueError, OverflowError, ZeroDivisionError):
            raise ValueError(f"alphas[{i}] = {a!r} is not a finite number") from None
        if exact < 0:
            raise ValueError(f"alphas[{i}] = {value!r} is negative: alpha starts at 0")
        if out and not exact > out[-1][1]:
            raise ValueError(f"alphas must be strictly increasing: alphas[{i}] = {value!r} "
                             f"follows alphas[{i - 1}] = {out[-1][0]!r}")
        out.append((value, exact))
    return out


def _integrate_from_zero(problem, alphas, basis, arithmetic, dps, rtol, atol, progress,
                         matrix_rhs, short_scalars, integrator, monitor, step) -> Trajectory:
    started = time.perf_counter()
    K, M = problem.key.K, problem.key.M
    # atol only matters for components passing through zero; scale-free states set rtol.
    atol = Fraction(str(rtol)) / 10**8 if atol is None else atol
    if arithmetic == "scipy":
        ctx = context("float64")
        num = problem.numeric(ctx)
        mod = load(problem.key, "numpy")
        states, stats = _integrate_scipy(mod, num, basis, alphas, rtol, atol, progress)
        eps, R1, Q1 = _observables(mod, basis, states, num, ctx, K, M)
        stats["wall_s"] = time.perf_counter() - started
        return Trajectory(list(alphas), eps, R1, Q1, basis, "scipy", 15, stats, states)
    ctx = context(arithmetic, dps)
    with ctx:
        num = problem.numeric(ctx)
        mod = load(problem.key, "numpy" if arithmetic == "float64" else "mpmath")
        y0 = _initial_state(num, basis)
        shape = y0.shape
        end = _EndOfLearningWatch(problem, mod, basis, num, ctx, step)
        if end.reached(y0):
            # the start is a fixed point to the run's precision (an informed start): nothing
            # moves, and the right-hand side of a ReLU system is 0/0 there
            v1, _ = _level_one(mod, basis, y0, num)
            R1, Q1 = unpack_state(np.array([[float(_mid(x)) for x in v1]] * len(alphas)), K, M)
            eps = [to_mpf(0)] * len(alphas)
            stats = {"n_steps": 0, "held_from": 0.0}
            return end.finished(Trajectory(list(alphas), eps, R1, Q1, basis, arithmetic,
                                           ctx.dps, stats, [y0] * len(alphas)), started)
        monitor = end.wrap(monitor, shape)
        short = step.scalar_dps if short_scalars and matrix_rhs else None
        # η and e2 of the right-hand side: set per piece of a "steps" schedule, per call of
        # a power schedule (set_rates)
        trained = problem.trained
        if arithmetic == "flint" and matrix_rhs or integrator == "taylor":
            # the generated system as arb_mat algebra (solvers.core.arb_rhs): same numbers, the
            # O(L) work in C instead of numpy's object loops; a trained readout's v is row L
            arb_rhs = ArbMatRHS(mod, num, ctx, basis, coef_dps=short)
            set_rates = arb_rhs.set_rates
            start = arb_rhs.state(y0, num.v0 if trained else None)
            unpack = (arb_rhs.split if trained else from_arb_mat)
            if trained and monitor is not None:
                # monitors see a trained run's flat layout (levels / modes, then v), as on
                # the object-array route, not the arb_mat's padded row L
                watch = monitor

                def monitor(t, Y):
                    y, v = arb_rhs.split(Y)
                    watch(t, np.concatenate([y.reshape(-1), v]))
            if problem.autonomous:
                fun = arb_rhs
            else:
                def fun(t, Y):
                    arb_rhs.set_rates(*num.rates(num.eta_at(t)))
                    return arb_rhs(t, Y)
        else:
            if basis == "levels":
                args = [num.T_levels, num.c, num.nu, num.eta, num.e2, ctx]
                rhs = mod.rhs_levels
            else:
                args = [num.T_modes, num.lam, num.w, num.eta, num.e2, ctx]
                rhs = mod.rhs_modes

            extra = dict(noise=num.noise, decay=num.decay)

            def set_rates(eta, e2):
                args[3:5] = [eta, e2]

            def fun(t, y):
                if not problem.autonomous:
                    set_rates(*num.rates(num.eta_at(t)))
                with np.errstate(over="ignore", invalid="ignore"):
                    return rhs(y.reshape(shape), *args, **extra).reshape(-1)

            start, unpack = y0.reshape(-1), (lambda s: s.reshape(shape))
            if trained:
                # the flat state is the levels / modes then v_1..v_K (level-independent)
                fun, start, unpack = _with_readout(problem, num, mod, basis, args, rhs,
                                                   extra, set_rates, shape)

        stats = {}
        # -- integrator dispatch: Taylor series or RK7(8) --------------------------
        if integrator == "taylor":
            if arithmetic != "flint":
                raise ValueError("integrator = 'taylor' runs on flint arithmetic only")
            from solvers.integrators.taylor import integrate_taylor
            jets = load(problem.key, "taylor")

            def piece(points, y, counts):
                return integrate_taylor(arb_rhs, jets, points, y, tol=rtol,
                                        jet_dps=step.scalar_dps, progress=progress,
                                        stats=counts, monitor=monitor,
                                        schedule=None if problem.autonomous else problem.schedule)
        else:
            def piece(points, y, counts):
                return integrate(fun, points, y, ctx=ctx, rtol=rtol, atol=atol,
                                 progress=progress, stats=counts, scalar_dps=short,
                                 monitor=monitor)
        # ---------------------------------------------------------------------------------------
        try:
            flat = _by_pieces(problem, num, set_rates, piece,
                              [_exact_alpha(a) for a in alphas], start, stats)
        except IntegrationError as exc:
            if basis == "levels" and arithmetic == "float64":
                raise PrecisionLost(f"float64 in the level basis broke down at L = {problem.L} "
                                    f"({exc}); use basis = \"modes\" or an arbitrary-precision "
                                    f"dps") from exc
            raise
        states = [unpack(s) for s in flat]
        readouts = []
        if trained:
            states, readouts = [s for s, _ in states], [v for _, v in states]
        eps, R1, Q1 = _observables(mod, basis, states, num, ctx, K, M, readouts)
        return end.finished(Trajectory(list(alphas), eps, R1, Q1, basis, arithmetic, ctx.dps,
                                       stats, states, readouts), started)


class _AtTheLimit(MpmathContext):
    """mpmath with the rounding residue of a vanishing minor taken at its limit: a radicand
    less than ``tol`` below 0 is 0, an arcsine argument less than ``tol`` beyond ±1 is ±1
    (a perfectly learned state's Gram matrix is singular); further out, NaN."""

    def __init__(self, dps: int, tol: float):
        super().__init__(dps)
        self.tol = tol

    def sqrt(self, x):
        if x < 0:
            return mpmath.mpf(0) if -x <= self.tol else mpmath.nan
        return mpmath.sqrt(x)

    def asin(self, x):
        if abs(x) > 1:
            return mpmath.asin(mpmath.sign(x)) if abs(x) - 1 <= self.tol else mpmath.nan
        return mpmath.asin(x)


class _EndOfLearningWatch:
    """The end of learning: a noise-free student whose ε_g is within its absolute error bound
    (``precision.eps_g_bound``) of 0 computes the teacher's function to the run's precision,
    so every SGD update, proportional to the error, vanishes: the state is a fixed point, and
    it is held from there (beyond it ε_g only falls further below what the precision resolves,
    while a ReLU system's right-hand side divides minors that vanish with it).  Not with label
    noise, weight decay or a trained readout (no such fixed point at ε_g = 0).

    ``finished`` reports ε_g = 0 at held points and for every value within the bound of 0 (it
    has no significant digit; a negative one beyond the bound is left for the callers to
    refuse), and records the bound in ``stats["eps_g_bound"]``."""

    def __init__(self, problem, mod, basis, num, ctx, step):
        self.mod, self.basis, self.num, self.ctx = mod, basis, num, ctx
        self.active = (problem.noise == 0 and problem.weight_decay == 0
                       and not problem.trained)
        _, t1 = _level_one(mod, basis, _initial_state(num, basis), num)
        scale = max(abs(float(_mid(x))) for x in t1)
        dps = ctx.dps if ctx.name != "float64" else None
        # the step's bound_rate is max(u_eff, rtol): the bound is eps_g_bound of the run
        self.bound = step.bound_rate * float(scale)
        # what a float64 overlap state resolves of ε_g (verify.carried_digits)
        self.resolution = step.resolution_rate * float(scale)
        if self.active:
            # ε_g of a state in mpmath (midpoints, exact), its vanishing minors at their limit
            self.limit = _AtTheLimit((dps or 16) + 10,
                                     1000 * step.roundoff * max(scale, 1) ** 2)
            self.exact = load(problem.key, "mpmath")

    def reached(self, y) -> bool:
        if not self.active:
            return False
        v1, t1 = _level_one(self.mod, self.basis, y, self.num)
        # ε_g in the run's own arithmetic first: its error is within the bound, so a value
        # well above it has not reached the end; only near the end (or where the fast value
        # is not finite) the exact evaluation below runs, not at every step
        try:
            with np.errstate(all="ignore"):
                fast = float(_mid(self.mod.eps_g(v1, t1, self.ctx)))
        except (ArithmeticError, ValueError):
            fast = float("nan")
        if fast == fast and abs(fast) > 10 * self.bound:
            return False
        with self.limit:
            e = self.exact.eps_g([to_mpf(_mid(x)) for x in v1],
                                 [to_mpf(_mid(x)) for x in t1], self.limit)
            return bool(self.limit.is_finite(e)) and abs(float(e)) <= self.bound

    def wrap(self, monitor, shape):
        """``monitor`` followed by the check (EndOfLearning), on the integrator's storage."""
        if not self.active:
            return monitor

        def watch(t, y):
            if monitor is not None:
                monitor(t, y)
            if hasattr(y, "nrows"):
                # only the rows level one is read from (_level_one): converting every level of
                # an arb_mat at each accepted step cost the L = 64 level run several percent
                rows = 2 if self.basis == "levels" and y.nrows() > 1 else y.nrows()
                state = np.array([[y[i, j] for j in range(y.ncols())] for i in range(rows)],
                                 dtype=object)
            else:
                state = np.asarray(y).reshape(shape)
            if self.reached(state):
                raise EndOfLearning
        return watch

    def finished(self, traj, started):
        stats = traj.stats
        stats["eps_g_bound"] = self.bound
        if self.resolution:
            stats["eps_g_resolution"] = self.resolution
        held = stats.get("held_from")
        for p, (a, e) in enumerate(zip(traj.alpha, traj.eps_g)):
            if (held is not None and float(Fraction(str(a))) >= held) or abs(e) <= self.bound:
                traj.eps_g[p] = to_mpf(0)
        stats["wall_s"] = time.perf_counter() - started
        return traj


def _with_readout(problem, num, mod, basis, args, rhs, extra, set_rates, shape):
    """(fun, start, unpack) of a trained readout's run: the flat state is the level or modes
    state followed by v_1..v_K, dv_i/dα = η_v <g_s(x_i) Δ> at level 1 (conventions.md)."""
    n = int(np.prod(shape))

    def fun(t, s):
        if not problem.autonomous:
            set_rates(*num.rates(num.eta_at(t)))
        y, v = s[:n].reshape(shape), s[n:]
        with np.errstate(over="ignore", invalid="ignore"):
            dy = rhs(y, *args, readout=v, **extra)
            level1, t1 = _level_one(mod, basis, y, num)
            dv = np.array(mod.readout_rates(np.concatenate([level1, v]), t1, num.ctx),
                          dtype=s.dtype)
        if not (num.decay_v == 0):       # weight decay of the readout: -η_v κ_v v
            dv = dv - num.decay_v * v
        return np.concatenate([dy.reshape(-1), num.eta_v * dv])

    y0 = _initial_state(num, basis)
    start = np.concatenate([y0.reshape(-1), num.v0.astype(y0.dtype)])
    return fun, start, lambda s: (s[:n].reshape(shape), s[n:])


def _by_pieces(problem, num, set_rates, piece, alphas, y0, stats):
    """The states at ``alphas`` (exact, from 0), integrated piece by piece between the
    switching times of a "steps" schedule: each piece restarts the integrator with its own
    constant η, so that no step straddles a jump of the right-hand side.  Without such a
    schedule this is one call ``piece(alphas, y0, stats)``."""
    pieces = problem.eta_pieces(alphas[-1])
    if len(pieces) == 1:
        return piece(alphas, y0, stats)
    ends = [a for a, _ in pieces[1:]] + [alphas[-1]]
    wanted = set(alphas)
    out, y = [y0], y0
    totals = {}
    for (a, eta), b in zip(pieces, ends):
        set_rates(*num.rates(eta))
        points = [a] + [x for x in alphas if a < x < b] + [b]
        counts = {}
        try:
            states = piece(points, y, counts)
        finally:
            for k, v in counts.items():   # counts add up over the pieces
                totals[k] = totals.get(k, 0) + v if k.startswith("n_") else v
            stats.update(totals)
        y = states[-1]
        out += [st for x, st in zip(points[1:], states[1:]) if x in wanted]
    return out


def _exact_alpha(a):
    return Fraction(str(a)) if not isinstance(a, str) else Fraction(a)


def _initial_state(num, basis):
    return (num.y_levels if basis == "levels" else num.y_modes).copy()


def _observables(mod, basis, states, num, ctx, K, M, readouts=()):
    """ε_g (exact mpf copies of the run's numbers), R1 and Q1 (float64) at every state (and
    the trained readout's v at each, when given)."""
    eps, v1s = [], []
    for p, y in enumerate(states):
        v1, t1 = _level_one(mod, basis, y, num)
        e = mod.eps_g(np.concatenate([v1, readouts[p]]) if readouts else v1, t1, ctx)
        if not ctx.is_finite(e):
            raise PrecisionLost(f"eps_g is not finite ({e}) in the {basis} basis")
        eps.append(to_mpf(e))
        v1s.append([float(_mid(x)) for x in v1])
    R1, Q1 = unpack_state(np.array(v1s, dtype=float), K, M)
    return eps, R1, Q1


def _integrate_scipy(mod, num, basis, alphas, rtol, atol, progress):
    from scipy.integrate import solve_ivp

    y0 = _initial_state(num, basis)
    shape = y0.shape
    if basis == "levels":
        args = (num.T_levels, num.c, num.nu, float(num.eta), float(num.e2))
        rhs = mod.rhs_levels
    else:
        args = (num.T_modes, num.lam, num.w, float(num.eta), float(num.e2))
        rhs = mod.rhs_modes
    nfev = [0]

    extra = dict(noise=float(num.noise), decay=float(num.decay))

    def fun(t, y):
        nfev[0] += 1
        if progress is not None and nfev[0] % 50 == 0:
            progress(t)
        with np.errstate(all="ignore"):
            return rhs(y.reshape(shape), *args, **extra).reshape(-1)

    alphas = np.asarray(alphas, dtype=float)
    sol = solve_ivp(fun, (alphas[0], alphas[-1]), y0.reshape(-1), method="DOP853",
                    t_eval=alphas, rtol=max(float(rtol), 1e-13), atol=float(atol))
    if sol.status != 0 or sol.y.shape[1] != len(alphas) or not np.all(np.isfinite(sol.y)):
        raise PrecisionLost(f"SciPy float64 integration in the {basis} basis failed at "
                            f"L = {num.problem.L}: {sol.message}")
    if progress is not None:
        progress(alphas[-1])
    return [sol.y[:, i].reshape(shape) for i in range(len(alphas))], {"n_fevals": sol.nfev}
