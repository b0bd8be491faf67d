"""``scaling-odes plrf curve|frontier|simulate SPEC.toml``: power-law random features trained
by one-pass mini-batch SGD.

    [plrf] alpha = 1.0; beta = 0.7     # σ_j = j^(-2 alpha), b_j = j^(-beta)
           v = 800                     # input dimension: an integer, or "inf" (needs 2 alpha > 1;
                                       # deterministic route only); or v_over_d = 4 instead
           d = 200                     # features (frontier: a list, the ladder of sizes)
           batch = 1
           gamma = 0.3                 # summed-gradient step θ ← θ − γ Σ_{i≤B} φᵢ(⟨φᵢ,θ⟩ − yᵢ);
                                       # "auto": 0.5/Σ_{j≤v} σ_j (per d on a ladder)
           route = "exact"             # one seeded draw of W, or "deterministic" (large v, d)
           seed = 0                    # the draw of W (exact route, simulate)
           steps = [10, 100, 1000]     # the r to report; or r_max = 1e6 with n_points = 60
           # frontier:  f_min = 1e3; f_max = 1e12; n_f = 109; noise = true (false: no SGD noise)
           # simulate:  runs = 400; sim_seed = 1; inputs = "full" (or "features": (Wᵀx, bᵀx)
           #            drawn from their joint Gaussian law, d + 1 numbers per sample)

JSON: ``curve`` → ``r``, ``loss`` (p(r) = E P(θ_r)), ``meta`` (route, p_star, p_inf — the
plateau P*/(1 − ‖K‖) —, norm_K, max_rel_error, and for the deterministic route c0 and the
spectral totals); ``frontier`` → ``f``, ``d_star``, ``loss_star``, ``xi``, ``eta`` (fitted, with
``xi_se``, ``eta_se``; ``xi_err``, ``eta_err`` add the ladder's drift between its lower and
upper sub-ladders, ``xi_sub``, ``eta_sub``; null on a ladder too short to split),
``predicted`` {phase, xi, eta}, ``d``, ``gamma`` (per d), ``meta``;
``simulate`` → the exact curve of the draw plus ``sim`` {loss, sem, z, runs, ...}.
"""
from __future__ import annotations

import math

from solvers.app.cli.common import CliError, json_command, spec_command
from solvers.app.spec import (REQUIRED, check, check_sections, convert,
                              parse_section, read_document, section_error)

VERBS = ("curve", "frontier", "simulate")
MAX_LADDER = 40


def _passed(toml_type: str):
    """A converter that keeps the raw value (checked with the other keys in load_document);
    ``toml_type`` is what the reference page says it accepts."""
    def convert(v, label):
        return v
    convert.toml_type = toml_type
    return convert

PLRF_SCHEMA = {
    "alpha": (convert.float, REQUIRED, check.gt(0)),           # σ_j = j^(−2α)
    "beta": (convert.float, REQUIRED, None),                  # b_j = j^(−β); α + β > 1/2
    # input dimension; "inf" needs 2α > 1 and the deterministic route; or v_over_d instead
    "v": (_passed('integer or "inf"'), None, None),
    "v_over_d": (convert.float, None, check.gt(1)),           # v = round(v_over_d · d)
    # features; frontier: a list of >= 3 sizes (the ladder)
    "d": (_passed("integer (frontier: list of integers)"), REQUIRED, None),
    "batch": (convert.int, 1, check.all(check.ge(1), check.rule(lambda v: v <= 10 ** 6,
                                                                "must be <= 1000000"))),
    # the step on the summed batch gradient, or "auto" = 0.5/Σ_{j≤v} σ_j
    "gamma": (_passed('number > 0 or "auto"'), REQUIRED, None),
    "route": (convert.str, "exact", check.one_of("exact", "deterministic")),
    "seed": (convert.int, 0, check.ge(0)),                    # the draw of W
    # the r to report; or r_max with n_points (log-spaced in 1..r_max)
    "steps": (convert.list_of(convert.int, "list of integers"), None,
              check.all(check.each(check.ge(0)), check.increasing)),
    "r_max": (convert.int, None, check.ge(1)),
    "n_points": (convert.int, None, check.all(check.ge(2), check.rule(
        lambda v: v <= 100_000, "must be <= 100000"))),
    "f_min": (convert.float, 1e3, check.gt(0)),               # frontier: compute f = B·d·r
    "f_max": (convert.float, 1e12, check.gt(0)),
    "n_f": (convert.int, 109, check.all(check.ge(3), check.rule(lambda v: v <= 10_000,
                                                               "must be <= 10000"))),
    "noise": (convert.bool, True, None),                      # frontier: false drops SGD noise
    # simulate: runs, their seed, x in R^v ("full") or (Wᵀx, bᵀx) from their joint law
    "runs": (convert.int, 400, check.all(check.ge(2), check.rule(lambda v: v <= 10 ** 6,
                                                                "must be <= 1000000"))),
    "sim_seed": (convert.int, 1, check.ge(0)),
    "inputs": (convert.str, "full", check.one_of("full", "features")),
}


