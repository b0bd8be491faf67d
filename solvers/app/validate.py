"""Checks that run before any work: a spec that would hang, exhaust memory, overflow float64 or
describe weights that cannot exist is refused here with one line naming the key, the estimate
and the limit.

Called from `solvers.app.spec.parse_spec` (every subcommand and every sweep cell goes through
it: ranges, and the ODE solve's size unless the caller sizes its own route) and from the
subcommands whose work is another one: ``simulate`` (steps, generator, holdout samples),
``linear`` (the route it runs), ``bayes`` and ``kernel`` (their own sections).  Each check
raises `ValueError` with a message *without* the file name; the caller prefixes it.

Limits (environment variables raise them for a big machine or a long job):
  * memory estimate <= SCALING_ODES_MAX_MEMORY_GB (default 8 GiB),
  * time estimate   <= SCALING_ODES_MAX_HOURS     (default 24 h),
  * decimal exponents |e| <= MAX_DECIMAL_EXPONENT before anything is turned into a Fraction,
  * every exact number 1e-100 <= |x| <= 1e100 (or 0): squares and a few products must stay
    inside float64 (1.8e308), where the simulator and the float64 solvers compute,
  * caps on every size: L <= 100000, N <= 2^40, K, M <= 64, n_points <= 10^6, dps <= 20000,
    [simulate] eps_holdout <= 10^7 and at most 10^4 seeds (the sections of bayes and kernel
    carry their own caps, in solvers/app/cli/bayes.py and kernel.py).

Which check sizes which subcommand:
  solve, sweep cells       `check_solve` (trajectory memory in [solve] basis at its dps), then
                           solvers.app.sizing.size_solve (the time of the route that will run)
  simulate                 `check_simulation` (steps x generator rate, holdout samples, seeds)
  linear curve | window | feature-scaling   `check_linear` (the route: modes / companion /
                           levels at route_dps, the O(L) window, Eq. 88 with n_W Haar matrices)
  plateau, asymptotic      `check_plateau` (fixed point and Jacobian over L levels, float64 modes)
  bayes, kernel, kernel-mc in their CLI modules (features x points, modes x P, Monte-Carlo
                           designs), with the constants measured in BENCHMARKS.md
A result that would hold NaN or inf is refused by `solvers.app.cli.common.emit`
(`first_non_finite` names where).
"""
from __future__ import annotations

import math
import os
import re
from fractions import Fraction

MAX_DECIMAL_EXPONENT = 10_000          # "1e999999999" would hang inside Fraction()
MAX_DECIMAL_LENGTH = 10_000            # characters of a decimal string
MAX_MAGNITUDE = 10 ** 100
MIN_MAGNITUDE = Fraction(1, 10 ** 100)
MAX_DPS = 20_000                       # flint aborts the process near 1e18; mpmath crawls long before
MAX_L = 100_000
MAX_KM = 64                            # K, M: the derivation grows like (KM + K^2/2)^~2, see _codegen_seconds
MAX_N_POINTS = 10 ** 6
MAX_N = 2 ** 40                        # input dimension: far beyond any memory, keeps int64 exact
MAX_SEEDS = 10_000
MAX_SIM_STEPS = 2 ** 62                # int64 step counter of the simulator
# the smallest eigenvalue of a power law is λ_+ L^-(1+β): keep it (and its square) inside float64
MAX_POWER_LAW_DECADES = 150

_DECIMAL_RE = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE]([+-]?\d+))?")


def memory_limit() -> float:
    return float(os.environ.get("SCALING_ODES_MAX_MEMORY_GB", "8")) * 2 ** 30


def time_limit() -> float:
    return float(os.environ.get("SCALING_ODES_MAX_HOURS", "24")) * 3600


def _gib(b: float) -> str:
    return f"{b / 2 ** 30:.3g} GiB"


def _hours(s: float) -> str:
    return f"{s / 3600:.3g} h"


# ---- decimal strings: before Fraction() ------------------------------------------------------

def decimal_string_problem(text: str) -> str | None:
    """Why a decimal string must not reach ``Fraction()`` (its exponent or length), or None."""
    if len(text) > MAX_DECIMAL_LENGTH:
        return f"has {len(text)} characters (at most {MAX_DECIMAL_LENGTH})"
    m = _DECIMAL_RE.fullmatch(text)
    if m and m.group(3) is not None:
        # compare the exponent's digits before int() of a possibly huge string
        digits = m.group(3).lstrip("+-").lstrip("0")
        if len(digits) > 6 or int(digits or 0) > MAX_DECIMAL_EXPONENT:
            return (f"has an exponent beyond +-{MAX_DECIMAL_EXPONENT} (numbers must lie within "
                    f"1e-100 .. 1e100 in magnitude)")
    return None


