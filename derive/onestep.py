"""One large gradient step on the first layer, then ridge on the readout: the exact layer.

Model (Cui, Pesce, Dandi, Krzakala, Lu, Zdeborová, Loureiro, ICML 2024, arXiv:2402.04980):
x ~ N(0, I_d), y = σ⋆(θ⋆·x) (+ label noise of variance Δ), width p = β d, first-layer rows on
the unit sphere, readout a_i = 1/√p.  One step on n0 = α0 d samples,
w_i ← w_i + η (1/n0) Σ_μ (y_μ − f(x_μ)) σ'(w_i·x_μ) x_μ   (η is the step on the rows, "η_eff"),
then ridge Σ_μ (y_μ − w·σ(W x_μ)/√p)² + λ‖w‖² on n = α d fresh samples.

Asymptotically the trained rows are a spiked random-features (sRF) map
φ_i(x) = σ(√c w_i·x + r κ), κ = v̂·x, θ⋆ = γ v̂ + √(1−γ²) ζ̂ (Result 3.1), with

    ‖u‖² = μ1⋆² + (m2⋆ + Δ)/α0,   γ = μ1⋆/‖u‖,   r = η μ1 ‖u‖,   c = 1 + η² (m2⋆ + Δ) v_σ'/α0,

μ1 = E σ'(z), v_σ' = Var σ'(z), μ1⋆ = E z σ⋆(z), m2⋆ = E σ⋆(z)².  Derivation in one line each:
u = (1/n0) Σ y x concentrates on μ1⋆ θ⋆ plus an isotropic part of squared norm E y²/α0; the mean
μ1 of σ' carries every row by η μ1 u (the spike); the rest σ' − μ1 has no first Hermite
component when σ is odd (σ' even), so it only adds an isotropic part of squared norm
η² E y² v_σ'/α0 to each row.  Even σ or even σ⋆ add further spikes: outside this theory.

Everything here is exact (SymPy; no floats).  The numeric layer (`solvers/theory/onestep/`)
evaluates these expressions at its own precision and uses quadrature where no closed form
exists (tanh); the tests hold one against the other.
"""
from __future__ import annotations

from functools import lru_cache

import sympy as sp

z, xi, kappa, x = sp.symbols("z xi kappa x", real=True)
r, a0 = sp.symbols("r alpha_0", nonnegative=True)
c, beta, eta = sp.symbols("c beta eta", positive=True)
Delta = sp.Symbol("Delta", nonnegative=True)
mu1, v1, mu1s, m2s = sp.symbols("mu_1 v_sigma' mu_1star m_2star", real=True)

#: activations with an exact expression (tanh has one, but no closed Gaussian moments)
ACTIVATIONS = ("linear", "erf", "tanh", "sin", "sin2", "he3", "cubic")
#: names people try that are not odd (the theory needs odd σ, σ⋆): refused with this reason
NOT_ODD = {"relu": "relu is not odd", "square": "z² is even", "quadratic": "z² is even",
           "he2": "He2 is even", "abs": "|z| is even", "cos": "cos is even",
           "softplus": "softplus is not odd", "sigmoid": "sigmoid is not odd (σ(0) = 1/2)",
           "gelu": "gelu is not odd"}


def activation(name: str):
    """σ(z) as a SymPy expression.  erf means erf(z/√2) (so that E σ'(z)² is finite and σ
    maps N(0,1) into (−1, 1) as elsewhere in the toolkit); he3 = (z³ − 3z)/√6."""
    exprs = {"linear": z, "erf": sp.erf(z / sp.sqrt(2)), "tanh": sp.tanh(z), "sin": sp.sin(z),
             "sin2": sp.sin(2 * z), "he3": (z ** 3 - 3 * z) / sp.sqrt(6), "cubic": z ** 3}
    if name in exprs:
        return exprs[name]
    if name in NOT_ODD:
        raise ValueError(f"activation {name!r}: {NOT_ODD[name]}; the one-step theory needs odd "
                         f"activations (allowed: {', '.join(ACTIVATIONS)})")
    raise ValueError(f"unknown activation {name!r} (allowed: {', '.join(ACTIVATIONS)})")


def is_odd(expr, var=z) -> bool:
    """Exact parity check σ(−z) = −σ(z)."""
    return sp.simplify(expr.subs(var, -var) + expr) == 0


def _gauss(expr, var=z):
    """E over var ~ N(0, 1), exact (SymPy integration; the named activations all close)."""
    return sp.simplify(sp.integrate(expr * sp.exp(-var ** 2 / 2) / sp.sqrt(2 * sp.pi),
                                    (var, -sp.oo, sp.oo)))


# E erf(z/√2)² = (2/π) asin(1/2) = 1/3 (arcsine law); SymPy does not integrate erf² itself
_KNOWN_M2 = {"erf": sp.Rational(1, 3)}


