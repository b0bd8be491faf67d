"""Every class of bad input a campaign over the subcommands found, one case each: the command
ends in one line on stderr naming the knob, with exit 2 (and nothing else on stderr, even
after a system was printed on demand), or in a sane result -- never a hang, a traceback, a
silent change of the request, or null / NaN where a number is documented.

The CLI's ``main()`` runs in-process (``check_outcome`` of test_bad_input_fuzz.py: bounded CPU
time, one line, or finite JSON).  A second part checks the cache: a printed module that does
not import is never published, so it cannot poison later runs.
"""
import json
import math
import os
import tempfile
from pathlib import Path

import numpy as np
import pytest

from test_bad_input_fuzz import check_outcome, run
from test_schema_fuzz import BASE, ONESTEP
from specs import toml_doc
from test_spec_fuzz import _numbers

pytestmark = [pytest.mark.contract]  # oracle (tests/conftest.py)

LONG_SUM = "x" + "+x" * 900                # 1801 characters, nested 900 deep
DEEP_SIGNS = "-" * 1500 + "x"

# (subcommand, changes to BASE, words the one error line must hold; None: exit 0, sane JSON)
CASES = [
    # the activation parser: sized before any work, every string within the length limit
    ("solve", {"model": {"activation": "2**(10**9)"}}, ["activation", "beyond"]),
    ("derive", {"model": {"activation": "2**(10**9)"}}, ["activation"]),
    ("simulate", {"model": {"activation": "(2**20)**(2**20)*x"}}, ["activation"]),
    ("solve", {"model": {"activation": DEEP_SIGNS}}, ["activation", "nested"]),
    ("simulate", {"model": {"student_activation": LONG_SUM}}, ["student_activation",
                                                               "nested"]),
    ("plateau", {"model": {"activation": "(" * 300 + "x" + ")" * 300}}, ["activation"]),
    # a large coefficient is named as such, not as a degree
    ("solve", {"model": {"activation": "2**100*x"}}, ["activation", "beyond"]),
    # degenerate systems, refused before generation
    ("solve", {"model": {"student_readout": [0, 0]}}, ["student_readout", "zero"]),
    ("solve", {"model": {"activation": "1"}}, ["activation", "constant"]),
    ("simulate", {"model": {"activation": "x - x"}}, ["activation", "constant"]),
    ("solve", {"model": {"teacher_activation": "0*x + 3"}}, ["teacher_activation",
                                                            "constant"]),
    # readouts and sigma_J: plainly out of range in the spec, or a run-time guard
    ("solve", {"model": {"student_readout": [1e50, 1e50]}}, ["student_readout"]),
    ("simulate", {"model": {"teacher_readout": [1e50, 1]}}, ["teacher_readout"]),
    ("solve", {"model": {"student_readout": [1e6, 1e6]}}, ["eta", "student_readout"]),
    ("solve", {"training": {"sigma_J": 1e100}}, ["sigma_J"]),
    # diverging runs name eta (and noise / sigma_J when they apply), never "step size
    # underflow" alone, never a saturated eps_g
    ("simulate", {"training": {"eta": 1e100}}, ["[training] eta = 1e+100", "alpha = "]),
    ("simulate", {"training": {"noise": 1e100}}, ["eta", "noise = 1e+100", "alpha = "]),
    ("compare", {"training": {"eta": 1e100}}, ["eta = 1e+100"]),
    ("solve", {"model": {"activation": "relu"}, "training": {"eta": 1e100}}, ["eta"]),
    ("solve", {"training": {"noise": 1e100}}, ["eta", "noise"]),
    ("solve", {"model": {"activation": "901*x"}}, ["eta"]),
    # files that never end
    ("solve", {"training": {"init": {"from": "/dev/zero"}}}, ["init", "/dev/zero"]),
    # a simulated grid never shrinks silently
    # (alpha_max = 4 at N = 8: 33 distinct steps)
    ("simulate", {"solve": {"n_points": 1000000}}, ["n_points = 1000000", "at most 33"]),
    ("compare", {"solve": {"n_points": 1000}}, ["n_points"]),
    ("simulate", {"solve": {"n_points": 33}}, None),
    # one seed: no standard error, not null
    ("onestep-sim", {**ONESTEP, "sim": {"d": 40, "seeds": 1, "kinds": ["protocol"]}}, None),
]


def _doc(changes):
    if "onestep" in changes:
        return json.loads(json.dumps(changes))
    doc = json.loads(json.dumps(BASE))
    for sec, kv in changes.items():
        doc.setdefault(sec, {}).update(kv)
    return doc


