"""The C step loop of the xoshiro generators (solvers/sim/csrc/sgd_rows.c, solvers/sim/ckernel.py).

Its normals must be the numba streams' bit for bit (every input word of the float32 transform,
and whole blocks of both streams with their remainders and redraws), so the statistical tests
(tests/test_normals.py, tests/test_normals_f32.py) hold for it.  Its trajectories must agree
with the numba kernel's to rounding: the fields are the same sums in another order.  Without a
compiler the numba kernel runs instead, with a warning.
"""
import ctypes
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from solvers.generated import normal_f32 as tables
from solvers.sim import ckernel, normals as nm
from solvers.sim.simulate import naive_simulate, simulate

pytestmark = [pytest.mark.second_basis]  # oracle (tests/conftest.py): the numba kernels

ROOT = Path(__file__).resolve().parents[1]
HAVE_CC = shutil.which(os.environ.get("CC", "cc")) is not None
needs_cc = pytest.mark.skipif(not HAVE_CC, reason="no C compiler on this machine")


@pytest.fixture
def kernel():
    k = ckernel.kernel()
    assert k is not None, "a C compiler is present, so the kernel must build"
    return k


@pytest.fixture
def numba_only():
    """Run the body with the numba kernels (as without a compiler), then restore."""
    with ckernel.numba_only():
        yield