# ---- the parsed spec ---------------------------------------------------------------------------

def _sci(x: Fraction) -> str:
    """A Fraction of any size as d.ddde±N (float() overflows beyond 1.8e308)."""
    if x == 0:
        return "0"
    # from bit lengths: str() of a 10^4-digit integer is refused by Python's conversion limit
    e = int((abs(x.numerator).bit_length() - x.denominator.bit_length()) * math.log10(2))
    mant = abs(x) / Fraction(10) ** e
    while mant >= 10:
        mant, e = mant / 10, e + 1
    while mant < 1:
        mant, e = mant * 10, e - 1
    return f"{'-' if x < 0 else ''}{float(mant):.3g}e{e:+d}"


def _magnitude(x: Fraction, label: str):
    if x != 0 and not (MIN_MAGNITUDE <= abs(x) <= MAX_MAGNITUDE):
        raise ValueError(f"{label} = {_sci(x)} is out of range: nonzero numbers must lie "
                         f"within 1e-100 .. 1e100 in magnitude (their squares and products must "
                         f"stay inside float64)")


def in_range(v) -> bool:
    """A number 0 or within 1e-100 .. 1e100 in magnitude (the rule of `_magnitude`)."""
    if isinstance(v, float):
        v = Fraction(v) if math.isfinite(v) else None
    return v is not None and (v == 0 or MIN_MAGNITUDE <= abs(v) <= MAX_MAGNITUDE)


RANGE_TEXT = ("is out of range: nonzero numbers must lie within 1e-100 .. 1e100 in magnitude "
              "(their squares and products must stay inside float64)")


def first_non_finite(obj, path="") -> str | None:
    """Where a JSON-ready result holds NaN or +-inf (``"eps_bar[0]"``), or None."""
    if isinstance(obj, float):
        return None if math.isfinite(obj) else (path or "the result")
    if isinstance(obj, dict):
        for k, v in obj.items():
            hit = first_non_finite(v, f"{path}.{k}" if path else str(k))
            if hit:
                return hit
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            hit = first_non_finite(v, f"{path}[{i}]")
            if hit:
                return hit
    elif hasattr(obj, "dtype") and hasattr(obj, "tolist"):      # numpy scalars and arrays
        return first_non_finite(obj.tolist(), path)
    return None


def _walk(t, label):
    if isinstance(t, (tuple, list)):
        for i, x in enumerate(t):
            yield from _walk(x, f"{label}[{i}]")
    else:
        yield t, label


def _bytes_per_number(dps) -> float:
    if dps == "float64":
        return 8.0
    return 64.0 + dps / math.log10(2) / 8      # arb: header + mantissa limbs


def parsed_activation(text: str | None) -> str | None:
    """An activation as the generation estimate reads it: the name, or ``x**d`` with d the
    degree of the parsed polynomial (exact, without SymPy) -- not the powers written in the
    text: x*x*x*x*x*x is of degree 6, x**3 - x**3 + x is linear."""
    if text is None or text in ("erf", "relu", "linear"):
        return text
    from solvers.sim.family import parse_activation
    act = parse_activation(text)
    if act.name in ("erf", "relu", "linear"):
        return act.name
    return f"x**{len(act.exact) - 1}"


def _codegen_seconds(K: int, M: int, student: str = "erf", teacher: str | None = None) -> float:
    """Time to derive and print the modules of a system not checked in: the model the registry
    announces (:func:`solvers.core.codegen_time.estimate_seconds`, erf's measured law times the
    fitted factor of the student's and the teacher's activations, by their parsed degree)."""
    from solvers.core.codegen_time import estimate_seconds
    return estimate_seconds(parsed_activation(student), K, M, teacher=parsed_activation(teacher))


