"""Linear activation, K = M = 1: the level system, its eigenstructure and closed forms.

With D = Q - 2R + T (levels 0..L-1) the averaged error obeys

    dD/dα = η A4 D,   A4 = 2 A1 + e U,   U = ν e_1ᵀ,   ε_g = D^(1) / 2,

where A1 is the companion-type matrix (-1 on the superdiagonal, last row c_0..c_{L-1}), ν =
(ν_1..ν_L), e_1 picks level 1 and e = η (order 2) or 0 (order 1).  The homogeneous form needs no
normalisation of the spectrum: the inhomogeneous pieces of dR and dQ cancel because A1 T = -ν for
any teacher whose levels come from eigen-components (Cayley-Hamilton), and the η² term multiplies
2ε_g = D^(1) exactly.  (The paper writes T^(l) for ν_l in U; they agree on average.)

The functions below are the *formulas*: they take sequences of numbers of any ring (SymPy
symbols/Rationals for the proofs in this module, mpmath/arb numbers in ``solvers.theory.linear``) and
only add, multiply and divide them, so the same code is proved here and evaluated there.

Conventions: c = (c_0..c_{L-1}) with Π_k(λ - λ_k) = Σ_j c_j λ^j, c_L = 1; nu = (ν_1..ν_L);
T = (ν_0..ν_{L-1}); B = a A1 + ε U; its eigenvalues are called μ (the paper's λ_B).

Paper errata found while deriving (App. B):
- Eq. (32): eigenvectors of A1 are (1, λ_k, λ_k², ...) without (-1)^(i-1) (eigenvalue -λ_k).
- Eq. (44): the (1,1) entry of A4⁻¹ is c_1/(2c_0) + η/(2(η-2)) (general ν_1:
  c_1/(2c_0) + η/(2(ην_1-2))); the printed c_1/(2c_0) - η/(2-η) is twice too large in its
  second term.  The rest of the first column, η ν_l /(2(η-2)) and 1/(η-2) for l = 1, agrees.
- Eqs. (54)-(55) are right (for ν_1 = 1; in general ε - a becomes εν_1 - a).  They are the
  monic polynomial det(μ - B) rescaled so that c_B,0 = a c_0.
- S (App. B.2): the last diagonal entry is (-1)^(L-1)/(a^(L-2)(a-εν_1)) (the pattern of the
  rows above); the printed a^(L-1) is off by one power.  The printed S uses η where ε belongs.
- Eq. (56): with b = V_B⁻¹ T (Eq. 57) and eigenvectors normalised to first entry 1, the error is
  ε_g = ((1+σ_J²)/2) Σ_k b_k μ_k/(εν_1 - a) exp(η μ_k α): neither 1/(2L) nor exp(-2ημα)
  (the η → 0 limit has b_k = 1/L and μ_k/(εν_1-a) = λ_k, which reproduces Eq. 8).
"""
from __future__ import annotations

import sympy as sp

from .spectra import Spectrum, symbolic


# ---- the matrices ---------------------------------------------------------------------------

def a1_matrix(c):
    """A1 as nested lists: -1 on the superdiagonal, last row c_0..c_{L-1}."""
    L = len(c)
    A = [[0] * L for _ in range(L)]
    for l in range(L - 1):
        A[l][l + 1] = -1
    A[L - 1] = list(c)
    return A


def b_matrix(c, nu, a, eps):
    """B = a A1 + ε ν e_1ᵀ (nested lists); A4 = B(a=2, ε=e)."""
    L = len(c)
    B = [[a * x for x in row] for row in a1_matrix(c)]
    if L > 1:
        for l in range(L):
            B[l][1] = B[l][1] + eps * nu[l]
    return B


def a1_inverse(c):
    """Closed form of A1⁻¹ (paper Eq. 40): first row c_1/c_0 .. c_{L-1}/c_0, 1/c_0; -1 below the
    diagonal.  From A1 x = y: x_{l+1} = -y_l and c_0 x_0 = y_{L-1} + Σ_{k≥1} c_k y_{k-1}."""
    L = len(c)
    inv = [[0] * L for _ in range(L)]
    inv[0] = [c[k] / c[0] for k in range(1, L)] + [1 / c[0]]
    for k in range(1, L):
        inv[k][k - 1] = -1
    return inv


def a4_inverse(c, nu, T, eta):
    """Closed form of A4⁻¹ = (2 A1 + η ν e_1ᵀ)⁻¹ (corrected Eq. 44).

    Sherman-Morrison with A1⁻¹ ν = -T (Cayley-Hamilton: ν_L + Σ_{k≥1} c_k ν_k = -c_0 ν_0) and
    e_1ᵀ A1⁻¹ = -e_0ᵀ gives A4⁻¹ = A1⁻¹/2 + η T e_0ᵀ / (2(ην_1 - 2)).
    """
    L = len(c)
    inv = [[x / 2 for x in row] for row in a1_inverse(c)]
    for l in range(L):
        inv[l][0] = inv[l][0] + eta * T[l] / (2 * (eta * nu[0] - 2))
    return inv


