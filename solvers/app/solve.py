"""From a spec to a result: the ``solve`` subcommand's engine.

One direction, plan → run → verify: the precision policy (``[solve] dps``: "auto", an integer,
"float64") makes the plan once (:func:`solvers.hierarchy.precision.plan_for`, the same rules
:mod:`solvers.app.sizing` announces from), :func:`solvers.hierarchy.runner.execute` runs its steps
and :mod:`solvers.hierarchy.verify` checks each result against it.
"""
from __future__ import annotations

import os
import time
from fractions import Fraction

import mpmath
import numpy as np

from derive.keys import SystemKey  # noqa: F401  (public here too)

from solvers import __version__
from solvers.hierarchy import precision, runner
from solvers.app.validate import check_generated_system
from solvers.hierarchy.precision import FLOAT64_MAX_DIGITS, FLOAT64_RTOL, PrecisionLost  # noqa: F401
from solvers.core.problem import Problem, expected_init, explicit_init, random_init
from solvers.integrators.rk78 import IntegrationError
from solvers.app.spec import Spec, refuse_training_options, resolved_spec
from solvers.app.spectrum import spectrum_of  # noqa: F401  (public here too)
from solvers.theory.exponent import late_exponent




# the family's options the ODEs implement; the others are refused, never silently ignored
# (a schedule and a trained readout with its eta_readout: every route of solve but the stiff
# float64 solver, whose eta is constant; "steps" piece by piece)
ODE_TRAINING_OPTIONS = ("noise", "weight_decay", "batch_size", "schedule", "eta_readout",
                        "weight_decay_readout")


def _refuse_family_options(spec: Spec) -> None:
    """One line naming the family options the ODEs do not implement: a solve must not
    silently return the curve of another model.  Called by ``compare`` before it simulates."""
    from solvers.app.spec import SpecError
    try:
        refuse_training_options(spec, "the ODEs", supported=ODE_TRAINING_OPTIONS)
    except ValueError as e:
        raise SpecError(f"{spec.path}: {e}") from None


def problem_of(spec: Spec) -> Problem:
    _refuse_family_options(spec)
    check_generated_system(spec)      # refuse a derivation that would take hours
    m, d, tr = spec.model, spec.data, spec.training
    key = m.system_key()
    spectrum = spectrum_of(spec)
    if tr.init in ("random", "informed"):
        init = random_init(m.K, m.M, d.N, spectrum, tr.sigma_J, tr.seed, d.rotate,
                           informed=tr.init == "informed")
    elif tr.init == "expected":
        init = expected_init(spectrum, m.K, m.M, tr.sigma_J)
    else:
        init = explicit_init(spec.init.basis, spec.init.R, spec.init.Q, spec.init.T)
    trained = key.trained
    return Problem(key, spectrum, Fraction(tr.eta), tr.order, init, noise=tr.noise,
                   weight_decay=tr.weight_decay, batch_size=tr.batch_size,
                   schedule=tr.schedule_dict(),
                   eta_readout=tr.eta_readout if trained else None,
                   weight_decay_readout=tr.weight_decay_readout,
                   readout0=m.initial_readout() if trained else None)


def run(problem: Problem, alphas, *, basis: str, dps, digits: int, progress=None):
    """The trajectory at ``alphas`` (starting at 0) under the precision policy: the plan first
    (``precision.plan_for``, which also refuses a request its arithmetic cannot meet), then its
    execution (``runner.execute``), each run checked by ``verify``."""
    plan = precision.plan_for(problem, basis, dps, digits)
    return runner.execute(plan, problem, alphas, progress=progress)


def _knobs_of_a_failed_integration(spec: Spec, e: Exception) -> str:
    """The integrator's reason with the knobs that set the ODEs' time scale.  An adaptive step
    shrinks until it underflows (or the steps run out) when the rates are huge or the state
    blows up: both scale with eta, with eta v^2 for student readouts v, and with the label
    noise in the eta^2 terms."""
    tr, m = spec.training, spec.model
    knobs = [f"[training] eta = {float(tr.eta):g}"]
    if tr.noise:
        knobs.append(f"noise = {float(tr.noise):g}")
    if tr.sigma_J > 1:
        knobs.append(f"sigma_J = {float(tr.sigma_J):g}")
    if m.student_readout is not None:
        knobs.append(f"[model] student_readout = {[float(x) for x in m.student_readout]}")
    why = str(e) if isinstance(e, IntegrationError) else f"{type(e).__name__}: {e}"
    if why.endswith("(alpha_max)"):             # rk78: the span, not the rates, is the problem
        return (f"the ODEs could not be integrated ({why[:-12]}): shorten [solve] alpha_max = "
                f"{spec.solve.alphas[-1] if spec.solve.alphas else spec.solve.alpha_max:g} "
                f"or raise [solve] dps")
    return (f"the ODEs could not be integrated ({why}): the order parameters diverge or change "
            f"far faster than the alpha grid; reduce " + " or ".join(knobs))


def _format_eps(values, digits: int):
    if digits > 15:
        with mpmath.workdps(digits + 5):
            return [mpmath.nstr(v, digits, strip_zeros=False) for v in values]
    return [float(v) for v in values]


