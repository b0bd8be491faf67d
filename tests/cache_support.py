"""A generated-module cache shared by one test run's xdist workers.

Modules that solve systems not checked in print them on demand; one cache directory for the
whole run (RUN_CACHE, the one tests/conftest.py points every test at) means each system is
printed once per run, not once per worker or per test module (the registry's lock file lets
one worker print while the others wait).  Under xdist the workers' temporary directories share
a parent, so the directory goes there.

In a test module::

    from cache_support import generated_cache_fixtures
    run_cache, cache = generated_cache_fixtures()

``run_cache`` (session scope) is the directory; ``cache`` (function scope) also points
SCALING_ODES_CACHE at it for the test (it replaces pytest's own ``cache`` fixture in that
module, which these modules do not use).
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

# the run's generated-module cache: a relu K = M = 2 system printed for one test module is found
# by every other (printing one costs seconds of SymPy)
RUN_CACHE = "codegen-cache"


def run_wide_dir(tmp_path_factory, name: str) -> Path:
    """``name`` under the base temporary directory of the run (the workers' common parent
    under xdist), created if missing."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    path = base / name
    path.mkdir(exist_ok=True)
    return path


def generated_cache_fixtures():
    """The fixtures ``run_cache`` (the run-wide directory RUN_CACHE) and ``cache`` (the same,
    with SCALING_ODES_CACHE set to it for the test), to be bound to those names in a test
    module."""
    @pytest.fixture(scope="session", name="run_cache")
    def run_cache(tmp_path_factory) -> Path:
        return run_wide_dir(tmp_path_factory, RUN_CACHE)

    @pytest.fixture(name="cache")
    def cache(run_cache, monkeypatch) -> Path:
        monkeypatch.setenv("SCALING_ODES_CACHE", str(run_cache))
        return run_cache

    return run_cache, cache
