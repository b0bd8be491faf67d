"""The simulator's default input generator ("float32") and what must not depend on it.

The default is the fastest generator that passes the checks of the others (statistics:
tests/test_normals.py, tests/test_normals_f32.py; ODE agreement: tests/test_sim_vs_ode.py).  Here:
every entry point uses the same default; a seed reproduces its run with the default; and the
initial realisation, which ``solve`` with init = "random" takes from the simulator, is the same
for every generator, so theory and simulation of one seed share one starting point whatever
stream the SGD steps draw.
"""
from __future__ import annotations

import inspect

import numpy as np
import pytest

from derive import spectra
from solvers.app.sections import SIMULATE_SCHEMA
from solvers.core.problem import random_init
from solvers.sim import simulate as sim

pytestmark = [pytest.mark.closed_form]  # oracle (tests/conftest.py)

TINY = dict(activation="erf", K=2, M=3, N=32, eta=0.5, sigma_J=0.3, alphas=[0, 1, 4], L=4, beta=1.0)


def test_one_default_everywhere():
    assert sim.DEFAULT_GENERATOR == "float32"
    assert SIMULATE_SCHEMA["generator"][1] == sim.DEFAULT_GENERATOR     # the spec's default
    for fn in (sim.simulate, sim.naive_simulate, sim._validate):
        assert inspect.signature(fn).parameters["generator"].default == sim.DEFAULT_GENERATOR, fn
    r = sim.simulate(seed=1, **TINY)
    assert r.config["generator"] == "float32"


def test_default_run_is_reproducible_and_is_the_float32_stream():
    a = sim.simulate(seed=3, **TINY)
    b = sim.simulate(seed=3, **TINY)
    c = sim.simulate(seed=3, generator="float32", **TINY)
    z = sim.simulate(seed=3, generator="xoshiro", **TINY)
    for f in ("eps_g", "R1", "Q1", "J_final"):
        assert np.array_equal(getattr(a, f), getattr(b, f))
        assert np.array_equal(getattr(a, f), getattr(c, f))
    # the ziggurat stays selectable, and is a different stream from the same seed
    assert z.config["generator"] == "xoshiro" and not np.array_equal(a.J_final, z.J_final)


@pytest.mark.parametrize("rotate", [False, True])
def test_initial_realisation_does_not_depend_on_the_generator(rotate):
    kw = dict(TINY, rotate=rotate)
    runs = {g: sim.simulate(seed=7, generator=g, **kw) for g in sim.GENERATORS}
    ref = sim.initial_mode_overlaps(K=2, M=3, N=32, sigma_J=0.3, seed=7, L=4, beta=1.0, rotate=rotate)
    for g, r in runs.items():
        for k in "RQT":
            assert np.array_equal(r.init_modes[k], ref[k]), (g, k)
    # ... and solve's init = "random" is that realisation, exactly (float64 values taken as exact)
    sp = spectra.power_law(4, 1)
    lam = [float(v) for v in sp.eigenvalues]
    ini = random_init(2, 3, 32, sp, 0.3, 7, rotate)
    r = sim.simulate(seed=7, eigenvalues=lam, **{k: v for k, v in kw.items() if k not in ("L", "beta")})
    for k, arr in (("R", ini.R), ("Q", ini.Q), ("T", ini.T)):
        assert np.array_equal(np.asarray(arr, dtype=float), r.init_modes[k]), k


def test_two_threads_only_when_a_cpu_is_idle(monkeypatch):
    """threads=None takes a second thread only when the 1-minute load leaves a CPU idle: under
    load the two threads' per-step wait costs a time slice (bench/ARCHIVE.md §20: 3-6k steps/s on
    two threads against 170-520k on one at load 12-20)."""
    from solvers.hierarchy import background
    monkeypatch.setattr(background, "available_cpus", lambda: 2)
    st = sim._validate(**{**TINY, "N": 1024, "L": 4}, seed=0)
    for load, want in ((0.0, 2), (1.5, 2), (1.6, 1), (12.0, 1)):
        monkeypatch.setattr(sim, "_load_average", lambda load=load: load)
        assert sim._threads(st, None) == want, load
        assert sim._threads(st, 2) == 2                        # asked for: given
