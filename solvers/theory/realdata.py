"""Real inputs: empirical covariance spectrum, beta estimate, SGD on the data vs the ODE theory.

Inputs come from scikit-learn's digits images (``source="digits"``: 1797 images of 8 x 8 = 64
pixels, shipped inside the package, no download) or from a user's ``.npy`` file holding an
array (n_samples, ...) whose trailing axes are flattened into N features.

Choices (and why)
-----------------
* Centring: the sample mean is subtracted (the model's inputs have zero mean).
* Scaling: one global factor so that the mean eigenvalue is 1 (Tr Sigma = N, docs/theory/conventions.md).
  No per-feature standardisation: it would change the shape of the spectrum we want to measure
  (and digits has constant pixels, whose variance is 0).
* Directions with eigenvalue below ``rel_floor`` * lambda_1 (constant pixels, rank deficiency)
  are dropped: they carry no signal and the ODE needs positive eigenvalues.  N is the number of
  kept directions.  Everything runs in the eigenbasis: z = V^T (x - mean) / s; the student and
  a teacher B ~ N(0, 1) in that basis are a rotation of the same problem in pixel space (the
  teacher's distribution is rotation invariant), so the labels are the teacher's outputs on the
  real images.
* beta: least-squares fit of log lambda_l = a - (1 + beta) log l over l = l_min..l_max (1-based,
  default 1..N//2: the upper half of a sample spectrum is dominated by finite-sample noise and
  the drop-off of the last directions, see the paper's Fig. 14).
* Theory: the ODEs in the modes basis with ``derive.spectra.explicit(eigenvalues, weights)``.
  They need distinct eigenvalues; eigenvalues within a relative distance ``group_tol`` of their
  neighbour are merged into one mode (eigenvalue = mean of the group, weight = its size / N,
  initial overlaps = the sums over the group), which is exact for truly degenerate eigenvalues
  and an O(group_tol) approximation otherwise.
* SGD: one sample per step, drawn uniformly with replacement from the training images
  (``train_fraction`` of the data, the rest is held out); eps_g is reported twice: from the
  order parameters (the Gaussian-input formula with the empirical covariance: what the theory
  predicts) and as the empirical 1/2 <(zeta - sigma)^2> on the held-out images.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np
from scipy.special import erf

__all__ = ["load_inputs", "EmpiricalSpectrum", "empirical_spectrum", "fit_beta",
           "grouped_spectrum", "simulate_on_data", "theory_on_spectrum"]


def load_inputs(source) -> np.ndarray:
    """(n_samples, N) float64 array: "digits" or the path of a ``.npy`` file."""
    if isinstance(source, str) and source == "digits":
        from sklearn.datasets import load_digits
        return np.asarray(load_digits().data, dtype=np.float64)
    path = Path(source)
    if path.suffix != ".npy":
        raise ValueError(f"{path}: expected 'digits' or a .npy file")
    try:
        X = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file") from None
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: not a readable .npy array ({e})") from None
    if X.dtype.kind not in "biuf":
        raise ValueError(f"{path}: expected a numeric array, got dtype {X.dtype}")
    if X.ndim < 2:
        raise ValueError(f"{path}: expected an array (n_samples, features...), got shape {X.shape}")
    X = X.reshape(X.shape[0], -1).astype(np.float64)
    if X.shape[0] < 2:
        raise ValueError(f"{path}: need at least 2 samples, got {X.shape[0]}")
    if not np.all(np.isfinite(X)):
        raise ValueError(f"{path}: array contains NaN or infinite values")
    return X


@dataclass
class EmpiricalSpectrum:
    eigenvalues: np.ndarray    # (N,) descending, mean 1 (kept directions only)
    vectors: np.ndarray        # (D, N) eigenvectors in feature space
    mean: np.ndarray           # (D,) feature means
    scale: float               # inputs are (x - mean) / scale
    n_dropped: int             # directions dropped below rel_floor

    @property
    def N(self) -> int:
        return self.eigenvalues.size

    def project(self, X) -> np.ndarray:
        """Eigenbasis coordinates z (n, N) of inputs X (n, D)."""
        return (np.asarray(X, dtype=float) - self.mean) @ self.vectors / self.scale


def empirical_spectrum(X, rel_floor: float = 1e-8) -> EmpiricalSpectrum:
    X = np.asarray(X, dtype=np.float64)
    mean = X.mean(axis=0)
    C = np.cov(X - mean, rowvar=False, bias=False)
    C = np.atleast_2d(C)
    lam, V = np.linalg.eigh(C)
    lam, V = lam[::-1], V[:, ::-1]
    if not lam[0] > 0:
        raise ValueError("the inputs have zero variance")
    keep = lam > rel_floor * lam[0]
    lam, V = lam[keep], V[:, keep]
    s2 = lam.mean()
    return EmpiricalSpectrum(lam / s2, V, mean, math.sqrt(s2), int((~keep).sum()))


def fit_beta(eigenvalues, l_min: int = 1, l_max: int | None = None):
    """beta and its standard error from log lambda_l = a - (1 + beta) log l, l in [l_min, l_max]."""
    lam = np.asarray(eigenvalues, dtype=float)
    l_max = lam.size // 2 if l_max is None else l_max
    if not (1 <= l_min < l_max <= lam.size) or l_max - l_min < 2:
        raise ValueError(f"fit range l = {l_min}..{l_max} must lie in 1..{lam.size} "
                         f"and hold at least 3 points")
    l = np.arange(l_min, l_max + 1)
    x, y = np.log(l), np.log(lam[l - 1])
    A = np.vstack([np.ones_like(x), x]).T
    coef, *_ = np.linalg.lstsq(A, y, rcond=None)
    resid = y - A @ coef
    cov = resid @ resid / (len(x) - 2) * np.linalg.inv(A.T @ A)
    return -coef[1] - 1.0, math.sqrt(cov[1, 1])


def grouped_spectrum(eigenvalues, group_tol: float = 1e-6):
    """Merge neighbours closer than group_tol (relative): list of index groups, their means."""
    lam = np.asarray(eigenvalues, dtype=float)
    groups = [[0]]
    for k in range(1, lam.size):
        prev = lam[groups[-1][-1]]
        if prev - lam[k] <= group_tol * prev:
            groups[-1].append(k)
        else:
            groups.append([k])
    means = np.array([lam[g].mean() for g in groups])
    return groups, means


@dataclass
class DataRun:
    alpha: np.ndarray
    eps_g: np.ndarray            # from the order parameters (Gaussian formula, empirical Sigma)
    eps_g_data: np.ndarray       # empirical on the held-out images
    init_modes: dict             # per eigen-direction (N, ., .)
    seed: int


def _g(act, x):
    return erf(x / math.sqrt(2)) if act == "erf" else x


def _gp(act, x):
    return math.sqrt(2 / math.pi) * np.exp(-x * x / 2) if act == "erf" else np.ones_like(x)


def simulate_on_data(Z, eigenvalues, *, activation, K, M, eta, sigma_J, seed, alphas,
                     train_fraction: float = 0.8) -> DataRun:
    """Online SGD on the rows of Z (eigenbasis inputs, (n, N)), teacher labels.

    A per-step NumPy loop: N is small for the data sets meant here (64 for digits).
    """
    from solvers.sim.simulate import eps_g_from_order_parameters
    Z = np.asarray(Z, dtype=float)
    n, N = Z.shape
    lam = np.asarray(eigenvalues, dtype=float)
    rng = np.random.default_rng(seed)
    perm = rng.permutation(n)
    n_train = max(1, int(train_fraction * n))
    train, test = Z[perm[:n_train]], Z[perm[n_train:]]
    if test.shape[0] == 0:
        test = train
    B = rng.standard_normal((M, N))
    J = sigma_J * rng.standard_normal((K, N))
    init = {"R": np.einsum("ia,na->ain", J, B) / N, "Q": np.einsum("ia,ja->aij", J, J) / N,
            "T": np.einsum("na,ma->anm", B, B) / N}
    sq = math.sqrt(N)
    coef = eta * math.sqrt(M) / K / sq
    targets = np.unique(np.rint(np.asarray(alphas, dtype=float) * N).astype(np.int64))
    T1 = (B * lam) @ B.T / N
    yt = _g(activation, test @ B.T / sq).sum(1) / math.sqrt(M)
    eps, eps_data, done = [], [], 0
    idx = rng.integers(0, n_train, size=int(targets[-1]))
    for t in targets:
        for s in range(done, t):
            z = train[idx[s]]
            x = J @ z / sq
            y = B @ z / sq
            d = _g(activation, y).sum() / math.sqrt(M) - _g(activation, x).sum() * math.sqrt(M) / K
            J += np.outer(coef * d * _gp(activation, x), z)
        done = t
        R1, Q1 = (J * lam) @ B.T / N, (J * lam) @ J.T / N
        eps.append(eps_g_from_order_parameters(activation, K, M, R1, Q1, T1))
        ys = _g(activation, test @ J.T / sq).sum(1) * math.sqrt(M) / K
        eps_data.append(0.5 * np.mean((yt - ys) ** 2))
    return DataRun(targets / N, np.array(eps), np.array(eps_data), init, seed)


def theory_on_spectrum(eigenvalues, init_modes, *, activation, K, M, eta, alphas, order=2,
                       group_tol: float = 1e-6):
    """eps_g of the mode ODEs (float64) on the empirical spectrum, from per-direction overlaps."""
    from derive import spectra
    from derive.keys import SystemKey
    from solvers.hierarchy.odes import integrate_problem
    from solvers.core.problem import Problem, explicit_init
    lam = np.asarray(eigenvalues, dtype=float)
    N = lam.size
    groups, means = grouped_spectrum(lam, group_tol)
    spectrum = spectra.explicit([Fraction(float(v)) for v in means],
                                [Fraction(len(g), N) for g in groups])
    summed = {k: np.array([np.asarray(init_modes[k])[g].sum(axis=0) for g in groups])
              for k in ("R", "Q", "T")}
    prob = Problem(SystemKey(activation, K, M), spectrum, Fraction(eta).limit_denominator(10**12),
                   order, explicit_init("modes", summed["R"], summed["Q"], summed["T"]))
    traj = integrate_problem(prob, [float(a) for a in alphas], basis="modes",
                             arithmetic="float64", rtol=1e-10)
    return traj.eps_float()
