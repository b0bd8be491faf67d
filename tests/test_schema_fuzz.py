"""Property-based test over every spec schema with the committee-machine family's keys, on
the subcommands that read them: solve, simulate, compare, derive, plateau, asymptotic,
sweep, and the one-step theory's onestep and onestep-sim.

Specs start from a tiny valid one per subcommand and get one to three mutations: a key set to
another valid value, to a value out of range or of the wrong type (huge, tiny, non-finite,
hostile activation strings, degenerate readouts, files that never end), removed, or unknown.
Every example must end in exactly one line on stderr with exit 2 that names something (a key,
a value), with nothing else on stderr (no notice of a system printed on demand before it), or
in exit 0 with finite JSON and no null outside ``meta`` -- never a traceback, a hang or a NaN.

The default suite runs a small derandomized sample (40 examples, a per-example CPU bound;
about 30 s of CPU, most of it printing a few family systems on demand); ``make verify`` runs
ten times as many (the ``full`` test).  The CLI's ``main()``
runs in-process.  Widths stay at K, M <= 2 (changed for simulate only) and polynomials at low
degree, so that a family system printed on demand takes about a second.
"""
import copy
import json
import math

import pytest
from hypothesis import given, strategies as st

from test_bad_input_fuzz import check_outcome, run
from test_spec_fuzz import WILD, _numbers, fuzz_settings, spec_file

pytestmark = [pytest.mark.contract]  # oracle (tests/conftest.py)

BASE = {"model": {"activation": "erf", "K": 2, "M": 2},
        "data": {"L": 2, "beta": 1, "N": 8},
        "training": {"eta": 0.5, "sigma_J": 0.1, "seed": 0},
        "solve": {"alpha_max": 4, "n_points": 3, "spacing": "linear", "basis": "modes",
                  "dps": "float64", "digits": 6}}
ONESTEP = {"onestep": {"student_activation": "tanh", "target_activation": "tanh",
                       "alpha0": 0.5, "eta": 1.0, "width": 1.0, "ridge": 0.01,
                       "alpha": [0.5, 1]}}
SUBCOMMANDS = {
    ("solve",): BASE,
    ("simulate",): {**BASE, "simulate": {"seeds": [0], "n_jobs": 1}},
    ("compare",): {**BASE, "simulate": {"seeds": [0, 1], "n_jobs": 1},
                   "compare": {"restart_alpha": 1}},
    ("derive",): BASE,
    ("plateau",): {**BASE, "plateau": {"escape_fraction": 0.1}},
    ("asymptotic",): {**BASE, "training": {**BASE["training"], "eta": 1.0},
                      "solve": {**BASE["solve"], "alpha_max": 150},
                      "asymptotic": {"alpha0": 120}},
    ("sweep",): {**BASE, "sweep": {"what": ["solve"], "n_jobs": 1, "out": "out",
                                   "axes": {"seed": [0, 1]}}},
    ("onestep",): ONESTEP,
    ("onestep-sim",): {**ONESTEP, "sim": {"d": 30, "seeds": 1, "kinds": ["protocol"]}},
}
# plateau / asymptotic / sweep take a second or more when valid: a little less often
WEIGHTED = [s for s in sorted(SUBCOMMANDS) for _ in range(
    1 if s in (("plateau",), ("asymptotic",), ("sweep",), ("onestep-sim",)) else 2)]

HOSTILE_ACTIVATIONS = ["2**(10**9)", "x" + "+x" * 900, "-" * 1500 + "x", "(" * 300 + "x" + ")" * 300,
                       "2**100*x", "1", "x - x", "x**7", "0.5*x", "__import__('os')", "",
                       "x" * 2001, "tanh"]
