"""Exact Gaussian expectations of products of one-field factors, by Stein's lemma.

For zero-mean jointly Gaussian fields z with covariance C, this module computes

    E[ prod_a z_a^(p_a) * K_a(z_a) ]

where each slot a carries a power p_a and a kind K_a: ``one`` (1), ``erf`` (erf(z/√2)),
``gauss`` (exp(-z²/2)), ``theta`` (1[z > 0]) or ``delta`` (Dirac δ(z)).  Every activation of the
family (polynomial, linear, erf, ReLU) and its derivatives are sums of such products
(:mod:`derive.family.activations`), so every I2, I3, I4 reduces to calls of :func:`expect`.

The reduction, each step exact:

1. ``delta`` on slot b: condition on z_b = 0.  Factor (2 pi C_bb)^(-1/2), covariance replaced by
   the Schur complement C - C e_b e_bᵀ C / C_bb on the other slots; a power of z_b kills the term.
2. ``gauss`` on a set G of slots: exp(-|z_G|²/2) tilts the Gaussian.  Factor det(I + C_GG)^(-1/2),
   covariance C - C_{:G} (I + C_GG)^(-1) C_{G:}; the slots stay, as kind ``one``.
3. a power p_a > 0: Stein's lemma E[z_a F] = Σ_b C_ab E[∂_b F], with ∂ erf(z/√2) = √(2/π) exp(-z²/2),
   ∂ 1[z>0] = δ(z), ∂ z^p = p z^(p-1).  The total degree drops by one per step.
4. no powers left: only ``theta`` and ``erf`` slots remain.  With erf(z/√2) = E_w[sign(z + w)],
   w ~ N(0, 1) independent, and 1[z>0] = (1 + sign z)/2, the expectation is a sum of sign moments
   of Gaussians whose variances are C_aa (+1 on erf slots): odd moments vanish, the second is
   (2/π) asin(r_ab), the fourth is 16 P4 - 1 - Σ_pairs (2/π) asin(r_ab) with P4 the orthant
   probability of :class:`derive.family.orthant.Orthant4`.
5. only ``one`` slots and powers: Isserlis/Wick, :func:`wick`.

Terms that vanish by parity (z -> -z, when no ``theta`` slot breaks the symmetry) are dropped early.
"""
from __future__ import annotations

from functools import lru_cache
from itertools import combinations

import sympy as sp

from .activations import DELTA, ERF, GAUSS, ONE, THETA
from .orthant import PAIRS, Orthant4

MAX_SIGN_MOMENT = 4


def wick(C, powers) -> sp.Expr:
    """E[prod_a z_a^(p_a)] for z ~ N(0, C), exactly (Isserlis' theorem, as a recursion).

    >>> import sympy as sp
    >>> c = sp.Matrix(2, 2, sp.symbols("a b b d"))
    >>> sp.expand(wick(c, (2, 2)))
    a*d + 2*b**2
    """
    C = sp.ImmutableMatrix(C)
    return sp.expand(_wick(C, tuple(int(p) for p in powers)))


def _wick(C, powers):
    """Wick sum at the covariance C, from the C-independent table of :func:`_pairings`."""
    n = len(powers)
    pairs = [(a, b) for a in range(n) for b in range(a, n)]
    out = sp.Integer(0)
    for expo, coef in _pairings(powers).items():
        out += coef * sp.Mul(*[C[a, b] ** e for (a, b), e in zip(pairs, expo) if e])
    return out


@lru_cache(maxsize=100_000)
def _pairings(powers):
    """{exponents of (C_ab, a <= b): integer count} with E[prod z^p] = sum count * prod C_ab^e.

    Pairs one copy of the first field with each remaining copy (Stein's lemma on polynomials);
    depends only on the powers, so it is shared by every covariance the engine meets.
    """
    n = len(powers)
    npairs = n * (n + 1) // 2
    if sum(powers) == 0:
        return {(0,) * npairs: 1}
    if sum(powers) % 2:
        return {}
    index = {}
    k = 0
    for a in range(n):
        for b in range(a, n):
            index[a, b] = index[b, a] = k
            k += 1
    a = next(i for i, p in enumerate(powers) if p)
    rest = list(powers)
    rest[a] -= 1
    out = {}
    for b, p in enumerate(rest):
        if not p:
            continue
        nxt = list(rest)
        nxt[b] -= 1
        j = index[a, b]
        for expo, coef in _pairings(tuple(nxt)).items():
            e = list(expo)
            e[j] += 1
            e = tuple(e)
            out[e] = out.get(e, 0) + p * coef
    return out


def expect(C, powers, kinds) -> sp.Expr:
    """E[prod_a z_a^(powers[a]) K_a(z_a)] for z ~ N(0, C) (see the module docstring).

    Parameters
    ----------
    C : sympy Matrix, n x n symmetric (symbols or exact numbers)
    powers : sequence of n non-negative ints
    kinds : sequence of n kinds from ``one, erf, gauss, theta, delta``

    Examples
    --------
    >>> import sympy as sp
    >>> from derive.integrals import covariance_symbols
    >>> expect(covariance_symbols(2), (1, 1), ("theta", "theta"))   # ReLU-ReLU (arc-cosine)
    C12*(asin(C12/(sqrt(C11)*sqrt(C22)))/(2*pi) + 1/4) + sqrt(C11*C22 - C12**2)/(2*pi)
    """
    if len(powers) != len(kinds) or C.shape != (len(kinds), len(kinds)):
        raise ValueError("expect: C, powers and kinds must have matching sizes")
    return _expect(sp.ImmutableMatrix(C), (), tuple(int(p) for p in powers), tuple(kinds))