def check_generated_system(spec) -> None:
    """Before an ODE solve needs a generated module: the time and the peak memory of deriving
    one not checked in (:mod:`solvers.core.codegen_time`).  (Not in `check_spec`: simulations
    and the matrix-form modes solver need no module.)"""
    from solvers.core.codegen_time import estimate_peak_bytes
    m = spec.model
    linear = m.student == m.teacher == "linear"
    if not linear and not (m.is_plain and (m.K, m.M) in ((1, 1), (2, 2))):
        est = _codegen_seconds(m.K, m.M, m.student, m.teacher)
        mem = estimate_peak_bytes(parsed_activation(m.student), m.K, m.M,
                                  teacher=parsed_activation(m.teacher))
        if est > time_limit() or mem > memory_limit():
            pair = m.student if m.student == m.teacher else f"{m.student}/{m.teacher}"
            raise ValueError(f"{spec.path}: [model] K = {m.K}, M = {m.M} ({pair}): deriving the "
                             f"ODEs would take about {_hours(est)} and {_gib(mem)} (limits "
                             f"{_hours(time_limit())}, SCALING_ODES_MAX_HOURS; "
                             f"{_gib(memory_limit())}, SCALING_ODES_MAX_MEMORY_GB)")


def check_spec(spec) -> None:
    """Ranges and realisability of a parsed spec, whatever runs it; ValueError (one line).

    The size of the work is checked per subcommand, by the route that will run
    (`check_solve`, `check_simulation`, `check_linear`, ...): a window of the linear theory
    needs none of the memory an ODE trajectory at thousands of digits would.
    """
    m, d, t, s = spec.model, spec.data, spec.training, spec.solve
    for key, v in (("K", m.K), ("M", m.M)):
        if v > MAX_KM:
            raise ValueError(f"[model] {key} = {v} is too large: at most {MAX_KM}")
    if d.L > MAX_L:
        raise ValueError(f"[data] L = {d.L} is too large: at most {MAX_L}")
    if d.N is not None and d.N > MAX_N:
        raise ValueError(f"[data] N = {d.N} is too large: at most {MAX_N}")
    if isinstance(s.dps, int) and s.dps > MAX_DPS:
        raise ValueError(f"[solve] dps = {s.dps} is too large: at most {MAX_DPS}")
    if s.n_points > MAX_N_POINTS:
        raise ValueError(f"[solve] n_points = {s.n_points} is too large: at most {MAX_N_POINTS}")
    # exact numbers must fit float64 with room for squares
    for key, v in (("[training] eta", t.eta), ("[training] sigma_J", t.sigma_J),
                   ("[data] beta", d.beta)):
        if v is not None:
            _magnitude(v, key)
    if d.eigenvalues is not None:
        for v, label in _walk(d.eigenvalues, "[data] eigenvalues"):
            _magnitude(v, label)
    _family_magnitudes(spec)
    if spec.init is not None:
        for key in ("R", "Q", "T"):
            for v, label in _walk(getattr(spec.init, key), f"[init.{spec.init.basis}] {key}"):
                _magnitude(v, label)
    if d.beta is not None and d.L > 1:
        decades = (1 + d.beta) * math.log10(d.L)
        if decades > MAX_POWER_LAW_DECADES:
            raise ValueError(
                f"[data] beta = {float(d.beta):.6g} is too large for L = {d.L}: the eigenvalues "
                f"would span 10^{float(decades):.0f} (at most 10^{MAX_POWER_LAW_DECADES}; need "
                f"(1 + beta) log10(L) <= {MAX_POWER_LAW_DECADES})")
        if d.beta.denominator > 10 ** 6:
            raise ValueError(f"[data] beta = {float(d.beta):.12g} has too many decimals for the "
                             f"exact power law (denominator {d.beta.denominator} > 10^6)")
    if d.eigenvalues is not None:
        lo, hi = min(d.eigenvalues), max(d.eigenvalues)
        if math.log10(hi / lo) > MAX_POWER_LAW_DECADES:
            raise ValueError(f"[data] eigenvalues span {float(math.log10(hi / lo)):.0f} decades "
                             f"(at most {MAX_POWER_LAW_DECADES})")
    # memory of a finite-N realisation (the initial condition of init = "random" and the
    # simulator): the weights, and W when rotated
    limit = memory_limit()
    if d.N is not None and t.init in ("random", "informed"):
        need = 8.0 * d.N * (m.K + m.M) * 4 + (8.0 * d.N ** 2 * 2 if d.rotate else 0)
        if need > limit:
            raise ValueError(f"[data] N = {d.N}: the weights need about {_gib(need)} of memory "
                             f"(limit {_gib(limit)}, SCALING_ODES_MAX_MEMORY_GB)")
    if spec.init is not None:
        check_realisable(spec)


