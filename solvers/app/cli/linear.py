"""``scaling-odes linear curve|window|feature-scaling SPEC.toml``: the linear K = M = 1 theory.

The spec is the common one (docs/guide/spec.md) with ``[model] activation = "linear"``, K = M = 1
(the averaged linear theory is that of one student and one teacher vector; other K, M are
refused rather than silently mapped), ``[training] init = "expected"`` or ``"random"`` (the
curve is the average over teacher and initial student either way; ``sigma_J`` enters as
1 + σ_J²; ``explicit`` initial conditions are refused) and an optional section

    [linear]  route = "modes"      # "modes" | "companion" | "levels" (see solvers/theory/linear.py)

``[solve] basis`` is not used here (``route`` chooses); ``dps`` = "auto" raises the precision
until two runs agree on ``digits``; an integer dps is checked the same way and refused when too
small; "float64" uses the modes route in float64 (≤ 12 digits).
"""
from __future__ import annotations

import math
import time
from fractions import Fraction

import numpy as np

from solvers.app.cli.common import json_command, spec_command


def _load(path, command: str):
    """The spec and its validated [linear] section (solvers.app.sections.LINEAR_SCHEMA), sized
    by the route ``linear COMMAND`` will run (solvers.app.validate.check_linear)."""
    from solvers.app.spec import load_spec
    spec = load_spec(path, extra_sections=("linear",), sizing=None)
    return spec, checked_options(spec, command)


def checked_options(spec, command: str) -> dict:
    """What the linear theory needs of a spec (activation, K = M = 1, no explicit init) and its
    [linear] options, sized by the route ``linear COMMAND`` runs; SpecError in one line."""
    from solvers.app import sections
    from solvers.app.spec import SpecError
    from solvers.app.validate import check_linear
    name = spec.path
    m, t = spec.model, spec.training
    if not t.is_plain:
        raise SpecError(f"{name}: [training] noise, weight_decay, batch_size: the exact linear "
                        f"theory has none of them (keep the defaults 0, 0, 1; `scaling-odes "
                        f"solve` integrates them)")
    if not (m.is_plain and m.activation == "linear"):
        raise SpecError(f'{name}: [model] {m.system_key().description} but the linear '
                        f'subcommands need activation = "linear" (teacher = student, '
                        f'paper readouts)')
    from solvers.app.spec import refuse_training_options
    try:
        refuse_training_options(spec, "the linear theory")
    except ValueError as e:
        raise SpecError(f"{name}: {e}") from None
    if (m.K, m.M) != (1, 1):
        raise SpecError(f"{name}: [model] K = {m.K}, M = {m.M}: the linear theory is for "
                        f"K = M = 1 (a linear committee is one effective vector)")
    if t.init in ("explicit", "informed"):
        raise SpecError(f'{name}: [training] init = "{t.init}" is not supported by the linear '
                        f'theory (it averages over teacher and student; use "expected")')
    options = sections.read(spec, "linear", sections.LINEAR_SCHEMA)
    try:
        check_linear(spec, command, options["route"], options)
    except SpecError:
        raise
    except ValueError as e:
        raise SpecError(f"{name}: {' '.join(str(e).split())}") from None
    from solvers.app.sizing import announce, work_estimate
    from solvers.app.validate import linear_work
    secs, need, what = linear_work(spec, command, options["route"], options)
    announce(work_estimate(f"linear {command}", what, f"{spec.solve.digits} digits", secs,
                           need))
    return options


def _loader(command: str):
    return lambda path: _load(path, command)


def curve_result(spec, route: str, progress=None) -> dict:
    from solvers import __version__
    from solvers.theory.linear import exact_curve, modes_solution
    from solvers.app.solve import spectrum_of
    spectrum = spectrum_of(spec)
    s, t = spec.solve, spec.training
    alphas = s.alpha_grid()
    started = time.perf_counter()
    meta = {"version": __version__, "route": route, "L": spectrum.L, "eta": float(t.eta),
            "order": t.order, "sigma_J": float(t.sigma_J), "digits": s.digits}
    if s.dps == "float64":
        if route != "modes":
            raise ValueError(f'dps = "float64" is only stable in the modes route (route = {route!r})')
        if s.digits > 12:
            raise ValueError(f'dps = "float64" gives at most 12 digits (asked for {s.digits})')
        sol = modes_solution(spectrum, t.eta, order=t.order, sigma_J=t.sigma_J, dps=None)
        eps = [sol.eps_g(a) for a in alphas]
        meta.update(dps="float64")
    else:
        dps = None if s.dps == "auto" else int(s.dps)
        vals, info = exact_curve(spectrum, t.eta, [Fraction(a) for a in alphas], order=t.order,
                                 sigma_J=t.sigma_J, route=route, digits=s.digits, dps=dps)
        eps = vals
        meta.update(info)
    if any(not math.isfinite(float(v)) for v in eps):
        raise ValueError("eps_g is not finite (eta too large: the dynamics diverge for "
                         "eta * nu_1 >= 2)")
    if s.digits > 15 and s.dps != "float64":
        import mpmath     # here: the other subcommands start without it (~30 ms)
        out = [mpmath.nstr(v, s.digits, strip_zeros=False) for v in eps]
    else:
        out = [float(v) for v in eps]
    meta["wall_time"] = time.perf_counter() - started
    res = {"alpha": list(alphas), "eps_g": out, "meta": meta}
    res.update(_exponents(spec, alphas, eps))
    return res


