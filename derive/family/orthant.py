"""The four-field orthant probability P(z1 > 0, z2 > 0, z3 > 0, z4 > 0) as a SymPy function.

For two and three fields the orthant probabilities are elementary (Sheppard):

    P2 = 1/4 + asin(r12) / (2 pi),   P3 = 1/8 + (asin r12 + asin r13 + asin r23) / (4 pi).

Four fields have no elementary closed form, but every partial derivative is elementary.  By
Price's theorem (d/dr_ab of an expectation = expectation of the mixed second derivative),

    dP4/dr_ab = phi2(0, 0; r_ab) * P(z_c > 0, z_d > 0 | z_a = z_b = 0)
              = 1 / (2 pi sqrt(1 - r_ab²)) * (1/4 + asin(r_cd|ab) / (2 pi)),

with {c, d} the other two fields and r_cd|ab their partial correlation given z_a = z_b = 0.
Integrating along the ray t·R (off-diagonal entries scaled by t, unit diagonal) from the
independent case (P4 = 1/16) gives Plackett's one-dimensional representation

    P4(R) = 1/16 + ∫_0^1 Σ_{a<b} r_ab · dP4/dr_ab(t R) dt .

:class:`Orthant4` carries the six correlations (r12, r13, r14, r23, r24, r34); it differentiates
to the elementary expressions above (so the Jacobians of the hierarchy stay elementary) and
rewrites to the integral (:meth:`Orthant4.as_integral`).  Its numbers (``evalf``, mpmath, and
:func:`lambdify` in mpmath or float64) come from the one numeric implementation,
:mod:`solvers.core.orthant`, which the printed modules call too: a quadrature that claims the
working precision or refuses.

>>> import sympy as sp
>>> sp.N(Orthant4(*[sp.Rational(1, 2)] * 6), 30)   # exchangeable, r = 1/2: exactly 1/5
0.200000000000000000000000000000
"""
from __future__ import annotations

from functools import lru_cache
from itertools import combinations

import mpmath as mp
import sympy as sp

from ..codegen.substitute import xreplace

PAIRS = tuple(combinations(range(4), 2))        # (0,1) (0,2) (0,3) (1,2) (1,3) (2,3)


def _r(args, a, b):
    return args[PAIRS.index((min(a, b), max(a, b)))]


def partial_correlation(args, a, b, c, d):
    """r_cd|ab: correlation of fields c, d given z_a = z_b = 0 (correlation matrix entries args).

    Numerator and both conditional variances are multiplied by 1 - r_ab² (> 0), which cancels.
    """
    r = _r(args, a, b)
    rca, rcb, rda, rdb, rcd = (_r(args, c, a), _r(args, c, b), _r(args, d, a), _r(args, d, b),
                               _r(args, c, d))
    one = 1 - r * r
    num = rcd * one - (rca * rda + rcb * rdb - r * (rca * rdb + rcb * rda))
    vc = one - (rca * rca + rcb * rcb - 2 * r * rca * rcb)
    vd = one - (rda * rda + rdb * rdb - 2 * r * rda * rdb)
    return num / (sp.sqrt(vc) * sp.sqrt(vd))


def gradient_entry(args, k):
    """dP4/dr_ab for the k-th pair (a, b) = PAIRS[k], exactly."""
    a, b = PAIRS[k]
    c, d = [i for i in range(4) if i not in (a, b)]
    r = args[k]
    rc = partial_correlation(args, a, b, c, d)
    return (sp.Rational(1, 4) + sp.asin(rc) / (2 * sp.pi)) / (2 * sp.pi * sp.sqrt(1 - r * r))


@lru_cache(maxsize=6)
def _gradient_template(k):
    r = sp.symbols("r0:6", cls=sp.Dummy)
    return gradient_entry(r, k), r


def p3(r12, r13, r23):
    """Three-field orthant probability (Sheppard)."""
    return sp.Rational(1, 8) + (sp.asin(r12) + sp.asin(r13) + sp.asin(r23)) / (4 * sp.pi)


