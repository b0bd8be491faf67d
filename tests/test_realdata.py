"""Real inputs: the .npy loader, the empirical spectrum and beta, SGD on data vs the ODE theory."""
import numpy as np
import pytest
from scipy.stats import ortho_group

from solvers.theory import realdata as rd

pytestmark = [pytest.mark.simulation]  # oracle (tests/conftest.py)
# one xdist worker runs the whole module: its module-scoped fixture is computed once (make test
# runs --dist loadgroup)
pytestmark.append(pytest.mark.xdist_group("test_realdata"))


def _power_law_data(n, N, beta, seed):
    rng = np.random.default_rng(seed)
    lam = np.arange(1, N + 1) ** -(1.0 + beta)
    lam /= lam.mean()
    W = ortho_group.rvs(N, random_state=seed)
    X = (rng.standard_normal((n, N)) * np.sqrt(lam)) @ W.T + 3.0   # non-zero mean on purpose
    return X, lam


def test_npy_loader_spectrum_and_beta(tmp_path):
    X, lam = _power_law_data(40000, 32, 1.0, seed=0)
    path = tmp_path / "inputs.npy"
    np.save(path, X.reshape(-1, 4, 8))              # trailing axes are flattened
    Y = rd.load_inputs(str(path))
    assert Y.shape == (40000, 32) and np.array_equal(Y, X)
    sp = rd.empirical_spectrum(Y)
    assert sp.N == 32 and sp.n_dropped == 0
    assert sp.eigenvalues.mean() == pytest.approx(1.0, rel=1e-12)
    # sample eigenvalues of n = 40000 Gaussian samples: relative error ~ sqrt(2/n) = 0.7 %
    # (plus O(N/n) level repulsion); 5 % bounds it with a wide margin
    np.testing.assert_allclose(sp.eigenvalues, lam, rtol=0.05)
    beta, err = rd.fit_beta(sp.eigenvalues)
    # beta from a 16-point fit of those eigenvalues: deviation of order 0.01
    assert abs(beta - 1.0) < 0.05 and err < 0.05, (beta, err)
    # the projection diagonalises the sample covariance with the measured eigenvalues
    C = np.cov(sp.project(Y), rowvar=False)
    np.testing.assert_allclose(C, np.diag(sp.eigenvalues), atol=1e-10)


@pytest.mark.parametrize("make,needle", [
    (lambda p: None, "no such file"),
    (lambda p: np.save(p, np.arange(5.0)), "expected an array (n_samples"),
    (lambda p: np.save(p, np.array([[1.0, np.nan], [2.0, 3.0]])), "NaN"),
    (lambda p: np.save(p, np.array([["a", "b"]])), "numeric"),
    (lambda p: p.write_bytes(b"not numpy"), "not a readable .npy"),
])
def test_npy_loader_errors(tmp_path, make, needle):
    p = tmp_path / "x.npy"
    make(p)
    with pytest.raises(ValueError, match=None) as exc:
        rd.load_inputs(str(p))
    assert needle in str(exc.value) and "\n" not in str(exc.value)


def test_grouping_of_degenerate_eigenvalues_is_exact():
    """Exactly degenerate eigenvalues merge into one weighted mode; the ODE is unchanged."""
    rng = np.random.default_rng(1)
    N, K, M = 4, 1, 1
    J, B = 0.3 * rng.standard_normal((K, N)), rng.standard_normal((M, N))
    init = {"R": np.einsum("ia,na->ain", J, B) / N, "Q": np.einsum("ia,ja->aij", J, J) / N,
            "T": np.einsum("na,ma->anm", B, B) / N}
    alphas = [0.0, 5.0, 20.0]
    kw = dict(activation="erf", K=K, M=M, eta=0.1, alphas=alphas)
    groups, _ = rd.grouped_spectrum([2.0, 1.0, 1.0, 0.5])
    assert groups == [[0], [1, 2], [3]]
    merged = rd.theory_on_spectrum([2.0, 1.0, 1.0, 0.5], init, **kw)
    # independent route: 4 distinct modes, the middle pair split by 1e-9 (an O(1e-9) change)
    split = rd.theory_on_spectrum([2.0, 1.0 + 1e-9, 1.0, 0.5], init, group_tol=0.0, **kw)
    np.testing.assert_allclose(merged, split, rtol=1e-7)


@pytest.fixture(scope="module")
def digits():
    X = rd.load_inputs("digits")
    return X, rd.empirical_spectrum(X)


def test_digits_spectrum(digits):
    X, sp = digits
    assert X.shape == (1797, 64)
    # 3 pixels are constant over the data set: exactly 3 directions carry no variance
    assert sp.n_dropped == 3 and sp.N == 61
    beta, err = rd.fit_beta(sp.eigenvalues)
    print(f"digits: beta = {beta:.3f} +- {err:.3f} (fit l = 1..{sp.N // 2})")
    assert 0 < beta < 1 and err < 0.1


@pytest.mark.parametrize("activation", ["linear", "erf"])
def test_sgd_on_digits_follows_the_theory_on_their_spectrum(digits, activation):
    X, sp = digits
    Z = sp.project(X)
    alphas = np.linspace(0, 40, 11)
    kw = dict(activation=activation, K=1, M=1, eta=0.05)
    dev, ratio = [], []
    for seed in range(6):
        r = rd.simulate_on_data(Z, sp.eigenvalues, sigma_J=0.01, seed=seed, alphas=alphas, **kw)
        th = rd.theory_on_spectrum(sp.eigenvalues, r.init_modes, alphas=r.alpha, **kw)
        assert th[0] == pytest.approx(r.eps_g[0], rel=1e-10)      # same starting point
        dev.append(np.abs(r.eps_g[1:] / th[1:] - 1))
        ratio.append(r.eps_g_data[1:] / r.eps_g[1:])
    dev, ratio = np.mean(dev, axis=0), np.mean(ratio, axis=0)
    print(activation, "mean |sim/theory - 1| =", np.round(dev, 3))
    # finite-size fluctuations of a run are O(1/sqrt(N)) = 0.13 at N = 61; the seed average of
    # the deviation must stay below that scale (measured 0.02-0.05)
    assert np.all(dev < 1 / np.sqrt(sp.N)), dev
    # empirical eps on ~360 held-out images vs the order-parameter formula: Monte-Carlo error
    # ~ sqrt(2/360) = 7.5 % per run, averaged over 6 seeds ~3 %; allow 7.5 %
    assert np.all(np.abs(ratio - 1) < 0.075), ratio
