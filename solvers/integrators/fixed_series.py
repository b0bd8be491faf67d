"""The level-basis Taylor recurrence in fixed point: python-flint ``fmpz_mat`` instead of arb_mat.

Why: at high orders the cost of a Taylor step is the convolution Σ_j (C Y_j) A_{s,k-j}ᵀ,
O(p²) products of an L × 7 matrix at the working precision by a 7 × 7 one at the short precision
of the jets.  As integer products (fmpz: no exponent alignment, no radii) they are cheaper, and
the companion product C Y_j becomes a row shift of the same integers plus one closure row; the
price is a Python-level rescaling of each order's L × 7 integers, O(L p) per step.  Measured
on the full bench_taylor.py runs (BENCHMARKS.md, Taylor section): 0.88x the arb_mat CPU time at
order 76 and L = 16, 0.95x at L = 32, but 1.11x at L = 64 and 1.04-1.10x at order 21, hence
taylor.FIXED_POINT_MIN_ORDER and FIXED_POINT_MAX_ROWS.

Scaling (exact powers of two; see the module docstring of taylor.py for the recurrence):

    Y_k[r, :] = Ỹ_k[r, :] · 2^(u_r - σ k),   u_r = u_0 + δ r,
    A_i       = Â_i · 2^(f - σ i).

δ follows the growth of the level rows (≈ log2 of the largest eigenvalue per level), so a row
of Z = C Y is the next row of Y in the same integers and the scaling of a product is one factor
for every row; u_0 is chosen so that every row of Y_0 has at least ``prec + GUARD_BITS`` bits.
s = 2^σ rescales time (the caller keeps the step h <= s), so the coefficients of order k hold
numbers of about |Y_0| (h/ρ)^k: the absolute error of the integers (one unit) is an error of
2^-(prec + GUARD_BITS) relative to each row of the state in every term of the step's sum — the
accuracy of a floating-point step at that precision, and the tolerance-controlled truncation is
unchanged.  The series is returned as arb_mat (the scaled Ỹ_k, exact) with the scaling, for the
dense output and the step control in taylor.py.
"""
from __future__ import annotations

import math

__all__ = ["FixedPointSeries", "GUARD_BITS"]

GUARD_BITS = 8
_LOG2_10 = math.log2(10.0)


def start_jets(jets, rhs, v1, short):
    """(order-0 coefficients, jet state) of the printed jets at the level-1 values v1, run by
    ``short`` (the integrator's runner at the scalar precision); both Taylor routes start so."""
    state_out = {}

    def start():
        st, out0 = jets.jets_start([+x for x in v1], rhs.t1, rhs.eta, rhs.ctx)
        state_out["state"] = st
        return out0

    co = short(start)
    return co, state_out["state"]


def _finite(x):
    """A non-finite coefficient means the working precision was too small (the closure's
    cancellation overflowed the series): the breakdown the precision policy reacts to."""
    if not x.is_finite():
        from solvers.integrators.rk78 import IntegrationError
        raise IntegrationError("Taylor integration: a series coefficient became non-finite")


def _top_bit(x) -> int | None:
    """Position of the leading bit of an exact arb (None for 0): |x| < 2^top."""
    if isinstance(x, int):
        return None if x == 0 else x.bit_length()
    _finite(x)
    man, exp = x.man_exp()
    if man == 0:
        return None
    return int(exp) + man.bit_length()


def _floor_scaled(x, unit: int):
    """floor(x / 2^unit) as fmpz, for an exact arb x (or an int: the jets print 0 for constants)."""
    if isinstance(x, int):
        from flint import fmpz
        x, unit = fmpz(x), unit
        return x << -unit if unit <= 0 else x >> unit
    _finite(x)
    man, exp = x.man_exp()
    sh = int(exp) - unit
    return man << sh if sh >= 0 else man >> -sh