class Orthant4(sp.Function):
    """P(z1>0, z2>0, z3>0, z4>0) for unit-variance fields with correlations
    (r12, r13, r14, r23, r24, r34), in that order."""

    nargs = 6
    # eval acts only on a zero correlation: derive.codegen.substitute.rebuild skips it for symbols
    symbolic_eval_is_identity = True

    @classmethod
    def eval(cls, *args):
        if all(a.is_zero for a in args):
            return sp.Rational(1, 16)
        # a field uncorrelated with the other three halves the three-field probability
        for f in range(4):
            if all(_r(args, f, g).is_zero for g in range(4) if g != f):
                o = [g for g in range(4) if g != f]
                return p3(_r(args, o[0], o[1]), _r(args, o[0], o[2]), _r(args, o[1], o[2])) / 2
        return None

    def fdiff(self, argindex=1):
        if all(a.is_Symbol for a in self.args):
            # the printed derivatives differentiate P4 of named correlations many times over:
            # the entry is built once in placeholder symbols and renamed (the same expression)
            template, r = _gradient_template(argindex - 1)
            return xreplace(template, dict(zip(r, self.args)))
        return gradient_entry(self.args, argindex - 1)

    def integrand(self, t: sp.Symbol) -> sp.Expr:
        """d/dt P4(t R) as an exact expression in t."""
        scaled = [t * a for a in self.args]
        return sum(a * gradient_entry(scaled, k) for k, a in enumerate(self.args))

    def as_integral(self) -> sp.Expr:
        """1/16 + Integral(..., (t, 0, 1)): the unevaluated one-dimensional representation."""
        t = sp.Dummy("t", real=True)
        return sp.Rational(1, 16) + sp.Integral(self.integrand(t), (t, 0, 1))

    def _eval_rewrite_as_Integral(self, *args, **kwargs):
        return self.as_integral()

    def _eval_evalf(self, prec):
        if not all(a.is_number for a in self.args):
            return None
        dps = mp.libmp.prec_to_dps(prec)
        with mp.workdps(dps + 10):
            vals = [mp.mpf(sp.N(a, dps + 15)) for a in self.args]
        return sp.Float(orthant4_digits(vals, dps), dps)

    def _mpmath_(self, prec, rnd):   # lets lambdify(..., "mpmath") and mpmath evaluate it
        return orthant4_digits([mp.mpf(a) for a in self.args], mp.libmp.prec_to_dps(prec))


# digits computed beyond those claimed: the numeric quadrature's error is below 10^-(its working
# precision + 1), so the value rounded to dps digits carries all of them
_GUARD = 5


def orthant4_digits(r, dps: int):
    """P4 at the six correlations r (mpmath numbers or strings) to dps digits, by the numeric
    layer's quadrature (:func:`solvers.core.orthant.orthant4_mpmath`), which refuses
    (ValueError) rather than return fewer digits."""
    from solvers.core.orthant import orthant4_mpmath
    with mp.workdps(dps + _GUARD):
        return orthant4_mpmath(*[mp.mpf(x) for x in r])


def lambdify(args, expr, backend: str = "mpmath"):
    """``sympy.lambdify`` that also evaluates :class:`Orthant4` through :mod:`solvers.core.orthant`
    (mpmath at the caller's working precision, or numpy float64 with broadcasting).

    >>> import sympy as sp
    >>> r = sp.symbols("r0:6")
    >>> f = lambdify(r, Orthant4(*r), "numpy")
    >>> round(float(f(*[0.5] * 6)), 12)
    0.2
    """
    from solvers.core.orthant import orthant4_float, orthant4_mpmath
    if backend == "mpmath":
        mods = [{"Orthant4": orthant4_mpmath}, "mpmath"]
    elif backend == "numpy":
        mods = [{"Orthant4": orthant4_float}, "numpy"]
    else:
        raise ValueError(f"backend must be 'mpmath' or 'numpy', got {backend!r}")
    return sp.lambdify(args, expr, modules=mods)
