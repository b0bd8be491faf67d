"""``scaling-odes bayes [transitions|limit] SPEC.toml``: the Bayes-optimal baseline.

    [bayes]  activation = "cubic"   # "erf3" | "relu4" | "tanh3" | ("erf"|"relu"|"tanh" with drop_low_orders)
             hermite = [mu3, mu4, ...]    hermite_start = 3    drop_low_orders = false
             d = 200   gamma = 1.0   Delta = 0.1   beta = 1.0     # or readouts = [v_1^2, ...]
             n_over_d = [1, 10, 100]                              # or alpha = [...] (= n/d^2)
             selection = "potential"   # "uninformed" | "informed"
             features = [1, 2, 3]      # transitions: which features (default 1..5)
             completion = false        # limit, beta < 1/2: also locate the BO completion
             dps = 30                  # digits of lambda_sigma, q_sigma
             channel = "gaussian"      # "glm" (experimental, cubic, curve only): O(1) readouts as GLMs
             glm_units = "outside"     # with "glm": the features that can leave the regime | "all"

JSON keys: ``n_over_d``, ``alpha``, ``eps_bo``, ``kc``, ``q`` (per point, per feature),
``fixed_points`` (per point: [{eps, kc, psi}]), ``lambda_sigma``, ``q_sigma``, ``meta``;
``transitions`` → ``features`` (per feature: appears, switch, ends, q_jump, n/d and α);
``limit`` → the d → ∞ forms (see solvers/theory/bayes/limits.py).
Curve and transitions also carry ``readout_regime`` (solvers/theory/bayes/regime.py): per
feature v²/(Δ+ε), the measured error of the Gaussian channel and whether the feature is in the
regime where the fixed point holds; its ``warnings`` (also printed to stderr) name the
transitions outside it.  With ``channel = "glm"`` the curve instead treats those features as
generalised linear models (solvers/theory/bayes/glm_channel.py; ``meta.glm_features``,
``meta.channel_note``) and carries no ``readout_regime``; transitions and limit refuse it.
"""
from __future__ import annotations

import math
from fractions import Fraction

from solvers.app.cli.common import json_command
from solvers.app.spec import (REQUIRED, check, convert, parse_section, read_document,  # noqa: F401
                              section_error)

from solvers.app.validate import MAX_MAGNITUDE, RANGE_TEXT, in_range

_EXACT_LIST = convert.list_of(convert.exact, "list of numbers or decimal strings")
_FLOAT_LIST = convert.list_of(convert.float, "list of numbers")
_RANGE = check.rule(in_range, RANGE_TEXT)


def _at_most(n):
    return check.rule(lambda v: v <= n, f"must be <= {n}")


MAX_K = 10 ** 6                # features: float64 vectors of k per fixed point and grid point
MAX_POINTS = 10 ** 5           # n_over_d / alpha entries
MAX_HERMITE_ORDER = 64         # highest Hermite order ℓ (tanh3 uses 61): ℓ! and a degree-ℓ g
MAX_BETA = 50                  # readouts i^-2β: beyond, all but the first feature underflow
# measured (cubic, one core, loaded machine): a point of the curve 0.26-0.38 s at k = 2e3..2e5
# (vectorised over features: ~1.3e-6 s per feature at k = 2e5), and as CPU time of whole
# processes 0.045 s at k = 100 (1 and 20 points: 1.2 and 2.05 s); a transition 0.73 s of CPU
# per feature at k = 100, Δ = 0.1, 1.8 s at Δ = 0.01 and more than 14 s at Δ = 1e-4 (the
# root search runs over more decades of n/d): the law grows as (0.1 / Δ)^(1/2) below 0.1
_SECONDS_PER_POINT, _SECONDS_PER_POINT_FEATURE = 0.045, 1.5e-6
_SECONDS_PER_TRANSITION, _SECONDS_PER_TRANSITION_FEATURE = 0.7, 2e-5
# channel = "glm": 10-20 block iterations per point, each a Gaussian solve of the rest and a
# global maximisation per GLM unit; measured CPU per point (cubic, β = 1, Δ = 0.1): 0.2-0.4 s with
# 33 GLM units at k = 200, 0.54 s with 33 at k = 2000, 3.9 s with 200, 37 s with 2000 units
# (≈ 0.019 s per GLM unit and point; the rest's Gaussian solves ≈ 20 × the per-point cost above)
_SECONDS_PER_GLM_POINT, _SECONDS_PER_GLM_UNIT, _GLM_REST_SOLVES = 1.0, 0.03, 20

