"""solvers/core/numba_cache.py: a cached numba kernel is rebuilt when a file it depends on
changes (numba itself looks only at the kernel's own file)."""
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
        guard_import="from solvers.core.numba_cache import drop_stale" if guarded else "",
        guard='drop_stale("%s", [f], [consts.__file__])' % name if guarded else "")))


def _run(tmp_path, name):
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
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
    assert list((tmp_path / "pkgx" / "__pycache__").glob("guarded.f-*.nbi"))   # cached on disk
    (tmp_path / "pkgx" / "consts.py").write_text("C = 2.0  # changed\n")
    assert _run(tmp_path, "guarded") == "2.0"
    # the hazard itself: without the guard numba runs the stale cached code
    assert _run(tmp_path, "plain") == "1.0"
