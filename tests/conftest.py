import os
import sys

import pytest

# One BLAS thread per xdist worker: `make test` runs one worker per core, so OpenBLAS's own
# threads would oversubscribe the cores, and threads waiting for a core spin.  On a loaded
# 2-core machine test_ckernel's rotated-basis reference loop (N = 1000 matrix-vector products)
# took 71 s of CPU with the default threads and 5.5 s with one.  Set before NumPy loads, and
# inherited by the command-line subprocesses and notebook kernels the tests start.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, "1")
    if "numpy" in sys.modules:      # loaded by a plugin first: limit the loaded BLAS as well
        from threadpoolctl import threadpool_limits
        threadpool_limits(int(os.environ["OPENBLAS_NUM_THREADS"]), user_api="blas")

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


# Under xdist (make test: one worker per core) no core is free for a second process of a solve
# (the checking run of a verifying pair, the Taylor jets beside the printing) or the simulator's
# second thread: each test runs serial, as SCALING_ODES_SERIAL=1 asks (inherited by the command-
# line subprocesses and notebook kernels it starts).  A fork of a worker that has SymPy and
# NumPy loaded costs copy-on-write page faults on top of the same work: 50 variant-matrix tests
# took 22.6 s of CPU (5.9 s system) with the forks, 16.5 s (1.1 s system) serial.  The modules
# that test the second process or thread themselves, and the generation-time estimate (measured
# with the jets' second process), keep the environment as it is.
_CONCURRENCY_TESTS = {"test_concurrent_settle.py", "test_codegen_parallel.py", "test_ckernel.py",
                      "test_simulate_defaults.py", "test_codegen_estimate.py"}


@pytest.fixture(autouse=True)
def _serial_under_xdist(request, monkeypatch):
    if (os.environ.get("PYTEST_XDIST_WORKER") and "SCALING_ODES_SERIAL" not in os.environ
            and request.path.name not in _CONCURRENCY_TESTS):
        monkeypatch.setenv("SCALING_ODES_SERIAL", "1")


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """Generated-on-demand modules (and the simulator's compiled kernel) go to a temporary cache
    of this test run, not ~/.cache.  One directory for all xdist workers: a system is printed
    and the kernel compiled once per run, not once per worker (the registry's lock lets one
    worker print while another waits; the kernel is published by an atomic rename)."""
    from cache_support import RUN_CACHE, run_wide_dir
    monkeypatch.setenv("SCALING_ODES_CACHE", str(run_wide_dir(tmp_path_factory, RUN_CACHE)))


# SCALING_ODES_TEST_CPU=<file> appends one line per test: node id, wall seconds, CPU seconds of
# the worker process (all its threads) and of the subprocesses it waited for, setup to teardown,
# then the xdist worker and the Unix time the test ended (how busy each worker was, and which
# test ran last).  On a shared machine wall time depends on the load; CPU time is what the suite
# costs.
_CPU_LOG = os.environ.get("SCALING_ODES_TEST_CPU")


if _CPU_LOG:
    import resource
    import time

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        def children():
            usage = resource.getrusage(resource.RUSAGE_CHILDREN)
            return usage.ru_utime + usage.ru_stime

        wall, cpu, child = time.perf_counter(), time.process_time(), children()
        yield
        line = (f"{item.nodeid}\t{time.perf_counter() - wall:.3f}\t"
                f"{time.process_time() - cpu:.3f}\t{children() - child:.3f}\t"
                f"{os.environ.get('PYTEST_XDIST_WORKER', '-')}\t{time.time():.1f}\n")
        with open(_CPU_LOG, "a") as log:
            log.write(line)
