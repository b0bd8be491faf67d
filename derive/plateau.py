"""The symmetric plateau of erf committee machines with K = M (paper §5.1, App. C.2–C.4), and
the equal-students subspace of every variant (:func:`equal_students_defect`, the symmetry the
numeric route of :mod:`solvers.theory.variants` relies on).

Everything here is derived from :class:`derive.hierarchy.Hierarchy`, not transcribed.

Teacher ansatz (paper §5.1.1): T^(l)_nn = T_l, T^(l)_nm = D_l/(M-1) for n != m, so D_l is the
sum of the off-diagonal entries of one teacher row.  Write S_l = T_l + D_l (a full row sum).

Symmetric ansatz for the student (per level l, in the diagonal-S_M invariant subspace):
R^(l)_in = r_l δ_in + s_l (1-δ_in),  Q^(l)_ij = q_l δ_ij + c_l (1-δ_ij).
:func:`ansatz_equations` substitutes it into the level-generic hierarchy; the four
equations (from R_11, R_12, Q_11, Q_12) close on (r, s, q, c) because the subspace is invariant
under the dynamics (the right-hand side commutes with simultaneous permutations of students and
teachers).  The plateau is the point r = s, q = c (all students equal).

Results derived below (and checked in tests against the generated right-hand side):

* Level 1 (paper Eq. 97, confirmed):  Q* = S/(M(1+T) - S),  R* = S / sqrt(M((M-1)T - D + M)),
  with T = T_1, D = D_1, S = S_1.  Along the way R* w = Q* z with w = ((1+Q*)(1+T) - R*²)^(-1/2),
  z = (1+2Q*)^(-1/2), and (1+Q*)(1+T) - R*² = (D + (M+1)T + M)/M.
* Higher levels: R*^(l) = R* S_l/S_1, Q*^(l) = Q* S_l/S_1 for l = 1..L and, through the
  Cayley–Hamilton closure, also for l = 0 with S_0 = T_0 + D_0.  The paper's Eq. (98) writes
  T_l/T_1 instead of S_l/S_1: the two agree only when D_l ∝ T_l (e.g. D = 0).
* Plateau height: ε_g* = (1/π)[asin(T/(1+T)) + (M-1) asin(D/((M-1)(1+T))) - M asin(S/(M(1+T)))].
  The paper's Eq. (99) has (M-1) asin(D/(1+T)) for the off-diagonal teacher term (it treats
  the off-diagonal entries as D instead of D/(M-1)); its cross term reduces to ours because
  R*/sqrt((1+Q*)(1+T)) = Q*/(1+Q*) = S/(M(1+T)).
* Escape: the specialisation direction δR^(l)_in = ρ_l (δ_in - (1-δ_in)/(M-1)), δQ = 0 spans
  the std⊗std component of S_K × S_M; it is invariant and decoupled, and there the coefficient
  of the next level vanishes identically (because R* w = Q* z).  What remains is rank one:
      dρ_l/dα = η g_r ũ_{l+1} ρ_1,   ũ_l = T_l - D_l/(M-1),
      g_r = 2 S / (π sqrt((M-1)T - D + M) (D + (M+1)T + M)^(3/2)),
  with the single nonzero eigenvalue λ_esc = η g_r ũ_2 (paper Eqs. 112–113 confirmed once the
  garbled g_r is read as above) and τ_esc = 1/λ_esc (Eq. 116 confirmed with the square root
  covering only (M-1)T - D + M).
"""
from __future__ import annotations

from functools import lru_cache

import sympy as sp

from .hierarchy import Hierarchy, SystemKey

# Level-1 and next-level symbols of the four-parameter ansatz and the teacher ansatz.
r, s, q, c, T, D = sp.symbols("r s q c T D", real=True)
nr, ns, nq, nc, nT, nD = sp.symbols("nr ns nq nc nT nD", real=True)
ANSATZ = (r, s, q, c)
NEXT = (nr, ns, nq, nc)


def ansatz_map(block, M, rr, ss, qq, cc, tt, dd):
    sub = {}
    for i in range(M):
        for n in range(M):
            sub[block.R[i, n]] = rr if i == n else ss
            sub[block.Q[i, n]] = qq if i == n else cc
            sub[block.T[i, n]] = tt if i == n else dd / (M - 1)
    return sub


@lru_cache(maxsize=None)
def ansatz_equations(M: int, order: int = 1):
    """d(r, s, q, c)^(l)/dα of the hierarchy (erf, K = M) on the symmetric subspace.

    Expressions in the level-1 symbols r, s, q, c, T, D, the next-level symbols
    nr, ns, nq, nc, nT, nD, and h.eta, h.nu (ν_{l+1}).  Returns (exprs, hierarchy).
    """
    if int(M) != M or M < 2:
        raise ValueError(f"the symmetric plateau needs M >= 2, got {M!r}")
    h = Hierarchy(SystemKey("erf", M, M))
    sub = ansatz_map(h.v1, M, r, s, q, c, T, D)
    sub |= ansatz_map(h.nxt, M, nr, ns, nq, nc, nT, nD)
    sub[h.e2] = h.eta**2 if order == 2 else sp.Integer(0)
    rows = [0, 1, M * M, M * M + 1]          # R_11, R_12, Q_11, Q_12 in the state order
    return [h.rhs[k].xreplace(sub) for k in rows], h


