"""Kernel / Gaussian-process learning curves, symbolically (exact; no float literals).

Conventions (``docs/theory/kernel-curves.md``): kernel K = Σ_k λ_k ψ_k ψ_k, P samples,
ridge T (the GP's observation-noise temperature), target y = Σ_k c_k ψ_k plus label noise σ².

- κ equation, two forms: fixed point κ = T + κ Σ λ_k/(λ_k P + κ) and learnability form
  P = T/κ_S + Σ L_k with κ_S = κ/P, L_k = λ_k/(λ_k + κ_S).  `forms_relation` shows
  fixed(κ = P κ_S) = κ_S · learnability(κ_S): the same roots for κ_S > 0.
- γ = Σ L_k²/P, E_g = [Σ (1 − L_k)² c_k² + σ² γ]/(1 − γ) (excess error, noise not included).
- Equivalent kernel: κ_S → T/P, γ → 0 — the P → ∞ (finite rank) and T → ∞ limits.
- Rank-d degenerate kernel (d equal eigenvalues λ, total target power ‖c‖²): closed forms, the
  double descent at P = d and its removal by the ridge.
- Power law λ_k = k^(−a), c_k² = k^(−b): κ_S ≈ (C(a)/P)^a with C(a) = ∫_0^∞ dx/(1 + x^a)
  = (π/a)/sin(π/a), γ → 1 − 1/a, and the exponents of E_g.
"""
from __future__ import annotations

import sympy as sp

P, T, kappa, kappa_S = sp.symbols("P T kappa kappa_S", positive=True)
sigma2 = sp.Symbol("sigma2", nonnegative=True)
k, n = sp.symbols("k n", integer=True, positive=True)
lam = sp.IndexedBase("lambda", positive=True)
c2 = sp.IndexedBase("c2", nonnegative=True)
a, b = sp.symbols("a b", positive=True)
x = sp.Symbol("x", positive=True)


# ---- the κ equation -------------------------------------------------------------------

def fixed_point_form(n_modes=n):
    """κ − T − κ Σ_k λ_k/(λ_k P + κ)  (= 0 at the solution)."""
    return kappa - T - kappa * sp.Sum(lam[k] / (lam[k] * P + kappa), (k, 1, n_modes))


def learnability(lam_k=None, kS=kappa_S):
    lam_k = lam[k] if lam_k is None else lam_k
    return lam_k / (lam_k + kS)


def learnability_form(n_modes=n):
    """P − T/κ_S − Σ_k L_k  (= 0 at the solution)."""
    return P - T / kappa_S - sp.Sum(learnability(), (k, 1, n_modes))


def summand_identity():
    """κ λ/(λP + κ) at κ = P κ_S minus κ_S λ/(λ + κ_S): simplifies to 0."""
    return sp.simplify((kappa * lam[k] / (lam[k] * P + kappa)).subs(kappa, P * kappa_S)
                       - kappa_S * learnability())


def forms_relation(n_modes: int = 4):
    """fixed(κ = P κ_S) − κ_S · learnability(κ_S) for ``n_modes`` symbolic eigenvalues
    (any n: the identity holds summand by summand); simplifies to 0, so the two forms have the
    same roots for κ_S > 0."""
    lams = sp.symbols(f"lambda_1:{n_modes + 1}", positive=True)
    fixed = P * kappa_S - T - P * kappa_S * sp.Add(*[v / (v * P + P * kappa_S) for v in lams])
    learn = P - T / kappa_S - sp.Add(*[v / (v + kappa_S) for v in lams])
    return sp.simplify(fixed - kappa_S * learn)


def gamma_expr(n_modes=n):
    return sp.Sum(learnability() ** 2, (k, 1, n_modes)) / P


def eps_g_expr(n_modes=n):
    """Excess test error [Σ (1 − L)² c² + σ² γ]/(1 − γ)."""
    g = gamma_expr(n_modes)
    bias = sp.Sum((1 - learnability()) ** 2 * c2[k], (k, 1, n_modes))
    return (bias + sigma2 * g) / (1 - g)


