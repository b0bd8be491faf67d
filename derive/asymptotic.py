"""Linearisation around perfect learning, K = M erf (paper §5.2, App. C.5), derived; and for
any variant, whether perfect learning is a fixed point (:func:`perfect_learning_residual`).

Teacher ⟨T^(l)_nm⟩ = T_l δ_nm; fixed point R^(l) = Q^(l) = T_l δ.  On the diagonal-S_M
invariant subspace (r, s, q, c) (see :mod:`derive.plateau`) the Jacobian of the hierarchy is

    J = Gn ⊗ N + H ⊗ (t e_1ᵀ),     N = -A1 (next level, closed),  t = (T_1..T_L)ᵀ,

variable-major (r^(0..L-1), s, q, c).  With T_1 = 1 (the power-law normalisation) the common
prefactor is a = 2η/(√3 π M) (the paper's Eq. 118 prints 2√3/(3πM) without η); then
-Gn/a = G of Eq. (119) at M = 2 and :func:`G_triv` for any M.  Its eigenvalues
1 - √3/2, 1 + (M-1)√3/2 ((r, s) block) and 2 - √3, 2 + (M-1)√3 ((q, c) block) give, through
A1's eigenvalues -λ_k, the groups -a g λ_k of G ⊗ A1.  The rank-one term H ⊗ U moves the two
(r, s) groups, while the two (q, c) groups stay exact eigenvalues of the full Jacobian.

The ansatz only sees permutation-symmetric perturbations.  The full per-level linearisation
splits over the S_M irreducibles (see the section "general M" below); the exact groups of the
full Jacobian, per mode k, are (:func:`exact_groups`)
    2 + (M-1)√3 (×1),  2 - √3 (×M(M-1)/2),  2 + (M-2)√3/2 (×(M-1)),  1 - √3/2 (×M(M-2)),
the third one being the "-2aλ_k" group at M = 2 (the standard block).

First-order ε_g (Eq. 121, confirmed at T_1 = 1):
    ε_g ≈ (1/(6π)) (2√3 q - 4√3 r + 3(M-1) c - 6(M-1) s)   (level-1 perturbations),
computed here from the hierarchy's ε_g rather than transcribed.
"""
from __future__ import annotations

import sympy as sp

from .hierarchy import Hierarchy, SystemKey
from .plateau import ansatz_map, linearisation_blocks, r, s, q, c, T, D


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


def G_paper(M, T1=1):
    """-Gn / a from the hierarchy: equals :func:`G_triv` at T_1 = 1 (Eq. 119 at M = 2)."""
    Gn, _ = blocks(M, T1)
    eta = sp.Symbol("eta", positive=True)
    return sp.simplify(-Gn / prefactor(eta, M, T1))


def eps_gradient(M, T1=1):
    """∂ε_g/∂(r, s, q, c) at level 1, at the perfect-learning point (Eq. 121)."""
    h = Hierarchy(SystemKey("erf", M, M))
    sub = ansatz_map(h.v1, M, r, s, q, c, T, D)
    eps = h.eps_g.xreplace(sub)
    at = {r: T1, s: 0, q: T1, c: 0, T: T1, D: 0}
    return [sp.simplify(sp.diff(eps, v).xreplace(at)) for v in (r, s, q, c)]


# -- general M: the full per-level linearisation and its S_M blocks ------------------------------
#
# At perfect learning the per-level Jacobian is  J = Gf ⊗ N + Hf ⊗ (t e_1ᵀ)  on the whole state
# (R_in, Q_ij) of a level, Gf = ∂(level l)/∂(level l+1) and Hf = ∂/∂(level 1) of the
# next-level terms at the profile R = Q = T = δ.  Both commute with simultaneous permutations of
# students and teachers, so they are block diagonal over the S_M irreducibles in the state:
#   trivial [M]       4 copies (r, s, q, c: the ansatz above), dimension 1
#   standard [M-1,1]  5 copies (3 in R, 2 in Q; at M = 2 only 2 + 1), dimension M-1
#   [M-2,1,1]         1 copy (antisymmetric zero-row-sum part of R), dimension (M-1)(M-2)/2
#   [M-2,2]           2 copies (symmetric zero-diagonal zero-row-sum parts of R and Q),
#                     dimension M(M-3)/2
# (M² + M(M+1)/2 = 4 + 5(M-1) + (M-1)(M-2)/2 + 2·M(M-3)/2 for M >= 3).  For every block,
# a group constant g (eigenvalue of -G_ρ/a) gives exact Jacobian eigenvalues -a g λ_k for all k
# when a left eigenvector u of G_ρ has uᵀ H_ρ = 0 (then u ⊗ w_k is a left eigenvector of J for
# every left eigenvector w_k of N); otherwise the rank-one level coupling moves that group.
#
# Every entry of (M/η)·G_ρ in the bases below is a sum over one summation index (a student or a
# teacher) of terms whose value at perfect learning depends only on which indices coincide, so
# it is affine in M: the closed forms G_triv, G_std are fitted at M = 2, 3 (M = 3, 4 for the
# standard block, whose basis degenerates at M = 2) and checked against the hierarchy at M = 4
# (tests/test_asymptotic_groups.py); M may be a SymPy symbol in them.

