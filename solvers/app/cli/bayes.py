"""``scaling-odes bayes [transitions|limit] SPEC.toml``: the Bayes-optimal baseline.

    [bayes]  activation = "cubic"   # "erf3" | "relu4" | "tanh3" | ("erf"|"relu"|"tanh" with drop_low_orders)
             hermite = [mu3, mu4, ...]    hermite_start = 3    drop_low_orders = false
             d = 200   gamma = 1.0   Delta = 0.1   beta = 1.0     # or readouts = [v_1^2, ...]
             n_over_d = [1, 10, 100]                              # or alpha = [...] (= n/d^2)
             selection = "potential"   # "uninformed" | "informed"
             features = [1, 2, 3]      # transitions: which features (default 1..5)
             completion = false        # limit, beta < 1/2: also locate the BO completion
             dps = 30                  # digits of lambda_sigma, q_sigma

JSON keys: ``n_over_d``, ``alpha``, ``eps_bo``, ``kc``, ``q`` (per point, per feature),
``fixed_points`` (per point: [{eps, kc, psi}]), ``lambda_sigma``, ``q_sigma``, ``meta``;
``transitions`` → ``features`` (per feature: appears, switch, ends, q_jump, n/d and α);
``limit`` → the d → ∞ forms (see solvers/theory/bayes/limits.py).
"""
from __future__ import annotations

from fractions import Fraction

from solvers.app.cli.common import json_command
from solvers.app.spec import (REQUIRED, check, convert, parse_section, read_document,  # noqa: F401
                              section_error)

_EXACT_LIST = convert.list_of(convert.exact, "list of numbers or decimal strings")
_FLOAT_LIST = convert.list_of(convert.float, "list of numbers")

SCHEMA = {
    "activation": (convert.str, "cubic", check.one_of("cubic", "erf3", "relu4", "tanh3", "erf", "relu", "tanh")),
    "hermite": (_EXACT_LIST, None, None),
    "hermite_start": (convert.int, 3, check.ge(0)),
    "drop_low_orders": (convert.bool, False, None),
    "d": (convert.int, 200, check.ge(1)),
    "gamma": (convert.exact, Fraction(1), check.gt(0)),
    "Delta": (convert.exact, Fraction(1, 10), check.gt(0)),
    "beta": (convert.exact, None, check.gt(0)),
    "readouts": (_EXACT_LIST, None, check.each(check.gt(0))),
    "n_over_d": (_FLOAT_LIST, None, check.each(check.gt(0))),
    "alpha": (_FLOAT_LIST, None, check.each(check.gt(0))),
    "selection": (convert.str, "potential", check.one_of("potential", "uninformed", "informed")),
    "features": (convert.list_of(convert.int, "list of integers"), None, check.each(check.ge(1))),
    "completion": (convert.bool, False, None),
    "dps": (convert.int, 30, check.all(check.ge(15), check.rule(lambda v: v <= 1000,
                                                                "must be <= 1000"))),
}


def load(path):
    """(Setup, section dict) from a spec file; one-line SpecError / ValueError on bad input."""
    return load_document(read_document(path), str(path))


def load_document(doc: dict, name: str):
    """`load` of an already-read TOML document (a dict); ``name`` starts the messages."""
    from solvers.theory.bayes import Setup
    sec = parse_section(doc, "bayes", SCHEMA, name=name)
    if sec["beta"] is not None and sec["readouts"] is not None:
        raise section_error(name, "bayes", "give either beta or readouts, not both")
    if sec["n_over_d"] is not None and sec["alpha"] is not None:
        raise section_error(name, "bayes", "give either n_over_d or alpha, not both")
    beta = sec["beta"] if sec["beta"] is not None else (Fraction(1) if sec["readouts"] is None
                                                        else None)
    if sec["readouts"] is None and round(sec["gamma"] * sec["d"]) < 1:
        raise section_error(name, "bayes", f"gamma * d = {float(sec['gamma'] * sec['d'])} "
                                           f"gives no feature (k = round(gamma d) >= 1 needed)")
    st = Setup(activation=sec["activation"], d=sec["d"], gamma=float(sec["gamma"]),
               Delta=float(sec["Delta"]), beta=None if beta is None else float(beta),
               readouts=None if sec["readouts"] is None else [float(v) for v in sec["readouts"]],
               hermite=sec["hermite"], hermite_start=sec["hermite_start"],
               drop_low_orders=sec["drop_low_orders"], dps=sec["dps"])
    st.act                              # refuse a bad activation before any work
    return st, sec


def _need_points(sec, name):
    if sec["n_over_d"] is None and sec["alpha"] is None:
        raise section_error(name, "bayes", "give n_over_d (= n/d) or alpha (= n/d^2)")


@json_command(load)
def cmd_curve(args, st, sec) -> dict:
    from tqdm import tqdm

    from solvers.theory.bayes import curve
    _need_points(sec, str(args.spec))
    total = len(sec["n_over_d"] or sec["alpha"])
    with tqdm(total=total, desc="bayes", unit="pt", disable=None, leave=False) as bar:
        return curve(st, n_over_d=sec["n_over_d"], alpha=sec["alpha"],
                     selection=sec["selection"], progress=bar.update)


@json_command(load)
def cmd_transitions(args, st, sec) -> dict:
    from solvers.theory.bayes import transitions
    return transitions(st, sec["features"])


@json_command(load)
def cmd_limit(args, st, sec) -> dict:
    from solvers.theory.bayes import limit
    _need_points(sec, str(args.spec))
    return limit(st, alpha=sec["alpha"], n_over_d=sec["n_over_d"],
                 completion=sec["completion"])


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