class FixedPointSeries:
    """Taylor coefficients of one step in the level basis on fmpz matrices.

    ``rhs``: solvers.core.arb_rhs.ArbMatRHS (basis "levels"); ``short(fn, *args)`` evaluates the
    printed jets at their short precision (TaylorSeries._short); ``extend`` is jets_extend or
    jets_extend_a.
    """

    def __init__(self, rhs, jets, short, extend, jet_dps: int):
        from flint import arb

        self.rhs, self.jets, self.short, self.extend = rhs, jets, short, extend
        self.n = rhs.n
        self.a_bits = int(math.ceil(jet_dps * _LOG2_10)) + GUARD_BITS
        L = rhs.L
        self.c = [rhs.C[L - 1, j] for j in range(L)]      # closure row: -c_m
        self.teacher = rhs.teacher.tolist()
        self.forcing = [row[0] for row in rhs.forcing.tolist()] if rhs.has_e2 else None
        self.two = arb(2)

    # -- scaling of the step -----------------------------------------------------------------
    def _units(self, Y0, bits):
        """u_0, δ: every row of Y0 gets >= ``bits`` bits above its unit 2^(u_0 + δ r)."""
        tops = []
        for r, row in enumerate(Y0.mid().tolist()):
            ts = [t for t in map(_top_bit, row) if t is not None]
            if ts:
                tops.append((r, max(ts)))
        if not tops:
            return -bits, 0
        if len(tops) >= 2:
            (r0, t0), (r1, t1) = tops[0], tops[-1]
            delta = int(round((t1 - t0) / (r1 - r0)))
        else:
            delta = 0
        u0 = min(t - delta * r for r, t in tops) - bits
        return u0, delta

    def coefficients(self, Y0, order: int, sigma: int):
        """(Ỹ_0..Ỹ_order as exact arb_mat, row exponents u_r) with Y_k = 2^(u_r - σ k) Ỹ_k."""
        tau = -sigma       # the unit of order k is 2^(u_r + tau k): Ỹ_k = Y_k s^k, s = 2^sigma
        from flint import arb, arb_mat, fmpz, fmpz_mat
        from solvers.core.numbers import FlintContext

        rhs, n = self.rhs, self.n
        L = Y0.nrows()
        prec = FlintContext.bits()
        u0, delta = self._units(Y0, prec + GUARD_BITS)
        units = [u0 + delta * r for r in range(L + 1)]        # u_L: the closure row of Z
        # closure row of Z in units of u_L: Σ_m ĉ_m Ỹ[m] / 2^gc,  ĉ_m = -c_m 2^(u_m - u_L + gc)
        gc = prec + GUARD_BITS
        c_hat = fmpz_mat(1, L, [_floor_scaled(c.mid(), units[L] - units[m] - gc)
                                for m, c in enumerate(self.c)])

        def z_of(Yt):
            ents = Yt.entries()
            last = [x >> gc for x in (c_hat * Yt).entries()]
            return fmpz_mat(L, n, ents[n:] + last)

        Yt = fmpz_mat(L, n, [_floor_scaled(x, units[r]) for r, row in enumerate(Y0.mid().tolist())
                             for x in row])
        v1 = list(rhs.level_one(Y0))
        co, state = start_jets(self.jets, rhs, v1, self.short)
        # unit of A_s: its largest order-0 entry keeps a_bits bits; A_t and f share the unit
        # of a product (δ + f) so that every term of Ŝ has the row unit u_r + δ + f + σ k
        tops = [t for t in (_top_bit(co[k]) for k, _, _ in rhs._state_entries) if t is not None]
        f = (max(tops) if tops else 0) - self.a_bits
        t_hat = fmpz_mat(L, rhs.nt, [_floor_scaled(x.mid(), units[r])
                                     for r, row in enumerate(self.teacher) for x in row])
        if self.forcing is not None:
            e2 = rhs.e2
            nu_hat = fmpz_mat(L, 1, [_floor_scaled((x * e2).mid(), units[r])
                                     for r, x in enumerate(self.forcing)])

        def a_mats(co, k):
            ua = f + tau * k
            As = [[0] * n for _ in range(n)]
            for i, s, t in rhs._state_entries:
                As[t][s] = _floor_scaled(co[i], ua)
            At = [[0] * n for _ in range(rhs.nt)]
            for i, s, t in rhs._teacher_entries:
                At[t][s] = _floor_scaled(co[i], ua + delta)
            out = [fmpz_mat(As), fmpz_mat(At)]
            if self.forcing is not None:
                fv = [0] * n
                for i, s in rhs._f_entries:
                    fv[s] = _floor_scaled(co[i], ua + delta)
                out.append(fmpz_mat(1, n, fv))
            return out

        mats = [a_mats(co, 0)]
        Zs = [z_of(Yt)]
        Yts = [Yt]
        # Ŝ in units u_r + δ + f + σ k;  Ỹ_{k+1} in units u_r + σ (k + 1)
        sh = -(delta + f - tau)
        for k in range(order):
            S = Zs[0] * mats[k][0]
            for j in range(1, k + 1):
                S += Zs[j] * mats[k - j][0]
            S += t_hat * mats[k][1]
            if self.forcing is not None:
                S += nu_hat * mats[k][2]
            d = k + 1
            if sh >= 0:
                Yt = fmpz_mat(L, n, [(x >> sh) // d for x in S.entries()])
            else:
                Yt = fmpz_mat(L, n, [(x << -sh) // d for x in S.entries()])
            Yts.append(Yt)
            if k + 1 < order:
                Zs.append(z_of(Yt))
                e1 = units[1] + tau * (k + 1)
                v1k = [arb(x) * self.two ** e1 for x in Yt.entries()[n:2 * n]] if L >= 2 else \
                    [arb(x) * self.two ** (units[L] + tau * (k + 1))
                     for x in Zs[-1].entries()[:n]]
                co = self.short(self.extend, state, v1k, k + 1)
                mats.append(a_mats(co, k + 1))
        return [arb_mat(y) for y in Yts], units[:L]