def _int_d(x, name, what="d"):
    if isinstance(x, bool) or not isinstance(x, int) or x < 1 or x > 10 ** 7:
        raise section_error(name, "plrf", f"{what} = {x!r} must be an integer in 1..10000000")
    return x


def _v(sec, name, d):
    """v as an int or math.inf, from v or v_over_d (one of them)."""
    if sec["v"] is not None and sec["v_over_d"] is not None:
        raise section_error(name, "plrf", "give v or v_over_d, not both")
    if sec["v_over_d"] is not None:
        return None
    v = sec["v"]
    if v is None:
        raise section_error(name, "plrf", "missing key 'v' (an integer, or \"inf\" where "
                            "2*alpha > 1) or 'v_over_d'")
    if v == "inf":
        if not 2 * sec["alpha"] > 1:
            raise section_error(name, "plrf", f"v = \"inf\" needs 2*alpha > 1 (alpha = "
                                f"{sec['alpha']:g}); below, give an integer v proportional "
                                f"to d")
        return math.inf
    if isinstance(v, bool) or not isinstance(v, int) or v < 1 or v > 10 ** 8:
        raise section_error(name, "plrf", f"v = {v!r} must be an integer in 1..100000000 or "
                            f"\"inf\"")
    return v


def _gamma(sec, name):
    g = sec["gamma"]
    if g == "auto":
        return "auto"
    if isinstance(g, bool) or not isinstance(g, (int, float)) or not math.isfinite(g) or g <= 0:
        raise section_error(name, "plrf", f"gamma = {g!r} must be a number > 0 or \"auto\"")
    return float(g)


def _r(sec, name):
    if sec["steps"] is not None:
        if sec["r_max"] is not None or sec["n_points"] is not None:
            raise section_error(name, "plrf", "give steps or r_max with n_points, not both")
        return list(sec["steps"])
    if sec["r_max"] is None or sec["n_points"] is None:
        raise section_error(name, "plrf", "missing the r to report: steps = [...] or r_max "
                            "with n_points")
    if sec["r_max"] > 10 ** 15:
        raise section_error(name, "plrf", f"r_max = {sec['r_max']} must be <= 1e15")
    from solvers.theory.plrf import r_grid
    return r_grid(sec["r_max"], sec["n_points"])


def load_document(doc: dict, name: str, verb: str):
    """(kwargs for the theory call) of a TOML document; SpecError (one line) on bad input.
    Everything is checked, and the request sized, before any work."""
    from solvers.theory import plrf as T
    check_sections(doc, ("plrf",), "plrf", name=name)
    sec = parse_section(doc, "plrf", PLRF_SCHEMA, name=name)
    if sec["alpha"] + sec["beta"] <= 0.5:
        raise section_error(name, "plrf", f"alpha + beta = {sec['alpha'] + sec['beta']:g} "
                            f"must be > 1/2 (below, the initial loss grows without bound with "
                            f"v: no scaling law)")
    gamma = _gamma(sec, name)
    if verb == "frontier":
        ds = sec["d"]
        if not isinstance(ds, list) or len(ds) < 3:
            raise section_error(name, "plrf", f"d = {ds!r}: frontier needs a list of at least "
                                f"3 sizes (the ladder)")
        if len(ds) > MAX_LADDER:
            raise section_error(name, "plrf", f"d has {len(ds)} sizes (at most {MAX_LADDER})")
        ds = [_int_d(x, name, f"d[{i}]") for i, x in enumerate(ds)]
        if len(set(ds)) != len(ds):
            raise section_error(name, "plrf", "d must not repeat a size")
        if sec["v"] is not None and sec["v"] != "inf":
            raise section_error(name, "plrf", "frontier: give v_over_d (v grows with d) or "
                                "v = \"inf\"")
        v = _v(sec, name, max(ds))
        v_over_d = math.inf if v == math.inf else sec["v_over_d"]
        if sec["f_max"] <= sec["f_min"]:
            raise section_error(name, "plrf", f"f_max = {sec['f_max']:g} must be > f_min = "
                                f"{sec['f_min']:g}")
        if sec["route"] != "deterministic" and "route" in doc["plrf"]:
            raise section_error(name, "plrf", "frontier runs on the deterministic route "
                                "(route = \"deterministic\" or leave it out)")
        try:
            costs = [T.size_curve(T.Problem(sec["alpha"], sec["beta"], v if v == math.inf else
                                            int(round(v_over_d * d)), d, sec["batch"], 1.0),
                                  "deterministic", sec["n_f"]) for d in ds]
        except ValueError as exc:
            raise section_error(name, "plrf", str(exc)) from None
        est = _announce("plrf frontier", f"deterministic, {len(ds)} sizes",
                        sum(c for c, _ in costs), max(b for _, b in costs))
        return {"estimate": est, "alpha": sec["alpha"], "beta": sec["beta"], "ds": ds,
                "v_over_d": v_over_d,
                "batch": sec["batch"], "gamma": gamma, "f_min": sec["f_min"],
                "f_max": sec["f_max"], "n_f": sec["n_f"], "noise": sec["noise"]}
    d = _int_d(sec["d"], name)
    v = _v(sec, name, d)
    if v is None:
        v = int(round(sec["v_over_d"] * d))
    if gamma == "auto":
        from solvers.theory.plrf.frontier import gamma_auto
        gamma = gamma_auto(sec["alpha"], v)
    try:
        pb = T.Problem(sec["alpha"], sec["beta"], v, d, sec["batch"], gamma)
    except ValueError as exc:
        raise section_error(name, "plrf", str(exc)) from None
    r = _r(sec, name)
    route = sec["route"]
    try:
        if verb == "simulate":
            if v == math.inf:
                raise ValueError("simulate needs a finite v")
            curve_s, curve_b = T.size_curve(pb, "exact", len(r))
            sim_s, sim_b = T.size_simulation(pb, max(r), sec["runs"], sec["inputs"])
            est = _announce("plrf simulate", f"{sec['runs']} runs + the exact curve",
                            curve_s + sim_s, max(curve_b, sim_b))
            return {"estimate": est, "pb": pb, "r": r, "seed": sec["seed"], "runs": sec["runs"],
                    "sim_seed": sec["sim_seed"], "inputs": sec["inputs"]}
        secs, need = T.size_curve(pb, route, len(r))
    except ValueError as exc:
        raise section_error(name, "plrf", str(exc)) from None
    est = _announce("plrf curve", route, secs, need)
    return {"estimate": est, "pb": pb, "r": r, "route": route, "seed": sec["seed"]}