def _exponents(spec, alphas, eps) -> dict:
    """The curve's late exponent (solvers.theory.exponent: the last decade of the grid, with
    its uncertainty) and, on a power-law spectrum, the theory's beside it: β/(1+β) and the
    local exponent of the window's approximation at its centre (solvers.theory.linear)."""
    from solvers.theory.exponent import late_exponent
    out = {"late_exponent": late_exponent(alphas, [float(v) for v in eps])}
    d, t = spec.data, spec.training
    if d.beta is not None and d.beta > 0:
        from solvers.theory.linear import window_result
        w = window_result(d.L, float(d.beta), float(t.eta))
        out["exponent_theory"] = {"asymptotic": w["exponent_theory"],
                                  "local_at_centre": w["exponent"],
                                  "alpha_centre": w["alpha_centre"],
                                  "window": [w["alpha_lower"], w["alpha_upper"]]}
    return out


def window_result_of(spec) -> dict:
    from types import SimpleNamespace
    from solvers.app.simulation import eigenvalues_of
    from solvers.app.validate import WINDOW_EXACT_MAX_L
    from solvers.theory.linear import modes_solution, window_result
    d, t = spec.data, spec.training
    if d.beta is None:
        raise ValueError("the power-law window needs [data] L and beta (not an eigenvalue list)")
    if not d.beta > 0:
        raise ValueError(f"[data] beta = {float(d.beta):g}: the power-law window needs "
                         f"beta > 0")
    res = window_result(d.L, float(d.beta), float(t.eta))
    res.update(L=d.L, beta=float(d.beta), eta=float(t.eta))
    if d.L <= WINDOW_EXACT_MAX_L:
        # the exact curve's own local exponent at the centre (central difference, float64
        # modes).  The float64 route reads only float(eigenvalue) and float(weight): the
        # correctly rounded values (mpmath, 40 digits) stand in for the exact SymPy spectrum,
        # which costs minutes at L = 2048 when beta is not an integer
        lam = eigenvalues_of(spec)
        spectrum = SimpleNamespace(eigenvalues=lam, weights=[1.0 / d.L] * d.L, L=d.L)
        sol = modes_solution(spectrum, t.eta, order=t.order, sigma_J=t.sigma_J)
        a, h = res["alpha_centre"], 1e-4
        hi, lo = sol.eps_g(a * math.exp(h)), sol.eps_g(a * math.exp(-h))
        with np.errstate(all="ignore"):
            res["exponent_exact_curve"] = -(math.log(hi) - math.log(lo)) / (2 * h) \
                if hi > 0 and lo > 0 and math.isfinite(hi) and math.isfinite(lo) else math.nan
        if not math.isfinite(res["exponent_exact_curve"]):
            raise ValueError(f"[training] eta = {float(t.eta):g}: the exact curve is not finite "
                             f"at the window's centre alpha = {a:.6g} (the dynamics diverge for "
                             f"eta * lambda_1 >= 2 at order 2)")
    return res


@json_command(_loader("curve"))
def cmd_curve(args, spec, options) -> dict:
    return curve_result(spec, options["route"])


@json_command(_loader("window"))
def cmd_window(args, spec, _) -> dict:
    return window_result_of(spec)


@json_command(_loader("feature-scaling"))
def cmd_feature_scaling(args, spec, options) -> dict:
    from solvers.theory.feature_scaling import feature_scaling_result
    return feature_scaling_result(spec, options=options)


def register(subparsers) -> None:
    p = subparsers.add_parser("linear", help="linear activation, K = M = 1: exact theory")
    sub = p.add_subparsers(dest="linear_command", required=True)
    for name, func, text in (
            ("curve", cmd_curve, "exact eps_g(alpha) at any learning rate"),
            ("window", cmd_window, "power-law window and local exponent"),
            ("feature-scaling", cmd_feature_scaling, "eps_g with N_l trainable directions")):
        spec_command(sub, name, func, text)
