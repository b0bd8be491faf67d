"""The four-field orthant probability P4 = P(z1 > 0, z2 > 0, z3 > 0, z4 > 0) in every number
context, without SymPy.

A ReLU student at order 2 needs ⟨θ(x_i) θ(x_j) relu(c) relu(d)⟩, which contains P4 of the four
fields' correlations r = (r12, r13, r14, r23, r24, r34) (derive/family/orthant.py, where the
symbolic function ``Orthant4`` lives).  Its gradient is elementary (Price's theorem),

    dP4/dr_ab = (1/4 + asin(r_cd|ab) / (2π)) / (2π sqrt(1 - r_ab²)),

with r_cd|ab the partial correlation of the other two fields given z_a = z_b = 0, and P4 itself
is Plackett's one-dimensional integral along the ray t·r from the independent case:

    P4(r) = 1/16 + ∫_0^1 Σ_ab r_ab · dP4/dr_ab(t r) dt.

The integrand is analytic on [0, 1] for a positive-definite correlation matrix but has
square-root singularities just beyond t = 1 when the matrix is nearly singular (a student unit
aligned with a teacher unit), so each context integrates adaptively and refuses (ValueError)
rather than return fewer digits than it carries:

* mpmath: Gauss–Legendre, then tanh-sinh quadrature (``mpmath.quad``) with guard digits, the
  error estimate checked;
* python-flint arb: ``acb.integral`` (rigorous enclosure; the branch cuts of sqrt and asin are
  checked on every ball), the midpoint returned; for nearly aligned fields (smallest eigenvalue
  of the correlation matrix below ALIGNED) mpmath's tanh-sinh rule at flint's precision, whose
  error estimate is checked (faster there);
* float64: Gauss–Legendre on panels graded towards t = 1, compared with a rule of fewer nodes;
  arrays broadcast (the generated ε_g and coefficients vectorise over numpy arrays).

>>> import mpmath
>>> with mpmath.workdps(30):
...     print(mpmath.nstr(orthant4_mpmath(*[mpmath.mpf(1) / 2] * 6), 25))  # exchangeable r = 1/2: 1/5
0.2
"""
from __future__ import annotations

import math

import numpy as np

PAIRS = ((0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3))
_INDEX = {p: k for k, p in enumerate(PAIRS)}


def _r(s, a, b):
    return s[_INDEX[(a, b) if a < b else (b, a)]]


def _ray_derivative(r, t, sqrt, asin, pi):
    """d/dt P4(t r) = Σ_ab r_ab dP4/dr_ab(t r), in the arithmetic of the given functions."""
    s = [t * x for x in r]
    total = 0
    for k, (a, b) in enumerate(PAIRS):
        c, d = [i for i in range(4) if i not in (a, b)]
        rab = s[k]
        rca, rcb, rda, rdb, rcd = _r(s, c, a), _r(s, c, b), _r(s, d, a), _r(s, d, b), _r(s, c, d)
        one = 1 - rab * rab
        num = rcd * one - (rca * rda + rcb * rdb - rab * (rca * rdb + rcb * rda))
        vc = one - (rca * rca + rcb * rcb - 2 * rab * rca * rcb)
        vd = one - (rda * rda + rdb * rdb - 2 * rab * rda * rdb)
        rc = num / (sqrt(vc) * sqrt(vd))
        total = total + r[k] * (0.25 + asin(rc) / (2 * pi)) / (2 * pi * sqrt(one))
    return total


def _check_positive_definite(r) -> float:
    """ValueError unless the correlation matrix of r is positive definite (float64 screen: the
    quadratures below assume it, and a matrix outside the cone is not a state of the ODEs)."""
    R = np.eye(4)
    for (a, b), x in zip(PAIRS, r):
        R[a, b] = R[b, a] = float(x.mid()) if hasattr(x, "mid") else float(x)
    low = np.linalg.eigvalsh(R)[0] if np.all(np.isfinite(R)) else -np.inf
    if not low > 0:
        raise ValueError(f"orthant probability: the correlation matrix is not positive definite "
                         f"(smallest eigenvalue {low:.3g}): the state is not realisable")
    return float(low)


# -- mpmath -----------------------------------------------------------------------------------

