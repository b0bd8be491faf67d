"""Number contexts: one numeric algorithm, several number types.

A context bundles what generated code and the integrators need from a number type: exact
conversion of integers / fractions / decimal strings, the constants and elementary functions
that appear in the derived expressions (pi, sqrt, asin), and a scoped precision.

    with MpmathContext(dps=200) as ctx:   # precision is set here and restored on exit
        x = ctx.convert(Fraction(1, 3))

Nothing here touches global precision at import time.  Arrays of high-precision numbers are
numpy object arrays, so elementwise arithmetic runs in numpy's C loop over Python objects.
"""
from __future__ import annotations

import math
from fractions import Fraction
from numbers import Integral

import mpmath
import numpy as np


class _Context:
    name = "abstract"
    dps: int | None = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def array(self, values) -> np.ndarray:
        """Object array (or float64 array) of converted values, any shape."""
        arr = np.asarray(values, dtype=object)
        out = np.empty(arr.shape, dtype=object)
        for idx, v in np.ndenumerate(arr):
            out[idx] = self.convert(v)
        return out

    def zeros(self, shape) -> np.ndarray:
        out = np.empty(shape, dtype=object)
        out.fill(self.convert(0))
        return out

    def to_float(self, x) -> float:
        return float(x)


class Float64Context(_Context):
    """IEEE double precision, numpy float64 arrays."""

    name = "float64"
    dps = 15
    pi = math.pi

    @staticmethod
    def convert(x) -> float:
        if isinstance(x, str):
            return float(Fraction(x))
        return float(x)

    def array(self, values) -> np.ndarray:
        arr = np.asarray(values, dtype=object)
        return np.vectorize(self.convert, otypes=[float])(arr) if arr.size else arr.astype(float)

    def zeros(self, shape) -> np.ndarray:
        return np.zeros(shape)

    sqrt = staticmethod(np.sqrt)
    asin = staticmethod(np.arcsin)
    exp = staticmethod(np.exp)
    log = staticmethod(np.log)


class MpmathContext(_Context):
    """mpmath mpf at ``dps`` decimal digits; the precision is scoped to the ``with`` block."""

    name = "mpmath"

    def __init__(self, dps: int):
        if dps < 15:
            raise ValueError(f"dps must be at least 15, got {dps}")
        self.dps = int(dps)
        self._manager = None

    def __enter__(self):
        self._manager = mpmath.workdps(self.dps)
        self._manager.__enter__()
        return self

    def __exit__(self, *exc):
        self._manager.__exit__(*exc)
        self._manager = None
        return False

    @property
    def pi(self):
        return +mpmath.pi

    @staticmethod
    def convert(x):
        if isinstance(x, mpmath.mpf):
            return +x
        if isinstance(x, Fraction):
            return mpmath.mpf(x.numerator) / x.denominator
        if isinstance(x, str):
            return mpmath.mpf(x)
        if isinstance(x, Integral):
            return mpmath.mpf(int(x))
        if hasattr(x, "p") and hasattr(x, "q"):  # sympy Rational / Integer
            return mpmath.mpf(int(x.p)) / int(x.q)
        if hasattr(x, "evalf"):  # any other exact sympy number
            return mpmath.mpf(x.evalf(mpmath.mp.dps + 10))
        return mpmath.mpf(x)

    sqrt = staticmethod(mpmath.sqrt)
    asin = staticmethod(mpmath.asin)
    exp = staticmethod(mpmath.exp)
    log = staticmethod(mpmath.log)


class FlintContext(_Context):
    """python-flint ``arb`` balls at ``dps`` digits; only midpoints are carried between steps.

    flint's precision is process-global, so it is set on entry and restored on exit.
    """

    name = "flint"

    def __init__(self, dps: int):
        if dps < 15:
            raise ValueError(f"dps must be at least 15, got {dps}")
        self.dps = int(dps)
        self._saved = None

    def __enter__(self):
        import flint
        self._saved = flint.ctx.prec
        flint.ctx.dps = self.dps
        return self

    def __exit__(self, *exc):
        import flint
        flint.ctx.prec = self._saved
        return False

    @property
    def pi(self):
        from flint import arb
        return arb.pi()

    @staticmethod
    def convert(x):
        from flint import arb
        if isinstance(x, arb):
            return x
        if isinstance(x, Fraction):
            return arb(x.numerator) / x.denominator
        if isinstance(x, str):
            f = Fraction(x)
            return arb(f.numerator) / f.denominator
        if isinstance(x, Integral):
            return arb(int(x))
        if hasattr(x, "p") and hasattr(x, "q"):
            return arb(int(x.p)) / int(x.q)
        if isinstance(x, mpmath.mpf):
            # mpf.man_exp drops the sign: take it from the raw (sign, man, exp, bc) tuple.
            if not mpmath.isfinite(x):
                raise ValueError(f"cannot convert non-finite {x} to arb")
            sign, man, exp, _ = x._mpf_
            return arb((-1) ** sign * int(man)) * arb(2) ** int(exp)
        if isinstance(x, float):
            f = Fraction(x)
            return arb(f.numerator) / f.denominator
        if hasattr(x, "evalf"):
            return arb(str(x.evalf(FlintContext._digits() + 10)))
        return arb(x)

    @staticmethod
    def _digits() -> int:
        import flint
        return flint.ctx.dps

    @staticmethod
    def sqrt(x):
        return x.sqrt()

    @staticmethod
    def asin(x):
        return x.asin()

    @staticmethod
    def exp(x):
        return x.exp()

    @staticmethod
    def log(x):
        return x.log()

    def to_float(self, x) -> float:
        return float(x.mid())


def context(kind: str, dps: int | None = None) -> _Context:
    """``context("mpmath", 50)``, ``context("flint", 50)`` or ``context("float64")``."""
    if kind == "float64":
        return Float64Context()
    if kind == "mpmath":
        return MpmathContext(dps)
    if kind == "flint":
        return FlintContext(dps)
    raise ValueError(f"number type must be 'float64', 'mpmath' or 'flint', got {kind!r}")


def to_mpf(x) -> mpmath.mpf:
    """Exact mpf of a float, mpf or arb midpoint (whatever mpmath's working precision is)."""
    if isinstance(x, mpmath.mpf):
        return x
    if hasattr(x, "mid"):
        man, exp = x.mid().man_exp()
        # make_mpf keeps every bit; mpf(raw) would round to mpmath's current precision.
        return mpmath.mp.make_mpf(mpmath.libmp.from_man_exp(int(man), int(exp)))
    return mpmath.mpf(float(x))