SCHEMA = {
    "activation": (convert.str, "cubic", check.one_of("cubic", "erf3", "relu4", "tanh3", "erf", "relu", "tanh")),
    "hermite": (_EXACT_LIST, None, check.all(check.each(_RANGE), check.rule(
        lambda v: len(v) <= MAX_HERMITE_ORDER, f"must have at most {MAX_HERMITE_ORDER} entries"))),
    "hermite_start": (convert.int, 3, check.all(check.ge(0), _at_most(MAX_HERMITE_ORDER))),
    "drop_low_orders": (convert.bool, False, None),
    "d": (convert.int, 200, check.all(check.ge(1), _at_most(10 ** 12))),
    "gamma": (convert.exact, Fraction(1), check.all(check.gt(0), _RANGE)),
    "Delta": (convert.exact, Fraction(1, 10), check.all(check.gt(0), _RANGE)),
    "beta": (convert.exact, None, check.all(check.gt(0), _at_most(MAX_BETA))),
    "readouts": (_EXACT_LIST, None, check.all(check.each(check.gt(0)), check.each(_RANGE),
                                              check.rule(lambda v: len(v) <= MAX_K,
                                                         f"must have at most {MAX_K} entries"))),
    "n_over_d": (_FLOAT_LIST, None, check.all(check.each(check.gt(0)), check.each(_RANGE),
                                              check.rule(lambda v: len(v) <= MAX_POINTS,
                                                         f"must have at most {MAX_POINTS} "
                                                         f"entries"))),
    "alpha": (_FLOAT_LIST, None, check.all(check.each(check.gt(0)), check.each(_RANGE),
                                           check.rule(lambda v: len(v) <= MAX_POINTS,
                                                      f"must have at most {MAX_POINTS} "
                                                      f"entries"))),
    "selection": (convert.str, "potential", check.one_of("potential", "uninformed", "informed")),
    "features": (convert.list_of(convert.int, "list of integers"), None,
                 check.all(check.each(check.ge(1)), check.distinct)),
    "completion": (convert.bool, False, None),
    "channel": (convert.str, "gaussian", check.one_of("gaussian", "glm")),
    "glm_units": (convert.str, "outside", check.one_of("outside", "all")),
    "dps": (convert.int, 30, check.all(check.ge(15), check.rule(lambda v: v <= 1000,
                                                                "must be <= 1000"))),
}


def load(path):
    """(Setup, section dict) from a spec file; one-line SpecError / ValueError on bad input.

    Only a ``[bayes]`` section is read: another section (a misspelt ``[bayse]``, an empty file)
    is refused rather than run on the defaults.  Sizes (k = round(γ d) features, points, Hermite
    orders, the readouts' float64 range) are checked here, before any work.
    """
    return load_document(read_document(path), str(path))


