"""Feature scaling of the linear K = M = 1 student: only N_l input directions are trainable.

Paper §4.3 and App. B.3 (Eqs. 10, 11, 74, 78, 79, 86-88), re-derived from the model of docs/theory/conventions.md
with g(x) = x, K = M = 1: eps_g = (1/2N) e^T Sigma e with the error vector e = J - B.

Notation: s = 1 + sigma_J^2 is <e_a^2> of a direction still at its random initial value (J_a ~
N(0, sigma_J^2), B_a ~ N(0, 1)).  The paper keeps untrainable components frozen at their initial
values (``untrainable="frozen"``, s_u = s, the paper's convention and the default here); the
simulator's default ``untrainable="zero"`` sets them to zero first (s_u = 1).

1. Mask in the eigenbasis (Eqs. 10, 78, 74, 79)
-----------------------------------------------
The N directions are ordered by eigenvalue (largest first); eigenvalue lambda_k (k = 1..L) owns the
N/L directions [(k-1)N/L, kN/L).  The first N_l directions are trainable, so block k has
m_k = clip(N_l - (k-1)N/L, 0, N/L) trainable directions.  N_l need not be a multiple of N/L: a
block may be partly trainable, and since its directions are degenerate it does not matter which of
them are.  Per direction the small-eta dynamics is de_a/dalpha = -eta lambda_a e_a, hence

  <eps_g>(alpha) = 1/(2N) sum_k lambda_k [ s m_k exp(-2 eta lambda_k alpha) + s_u (N/L - m_k) ]  (78)

which for N_l = n N/L is the paper's (s/2L)[sum_{k<=n} lambda_k e^{-2 eta lambda_k alpha} +
sum_{k>n} lambda_k] (Eq. 10 / 78; the second sum starts at n + 1: Eqs. 71 and 78 print its lower
limit as N_l, which would count block N_l twice).  alpha -> infinity gives the asymptote

  eps_asymp(N_l) = (s_u / 2N) sum_k lambda_k (N/L - m_k).                                    (71)

At finite eta (the order-2 hierarchy, large N) the per-block errors D_g = e P_g e / N of the
trainable groups g obey dD_g/dalpha = -2 eta lambda_g D_g + eta^2 lambda_g w_g E, E = sum_h
lambda_h D_h = 2 eps_g (w_g = fraction of directions in g); the untrainable groups are constant.
Its fixed point, D_g = eta w_g E / 2, gives

  eps_asymp(N_l, eta) = eps_asymp(N_l) / (1 - (eta/2) Tr(Sigma~)/N),   Tr(Sigma~)/N = sum_k m_k lambda_k / N,

i.e. the frozen directions act as label noise that SGD noise amplifies.  This is not in the paper.

Euler-Maclaurin forms for the power law lambda_k = lambda_+ k^{-(1+beta)} with n = N_l L/N blocks:

  eps_asymp ~ (s lambda_+ / 2L) (n^{-beta} - L^{-beta}) / beta                                (74)

with 0 <= (integral - exact sum) <= (f(n) - f(L))/2, f(k) = k^{-(1+beta)}, inside the paper's
zeroth-order bound (s lambda_+/4L)(n^{-1-beta} + L^{-1-beta}); and

  eps_g(N_l, alpha) ~ (s lambda_+ / 2L) [ (n^{-beta} - L^{-beta}) / beta
        + c^{-beta/(1+beta)}/(1+beta) (Gamma(beta/(1+beta), c n^{-(1+beta)}) - Gamma(beta/(1+beta), c)) ],
  c = 2 eta lambda_+ alpha                                                                    (79)

(substitute t = c k^{-(1+beta)} in the integral of the trainable sum over 1 <= k <= n).  Erratum:
Eq. (79) prints L^{beta+1} instead of N_l^{beta+1} in the first Gamma function, i.e. it lets the
trainable sum run to L and counts the untrainable blocks twice (at alpha -> 0 it exceeds the
correct value s/2 by the untrainable share); the asymptote is unaffected.  Eq. (11) is the same
statement with <eps_g(alpha)> the learning curve of the N_l trainable blocks.

2. Mask on the first N_l ORIGINAL coordinates, Sigma = W Lambda W^T (App. B.3.1, Eqs. 84-88)
---------------------------------------------------------------------------------------------
Blocks of Sigma: Sigma~ (trainable, N_l x N_l), Sigma_c (N_l x (N - N_l)), Sigma^ (the rest).
The small-eta flow de~/dalpha = -eta (Sigma~ e~ + Sigma_c e^) has the fixed point
e~ = -Sigma~^{-1} Sigma_c e^, and then 2N eps_g = e^T (Sigma^ - Sigma_c^T Sigma~^{-1} Sigma_c) e^
(the Schur complement Sigma / Sigma~).  Averaging over e^ (<e^ e^T> = s_u I):

  eps_asymp(W) = (s_u / 2N) [ Tr Sigma^ - Tr(Sigma_c^T Sigma~^{-1} Sigma_c) ]
              = 1/2 [ 1 - Tr Sigma~/N + sigma_J^2 Tr Sigma^/N - s Tr(Sigma_c^T Sigma~^{-1} Sigma_c)/N ]   (88)

(the second line, the paper's form, uses Tr Sigma = N and frozen untrainables).  W-averages are
computed by sampling Haar W.  Finite eta, large N: the same fixed-point argument on the second
moment C = <e e^T> (dC/dalpha = -eta(P Sigma C + C Sigma P) + eta^2 E P Sigma P) gives again
eps_asymp(W, eta) = eps_asymp(W) / (1 - (eta/2) Tr Sigma~/N).  At finite N the Gaussian fourth
moment adds (2 eta^2/N) P Sigma C Sigma P; `stationary_eps` solves that exactly (it is what an
online-SGD simulation at finite N converges to, on average).

Large-N deterministic equivalent (not in the paper; free compression of Sigma^{-1}): with mu > 0
solving sum_a mu lambda_a / (1 + mu lambda_a) = N_l,
  eps_asymp(W) -> (s_u / 2N) sum_a lambda_a / (1 + mu lambda_a)           (N -> infinity),
which shows the same N_l^{-beta} law for N_l << N with a larger prefactor than Eq. (74).
"""
from __future__ import annotations

