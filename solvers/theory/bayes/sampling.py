"""Posterior sampling of the teacher weights: a finite-size check of the fixed point.

Model (exactly the one the fixed point describes, cubic case): x ~ N(0, I_d),
y = Σ_{i≤k} v_i σ(w_i·x/√d) + √Δ ξ with σ = He₃/√6 (μ₃ = √6, g_σ(x) = x³), readouts v known
(v_i² ∝ i^(−2β), Σ v_i² = 1, v_i > 0), prior w_i ~ N(0, I_d), n samples.  The posterior over
W ∈ R^{k×d} is sampled with Hamiltonian Monte Carlo, all chains vectorised: the potential's two
matrix products are single BLAS calls over all chains and the element-wise pass between them is
a fused numba loop (:mod:`.hmc_kernel`); :func:`potential_reference` is the plain einsum
formulation, selectable with ``hmc(..., impl="reference")`` (same draws, same chain up to
rounding; speed-up in BENCHMARKS.md, "HMC sampler speed-up").

Definitions matched to the theory: its q_i enters as the argument of g_σ and through the Gaussian
prior term ½[q + ln(1−q)], so q_i is the overlap of the weight vectors themselves,
q_i = w_i·w_i*/d (not ρ³: g(q) = q³ is the overlap of the ℓ = 3 part).  With distinct known
readouts the units are not exchangeable, so unit i is compared with teacher unit i; the
Hungarian-matched overlap is returned as a diagnostic only.  The Gibbs error of a posterior
sample is E_x (f_W(x) − f*(x))² computed in closed form (below); under the Nishimori identity it
is 2 ε^BO.

What the samples can be compared with: the fixed point gives each unit a Gaussian output
channel, which is exact only for small readouts; a unit with an O(1) readout learned from
n = O(d) samples follows the GLM replica formula instead (:mod:`.glm`; docs/guide/bayes.md, sampling section).
Chains started at the teacher remember their start for long (overlaps biased up, Gibbs errors
down); random starts stay stuck near q = 0; the chain–chain overlap (`Run.pair`) is the Nishimori
check.

Closed kernel for σ = He₃/√6 at arbitrary norms: with A = |a|²/d, B = |b|²/d, C = a·b/d,
E σ(a·x/√d) σ(b·x/√d) = C³ + (3/2) C (A−1)(B−1)  (Isserlis; the second term is the
finite-d leak of the norm fluctuations into the linear Hermite mode).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

SQ6 = math.sqrt(6.0)


def sigma(z):
    return (z * z * z - 3.0 * z) / SQ6


def dsigma(z):
    return (3.0 * z * z - 3.0) / SQ6


def readouts(k: int, beta: float) -> np.ndarray:
    v2 = np.arange(1, k + 1, dtype=float) ** (-2.0 * beta)
    return np.sqrt(v2 / v2.sum())


def kernel(a, b):
    """E_x σ(a·x/√d) σ(b·x/√d) for rows a (…, k, d), b (…, k', d): array (…, k, k')."""
    d = a.shape[-1]
    A = np.einsum("...id,...id->...i", a, a) / d
    B = np.einsum("...id,...id->...i", b, b) / d
    C = a @ np.swapaxes(b, -1, -2) / d
    return C ** 3 + 1.5 * C * (A[..., :, None] - 1.0) * (B[..., None, :] - 1.0)


def gen_error(W, Wt, v):
    """E_x (f_W(x) − f*(x))² for W of shape (…, k, d) against the teacher Wt (k, d)."""
    Kww = kernel(W, W)
    Kwt = kernel(W, np.broadcast_to(Wt, W.shape))
    Ktt = kernel(Wt, Wt)
    return (np.einsum("i,...ij,j->...", v, Kww, v) - 2 * np.einsum("i,...ij,j->...", v, Kwt, v)
            + v @ Ktt @ v)


@dataclass
class Data:
    X: np.ndarray        # (n, d)
    y: np.ndarray        # (n,)
    Wt: np.ndarray       # (k, d) teacher
    v: np.ndarray        # (k,)
    Delta: float


def make_data(d: int, k: int, n: int, Delta: float, beta: float, rng) -> Data:
    Wt = rng.standard_normal((k, d))
    v = readouts(k, beta)
    X = rng.standard_normal((n, d))
    y = sigma(X @ Wt.T / math.sqrt(d)) @ v + math.sqrt(Delta) * rng.standard_normal(n)
    return Data(X, y, Wt, v, float(Delta))


def potential_reference(W, data: Data):
    """U(W) = −log posterior (up to a constant) and its gradient, vectorised over chains (c, k, d):
    the plain numpy formulation (einsum), kept as the reference for :func:`potential`."""
    d = data.X.shape[1]
    H = np.einsum("nd,ckd->cnk", data.X, W) / math.sqrt(d)
    r = sigma(H) @ data.v - data.y                              # (c, n)
    U = 0.5 * np.sum(W * W, axis=(1, 2)) + 0.5 * np.sum(r * r, axis=1) / data.Delta
    G = (r[:, :, None] * dsigma(H)) * data.v                    # (c, n, k)
    grad = W + np.einsum("cnk,nd->ckd", G, data.X) / (math.sqrt(d) * data.Delta)
    return U, grad


def potential(W, data: Data, _work: dict | None = None):
    """U(W) = −log posterior (up to a constant) and its gradient, vectorised over chains (c, k, d).

    Same function as :func:`potential_reference` (equal to rounding, tests/test_bayes_sampling.py);
    both products are one BLAS GEMM over all chains, the element-wise pass between them is the
    fused numba loop of :mod:`.hmc_kernel` (BENCHMARKS.md, "HMC sampler speed-up").

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> data = make_data(6, 3, 25, 0.1, 1.0, rng)
    >>> W = rng.standard_normal((2, 3, 6))
    >>> U, g = potential(W, data)
    >>> bool(np.allclose(U, potential_reference(W, data)[0], rtol=1e-12))
    True
    """
    from .hmc_kernel import residual_gradient

    W = np.ascontiguousarray(W, dtype=float)
    c, k, d = W.shape
    X = data.X
    n = X.shape[0]
    work = _work if _work is not None else {}
    G = work.get("G")
    if G is None or G.shape != (n, c * k):
        G = work["G"] = np.empty((n, c * k))
        work["H"] = np.empty((n, c * k))
    H = np.matmul(X, W.reshape(c * k, d).T, out=work["H"])
    R2 = np.empty(c)
    residual_gradient(H, data.y, data.v, c, 1.0 / math.sqrt(d),
                      1.0 / (math.sqrt(d) * data.Delta), G, R2)
    U = 0.5 * np.sum(W * W, axis=(1, 2)) + 0.5 * R2 / data.Delta
    grad = W + (G.T @ X).reshape(c, k, d)
    return U, grad


@dataclass
class Run:
    overlaps: np.ndarray          # (samples, chains, k): w_i·w_i*/d, unit i vs teacher i
    overlaps_matched: np.ndarray  # (samples, chains, k): after Hungarian matching on |overlap|
    gibbs: np.ndarray             # (samples, chains)
    cosine: np.ndarray            # (samples, chains, k): w_i·w_i*/(|w_i||w_i*|), diagnostic
    accept: float
    step: np.ndarray              # final step size per chain
    info: dict = field(default_factory=dict)
    observed: np.ndarray | None = None  # (samples, chains, …): observe(W) per kept sample
    # Nishimori diagnostics: overlap between chains 2j and 2j+1 (same data), (samples, chains//2, k),
    # which at equilibrium has the same mean as the overlap with the teacher; and |w_i|²/d
    pair: np.ndarray | None = None
    norms: np.ndarray | None = None


def hmc(data: Data, W0, warmup: int = 500, samples: int = 500, leapfrog: int = 20,
        target: float = 0.8, thin: int = 1, rng=None, progress=None, observe=None,
        impl: str = "fast") -> Run:
    """HMC with per-chain step sizes tuned during warm-up (dual averaging on log step).

    ``impl`` = "fast" (:func:`potential`, default) or "reference" (:func:`potential_reference`):
    the same chain and the same random draws; the two differ only by rounding in U and ∇U."""
    if impl not in ("fast", "reference"):
        raise ValueError(f"impl: {impl!r} is not one of 'fast', 'reference'")
    from scipy.optimize import linear_sum_assignment

    rng = np.random.default_rng() if rng is None else rng
    with np.errstate(over="ignore", invalid="ignore"):
        # early warm-up steps may overshoot to inf; those proposals are rejected (logr = −inf)
        return _hmc(data, W0, warmup, samples, leapfrog, target, thin, rng, progress,
                    linear_sum_assignment, observe, impl)


def _hmc(data, W0, warmup, samples, leapfrog, target, thin, rng, progress, linear_sum_assignment,
         observe, impl):
    W = np.array(W0, float)
    c, k, d = W.shape
    if impl == "fast":
        work = {}           # the (n, c·k) buffers, reused by every gradient of this run
        def grad_u(w):
            return potential(w, data, work)
    else:
        def grad_u(w):
            return potential_reference(w, data)
    U, grad = grad_u(W)
    logeps = np.full(c, math.log(0.01))
    logbar = logeps.copy()
    hbar = np.zeros(c)
    mu = math.log(10 * 0.01)
    ov, ovm, gib, cs, obs, pr, nr = [], [], [], [], [], [], []
    acc_total = 0.0
    for it in range(warmup + samples * thin):
        eps = np.exp(logeps if it < warmup else logbar)
        # jitter the trajectory length so that HMC does not lock onto a resonance
        L = int(rng.integers(max(1, leapfrog // 2), leapfrog + 1))
        p = rng.standard_normal(W.shape)
        K0 = 0.5 * np.sum(p * p, axis=(1, 2))
        Wn, gn = W.copy(), grad
        e = eps[:, None, None]
        p = p - 0.5 * e * gn
        for j in range(L):
            Wn = Wn + e * p
            Un, gn = grad_u(Wn)
            if j < L - 1:
                p = p - e * gn
        p = p - 0.5 * e * gn
        K1 = 0.5 * np.sum(p * p, axis=(1, 2))
        logr = (U + K0) - (Un + K1)
        logr = np.where(np.isfinite(logr), logr, -np.inf)
        a = np.exp(np.minimum(0.0, logr))
        take = np.log(rng.random(c)) < logr
        W = np.where(take[:, None, None], Wn, W)
        U = np.where(take, Un, U)
        grad = np.where(take[:, None, None], gn, grad)
        if it < warmup:
            m = it + 1
            hbar = (1 - 1 / (m + 10)) * hbar + (target - a) / (m + 10)
            logeps = mu - math.sqrt(m) / 0.05 * hbar
            w = m ** -0.75
            logbar = w * logeps + (1 - w) * logbar
        else:
            acc_total += a.mean()
            if (it - warmup) % thin == thin - 1:
                o = W @ data.Wt.T / d                              # (c, k, k)
                ov.append(np.einsum("cii->ci", o).copy())
                cs.append(ov[-1] * d / np.sqrt(np.sum(W * W, axis=2)
                                               * np.sum(data.Wt ** 2, axis=1)))
                om = np.empty((c, k))
                for ch in range(c):
                    rows, cols = linear_sum_assignment(-np.abs(o[ch]))
                    om[ch, cols] = o[ch, rows, cols]
                ovm.append(om)
                gib.append(gen_error(W, data.Wt, data.v))
                if observe is not None:
                    obs.append(np.asarray(observe(W)))
                h2 = (c // 2) * 2
                pr.append(np.einsum("cid,cid->ci", W[0:h2:2], W[1:h2:2]) / d)
                nr.append(np.einsum("cid,cid->ci", W, W) / d)
        if progress:
            progress(1)
    return Run(np.array(ov), np.array(ovm), np.array(gib), np.array(cs), acc_total / max(samples * thin, 1),
               np.exp(logbar), observed=np.array(obs) if observe is not None else None,
               pair=np.array(pr), norms=np.array(nr))


def starts(data: Data, chains: int, informed: bool, rng) -> np.ndarray:
    k, d = data.Wt.shape
    if informed:
        return np.broadcast_to(data.Wt, (chains, k, d)).copy()
    return rng.standard_normal((chains, k, d))


def measure(d: int, k: int, n_over_d: float, Delta: float = 0.1, beta: float = 1.0,
            instances: int = 4, chains: int = 2, warmup: int = 400, samples: int = 400,
            leapfrog: int = 20, seed: int = 0, progress=None,
            which=("informed", "uninformed"), impl: str = "fast") -> dict:
    """Both starts on `instances` independent data sets (teacher, X, noise), `chains` each.

    Returns per start: the mean over the second half of the samples of q_i (i = 1..k) and of the
    Gibbs error / 2, per chain (instances × chains), and per instance (`*_inst`, averaged over its
    chains: chains of one instance share the data and, informed, the start, so only instances are
    independent and error bars are formed over them).  `pair_inst` is the chain–chain overlap
    (Nishimori: equal in mean to the teacher overlap at equilibrium), `norm_inst` |w_i|²/d (→ 1)."""
    rng = np.random.default_rng(seed)
    n = int(round(n_over_d * d))
    out = {"d": d, "k": k, "n": n, "n_over_d": n / d, "Delta": Delta, "beta": beta}
    for informed in [w == "informed" for w in which]:
        q, qm, g, acc, cs, pr, nr = [], [], [], [], [], [], []
        for _ in range(instances):
            data = make_data(d, k, n, Delta, beta, rng)
            run = hmc(data, starts(data, chains, informed, rng), warmup=warmup,
                      samples=samples, leapfrog=leapfrog, rng=rng, progress=progress, impl=impl)
            h = samples // 2
            q.append(run.overlaps[h:].mean(axis=0))
            qm.append(run.overlaps_matched[h:].mean(axis=0))
            cs.append(run.cosine[h:].mean(axis=0))
            g.append(run.gibbs[h:].mean(axis=0) / 2)
            acc.append(run.accept)
            pr.append(run.pair[h:].mean(axis=(0, 1)) if chains >= 2 else np.full(k, np.nan))
            nr.append(run.norms[h:].mean(axis=(0, 1)))
        key = "informed" if informed else "uninformed"
        out[key] = {"q": np.concatenate(q), "q_matched": np.concatenate(qm),
                    "cosine": np.concatenate(cs),
                    "gibbs_half": np.concatenate(g), "accept": float(np.mean(acc)),
                    "q_inst": np.array([x.mean(axis=0) for x in q]),
                    "gibbs_inst": np.array([x.mean() for x in g]),
                    "pair_inst": np.array(pr), "norm_inst": np.array(nr)}
    return out


def summary(x: np.ndarray):
    """Mean and standard error over the leading axis (use the `*_inst` arrays: instances are the
    independent replicas)."""
    x = np.asarray(x, float)
    return x.mean(axis=0), x.std(axis=0, ddof=1) / math.sqrt(x.shape[0])