# The covariance is carried as N / d with N a matrix of polynomials and d = prod(dfac), a product
# of factors each known to be positive (variances and determinants of I + C_GG met on the way).
# Square roots of variances then split exactly, sqrt(N_aa / d) = sqrt(N_aa) / sqrt(d), and
# correlations N_ab / sqrt(N_aa N_bb) never see d: the results stay free of nested radicals.

def _shrink(N, dfac):
    """Divide N by those positive factors of d that divide every entry (exact polynomial division)."""
    dfac = list(dfac)
    changed = True
    while changed:
        changed = False
        for i, f in enumerate(dfac):
            if f.is_number:
                continue
            quo = []
            for e in N:
                q, r = sp.div(e, f, *sorted(f.free_symbols, key=str)) if e != 0 else (0, 0)
                if r != 0:
                    break
                quo.append(sp.expand(q))
            else:
                N = sp.ImmutableMatrix(N.shape[0], N.shape[1], quo)
                del dfac[i]
                changed = True
                break
    return N, tuple(dfac)


def _drop(N, powers, kinds, keep):
    return (N.extract(keep, keep), tuple(powers[i] for i in keep), tuple(kinds[i] for i in keep))


@lru_cache(maxsize=20_000)
def _expect(N, dfac, powers, kinds):
    n = len(kinds)
    d = sp.Mul(*dfac)
    keep = [i for i in range(n) if powers[i] or kinds[i] != ONE]
    if len(keep) < n:                      # a bare field integrates to one
        N, powers, kinds = _drop(N, powers, kinds, keep)
        n = len(keep)
    if n == 0:
        return sp.Integer(1)
    if THETA not in kinds and (sum(powers) + kinds.count(ERF)) % 2:
        return sp.Integer(0)               # odd under z -> -z
    if DELTA in kinds:
        b = kinds.index(DELTA)
        if powers[b]:
            return sp.Integer(0)           # z_b^p δ(z_b) = 0
        nbb = N[b, b]
        rest = [i for i in range(n) if i != b]
        Nc = sp.ImmutableMatrix(len(rest), len(rest), lambda i, j: sp.expand(
            N[rest[i], rest[j]] * nbb - N[rest[i], b] * N[rest[j], b]))
        Nc, dc = _shrink(Nc, dfac + (nbb,))
        sub = _expect(Nc, dc, tuple(powers[i] for i in rest), tuple(kinds[i] for i in rest))
        # density of z_b at 0: 1 / sqrt(2 pi C_bb), C_bb = N_bb / d
        return sub * sp.sqrt(d) / (sp.sqrt(2 * sp.pi) * sp.sqrt(nbb)) if sub != 0 else sub
    if GAUSS in kinds:
        G = [i for i in range(n) if kinds[i] == GAUSS]
        M = d * sp.eye(len(G)) + N.extract(G, G)
        detM = sp.factor(sp.expand(M.det()))
        NG = N.extract(list(range(n)), G)
        Nt = N * detM - NG * M.adjugate() * NG.T
        Nt = sp.ImmutableMatrix(n, n, lambda i, j: sp.expand(Nt[i, j]))
        Nt, dt = _shrink(Nt, dfac + (detM,))
        sub = _expect(Nt, dt, powers, tuple(ONE if k == GAUSS else k for k in kinds))
        # det(I + C_GG)^(-1/2) = d^(|G|/2) / sqrt(det M)
        return sub * sp.sqrt(d) ** len(G) / sp.sqrt(detM) if sub != 0 else sub
    if all(k == ONE for k in kinds):
        return _wick(N, powers) / d ** (sum(powers) // 2)
    if any(powers):
        a = next(i for i, p in enumerate(powers) if p)
        p = list(powers)
        p[a] -= 1
        out = sp.Integer(0)
        for b in range(n):
            cab = N[a, b]
            if cab == 0:
                continue
            term = sp.Integer(0)
            if p[b]:
                q = list(p)
                q[b] -= 1
                term += p[b] * _expect(N, dfac, tuple(q), kinds)
            k = list(kinds)
            if kinds[b] == ERF:
                k[b] = GAUSS
                term += sp.sqrt(2) / sp.sqrt(sp.pi) * _expect(N, dfac, tuple(p), tuple(k))
            elif kinds[b] == THETA:
                k[b] = DELTA
                term += _expect(N, dfac, tuple(p), tuple(k))
            out += cab / d * term
        return out
    return _signs(N, d, kinds)


def _signs(N, d, kinds):
    """E[prod over theta slots of 1[z>0] * prod over erf slots of erf(z/√2)], no powers.

    C = N / d; an erf slot's sign variable has variance C_aa + 1 = (N_aa + d) / d.
    """
    n = len(kinds)
    var = [N[i, i] + (d if kinds[i] == ERF else 0) for i in range(n)]
    root = [sp.sqrt(sp.factor(v)) for v in var]

    def corr(a, b):
        return N[a, b] / (root[a] * root[b])

    E = [i for i in range(n) if kinds[i] == ERF]
    T = [i for i in range(n) if kinds[i] == THETA]
    out = sp.Integer(0)
    for m in range(len(T) + 1):
        for S in combinations(T, m):
            out += _sign_moment(sorted(E + list(S)), corr)
    return out / 2 ** len(T)


def _sign_moment(slots, corr):
    k = len(slots)
    if k % 2:
        return sp.Integer(0)
    if k == 0:
        return sp.Integer(1)
    if k == 2:
        return 2 / sp.pi * sp.asin(corr(*slots))
    if k == 4:
        r = [corr(slots[a], slots[b]) for a, b in PAIRS]
        return 16 * Orthant4(*r) - 1 - sum(2 / sp.pi * sp.asin(x) for x in r)
    raise NotImplementedError(f"sign moment of {k} fields (more than {MAX_SIGN_MOMENT}) "
                              "has no implemented representation")
