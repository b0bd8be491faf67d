"""Linearisation around perfect learning, K = M erf (paper §5.2, App. C.5), derived.

Teacher ⟨T^(l)_nm⟩ = T_l δ_nm; fixed point R^(l) = Q^(l) = T_l δ.  On the diagonal-S_M
invariant subspace (r, s, q, c) (see :mod:`derive.plateau`) the Jacobian of the hierarchy is

    J = Gn ⊗ N + H ⊗ (t e_1ᵀ),     N = -A1 (next level, closed),  t = (T_1..T_L)ᵀ,

variable-major (r^(0..L-1), s, q, c).  With T_1 = 1 (the power-law normalisation) the common
prefactor is a = 2η/(√3 π M) (the paper's Eq. 118 prints 2√3/(3πM) without η); then
-Gn/a = G of Eq. (119): its eigenvalues 2 ± √3 and 1 ± √3/2 give, through A1's eigenvalues -λ_k,
the groups -a(2±√3)λ_k and -a(1±√3/2)λ_k of G ⊗ A1.  The rank-one term H ⊗ U moves the
(1±√3/2) groups (their eigenvectors have the r, s components the U-term acts on), while the
(2±√3) groups (pure q/c directions) stay exact eigenvalues of the full Jacobian — checked in
tests/test_asymptotic.py for several M and L.

First-order ε_g (Eq. 121, confirmed at T_1 = 1):
    ε_g ≈ (1/(6π)) (2√3 q - 4√3 r + 3(M-1) c - 6(M-1) s)   (level-1 perturbations),
computed here from the hierarchy's ε_g rather than transcribed.
"""
from __future__ import annotations

import sympy as sp

from .hierarchy import Hierarchy, SystemKey
from .plateau import _ansatz_map, _assemble, linearisation_blocks, r, s, q, c, T, D


def prefactor(eta, M, T1=1):
    """a = 2η / (π M sqrt(1 + 2 T_1)): the 1/sqrt((1+Q)(1+T) - R²) of I3 at R = Q = T."""
    return 2 * sp.sympify(eta) / (sp.pi * M * sp.sqrt(1 + 2 * sp.sympify(T1)))


def blocks(M, T1=1, order: int = 1):
    """(Gn, H) 4x4 at the perfect-learning point with level-1 teacher T_1."""
    T1 = sp.sympify(T1)
    Gn, h = linearisation_blocks(M, (T1, 0, T1, 0), (T1, 0), order)
    # next-level fixed-point profile: R^(l+1) = Q^(l+1) = T^(l+1) = T_{l+1} δ
    H = h((1, 0, 1, 0, 1, 0))
    return sp.simplify(Gn), sp.simplify(H)


def asymptotic_matrix(M, T_levels, c_coeffs, eta=None, order: int = 1):
    """The 4L x 4L matrix of Eq. (118) (prefactor included), variable-major (r, s, q, c)."""
    Gn, H = blocks(M, T_levels[0], order)
    return _assemble(Gn, [(H, list(T_levels))], c_coeffs, eta)


def G_paper(M, T1=1):
    """-Gn / a: the matrix whose eigenvalues are the group constants (2±√3, 1±√3/2 at T_1=1)."""
    Gn, _ = blocks(M, T1)
    eta = sp.Symbol("eta", positive=True)
    return sp.simplify(-Gn / prefactor(eta, M, T1))


def eps_gradient(M, T1=1):
    """∂ε_g/∂(r, s, q, c) at level 1, at the perfect-learning point (Eq. 121)."""
    h = Hierarchy(SystemKey("erf", M, M))
    sub = _ansatz_map(h.v1, M, r, s, q, c, T, D)
    eps = h.eps_g.xreplace(sub)
    at = {r: T1, s: 0, q: T1, c: 0, T: T1, D: 0}
    return [sp.simplify(sp.diff(eps, v).xreplace(at)) for v in (r, s, q, c)]
