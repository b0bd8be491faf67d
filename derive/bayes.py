"""Bayes-optimal learning of an extensive-width teacher: the exact symbolic layer.

Model and conventions: ``docs/theory/bayes-optimal.md`` (Nguyen & Barbier 2026,
reconstructed).  Teacher f*(x) = Σ_i v_i σ(w_i·x/√d), Σ v_i² = 1, n = α d² samples, noise Δ.

Hermite convention: μ_ℓ = E[σ(z) He_ℓ(z)], σ = Σ μ_ℓ/ℓ! He_ℓ, and by Mehler
E[σ(z₁)σ(z₂)] = Σ μ_ℓ²/ℓ! ρ^ℓ.  The system only sees g(x) = Σ_{ℓ≥3} μ_ℓ²/ℓ! x^ℓ (the ℓ ≥ 3 part):

* cubic  σ = He₃/√6                    g = x³
* erf3   σ = erf(z/√2) − z/√π          g = (2/π) asin(x/2) − x/π
* relu4  σ = relu minus its ℓ ≤ 2 part  g = arc-cosine kernel minus 1/(2π) + x/4 + x²/(4π) (k⋆ = 4)
* hermite: a user list μ_3, μ_4, … (a polynomial g)

Everything here is exact (Rational, sqrt, pi, asin, zeta); no float literals.  The numeric layer
(`solvers/theory/bayes/`) evaluates these expressions at its own scoped precision via lambdify.
"""
from __future__ import annotations

from functools import lru_cache

import sympy as sp

x, q, lam, delta, z = sp.symbols("x q lambda delta z", real=True)
eps, Delta, s, k = sp.symbols("epsilon Delta s k", positive=True)   # s = n/d
alpha, beta, gamma, lam_sigma = sp.symbols("alpha beta gamma lambda_sigma", positive=True)
u, integral = sp.symbols("u I", positive=True)

NAMED = ("cubic", "erf3", "relu4")
# the raw activations whose ℓ ≤ 2 Hermite part is non-zero: usable only as their ℓ ≥ 3 part
RAW_TO_HIGHER = {"erf": "erf3", "relu": "relu4"}


def _phi(zz):
    return sp.exp(-zz ** 2 / 2) / sp.sqrt(2 * sp.pi)


def hermite_coefficient(name: str, ell: int):
    """μ_ℓ = E[σ(z) He_ℓ(z)] of the *raw* activation (cubic, erf, relu) in closed form.

    Gaussian integration by parts, E[f He_ℓ] = E[f' He_{ℓ−1}], turns erf and relu into
    polynomial × Gaussian integrals that SymPy does exactly.
    """
    He = sp.hermite_prob
    if name == "cubic":
        return sp.simplify(sp.integrate(He(3, z) / sp.sqrt(6) * He(ell, z) * _phi(z),
                                        (z, -sp.oo, sp.oo)))
    if ell == 0:
        if name == "erf":
            return sp.Integer(0)                      # odd activation
        if name == "relu":
            return sp.integrate(z * _phi(z), (z, 0, sp.oo))
    if name == "erf":      # σ' = √(2/π) e^{−z²/2}
        return sp.simplify(sp.integrate(sp.sqrt(2 / sp.pi) * sp.exp(-z ** 2 / 2)
                                        * He(ell - 1, z) * _phi(z), (z, -sp.oo, sp.oo)))
    if name == "relu":     # σ' = 1_{z>0}
        return sp.simplify(sp.integrate(He(ell - 1, z) * _phi(z), (z, 0, sp.oo)))
    raise ValueError(f"no closed-form Hermite coefficients for {name!r}")


def kernel_raw(name: str):
    """E[σ(z₁)σ(z₂)] as a function of the correlation x, closed form, for the raw activation."""
    if name == "cubic":
        return x ** 3
    if name == "erf":
        return 2 / sp.pi * sp.asin(x / 2)
    if name == "relu":      # arc-cosine kernel of order 1
        return (sp.sqrt(1 - x ** 2) + x * (sp.pi - sp.acos(x))) / (2 * sp.pi)
    raise ValueError(name)


