"""The verifying pair of ``solve`` in two processes (runner.settle, hierarchy/background.py):
the same rounds and the same numbers as one after the other, failures of the child handled."""
import os
from fractions import Fraction

import mpmath
import pytest

from derive import spectra
from derive.keys import SystemKey
from solvers.core.problem import Problem, random_init
from solvers.hierarchy import background, precision, runner
from solvers.hierarchy.runner import solve_auto
from solvers.integrators.rk78 import IntegrationError

pytestmark = [pytest.mark.contract, pytest.mark.higher_precision]  # oracle (tests/conftest.py)

needs_two = pytest.mark.skipif(not background.concurrent_allowed(),
                               reason="one CPU or SCALING_ODES_SERIAL=1: runs are serial")


def _erf_L4():
    s = spectra.power_law(4, 1)
    return Problem(SystemKey("erf", 2, 2), s, Fraction(1, 10), 1,
                   random_init(2, 2, 64, s, Fraction(1, 100), 1))


@needs_two
def test_concurrent_solve_is_bit_identical_to_serial():
    prob, alphas = _erf_L4(), [0, 20, 100]
    par = solve_auto(prob, alphas, basis="levels", digits=12, concurrent=True)
    ser = solve_auto(prob, alphas, basis="levels", digits=12, concurrent=False)
    assert par.stats["concurrent_runs"] and not ser.stats["concurrent_runs"]
    with mpmath.workdps(par.dps + 10):
        assert [mpmath.nstr(e, par.dps + 10) for e in par.eps_g] == \
               [mpmath.nstr(e, ser.dps + 10) for e in ser.eps_g]
    assert [e._mpf_ for e in par.eps_g] == [e._mpf_ for e in ser.eps_g]
    # the agreement was computed from the child's values: exact transport of every bit
    assert par.stats["agreement_digits"] == ser.stats["agreement_digits"] >= 12
    assert par.stats["checked_against_dps"] == ser.stats["checked_against_dps"]
    assert par.dps == ser.dps