def solve_spec(spec: Spec, progress=None) -> dict:
    """Solve a spec; returns the JSON-ready result (keys: docs/guide/cli.md).

    ``progress``: None, a :class:`solvers.core.progress.Progress` or a callable ``tick(alpha)``.
    ``meta.route`` names the route of the precision policy that ran.
    """
    started, cpu_started = time.perf_counter(), _cpu_s()
    precision.check_request(spec.solve.basis, spec.solve.dps, spec.solve.digits)
    problem = problem_of(spec)
    grid = spec.solve.alpha_grid()
    alphas = grid if grid[0] == 0 else [0.0] + list(grid)
    try:
        traj = run(problem, alphas, basis=spec.solve.basis, dps=spec.solve.dps,
                   digits=spec.solve.digits, progress=progress)
    except (IntegrationError, OverflowError, ZeroDivisionError) as e:
        # an overflow inside the integration is the same event: the state left float range
        raise IntegrationError(_knobs_of_a_failed_integration(spec, e)) from None
    skip = len(alphas) - len(grid)
    eps = traj.eps_g[skip:]
    for a, e in zip(grid, eps):
        if not mpmath.isfinite(e):
            raise PrecisionLost(f"eps_g is not finite at alpha = {a}")
        if e < 0:       # a value within its error bound of 0 is reported as 0 (odes.py)
            raise PrecisionLost(f"eps_g = {float(e):.3g} < 0 at alpha = {a}, beyond its error "
                                f"bound {traj.stats.get('eps_g_bound', 0.0):.2g}: precision lost")
    return {
        "alpha": [float(a) for a in grid],
        "eps_g": _format_eps(eps, spec.solve.digits),
        "R1": np.asarray(traj.R1[skip:]).tolist(),
        "Q1": np.asarray(traj.Q1[skip:]).tolist(),
        # a trained readout's v_1..v_K at every alpha
        **({"v": traj.v[skip:].tolist()} if traj.v is not None else {}),
        # the exponent fitted on the grid's last decade, with its uncertainty
        "late_exponent": late_exponent(grid, [float(e) for e in eps]),
        "meta": {
            "version": __version__,
            "basis": traj.basis,
            # which route of the policy produced the numbers: basis/arithmetic/integrator/check
            # (e.g. "modes/float64/rodas4/tighter"); routes whose check failed before it
            "route": traj.stats.get("route"),
            "routes_tried": traj.stats.get("routes_tried", []),
            "arithmetic": traj.arithmetic,
            "dps": traj.dps,
            "digits": spec.solve.digits,
            # exact agreement (inf) is reported as the digits the run carries
            "agreement_digits": _json_float(_capped(traj.stats.get("agreement_digits"), traj.dps)),
            "n_steps": traj.stats.get("n_steps"),
            # the absolute error bound of eps_g: a value within it of 0 is reported as 0
            **({"eps_g_bound": float(traj.stats["eps_g_bound"])}
               if "eps_g_bound" in traj.stats else {}),
            # what a float64 overlap state resolves of eps_g: it caps the digits claimed
            **({"eps_g_resolution": float(traj.stats["eps_g_resolution"])}
               if "eps_g_resolution" in traj.stats else {}),
            # the end of learning: from this alpha on the state is the teacher's to the run's
            # precision, held (eps_g = 0 within eps_g_bound)
            **({"converged_at_alpha": float(traj.stats["held_from"])}
               if "held_from" in traj.stats else {}),
            "n_fevals": traj.stats.get("n_fevals"),
            "wall_s": time.perf_counter() - started,
            # user + system time of this process and its reaped children: with
            # concurrent_runs the verifying pair ran in two processes at once (two CPUs)
            "cpu_s": _cpu_s() - cpu_started,
            "concurrent_runs": bool(traj.stats.get("concurrent_runs", False)),
            "activation": spec.model.activation, "K": spec.model.K, "M": spec.model.M,
            **_family_meta(spec.model),
            "L": problem.L, "eta": float(spec.training.eta), "order": spec.training.order,
            **_schedule_meta(spec.training),
            **_run_meta(spec),
            # the spec as it ran (every default filled in): fed back as a .json spec it
            # re-runs to these numbers
            "spec": resolved_spec(spec),
        },
    }


def _run_meta(spec) -> dict:
    """The data and training values a reader looks for next to the route."""
    d, t = spec.data, spec.training
    out = {"beta": None if d.beta is None else float(d.beta), "N": d.N, "seed": t.seed,
           "sigma_J": float(t.sigma_J), "init": t.init, "noise": float(t.noise),
           "weight_decay": float(t.weight_decay), "batch_size": t.batch_size}
    return {k: v for k, v in out.items() if v is not None}     # no null in the JSON


def _family_meta(m) -> dict:
    """The committee-machine family's model keys, for models other than the original one."""
    if m.is_plain:
        return {}
    out = {"student_activation": m.student, "teacher_activation": m.teacher,
           "readouts": list(m.system_key().readouts)}
    if m.readout == "trained":
        out["readout"] = "trained"
        out["readouts"] = list(m.initial_readout()) + out["readouts"][m.K:]
    return out


def _schedule_meta(tr) -> dict:
    """The learning-rate schedule the ODEs integrated (absent for a constant η)."""
    if tr.schedule is None:
        return {}
    return {"schedule": {k: ([float(x) for x in v] if isinstance(v, tuple) else
                             v if isinstance(v, str) else float(v))
                         for k, v in tr.schedule_dict().items()}}


def _cpu_s() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _capped(agree, dps):
    return None if agree is None else min(float(agree), float(dps))


def _json_float(x):
    if x is None:
        return None
    x = float(x)
    return x if np.isfinite(x) else None
