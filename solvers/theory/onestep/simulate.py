"""Finite-d simulators of the one-step protocol and of its two asymptotic stand-ins.

* ``protocol``: the real thing — rows w_i⁰ uniform on the unit sphere, readout 1/√p, one step
  w_i¹ = w_i⁰ + η (1/n0) Σ_μ (y_μ − f(x_μ)) σ'(w_i⁰·x_μ) x_μ on n0 = α0 d samples, then ridge on
  the readout with n = α d fresh samples;
* ``srf``: the spiked random features σ(√c w_i·x + r κ) with (γ, r, c) of Result 3.1;
* ``gaussian``: the conditional Gaussian equivalent μ0(κ) 1 + μ1(κ) √c W0 x + μ⋆(κ) g.

Every run is seeded (numpy PCG64 via ``default_rng([seed, ...])``) and so reproducible.  The test
error is measured on ``n_test`` held-out samples against the noiseless target; the training
error is the ridge residual on the training samples (labels with noise).
"""
from __future__ import annotations

import numpy as np

from .activation import Activation, trapezoid_rule

KINDS = ("protocol", "srf", "gaussian")


def _sphere_rows(rng, p, d):
    w = rng.standard_normal((p, d))
    return w / np.linalg.norm(w, axis=1, keepdims=True)


def ridge(F, y, lam):
    """argmin_w Σ (y − F w)² + λ‖w‖² through the smaller Gram matrix."""
    n, p = F.shape
    if p <= n:
        return np.linalg.solve(F.T @ F + lam * np.eye(p), F.T @ y)
    return F.T @ np.linalg.solve(F @ F.T + lam * np.eye(n), y)


def one_step(W0, X0, y0, student: Activation, eta: float):
    """The first-layer rows after the large step (readout 1/√p, so f = mean_i σ(w_i·x))."""
    pre = X0 @ W0.T
    f = student.f(pre).mean(axis=1)
    G = ((y0 - f)[:, None] * student.df(pre)).T @ X0 / X0.shape[0]
    return W0 + eta * G


def measure_step(d, p, alpha0, eta, student, target, noise=0.0, seed=0) -> dict:
    """γ, r, c read off one real gradient step: v̂ = u/‖u‖ (u = (1/n0) Σ y x),
    γ = θ⋆·v̂, r = mean_i w_i¹·v̂, c = mean_i ‖w_i¹ − (w_i¹·v̂) v̂‖²."""
    rng = np.random.default_rng([seed, 7])
    theta = np.zeros(d)
    theta[0] = 1.0
    n0 = max(1, int(round(alpha0 * d)))
    W0 = _sphere_rows(rng, p, d)
    X0 = rng.standard_normal((n0, d))
    y0 = target.f(X0 @ theta) + np.sqrt(noise) * rng.standard_normal(n0)
    W1 = one_step(W0, X0, y0, student, eta)
    u = X0.T @ y0 / n0
    v = u / np.linalg.norm(u)
    proj = W1 @ v
    c = np.mean(np.sum(W1 ** 2, axis=1) - proj ** 2)
    return {"gamma": float(theta @ v), "r": float(proj.mean()), "c": float(c),
            "unorm": float(np.linalg.norm(u))}


def _conditional(student, kappa, r, c, step=0.1, half=11.0):
    xi, w = trapezoid_rule(step, half)
    u = r * kappa[:, None] + np.sqrt(c) * xi[None, :]
    s = student.f(u)
    mu0, mu1 = s @ w, student.df(u) @ w
    resid = s - mu0[:, None] - np.sqrt(c) * mu1[:, None] * xi[None, :]
    mus = np.sqrt((resid * resid) @ w)
    return mu0, mu1, mus


def run(kind, *, d, beta, alpha, student, target, lam, srf=None, alpha0=None, eta=None,
        noise=0.0, seed=0, n_test=None) -> dict:
    """One seeded run: test and training error of the ridge readout at each α.

    ``srf`` = {gamma, r, c} for kinds "srf" and "gaussian"; ``alpha0``, ``eta`` for "protocol".
    The features are drawn once per seed; the samples at each α are fresh."""
    if kind not in KINDS:
        raise ValueError(f"kind {kind!r} must be one of {KINDS}")
    rng = np.random.default_rng([seed, KINDS.index(kind)])
    p = max(1, int(round(beta * d)))
    n_test = n_test or max(2000, 2 * d)
    W0 = _sphere_rows(rng, p, d)
    if kind == "protocol":
        theta = np.zeros(d)
        theta[0] = 1.0
        n0 = int(round(alpha0 * d))
        if n0 > 0 and eta != 0:
            X0 = rng.standard_normal((n0, d))
            y0 = target.f(X0 @ theta) + np.sqrt(noise) * rng.standard_normal(n0)
            W = one_step(W0, X0, y0, student, eta)
        else:                               # α0 = 0: no step, plain random features
            W = W0

        def features(X):
            return student.f(X @ W.T) / np.sqrt(p)
    else:
        g, r, c = srf["gamma"], srf["r"], srf["c"]
        rho = np.sqrt(max(1 - g * g, 0.0))
        theta = np.zeros(d)
        theta[0], theta[1] = g, rho          # v̂ = e1, ζ̂ = e2

        if kind == "srf":
            def features(X):
                return student.f(np.sqrt(c) * (X @ W0.T) + r * X[:, :1]) / np.sqrt(p)
        else:
            def features(X):
                mu0, mu1, mus = _conditional(student, X[:, 0], r, c)
                G = rng.standard_normal((X.shape[0], p))
                return (mu0[:, None] + mu1[:, None] * np.sqrt(c) * (X @ W0.T)
                        + mus[:, None] * G) / np.sqrt(p)
    Xt = rng.standard_normal((n_test, d))
    Ft, yt = features(Xt), target.f(Xt @ theta)
    test, train = [], []
    for a in np.atleast_1d(alpha):
        n = max(1, int(round(a * d)))
        X = rng.standard_normal((n, d))
        F = features(X)
        y = target.f(X @ theta) + np.sqrt(noise) * rng.standard_normal(n)
        w = ridge(F, y, lam)
        test.append(float(np.mean((yt - Ft @ w) ** 2)))
        train.append(float(np.mean((y - F @ w) ** 2)))
    return {"alpha": [float(a) for a in np.atleast_1d(alpha)], "eps_g": test,
            "train_error": train, "d": d, "p": p, "seed": seed, "kind": kind}


def repeat(kind, seeds, **kw) -> dict:
    """``run`` over several seeds: mean and, with two seeds or more, the standard error of the
    mean per α (``eps_g_sem``, ``train_error_sem``)."""
    runs = [run(kind, seed=s, **kw) for s in seeds]
    out = {"alpha": runs[0]["alpha"], "kind": kind, "d": runs[0]["d"], "p": runs[0]["p"],
           "seeds": list(seeds)}
    for key in ("eps_g", "train_error"):
        a = np.array([r_[key] for r_ in runs])
        out[key] = a.mean(axis=0).tolist()
        # one seed has no spread: no standard error at all (never NaN, never null)
        if len(runs) > 1:
            out[key + "_sem"] = (a.std(axis=0, ddof=1) / np.sqrt(len(runs))).tolist()
    return out