import math
import time

import numpy as np
from numba import njit
from scipy import linalg, optimize, special

from solvers.sim.normals import fill_normals, seed_state

__all__ = [
    "FEATURE_SCALING_KEYS",
    "trainable_counts",
    "eps_g_eigenbasis",
    "eps_asymp_eigenbasis",
    "eps_asymp_em",
    "eps_g_em",
    "eps_g_masked_modes",
    "haar_orthogonal",
    "eq88",
    "eq88_average",
    "eps_asymp_free",
    "monte_carlo_eq86",
    "stationary_eps",
    "simulate_rotated_mask",
    "simulate_rotated_mask_reduced",
    "rotated_mask_reduction",
    "rotated_mask_init",
    "expected_eps_rotated_mask",
    "fit_exponent",
    "feature_scaling_result",
]

# Keys of the optional [linear] spec section (solvers.app.sections.LINEAR_SCHEMA) that
# `feature_scaling_result` uses.
FEATURE_SCALING_KEYS = ("N_l", "rotated", "n_W", "simulate", "n_seeds", "untrainable",
                        "alpha_burn", "alpha_max")


# --------------------------------------------------------------------------------------------
# 1. mask in the eigenbasis
# --------------------------------------------------------------------------------------------

def _check_blocks(N, L, N_l):
    if N % L:
        raise ValueError(f"L = {L} must divide N = {N}")
    if not 1 <= N_l <= N:
        raise ValueError(f"N_l must be between 1 and N = {N}, got {N_l}")


def _s_untrained(sigma_J, untrainable):
    if untrainable == "frozen":
        return 1.0 + sigma_J**2
    if untrainable == "zero":
        return 1.0
    raise ValueError(f"untrainable must be 'frozen' or 'zero', got {untrainable!r}")


def trainable_counts(N: int, L: int, N_l: int) -> np.ndarray:
    """m_k: trainable directions of eigen-block k (blocks of N/L, largest eigenvalue first)."""
    _check_blocks(N, L, N_l)
    size = N // L
    return np.clip(N_l - size * np.arange(L), 0, size)


