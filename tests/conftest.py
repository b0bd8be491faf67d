import os

import pytest

# Progress displays off unless a test asks for one (tests/test_progress.py does): a loaded
# machine can stretch a failing run past the plain-line delay, and the one-line-error tests
# read all of stderr.
os.environ.setdefault("SCALING_ODES_PROGRESS", "off")

# numba's compiled kernels stay where the cache was when the run started (numba's own variable
# overrides the cache's folder, solvers/core/artifacts.numba_dir), also for the subprocesses:
# unlike the printed modules, which each run prints afresh into its temporary cache, they are
# keyed by their sources, and compiling them again would cost every run minutes of CPU.
if not os.environ.get("NUMBA_CACHE_DIR"):
    from solvers.core.artifacts import numba_dir
    os.environ["NUMBA_CACHE_DIR"] = str(numba_dir())


# What each test module's results are checked against (its oracle): every module declares it as
# ``pytestmark = [pytest.mark.<oracle>, ...]`` (test_architecture checks it), e.g.
# `pytest -m quadrature` runs the checks against numerical integration.  A module with several
# kinds of reference carries several markers.
#   closed_form       an analytic result (paper formula, exact solution, eigenvalue claim)
#   quadrature        numerical integration / Monte Carlo of the Gaussian expectations
#   second_basis      the same dynamics by another route (levels vs modes, arb_mat vs arrays,
#                     the generated system vs the index-vectorised kernel)
#   higher_precision  the same computation with more digits (or exact SymPy arithmetic)
#   simulation        finite-N online SGD
#   sampling          Monte-Carlo / MCMC samples of the same model (Gaussian designs, HMC)
#   brute_force       an exhaustive search (e.g. the global maximum of a potential)
#   statistics        statistical tests of a random-number stream
#   contract          not a number: the spec / CLI / JSON contracts and the package structure
ORACLE_MARKERS = ("closed_form", "quadrature", "second_basis", "higher_precision", "simulation",
                  "sampling", "brute_force", "statistics", "contract")


def pytest_collection_modifyitems(config, items):
    """Full-size verification and wall-clock benchmarks run only with SCALING_ODES_FULL=1
    (`make verify`)."""
    if os.environ.get("SCALING_ODES_FULL") == "1":
        return
    skip = {"full": pytest.mark.skip(reason="full-size verification: run `make verify`"),
            "bench": pytest.mark.skip(reason="asserts a wall-clock time: run `make verify`")}
    for item in items:
        for name, mark in skip.items():
            if name in item.keywords:
                item.add_marker(mark)
                break


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """Generated-on-demand modules (and the simulator's compiled kernel) go to a temporary cache
    of this test run, not ~/.cache.  One directory for all xdist workers: a system is printed
    and the kernel compiled once per run, not once per worker (the registry's lock lets one
    worker print while another waits; the kernel is published by an atomic rename)."""
    from cache_support import run_wide_dir
    monkeypatch.setenv("SCALING_ODES_CACHE", str(run_wide_dir(tmp_path_factory, "codegen-cache")))
