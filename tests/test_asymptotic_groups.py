"""Perfect-learning eigenvalue groups for general M (K = M erf, expected teacher, order 1).

Exact layer: the group constants of the (r, s, q, c) block and of the S_M blocks of the full
per-level linearisation, derived from the hierarchy and compared to the closed forms in M.
Numeric layer: every exact group -a g λ_k is an eigenvalue (with its multiplicity) of the
Jacobian of the generated right-hand side at perfect learning.
"""
import pytest
import sympy as sp

from derive import asymptotic as da
from derive import spectra
from solvers.theory.asymptotic import group_counts, group_misses

pytestmark = [pytest.mark.closed_form]  # oracle (tests/conftest.py)

x = sp.Symbol("x")
Msym = sp.Symbol("M", positive=True, integer=True)


def _char_identity(G, roots):
    """charpoly(G) == Π (x - g) exactly (so the roots are the eigenvalues, with multiplicity)."""
    lhs = (x * sp.eye(G.shape[0]) - G).det(method="berkowitz")
    rhs = sp.Mul(*[x - g for g in roots])
    return sp.expand(sp.radsimp(lhs - rhs)) == 0


# -- exact: closed forms in M --------------------------------------------------------------------

def test_group_constants_symbolic_M():
    """G_triv(M), G_std(M) with M a symbol: eigenvalues 1 - √3/2, 1 + (M-1)√3/2, 2 - √3,
    2 + (M-1)√3 (trivial) and 1 - √3/2 (twice), 1 + (M-1)√3/2, 2 - √3, 2 + (M-2)√3/2 (standard)."""
    gc = da.group_constants(Msym)
    assert _char_identity(da.G_triv(Msym), gc["rs"] + gc["qc"])
    s3 = sp.sqrt(3)
    assert _char_identity(da.G_std(Msym), [1 - s3 / 2, 1 - s3 / 2, 1 + (Msym - 1) * s3 / 2,
                                           2 - s3, 2 + (Msym - 2) * s3 / 2])


@pytest.mark.parametrize("M", [2, 3, 4])
def test_G_triv_from_hierarchy(M):
    """The ansatz matrix derived from the hierarchy equals the closed form in M; its eigenvalues
    are the four group constants (the conjecture 2 + (M-1)√3, 1 + (M-1)√3/2 holds)."""
    G = da.G_paper(M)
    assert (G - da.G_triv(M)).applyfunc(sp.simplify) == sp.zeros(4, 4)
    gc = da.group_constants(M)
    assert _char_identity(G, gc["rs"] + gc["qc"])


@pytest.mark.parametrize("M", [2, 3, 4, pytest.param(5, marks=pytest.mark.full),
                               pytest.param(6, marks=pytest.mark.full)])
def test_full_linearisation_blocks(M):
    """The whole per-level linearisation (all R_in, Q_ij) splits into the S_M blocks of
    derive.asymptotic; the trivial and standard blocks match the closed forms in M, and the
    constants whose left eigenvectors are annihilated by the rank-one level coupling are exactly
    exact_groups(M), with multiplicity (block count x irreducible dimension)."""
    blocks = da.irrep_blocks(M)
    dims = {"triv": 1, "std": M - 1, "[M-2,1,1]": (M - 1) * (M - 2) // 2,
            "[M-2,2]": M * (M - 3) // 2}
    n_state = M * M + M * (M + 1) // 2
    assert sum(len(da.irrep_bases(M)[b]) * dims[b] for b in blocks) == n_state
    G, _ = blocks["triv"]
    assert (G - da.G_triv(M)).applyfunc(sp.simplify) == sp.zeros(4, 4)
    if M >= 3:
        G, _ = blocks["std"]
        assert (G - da.G_std(M)).applyfunc(sp.simplify) == sp.zeros(5, 5)
    # the two blocks without an ansatz-like counterpart: M-independent, no level coupling
    h = 1 - sp.sqrt(3) / 2
    if M >= 3:
        assert blocks["[M-2,1,1]"] == (sp.Matrix([[h]]), sp.zeros(1, 1))
    if M >= 4:
        assert blocks["[M-2,2]"] == (sp.Matrix([[h, 0], [-2 * h, 2 * h]]), sp.zeros(2, 2))
    found = {}
    for b, (G, H) in blocks.items():
        for g, (_, kept) in da.surviving_constants(G, H).items():
            if kept:
                g = sp.nsimplify(g)
                found[g] = found.get(g, 0) + kept * dims[b]
    assert found == {sp.nsimplify(g): m for g, m in da.exact_groups(M).items()}


# -- numeric: the groups in the Jacobian of the generated right-hand side -------------------------

# float64 eigenvalues are backward stable: an eigenvalue of condition κ is found within
# ~κ·2.2e-16·max|μ|.  1e-12·max|μ| allows κ up to ~5e3 (measured misses are below 5e-15·max|μ|
# for M = 2, 3, 4, L ≤ 10); a wrong constant misses by the gap between groups, ≥ 1e-3·max|μ|
# here (the moved groups miss by ~1e-2..1e-1 relative, asserted below as a control).
REL_TOL = 1e-12


def _check(M, L):
    spec = spectra.power_law(L, 1)
    rows, scale, residual = group_misses(M, spec, "1/4")
    assert residual < 1e-15 * scale                  # perfect learning is a fixed point
    worst = max(miss for *_, miss in rows)
    assert worst < REL_TOL * scale, (M, L, worst / scale)
    # multiplicities are exact: no further eigenvalue sits on an exact group (the moved copies
    # of 1 - √3/2 and 1 + (M-1)√3/2 really move)
    for target, expected, found in group_counts(M, spec, "1/4", REL_TOL):
        assert found == expected, (M, L, target, expected, found)
    # control: the trivial 1 + (M-1)√3/2 group is moved by the level coupling (not exact)
    moved, _, _ = group_misses(M, spec, "1/4", groups={da.group_constants(M)["rs"][1]: 1})
    assert max(miss for *_, miss in moved) > 1e-6 * scale


@pytest.mark.parametrize("L", [2, 5, 10])
def test_exact_groups_in_generated_jacobian_M2(L):
    _check(2, L)


@pytest.mark.full
@pytest.mark.parametrize("L", [2, 5, 10], ids=lambda v: f"L{v}")
@pytest.mark.parametrize("M", [3, 4, 6], ids=lambda v: f"M{v}")
def test_exact_groups_in_generated_jacobian(M, L):
    # the erf modules for M >= 3 are generated on demand (M = 3, 4, 6: minutes)
    _check(M, L)