S3 = sp.sqrt(3)


def G_triv(M):
    """-G/a on (r, s, q, c) at T_1 = 1, any M (Eq. 119 at M = 2).  Block lower triangular:
    the (r, s) block has eigenvalues 1 - √3/2, 1 + (M-1)√3/2, the (q, c) block 2 - √3, 2 + (M-1)√3."""
    M = sp.sympify(M)
    h = S3 / 2
    return sp.Matrix([[1, (M - 1) * h, 0, 0],
                      [h, 1 + (M - 2) * h, 0, 0],
                      [-2, -(M - 1) * S3, 2, (M - 1) * S3],
                      [-S3, -2 - (M - 2) * S3, S3, 2 + (M - 2) * S3]])


def G_std(M):
    """-G/a on the standard block (M >= 3), basis of :func:`irrep_bases` (R_ii = v_i,
    R_in = v_i, R_in = v_n (i != n), Q_ii = v_i, Q_ij = v_i + v_j (i != j)).  Eigenvalues
    1 - √3/2 (twice), 1 + (M-1)√3/2, 2 - √3, 2 + (M-2)√3/2."""
    M = sp.sympify(M)
    h = S3 / 2
    return sp.Matrix([[1, -h, (M - 1) * h, 0, 0],
                      [0, 1 - h, 0, 0, 0],
                      [h, -h, 1 + (M - 2) * h, 0, 0],
                      [-2, -(M - 1) * S3, S3, 2, (M - 2) * S3],
                      [-h, -1 - (M - 2) * h, -1 + S3, h, 2 + (M - 4) * h]])


def group_constants(M):
    """Eigenvalues of G_triv(M): the paper's four group constants generalised to any M."""
    M = sp.sympify(M)
    return {"rs": (1 - S3 / 2, 1 + (M - 1) * S3 / 2), "qc": (2 - S3, 2 + (M - 1) * S3)}