# ---- eigenstructure of A1 and B ------------------------------------------------------------

def vandermonde_vector(x, L):
    """(1, x, ..., x^(L-1)): eigenvector of A1 for eigenvalue -x when x is a root of P."""
    return [x ** l for l in range(L)]


def shifted_charpoly(c, nu, a, eps):
    """Monic coefficients (γ_0..γ_L) of p(x) = det(x + B) = Π_k (x + μ_k).

    Matrix determinant lemma with e_1ᵀ(x + aA1)⁻¹ν = Σ_k p_k λ_k²/(x - aλ_k) and synthetic
    division of Π(x - aλ_k) = Σ_j c_j a^(L-j) x^j:

        γ_i = a^(L-i-1) [ a c_i + ε Σ_{j=i+1..L} c_j ν_{j-i+1} ],   i < L;   γ_L = 1.

    The bracket is the one of the paper's Eq. (55); ν_{L+1} (needed at i = 0) is eliminated by
    Cayley-Hamilton, Σ_{j≥1} c_j ν_{j+1} = -c_0 ν_1, so γ_0 = a^(L-1) c_0 (a - εν_1).
    """
    L = len(c)
    cc = list(c) + [1]
    gam = []
    for i in range(L):
        if i == 0:
            bracket = c[0] * (a - eps * nu[0])
        else:
            s = 0
            for j in range(i + 1, L + 1):
                s = s + cc[j] * nu[j - i]          # ν_{j-i+1} is nu[j-i]
            bracket = a * c[i] + eps * s
        gam.append(a ** (L - i - 1) * bracket)
    return gam + [1]


def mu_charpoly(gam):
    """Monic coefficients q_j of q(μ) = det(μ - B) from γ: q_j = (-1)^(L+j) γ_j."""
    L = len(gam) - 1
    return [(-1) ** ((L + j) % 2) * g for j, g in enumerate(gam)]


def paper_shifted_coefficients(c, nu, a, eps):
    """Eqs. (54)-(55) as printed (with ε - a → εν_1 - a): Σ_j c_B,j μ^j = 0 at eigenvalues μ."""
    L = len(c)
    cc = list(c) + [1]
    out = [a * c[0]]
    for j in range(1, L):
        s = 0
        for m in range(j + 1, L + 1):
            s = s + cc[m] * nu[m - j]
        out.append((-1) ** ((j + 1) % 2) * (a * c[j] + eps * s) / (a ** (j - 1) * (eps * nu[0] - a)))
    out.append((-1) ** ((L + 1) % 2) / (a ** (L - 2) * (eps * nu[0] - a)) if L >= 2 else None)
    return out


def b_eigenvector(mu, nu, a, eps, L):
    """Eigenvector of B for eigenvalue μ, first entry 1: v_1 = μ/(εν_1 - a),
    v_{l+1} = (εν_{l+1} v_1 - μ v_l)/a (rows 0..L-2 of B v = μ v)."""
    v = [1]
    if L > 1:
        v.append(mu / (eps * nu[0] - a))
    for l in range(1, L - 1):
        v.append((eps * nu[l] * v[1] - mu * v[l]) / a)
    return v


def similarity_S(nu, a, eps, L):
    """Lower-triangular S with B S = S C, C the companion matrix of q(μ) (+1 superdiagonal,
    last row -q_0..-q_{L-1}); S's rows are the coefficients of b_eigenvector in powers of μ:

        S_00 = 1,  S_ll = (-1)^l / (a^(l-1)(a - εν_1)),
        S_lj = (-1)^j ε ν_{l-j+1} / (a^j (a - εν_1))   (1 ≤ j < l),   S_l0 = 0 (l ≥ 1).
    """
    S = [[0] * L for _ in range(L)]
    S[0][0] = 1
    d = a - eps * nu[0]
    for l in range(1, L):
        S[l][l] = (-1) ** (l % 2) / (a ** (l - 1) * d)
        for j in range(1, l):
            S[l][j] = (-1) ** (j % 2) * eps * nu[l - j] / (a ** j * d)
    return S


def companion_mu(q):
    """Companion matrix with eigenvectors (1, μ, ..., μ^(L-1)): +1 superdiagonal, last row -q."""
    L = len(q) - 1
    C = [[0] * L for _ in range(L)]
    for l in range(L - 1):
        C[l][l + 1] = 1
    C[L - 1] = [-x for x in q[:L]]
    return C