def eps_g_eigenbasis(alphas, eigenvalues, N, N_l, eta, sigma_J, untrainable="frozen"):
    """Eq. (78) (small eta, averaged), any N_l; returns an array over alphas."""
    lam = np.asarray(eigenvalues, dtype=float)
    L = lam.size
    m = trainable_counts(N, L, N_l)
    s, su = 1.0 + sigma_J**2, _s_untrained(sigma_J, untrainable)
    a = np.asarray(alphas, dtype=float)[:, None]
    trained = (s * m * lam * np.exp(-2.0 * eta * lam * a)).sum(axis=1)
    frozen = su * float(((N // L - m) * lam).sum())
    return (trained + frozen) / (2.0 * N)


def eps_asymp_eigenbasis(eigenvalues, N, N_l, sigma_J, untrainable="frozen", eta=0.0):
    """alpha -> infinity of the averaged error; eta = 0: Eq. (71)/(10); eta > 0: order-2 fixed point."""
    lam = np.asarray(eigenvalues, dtype=float)
    L = lam.size
    m = trainable_counts(N, L, N_l)
    eps0 = _s_untrained(sigma_J, untrainable) * float(((N // L - m) * lam).sum()) / (2.0 * N)
    load = 0.5 * eta * float((m * lam).sum()) / N
    if load >= 1:
        raise ValueError(f"eta = {eta} is too large: no stationary state (eta Tr(Sigma~)/(2N) >= 1)")
    return eps0 / (1.0 - load)


def _lambda_plus(L, beta):
    return L / float(np.sum(np.arange(1, L + 1, dtype=float) ** (-(1.0 + beta))))


def eps_asymp_em(L, beta, n, sigma_J):
    """Eq. (74) and the paper's zeroth-order Euler-Maclaurin bound; n = N_l L / N (may be fractional)."""
    if not beta > 0:
        raise ValueError(f"Eq. (74) needs beta > 0, got {beta}")
    lp, s = _lambda_plus(L, beta), 1.0 + sigma_J**2
    value = 0.5 * s * lp / L * (n**-beta - L**-beta) / beta
    bound = 0.25 * s * lp / L * (n ** -(1 + beta) + L ** -(1 + beta))
    return value, bound


def eps_g_em(alphas, L, beta, n, eta, sigma_J):
    """Eq. (79) with the N_l of the first Gamma function restored (see module docstring)."""
    lp, s = _lambda_plus(L, beta), 1.0 + sigma_J**2
    a = beta / (1.0 + beta)
    out = []
    for alpha in np.atleast_1d(np.asarray(alphas, dtype=float)):
        c = 2.0 * eta * lp * alpha
        frozen = (n**-beta - L**-beta) / beta
        if c == 0:
            trained = (1.0 - n**-beta) / beta        # the integral of k^{-(1+beta)} over [1, n]
        else:
            # Gamma(a, x1) - Gamma(a, x2) = Gamma(a) (Q(a, x1) - Q(a, x2)); gammaincc is regularised
            trained = c**-a / (1.0 + beta) * special.gamma(a) * (
                special.gammaincc(a, c * n ** -(1 + beta)) - special.gammaincc(a, c))
        out.append(0.5 * s * lp / L * (frozen + trained))
    return np.array(out)


def eps_g_masked_modes(alphas, eigenvalues, N, N_l, eta, sigma_J, order=2, untrainable="frozen"):
    """Averaged eps_g(alpha) of the large-N mode ODEs with a mask in the eigenbasis, at any eta.

    Groups g: the trainable and the untrainable part of each block (fraction w_g, eigenvalue
    lambda_g).  dD/dalpha = M D + f on the trainable groups with M = -2 eta Lambda + e2 eta^2
    (lambda w)(lambda)^T (e2 = 1 for order 2, 0 for order 1) and f = e2 eta^2 lambda w U, U the
    constant sum over frozen groups.  S^{-1} M S with S = diag(sqrt w) is symmetric, so eigh solves it.
    """
    lam = np.asarray(eigenvalues, dtype=float)
    L = lam.size
    m = trainable_counts(N, L, N_l)
    s, su = 1.0 + sigma_J**2, _s_untrained(sigma_J, untrainable)
    tr = m > 0
    lt, wt = lam[tr], m[tr] / N
    U = su * float(((N // L - m) * lam).sum()) / N
    e2 = 1.0 if order == 2 else 0.0
    u = lt * np.sqrt(wt)
    Msym = np.diag(-2.0 * eta * lt) + e2 * eta**2 * np.outer(u, u)
    gam, V = np.linalg.eigh(Msym)
    if gam.max() >= 0:
        raise ValueError(f"eta = {eta} is too large: the masked mode ODEs are unstable")
    fsym = e2 * eta**2 * u * U                       # S^{-1} f
    xstar = -V @ ((V.T @ fsym) / gam)
    x0 = s * wt / np.sqrt(wt)                         # S^{-1} D(0), D_g(0) = s w_g
    c0 = V.T @ (x0 - xstar)
    a = np.asarray(alphas, dtype=float)
    x = xstar[None, :] + (np.exp(np.outer(a, gam)) * c0[None, :]) @ V.T
    D = x * np.sqrt(wt)[None, :]
    return 0.5 * (D @ lt + U)


# --------------------------------------------------------------------------------------------
# 2. mask on original coordinates, Sigma = W Lambda W^T
# --------------------------------------------------------------------------------------------

def haar_orthogonal(rng, N):
    """Haar orthogonal matrix: QR of a Gaussian matrix with the signs of diag(R) made positive."""
    Q, R = np.linalg.qr(rng.standard_normal((N, N)))
    return Q * np.sign(np.diag(R))


def _expand(eigenvalues, N):
    lam = np.asarray(eigenvalues, dtype=float)
    if N % lam.size:
        raise ValueError(f"L = {lam.size} must divide N = {N}")
    return np.repeat(lam, N // lam.size)


def _blocks(Sigma, N_l):
    return Sigma[:N_l, :N_l], Sigma[:N_l, N_l:], Sigma[N_l:, N_l:]


def eq88(Sigma, N_l, sigma_J):
    """Eq. (88) for one covariance matrix (frozen untrainables), as the paper writes it."""
    N = Sigma.shape[0]
    St, Sc, Sh = _blocks(Sigma, N_l)
    Y = linalg.solve_triangular(np.linalg.cholesky(St), Sc, lower=True)       # Tr(Sc^T St^-1 Sc) = ||L^-1 Sc||_F^2
    x = float(np.sum(Y * Y))
    return 0.5 * (1.0 - np.trace(St) / N + sigma_J**2 * np.trace(Sh) / N
                  - (1.0 + sigma_J**2) * x / N)


def eq88_average(eigenvalues, N, N_ls, sigma_J, n_W, seed=0, eta=0.0):
    """Eq. (88) averaged over n_W Haar W (the same W for every N_l): (mean, stderr, samples).

    eta > 0 divides each sample by 1 - (eta/2) Tr(Sigma~)/N (large-N finite-eta fixed point).
    Evaluated in the Schur form (s/2N)(Tr Sigma^ - ||chol(St)^-1 Sc||^2), equal to Eq. (88) when
    Tr Sigma = N and valid for a user spectrum of any trace.
    """
    lam = _expand(eigenvalues, N)
    rng = np.random.default_rng(seed)
    samples = np.empty((n_W, len(N_ls)))
    for w in range(n_W):
        W = haar_orthogonal(rng, N)
        Sigma = (W * lam) @ W.T
        Sigma = 0.5 * (Sigma + Sigma.T)
        for j, N_l in enumerate(N_ls):
            if N_l == N:
                samples[w, j] = 0.0
                continue
            St, Sc, Sh = _blocks(Sigma, N_l)
            Y = linalg.solve_triangular(np.linalg.cholesky(St), Sc, lower=True)
            val = (1.0 + sigma_J**2) * (np.trace(Sh) - np.sum(Y * Y)) / (2.0 * N)
            if eta:
                val /= 1.0 - 0.5 * eta * np.trace(St) / N
            samples[w, j] = val
    mean = samples.mean(axis=0)
    err = samples.std(axis=0, ddof=1) / math.sqrt(n_W) if n_W > 1 else np.zeros(len(N_ls))
    return mean, err, samples


def eps_asymp_free(eigenvalues, N, N_l, sigma_J, untrainable="frozen"):
    """Large-N deterministic equivalent of the W-average of Eq. (88) (see module docstring)."""
    lam = _expand(eigenvalues, N)
    su = _s_untrained(sigma_J, untrainable)
    if N_l >= N:
        return 0.0
    g = lambda t: float(np.sum(1.0 - 1.0 / (1.0 + np.exp(t) * lam))) - N_l   # t = ln mu
    lo, hi = -50.0, 50.0
    t = optimize.brentq(g, lo, hi, xtol=1e-14)
    mu = math.exp(t)
    return su * float(np.sum(lam / (1.0 + mu * lam))) / (2.0 * N)


def monte_carlo_eq86(eigenvalues, N, N_l, sigma_J, n_samples, seed=0):
    """Direct Monte-Carlo of the small-eta fixed point, evaluated through Eq. (86).

    Each sample draws W, B, J0; the trainable J~ is the minimiser of the (convex) training
    objective (J - B)^T Sigma (J - B) with J^ = J0^ frozen -- the fixed point of the projected
    gradient flow -- found by least squares on Sigma^{1/2} (no Schur complement, no Eq. 85); then
    R, Q, T of Eq. (86) give eps_g = (Q - 2R + T)/2.  Returns (mean, stderr, samples).
    """
    lam = _expand(eigenvalues, N)
    rng = np.random.default_rng(seed)
    out = np.empty(n_samples)
    for i in range(n_samples):
        W = haar_orthogonal(rng, N)
        root = (W * np.sqrt(lam)) @ W.T                 # Sigma^{1/2}
        Sigma = (W * lam) @ W.T
        B = rng.standard_normal(N)
        J = sigma_J * rng.standard_normal(N)
        rhs = root @ B - root[:, N_l:] @ J[N_l:]
        J[:N_l] = np.linalg.lstsq(root[:, :N_l], rhs, rcond=None)[0]
        R = J @ Sigma @ B / N
        Q = J @ Sigma @ J / N
        T = B @ Sigma @ B / N
        out[i] = 0.5 * (Q - 2.0 * R + T)
    return out.mean(), out.std(ddof=1) / math.sqrt(n_samples), out


def stationary_eps(Sigma, N_l, eta, s_u, finite_N=True):
    """Data-averaged stationary eps_g of online SGD at finite N with the first N_l coordinates trainable.

    s_u: <e^ e^T> of the frozen part, a number (times the identity: the average over B and J0)
    or a matrix (e.g. the outer product of one realisation, for the conditional prediction).
    Exact second-moment equation for Gaussian inputs (mask P on the first N_l coordinates):
      dC/dalpha = -eta (P Sigma C + C Sigma P) + eta^2 P [E Sigma + (2/N) Sigma C Sigma] P,
    E = Tr(Sigma C)/N = 2 eps_g.  Stationary: C_t^ = -St^-1 Sc C^^; C_tt solved in the eigenbasis
    of St, where its entries decouple; finite_N=False drops the (2/N) term (the large-N limit).
    """
    N = Sigma.shape[0]
    if N_l == N:
        return 0.0
    St, Sc, Sh = _blocks(Sigma, N_l)
    Cuu = s_u * np.eye(N - N_l) if np.ndim(s_u) == 0 else np.asarray(s_u, dtype=float)
    gam, V = np.linalg.eigh(St)
    Ctu = -np.linalg.solve(St, Sc @ Cuu)
    q = (2.0 * eta / N) if finite_N else 0.0
    G = -(Sc @ Ctu.T + Ctu @ Sc.T) + q * (St @ Ctu @ Sc.T + Sc @ Ctu.T @ St + Sc @ Cuu @ Sc.T)
    Gd = np.einsum("ai,ab,bi->i", V, G, V)
    h = 2.0 * gam - q * gam**2
    c0 = 2.0 * np.trace(Sc @ Ctu.T) + np.trace(Sh @ Cuu)
    denom = 1.0 - eta * float(np.sum(gam**2 / h)) / N
    if denom <= 0 or np.any(h <= 0):
        raise ValueError(f"eta = {eta} is too large: no stationary state")
    E = (float(np.sum(gam * Gd / h)) + c0) / N / denom
    return 0.5 * E


@njit(cache=True)
def _sgd_rotated_kernel(A, e, n_tr, eta, n_steps, record_every, Sigma, out, seed):
    """Online SGD of e = J - B with xi = A z (A A^T = Sigma); only e[:n_tr] moves."""
    np.random.seed(seed)
    N = e.shape[0]
    z = np.empty(N)
    xi = np.empty(N)
    inv = 1.0 / math.sqrt(N)
    r = 0
    for t in range(n_steps + 1):
        if t % record_every == 0:
            acc = 0.0
            for a in range(N):
                sa = 0.0
                for b in range(N):
                    sa += Sigma[a, b] * e[b]
                acc += e[a] * sa
            out[r] = 0.5 * acc / N
            r += 1
        if t == n_steps:
            break
        for b in range(N):
            z[b] = np.random.standard_normal()
        d = 0.0
        for a in range(N):
            sa = 0.0
            for b in range(N):
                sa += A[a, b] * z[b]
            xi[a] = sa
            d += e[a] * sa
        d *= inv
        for a in range(n_tr):
            e[a] -= eta * d * xi[a] * inv


def simulate_rotated_mask(eigenvalues, N, N_l, eta, sigma_J, alpha_max, seed, rotated=True,
                          untrainable="frozen", record_every=None):
    """Own finite-N online SGD with the mask on the first N_l ORIGINAL coordinates.

    Returns (alpha, eps_g, Sigma, e_frozen): eps_g recorded every ``record_every`` steps (default N, i.e.
    once per unit of alpha).  rotated=False uses Sigma = Lambda (a mask in the eigenbasis).
    """
    rng, Sigma, e, W, lam = _rotated_mask_draws(eigenvalues, N, N_l, sigma_J, seed, rotated,
                                                untrainable)
    A = np.ascontiguousarray(W * np.sqrt(lam))
    e_frozen = e[N_l:].copy()
    record_every = N if record_every is None else int(record_every)
    n_steps = int(round(alpha_max * N))
    out = np.empty(n_steps // record_every + 1)
    _sgd_rotated_kernel(A, e, N_l, float(eta), n_steps, record_every, Sigma, out,
                        int(rng.integers(2**31 - 1)))
    alpha = np.arange(out.size) * record_every / N
    return alpha, out, Sigma, e_frozen


@njit(cache=True, nogil=True, fastmath={"reassoc"})
def _dot_reassoc(u, x, off, n):
    acc = 0.0
    for i in range(n):
        acc += u[i] * x[off + i]
    return acc


@njit(cache=True, nogil=True)
def _sgd_reduced_kernel(v, scale, eta, N, n_steps, record_every, out, state, batch):
    """The trainable error in the eigenbasis of Sigma~ (v) plus one scalar for the frozen part:
    x = scale * normals (scale = [sqrt(mu), sqrt(c)]), e.xi = v.x[:n] + x[n].  The normals of
    ``batch`` steps are drawn at once (one call per step costs more than the step at N_l ~ 100)."""
    n = v.shape[0]
    m = n + 1
    tiled = np.empty(batch * m)
    for b in range(batch):
        tiled[b * m:(b + 1) * m] = scale
    x = np.empty(batch * m)
    scratch = np.empty(2 * batch * m, dtype=np.uint64)
    mu = scale[:n] * scale[:n]
    c = scale[n] * scale[n]
    g = eta / N
    r = 0
    b = batch
    for t in range(n_steps + 1):
        if t % record_every == 0:
            acc = c
            for i in range(n):
                acc += mu[i] * v[i] * v[i]
            out[r] = 0.5 * acc / N
            r += 1
        if t == n_steps:
            break
        if b == batch:
            fill_normals(state, scratch, tiled, x)
            b = 0
        off = b * m
        d = g * (x[off + n] + _dot_reassoc(v, x, off, n))
        for i in range(n):
            v[i] -= d * x[off + i]
        b += 1


def rotated_mask_reduction(Sigma, N_l, e):
    """(mu, v, c) of the reduced rotated-mask process for the error vector e (see
    ``simulate_rotated_mask_reduced``): Sigma~ = V diag(mu) V^T, v = V^T (e~ + Sigma~^-1 Sigma_c e^),
    c = e^T (Sigma / Sigma~) e^, so that e^T Sigma e = sum mu v^2 + c."""
    N = Sigma.shape[0]
    e_frozen = e[N_l:]
    St, Sc, Sh = _blocks(Sigma, N_l)
    mu, V = np.linalg.eigh(St)
    if mu.size and mu.min() <= 0:
        raise ValueError("Sigma~ is singular: the trainable block needs a positive-definite covariance")
    Ge = linalg.solve(St, Sc @ e_frozen, assume_a="pos") if N_l < N else np.zeros(N_l)
    c = float(e_frozen @ (Sh @ e_frozen) - (Sc @ e_frozen) @ Ge) if N_l < N else 0.0
    return mu, np.ascontiguousarray(V.T @ (e[:N_l] + Ge)), max(c, 0.0)


def _rotated_mask_draws(eigenvalues, N, N_l, sigma_J, seed, rotated, untrainable):
    """(rng, Sigma, e0, W, lam) of a seed: W, then B, then J from one generator."""
    lam = _expand(eigenvalues, N)
    rng = np.random.default_rng(seed)
    W = haar_orthogonal(rng, N) if rotated else np.eye(N)
    Sigma = np.ascontiguousarray((W * lam) @ W.T)
    Sigma = 0.5 * (Sigma + Sigma.T)
    B = rng.standard_normal(N)
    J = sigma_J * rng.standard_normal(N)
    if untrainable == "zero":
        J[N_l:] = 0.0
    return rng, Sigma, J - B, W, lam


def rotated_mask_init(eigenvalues, N, N_l, sigma_J, seed, rotated=True, untrainable="frozen"):
    """(rng, Sigma, e0) of a seed, drawn as ``simulate_rotated_mask`` draws them (W, then B, then J)."""
    return _rotated_mask_draws(eigenvalues, N, N_l, sigma_J, seed, rotated, untrainable)[:3]


def simulate_rotated_mask_reduced(eigenvalues, N, N_l, eta, sigma_J, alpha_max, seed, rotated=True,
                                  untrainable="frozen", record_every=None):
    """The process of ``simulate_rotated_mask`` (same law, same W, B, J for a seed) in O(N_l) per step.

    Why it is exact: only e~ = e[:N_l] moves and e^ = e[N_l:] is frozen, so a step needs the law of
    (xi~, e.xi) only.  xi~ ~ N(0, Sigma~) and, given xi~, e^.xi^ is Gaussian with mean
    (G e^).xi~ (G = Sigma~^-1 Sigma_c) and the constant variance c = e^T (Sigma / Sigma~) e^ (Schur
    complement).  Hence e.xi = u.xi~ + sqrt(c) w with u = e~ + G e^ (u moves exactly as e~) and a
    fresh w ~ N(0, 1); in the eigenbasis Sigma~ = V diag(mu) V^T, v = V^T u and xi~ = V (sqrt(mu) z),
    so one step draws N_l + 1 normals.  2N eps_g = e^T Sigma e = <(e.xi)^2> = sum mu v^2 + c.
    The steps' random inputs come from the simulator's normal stream (solvers/sim/normals.py),
    seeded from the same SeedSequence; trajectories equal the literal kernel's in law, not draw by draw.
    Returns (alpha, eps_g, Sigma, e_frozen) like ``simulate_rotated_mask``.
    """
    rng, Sigma, e = rotated_mask_init(eigenvalues, N, N_l, sigma_J, seed, rotated, untrainable)
    mu, v, c = rotated_mask_reduction(Sigma, N_l, e)
    scale = np.concatenate([np.sqrt(mu), [math.sqrt(c)]])
    record_every = N if record_every is None else int(record_every)
    n_steps = int(round(alpha_max * N))
    out = np.empty(n_steps // record_every + 1)
    state = seed_state(np.random.SeedSequence(int(rng.integers(2**63 - 1))))
    _sgd_reduced_kernel(v, scale, float(eta), N, n_steps, record_every, out, state, 64)
    alpha = np.arange(out.size) * record_every / N
    return alpha, out, Sigma, e[N_l:].copy()


def expected_eps_rotated_mask(Sigma, N_l, e0, eta, steps, window=None):
    """Exact mean eps_g of online SGD (mask on the first N_l original coordinates) after each of
    ``steps`` SGD steps, given Sigma and the initial error e0 (the average is over the inputs only).

    In the reduced variables the diagonal x_i = <v_i^2> closes (Gaussian fourth moments):
    x' = A x + b, A = diag(1 - 2 g mu + 2 g^2 mu^2) + g^2 mu mu^T, b = g^2 c mu, g = eta/N, and
    eps_g = (mu.x + c)/(2N).  A is symmetric: x_t = x* + U diag(w^t) U^T (x_0 - x*).
    ``window`` = (t0, t1, every): also return the mean of eps_g over steps t0, t0+every, .. <= t1
    (geometric sums), i.e. the exact expectation of a simulation's window average.
    """
    N = Sigma.shape[0]
    mu, v, c = rotated_mask_reduction(Sigma, N_l, np.asarray(e0, float))
    g = eta / N
    A = np.diag(1 - 2 * g * mu + 2 * g * g * mu * mu) + g * g * np.outer(mu, mu)
    w, U = np.linalg.eigh(A)
    if np.any(np.abs(w) >= 1):
        raise ValueError(f"eta = {eta} is beyond the stability limit of the second moment (|w| max {np.abs(w).max():.4g})")
    xs = np.linalg.solve(np.eye(mu.size) - A, g * g * c * mu)
    y0 = U.T @ (v * v - xs)
    muU = mu @ U
    steps = np.asarray(steps, dtype=float)
    eps = (mu @ xs + c + (np.power.outer(w, steps) * (muU * y0)[:, None]).sum(axis=0)) / (2 * N)
    if window is None:
        return eps
    t0, t1, every = window
    k = int((t1 - t0) // every) + 1
    q = np.power(w, every)
    geo = np.where(np.abs(1 - q) > 1e-300, np.power(w, t0) * (1 - np.power(q, k)) / np.where(q == 1, 1, 1 - q), k)
    mean = (mu @ xs + c + (muU * y0) @ geo / k) / (2 * N)
    return eps, float(mean)


# --------------------------------------------------------------------------------------------
# exponent and the CLI entry point
# --------------------------------------------------------------------------------------------

def fit_exponent(N_ls, eps):
    """beta_fit from a least-squares line through (ln N_l, ln eps): eps ~ N_l^{-beta_fit}."""
    x, y = np.log(np.asarray(N_ls, dtype=float)), np.log(np.asarray(eps, dtype=float))
    return float(-np.polyfit(x, y, 1)[0])


def feature_scaling_result(spec, progress=None, options: dict | None = None) -> dict:
    """Asymptotic eps_g versus N_l for a spec (K = M = 1, linear); see FEATURE_SCALING_KEYS.

    [linear] N_l = [..] (default: powers of two below N), rotated = false (Eq. 71/10) or true
    (Eq. 88 averaged over n_W Haar W), n_W = 20, simulate = false (online SGD, n_seeds runs,
    eps_g averaged over alpha_burn <= alpha <= alpha_max), untrainable = "frozen" | "zero".
    theory is the small-eta asymptote (the paper's); theory_finite_eta includes the SGD-noise
    factor 1/(1 - eta Tr(Sigma~)/(2N)) that the simulation at [training] eta converges to.
    ``options``: the validated [linear] section (read from the spec when not given).
    """
    if options is None:
        from solvers.app.sections import LINEAR_SCHEMA, read
        options = read(spec, "linear", LINEAR_SCHEMA)
    started = time.perf_counter()
    m, d, tr = spec.model, spec.data, spec.training
    if not tr.is_plain:
        raise ValueError("feature scaling has no label noise, weight decay or batch size "
                         "([training] noise, weight_decay, batch_size at 0, 0, 1)")
    if not m.is_plain or m.activation != "linear" or m.K != 1 or m.M != 1:
        raise ValueError("feature scaling needs [model] activation = \"linear\", K = 1, M = 1 "
                         "(teacher = student, paper readouts)")
    from solvers.app.spec import refuse_training_options
    refuse_training_options(spec, "feature scaling")
    from solvers.app.solve import spectrum_of
    spectrum = spectrum_of(spec)
    lam = np.array([float(v) for v in spectrum.eigenvalues])
    L = lam.size
    N = d.N if d.N is not None else L
    if N % L:
        raise ValueError(f"L = {L} must divide N = {N}")
    sec = options
    default_N_l = [2**j for j in range(int(math.log2(N)) + 1) if 2**j < N] or [N]
    N_ls = list(sec["N_l"]) if sec["N_l"] is not None else default_N_l
    if max(N_ls) > N:
        raise ValueError(f"{spec.path}: [linear] N_l = {N_ls} must be integers between 1 and "
                         f"N = {N}")
    rotated, n_W, do_sim = sec["rotated"], sec["n_W"], sec["simulate"]
    n_seeds, untr = sec["n_seeds"], sec["untrainable"]
    eta, sigma_J = float(tr.eta), float(tr.sigma_J)
    N_ls = sorted(set(int(x) for x in N_ls))
    meta = {"N": N, "L": L, "eta": eta, "sigma_J": sigma_J, "rotated": rotated,
            "untrainable": untr, "eps_convention": "eps_g = (Q - 2R + T)/2, K = M = 1 linear"}
    if rotated:
        if untr != "frozen":
            raise ValueError("[linear] rotated = true supports untrainable = \"frozen\" only (Eq. 88)")
        mean, err, samples = eq88_average(lam, N, N_ls, sigma_J, n_W, seed=tr.seed)
        fin, _, _ = eq88_average(lam, N, N_ls, sigma_J, n_W, seed=tr.seed, eta=eta)
        eps = {"theory": mean.tolist(), "theory_stderr": err.tolist(),
               "theory_finite_eta": fin.tolist(),
               "free_probability": [eps_asymp_free(lam, N, n, sigma_J) for n in N_ls]}
        meta["n_W"] = n_W
    else:
        eps = {"theory": [eps_asymp_eigenbasis(lam, N, n, sigma_J, untr) for n in N_ls],
               "theory_finite_eta": [eps_asymp_eigenbasis(lam, N, n, sigma_J, untr, eta=eta)
                                     for n in N_ls]}
    if do_sim:
        sim, sim_err, window = _simulate_asymptotes(lam, N, N_ls, eta, sigma_J, rotated, untr,
                                                   n_seeds, tr.seed, sec, progress)
        eps["simulation"], eps["simulation_stderr"] = sim, sim_err
        meta.update(n_seeds=n_seeds, simulation_alpha_window=window)
    fit_pts = [(n, v) for n, v in zip(N_ls, eps["theory"]) if n < N and v > 0]
    exponent_fit = fit_exponent(*zip(*fit_pts)) if len(fit_pts) >= 2 else None
    beta = float(d.beta) if d.beta is not None else None
    meta["wall_s"] = time.perf_counter() - started
    return {"N_l": N_ls, "eps_asymp": eps, "exponent_fit": exponent_fit,
            "exponent_theory": beta, "meta": meta}


def _simulate_asymptotes(lam, N, N_ls, eta, sigma_J, rotated, untr, n_seeds, seed, sec, progress):
    """Time- and seed-averaged eps_g in the stationary window [alpha_burn, alpha_max]."""
    L = lam.size
    lam_min_trained = min(lam[min(L - 1, (n - 1) * L // N)] for n in N_ls)
    # the slowest trainable second moment relaxes at rate 2 eta lambda_min (rotated: St's smallest
    # eigenvalue is >= lambda_L, so use lambda_L there); 10 relaxation times make e^-10 residue.
    slow = lam[-1] if rotated else lam_min_trained
    burn_default = 10.0 / (2.0 * eta * slow)
    burn = sec["alpha_burn"] if sec["alpha_burn"] is not None else burn_default
    amax = sec["alpha_max"] if sec["alpha_max"] is not None else 2.0 * burn + 50.0
    if not amax > burn:
        raise ValueError(f"[linear] alpha_max = {amax!r} must be > alpha_burn = {burn}")
    if amax * N * n_seeds * len(N_ls) * (N if rotated else 1) > 5e11:
        raise ValueError(f"[linear] simulate: alpha_max = {amax:g} needs too many SGD steps; "
                         "lower alpha_max / n_seeds / N")
    means, errs = [], []
    for N_l in N_ls:
        runs = []
        for r in range(n_seeds):
            if rotated:
                a, e, _, _ = simulate_rotated_mask(lam, N, N_l, eta, sigma_J, amax, seed + r,
                                                rotated=True, untrainable=untr)
            else:
                from solvers.sim.simulate import simulate
                grid = np.linspace(burn, amax, 64)
                res = simulate(activation="linear", K=1, M=1, N=N, eta=eta, sigma_J=sigma_J,
                               seed=seed + r, alphas=grid, eigenvalues=lam, n_trainable=N_l,
                               untrainable=untr)
                a, e = res.alpha, res.eps_g
            runs.append(float(np.mean(e[a >= burn])))
            if progress:
                progress()
        runs = np.array(runs)
        means.append(float(runs.mean()))
        errs.append(float(runs.std(ddof=1) / math.sqrt(n_seeds)))
    return means, errs, [float(burn), float(amax)]


# _sgd_reduced_kernel has normals.fill_normals and the ziggurat's tables compiled into its
# cache; numba would not notice a change there (solvers/core/artifacts.py).
def _register_kernels():
    from solvers.core.artifacts import numba_kernels
    from solvers.sim import normals, streams
    numba_kernels(globals(), [normals.__file__, streams.__file__])


_register_kernels()