@needs_cc
def test_transform_is_the_numba_transform_on_every_word(kernel):
    """All 2^23 uniforms, both signs, with noise in the 8 unused low bits: the same doubles."""
    m = np.arange(2**23, dtype=np.uint32) << np.uint32(9)
    noise = np.random.default_rng(0).integers(0, 256, 2 * m.size, dtype=np.uint32)
    h = np.concatenate([m, m | np.uint32(256)]) | noise
    z_c = np.empty(h.size)
    kernel.transform(h, z_c)
    z_nb = np.empty(h.size)
    nm._normals_f32(h, np.ones(h.size), z_nb, np.empty(h.size // 8 + 1, dtype=np.uint64))
    assert np.array_equal(z_c, z_nb)
    assert np.count_nonzero(h >= np.uint32(tables.M_TAIL << 9)) > 16_000    # tails included


@needs_cc
@pytest.mark.parametrize("generator", ["xoshiro", "float32"])
@pytest.mark.parametrize("n", [1, 2, 7, 15, 16, 17, 31, 32, 33, 100, 1000, 1024, 4099, 1 << 20])
def test_fill_is_the_numba_stream(kernel, n, generator):
    """Two consecutive samples, scaled: same normals, same lane states after, repair lane
    included (the ziggurat's rejected words are redrawn in the same order; remainders of
    n mod 32 come from the first lanes, scalar, in both)."""
    fill_nb = nm.fill_normals if generator == "xoshiro" else nm.fill_normals_f32
    rng = np.random.default_rng(n)
    st_c = nm.seed_state(np.random.SeedSequence(n))
    st_nb = st_c.copy()
    for _ in range(2):
        scale = rng.uniform(0.1, 3.0, n)
        z_c, z_nb = np.empty(n), np.empty(n)
        kernel.fill(generator, st_c, scale, z_c)
        fill_nb(st_nb, np.empty(2 * n, dtype=np.uint64), scale, z_nb)
        assert np.array_equal(z_c, z_nb)
        assert np.array_equal(st_c, st_nb)


@needs_cc
@pytest.mark.parametrize("isa", [v for v in ckernel.ISA_VARIANTS if v != "native"])
def test_every_instruction_set_path_gives_the_numba_stream(isa):
    """-march=native compiles the widest path of the CPU that runs the tests (AVX-512 here);
    the AVX2 path is what an AVX2-only CPU runs by default and the plain one what a CPU
    without AVX2 runs.  Each, built here, must give the same normals bit for bit: every
    float32 word (both signs, noise in the unused bits) and whole blocks of both streams."""
    try:
        k = ckernel.variant(isa)
    except OSError as exc:
        pytest.fail(f"the {isa} path does not build: {exc}")
    m = np.arange(0, 2**23, 7, dtype=np.uint32) << np.uint32(9)
    h = np.concatenate([m, m | np.uint32(256)])
    h |= np.random.default_rng(1).integers(0, 256, h.size, dtype=np.uint32)
    z_c, z_nb = np.empty(h.size), np.empty(h.size)
    k.transform(h, z_c)
    nm._normals_f32(h, np.ones(h.size), z_nb, np.empty(h.size // 8 + 1, dtype=np.uint64))
    assert np.array_equal(z_c, z_nb)
    for generator in ("xoshiro", "float32"):
        fill_nb = nm.fill_normals if generator == "xoshiro" else nm.fill_normals_f32
        for n in (33, 1024, 1 << 16):
            st_c = nm.seed_state(np.random.SeedSequence(n))
            st_nb = st_c.copy()
            scale = np.random.default_rng(n).uniform(0.1, 3.0, n)
            z_c, z_nb = np.empty(n), np.empty(n)
            k.fill(generator, st_c, scale, z_c)
            fill_nb(st_nb, np.empty(2 * n, dtype=np.uint64), scale, z_nb)
            assert np.array_equal(z_c, z_nb), (generator, n)
            assert np.array_equal(st_c, st_nb), (generator, n)



@needs_cc
@pytest.mark.parametrize("isa", [v for v in ckernel.ISA_VARIANTS if v != "native"])
def test_every_instruction_set_path_runs_the_same_steps(kernel, isa):
    """The step loop works in vectors of 8 lanes with AVX-512 and of 4 without, but does the same
    IEEE operations in the same order element by element (csrc/sgd_rows.c), so each path's run
    is the native path's bit for bit, the native path being compared with the numba kernel in
    test_trajectory_agrees_with_the_numba_kernel.  The cases cover N mod 32 != 0, a chunk that
    is partly trainable, several rows and K = M = 2 (compiled on its own); one thread: the cut
    in two threads gives the same bits on any path (test_two_threads_give_the_same_bits)."""
    try:
        other = ckernel.variant(isa)
    except OSError as exc:
        pytest.fail(f"the {isa} path does not build: {exc}")
    cases = [dict(activation="erf", K=3, M=2, N=200, L=4, beta=0.5, eta=0.3, sigma_J=0.5,
                  alphas=[0, 1, 1.5], n_trainable=117, untrainable="frozen"),
             {**CASES["erf K5 M4 N96"], "alphas": [0, 2]},
             {**CASES["erf K2 M2 N1000 mask"], "alphas": [0, 2]}]
    for case in cases:
        for generator in ("xoshiro", "float32"):
            kw = {**case, "generator": generator, "threads": 1}
            runs = []
            for k in (kernel, other):
                with ckernel.using(k):
                    runs.append(simulate(seed=4, **kw))
            for f in ("J_final", "R1", "Q1", "eps_g"):
                assert np.array_equal(getattr(runs[0], f), getattr(runs[1], f)), \
                    (case["N"], generator, f)

CASES = {
    "erf K2 M3 N32": dict(activation="erf", K=2, M=3, N=32, L=4, beta=1.0, eta=0.5,
                          sigma_J=0.3, alphas=[0, 1, 40]),
    "erf K3 M1 N1000 mask": dict(activation="erf", K=3, M=1, N=1000, L=8, beta=0.5, eta=0.3,
                                 sigma_J=0.5, alphas=[0, 3, 6], n_trainable=517,
                                 untrainable="frozen", rotate=True),
    "linear K1 M1 N64 mask": dict(activation="linear", K=1, M=1, N=64, L=4, beta=1.0, eta=0.2,
                                  sigma_J=0.2, alphas=[0, 30], n_trainable=40),
    "erf K5 M4 N96": dict(activation="erf", K=5, M=4, N=96, L=3, beta=2.0, eta=1.0,
                          sigma_J=0.1, alphas=[0, 20]),
    # the defaults' K = M = 2, which the C kernel compiles as a case of its own
    "erf K2 M2 N1000 mask": dict(activation="erf", K=2, M=2, N=1000, L=8, beta=1.0, eta=0.3,
                                 sigma_J=0.3, alphas=[0, 3, 6], n_trainable=611,
                                 untrainable="frozen"),
}


@needs_cc
@pytest.mark.parametrize("generator", ["xoshiro", "float32"])
@pytest.mark.parametrize("case", list(CASES))
def test_trajectory_agrees_with_the_numba_kernel(kernel, case, generator, request):
    """Same stream, same updates; the fields are summed in another order (and tail words are
    corrected after the pass), so the runs differ by rounding only.  1e-13 relative: the
    differences start at ~1e-16 per step and SGD at these learning rates does not amplify them
    by more than a few hundred over <= 6000 steps (measured: 2e-16 to 2.4e-15)."""
    kw = {**CASES[case], "generator": generator}
    c = simulate(seed=3, **kw)
    request.getfixturevalue("numba_only")
    nb = simulate(seed=3, **kw)
    assert np.array_equal(c.T1, nb.T1) and c.alpha.tolist() == nb.alpha.tolist()
    for f in ("J_final", "R1", "Q1", "eps_g"):
        a, b = getattr(c, f), getattr(nb, f)
        assert np.max(np.abs(a - b)) <= 1e-13 * np.max(np.abs(b)), f


@needs_cc
@pytest.mark.parametrize("generator", ["xoshiro", "float32"])
def test_c_kernel_run_equals_the_literal_loop(kernel, generator):
    kw = {**CASES["erf K3 M1 N1000 mask"], "generator": generator}
    a, b = simulate(seed=1, **kw), naive_simulate(seed=1, **kw)
    for f in ("eps_g", "R1", "Q1", "J_final"):
        np.testing.assert_allclose(getattr(a, f), getattr(b, f), rtol=0, atol=1e-11, err_msg=f)


@needs_cc
@pytest.mark.parametrize("generator", ["xoshiro", "float32"])
def test_blow_up_is_reported(kernel, generator):
    kw = dict(activation="linear", K=1, M=1, N=32, L=4, beta=1.0, eta=40.0, sigma_J=1.0,
              seed=0, alphas=[100], generator=generator)
    with pytest.raises(FloatingPointError, match=r"non-finite at alpha = [0-9.e+-]+"):
        simulate(**kw)


@needs_cc
def test_calls_release_the_gil(kernel):
    """ctypes.CDLL (not PyDLL) drops the GIL around each call: simulate_many's threads run
    the C kernel in parallel."""
    assert type(kernel._lib) is ctypes.CDLL


def test_without_a_compiler_numba_runs_with_a_warning(monkeypatch, tmp_path, numba_only):
    kw = CASES["erf K2 M3 N32"]                      # the default generator, "xoshiro"
    reference = simulate(seed=2, **kw)              # numba (the fixture)
    monkeypatch.setenv("SCALING_ODES_CACHE", str(tmp_path))
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    ckernel.reset()
    with pytest.warns(RuntimeWarning, match="C kernel unavailable: no C compiler"):
        again = simulate(seed=2, **kw)
    assert ckernel.kernel() is None
    assert np.array_equal(again.J_final, reference.J_final)


def _fake_compiler(monkeypatch, tmp_path, script):
    """CC is a shell script; the library cache is empty."""
    cc = tmp_path / "fake-cc"
    cc.write_text("#!/bin/sh\n" + script)
    cc.chmod(0o755)
    monkeypatch.setenv("SCALING_ODES_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("CC", str(cc))
    ckernel.reset()


def test_a_failing_compiler_is_named_in_the_warning(monkeypatch, tmp_path, numba_only):
    _fake_compiler(monkeypatch, tmp_path, "echo 'fake-cc: cannot compile today' >&2\nexit 1\n")
    with pytest.warns(RuntimeWarning, match="fake-cc: cannot compile today"):
        assert ckernel.kernel() is None
    # no half-written library (the lock file of the build stays)
    assert not [p for p in (tmp_path / "cache" / "ckernel").glob("*") if p.suffix != ".lock"]


def test_a_hanging_compiler_times_out(monkeypatch, tmp_path, numba_only):
    _fake_compiler(monkeypatch, tmp_path, "sleep 30\n")
    monkeypatch.setattr(ckernel, "COMPILE_TIMEOUT_S", 1)
    with pytest.warns(RuntimeWarning, match="did not finish within 1 s"):
        assert ckernel.kernel() is None


def test_switched_off_by_environment(monkeypatch, numba_only):
    monkeypatch.setenv("SCALING_ODES_NO_CKERNEL", "1")
    ckernel.reset()
    assert ckernel.kernel() is None


@needs_cc
def test_library_is_cached_by_source_compiler_and_cpu(monkeypatch, tmp_path):
    monkeypatch.setenv("SCALING_ODES_CACHE", str(tmp_path))
    cc = shutil.which(os.environ.get("CC", "cc"))
    first = ckernel.build(cc)
    stamp = first.stat().st_mtime_ns
    assert ckernel.build(cc) == first and first.stat().st_mtime_ns == stamp   # reused
    # no temporary files (the lock file of the build stays)
    assert [p.name for p in first.parent.iterdir() if p.suffix != ".lock"] == [first.name]
    monkeypatch.setattr(ckernel, "CFLAGS", (*ckernel.CFLAGS, "-DSCALING_ODES_TEST_FLAG"))
    assert ckernel.library_path(cc) != first


@needs_cc
def test_the_c_path_does_not_start_numba(tmp_path):
    """The point of the C path for the command's start-up: numba is never imported."""
    code = ("import sys, numpy as np\n"
            "from solvers.sim.simulate import simulate\n"
            "r = simulate(activation='erf', K=2, M=2, N=64, L=4, beta=1.0, eta=0.5,"
            " sigma_J=0.1, seed=0, alphas=[0, 5])\n"
            "assert np.all(np.isfinite(r.eps_g))\n"
            "print('numba' in sys.modules)\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         cwd=tmp_path, check=True)
    assert out.stdout.strip() == "False", out.stderr


# ---------------------------------------------------------------------------------------------
# One run on two threads (csrc/sgd_rows.c: the coordinates cut in two parts whose sums are kept
# apart with one thread too, so the bits do not depend on the threads)
# ---------------------------------------------------------------------------------------------

THREAD_CASES = {
    **CASES,
    "erf K2 M2 N1024": dict(activation="erf", K=2, M=2, N=1024, L=16, beta=1.0, eta=0.2,
                            sigma_J=0.1, alphas=[0, 0.5, 8]),
}


@needs_cc
@pytest.mark.parametrize("generator", ["xoshiro", "float32"])
@pytest.mark.parametrize("case", list(THREAD_CASES))
def test_two_threads_give_the_same_bits(kernel, case, generator):
    kw = {**THREAD_CASES[case], "generator": generator}
    one, two = simulate(seed=6, threads=1, **kw), simulate(seed=6, threads=2, **kw)
    assert (one.kernel, one.threads, two.kernel, two.threads) == ("c", 1, "c", 2)
    for f in ("J_final", "R1", "Q1", "eps_g"):
        assert np.array_equal(getattr(one, f), getattr(two, f)), f


@needs_cc
@pytest.mark.parametrize("generator", ["xoshiro", "float32"])
def test_two_threads_stop_at_the_same_step(kernel, generator):
    kw = dict(activation="linear", K=1, M=1, N=1024, L=4, beta=1.0, eta=40.0, sigma_J=1.0,
              seed=0, alphas=[2], generator=generator)
    messages = []
    for threads in (1, 2):
        with pytest.raises(FloatingPointError) as err:
            simulate(threads=threads, **kw)
        messages.append(str(err.value))
    assert messages[0] == messages[1]


@pytest.mark.parametrize("bad", [0, 3, True, 1.0, "2"])
def test_threads_must_be_one_or_two(bad):
    with pytest.raises(ValueError, match="threads must be 1, 2 or None"):
        simulate(seed=0, threads=bad, **CASES["erf K2 M3 N32"])


@needs_cc
def test_default_threads(kernel, monkeypatch):
    """Two threads by default only from N = 512 (float32) or 1024 (xoshiro), with a second CPU
    free for this call."""
    import threading

    from solvers.hierarchy import background
    from solvers.sim import simulate as sim
    kw = {**THREAD_CASES["erf K2 M2 N1024"], "alphas": [0, 1], "generator": "float32"}
    monkeypatch.setattr(background, "available_cpus", lambda: 2)
    monkeypatch.setattr(sim, "_load_average", lambda: 0.0)          # an idle machine
    assert simulate(seed=0, **kw).threads == 2
    assert simulate(seed=0, **{**kw, "N": 256}).threads == 1          # below _TWO_THREAD_MIN_N
    assert simulate(seed=0, **{**kw, "generator": "xoshiro", "N": 512}).threads == 1
    assert simulate(seed=0, **{**kw, "generator": "xoshiro"}).threads == 2
    assert simulate(seed=0, **{**kw, "generator": "numpy"}).kernel == "numba"
    box = []
    worker = threading.Thread(target=lambda: box.append(simulate(seed=0, **kw).threads))
    worker.start()
    worker.join()
    assert box == [1]                                                  # simulate_many's threads
    monkeypatch.setenv("SCALING_ODES_SERIAL", "1")
    assert simulate(seed=0, **kw).threads == 1
    monkeypatch.delenv("SCALING_ODES_SERIAL")
    monkeypatch.setattr(background, "available_cpus", lambda: 1)
    assert simulate(seed=0, **kw).threads == 1
    assert sim._TWO_THREAD_MIN_N == {"float32": 512, "xoshiro": 1024}


def test_thread_choice_follows_the_measured_rate():
    from solvers.sim.simulate import _ThreadChoice
    c = _ThreadChoice(2, adaptive=True, min_steps=100)
    picks = [c.pick(1000) for _ in range(20)]
    assert picks.count(1) == 2 and picks[9] == picks[19] == 1        # every 10th long call probes
    assert c.pick(50) == 2 and c.calls == 20                          # short calls do not count
    c.record(2, 1000, 1e-3)                                     # 1e6 steps/s on two
    c.record(1, 1000, 2e-3)                                     # 5e5 on one: stay on two
    assert c.current == 2
    c.record(1, 1000, 0.6e-3)                                   # one: (5e5 + 1.67e6)/2 = 1.08e6,
    assert c.current == 2                                       # faster, by less than 1.1x
    c.record(1, 1000, 0.8e-3)                                   # one: 1.17e6 > 1.1 x 1e6
    assert c.current == 1 and c.used == 1
    c.record(2, 1000, 0.5e-3)                                   # a probe: two at 1.5e6
    assert c.current == 2
    fixed = _ThreadChoice(2, adaptive=False, min_steps=100)
    assert {fixed.pick(1000) for _ in range(30)} == {2}
    fixed.record(2, 1000, 1.0)
    fixed.record(1, 1000, 1e-6)
    assert fixed.current == 2
    assert not _ThreadChoice(1, adaptive=True, min_steps=1).adaptive  # chosen 1: nothing to probe


@needs_cc
@pytest.mark.parametrize("generator", ["xoshiro", "float32"])
@pytest.mark.parametrize("call_work", [1 << 15, 1 << 12])
def test_switching_threads_within_a_run_keeps_the_bits(kernel, monkeypatch, generator,
                                                       call_work):
    """Calls of 8 steps, and of 1 step (fewer than the kernel draws ahead: 1 sample with
    float32, 2 with the ziggurat on two threads), switching threads every other call (PROBE:
    every other call runs on the count not chosen)."""
    from solvers.hierarchy import background
    from solvers.sim import simulate as sim
    monkeypatch.setattr(background, "available_cpus", lambda: 2)
    monkeypatch.setattr(sim, "_load_average", lambda: 0.0)          # an idle machine
    monkeypatch.setattr(sim._ThreadChoice, "PROBE", 2)          # every other call switches
    monkeypatch.setattr(sim, "_CALL_WORK_TWO_THREADS", call_work)  # many short calls
    monkeypatch.setattr(sim, "_CALL_WORK", call_work)
    alphas = [0, 1, 6] if call_work > 1 << 12 else [0, 0.01, 0.3]
    kw = {**THREAD_CASES["erf K2 M2 N1024"], "generator": generator, "alphas": alphas}
    mixed, one = simulate(seed=8, **kw), simulate(seed=8, threads=1, **kw)
    for f in ("J_final", "R1", "Q1", "eps_g"):
        assert np.array_equal(getattr(mixed, f), getattr(one, f)), f


@needs_cc
@pytest.mark.parametrize("generator", ["xoshiro", "float32"])
@pytest.mark.parametrize("N", [1024, 100])
def test_a_blow_up_leaves_the_stream_after_the_last_step(kernel, generator, N):
    """The kernel draws samples ahead of its steps; when a field is not finite at step t it
    hands back sample t and the lanes after it, on one thread and on two, as numba's stream
    (normals.py, drawn here sample by sample) has them."""
    fill_nb = nm.fill_normals if generator == "xoshiro" else nm.fill_normals_f32
    rng = np.random.default_rng(N)
    st_start = nm.seed_state(np.random.SeedSequence(N + 1))
    scale = ckernel.aligned(rng.uniform(0.5, 1.5, N))
    runs = []
    for threads in (1, 2):
        st = st_start.copy()
        z = ckernel.aligned(np.empty(N))
        kernel.fill(generator, st, scale, z)
        J = ckernel.aligned(rng.normal(size=(1, N)) if threads == 1 else runs[0]["J0"])
        B = ckernel.aligned(np.ones((1, N)))
        J0 = J.copy()
        x, y = J @ z / np.sqrt(N), B @ z / np.sqrt(N)
        bad, _ = kernel.steps(generator, st, J, B, scale, N, 40.0, 1, 5000, z, x, y,
                              kernel.work(N, 1, 1), threads)
        runs.append(dict(bad=bad, z=z.copy(), st=st.copy(), J0=J0, x=x.copy()))
    assert 2 < runs[0]["bad"] < 5000                           # linear, eta = 40: it blows up
    for f in ("bad", "z", "st", "x"):
        assert np.array_equal(runs[0][f], runs[1][f], equal_nan=True), f
    st_nb, z_nb = st_start.copy(), np.empty(N)
    for _ in range(runs[0]["bad"] + 1):                        # samples 0 .. t
        fill_nb(st_nb, np.empty(2 * N, dtype=np.uint64), scale, z_nb)
    assert np.array_equal(runs[0]["z"], z_nb) and np.array_equal(runs[0]["st"], st_nb)
