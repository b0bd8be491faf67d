"""Property-based bad input over every subcommand's schema, extending tests/test_spec_fuzz.py
(which covers the common spec's subcommands with mostly valid mutations) to the sections of
``bayes`` (curve, transitions, limit), ``kernel``, ``kernel-mc``, ``figures --fig`` and the
``[simulate]`` options read by every spec, with the values a careless or hostile file holds:
wrong types, NaN, inf, huge and tiny numbers and exponents, negative sizes, empty lists,
unknown keys, and unknown or misspelt sections.

Each run ends in exit 2 with exactly one line on stderr that names something (a key, a
section, a value, not just "internal error"), or in exit 0 with finite JSON (no NaN/Infinity,
checked on the raw text) -- and never a hang: the sizing must refuse invalid-but-large requests
before any work, so every example has a time bound.  The CLI's ``main()`` runs in-process.
"""
import contextlib
import io
import json
import re
import math
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from solvers.app.cli import main as cli
from solvers.core.registry import _cpu_seconds   # this process and its finished children
from specs import toml_doc as _toml
from test_spec_fuzz import ERF, SUBCOMMANDS, VALID, WILD, _numbers, fuzz_settings, mutate

pytestmark = [pytest.mark.contract]  # oracle (tests/conftest.py)

# a refusal is a check before any work (< 1 s); a valid tiny spec runs in ~1-3 s of CPU (bayes
# transitions: ~3 s; the first simulate compiles its C kernel).  A hang is CPU-bound, so the
# bound is on CPU time (of this process and its finished children: a compiler, a jets process);
# no wall-clock bound, which a loaded machine could fail
PER_EXAMPLE_CPU_SECONDS = 30

BAYES = {"bayes": {"d": 10, "n_over_d": [1, 5], "dps": 15}}
OWN = {
    ("bayes",): BAYES,
    ("bayes", "transitions"): {"bayes": {"d": 10, "features": [1], "dps": 15}},
    ("bayes", "limit"): {"bayes": {"d": 10, "beta": 1.0, "alpha": [1], "dps": 15}},
    ("kernel",): {"kernel": {"a": 2, "M": 50, "P": [4, 8], "ridge": 0.01, "noise": 0.01}},
    ("kernel-mc",): {"kernel": {"a": 2, "M": 20, "P": [4, 8], "ridge": 0.01},
                     "mc": {"trials": 2}},
    # the common spec with [simulate] options: solve must accept them (one spec, both runs)
    ("solve",): {**ERF, "simulate": {"seeds": [0], "eps_holdout": 10}},
    ("simulate",): {**ERF, "simulate": {"seeds": [0], "n_jobs": 1, "eps_holdout": 10}},
}
ALL = {**{k: {**base, **extra} for k, (base, extra) in SUBCOMMANDS.items()
          if k not in OWN and k != ("sweep",)}, **OWN}
# the cheap ones more often; bayes transitions / limit and plateau / asymptotic take seconds
WEIGHTED = [sub for sub in sorted(ALL) for _ in range(
    1 if sub in (("bayes", "transitions"), ("bayes", "limit"), ("plateau",), ("asymptotic",),
                 ("linear", "feature-scaling")) else 3)]

KEYS = {
    "bayes": ("activation", "hermite", "hermite_start", "drop_low_orders", "d", "gamma", "Delta",
              "beta", "readouts", "n_over_d", "alpha", "selection", "features", "completion",
              "dps", "channel", "glm_units"),
    "kernel": ("a", "M", "eigenvalues", "target_b", "target", "ridge", "noise", "P", "methods",
               "rg_cut", "learnability"),
    "mc": ("trials", "seed"),
    "simulate": ("seeds", "n_trainable", "untrainable", "eps_holdout", "generator"),
    "data": ("L", "beta", "eigenvalues", "N", "rotate"),
    "model": ("activation", "K", "M"),
    "training": ("eta", "order", "sigma_J", "seed", "init"),
    "solve": ("alphas", "alpha_max", "alpha_min", "n_points", "dps", "digits", "basis"),
    "linear": ("route", "N_l", "rotated", "n_W"),
}
GOOD = {**VALID, "hermite": [[1], [0, 1], ["0.5", 0.2]], "hermite_start": [3, 4],
        "activation": ["erf", "linear", "cubic", "erf3", "relu4"], "d": [5, 10, 20],
        "gamma": [0.5, 1, "2"], "Delta": [0.1, "0.01", 1], "beta": [0, 0.5, 0.7, 1, "2"],
        "readouts": [[1, 0.5], ["0.3", "0.2", 0.1]], "n_over_d": [[1], [0.5, 3, 30]],
        "alpha": [[0.1], [1, 10]], "selection": ["potential", "informed", "uninformed"],
        "features": [[1], [1, 2]], "completion": [False], "channel": ["gaussian", "glm"],
        "glm_units": ["outside", "all"], "a": [1.5, 2, "3"],
        "target_b": [1, 2.5], "target": [[1, 0.5]], "ridge": [0, 0.01, "1e-3"],
        "noise": [0, 0.01], "P": [[4], [2, 16]], "methods": [["eig"], ["eig", "rg_gda"]],
        "rg_cut": [0.01, 0.1], "learnability": [True, False], "trials": [2, 3],
        "eps_holdout": [0, 5], "generator": ["xoshiro", "numpy", "float32"]}
