"""The simulator's input generator (solvers/sim/normals.py): xoshiro256++ lanes + ziggurat.

The distribution and independence tests run on both transforms of the lanes' words: the
ziggurat (float64 deviates, generator "xoshiro") and the float32 inverse CDF (generator
"float32", whose own accuracy tests are in tests/test_normals_f32.py).

Statistical tests use fixed seeds, so they are deterministic; each threshold is a multiple of
the statistic's standard error (stated at the assertion), chosen so that a correct generator
passes with overwhelming probability while a real defect (a wrong layer, a missing tail, shared
lanes) moves the statistic by many standard errors.
"""
import math

import numpy as np
import pytest
from scipy import stats
from scipy.special import erfinv

from solvers.generated import normal_f32 as f32_tables
from solvers.sim import normals as nm

pytestmark = [pytest.mark.statistics, pytest.mark.quadrature]  # oracle (tests/conftest.py)

N_DRAW = 2_000_000


@pytest.fixture(scope="module", params=nm.KINDS)
def sample(request):
    return nm.standard_normal(nm.seed_state(2024), N_DRAW, kind=request.param)


# ---------------------------------------------------------------------------------------------
# The bit generator
# ---------------------------------------------------------------------------------------------

def test_xoshiro_known_answer_and_scalar_vs_reference():
    # state (1, 2, 3, 4): first output rotl(1 + 4, 23) + 1 = 5 * 2^23 + 1, by hand
    st = np.array([[1], [2], [3], [4]], dtype=np.uint64)
    assert int(nm.next_raw(st, 0)) == 5 * 2**23 + 1
    # the compiled step against the step on Python integers, from an arbitrary state
    ref = [int(w) for w in np.random.SeedSequence(5).generate_state(4, np.uint64)]
    st = np.array(ref, dtype=np.uint64).reshape(4, 1)
    for _ in range(1000):
        assert int(nm.next_raw(st, 0)) == nm._py_next(ref)
    assert [int(w) for w in st[:, 0]] == ref


def test_jump_is_linear_and_commutes_with_the_step():
    # jump() applies a polynomial in the (linear) state transition: it must commute with it
    s = [int(w) for w in np.random.SeedSequence(1).generate_state(4, np.uint64)]
    a, b = list(s), list(s)
    nm.jump(a)
    nm._py_next(a)
    nm._py_next(b)
    nm.jump(b)
    assert a == b and a != s


def test_lanes_are_jumps_and_blocks_interleave_lanes():
    st = nm.seed_state(7)
    lanes = [[int(w) for w in st[:, lane]] for lane in range(nm.LANES + 1)]
    for j in range(1, nm.LANES + 1):
        prev = list(lanes[j - 1])
        nm.jump(prev)
        assert prev == lanes[j]
    n = 3 * nm.LANES + 5                     # 3 full blocks and a partial one
    bits = np.empty(n, dtype=np.uint64)
    nm._raw_block(st, bits)
    expect = []
    for _ in range(3):
        expect += [nm._py_next(lanes[lane]) for lane in range(nm.LANES)]
    expect += [nm._py_next(lanes[lane]) for lane in range(5)]
    assert [int(b) for b in bits] == expect
    assert [[int(w) for w in st[:, lane]] for lane in range(nm.LANES + 1)] == lanes


def test_same_seed_same_stream_and_seeds_differ():
    a = nm.standard_normal(nm.seed_state(3), 1000)
    b = nm.standard_normal(nm.seed_state(3), 1000)
    c = nm.standard_normal(nm.seed_state(4), 1000)
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    child = np.random.SeedSequence(3).spawn(5)[3]
    assert not np.array_equal(a, nm.standard_normal(nm.seed_state(child), 1000))


# ---------------------------------------------------------------------------------------------
# The ziggurat
# ---------------------------------------------------------------------------------------------

def test_ziggurat_layers_have_equal_area():
    z = nm.ZIGGURAT
    X, F, v, r = z["X"], z["F"], z["v"], z["r"]
    # base strip: rectangle [0, r] x [0, f(r)] plus the tail, computed independently by quadrature
    from scipy.integrate import quad
    tail = quad(lambda t: math.exp(-0.5 * t * t), r, np.inf, epsabs=1e-16)[0]
    assert abs(r * F[1] + tail - v) < 1e-15
    assert abs(X[0] * F[1] - v) < 1e-15
    areas = X[1:-1] * (F[2:] - F[1:-1])      # layers 1..255: width X_k, height f(X_{k+1}) - f(X_k)
    assert np.max(np.abs(areas - v)) < 1e-14 * 256
    assert abs(z["top_mismatch"]) < 1e-14
    assert np.all(np.diff(X[1:]) < 0) and X[-1] == 0.0


