"""A ReLU student that learns its teacher: the ODEs stay defined as the student's fields align
with the teacher's (the local-field covariance becomes nearly singular).

Independent routes:
* a plain per-sample NumPy SGD loop written here (its own inputs, weights and update; ε_g of
  its weights by the arc-cosine closed form written here), against the ODE from the same
  initial overlaps;
* the level basis (flint, Taylor series, ``dps = "auto"``) against the modes basis (float64,
  RK7(8)): two right-hand sides, two integrators, two number types.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from cache_support import generated_cache_fixtures
from solvers.app.solve import solve_spec
from solvers.app.spec import parse_spec

pytestmark = [pytest.mark.simulation, pytest.mark.second_basis]

run_cache, cache = generated_cache_fixtures("relu-learns-cache")


def _power_law(L: int, beta: float) -> np.ndarray:
    lam = np.arange(1, L + 1, dtype=float) ** -(1 + beta)
    return lam / lam.mean()                      # Tr Σ = N: mean eigenvalue 1, decreasing


def _i2_relu(c11, c12, c22):
    """⟨relu(a) relu(b)⟩ for covariances c11, c12, c22 (arc-cosine kernel of order 1)."""
    s = math.sqrt(c11 * c22)
    return c12 / 4 + (c12 * math.asin(max(-1.0, min(1.0, c12 / s)))
                      + math.sqrt(max(c11 * c22 - c12 * c12, 0.0))) / (2 * math.pi)


def _eps_g(Q, R, T, K, M):
    """ε_g of the paper's readouts (student √M/K, teacher 1/√M) from level-1 overlaps."""
    tt = sum(_i2_relu(T[n, n], T[n, m], T[m, m]) for n in range(M) for m in range(M)) / M
    ss = sum(_i2_relu(Q[i, i], Q[i, j], Q[j, j]) for i in range(K) for j in range(K)) * M / K**2
    st = sum(_i2_relu(Q[i, i], R[i, n], T[n, n]) for i in range(K) for n in range(M)) * 2 / K
    return 0.5 * (tt + ss - st)


def _sgd(J, B, lam, eta, alphas, rng):
    """Online SGD on ξ ~ N(0, diag(λ per block)); ε_g (closed form) at each α of ``alphas``."""
    K, N = J.shape
    M = B.shape[0]
    L = lam.size
    scale = np.repeat(np.sqrt(lam), N // L)      # block l of N/L coordinates has variance λ_l
    var = np.repeat(lam, N // L)
    v, u = math.sqrt(M) / K, 1 / math.sqrt(M)
    steps = [round(a * N) for a in alphas]
    out, t, batch = [], 0, 4096
    for target in steps:
        while t < target:
            xs = rng.standard_normal((min(batch, target - t), N)) * scale
            for xi in xs:
                x, y = J @ xi / math.sqrt(N), B @ xi / math.sqrt(N)
                err = u * np.maximum(y, 0).sum() - v * np.maximum(x, 0).sum()
                J += (eta * v * err / math.sqrt(N)) * np.outer(x > 0, xi)
            t += len(xs)
        JV = J * var
        out.append(_eps_g(JV @ J.T / N, JV @ B.T / N, (B * var) @ B.T / N, K, M))
    return np.array(out)


def _modes(J, B, L):
    """Mode overlaps R[k][i][n], Q[k][i][j], T[k][n][m] (k < L) as decimal strings."""
    N = J.shape[1]
    blocks = np.split(np.arange(N), L)

    def text(A):
        return [[repr(float(x)) for x in row] for row in A]
    return ([text(J[:, b] @ B[:, b].T / N) for b in blocks],
            [text(J[:, b] @ J[:, b].T / N) for b in blocks],
            [text(B[:, b] @ B[:, b].T / N) for b in blocks])


def _ode(J, B, L, eta, alphas, digits=5):
    R, Q, T = _modes(J, B, L)
    spec = parse_spec({
        "model": {"activation": "relu", "K": J.shape[0], "M": B.shape[0]},
        "data": {"L": L, "beta": 1.0, "N": J.shape[1]},
        "training": {"eta": eta, "init": "explicit"},
        "init": {"modes": {"R": R, "Q": Q, "T": T}},
        "solve": {"alphas": list(alphas), "basis": "modes", "dps": "float64", "digits": digits},
    })
    return np.array(solve_spec(spec)["eps_g"], dtype=float)


def _random_spec(alpha_max, basis, dps, digits):
    return parse_spec({
        "model": {"activation": "relu", "K": 2, "M": 2},
        "data": {"L": 1, "N": 1024},
        "training": {"eta": 0.5, "sigma_J": 0.3, "seed": 0},
        "solve": {"alpha_max": alpha_max, "n_points": 6, "basis": basis, "dps": dps,
                  "digits": digits},
    })


@pytest.mark.full
def test_relu_converges_on_both_default_routes(cache):
    """The same student to α = 200 (ε_g ~ 2e-6 of its start) at 6 digits: float64 modes
    (RK7(8)) against dps = "auto" levels (flint, Taylor series); they agree to 1e-5 relative
    (each claims 6 digits)."""
    modes = solve_spec(_random_spec(200, "modes", "float64", 6))
    levels = solve_spec(_random_spec(200, "levels", "auto", 6))
    a, b = np.array(modes["eps_g"]), np.array(levels["eps_g"], dtype=float)
    assert a[-1] < 1e-4 * a[0] and b[-1] < 1e-4 * b[0]
    assert np.max(np.abs(a - b) / b) < 1e-5


def test_relu_flint_levels_agree_with_modes_small(cache):
    """The flint level route of a ReLU student in the default run (~5 s of CPU): the same
    student to α = 20 (ε_g down to ~0.16 of its start, before the fields align) at 6 digits,
    float64 modes (RK7(8)) against dps = "auto" levels (flint, Taylor series): 1e-5 relative,
    as in the full-size test above (each route claims 6 digits)."""
    modes = solve_spec(_random_spec(20, "modes", "float64", 6))
    levels = solve_spec(_random_spec(20, "levels", "auto", 6))
    assert levels["meta"]["route"].startswith("levels/flint")
    a, b = np.array(modes["eps_g"]), np.array(levels["eps_g"], dtype=float)
    assert a[-1] < 0.5 * a[0]                  # it learns: not a comparison of two flat curves
    assert np.max(np.abs(a - b) / b) < 1e-5


@pytest.mark.full
def test_relu_from_a_specialised_start_follows_sgd(cache):
    """J = 0.4 B + noise (K = M = 2, L = 4, η = 0.3, N = 1024), α ≤ 250 (ε_g falls ~3000-fold;
    the float64 orthant probability's former check refused this range): the ODE from the
    initial overlaps against the SGD loop; rms relative deviation of ε_g averaged over 3 seeds
    below 3/√N (one run's ε_g fluctuates by O(1/√N) relative around the ODE's)."""
    K = M = 2
    L, N, eta = 4, 1024, 0.3
    lam = _power_law(L, 1.0)
    alphas = list(np.geomspace(0.5, 250, 25))
    devs = []
    for seed in range(3):
        rng = np.random.default_rng(seed)
        B = rng.standard_normal((M, N))
        J = 0.4 * B + 0.3 * rng.standard_normal((K, N))
        ode = _ode(J, B, L, eta, [0.0] + alphas)[1:]
        sim = _sgd(J.copy(), B, lam, eta, alphas, rng)
        devs.append(math.sqrt(np.mean(((sim - ode) / ode) ** 2)))
        assert ode[-1] < 1e-2 * ode[0]
    assert np.mean(devs) < 3 / math.sqrt(N), devs
