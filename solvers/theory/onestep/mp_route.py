"""The sRF fixed point in mpmath, for digit checks of the float64 route.

Independent of :mod:`.fixed_point` where it matters: the bulk averages come from the closed-form
Stieltjes transform of MP (not the θ-quadrature), the conditional coefficients from the exact
forms of :mod:`derive.onestep` where they exist (erf, sin, linear, polynomials; inner trapezoid
rule otherwise), (V1, V2) from ``mpmath.findroot``.  All work happens inside one
``mpmath.workdps`` block; results are returned as mpf (callers round).
"""
from __future__ import annotations

from functools import lru_cache

import mpmath
import sympy as sp

from derive import onestep as D

from .activation import Activation
from .spectrum import stieltjes_averages


@lru_cache(maxsize=None)
def _closed(name: str, which: str):
    """lambdified exact (κ, r, c) -> value for mu0 / mu1 / second, or None."""
    cc = D.conditional_coefficients(name)
    if cc is None or which not in cc:
        return None
    return sp.lambdify((D.kappa, D.r, D.c), cc[which], modules="mpmath")


def _rule(step, half):
    n = int(mpmath.nint(half / step))
    nodes = [step * j for j in range(-n, n + 1)]
    return nodes, [step * mpmath.npdf(k) for k in nodes]


def _smoothed(act: Activation, kk, r, c, xi, wx):
    """(E σ(a + √c ξ), E σ'(·), E σ(·)², E ξσ(·)) at a = r κ; closed forms where available."""
    a = r * kk
    f0, f1, f2 = (_closed(act.name, w) for w in ("mu0", "mu1", "second"))
    sq = mpmath.sqrt(c)
    vals = None
    if f0 is None or f1 is None or f2 is None:
        vals = [act.f_mp(a + sq * x) for x in xi]
    m0 = f0(kk, r, c) if f0 else mpmath.fsum(w * v for w, v in zip(wx, vals))
    m1 = f1(kk, r, c) if f1 else mpmath.fsum(w * act.df_mp(a + sq * x) for w, x in zip(wx, xi))
    m2 = f2(kk, r, c) if f2 else mpmath.fsum(w * v * v for w, v in zip(wx, vals))
    return m0, m1, m2


def tables_mp(student, target, gamma, r, c, step="0.1", half=14):
    """Node lists and the six conditional functions at the current precision."""
    step = mpmath.mpf(step)
    ks, wk = _rule(step, half)
    xi, wx = _rule(step, half)
    gamma, r, c = mpmath.mpf(gamma), mpmath.mpf(r), mpmath.mpf(c)
    rho2 = 1 - gamma ** 2
    rows = []
    cache = {}
    for kk in ks:
        key_s = 0 if r == 0 else kk            # nothing depends on κ without a spike
        if ("s", key_s) not in cache:
            cache[("s", key_s)] = _smoothed(student, kk, r, c, xi, wx)
        m0, m1, sec = cache[("s", key_s)]
        key_t = 0 if gamma == 0 else kk
        if ("t", key_t) not in cache:
            h, t1, h2 = _smoothed(target, kk, gamma, rho2, xi, wx)
            cache[("t", key_t)] = (h, mpmath.sqrt(rho2) * t1, h2)  # E ξσ⋆ = ρ E σ⋆' (Stein)
        h, h1, h2 = cache[("t", key_t)]
        rows.append((kk, m0, m1, max(sec - m0 ** 2 - c * m1 ** 2, mpmath.mpf(0)), h, h1, h2))
    return rows, wk