def test_moments(sample):
    n = sample.size
    # standard errors of the sample mean, variance, third and fourth moments of N(0, 1):
    # sqrt(1/n), sqrt(2/n), sqrt(15/n), sqrt(96/n); 5 of them each
    assert abs(sample.mean()) < 5 * math.sqrt(1 / n)
    assert abs(np.mean(sample**2) - 1) < 5 * math.sqrt(2 / n)
    assert abs(np.mean(sample**3)) < 5 * math.sqrt(15 / n)
    assert abs(np.mean(sample**4) - 3) < 5 * math.sqrt(96 / n)


def test_kolmogorov_smirnov_and_fine_bins(sample):
    assert stats.kstest(sample, "norm").pvalue > 1e-3
    # 1000 equal-probability bins: chi-square with 999 dof (sd sqrt(2 * 999) = 45); a ziggurat
    # layer with a wrong width or wedge shows up here long before it moves the KS statistic
    edges = stats.norm.ppf(np.linspace(0, 1, 1001)[1:-1])
    counts = np.bincount(np.searchsorted(edges, sample), minlength=1000)
    chi2 = np.sum((counts - sample.size / 1000) ** 2 / (sample.size / 1000))
    assert stats.chi2.sf(chi2, 999) > 1e-3, chi2


# the tail paths: beyond the ziggurat's base strip r, and beyond the float32 transform's
# central range (where it switches to its float64 tail formula)
@pytest.mark.parametrize("r", [nm.ZIGGURAT["r"], math.sqrt(2) * erfinv(f32_tables.U_CENTRAL)],
                         ids=["ziggurat_tail", "float32_tail"])
def test_tail_beyond_the_base_strip(sample, r):
    # expected count n * 2 Phi(-r) (~500 beyond the ziggurat's r)
    p = 2 * stats.norm.sf(r)
    n_tail = int(np.sum(np.abs(sample) > r))
    assert abs(n_tail - sample.size * p) < 5 * math.sqrt(sample.size * p)
    # and the shape of the tail: KS of the excess |z| - r against the conditional law
    excess = np.abs(sample[np.abs(sample) > r])
    cdf = lambda t: 1 - stats.norm.sf(t) / stats.norm.sf(r)  # noqa: E731
    assert stats.kstest(excess, cdf).pvalue > 1e-3
    assert np.all(np.isfinite(sample))


def test_scale_multiplies_each_entry():
    s = np.linspace(0.5, 2, 64)
    a = nm.standard_normal(nm.seed_state(9), 64, s)
    b = nm.standard_normal(nm.seed_state(9), 64)
    assert np.array_equal(a, s * b)


# ---------------------------------------------------------------------------------------------
# Independence: lanes, consecutive draws, seeds
# ---------------------------------------------------------------------------------------------

def test_lanes_and_seeds_are_uncorrelated(sample):
    # entries a and a + 1 come from different lanes, a and a + LANES from one lane's consecutive
    # outputs; N(0,1) correlations of independent samples have standard error 1/sqrt(n)
    # (float32: two entries per word, so lag 2 LANES is one lane's next word)
    for lag in (1, 2, nm.LANES, nm.LANES + 1, 2 * nm.LANES, 1024):
        c = np.corrcoef(sample[:-lag], sample[lag:])[0, 1]
        assert abs(c) < 5 / math.sqrt(sample.size - lag), (lag, c)
    # squares too (dependence that is not linear)
    q = sample**2
    for lag in (1, nm.LANES, 2 * nm.LANES):
        c = np.corrcoef(q[:-lag], q[lag:])[0, 1]
        assert abs(c) < 5 / math.sqrt(sample.size - lag), (lag, c)
    # the lanes as columns: all pairwise correlations
    block = sample[: (sample.size // nm.LANES) * nm.LANES].reshape(-1, nm.LANES)
    cm = np.corrcoef(block.T)
    off = cm[~np.eye(nm.LANES, dtype=bool)]
    assert np.max(np.abs(off)) < 5 / math.sqrt(block.shape[0])
    # streams of neighbouring seeds (what simulate_many runs side by side)
    other = nm.standard_normal(nm.seed_state(2025), 200_000)
    c = np.corrcoef(sample[:200_000], other)[0, 1]
    assert abs(c) < 5 / math.sqrt(200_000)


@pytest.mark.parametrize("kind", nm.KINDS)
def test_two_sample_ks_between_seeds(kind):
    a = nm.standard_normal(nm.seed_state(11), 200_000, kind=kind)
    b = nm.standard_normal(nm.seed_state(12), 200_000, kind=kind)
    assert stats.ks_2samp(a, b).pvalue > 1e-3