def one_minus_gamma_identity(n_modes: int = 4):
    """On the solution P = T/κ_S + Σ L:  P(1 − γ) − (T/κ_S + Σ L(1 − L)) = 0 (the numerics use
    the right-hand side: it does not cancel near P = rank).  Returns the difference, 0."""
    lams = sp.symbols(f"lambda_1:{n_modes + 1}", positive=True)
    Ls = [learnability(v) for v in lams]
    Psol = T / kappa_S + sp.Add(*Ls)
    return sp.simplify(Psol - sp.Add(*[L ** 2 for L in Ls])
                       - (T / kappa_S + sp.Add(*[L * (1 - L) for L in Ls])))


# ---- equivalent kernel ------------------------------------------------------------------

def ek_learnability(lam_k=None):
    """EK: L_k = λ_k/(λ_k + T/P)."""
    return learnability(lam_k, T / P)


# ---- rank-d degenerate kernel -------------------------------------------------------------
d, lam0, csq = sp.symbols("d lambda_0 C", positive=True)      # d modes of eigenvalue λ_0, ‖c‖² = C


def rank_d_kappa():
    """The positive root of κ² + κ(λ_0 P − T − dλ_0) − T λ_0 P = 0 (κ equation with d equal λ)."""
    B = lam0 * P - T - d * lam0
    return (-B + sp.sqrt(B ** 2 + 4 * T * lam0 * P)) / 2


def rank_d_quantities(kap=None):
    """(L, γ, E_g) for the rank-d kernel at a given κ (default: the closed-form root)."""
    kap = rank_d_kappa() if kap is None else kap
    L = lam0 * P / (lam0 * P + kap)
    g = d * L ** 2 / P
    E = (d * (1 - L) ** 2 * csq / d + sigma2 * g) / (1 - g)
    return L, g, E


def rank_d_ridgeless():
    """Ridgeless eigenlearning laws (P < d, P > d) and the exact Gaussian-design laws."""
    below = (1 - P / d) * csq + sigma2 * P / (d - P)
    above = sigma2 * d / (P - d)
    exact_below = (1 - P / d) * csq + sigma2 * P / (d - P - 1)
    exact_above = sigma2 * d / (P - d - 1)
    return {"below": below, "above": above, "exact_below": exact_below,
            "exact_above": exact_above}


# ---- power-law asymptotics ---------------------------------------------------------------

def C_of_a(av=a):
    """C(a) = ∫_0^∞ dx/(1 + x^a) = (π/a)/sin(π/a) (Mellin / Beta: (1/a) Γ(1/a) Γ(1 − 1/a))."""
    av = sp.S(av)
    return (sp.pi / av) / sp.sin(sp.pi / av)


def C_of_a_integral(av):
    """The defining integral at a concrete a (for checks)."""
    return sp.integrate(1 / (1 + x ** av), (x, 0, sp.oo))


def kappa_S_asymptotic(av=a):
    """Ridgeless: P = Σ L_k ≈ κ_S^(−1/a) C(a) ⇒ κ_S ≈ (C(a)/P)^a."""
    av = sp.S(av)
    return (C_of_a(av) / P) ** av


def gamma_limit(av):
    """γ → ∫ dx/(1 + x^a)² / ∫ dx/(1 + x^a) (ridgeless power law); equals 1 − 1/a."""
    return sp.simplify(sp.integrate(1 / (1 + x ** av) ** 2, (x, 0, sp.oo)) / C_of_a_integral(av))


def exponents(av=a, bv=b):
    """Exponents of E_g(P): ridgeless noiseless, fixed ridge (bias), noise at fixed ridge."""
    av, bv = sp.S(av), sp.S(bv)
    return {"ridgeless": -sp.Min(bv - 1, 2 * av),
            "fixed_ridge": -sp.Min((bv - 1) / av, 2),
            "noise": -(1 - 1 / av)}