def load_document(doc: dict, name: str):
    """`load` of an already-read TOML document (a dict); ``name`` starts the messages."""
    from solvers.app.spec import SpecError, check_sections
    from solvers.app.validate import time_limit, _hours
    from solvers.theory.bayes import Setup
    check_sections(doc, ("bayes",), "bayes", name=name,
                   why=" (the Bayes-optimal baseline reads only [bayes]; every key has a "
                       "default, but the section must be there)")
    sec = parse_section(doc, "bayes", SCHEMA, name=name)
    raw = doc["bayes"] if isinstance(doc["bayes"], dict) else {}
    if sec["hermite"] is not None and "activation" in raw:
        raise section_error(name, "bayes", "give either activation or hermite = [...], not "
                                           "both (hermite defines the activation)")
    if sec["hermite"] is None and "hermite_start" in raw:
        raise section_error(name, "bayes", "hermite_start goes with hermite = [...]")
    if sec["hermite"] is not None:
        top = sec["hermite_start"] + len(sec["hermite"]) - 1
        if top > MAX_HERMITE_ORDER:
            raise section_error(name, "bayes", f"hermite_start = {sec['hermite_start']} with "
                                f"{len(sec['hermite'])} coefficients reaches order {top} (at "
                                f"most {MAX_HERMITE_ORDER})")
    if sec["beta"] is not None and sec["readouts"] is not None:
        raise section_error(name, "bayes", "give either beta or readouts, not both")
    if sec["n_over_d"] is not None and sec["alpha"] is not None:
        raise section_error(name, "bayes", "give either n_over_d or alpha, not both")
    beta = sec["beta"] if sec["beta"] is not None else (Fraction(1) if sec["readouts"] is None
                                                        else None)
    if sec["readouts"] is None and round(sec["gamma"] * sec["d"]) < 1:
        raise section_error(name, "bayes", f"gamma * d = {float(sec['gamma'] * sec['d'])} "
                                           f"gives no feature (k = round(gamma d) >= 1 needed)")
    k = len(sec["readouts"]) if sec["readouts"] is not None else round(sec["gamma"] * sec["d"])
    if k > MAX_K:
        raise section_error(name, "bayes", f"gamma * d = {k} features: at most {MAX_K} (float64 "
                                           f"vectors of k per fixed point and point)")
    if sec["readouts"] is not None:
        lo, hi = min(sec["readouts"]), max(sec["readouts"])
        if hi / lo > Fraction(10) ** 200:
            raise section_error(name, "bayes", "readouts span more than 200 decades: normalised "
                                               "to sum 1 they would leave float64")
    elif k > 1 and 2 * float(beta) * math.log10(k) > 250:
        raise section_error(name, "bayes", f"beta = {float(beta):.6g} with k = {k} features: "
                            f"the readouts i^(-2 beta) would span 10^"
                            f"{2 * float(beta) * math.log10(k):.0f} (at most 10^250; need "
                            f"2 beta log10(k) <= 250)")
    if sec["channel"] == "gaussian" and "glm_units" in raw:
        raise section_error(name, "bayes", "glm_units goes with channel = \"glm\"")
    points = len(sec["n_over_d"] or sec["alpha"] or ())
    est = points * (_SECONDS_PER_POINT + k * _SECONDS_PER_POINT_FEATURE)
    sec["_seconds"] = est       # announced by the curve (the estimate of the refusal below)
    if est > time_limit():
        raise section_error(name, "bayes", f"{points} points with k = {k} features: about "
                            f"{_hours(est)} (limit {_hours(time_limit())}, "
                            f"SCALING_ODES_MAX_HOURS)")
    if sec["features"] is not None:
        bad = [f for f in sec["features"] if f > k]
        if bad:
            raise section_error(name, "bayes", f"features = {bad[0]} is out of range 1..{k} "
                                               f"(k = round(gamma d) features)")
    try:
        st = Setup(activation=sec["activation"], d=sec["d"], gamma=float(sec["gamma"]),
                   Delta=float(sec["Delta"]), beta=None if beta is None else float(beta),
                   readouts=None if sec["readouts"] is None else [float(v) for v in sec["readouts"]],
                   hermite=sec["hermite"], hermite_start=sec["hermite_start"],
                   drop_low_orders=sec["drop_low_orders"], dps=sec["dps"],
                   channel=sec["channel"], glm_units=sec["glm_units"])
        st.act                              # refuse a bad activation before any work
        if st.channel == "glm":
            st.mixed                        # cubic only; strongest readout within the table
    except ValueError as e:
        raise SpecError(f"{name}: [bayes] {' '.join(str(e).split())}") from None
    if st.channel == "glm":
        units = st.mixed.G.size
        est = points * (_SECONDS_PER_GLM_POINT + units * _SECONDS_PER_GLM_UNIT
                        + _GLM_REST_SOLVES * k * _SECONDS_PER_POINT_FEATURE)
        sec["_seconds"] = est
        if est > time_limit():
            raise section_error(name, "bayes", f"channel = \"glm\": {points} points with "
                                f"{units} GLM units (k = {k}): about {_hours(est)} (limit "
                                f"{_hours(time_limit())}, SCALING_ODES_MAX_HOURS)")
    return st, sec