@pytest.mark.parametrize("sub,changes,words", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_each_input_class(sub, changes, words):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "spec.toml"
        path.write_text(toml_doc(_doc(changes)))
        extra = ["--no-progress"] if sub in ("simulate", "compare") else []
        code, out, err, elapsed = run([sub, path, "--json", *extra])
    what = (sub, changes)
    if words is None:
        assert code == 0, (what, err)
        assert "null" not in out, (what, out[:300])
        res = check_outcome(what, code, out, err, elapsed)
        if sub == "simulate":
            assert len(res["alpha"]) == changes["solve"]["n_points"]
        assert all(math.isfinite(x) for x in _numbers(res))
        return
    assert code == 2, (what, code, err[-500:])
    check_outcome(what, code, out, err, elapsed)     # exactly one line, names something
    assert err.count("\n") == 1, (what, err)          # no notices before the error line
    for w in words:
        assert w in err, (what, w, err)
    assert "step size underflow" not in err or "eta" in err, err
    assert "degree" not in err or "2**100" not in err, err


# ---- the cache --------------------------------------------------------------------------

def test_a_module_that_does_not_import_is_never_published(tmp_path):
    from solvers.core.artifacts import GeneratedModuleError, write_module
    target = tmp_path / "m.py"
    for text in ("def f():\n    return (,)\n", "raise RuntimeError('at import')\n"):
        with pytest.raises(GeneratedModuleError, match="the thing"):
            write_module(target, text, "the thing")
        assert os.listdir(tmp_path) == []            # neither the module nor a temporary
    write_module(target, "X = 1\n", "the thing")
    assert target.read_text() == "X = 1\n"


def test_a_checked_module_is_not_compiled_again_when_loaded(tmp_path, monkeypatch):
    """The check before publishing compiles the module; its code is left as the bytecode the
    import looks for, so loading the module right after does not compile it a second time.
    The oracle is CPython's own loader: it validates the file against the source's mtime and
    size and would fall back to compiling the source, which is made to fail here."""
    import importlib._bootstrap_external as external
    import sys
    from solvers.core.artifacts import import_path, write_module
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    target = tmp_path / "printed_once.py"
    write_module(target, "X = 41 + 1\ndef where():\n    return where.__code__.co_filename\n",
                 "the thing")

    def compile_again(*args, **kwargs):
        raise AssertionError("the checked module was compiled a second time")
    monkeypatch.setattr(external.SourceLoader, "source_to_code", compile_again)
    module = import_path(target, "printed_once_check")
    assert module.X == 42 and module.where() == str(target)   # not the temporary's name
    sys.modules.pop("scaling_odes_cache.printed_once_check", None)

    # without bytecode (PYTHONDONTWRITEBYTECODE) nothing but the module is written
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    other = tmp_path / "other"
    write_module(other / "m.py", "X = 1\n", "the thing")
    assert os.listdir(other) == ["m.py"]


def test_a_degenerate_system_leaves_no_cached_module(tmp_path):
    """Zero fixed student readouts print an empty coefficient tuple: the registry's check
    refuses it in one line naming the system, and the cache folder stays empty, so a later
    run does not meet it (the spec layer refuses this input before generation anyway)."""
    from derive.keys import SystemKey
    from solvers.core.artifacts import GeneratedModuleError
    from solvers.core import registry
    key = SystemKey("erf", 2, 2, readout=("0", "0", "sqrt(2)/2", "sqrt(2)/2"))
    lines = []
    with pytest.raises(GeneratedModuleError) as err:
        registry.generate(key, tmp_path, say=lines.append)
    assert key.description in str(err.value) and "\n" not in str(err.value)
    assert not list(tmp_path.glob("*.py"))


def test_a_log_grid_below_one_step_is_merged_with_a_warning():
    """Log-spaced points closer than one SGD step near alpha_min fall on the same step: they
    are merged and the one warning line says how many (never silently fewer points)."""
    doc = _doc({"solve": {"alpha_max": 4, "alpha_min": 0.01, "n_points": 20, "spacing": "log"}})
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "spec.toml"
        path.write_text(toml_doc(doc))
        code, out, err, elapsed = run(["simulate", path, "--json", "--no-progress"])
    res = check_outcome("log grid", code, out, err, elapsed)
    grid = np.geomspace(0.01, 4, 20)
    distinct = len(np.unique(np.rint(grid * 8)))        # N = 8
    assert len(res["alpha"]) == distinct < 20
    assert f"{20 - distinct} point(s)" in err and "merged" in err and err.count("\n") == 1