def solve_mp(student: Activation, target: Activation, gamma, r, c, alpha, beta, lam,
             noise=0, dps: int = 40, start=None, step="0.1") -> dict:
    """ε_g, training error and order parameters at one α, with ``dps`` working digits.
    ``start`` = (V1, V2) float guess (the float64 route's), else the monotone iteration."""
    with mpmath.workdps(dps):
        rows, wk = tables_mp(student, target, gamma, r, c, step)
        alpha, beta, lam, noise, c = (mpmath.mpf(v) for v in (alpha, beta, lam, noise, c))
        ap = alpha / beta

        def E(fun):
            return mpmath.fsum(w * fun(*row) for w, row in zip(wk, rows))

        def W(V1, V2, m1, ms2):
            return 1 / (1 + m1 ** 2 * V1 + ms2 * V2)

        def averages(V1, V2):
            vh1 = ap * E(lambda k, m0, m1, ms2, *_: m1 ** 2 * W(V1, V2, m1, ms2))
            vh2 = ap * E(lambda k, m0, m1, ms2, *_: ms2 * W(V1, V2, m1, ms2))
            return vh1, vh2, stieltjes_averages(lam + vh2, vh1, c, beta, mpmath.sqrt)

        def F(V1, V2):
            av = averages(V1, V2)[2]
            return V1 - av["D/S"], V2 - av["1/S"]

        if start is None:
            V1 = V2 = mpmath.mpf(0)
            for _ in range(200):
                av = averages(V1, V2)[2]
                V1, V2 = av["D/S"], av["1/S"]
        else:
            V1, V2 = (mpmath.mpf(v) for v in start)
        V1, V2 = mpmath.findroot(F, (V1, V2), tol=mpmath.mpf(10) ** (-dps + 5))
        vh1, vh2, av = averages(V1, V2)

        def w_(m1, ms2):
            return W(V1, V2, m1, ms2)
        a11 = E(lambda k, m0, m1, ms2, *_: m0 ** 2 * w_(m1, ms2))
        a12 = E(lambda k, m0, m1, ms2, *_: k * m0 * m1 * w_(m1, ms2))
        a22 = E(lambda k, m0, m1, ms2, *_: (k * m1) ** 2 * w_(m1, ms2))
        b1 = E(lambda k, m0, m1, ms2, h, *_: m0 * h * w_(m1, ms2))
        b2 = E(lambda k, m0, m1, ms2, h, *_: k * m1 * h * w_(m1, ms2))
        g = beta * c * av["1/S"] * ap
        if r == 0:
            m, t = mpmath.mpf(0), g * b2 / (1 + g * a22)
        else:
            m, t = mpmath.lu_solve(mpmath.matrix([[a11, a12], [g * a12, 1 + g * a22]]),
                                   mpmath.matrix([b1, g * b2]))
        that = ap * E(lambda k, m0, m1, ms2, h, *_: k * m1 * (h - m0 * m - k * m1 * t)
                      * w_(m1, ms2))
        psihat = ap * E(lambda k, m0, m1, ms2, h, h1, h2: m1 * h1 * w_(m1, ms2))
        psi = beta * psihat * av["D/S"]

        def e0(k, m0, m1, ms2, h, h1, h2):
            y0 = m0 * m + k * m1 * t
            return h2 - 2 * h * y0 - 2 * m1 * psi * h1 + y0 ** 2
        e1 = ap * E(lambda *row: row[2] ** 2 * (e0(*row) + noise) * w_(row[2], row[3]) ** 2)
        e2 = ap * E(lambda *row: row[3] * (e0(*row) + noise) * w_(row[2], row[3]) ** 2)
        G11 = ap * E(lambda *row: row[2] ** 4 * w_(row[2], row[3]) ** 2)
        G12 = ap * E(lambda *row: row[2] ** 2 * row[3] * w_(row[2], row[3]) ** 2)
        G22 = ap * E(lambda *row: row[3] ** 2 * w_(row[2], row[3]) ** 2)
        K = mpmath.matrix([[av["D2/S2"], av["D/S2"]], [av["D/S2"], av["1/S2"]]])
        G = mpmath.matrix([[G11, G12], [G12, G22]])
        f = mpmath.matrix([beta * (c * that ** 2 * av["D/S2"] + psihat ** 2 * av["D2/S2"]),
                           beta * (c * that ** 2 * av["1/S2"] + psihat ** 2 * av["D/S2"])])
        q = mpmath.lu_solve(mpmath.eye(2) - K * G, K * mpmath.matrix([e1, e2]) + f)
        q1, q2 = q[0], q[1]

        def En(*row):
            return e0(*row) + row[2] ** 2 * q1 + row[3] * q2
        eps = E(En)
        train = E(lambda *row: (En(*row) + noise) * w_(row[2], row[3]) ** 2)
        return {"eps_g": +eps, "train_error": +train, "m": +m, "t": +t, "psi": +psi,
                "q1": +q1, "q2": +q2, "V1": +V1, "V2": +V2}