VALID = {
    "activation": ["erf", "linear", "relu", "x**2 - 1", "x**3 - 3*x"],
    "student_activation": ["erf", "relu", "linear", "(x**2 - 1)/2", "x**3"],
    "teacher_activation": ["erf", "relu", "linear", "x**2"],
    "normalisation": ["paper", "1/K", "1/sqrt(K)", "none"],
    "student_readout": [[1, "0.5"], [0, 1], ["1e-3", "1e-3"], [1e3, 1]],
    "teacher_readout": [[1, -1], [0, 0], [1e6, 1]],
    "readout": ["fixed", "trained"], "eta_readout": [0.2, "0.05"],
    "noise": [0, 0.01, "0.5"], "weight_decay": [0, "0.01", 1], "batch_size": [1, 4],
    "weight_decay_readout": [0, "0.01", 1],
    "schedule": [{"kind": "constant"}, {"kind": "power", "alpha0": 1, "p": "0.5"},
                 {"kind": "steps", "alphas": [1, 2], "etas": [0.2, "0.1"]}],
    "K": [1, 2], "M": [1, 2], "L": [1, 2], "N": [8, 16], "beta": [0, "0.5", 1],
    "eta": [0.1, "0.3", 1, 5, 1e100], "sigma_J": [0, "0.5", 10, 1e100], "seed": [0, 3],
    "init": ["random", "informed", {"from": "/dev/zero"}, {"from": "missing.json"}],
    "alpha_max": [1, 3, 1e12], "n_points": [2, 5, 1000, 1000000], "basis": ["modes", "levels"],
    "dps": ["float64", "auto"], "digits": [3, 6],
    "seeds": [[0], [1, 2]], "eps_holdout": [0, 10],
    "escape_fraction": [0.05, 0.3], "alpha0": [0, 2, 120],
    "restart_alpha": [0.5, 2, 4, 1e-9],
    # [onestep] / [sim]
    "target_activation": ["tanh", "erf", "he3"], "width": [0.5, 1, 2], "ridge": [0.001, 0.1],
    "alpha": [[1], [0.5, 2], [1e300]], "d": [20, 40], "kinds": [["protocol"], ["srf"]],
}
KEYS = {
    "model": ("activation", "K", "M", "student_activation", "teacher_activation",
              "normalisation", "student_readout", "teacher_readout", "readout"),
    "data": ("L", "beta", "N"),
    "training": ("eta", "sigma_J", "seed", "init", "noise", "weight_decay", "batch_size",
                 "eta_readout", "weight_decay_readout", "schedule"),
    "solve": ("alpha_max", "n_points", "basis", "dps", "digits"),
    "simulate": ("seeds", "eps_holdout"),
    "plateau": ("escape_fraction",), "asymptotic": ("alpha0",), "compare": ("restart_alpha",),
    "onestep": ("student_activation", "target_activation", "alpha0", "eta", "width", "ridge",
                "noise", "alpha"),
    "sim": ("d", "seeds", "kinds"),
}
ACTIVATION_KEYS = ("activation", "student_activation", "teacher_activation")


@st.composite
def cases(draw):
    sub = draw(st.sampled_from(WEIGHTED))
    doc = copy.deepcopy(SUBCOMMANDS[sub])
    for _ in range(draw(st.sampled_from([1, 1, 2, 3]))):
        sec = draw(st.sampled_from(sorted(s for s in doc if s in KEYS)))
        key = draw(st.sampled_from(KEYS[sec]))
        if key in ("K", "M") and sub != ("simulate",):
            continue        # a new width is a new system to derive: seconds each, simulate only
        kind = draw(st.sampled_from(["valid"] * 5 + ["wild"] * 2 + ["hostile", "drop",
                                                                   "unknown"]))
        if kind == "valid" or (kind == "hostile" and key not in ACTIVATION_KEYS):
            value = draw(st.sampled_from(VALID.get(key, WILD)))
            if sec == "sim" and key == "seeds":
                value = draw(st.sampled_from([1, 2]))
            doc[sec][key] = copy.deepcopy(value)
        elif kind == "hostile":
            doc[sec][key] = draw(st.sampled_from(HOSTILE_ACTIVATIONS))
        elif kind == "wild":
            doc[sec][key] = copy.deepcopy(draw(st.sampled_from(WILD)))
        elif kind == "drop":
            doc[sec].pop(key, None)
        else:
            doc[sec]["bogus_key"] = 1
    return sub, doc


def _nulls(x, path=""):
    if x is None:
        yield path
    elif isinstance(x, dict):
        for k, v in x.items():
            if k != "meta":
                yield from _nulls(v, f"{path}.{k}")
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from _nulls(v, f"{path}[{i}]")


def check_schema_outcome(sub, doc, code, out, err, elapsed):
    what = (sub, doc)
    if code == 2:
        # exactly one line: no notice of a system printed on demand before the error
        assert out == "" and err.count("\n") == 1, (what, err)
    res = check_outcome(what, code, out, err, elapsed)
    if res is None or sub == ("sweep",):
        return
    if sub != ("derive",):      # derive's module / closed are null unless --write / --closed
        assert not list(_nulls(res)), (what, list(_nulls(res))[:5])
    assert all(math.isfinite(x) for x in _numbers(res)), what


def _check_case(case):
    sub, doc = case
    with spec_file(doc) as path:
        if sub == ("sweep",):
            args = ["sweep", path, "--no-progress", "--n-jobs", "1"]
        else:
            args = [*sub, path, "--json"] + (["--no-progress"] if sub in (("simulate",),
                                                                          ("compare",)) else [])
        code, out, err, elapsed = run(args)
        if sub == ("sweep",) and code == 0:
            assert "cell(s) computed" in out and "Traceback" not in err, (doc, err)
            return
        check_schema_outcome(sub, doc, code, out, err, elapsed)


@fuzz_settings(40)
@given(cases())
def test_family_specs_end_in_a_sane_result_or_one_line(case):
    _check_case(case)


@pytest.mark.full
@fuzz_settings(400)
@given(cases())
def test_family_specs_end_in_a_sane_result_or_one_line_full(case):
    """The same property on ten times as many examples (``make verify``)."""
    _check_case(case)
