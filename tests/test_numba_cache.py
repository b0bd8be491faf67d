"""solvers/core/artifacts.numba_kernels: a module's cached numba kernels are kept under the cache
of generated artifacts, and rebuilt when a file they depend on changes (numba itself looks only
at the kernel's own file)."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = [pytest.mark.contract]

ROOT = Path(__file__).resolve().parents[1]

KERNEL = """
from numba import njit
from pkgx import consts
{guard_import}
_C = consts.C

@njit(cache=True)
def f():
    return _C

{guard}
"""


def _module(tmp_path, name, guarded):
    (tmp_path / "pkgx" / f"{name}.py").write_text(textwrap.dedent(KERNEL.format(
        guard_import="from solvers.core.artifacts import numba_kernels" if guarded else "",
        guard="numba_kernels(globals(), [consts.__file__])" if guarded else "")))


def _run(tmp_path, name):
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}",
           "SCALING_ODES_CACHE": str(tmp_path / "cache")}
    env.pop("NUMBA_CACHE_DIR", None)
    out = subprocess.run([sys.executable, "-c", f"from pkgx import {name}; print({name}.f())"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_changed_dependency_recompiles(tmp_path):
    (tmp_path / "pkgx").mkdir()
    (tmp_path / "pkgx" / "__init__.py").write_text("")
    (tmp_path / "pkgx" / "consts.py").write_text("C = 1.0\n")
    _module(tmp_path, "guarded", True)
    _module(tmp_path, "plain", False)
    assert _run(tmp_path, "guarded") == _run(tmp_path, "plain") == "1.0"
    # cached on disk, under the cache of generated artifacts (the unregistered one beside its source)
    assert list((tmp_path / "cache" / "numba").glob("pkgx_*/guarded.f-*.nbi"))
    assert not list((tmp_path / "pkgx" / "__pycache__").glob("guarded.*"))
    assert list((tmp_path / "pkgx" / "__pycache__").glob("plain.f-*.nbi"))
    (tmp_path / "pkgx" / "consts.py").write_text("C = 2.0  # changed\n")
    assert _run(tmp_path, "guarded") == "2.0"
    # the hazard itself: without the guard numba runs the stale cached code
    assert _run(tmp_path, "plain") == "1.0"