# -- closed forms (order 1) -----------------------------------------------------------------

def plateau_level1(M, T1, D1):
    """(R*, Q*) at level 1 (Eq. 97)."""
    M, T1, D1 = map(sp.sympify, (M, T1, D1))
    S1 = T1 + D1
    return S1 / sp.sqrt(M * ((M - 1) * T1 - D1 + M)), S1 / (M * (1 + T1) - S1)


def plateau_height(M, T1, D1):
    """ε_g* at the plateau (corrected Eq. 99)."""
    M, T1, D1 = map(sp.sympify, (M, T1, D1))
    S1 = T1 + D1
    return (sp.asin(T1 / (1 + T1)) + (M - 1) * sp.asin(D1 / ((M - 1) * (1 + T1)))
            - M * sp.asin(S1 / (M * (1 + T1)))) / sp.pi


def plateau_height_paper(M, T1, D1):
    """The paper's Eq. (99) as printed (for the comparison in the notebook)."""
    M, T1, D1 = map(sp.sympify, (M, T1, D1))
    R1, Q1 = plateau_level1(M, T1, D1)
    return (M * sp.asin((D1 + T1) / (M * T1 + M)) + (M - 1) * sp.asin(D1 / (T1 + 1))
            - 2 * M * sp.asin(R1 / sp.sqrt((1 + Q1) * (1 + T1))) + sp.asin(T1 / (T1 + 1))) / sp.pi


def escape_prefactor(M, T1, D1):
    """g_r of the rank-one escape dynamics dρ/dα = η g_r ũ e_1ᵀ ρ."""
    M, T1, D1 = map(sp.sympify, (M, T1, D1))
    return 2 * (T1 + D1) / (sp.pi * sp.sqrt((M - 1) * T1 - D1 + M)
                            * (D1 + (M + 1) * T1 + M) ** sp.Rational(3, 2))


def escape_eigenvalue(eta, M, T1, D1, T2, D2):
    """λ_esc = η g_r (T_2 - D_2/(M-1)): the growth rate of the specialisation direction."""
    M = sp.sympify(M)
    return sp.sympify(eta) * escape_prefactor(M, T1, D1) * (T2 - D2 / (M - 1))


def tau_esc(eta, M, T1, D1, T2, D2):
    """τ_esc = 1/λ_esc (Eq. 116)."""
    return 1 / escape_eigenvalue(eta, M, T1, D1, T2, D2)


# -- linearisation on the four-parameter subspace: Kronecker structure ----------------------

def companion(c_coeffs):
    """A1 of the linear case: -1 on the superdiagonal, last row c_0..c_{L-1}.

    A1 x = -(next level of x) with the Cayley–Hamilton closure for the top level.
    """
    L = len(c_coeffs)
    A = sp.zeros(L, L)
    for l in range(L - 1):
        A[l, l + 1] = -1
    for j in range(L):
        A[L - 1, j] += c_coeffs[j]
    return A


def linearisation_blocks(M, point, teacher1, order: int = 1):
    """4x4 blocks of the linearisation on the (r, s, q, c) subspace at a fixed point.

    ``point`` = (r, s, q, c) at level 1 and ``teacher1`` = (T_1, D_1) (exact SymPy numbers or
    symbols).  The next level enters linearly: d x^(l)/dα = Gn · x^(l+1) + (teacher terms), so
    the Jacobian is  Gn ⊗ N  +  Σ_Y H_Y ⊗ (y e_1ᵀ),  N = -A1 the closed next-level shift,
    where y runs over the next-level fixed-point profiles.  Returns Gn (4x4) and a function
    h(next_values) giving the 4x4 derivative by the level-1 variables at given next-level
    values (nr, ns, nq, nc, nT, nD).
    """
    exprs, _ = ansatz_equations(M, order)
    at = dict(zip(ANSATZ, point)) | {T: teacher1[0], D: teacher1[1]}
    F = sp.Matrix(exprs)
    Gn = F.jacobian(sp.Matrix(NEXT)).xreplace(at)
    dF = F.jacobian(sp.Matrix(ANSATZ))

    def h(next_values):
        return dF.xreplace(dict(zip(NEXT + (nT, nD), next_values))).xreplace(at)
    return Gn, h


