"""Power-law random features under one-pass SGD: the exact pieces.

1. The batch factor of the expected-loss recursion.  For x ~ N(0, D) the Gaussian fourth
   moment E[x xᵀ A x xᵀ] = 2DAD + tr(AD) D (Isserlis) is checked here on a small example by
   expanding the expectation term by term; with it, B fresh samples move the mode content
   S = λ E⟨u, θ − θ*⟩² by the factor a(λ) = 1 − 2γBλ + γ²B(B+1)λ² and feed it 2γ²Bλ² p.

2. The compute-optimal exponents.  At large r and d the loss is (up to constants) the largest of
   a few power laws T = r^(−a) d^(−b); at compute f = B d r the optimum sits where two of them
   cross.  With T₁ = T₂ at r = f/(Bd):

       ξ = (a₁ − a₂) / ((a₁ − b₁) − (a₂ − b₂))     (d* ~ f^ξ),     η = a₁ − (a₁ − b₁) ξ.

   The terms (γ scales like d^(2α−1) below the line 2α = 1, so τ = γr carries that power of d):
   F_pp (population, exponent g = (2α+2β−1)/(2α) in τ), F_ac (embedding distortion,
   d⁻¹ τ^(−(1−1/(2α))), 2β > 1), F_0 (capacity: d^(−2α) for 2β > 1, d^(1−2α−2β) for 2β < 1),
   and the SGD-noise term γ τ^(−(2−1/(2α))).  Each phase names its two terms; the results are
   exact rational functions of α, β.
"""
from __future__ import annotations

from functools import lru_cache

import sympy as sp

alpha, beta = sp.symbols("alpha beta", positive=True)
gam, lam, B = sp.symbols("gamma lambda B", positive=True)

PHASES = ("Ia", "Ib", "Ic", "II", "III", "IVa", "IVb")


def fourth_moment_check(n: int = 2) -> bool:
    """E[x xᵀ A x xᵀ] = 2DAD + tr(AD)D for x ~ N(0, diag(σ)) in n dimensions, A symmetric
    symbolic, with the expectation taken monomial by monomial (E x_i⁴ = 3σ_i², E x_i² x_j² =
    σ_iσ_j, odd moments vanish)."""
    sig = sp.symbols(f"s0:{n}", positive=True)
    A = sp.Matrix(n, n, lambda i, j: sp.Symbol(f"A{min(i, j)}{max(i, j)}"))
    D = sp.diag(*sig)
    x = sp.symbols(f"x0:{n}")
    X = sp.Matrix(x)
    M = (X * X.T * A * X * X.T).applyfunc(sp.expand)

    def expect(expr):
        out = 0
        for mono, coeff in sp.Poly(expr, *x).terms():
            term = coeff
            for i, k in enumerate(mono):
                if k % 2:
                    term = 0
                    break
                term *= sp.factorial2(k - 1) * sig[i] ** (k // 2)
            out += term
        return sp.expand(out)

    E = M.applyfunc(expect)
    return sp.simplify(E - (2 * D * A * D + (A * D).trace() * D)) == sp.zeros(n, n)


def batch_factor():
    """a(λ) from the mean and the Gaussian fourth moment of B summed samples, on one mode:
    E(1 − γΣφᵢ²)² restricted to the mode's own part (the tr(AD)D piece of the fourth moment
    belongs to the p-coupling, not to a): B(B−1)λ² from pairs, 2λ² per sample."""
    mean = 1 - 2 * gam * B * lam
    second = gam ** 2 * (B * (B - 1) * lam ** 2 + B * 2 * lam ** 2)
    return sp.expand(mean + second)


def terms():
    """The asymptotic terms as (a, b) in T = r^(−a) d^(−b), by regime of the step."""
    g = (2 * alpha + 2 * beta - 1) / (2 * alpha)
    kap = 2 - 1 / (2 * alpha)
    s = 2 * alpha - 1            # γ ∝ d^(2α−1) below the line (0 above)
    above = {"F_pp": (g, 0), "F_ac": (1 - 1 / (2 * alpha), 1), "F_0_hi": (0, 2 * alpha),
             "F_0_lo": (0, 2 * alpha + 2 * beta - 1), "K": (kap, 0)}
    below = {"F_pp": (g, s * g), "F_0_hi": (0, 2 * alpha),
             "F_0_lo": (0, 2 * alpha + 2 * beta - 1), "K": (kap, s * (kap - 1))}
    return above, below


#: each phase: which regime of γ, and which two terms trade off (the one that grows with d at
#: fixed f first)
PAIRS = {"Ia": ("above", "F_pp", "F_0_lo"), "II": ("above", "F_pp", "F_ac"),
         "III": ("above", "K", "F_ac"), "Ib": ("below", "F_pp", "F_0_lo"),
         "Ic": ("below", "F_pp", "F_0_hi"), "IVa": ("below", "F_pp", "K"),
         "IVb": ("below", "K", "F_0_hi")}


@lru_cache(maxsize=None)
def exponents(phase: str) -> tuple:
    """(ξ, η) of a phase as exact expressions in α, β."""
    if phase not in PAIRS:
        raise ValueError(f"unknown phase {phase!r} (allowed: {', '.join(PHASES)})")
    above, below = terms()
    regime, t1, t2 = PAIRS[phase]
    tab = above if regime == "above" else below
    (a1, b1), (a2, b2) = tab[t1], tab[t2]
    xi = sp.simplify(sp.together((a1 - a2) / ((a1 - b1) - (a2 - b2))))
    eta = sp.simplify(sp.together(a1 - (a1 - b1) * xi))
    return xi, eta


#: α where the noise term's d-exponent at fixed f, 4 − 2α − 1/α, changes sign (IVa | IVb)
ALPHA_IV = 1 - 1 / sp.sqrt(2)


def phase_of(a, b) -> str | None:
    """The phase of α, β (SymPy numbers are compared exactly, Python numbers as floats); None
    below the line α + β = ½ (no scaling law) and on a boundary."""
    if isinstance(a, sp.Basic) or isinstance(b, sp.Basic):
        a, b = sp.sympify(a), sp.sympify(b)
        half, quarter, iv = sp.Rational(1, 2), sp.Rational(1, 4), ALPHA_IV
    else:
        a, b = float(a), float(b)
        half, quarter, iv = 0.5, 0.25, float(ALPHA_IV)
    if a + b <= half:
        return None
    if a == half or b == half or a == quarter or a == b or a == iv:
        return None
    if a > half:
        if b < half:
            return "Ia"
        return "II" if b < a else "III"
    if b < half:
        return "Ib" if a > quarter else None     # α < ¼, β < ½: no phase stated
    if a < quarter:
        return "Ic"
    return "IVa" if bool(a < iv) else "IVb"