def _closed_constants():
    """μ1, Var σ', μ1⋆ (= μ1 by Stein), E σ² written out by hand (Gaussian moments, the
    characteristic function E e^{ikz} = e^{−k²/2}, the arcsine law); `gaussian_constants_by_
    integration` derives the same numbers with SymPy (the tests hold one against the other)."""
    e = sp.E
    sq3, pi = sp.sqrt(3), sp.pi
    return {
        "linear": (1, 0, 1, 1),
        "erf": (1 / sp.sqrt(pi), 2 / (pi * sq3) - 1 / pi, 1 / sp.sqrt(pi), sp.Rational(1, 3)),
        "sin": (e ** sp.Rational(-1, 2), (1 + e ** -2) / 2 - e ** -1, e ** sp.Rational(-1, 2),
                (1 - e ** -2) / 2),
        "sin2": (2 * e ** -2, 2 + 2 * e ** -8 - 4 * e ** -4, 2 * e ** -2, (1 - e ** -8) / 2),
        "he3": (0, 3, 0, 1),
        "cubic": (3, 18, 3, 15),
    }


@lru_cache(maxsize=None)
def gaussian_constants(name: str) -> dict | None:
    """Exact μ1 = E σ', v_σ' = Var σ', μ1⋆ = E zσ, m2 = E σ² of a named activation, or None
    when they have no closed form (tanh: the numeric layer integrates)."""
    activation(name)
    table = _closed_constants()
    if name not in table:
        return None
    return dict(zip(("mu1", "var_dsigma", "mu1_star", "m2"), map(sp.sympify, table[name])))


def gaussian_constants_by_integration(name: str) -> dict:
    """The same four constants by SymPy integration (slow: seconds per activation)."""
    s = activation(name)
    ds = sp.diff(s, z)
    m1 = _gauss(ds)
    second = _gauss(ds ** 2)
    m2 = _KNOWN_M2.get(name)
    if m2 is None:
        m2 = _gauss(s ** 2)
    return {"mu1": m1, "var_dsigma": sp.simplify(second - m1 ** 2),
            "mu1_star": sp.simplify(_gauss(z * s)), "m2": sp.simplify(m2)}


def srf_parameters():
    """γ, r, c and ‖u‖ of Result 3.1 in the symbols (μ1, v_σ', μ1⋆, m2⋆, α0, η, Δ).
    α0 → ∞ gives γ = sign μ1⋆, c = 1; α0 → 0 (no samples, no step) is the RF limit
    γ = r = 0, c = 1 only when η → 0 with it: the numeric layer treats α0 = 0 as "no step"."""
    unorm = sp.sqrt(mu1s ** 2 + (m2s + Delta) / a0)
    return {"unorm": unorm, "gamma": mu1s / unorm, "r": eta * mu1 * unorm,
            "c": 1 + eta ** 2 * (m2s + Delta) * v1 / a0}


@lru_cache(maxsize=None)
def conditional_coefficients(name: str) -> dict | None:
    """μ0(κ) = E_ξ σ(rκ + √c ξ), μ1(κ) = E_ξ σ'(rκ + √c ξ) and, where closed, E_ξ σ² (key
    "second"), exact; None for tanh.  erf: Gaussian smoothing of erf is an erf,
    E_ξ erf((a + √c ξ)/√2) = erf(a/√(2(1+c)))."""
    a = r * kappa
    if name == "linear":
        return {"mu0": a, "mu1": sp.Integer(1), "second": a ** 2 + c}
    if name == "erf":
        return {"mu0": sp.erf(a / sp.sqrt(2 * (1 + c))),
                "mu1": sp.sqrt(2 / sp.pi) / sp.sqrt(1 + c) * sp.exp(-a ** 2 / (2 * (1 + c)))}
    if name in ("sin", "sin2"):
        # E exp(ik(a + √c ξ)) = exp(ika − k²c/2): real and imaginary parts; sin² = (1 − cos 2ku)/2
        k = 1 if name == "sin" else 2
        damp = sp.exp(-k ** 2 * c / 2)
        return {"mu0": sp.sin(k * a) * damp, "mu1": k * sp.cos(k * a) * damp,
                "second": (1 - sp.cos(2 * k * a) * sp.exp(-2 * k ** 2 * c)) / 2}
    if name in ("he3", "cubic"):
        # polynomials: E ξ^j are the Gaussian moments (j − 1)!! for even j
        def smooth(e):
            poly = sp.Poly(sp.expand(e.subs(z, a + sp.sqrt(c) * xi)), xi)
            return sp.expand(sum(coef * (sp.factorial2(j - 1) if j % 2 == 0 else 0)
                                 for (j,), coef in poly.terms()))
        s = activation(name)
        return {"mu0": smooth(s), "mu1": smooth(sp.diff(s, z)), "second": smooth(s ** 2)}
    activation(name)
    return None