BAD = WILD + [float("nan"), float("-inf"), "nan", "1e9999", "-1e-9999", "1e-300", 1e-300,
              10 ** 9, 10 ** 18, -10 ** 9, [float("nan")], ["1e9999"], [0], [-1], [10 ** 9],
              [1e300], [[1]], 1e9, 0.5000000001, "0.5000000001", 100, 1e-90]
MISSPELT = {"bayes": "bayse", "kernel": "kernal", "mc": "mcc", "simulate": "simulat",
            "data": "dat", "model": "modle", "training": "trainig", "solve": "solv",
            "linear": "lineare"}


@st.composite
def cases(draw):
    sub = draw(st.sampled_from(WEIGHTED))
    doc = json.loads(json.dumps(ALL[sub]))
    mutate(draw, sub, doc, [1, 1, 2, 3],
           ["good"] * 2 + ["bad"] * 5 + ["drop", "unknown", "misspelt", "empty", "not a table"],
           KEYS, GOOD, BAD, MISSPELT)
    return sub, doc


def run(args):
    """``main(args)`` in process: exit code, stdout, stderr and the CPU seconds it took."""
    out, err = io.StringIO(), io.StringIO()
    cpu = _cpu_seconds()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue(), _cpu_seconds() - cpu


_GENERATION = re.compile(r"^scaling-odes: (generating |.* generated in |.*: (derivation|printing|"
                         r"Taylor jets) \.\.\.$|waiting )")


def check_outcome(what, code, out, err, cpu):
    assert cpu < PER_EXAMPLE_CPU_SECONDS, (what, cpu)
    assert "Traceback" not in err, (what, err)
    if code == 2:
        lines = err.strip().splitlines()
        assert out == "" and len(lines) == 1, (what, err)
        assert lines[0].startswith("scaling-odes: error: "), (what, err)
        assert "internal error" not in err, (what, err)
        # it names something: a key, a section, an option or a value, not only a reason
        body = lines[0][len("scaling-odes: error: "):]
        assert any(c in body for c in ("[", "=", "--", "'")), (what, err)
        return None
    assert code == 0, (what, code, err)
    # at most the warnings summary, besides the lines of an on-demand generation (a family
    # system not generated yet: "generating ... (about ...)", "... generated in ...", and
    # "waiting for ..." when another worker prints the same system)
    rest = [line for line in err.strip().splitlines() if not _GENERATION.search(line)]
    assert len(rest) <= 1, (what, err)
    for word in ("NaN", "Infinity"):
        assert word not in out, (what, out[:300])
    res = json.loads(out)
    for x in _numbers(res):
        assert math.isfinite(x), (what, res)
    return res


# Hypothesis draws the derandomized examples from a hash of the test's source text, so this
# test keeps its text (and the names in it) until its known finding is dealt with: a drawn
# [bayes] case with Delta = 0.1 prints three warning lines, where at most a summary line is
# allowed (docs/guide/reliability.md against docs/guide/bayes.md).
@settings(max_examples=110, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(cases())
def test_bad_specs_end_in_finite_json_or_one_named_line(case):
    sub, doc = case
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "spec.toml"
        path.write_text(_toml(doc))
        extra = ["--no-progress"] if sub == ("simulate",) else []
        check_outcome((sub, doc), *run([*sub, path, "--json", *extra]))


FIG_ARGS = st.lists(st.sampled_from(["", " ", ",", "0", "21", "99", "-1", "x", "B9", "6",
                                     "2,7", "b1", "1e3", "١"]), min_size=1, max_size=3)


@fuzz_settings(40)
@given(FIG_ARGS)
def test_figures_fig_values(monkeypatch_runner, parts):
    """--fig: refused in one line unless it names figures; a valid one reaches the runner with
    exactly those figures (the runner is replaced: the figures themselves take hours)."""
    from solvers.app.gallery import all_figures, figure_id
    args = ["figures"]
    for p in parts:
        args += ["--fig", p]
    monkeypatch_runner.clear()
    code, out, err, elapsed = run(args)
    named = [figure_id(x) for p in parts for x in p.replace(",", " ").split()]
    if named and all(n in all_figures() for n in named):
        assert code == 0, (parts, err)
        assert monkeypatch_runner == [list(dict.fromkeys(named))]
    else:
        check_outcome(parts, code, out, err, elapsed)
        assert code == 2 and monkeypatch_runner == [], (parts, err)


@pytest.fixture(scope="module")
def monkeypatch_runner():
    from solvers.app.gallery import runner
    calls = []
    saved = runner.run
    runner.run = lambda figs, **kw: calls.append(figs)
    yield calls
    runner.run = saved
