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

from solvers.app.cli.common import json_command, spec_command


def _load(path):
    """The spec and its validated [linear] section (solvers.app.sections.LINEAR_SCHEMA)."""
    from solvers.app import sections
    from solvers.app.spec import load_spec
    spec = load_spec(path, extra_sections=("linear",))
    check_linear(spec)
    return spec, sections.read(spec, "linear", sections.LINEAR_SCHEMA)


def check_linear(spec) -> None:
    """What the linear theory needs of a spec (activation, K = M = 1, no explicit init)."""
    from solvers.app.spec import SpecError
    name = spec.path
    m, t = spec.model, spec.training
    if m.activation != "linear":
        raise SpecError(f'{name}: [model] activation = "{m.activation}" but the linear '
                        f'subcommands need activation = "linear"')
    if (m.K, m.M) != (1, 1):
        raise SpecError(f"{name}: [model] K = {m.K}, M = {m.M}: the linear theory is for "
                        f"K = M = 1 (a linear committee is one effective vector)")
    if t.init == "explicit":
        raise SpecError(f'{name}: [training] init = "explicit" is not supported by the linear '
                        f'theory (it averages over teacher and student; use "expected")')


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
    return {"alpha": list(alphas), "eps_g": out, "meta": meta}


def window_result_of(spec) -> dict:
    from solvers.theory.linear import modes_solution, window_result
    from solvers.app.solve import spectrum_of
    d, t = spec.data, spec.training
    if d.beta is None:
        raise ValueError("the power-law window needs [data] L and beta (not an eigenvalue list)")
    if not d.beta > 0:
        raise ValueError(f"the power-law window needs beta > 0, got {float(d.beta)}")
    res = window_result(d.L, float(d.beta), float(t.eta))
    res.update(L=d.L, beta=float(d.beta), eta=float(t.eta))
    if d.L <= 2048:
        # the exact curve's own local exponent at the centre (central difference, float64 modes)
        sol = modes_solution(spectrum_of(spec), t.eta, order=t.order, sigma_J=t.sigma_J)
        a, h = res["alpha_centre"], 1e-4
        hi, lo = sol.eps_g(a * math.exp(h)), sol.eps_g(a * math.exp(-h))
        res["exponent_exact_curve"] = -(math.log(hi) - math.log(lo)) / (2 * h)
    return res


@json_command(_load)
def cmd_curve(args, spec, options) -> dict:
    return curve_result(spec, options["route"])


@json_command(_load)
def cmd_window(args, spec, _) -> dict:
    return window_result_of(spec)


@json_command(_load)
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
