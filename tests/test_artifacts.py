"""solvers/core/artifacts.py: every generated artifact goes through one registry into the one cache.

References: the file system (which files exist where after each kind is built into an empty
cache), the closed form E[relu(z)] = 1/sqrt(2 pi) for a printed pair I2, and the source tree
itself for the scan (no other module publishes generated code or takes a lock for it).
"""
from __future__ import annotations

import ast
import math
import os
import re
import shutil
import sys
from pathlib import Path

import pytest

from derive.keys import SystemKey
from solvers.core import artifacts, registry
from solvers.core.artifacts import KINDS, listing
from solvers.sim import ckernel, family

pytestmark = [pytest.mark.contract, pytest.mark.closed_form]

ROOT = Path(__file__).resolve().parents[1]
KEY = SystemKey("linear", 2, 1)          # not checked in; printed in about 0.3 s of CPU
HAVE_CC = shutil.which(os.environ.get("CC", "cc")) is not None
TINY_C = "int tiny(int x) { return x + 1; }\n"
TINY_NUMBA = """
from numba import njit
from solvers.core.artifacts import numba_kernels


@njit(cache=True)
def f(x):
    return x + 1


numba_kernels(globals())
"""


def _use(monkeypatch, folder: Path) -> Path:
    monkeypatch.setenv("SCALING_ODES_CACHE", str(folder))
    return folder


def test_switching_the_cache_directory_loads_from_the_new_one(tmp_path, monkeypatch):
    """The memo is keyed by (cache directory, key): the module loaded after a switch is the one
    of the new directory (here a marked copy), and switching back gives the first one again."""
    a = _use(monkeypatch, tmp_path / "a")
    first = registry.load(KEY, "taylor")
    assert Path(first.__file__).is_relative_to(a)
    assert registry.load(KEY, "taylor") is first                     # remembered
    b = tmp_path / "b"
    shutil.copytree(a, b)
    jets = next(b.glob("*/linear_K2_M1_taylor.py"))
    jets.write_text(jets.read_text() + "\nMARKER = 'b'\n")
    _use(monkeypatch, b)
    second = registry.load(KEY, "taylor")
    assert Path(second.__file__).is_relative_to(b) and second.MARKER == "b"
    _use(monkeypatch, a)
    assert registry.load(KEY, "taylor") is first and not hasattr(first, "MARKER")


def test_switching_the_cache_directory_gives_a_fresh_pair_I2(tmp_path, monkeypatch):
    a = _use(monkeypatch, tmp_path / "a")
    mean_relu = family._lambdified_I2("1", "relu")          # I2("1", relu) at C11 = 1, C12 = 0
    assert mean_relu(1.0, 0.0, 1.0) == pytest.approx(1 / math.sqrt(2 * math.pi), rel=1e-14)
    b = tmp_path / "b"
    shutil.copytree(a, b)
    printed = next(b.glob("*/family_I2_*.py"))
    printed.write_text(printed.read_text() + "\n\ndef I2(C11, C12, C22):\n    return 7.0\n")
    _use(monkeypatch, b)
    assert family._lambdified_I2("1", "relu")(1.0, 0.0, 1.0) == 7.0
    _use(monkeypatch, a)
    assert family._lambdified_I2("1", "relu") is mean_relu


def test_every_kind_lands_under_the_cache(tmp_path, monkeypatch):
    """Each kind built into an empty cache: every file in it is of exactly one kind, each kind
    has its files there, and a registered numba kernel leaves nothing beside its source."""
    root = _use(monkeypatch, tmp_path / "cache")
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    registry.load(KEY, "numpy")                                # solver module and Taylor jets
    family._lambdified_I2("1", "relu")                         # the simulator's pair I2
    if HAVE_CC:                                                # the C kernel's build, on a tiny source
        source = tmp_path / "tiny.c"
        source.write_text(TINY_C)
        monkeypatch.setattr(ckernel, "SOURCE", source)
        ckernel.build(shutil.which(os.environ.get("CC", "cc")))
    package = tmp_path / "pkg_tiny"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "tiny.py").write_text(TINY_NUMBA)
    monkeypatch.syspath_prepend(str(tmp_path))
    from pkg_tiny import tiny
    assert tiny.f(1) == 2                                       # compiled and cached
    counts = {kind: files for kind, files, _ in listing()}
    for kind in KINDS:
        if kind is artifacts.CKERNEL and not HAVE_CC:
            continue
        assert counts[kind.title] >= 1, kind.title
    files = {p for p in root.rglob("*") if p.is_file() and not p.name.startswith(".")}
    claimed = [p for kind in KINDS for p in kind.files(root)]
    assert sorted(claimed) == sorted(files)                    # each file of one kind, no stray
    assert not [p for p in root.rglob(".*") if p.suffix != ".lock"]   # no temporary left
    assert not list(package.rglob("*.nb*"))                    # nothing beside the source


@pytest.mark.skipif(not HAVE_CC, reason="no C compiler on this machine")
def test_a_library_that_does_not_load_is_never_published(tmp_path, monkeypatch):
    """A compiler that exits 0 but writes no shared library: the load check refuses it and the
    cache keeps neither the file nor a temporary."""
    _use(monkeypatch, tmp_path / "cache")
    cc = tmp_path / "fake-cc"
    cc.write_text('#!/bin/sh\nwhile [ "$1" != "-o" ]; do shift; done\necho garbage > "$2"\n')
    cc.chmod(0o755)
    with pytest.raises(OSError):
        ckernel.build(str(cc))
    assert not [p for p in (tmp_path / "cache" / "ckernel").iterdir() if p.suffix != ".lock"]