def plateau_kronecker(M, T_levels, D_levels, c_coeffs, eta=None):
    """The 4L x 4L linearisation at the plateau, variable-major (r^(0..L-1), s, q, c).

        J = Gn ⊗ N + H_S ⊗ (S e_1ᵀ) + H_T ⊗ (t e_1ᵀ) + H_D ⊗ (d e_1ᵀ)

    with S, t, d the columns (S_{l+1}), (T_{l+1}), (D_{l+1}), l = 0..L-1, and N = -A1.  With
    D_l = 0 the three rank-one terms merge into the paper's H ⊗ U, U = u e_1ᵀ (Eqs. 100–102).
    Returns (J, parts) with parts = dict(Gn=..., HS=..., HT=..., HD=..., N=...).
    """
    R1, Q1 = plateau_level1(M, T_levels[0], D_levels[0])
    S1 = T_levels[0] + D_levels[0]
    Gn, h = linearisation_blocks(M, (R1, R1, Q1, Q1), (T_levels[0], D_levels[0]))
    HS = h((R1 / S1, R1 / S1, Q1 / S1, Q1 / S1, 0, 0))
    HT = h((0, 0, 0, 0, 1, 0))
    HD = h((0, 0, 0, 0, 0, 1))
    return assemble(Gn, [(HS, [t + d for t, d in zip(T_levels, D_levels)]),
                          (HT, list(T_levels)), (HD, list(D_levels))], c_coeffs, eta)


def assemble(Gn, rank_one_terms, c_coeffs, eta):
    L = len(c_coeffs)
    N = -companion(c_coeffs)
    e1 = sp.zeros(1, L)
    e1[0, 1 % L] = 1
    J = sp.kronecker_product(Gn, N) if L > 1 else Gn * N[0, 0]
    for H, col in rank_one_terms:
        J += sp.kronecker_product(H, sp.Matrix(col) * e1)
    if L == 1:
        # level 1 is the closed top level: x^(1) = -c_0 x^(0)
        J = sp.zeros(4, 4) + Gn * N[0, 0]
        for H, col in rank_one_terms:
            J += H * col[0] * N[0, 0]
    parts = dict(Gn=Gn, N=N, H=[H for H, _ in rank_one_terms])
    if eta is not None:
        J = J.xreplace({sp.Symbol("eta", positive=True): eta})
    return J, parts


# -- the equal-students subspace of any variant (the symmetry behind the general route) ----------
#
# For every system key the numeric route (solvers.theory.variants) looks for the plateau on the
# subspace R^(l)_in = r^(l)_n, Q^(l)_ij = q^(l) (all students equal).  It is invariant when the
# student readouts are uniform: then the hierarchy commutes with permutations of the students,
# and the subspace is the set they fix.  :func:`equal_students_defect` derives it from the
# hierarchy itself: the rows that must agree on the subspace are compared at an exact point.

def _generic_point(h, K, M):
    """An exact point of the equal-students subspace with a generic teacher (level 1 and the
    next level): positive definite covariances, no coincidences between teacher entries."""
    sub = {}
    for blk, scale in ((h.v1, 1), (h.nxt, sp.Rational(3, 5))):
        for n in range(M):
            for m in range(M):
                sub[blk.T[n, m]] = scale * (1 + sp.Rational(n + 1, 7) if n == m
                                            else sp.Rational(1, 5 + n + m))
            for i in range(K):
                sub[blk.R[i, n]] = scale * sp.Rational(2 + n, 9)
        for i in range(K):
            for j in range(K):
                sub[blk.Q[i, j]] = scale * sp.Rational(3, 7)
    sub[h.eta] = sp.Rational(1, 2)
    sub[h.nu] = sp.Rational(1, 3)
    sub[h.e2] = sp.Integer(1)           # the η² term included
    return sub


def equal_students_defect(key, digits: int = 30):
    """max over state rows of |row - first row of its group| of the hierarchy's right-hand side
    at an exact point of the equal-students subspace (groups: R_in over i for each n; all
    Q_ij), evaluated to ``digits`` digits.  Zero to those digits when the subspace is
    invariant; ``sympy.nan`` when the right-hand side is singular there (ReLU students:
    coinciding fields).

    >>> from derive.keys import SystemKey
    >>> equal_students_defect(SystemKey("x**2 + x", 2, 1)) < 1e-25
    True
    >>> equal_students_defect(SystemKey("x**2 + x", 2, 1, readout=("1", "2", "1"))) > 1e-3
    True
    """
    h = Hierarchy(key)
    K, M = key.K, key.M
    vals = [e.xreplace(_generic_point(h, K, M)) for e in h.rhs]
    if any(v.has(sp.nan, sp.zoo, sp.oo) for v in vals):
        return sp.nan
    num = [sp.N(v, digits + 10) for v in vals]
    groups = [[i * M + n for i in range(K)] for n in range(M)]
    groups.append(list(range(K * M, len(num))))
    return max(abs(num[s] - num[g[0]]) for g in groups for s in g)