def low_order_part(name: str):
    """Σ_{ℓ≤2} μ_ℓ²/ℓ! x^ℓ of the raw activation."""
    return sum(hermite_coefficient(name, l) ** 2 / sp.factorial(l) * x ** l for l in range(3))


@lru_cache(maxsize=None)
def g_closed(name: str):
    """g_σ(x) (ℓ ≥ 3 part) in closed form for the named activations."""
    if name == "cubic":
        return x ** 3
    raw = {"erf3": "erf", "relu4": "relu"}[name]
    return sp.expand(kernel_raw(raw) - low_order_part(raw))


def k_star(mus, start: int = 0):
    """k⋆ = min{ℓ ≥ 1 : μ_ℓ ≠ 0} (None when all vanish)."""
    for j, m in enumerate(mus):
        if start + j >= 1 and m != 0:
            return start + j
    return None


@lru_cache(maxsize=None)
def gap(g):
    """Stable gap G(δ) = g(1) − g(1−δ); expanded for polynomials (no cancellation at all)."""
    G = g.subs(x, 1) - g.subs(x, 1 - delta)
    if g.is_polynomial(x):
        return sp.expand(G)
    # √(1 − (1−δ)²) = √(δ(2−δ)): removes the cancellation inside the relu kernel
    half = sp.Rational(1, 2)
    G = G.replace(lambda e: e.is_Pow and e.exp == half,
                  lambda e: sp.sqrt(sp.factor(sp.expand(e.base))))
    # acos(1−δ) = 2 asin(√(δ/2)): no rounding of 1−δ, and a plain series in √δ
    return G.replace(lambda e: isinstance(e, sp.acos) and e.args[0] == 1 - delta,
                     lambda e: 2 * sp.asin(sp.sqrt(delta / 2)))


@lru_cache(maxsize=None)
def gap_series(g, order: int = 8):
    """The δ → 0 expansion of G(δ) up to (excluding) δ^order; half-integer powers allowed."""
    G = gap(g)
    derivs = [G]
    for _ in range(order - 1 if G.diff(delta, 2).subs(delta, 0).is_finite else 0):
        derivs.append(sp.diff(derivs[-1], delta))
    at0 = [dv.subs(delta, 0) for dv in derivs]
    if len(at0) == order and all(v.is_finite for v in at0):              # analytic at δ = 0: plain Taylor polynomial
        return sp.expand(sum(v * delta ** j / sp.factorial(j) for j, v in enumerate(at0)))
    w = sp.Symbol("w", positive=True)          # δ = w²: half-integer powers become integer ones
    ser = sp.series(G.subs(delta, w ** 2), w, 0, 2 * order).removeO()
    return sp.expand(ser.subs(w, sp.sqrt(delta)))


@lru_cache(maxsize=None)
def scalar_channel(g):
    """F(λ, q), ∂_q F and the pair F = 0, ∂_q F = 0 reduced to one equation in q.

    ∂_q F = 0 ⇔ λ = r(q) := q / ((1−q) g'(q)); substituting gives H(q) = F(r(q), q) = 0,
    whose root q_σ gives λ_σ = r(q_σ).  Also h(q) = (−q − ln(1−q))/g(q), λ_σ = min h.
    """
    gp = sp.diff(g, x)
    F = lam * g.subs(x, q) + q + sp.log(1 - q)
    dF = sp.diff(F, q)
    # ∂_qF = λ g'(q) − q/(1−q) is linear in λ: solve it by hand (sp.solve/simplify are slow)
    r = q / ((1 - q) * gp.subs(x, q))
    H = F.subs(lam, r)
    h = (-q - sp.log(1 - q)) / g.subs(x, q)
    return {"F": F, "dF": dF, "r": r, "H": H, "h": h, "gp": gp,
            "gpp": sp.diff(gp, x)}