def exact_groups(M):
    """{g: multiplicity}: constants g with -a g λ_k an exact eigenvalue of the full Jacobian for
    every mode k (T_1 = 1, order 1), multiplicity per k.  Concrete integer M >= 2.

      2 + (M-1)√3    trivial (q, c)                      1
      2 - √3         trivial, standard, [M-2,2]           M(M-1)/2
      2 + (M-2)√3/2  standard                            M - 1       (= 2 at M = 2)
      1 - √3/2       standard, [M-2,1,1], [M-2,2]         M(M-2)      (none at M = 2)
    The remaining constants 1 - √3/2 (trivial, and one of the two standard ones) and
    1 + (M-1)√3/2 (trivial, standard) are moved by the rank-one level coupling.
    """
    M = int(M)
    if M < 2:
        raise ValueError(f"perfect learning groups need M >= 2, got {M}")
    out = {2 + (M - 1) * S3: 1, 2 - S3: M * (M - 1) // 2}
    g = 2 + (M - 2) * S3 / 2
    out[g] = out.get(g, 0) + (M - 1)
    if M >= 3:
        out[1 - S3 / 2] = M * (M - 2)
    return out


def level_blocks(M):
    """Exact (Gf, Hf) (n_state x n_state, η symbolic) of the per-level Jacobian at perfect
    learning with T_1 = 1, order 1, from the hierarchy (see the comment above)."""
    h = Hierarchy(SystemKey("erf", M, M))
    at, nxt_at = {}, {}
    for i in range(M):
        for n in range(M):
            at[h.v1.R[i, n]] = at[h.v1.Q[i, n]] = at[h.v1.T[i, n]] = int(i == n)
            nxt_at[h.nxt.R[i, n]] = nxt_at[h.nxt.Q[i, n]] = nxt_at[h.nxt.T[i, n]] = int(i == n)
    ns = len(h.v1.state)
    profile = [nxt_at[y] for y in h.nxt.state + h.nxt.teacher]
    Gf = h.a[:, :ns].xreplace(at)
    F = h.a * sp.Matrix(profile)
    Hf = F.jacobian(sp.Matrix(h.v1.state)).xreplace(at)
    return Gf, Hf


def irrep_bases(M):
    """{block: [columns]}: one vector per copy of each S_M irreducible, all copies built from
    the same weight (v = e_1 - e_2, the 3-cycle A, the 4-cycle X), so that an equivariant
    map acts on them by a small matrix."""
    iq = [(i, j) for i in range(M) for j in range(i, M)]

    def vec(R, Q):
        return sp.Matrix([R(i, m) for i in range(M) for m in range(M)] + [Q(i, j) for i, j in iq])
    z = lambda i, j: 0                                         # noqa: E731
    d = lambda i, j: int(i == j)                               # noqa: E731
    od = lambda i, j: int(i != j)                              # noqa: E731
    v = [1, -1] + [0] * (M - 2)
    out = {"triv": [vec(d, z), vec(od, z), vec(z, d), vec(z, od)]}
    std = [vec(lambda i, j: v[i] * d(i, j), z), vec(lambda i, j: v[i] * od(i, j), z),
           vec(lambda i, j: v[j] * od(i, j), z), vec(z, lambda i, j: v[i] * d(i, j)),
           vec(z, lambda i, j: (v[i] + v[j]) * od(i, j))]
    # at M = 2 the row and column patterns coincide up to sign and Q_12 = v_1 + v_2 = 0
    out["std"] = std if M >= 3 else [std[0], std[1], std[3]]
    if M >= 3:
        A = {(0, 1): 1, (1, 2): 1, (2, 0): 1}
        out["[M-2,1,1]"] = [vec(lambda i, j: A.get((i, j), 0) - A.get((j, i), 0), z)]
    if M >= 4:
        X = {(0, 1): 1, (2, 3): 1, (0, 2): -1, (1, 3): -1}
        Xf = lambda i, j: X.get((min(i, j), max(i, j)), 0)     # noqa: E731
        out["[M-2,2]"] = [vec(Xf, z), vec(z, Xf)]
    return out


def irrep_blocks(M, Gf=None, Hf=None):
    """{block: (G_ρ, H_ρ)} with G_ρ = -(Gf restricted)/a and H_ρ = (Hf restricted)/a, exact;
    raises AssertionError if a basis is not invariant (it must be, by equivariance)."""
    if Gf is None:
        Gf, Hf = level_blocks(M)
    eta = sp.Symbol("eta", positive=True)
    a = prefactor(eta, M)
    out = {}
    for name, cols in irrep_bases(M).items():
        E = sp.Matrix.hstack(*cols)
        P = (E.T * E).inv() * E.T
        blocks_ = []
        for X in (Gf, Hf):
            B = (P * X * E).applyfunc(sp.radsimp)
            if (X * E - E * B).applyfunc(sp.simplify) != sp.zeros(*E.shape):
                raise AssertionError(f"block {name} is not invariant at M = {M}")
            blocks_.append(B)
        out[name] = ((-blocks_[0] / a).applyfunc(lambda e: sp.expand(sp.radsimp(e))),
                     (blocks_[1] / a).applyfunc(lambda e: sp.expand(sp.radsimp(e))))
    return out


def surviving_constants(G, H):
    """{g: (algebraic multiplicity, number of independent left eigenvectors u with uᵀH = 0)}."""
    out = {}
    n = G.shape[0]
    for g, mult in G.eigenvals().items():
        g = sp.radsimp(g)
        left = (G - g * sp.eye(n)).T.nullspace()
        U = sp.Matrix.hstack(*left)
        kept = (U.T * H).T.applyfunc(sp.expand).nullspace()
        out[g] = (mult, len(kept))
    return out


# -- perfect learning of any variant --------------------------------------------------------------

def perfect_learning_residual(key, perm=None, digits: int = 30):
    """max |rhs| of the hierarchy at perfect learning R = Q = T (student i copies teacher
    perm[i], default i) with a generic exact teacher at level 1 and the next level and the η²
    bracket included, to ``digits`` digits; ``sympy.nan`` when the right-hand side is singular
    there (ReLU: x_i = y_perm(i) has a singular covariance).  Zero exactly when the student can
    copy the teacher unit by unit (same activation, K = M, v_i = u_perm(i)).

    >>> from derive.keys import SystemKey
    >>> perfect_learning_residual(SystemKey("x**2 + x", 2, 2)) < 1e-25
    True
    >>> perfect_learning_residual(SystemKey("x**2 + x", 2, 2, teacher="erf")) > 1e-3
    True
    """
    h = Hierarchy(key)
    K, M = key.K, key.M
    if K != M:
        raise ValueError(f"perfect learning R = Q = T needs K = M, got K = {K}, M = {M}")
    perm = list(range(K)) if perm is None else list(perm)
    sub = {h.eta: sp.Rational(1, 2), h.nu: sp.Rational(1, 3), h.e2: sp.Integer(1)}
    for blk, scale in ((h.v1, 1), (h.nxt, sp.Rational(3, 5))):
        t = sp.Matrix(M, M, lambda n, m: scale * (1 + sp.Rational(n + 1, 7) if n == m
                                                  else sp.Rational(1, 5 + n + m)))
        for n in range(M):
            for m in range(M):
                sub[blk.T[n, m]] = t[n, m]
        for i in range(K):
            for n in range(M):
                sub[blk.R[i, n]] = t[perm[i], n]
            for j in range(K):
                sub[blk.Q[i, j]] = t[perm[i], perm[j]]
    vals = [e.xreplace(sub) for e in h.rhs]
    if any(v.has(sp.nan, sp.zoo, sp.oo) for v in vals):
        return sp.nan
    return max(abs(sp.N(v, digits + 10)) for v in vals)