def _third(dps, tighter, calls, fail_below=None, pid=None):
    """A stand-in run: 1/3 with a 10^-(dps/2) error; IntegrationError below ``fail_below``."""
    calls.append((dps, tighter, os.getpid() == pid))
    if fail_below is not None and dps < fail_below:
        raise IntegrationError("step size underflow\nat alpha = 12")
    with mpmath.workdps(dps + 10):
        return [mpmath.mpf(1) / 3 + mpmath.mpf(10) ** (-(dps // 2))]


@needs_two
def test_a_child_integration_error_is_a_failed_round():
    me = os.getpid()
    runs = {}
    for mode in (False, True):
        calls = []
        runs[mode] = runner.settle(lambda d, t: _third(d, t, calls, 40, me), lambda v: v,
                                      digits=20, dps=20, max_rounds=6, concurrent=mode)
        # the parent computed every checking run and (in parallel mode) no first run
        assert all(in_parent for _, tighter, in_parent in calls if tighter or not mode)
        if mode:                            # the calls the child made stayed in its memory
            assert calls and all(tighter for _, tighter, _ in calls)
    (s1, *r1), (s2, *r2) = runs[False], runs[True]
    assert r1 == r2 and r1[1] >= 40 and s1[0]._mpf_ == s2[0]._mpf_


def _split(in_child, in_parent=None):
    """A stand-in run that calls ``in_child()`` in the forked child and ``in_parent()`` (default:
    return [1]) in this process."""
    me = os.getpid()

    def run(dps, tighter):
        if os.getpid() != me:
            return in_child()
        return in_parent() if in_parent else [mpmath.mpf(1)]
    return run


def _raise(exc):
    def go():
        raise exc
    return go


@needs_two
def test_a_child_exception_is_raised_in_the_parent_with_its_message():
    run = _split(_raise(KeyError("no such level\n(child)")))
    with pytest.raises(KeyError, match="no such level"):
        runner.settle(run, lambda v: v, digits=5, dps=20, max_rounds=2, concurrent=True)

    class Odd(Exception):                  # does not survive pickling: its text does
        def __init__(self, a, b):
            super().__init__(f"{a} and {b}")

    with pytest.raises(RuntimeError, match="Odd: first and second"):
        runner.settle(_split(_raise(Odd("first", "second"))), lambda v: v, digits=5, dps=20,
                         max_rounds=2, concurrent=True)


@needs_two
def test_the_child_prints_nothing(capfd):
    # a forked child must not write through the parent's stream objects (their locks may be
    # held by threads the fork did not copy: a notebook kernel's output thread)
    import sys
    import warnings

    def chatty():
        print("from the child", flush=True)
        warnings.warn("a warning in the child")
        sys.stderr.flush()
        return [mpmath.mpf(1)]

    runner.settle(_split(chatty), lambda v: v, digits=5, dps=20, max_rounds=2,
                     concurrent=True)
    out, err = capfd.readouterr()
    assert "child" not in out + err


@needs_two
def test_a_child_that_dies_is_reported_and_reaped():
    with pytest.raises(background.ChildDied, match="exit code 3"):
        runner.settle(_split(lambda: os._exit(3)), lambda v: v, digits=5, dps=20, max_rounds=2, concurrent=True)
    import multiprocessing
    assert not multiprocessing.active_children()


@needs_two
def test_an_interrupt_in_the_parent_ends_the_child():
    import multiprocessing
    import time
    run = _split(lambda: time.sleep(60), _raise(KeyboardInterrupt()))
    children = []
    started = background.Background.__init__

    def spy(self, *a, **k):
        started(self, *a, **k)
        children.append(self._proc)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(background.Background, "__init__", spy)
        with pytest.raises(KeyboardInterrupt):
            runner.settle(run, lambda v: v, digits=5, dps=20, max_rounds=2, concurrent=True)
    assert not multiprocessing.active_children()
    # ended by the parent (a signal: negative exit code), not waited for: a child that slept its
    # 60 s out would have exited 0 (no clock: a loaded machine cannot fail this)
    assert len(children) == 1 and children[0].exitcode is not None and children[0].exitcode < 0


@needs_two
def test_a_child_exception_is_one_line_on_the_command_line(tmp_path, capsys, monkeypatch):
    from cli_support import run_cli, write_spec
    from specs import erf_spec
    from solvers.hierarchy import odes
    me, real = os.getpid(), odes.integrate_problem

    def broken(*args, **kw):
        if os.getpid() != me:
            raise ValueError("the first run failed\nin the child")
        return real(*args, **kw)

    monkeypatch.setattr(odes, "integrate_problem", broken)
    spec = write_spec(tmp_path, erf_spec(eta=0.1, sigma_J=0.01, seed=1, alpha_max=20,
                                         basis='"levels"', dps='"auto"', digits=8))
    code, out, err = run_cli(["solve", spec, "--json"], capsys)
    assert code == 2 and out == ""
    assert err.strip().splitlines() == ["scaling-odes: error: the first run failed in the child"]


def test_serial_switch_and_one_cpu(monkeypatch):
    monkeypatch.setenv(background.SERIAL_ENV, "1")
    assert not background.concurrent_allowed()
    monkeypatch.setattr(background, "Background",
                        lambda *a, **k: pytest.fail("forked despite SCALING_ODES_SERIAL=1"))
    me, calls = os.getpid(), []
    runner.settle(lambda d, t: _third(d, t, calls, None, me), lambda v: v, digits=20, dps=20,
                     max_rounds=6, concurrent=True)
    assert calls and all(in_parent for *_, in_parent in calls)
    traj = solve_auto(_erf_L4(), [0, 20], basis="levels", digits=8)
    assert traj.stats["concurrent_runs"] is False
    monkeypatch.delenv(background.SERIAL_ENV)
    monkeypatch.setattr(background, "available_cpus", lambda: 1)
    assert not background.concurrent_allowed()


@pytest.mark.parametrize("mode", [False, True])
def test_a_reused_checking_run_is_checked_at_a_tighter_tolerance(mode):
    """After a round that agreed on more than half the digits, the checking run becomes the
    next first run; the next check must be 100x tighter again (tighter = 2), not the same
    tolerance (whose truncation error it would share)."""
    seen = []

    def run(dps, tighter):              # error 10^-(2 tighter + 14): tolerance-limited
        seen.append((dps, tighter))
        with mpmath.workdps(dps + 10):
            return [mpmath.mpf(1) / 3 + mpmath.mpf(10) ** (-(14 + 2 * tighter))]

    second, dps2, dps1, agree = runner.settle(run, lambda v: v, digits=15, dps=30,
                                                 max_rounds=4, concurrent=mode)
    checks = [t for _, t in seen if t]
    assert checks == [1, 2] and agree >= 15 and dps1 == 40 and dps2 == 50


def test_workers_and_threads_run_serially():
    """A sweep's worker (a child process, daemonic under dask) or a thread does not fork."""
    import threading
    seen = []
    t = threading.Thread(target=lambda: seen.append(background.concurrent_allowed()))
    t.start()
    t.join()
    assert seen == [False]
    if background.concurrent_allowed():
        job = background.Background(background.concurrent_allowed)
        try:
            assert job.result() is False
        finally:
            job.close()


def test_a_failed_fork_falls_back_to_serial(monkeypatch):
    def no_fork(*args, **kw):
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(background, "Background", no_fork)
    me, calls, info = os.getpid(), [], {}
    second, *rest = runner.settle(lambda d, t: _third(d, t, calls, None, me), lambda v: v,
                                     digits=20, dps=20, max_rounds=6, concurrent=True, info=info)
    assert rest[2] >= 20 and calls and all(in_parent for *_, in_parent in calls)
    assert info == {"concurrent": False}       # the metadata says what happened, not what was asked
    # and solve's stats follow it
    traj = solve_auto(_erf_L4(), [0, 20], basis="levels", digits=8, concurrent=True)
    assert traj.stats["concurrent_runs"] is False