def orthant4_mpmath(*r):
    """P4 at mpmath's working precision (scoped by the caller's context); ValueError when the
    quadrature's error estimate is not below 10^-dps."""
    import mpmath as mp
    _check_positive_definite(r)
    dps = mp.mp.dps
    with mp.workdps(dps + 10):
        rr = [mp.mpf(x) for x in r]

        def f(t):
            return _ray_derivative(rr, t, mp.sqrt, mp.asin, mp.pi)

        # tanh-sinh: measured faster than Gauss–Legendre here at 30 and 100 digits, and it
        # copes with the near-singular end point of an almost aligned pair (bench_orthant.py)
        val, err = mp.quad(f, [0, 1], error=True)
        if not err < mp.mpf(10) ** (-dps - 1):
            raise ValueError(f"orthant probability: quadrature error {mp.nstr(err, 3)} above "
                             f"1e-{dps} (correlation matrix close to singular?)")
        out = mp.mpf(1) / 16 + val
    return +out


# -- python-flint arb -------------------------------------------------------------------------

def orthant4_arb(*r):
    """P4 as an arb at flint's working precision (the caller's context sets it): the rigorous
    enclosure of ``acb.integral``; ValueError when it is wider than the precision allows."""
    from flint import acb, arb, ctx

    if _check_positive_definite(r) < ALIGNED:
        # nearly aligned fields: acb.integral bisects towards the end point (measured 5x
        # slower than tanh-sinh there, bench_orthant.py); mpmath at flint's precision instead,
        # with its error estimate checked, returned as an exact arb of the midpoint
        import mpmath as mp
        with mp.workdps(ctx.dps):
            val = orthant4_mpmath(*[mp.mpf(_mid_text(x)) for x in r])
            return arb(mp.nstr(val, ctx.dps + 5, strip_zeros=False, min_fixed=-mp.inf,
                               max_fixed=mp.inf))
    rr = [acb(x.mid() if isinstance(x, arb) else x) for x in r]
    pi = arb.pi()

    def sqrt_(z, analytic):
        return z.sqrt(analytic=analytic)

    def f(t, analytic):
        def asin(z):
            # asin z = -i log(i z + sqrt(1 - z²)): analytic where 1 - z² is off (-inf, 0]
            w = 1 - z * z
            if analytic and not w.real > 0:
                return acb(arb("nan"))
            return -1j * (1j * z + w.sqrt(analytic=analytic)).log(analytic=analytic)
        return _ray_derivative(rr, t, lambda z: sqrt_(z, analytic), asin, pi)

    val = acb.integral(f, 0, 1).real + arb(1) / 16
    if not val.is_finite() or val.rad() > val.mid().abs_upper() * arb(2) ** (-ctx.prec + 8):
        raise ValueError(f"orthant probability: enclosure {val.str(5, radius=True)} too wide at "
                         f"{ctx.dps} digits (correlation matrix close to singular?)")
    return arb(val.mid())


# below this smallest eigenvalue of the correlation matrix the flint context integrates with
# mpmath's tanh-sinh rule (see orthant4_arb)
ALIGNED = 0.1


def _mid_text(x) -> str:
    if hasattr(x, "mid"):
        return x.mid().str(radius=False, more=True)
    return str(x)


# -- float64 ----------------------------------------------------------------------------------

def _panels(n_per_panel: int, n_panels: int):
    """Gauss–Legendre nodes and weights on [0, 1], panels halving towards t = 1."""
    x, w = np.polynomial.legendre.leggauss(n_per_panel)
    edges = [0.0] + [1 - 0.5 ** k for k in range(1, n_panels)] + [1.0]
    ts, ws = [], []
    for a, b in zip(edges[:-1], edges[1:]):
        ts.append(a + (b - a) * (x + 1) / 2)
        ws.append((b - a) * w / 2)
    return np.concatenate(ts), np.concatenate(ws)


_FINE = _panels(20, 12)
_COARSE = _panels(14, 12)
FLOAT64_TOL = 1e-12


def orthant4_float(*r):
    """P4 in float64 (numpy arrays broadcast); ValueError when two Gauss–Legendre rules differ
    by more than FLOAT64_TOL."""
    rr = [np.asarray(x, dtype=float)[..., None] for x in r]
    if all(np.ndim(x) == 0 for x in r):
        _check_positive_definite(r)

    def rule(nodes):
        t, w = nodes
        vals = _ray_derivative(rr, t, np.sqrt, np.arcsin, math.pi)
        return 1 / 16 + np.sum(vals * w, axis=-1)

    with np.errstate(invalid="ignore"):         # outside the cone: refused just below
        fine, coarse = rule(_FINE), rule(_COARSE)
    diff = np.max(np.abs(fine - coarse)) if np.size(fine) else 0.0
    if not diff <= FLOAT64_TOL:
        raise ValueError(f"orthant probability: float64 quadrature rules differ by {diff:.1e} "
                         f"(correlation matrix close to singular?)")
    return fine if np.ndim(fine) else float(fine)
