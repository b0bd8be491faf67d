"""The simulator's float32 inputs (generator = "float32"): xoshiro256++ lanes, two 32-bit halves
per word, inverse normal CDF (solvers/sim/normals.py, constants fitted by
solvers/precompute/normal_tables.py).

Accuracy is checked exhaustively: every one of the 2^23 values of the uniform (and both signs)
against SciPy's float64 erfinv, itself spot-checked against mpmath at 40 digits.  The
distribution and independence tests shared with the ziggurat (moments, KS, 1000 bins, lags,
lanes, seeds) run on this transform too, in tests/test_normals.py.
"""
import math

import mpmath as mp
import numpy as np
import pytest
from scipy.special import erfinv

from solvers.precompute import normal_tables
from solvers.generated import normal_f32 as tables
from solvers.sim import normals as nm

pytestmark = [pytest.mark.statistics, pytest.mark.quadrature]  # oracle (tests/conftest.py)

M = np.arange(2**23, dtype=np.uint32)          # every 23-bit uniform
U = (M.astype(np.float64) + 0.5) * 2.0**-23


@pytest.fixture(scope="module")
def all_inputs():
    """z for every input word (sign bit clear, then set) and the float64 reference."""
    h = np.concatenate([M << np.uint32(9), (M << np.uint32(9)) | np.uint32(256)])
    z = np.empty(h.size)
    nm._normals_f32(h, np.ones(h.size), z, np.empty(h.size // 8 + 1, dtype=np.uint64))
    return z[:M.size], z[M.size:], math.sqrt(2) * erfinv(U)


def test_reference_erfinv_agrees_with_mpmath():
    idx = np.concatenate([np.linspace(0, 2**23 - 1, 150).astype(int), M[-50:]])
    with mp.workdps(40):
        ref = [float(mp.sqrt(2) * mp.erfinv(mp.mpf(int(m)) / 2**23 + mp.mpf(2) ** -24)) for m in idx]
    np.testing.assert_allclose(math.sqrt(2) * erfinv(U[idx]), ref, rtol=1e-13)


def test_every_input_against_erfinv(all_inputs):
    pos, neg, ref = all_inputs
    central = M < tables.M_TAIL
    rel = np.abs(pos / ref - 1)
    # central: float32 evaluation of the rational function; its fit error is 3.7e-7 (float64,
    # (7, 7) on u <= 0.999), the rest is float32 rounding of ~20 operations: a few units of
    # 2^-24 = 6e-8 (measured total 5.4e-7)
    assert rel[central].max() < 1e-6, rel[central].max()
    # tail: float64 throughout, fit error of the degree-13 polynomial ~1e-11
    assert rel[~central].max() < 1e-10, rel[~central].max()
    assert np.array_equal(neg, -pos)                    # the sign bit is an exact negation
    # the largest deviate the stream can produce (u = 1 - 2^-24)
    assert 5.41 < pos.max() < 5.43


def test_monotone_up_to_float32_rounding(all_inputs):
    pos = all_inputs[0]
    step = np.diff(pos)
    # consecutive inputs differ by ~1.5e-7 in z, below float32's resolution once z > 1, so
    # neighbours may round to equal values; they are never reordered by more than the
    # accuracy bound above
    assert np.all(step > -1e-6 * pos[1:]), step.min()


def test_tables_are_in_sync_with_their_generator():
    assert normal_tables.render_normal_tables() == open(tables.__file__).read()


def test_tail_fraction_and_threshold():
    assert tables.M_TAIL == math.ceil(tables.U_CENTRAL * 2**23 - 0.5)
    # the rational's denominator stays away from zero on the central range
    y = (1 - U[M < tables.M_TAIL]) * (1 + U[M < tables.M_TAIL])
    q = np.polyval(tables.CENTRAL_Q[::-1], y[:: 997])
    assert q.min() > 0.05


# ---------------------------------------------------------------------------------------------
# The stream
# ---------------------------------------------------------------------------------------------

def test_words_are_split_low_half_first_and_odd_lengths_use_ceil_half():
    st = nm.seed_state(5)
    raw = st.copy()
    z = nm.standard_normal(st, 7, kind="float32")
    words = np.empty(4, dtype=np.uint64)
    nm._raw_block(raw, words)
    assert np.array_equal(st, raw)                       # 7 normals consumed 4 words
    h = words.view(np.uint32)[:7]
    ref = np.empty(7)
    nm._normals_f32(h, np.ones(7), ref, np.empty(1, dtype=np.uint64))
    assert np.array_equal(z, ref)
    assert int(h[0]) == int(words[0]) & 0xFFFFFFFF


def test_same_seed_same_stream_chunking_free_and_seeds_differ():
    a = nm.standard_normal(nm.seed_state(3), 4096, kind="float32")
    st = nm.seed_state(3)
    b = np.concatenate([nm.standard_normal(st, 1024, kind="float32") for _ in range(4)])
    assert np.array_equal(a, b)                         # even chunks: the same words in order
    c = nm.standard_normal(nm.seed_state(4), 4096, kind="float32")
    assert not np.any(a == c)


def test_scale_and_bad_kind():
    s = np.linspace(0.5, 2, 64)
    a = nm.standard_normal(nm.seed_state(9), 64, s, kind="float32")
    b = nm.standard_normal(nm.seed_state(9), 64, kind="float32")
    assert np.array_equal(a, s * b)
    with pytest.raises(ValueError, match="kind"):
        nm.standard_normal(nm.seed_state(9), 4, kind="box-muller")