def _announce(command: str, route: str, secs: float, need: float):
    """The estimate (the model of ``solvers.theory.plrf``'s sizing), announced before the
    work."""
    from solvers.app.sizing import announce, work_estimate
    est = work_estimate(command, route, "float64", secs, need)
    announce(est)
    return est


def run(kw: dict, verb: str) -> dict:
    """The computation of a verb on checked inputs (CliError for a refused step)."""
    from solvers.theory import plrf as T
    try:
        if verb == "curve":
            return _with_exponent(T.curve(kw["pb"], kw["r"], kw["route"], kw["seed"]))
        if verb == "simulate":
            return T.simulate(kw["pb"], kw["r"], kw["runs"], kw["seed"], kw["sim_seed"],
                              kw["inputs"])
        return _frontier(kw)
    except (T.Unstable, T.DEError) as exc:
        raise CliError(str(exc)) from None


def _with_exponent(out: dict) -> dict:
    """The curve's late exponent: p(r) - p_inf (the loss the curve tends to) fitted on the last
    decade of r, with its uncertainty."""
    from solvers.theory.exponent import late_exponent
    out["late_exponent"] = late_exponent(out["r"], out["loss"], floor=out["meta"]["p_inf"])
    return out


def _frontier(kw: dict) -> dict:
    import time

    import numpy as np

    from solvers import __version__
    from solvers.theory.plrf.frontier import frontier
    t0 = time.perf_counter()
    f = np.geomspace(kw["f_min"], kw["f_max"], kw["n_f"])
    out = frontier(kw["alpha"], kw["beta"], kw["ds"], kw["v_over_d"], kw["batch"],
                   kw["gamma"], f, noise=kw["noise"])
    if len(out["f"]) < 3:
        raise CliError(f"the frontier has {len(out['f'])} interior minima over d = "
                       f"{kw['ds']}: widen the ladder or the range of f (f_min, f_max)")
    out.pop("f_grid")
    out.pop("loss_table")
    out["meta"] = {"version": __version__, "alpha": kw["alpha"], "beta": kw["beta"],
                   "v_over_d": "inf" if kw["v_over_d"] == math.inf else kw["v_over_d"],
                   "batch": kw["batch"], "noise": kw["noise"],
                   "wall_s": time.perf_counter() - t0}
    return out


def _loader(verb):
    def load(path):
        name = str(path)
        return (load_document(read_document(path), name, verb),)
    return load


def _command(verb):
    @json_command(_loader(verb))
    def cmd(args, kw) -> dict:
        return run(kw, verb)
    return cmd


def register(subparsers) -> None:
    p = subparsers.add_parser("plrf", help="power-law random features under one-pass SGD")
    sub = p.add_subparsers(dest="plrf_command", required=True)
    for verb, text in (("curve", "the expected loss p(r) (exact draw or deterministic)"),
                       ("frontier", "compute-optimal d*(f), loss*(f) and their exponents"),
                       ("simulate", "seeded SGD runs next to the exact curve of the draw")):
        spec_command(sub, verb, _command(verb), text)