def _finite(res: dict, what: str, name: str) -> dict:
    """Refuse a result with NaN / inf, naming where and the inputs that led there."""
    from solvers.app.validate import first_non_finite
    where = first_non_finite(res)
    if where:
        raise ValueError(f"{name}: bayes {what}: {where} is not finite: the inputs are outside "
                         f"the range of this computation ({_HINTS.get(what, '')})".replace(
                             " ()", ""))
    return res


_HINTS = {"limit": "the d -> infinity forms at these beta, gamma, Delta, alpha",
          "curve": "hermite coefficients or readouts too small or too large for float64",
          "transitions": "hermite coefficients or readouts too small or too large for float64"}


def _need_points(sec, name):
    if sec["n_over_d"] is None and sec["alpha"] is None:
        raise section_error(name, "bayes", "give n_over_d (= n/d) or alpha (= n/d^2)")


@json_command(load)
def cmd_curve(args, st, sec) -> dict:
    from tqdm import tqdm

    from solvers.theory.bayes import curve
    _need_points(sec, str(args.spec))
    total = len(sec["n_over_d"] or sec["alpha"])
    _announce("bayes", f"{total} point(s), k = {st.k} features, {st.channel} channel",
              sec["_seconds"])
    with tqdm(total=total, desc="bayes", unit="pt", disable=None, leave=False) as bar:
        res = curve(st, n_over_d=sec["n_over_d"], alpha=sec["alpha"],
                    selection=sec["selection"], progress=bar.update)
    if st.channel == "gaussian":
        res["readout_regime"] = _regime(st, res, detail="outside")
    return _finite(res, "curve", str(args.spec))


@json_command(load)
def cmd_transitions(args, st, sec) -> dict:
    from solvers.theory.bayes import transitions
    if st.channel != "gaussian":
        raise section_error(str(args.spec), "bayes", "transitions need channel = \"gaussian\" "
                            "(a GLM unit has no jump to locate); use the curve")
    features = sec["features"] or range(1, min(st.k, 5) + 1)
    est = transition_seconds(st, features)
    _check_time(est, f"{len(features)} feature(s) with k = {st.k}", str(args.spec))
    _announce("bayes transitions", f"{len(features)} feature(s), k = {st.k}", est)
    res = transitions(st, sec["features"])
    res["readout_regime"] = _regime(st, res)
    return _finite(res, "transitions", str(args.spec))


def transition_seconds(st, features) -> float:
    """CPU seconds of ``bayes transitions`` for ``features`` (the constants above)."""
    return len(features) * (_SECONDS_PER_TRANSITION + st.k * _SECONDS_PER_TRANSITION_FEATURE) \
        * math.sqrt(0.1 / min(st.Delta, 0.1))


def _regime(st, res, **kw) -> dict:
    """Which features' readouts are small enough for the fixed point's Gaussian channel
    (solvers.theory.bayes.regime); its warnings are raised as Python warnings too, which the
    command line sums up in its one warning line (all of them are in the JSON)."""
    import warnings

    from solvers.theory.bayes.regime import readout_regime
    out = readout_regime(st, res, **kw)
    for line in out["warnings"]:
        warnings.warn(f"{line} (all regime warnings: readout_regime.warnings in the JSON)",
                      UserWarning, stacklevel=2)
    return out