def _family_magnitudes(spec) -> None:
    """The family's exact numbers (readouts, noise, decay, eta_readout, schedule) must fit
    float64 like eta."""
    m, t = spec.model, spec.training
    for key in ("student_readout", "teacher_readout"):
        if getattr(m, key) is not None:
            for v, label in _walk(getattr(m, key), f"[model] {key}"):
                _magnitude(v, label)
    for key in ("noise", "weight_decay", "eta_readout", "weight_decay_readout"):
        v = getattr(t, key)
        if v:
            _magnitude(v, f"[training] {key}")
    for key, v in (t.schedule_dict() or {}).items():
        if key == "kind":
            continue
        for x, label in _walk(v, f"[training] schedule {key}"):
            if x:
                _magnitude(x, label)


# ---- the exact spectrum (derive.spectra, SymPy) ------------------------------------------------

def spectrum_seconds(L: int, beta) -> float:
    """Time to build the exact power-law spectrum of L levels (``spectrum_of``: SymPy numbers).

    Measured on this machine class: an integer beta (Rationals) 1.6 s at L = 1024, 9.4 s at
    4096 (~L^1.25); any other beta (algebraic numbers l^-(1+beta)) 6.1 s at L = 256, 69 s at
    1024 (~L^1.75).  An explicit eigenvalue list costs nothing comparable.
    """
    if beta is None:
        return 0.0
    if Fraction(beta).denominator == 1:
        return 1.6 * (L / 1024) ** 1.25
    return 69.0 * (L / 1024) ** 1.75


def check_spectrum(spec, label="[data] L") -> None:
    """Refuse an exact spectrum whose construction alone would pass the time limit."""
    d = spec.data
    est = spectrum_seconds(d.L, d.beta)
    if est > time_limit():
        raise ValueError(f"{label} = {d.L} with beta = {float(d.beta):.6g}: the exact spectrum "
                         f"alone would take about {_hours(est)} (limit {_hours(time_limit())}, "
                         f"SCALING_ODES_MAX_HOURS; an integer beta is much faster)")


# ---- solve (and the subcommands that integrate the ODEs: plateau, asymptotic, sweep) ----------