def target_functions(name: str, g=sp.Symbol("gamma", nonnegative=True)):
    """h(κ) = E σ⋆(γκ + ρξ), h1 = E ξ σ⋆(γκ + ρξ) = ρ E σ⋆'(...), h2 = E σ⋆² (ρ = √(1−γ²)),
    exact where conditional_coefficients closes (the same smoothing with r → γ, c → ρ²)."""
    cc = conditional_coefficients(name)
    if cc is None:
        return None
    rho2 = 1 - g ** 2
    sub = {r: g, c: rho2}
    out = {"h": cc["mu0"].subs(sub), "h1": sp.sqrt(rho2) * cc["mu1"].subs(sub)}
    if "second" in cc:
        out["h2"] = cc["second"].subs(sub)
    return out


# ---- Marchenko–Pastur ------------------------------------------------------------------------

def mp_edges():
    """(a, b) = ((1 − √β)², (1 + √β)²): support of the eigenvalues of W0 W0ᵀ (p × p, rows of
    unit norm, β = p/d), whose law MP(β) has mean 1 and an atom 1 − 1/β at 0 when β > 1."""
    return (1 - sp.sqrt(beta)) ** 2, (1 + sp.sqrt(beta)) ** 2


def mp_density():
    """The continuous part ρ(x) = √((b − x)(x − a))/(2πβx) on [a, b] (mass min(1, 1/β))."""
    lo, hi = mp_edges()
    return sp.sqrt((hi - x) * (x - lo)) / (2 * sp.pi * beta * x)


def mp_moment(k: int):
    """E x^k under MP(β) (atom included): the Narayana polynomial Σ_j N(k, j) β^(j−1)."""
    if k == 0:
        return sp.Integer(1)
    return sp.expand(sum(sp.binomial(k, j) * sp.binomial(k, j - 1) / k * beta ** (j - 1)
                         for j in range(1, k + 1)))


def mp_stieltjes_equation(m=sp.Symbol("m"), w=sp.Symbol("w")):
    """P(m, w) = 0 for the Stieltjes transform m(w) = E 1/(x − w) of MP(β), atom included:
    β w m² + (w + β − 1) m + 1 = 0 (the branch with m ~ −1/w at infinity)."""
    return beta * w * m ** 2 + (w + beta - 1) * m + 1


# ---- the random-features limit: Mei & Montanari (arXiv:1908.05355), Theorem 1 ------------------

def mei_montanari():
    """E0, E1, E2 (polynomials in χ, ζ, ψ1, ψ2) of the RF ridge asymptotics: with
    ζ = μ1/μ⋆, λ̄ = λ_MM/μ⋆², ν1, ν2 the fixed point at ξ = i√(ψ1ψ2λ̄) and χ = ν1ν2,
    test error = F1² E1/E0 + (τ² + F⋆²) E2/E0 + F⋆²."""
    chi, zeta, p1, p2 = sp.symbols("chi zeta psi_1 psi_2")
    E0 = (-chi ** 5 * zeta ** 6 + 3 * chi ** 4 * zeta ** 4
          + (p1 * p2 - p2 - p1 + 1) * chi ** 3 * zeta ** 6 - 2 * chi ** 3 * zeta ** 4
          - 3 * chi ** 3 * zeta ** 2 + (p1 + p2 - 3 * p1 * p2 + 1) * chi ** 2 * zeta ** 4
          + 2 * chi ** 2 * zeta ** 2 + chi ** 2 + 3 * p1 * p2 * chi * zeta ** 2 - p1 * p2)
    E1 = p2 * chi ** 3 * zeta ** 4 - p2 * chi ** 2 * zeta ** 2 + p1 * p2 * chi * zeta ** 2 - p1 * p2
    E2 = (chi ** 5 * zeta ** 6 - 3 * chi ** 4 * zeta ** 4 + (p1 - 1) * chi ** 3 * zeta ** 6
          + 2 * chi ** 3 * zeta ** 4 + 3 * chi ** 3 * zeta ** 2 + (-p1 - 1) * chi ** 2 * zeta ** 4
          - 2 * chi ** 2 * zeta ** 2 - chi ** 2)
    return {"symbols": (chi, zeta, p1, p2), "E0": E0, "E1": E1, "E2": E2}


# ---- bounds ----------------------------------------------------------------------------------

def bound_upper(h2, e_hmu0, e_mu00):
    """(26): λ → ∞ keeps only the free mean direction m = E[h μ0]/E[μ0²]:
    ε = E σ⋆² − E[h μ0]²/E[μ0²]."""
    return h2 - e_hmu0 ** 2 / e_mu00


def bound_lower(g00, g01, g11, b0, b1, s2):
    """(27): min over (a, b) of E(σ⋆ − a μ0(z) − b z μ1(z))², a 2 × 2 least-squares problem with
    Gram matrix [[g00, g01], [g01, g11]] and right-hand side (b0, b1); s2 = E σ⋆²."""
    det = g00 * g11 - g01 ** 2
    return s2 - (g11 * b0 ** 2 - 2 * g01 * b0 * b1 + g00 * b1 ** 2) / det