@json_command(load)
def cmd_limit(args, st, sec) -> dict:
    from solvers.theory.bayes import limit
    _need_points(sec, str(args.spec))
    name = str(args.spec)
    if sec["readouts"] is not None:
        raise section_error(name, "bayes", "limit needs the power-law readouts (beta), not a "
                                           "readouts list")
    if st.channel != "gaussian":
        raise section_error(name, "bayes", "limit needs channel = \"gaussian\" (the d -> "
                                           "infinity forms are the Gaussian-channel system's)")
    beta = float(st.beta)
    # the forms diverge at beta = 1/2 (exponents 1/(2 beta - 1), p = 2 beta/(1 - 2 beta)) and
    # their float64 quadratures fail towards beta -> 0 and large beta: the ranges below are
    # those where a scan (alpha = 1e-3 .. 1e4, cubic) gave finite numbers everywhere
    lo, hi = LIMIT_BETA_RANGES[0] if beta < 0.5 else LIMIT_BETA_RANGES[1]
    if not lo <= beta <= hi:
        ranges = " or ".join(f"{a} <= beta <= {b}" for a, b in LIMIT_BETA_RANGES)
        raise section_error(name, "bayes", f"beta = {beta!r} is outside the range of the "
                            f"d -> infinity forms (limit needs {ranges}; they diverge at "
                            f"beta = 1/2)")
    res = limit(st, alpha=sec["alpha"], n_over_d=sec["n_over_d"], completion=sec["completion"])
    if "kc_at_d" in res:
        # k_c ~ kbar d^(1/(2 beta)) describes d -> infinity; at this d it may exceed k = gamma d,
        # where every feature is learned and the form (and its eps_at_d) no longer applies
        over = [kc > st.k for kc in res["kc_at_d"]]
        if any(over):
            res["kc_at_d"] = [None if o else v for o, v in zip(over, res["kc_at_d"])]
            res["eps_at_d"] = [None if o else v for o, v in zip(over, res["eps_at_d"])]
            res["at_d_note"] = (f"null where kbar d^(1/(2 beta)) > k = {st.k}: the beta > 1/2 "
                                f"form no longer applies at d = {st.d}")
    return _finite(res, "limit", name)


LIMIT_BETA_RANGES = ((0.01, 0.48), (0.501, 15.0))


def _announce(command, route, seconds):
    """The estimate line of the sizing model, from the numbers the refusals use."""
    from solvers.app.sizing import announce, work_estimate
    announce(work_estimate(command, route, "float64", seconds))


def _check_time(est, what, name):
    from solvers.app.validate import _hours, time_limit
    if est > time_limit():
        raise section_error(name, "bayes", f"{what}: about {_hours(est)} (limit "
                                           f"{_hours(time_limit())}, SCALING_ODES_MAX_HOURS)")


_MODES = {"transitions": cmd_transitions, "limit": cmd_limit}


def _dispatch(args) -> int:
    from solvers.app.cli.common import CliError
    words = args.words
    if len(words) == 1:
        args.spec = words[0]
        return cmd_curve(args)
    if len(words) == 2 and words[0] in _MODES:
        args.spec = words[1]
        return _MODES[words[0]](args)
    raise CliError("usage: scaling-odes bayes [transitions|limit] SPEC.toml")


def register(sub) -> None:
    p = sub.add_parser("bayes", help="Bayes-optimal baseline: eps_BO, k_c, transitions, d → ∞",
                       description="scaling-odes bayes SPEC.toml | bayes transitions SPEC.toml | "
                                   "bayes limit SPEC.toml")
    p.add_argument("words", nargs="+", metavar="[transitions|limit] SPEC.toml")
    p.add_argument("-o", "--output", help="write JSON here")
    p.add_argument("--json", action="store_true", help="write compact JSON to stdout")
    p.set_defaults(func=_dispatch)