def check_solve(spec, dps) -> None:
    """The ODE solve of ``[solve]`` in the basis and at the precision it will run at: the stored
    trajectory's memory; ValueError (one line) when refused.  ``dps``: the precision the plan's
    first run works at ("float64" or digits, ``sizing.working_dps``).  Its time is sized by the
    route that will run, in ``solvers.app.sizing.size_solve``, which calls this first."""
    m, d, s = spec.model, spec.data, spec.solve
    check_spectrum(spec)
    limit = memory_limit()
    state = d.L * (m.K * m.M + m.K * (m.K + 1) // 2 + m.M * (m.M + 1) // 2)
    need = (s.n_points + 30) * state * _bytes_per_number(dps) * 2 + 8.0 * s.n_points
    if need > limit:
        raise ValueError(f"[solve] n_points = {s.n_points}, L = {d.L}, K = {m.K}, M = {m.M}, "
                         f"basis = {s.basis}, dps = {dps}: the trajectory needs about "
                         f"{_gib(need)} of memory (limit {_gib(limit)}, "
                         f"SCALING_ODES_MAX_MEMORY_GB)")
    # its time: solvers.app.sizing.size_solve (the model that also announces the run)


# ---- plateau, asymptotic ----------------------------------------------------------------------

def plateau_seconds(spec) -> float:
    """``plateau`` / ``asymptotic`` on the erf closed forms: the exact spectrum, the symmetric
    fixed point and its Jacobian at ``[plateau] dps`` over L levels, and the spec's trajectory
    in float64 modes (never the [solve] basis and dps); CPU seconds of the work, the process
    start-up excluded.  Measured (erf K = M = 2, default dps, whole processes): 3.0 / 5.3 /
    15.8 s CPU at L = 8 / 16 / 32, and asymptotic 3.3 s at L = 4: about 2 + 2.2e-3 L^2.5 (a
    dense Jacobian of L levels is diagonalised) and (M/2)^4 in the width."""
    d, m = spec.data, spec.model
    return spectrum_seconds(d.L, d.beta) + (2.0 + 2.2e-3 * d.L ** 2.5) * \
        max(1.0, m.M / 2) ** 4


def plateau_work(spec, command: str, sec: dict | None = None) -> tuple[float, float, str]:
    """(seconds, bytes, route) of ``plateau`` / ``asymptotic`` / ``floor`` by the route that
    will run: the erf closed forms, or the numeric route of solvers.theory.variants.
    ``sec``: the command's validated section (``plateau_section``; None: its defaults)."""
    from solvers.theory.variants import closed_form_applies, numeric_seconds
    d, m = spec.data, spec.model
    sec = {"dps": 30} if sec is None else sec
    if command != "floor" and closed_form_applies(spec, sec.get("teacher", "symmetrised")):
        est, route = plateau_seconds(spec), "fixed point and Jacobian over L levels"
    else:
        dps = sec["dps"]
        est = spectrum_seconds(d.L, d.beta) + numeric_seconds(
            d.L, m.K, m.M, "plateau" if command == "plateau" else "asymptotic", dps)
        route = "numeric route: Newton fixed point and eigenvalues, verified by a rerun"
    state = d.L * (m.K * m.M + m.K * (m.K + 1) // 2 + m.M * (m.M + 1) // 2)
    need = 8.0 * (state * (spec.solve.n_points + 30) + 4 * state * state)
    return est, need, route


def check_plateau(spec, command: str, sec: dict | None = None) -> None:
    """Size ``plateau`` / ``asymptotic`` / ``floor`` (:func:`plateau_work`; ValueError with
    the estimate)."""
    d, m = spec.data, spec.model
    est, need, route = plateau_work(spec, command, sec)
    if est > time_limit():
        raise ValueError(f"[data] L = {d.L}, [model] K = {m.K}, M = {m.M}: {command} ({route}) "
                         f"would take about {_hours(est)} (limit "
                         f"{_hours(time_limit())}, SCALING_ODES_MAX_HOURS)")
    if need > memory_limit():
        state = d.L * (m.K * m.M + m.K * (m.K + 1) // 2 + m.M * (m.M + 1) // 2)
        raise ValueError(f"[data] L = {d.L}: {command} needs about {_gib(need)} of memory "
                         f"(its Jacobian over {state} state entries; limit "
                         f"{_gib(memory_limit())}, SCALING_ODES_MAX_MEMORY_GB)")


# ---- simulate ------------------------------------------------------------------------------

# the Monte-Carlo error of eps_g on n fresh samples is ~ eps_g sqrt(2/n): 10^7 gives 5e-4 of it
MAX_EPS_HOLDOUT = 10 ** 7

# Seconds per SGD step and input dimension for each input generator (erf, K = M = 2, one
# thread; the cost per N grows once the weights leave the caches, so two sizes).  Measured with
# `simulate` at N = 2^10 .. 2^20 on this machine class under a load of ~15 on 2 cores and
# divided by that slowdown (~7x, checked against a report of ~27 h for alpha N = 2^20 x 10^5
# numpy steps on an idle machine); BENCHMARKS.md, section "validation: sizing constants".
# numpy re-measured as CPU time (simulate, K = M = 2, L = 4, N = 1024, α = 200): 7.7e-9, and
# float32 1.05e-9 (N = 1024) / 1.17e-9 (N = 8192), as above (BENCHMARKS.md, "Sizing model").
_STEP_SECONDS = {            # generator -> (N <= 16384, N > 16384) seconds per step per N
    "xoshiro": (1.5e-9, 2.7e-9),
    "float32": (1.0e-9, 1.8e-9),
    "numpy": (7.5e-9, 1.1e-8),
}
# one holdout sample: N normals from NumPy and K + M dot products of length N (measured the same
# way: 0.9-1.4e-7 s per sample per N under the load, 2e-8 idle)
_HOLDOUT_SECONDS = 2e-8      # per sample per N


# The family's numba loops (solvers/sim/family_kernels.py, one thread) against the default
# float32 kernel, per sample and N, as CPU time of whole runs (K = M = 2, L = 4, N = 1024):
# label noise 5.2e-9, batch_size = 4 3.6e-9, against 1.05e-9 (BENCHMARKS.md, "Sizing model";
# the factor 1.7 measured before was against the older C kernel's rate and missed batched runs
# by ~6x).
FAMILY_LOOP_SLOWDOWN = 4.5


def step_seconds(N: int, K: int, M: int, generator: str = "xoshiro") -> float:
    """Estimated seconds of one SGD step (input draw, K + M dot products, update)."""
    small, large = _STEP_SECONDS.get(generator, _STEP_SECONDS["numpy"])
    per = small if N <= 16384 else large
    return per * N * max(1.0, (K + M) / 4)


def check_simulation_steps(alphas, N: int, n_runs: int = 1, label="[solve] alpha_max",
                           K: int = 2, M: int = 2, generator: str = "xoshiro",
                           eps_holdout: int = 0, batch_size: int = 1, family: bool = False):
    """The simulator counts steps round(α N) in int64; refuse grids beyond it, and runs whose
    time estimate (steps x batch_size samples, input generator, the family's loop when the
    model is not today's, holdout samples) passes the limit."""
    top = max(alphas)
    steps = top * N
    if not math.isfinite(steps) or steps > MAX_SIM_STEPS:
        count = f"{steps:.3g}" if math.isfinite(steps) else "more than 1.8e308"
        raise ValueError(f"{label} = {top:.6g} with N = {N} is {count} SGD steps: beyond "
                         f"the simulator's step counter (at most {float(MAX_SIM_STEPS):.3g})")
    est = steps * batch_size * n_runs * step_seconds(N, K, M, generator) \
        * (FAMILY_LOOP_SLOWDOWN if family else 1.0)
    hold = len(alphas) * eps_holdout * N * (K + M) / 4 * _HOLDOUT_SECONDS * n_runs
    if est + hold > time_limit():
        parts = f"{_hours(est)} of SGD steps ({generator} inputs" + \
            (f", {batch_size} samples per step" if batch_size != 1 else "") + \
            (", the family's numba loop" if family else "") + ")"
        if eps_holdout:
            parts += f" + {_hours(hold)} of holdout samples (eps_holdout = {eps_holdout})"
        raise ValueError(f"{label} = {top:.6g} with N = {N} ({n_runs} run(s), "
                         f"{len(alphas)} points): about {parts} (limit "
                         f"{_hours(time_limit())}, SCALING_ODES_MAX_HOURS)")


def check_simulate_section(spec, opts: dict) -> None:
    """Caps on the validated ``[simulate]`` options ``opts`` of ``spec`` (every subcommand of
    the common spec reads the section; ``simulate`` sizes its run in `check_simulation`)."""
    if opts["eps_holdout"] > MAX_EPS_HOLDOUT:
        m, d = spec.model, spec.data
        n = spec.solve.n_points
        est = n * opts["eps_holdout"] * (d.N or 1) * (m.K + m.M) / 4 * _HOLDOUT_SECONDS
        raise ValueError(f"[simulate] eps_holdout = {opts['eps_holdout']} is too large: at "
                         f"most {MAX_EPS_HOLDOUT} samples per point (its Monte-Carlo error is "
                         f"then 5e-4 of eps_g; {n} points at N = {d.N} would take about "
                         f"{_hours(est)} of holdout sampling per seed)")
    if opts["seeds"] is not None and len(opts["seeds"]) > MAX_SEEDS:
        raise ValueError(f"[simulate] seeds has {len(opts['seeds'])} entries: at most "
                         f"{MAX_SEEDS}")


def check_simulation(spec, options: dict) -> None:
    """Everything ``simulate`` will do for ``spec`` with its validated [simulate] options."""
    m, d = spec.model, spec.data
    check_simulation_steps(spec.solve.alpha_grid(), d.N, len(options["seeds"]), K=m.K, M=m.M,
                           generator=options["generator"], eps_holdout=options["eps_holdout"],
                           batch_size=spec.training.batch_size, family=_family_model(spec))


def _family_model(spec) -> bool:
    """Whether the simulator runs the family's loop for this spec (a model other than today's:
    solvers.sim.family.Family.is_default, read off the spec)."""
    m, t = spec.model, spec.training
    acts = {m.activation if a is None else a for a in (m.student_activation,
                                                       m.teacher_activation)}
    return (len(acts) > 1 or not acts <= {"erf", "linear"} or m.normalisation != "paper"
            or m.student_readout is not None or m.teacher_readout is not None
            or m.readout != "fixed" or t.noise != 0 or t.weight_decay != 0
            or t.batch_size != 1 or t.schedule is not None)


# ---- linear curve | window | feature-scaling ---------------------------------------------------

def _mp_op_seconds(dps: int) -> float:
    """One mpmath operation of the modes route (secular polish, sums), measured: 1.5e-4 s per
    L^2 at 25-100 digits (~15 operations per L^2); grows like dps^1.6 past ~100 digits."""
    return 1e-5 * max(1.0, dps / 100) ** 1.6


_FLOPS = 1e9                 # dense float64 linear algebra, one core


def linear_work(spec, command: str, route: str = "modes",
                options: dict | None = None) -> tuple[float, float, str]:
    """(seconds, bytes, what) of ``linear COMMAND`` for ``spec`` along the route it will run."""
    d, s = spec.data, spec.solve
    L = d.L
    spectrum = spectrum_seconds(L, d.beta)
    if command == "window":
        # O(L) float64; the exact curve's exponent (L <= 2048): float64 modes, L x L arrays
        n = L if L <= WINDOW_EXACT_MAX_L else 0
        return 1e-7 * L + 3e-8 * n * n, 8.0 * 4 * n * n + 64.0 * L, "the window (float64)"
    if command == "feature-scaling":
        opts = options or {}
        N = d.N if d.N is not None else L
        n_l = len(opts.get("N_l") or ()) or max(1, int(math.log2(N)))
        t, mem, what = spectrum + 1e-7 * N * n_l, 64.0 * N, "the feature-scaling theory"
        if opts.get("rotated"):
            # Eq. 88 twice per Haar W: a QR, a product and a Cholesky per N_l, all ~N^3
            t += 2 * opts.get("n_W", 20) * (4 + n_l) * N ** 3 / _FLOPS
            mem += 8.0 * 4 * N * N
            what = f"the rotated feature-scaling theory (n_W = {opts.get('n_W', 20)}, N = {N})"
        if opts.get("simulate"):
            n_seeds = opts.get("n_seeds", 20)
            amax = opts.get("alpha_max")
            if amax is not None:
                steps = amax * N * n_seeds * n_l * (N if opts.get("rotated") else 1)
                t += steps * 2e-9
                what += f" with its simulation (n_seeds = {n_seeds}, alpha_max = {amax:g})"
        return t, mem, what
    from solvers.theory.linear import route_dps
    n_points = s.n_points
    if s.dps == "float64":
        return spectrum + 3e-8 * L * L * 4, 8.0 * 4 * L * L, "the modes route in float64"
    dps = route_dps(route, L, s.digits) if s.dps == "auto" else int(s.dps)
    runs = 2                                # exact_curve checks every result at more digits
    if route == "modes":
        t = runs * (15 * L * L + 3 * n_points * L) * _mp_op_seconds(dps)
        mem = 2 * L * L * 8.0 + 4 * L * _bytes_per_number(dps)
    elif route == "companion":
        t = runs * (40 * L * L + 3 * n_points * L) * _mp_op_seconds(dps)
        mem = 8 * L * _bytes_per_number(dps) + 2 * L * L * 8.0
    else:
        # dense L x L arb matrices: an exponential and its squarings, O(L^3) products each
        t = runs * 40 * L ** 3 * _mp_op_seconds(dps) * 0.05
        mem = 4 * L * L * _bytes_per_number(dps)
    return spectrum + t, mem, f"the {route} route at dps = {dps}"


WINDOW_EXACT_MAX_L = 2048


def check_linear(spec, command: str, route: str = "modes", options: dict | None = None) -> None:
    """Size ``linear COMMAND`` by the route it runs (ValueError with the estimate)."""
    d, s = spec.data, spec.solve
    if command == "curve" and s.dps != "float64":
        from solvers.theory.linear import route_dps
        dps = route_dps(route, d.L, s.digits) if s.dps == "auto" else int(s.dps)
        if dps > MAX_DPS:
            raise ValueError(f"[linear] route = {route!r} at L = {d.L}: needs dps = {dps} "
                             f"(at most {MAX_DPS}; the modes route needs only digits + 10)")
    if command != "window":
        check_spectrum(spec)
    secs, need, what = linear_work(spec, command, route, options)
    label = "[linear]" if command == "feature-scaling" else f"[data] L = {d.L}"
    if need > memory_limit():
        raise ValueError(f"{label}: {what} needs about {_gib(need)} of memory "
                         f"(limit {_gib(memory_limit())}, SCALING_ODES_MAX_MEMORY_GB)")
    if secs > time_limit():
        raise ValueError(f"{label}: {what} would take about {_hours(secs)} (limit "
                         f"{_hours(time_limit())}, SCALING_ODES_MAX_HOURS)")


# ---- realisability of explicit initial conditions ---------------------------------------------

def _psd_exact(A) -> int | None:
    """Index of a witness that the symmetric Fraction matrix A is not PSD, or None when it is.

    Symmetric elimination with the largest diagonal pivot: a negative diagonal, or a zero
    pivot with a nonzero entry in its row, proves an indefinite matrix.
    """
    A = [list(r) for r in A]
    idx = list(range(len(A)))
    while idx:
        p = max(idx, key=lambda i: A[i][i])
        if A[p][p] < 0:
            return p
        if A[p][p] == 0:
            if any(A[p][j] != 0 for j in idx):
                return p
            idx.remove(p)
            continue
        idx.remove(p)
        for i in idx:
            f = A[i][p] / A[p][p]
            if f:
                for j in idx:
                    A[i][j] -= f * A[p][j]
    return None


def _block(Q, R, T):
    K, M = len(Q), len(T)
    return [[Q[i][j] for j in range(K)] + [R[i][n] for n in range(M)] for i in range(K)] + \
           [[R[i][n] for i in range(K)] + [T[n][m] for m in range(M)] for n in range(M)]


def _not_realisable(where, k, value=None):
    tail = f" (smallest eigenvalue {value:.3g})" if value is not None else ""
    return ValueError(f"{where} is not realisable: the overlap matrix [[Q, R], [R^T, T]] of "
                      f"mode {k} is not positive semidefinite{tail}; order parameters must "
                      f"come from real weights")


def check_realisable(spec) -> None:
    init = spec.init
    if init.basis == "modes":
        for k, (Q, R, T) in enumerate(zip(init.Q, init.R, init.T)):
            if _psd_exact(_block(Q, R, T)) is not None:
                raise _not_realisable("[init.modes]", k)
        return
    _check_levels_realisable(spec)


def _check_levels_realisable(spec):
    """Levels -> modes (X_k = V^-1 X^(l)) at two precisions; a mode matrix whose smallest
    eigenvalue is below minus the difference of the two (the resolution of the map at the
    digits used) is refused."""
    import mpmath
    from solvers.app.spectrum import spectrum_of
    init = spec.init
    L = spec.data.L
    K, M = spec.model.K, spec.model.M
    spectrum = spectrum_of(spec)
    base = 30 + int(math.ceil(3 * L))
    results = []
    for dps in (base, base + 20):
        with mpmath.workdps(dps):
            lam = [mpmath.mpf(v.evalf(dps + 10)) if hasattr(v, "evalf") else mpmath.mpf(v)
                   for v in spectrum.eigenvalues]
            # the spectrum is descending; the user's levels refer to the same eigenvalues
            V = mpmath.matrix([[x ** l for x in lam] for l in range(L)])
            V1 = mpmath.matrix([[x ** l for x in lam] for l in range(1, L + 1)])

            def to_modes(A, levels):
                flat = [[_mpq(levels[l][i][j]) for l in range(len(levels))]
                        for i in range(len(levels[0])) for j in range(len(levels[0][0]))]
                try:
                    cols = [mpmath.lu_solve(A, mpmath.matrix(c)) for c in flat]
                except ZeroDivisionError:
                    raise ValueError("[init.levels] the modes map is singular at this spectrum "
                                     "(eigenvalues too close)") from None
                n, m_ = len(levels[0]), len(levels[0][0])
                return [[[cols[i * m_ + j][k] for j in range(m_)] for i in range(n)]
                        for k in range(L)]
            R = to_modes(V, init.R)
            Q = to_modes(V, init.Q)
            T = to_modes(V1, init.T[1:])
            mins = []
            for k in range(L):
                B = mpmath.matrix(_block(Q[k], R[k], T[k]))
                ev = mpmath.eigsy(B, eigvals_only=True)
                mins.append((min(ev), max(abs(x) for x in ev)))
            results.append(mins)
    for k, ((lo1, _), (lo2, scale)) in enumerate(zip(*results)):
        resolution = abs(lo1 - lo2) * 10 + scale * mpmath.mpf(10) ** (-base + 3 * L + 10)
        if lo2 < -resolution:
            raise _not_realisable("[init.levels] (through the modes map)", k, float(lo2))


def _mpq(x: Fraction):
    import mpmath
    return mpmath.mpf(x.numerator) / x.denominator