def solve_lower(S, y):
    """Forward substitution S z = y for lower-triangular S (the paper's 'simple relation')."""
    z = []
    for i in range(len(y)):
        s = y[i]
        for j in range(i):
            if S[i][j] != 0:
                s = s - S[i][j] * z[j]
        z.append(s / S[i][i])
    return z


def lagrange_row(q, root):
    """Row of V⁻¹ (V_jk = μ_k^j) belonging to ``root``: coefficients of q(μ)/((μ-root) q'(root)).

    Synthetic division r_{L-1} = 1, r_{j-1} = q_j + root r_j; q'(root) = Σ_j r_j root^j.
    No Vandermonde matrix is inverted: this is the Lagrange basis polynomial of ``root``.
    """
    L = len(q) - 1
    r = [0] * L
    r[L - 1] = 1
    for j in range(L - 1, 0, -1):
        r[j - 1] = q[j] + root * r[j]
    deriv = 0
    for j in range(L - 1, -1, -1):
        deriv = deriv * root + r[j]
    return [x / deriv for x in r]


def error_amplitudes(q, roots, S, D0, nu, a, eps):
    """Eq. (57) done right: b = (S V_C)⁻¹ D0 with V_C⁻¹ from Lagrange rows, and the amplitudes
    ω_k = b_k v_1(μ_k) with v_1(μ) = μ/(εν_1 - a), so that D^(1)(α) = Σ_k ω_k exp(ημ_k α)."""
    z = solve_lower(S, D0)
    out_b, out_w = [], []
    for mu in roots:
        row = lagrange_row(q, mu)
        b = 0
        for rj, zj in zip(row, z):
            b = b + rj * zj
        out_b.append(b)
        out_w.append(b * mu / (eps * nu[0] - a))
    return out_b, out_w


# ---- SymPy views and proofs ---------------------------------------------------------------

def levels_of(spectrum: Spectrum):
    """(c_0..c_{L-1}, ν_1..ν_L, T = ν_0..ν_{L-1}) of a spectrum, exact."""
    L = spectrum.L
    c = list(spectrum.charpoly[:L])
    nu = [spectrum.nu(l) for l in range(1, L + 1)]
    T = [spectrum.nu(l) for l in range(L)]
    return c, nu, T


def A1(spectrum: Spectrum) -> sp.Matrix:
    return sp.Matrix(a1_matrix(levels_of(spectrum)[0]))


def A4(spectrum: Spectrum, eta) -> sp.Matrix:
    c, nu, _ = levels_of(spectrum)
    return sp.Matrix(b_matrix(c, nu, 2, eta))


def prove_a1_eigenpairs(L: int) -> bool:
    """A1 v_k = -λ_k v_k exactly for symbolic distinct λ_1..λ_L (v_k = Vandermonde column)."""
    s = symbolic(L)
    A = A1(s)
    for lam in s.eigenvalues:
        v = sp.Matrix(vandermonde_vector(lam, L))
        if any(sp.expand(x) != 0 for x in (A * v + lam * v)):
            return False
    return True


def prove_inverses(L: int, eta=sp.Symbol("eta", positive=True)) -> bool:
    """A1 · A1⁻¹ = I and A4 · A4⁻¹ = I exactly for symbolic λ's (closed forms above)."""
    s = symbolic(L)
    c, nu, T = levels_of(s)
    I1 = A1(s) * sp.Matrix(a1_inverse(c))
    I4 = A4(s, eta) * sp.Matrix(a4_inverse(c, nu, T, eta))
    return all(sp.simplify(x) == 0 for x in (I1 - sp.eye(L))) and \
        all(sp.simplify(sp.together(sp.expand(x))) == 0 for x in (I4 - sp.eye(L)))


def prove_shifted_charpoly(L: int, a=sp.Symbol("a", positive=True),
                           eps=sp.Symbol("epsilon", positive=True)) -> bool:
    """det(x + B) equals the closed-form γ's; Eqs. (54)-(55) are its rescaling; B S = S C."""
    s = symbolic(L)
    c, nu, _ = levels_of(s)
    B = sp.Matrix(b_matrix(c, nu, a, eps))
    x = sp.Symbol("x")
    det = sp.expand((x * sp.eye(L) + B).det())
    gam = shifted_charpoly(c, nu, a, eps)
    ok = sp.expand(det - sum(g * x ** j for j, g in enumerate(gam))) == 0
    q = mu_charpoly(gam)
    paper = paper_shifted_coefficients(c, nu, a, eps)
    ratio = paper[0] / q[0]
    ok &= all(sp.simplify(p - ratio * qq) == 0 for p, qq in zip(paper, q))
    S = sp.Matrix(similarity_S(nu, a, eps, L))
    C = sp.Matrix(companion_mu(q))
    ok &= all(sp.simplify(sp.together(sp.expand(e))) == 0 for e in (B * S - S * C))
    return bool(ok)