# -- the scan: no other module publishes generated code ---------------------------------------

# Calls that publish a file, lock one, or import a file by path, and the modules allowed them
# besides solvers/core/artifacts.py (each writes something other than generated code).
PRIMITIVES = {"os.replace", "os.rename", "tempfile.mkstemp", "fcntl.flock",
              "importlib.util.spec_from_file_location", "cache_dir"}
OTHER_OWNERS = {
    ("solvers/app/sweep.py", "os.replace"),              # a sweep's result files
    ("solvers/app/gallery/cache.py", "os.replace"),      # the gallery's computed curves
    ("solvers/app/workers.py", "fcntl.flock"),           # a sweep directory's one owner
    ("solvers/app/cli/cache.py", "cache_dir"),           # names the directory it lists
}


def _dotted(node) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _calls(path: Path):
    """(dotted name of the callee, name of the enclosing top-level function) for every call."""
    for top in ast.parse(path.read_text()).body:
        owner = getattr(top, "name", None)
        for node in ast.walk(top):
            if isinstance(node, ast.Call):
                yield _dotted(node.func), owner


def test_no_other_module_publishes_generated_code():
    found, write_atomic_calls = set(), []
    for path in sorted([*(ROOT / "solvers").rglob("*.py"), *(ROOT / "derive").rglob("*.py")]):
        rel = path.relative_to(ROOT).as_posix()
        text = path.read_text()
        if rel == "solvers/core/artifacts.py" or not any(
                name.split(".")[-1] + "(" in text for name in (*PRIMITIVES, "write_atomic")):
            continue
        for name, owner in _calls(path):
            if name.split(".")[-1] == "cache_dir":         # also as artifacts.cache_dir
                name = "cache_dir"
            if name.split(".")[-1] == "write_atomic":
                write_atomic_calls.append(rel)
            if name in PRIMITIVES:
                found.add((rel, name))
    assert found <= OTHER_OWNERS, found - OTHER_OWNERS
    write_atomic_calls += [path.name for path in [*(ROOT / "tests").glob("*.py"),
                                                  *(ROOT / "bench").rglob("*.py")]
                           if path != Path(__file__) and "write_atomic(" in path.read_text()]
    assert not write_atomic_calls, write_atomic_calls


def test_every_cached_numba_kernel_is_registered():
    """A module with ``cache=True`` kernels calls numba_kernels(globals(), ...) on them."""
    cached = re.compile(r"^@\w+\([^)]*cache=True", re.M)
    unregistered = [p.relative_to(ROOT).as_posix() for p in (ROOT / "solvers").rglob("*.py")
                    if cached.search(p.read_text())
                    and "numba_kernels(globals()" not in p.read_text()]
    assert not unregistered, unregistered


def test_the_kernels_imported_here_keep_their_code_under_numba_dir():
    """The simulator's kernels, imported by this process: numba's cache of each points into the
    folder numba_dir() named when they were imported (NUMBA_CACHE_DIR, tests/conftest.py)."""
    from solvers.sim import family_kernels, kernels, normals
    folder = Path(os.environ["NUMBA_CACHE_DIR"])
    for module in (kernels, normals, family_kernels):
        caches = [v._cache for v in vars(module).values()
                  if hasattr(getattr(v, "_cache", None), "_cache_path")
                  and v.py_func.__module__ == module.__name__]
        assert caches, module.__name__
        assert all(Path(c._cache_path).is_relative_to(folder) for c in caches), module.__name__
    assert "solvers.sim.kernels" in sys.modules


def test_the_cache_command_lists_and_clears_only_the_kinds(tmp_path, monkeypatch, capsys):
    """Files of each kind laid out by hand (the reference): ``cache --json`` counts them per kind,
    ``cache --clear`` deletes them and their lock files, and a user's own file stays."""
    import json
    from solvers.app.cli.main import main
    root = _use(monkeypatch, tmp_path / "cache")
    laid = {"solver modules": ["0123456789ab/erf_K3_M3.py", "ba9876543210/erf_K4_M4.py"],
            "Taylor jets": ["0123456789ab/erf_K3_M3_taylor.py"],
            "simulator's pair I2": ["0123456789ab/family_I2_00ff.py"],
            "C step kernel": ["ckernel/sgd_rows-00ff.so"],
            "numba kernels": ["numba/sim_00ff/kernels.f-1.py311.nbi",
                              "numba/sim_00ff/kernels.f-1.py311.1.nbc"]}
    for i, rel in enumerate(p for files in laid.values() for p in files):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(b"x" * (i + 1))
    (root / "0123456789ab" / ".erf_K3_M3.lock").write_text("")
    (root / "notes.txt").write_text("mine")
    assert main(["cache", "--json"]) == 0
    kinds = json.loads(capsys.readouterr().out)["kinds"]
    assert {k: v["files"] for k, v in kinds.items()} == {k: len(v) for k, v in laid.items()}
    n = sum(len(v) for v in laid.values())
    assert sum(v["bytes"] for v in kinds.values()) == n * (n + 1) // 2
    assert main(["cache", "--clear"]) == 0
    assert "cleared" in capsys.readouterr().out
    assert [p.relative_to(root).as_posix() for p in root.rglob("*")] == ["notes.txt"]