def cubic_m():
    """Closed m(λ) for g = x³ (the branch above λ_σ): root of r(q) = λ with q > 1/2."""
    ch = scalar_channel(x ** 3)
    roots = sp.solve(sp.Eq(ch["r"], lam), q)
    expected = (1 + sp.sqrt(1 - sp.Rational(4, 3) / lam)) / 2
    # the branch q > 1/2 (q_σ > 1/2); both forms agree exactly at rational λ > 4/3
    (m,) = [r for r in roots if r.subs(lam, 2) > sp.Rational(1, 2)]
    for probe in (sp.Rational(7, 3), sp.Integer(5), sp.Rational(101, 7)):
        assert sp.simplify((m - expected).subs(lam, probe)) == 0
    return expected


def cubic_pair():
    """For g = x³: H(q) = q²/(3(1−q)) + q + ln(1−q) and λ(q) = 1/(3q(1−q))."""
    ch = scalar_channel(x ** 3)
    return sp.simplify(ch["H"]), sp.simplify(ch["r"])


def refinement_law():
    """All features learned, snr_i ≫ 1: G_i ≃ 1/snr_i, so ε = Σ v_i² (Δ+ε)/(s v_i²) = k(Δ+ε)/s.

    Returns ε as a function of (Δ, k, s = n/d): Δ k/(s − k) = Δ k d/(n − k d).
    """
    (sol,) = sp.solve(sp.Eq(eps, k * (Delta + eps) / s), eps)
    return sp.simplify(sol)


# ---- d → ∞ (Eqs. 41–46 as repaired) --------------------------------------------------------

def limit_beta_gt_half():
    """β > 1/2 at fixed α: k_c ≃ k̄ d^{1/(2β)}, ε ≃ ε̄ d^{1/(2β)−1}.

    k̄ = (α/(λ_σ ζ(2β) Δ))^{1/(2β)},   ε̄ = k̄^{1−2β}/ζ(2β) [I + g(1)/(2β−1)]
    with I = ∫₀¹ (g(1) − g(φ(x))) x^{−2β} dx, φ(x) = m(λ_σ x^{−2β}) (the symbol ``I`` here).
    """
    z2b = sp.zeta(2 * beta)
    kbar = (alpha / (lam_sigma * z2b * Delta)) ** (1 / (2 * beta))
    g1 = sp.Symbol("g1", positive=True)
    ebar = kbar ** (1 - 2 * beta) / z2b * (integral + g1 / (2 * beta - 1))
    return {"kbar": kbar, "ebar": ebar, "g1": g1,
            "kc_exponent": 1 / (2 * beta), "eps_exponent": 1 / (2 * beta) - 1}


def limit_beta_lt_half():
    """β < 1/2: v_i² ≃ (1−2β) i^{−2β} k^{2β−1}; with u = x^{1−2β}, p = 2β/(1−2β),

    ε = g(1) − ∫₀¹ g(m(c u^{−p})) du,  c = α(1−2β)/(γ(Δ+ε))          (Eq. 44 repaired)
    k_c/k = min{1, (c/λ_σ)^{1/(2β)}}                                    (Eq. 45)
    α⋆/(λ_σ γ) = (Δ + g(1))/(1−2β) − J,  J = ∫₀¹ g(φ(x)) x^{−2β} dx    (Eq. 46)
    Ψ/k = (1/(2(1−2β))) ∫₀¹ [q + ln(1−q)] u^p du − (α/(2γ)) ln(Δ+ε)    (continuum potential)
    """
    g1, J = sp.symbols("g1 J", positive=True)
    c = alpha * (1 - 2 * beta) / (gamma * (Delta + eps))
    return {"c": c, "p": 2 * beta / (1 - 2 * beta),
            "kc_fraction": (c / lam_sigma) ** (1 / (2 * beta)),
            "alpha_star": lam_sigma * gamma * ((Delta + g1) / (1 - 2 * beta) - J),
            "g1": g1, "J": J,
            "psi_weight": 1 / (2 * (1 - 2 * beta)), "psi_channel": -alpha / (2 * gamma)}
