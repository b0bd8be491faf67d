"""Number contexts: one numeric algorithm, several number types.

A context bundles what generated code and the integrators need from a number type: exact
conversion of integers / fractions / decimal strings, the constants and elementary functions
that appear in the derived expressions (pi, sqrt, asin), and a scoped precision.

    with MpmathContext(dps=200) as ctx:   # precision is set here and restored on exit
        x = ctx.convert(Fraction(1, 3))

Nothing here touches global precision at import time.  Arrays of high-precision numbers are
numpy object arrays, so elementwise arithmetic runs in numpy's C loop over Python objects.

Precision is a property of the context, and it is only ever changed for a ``with`` block:

    with ctx:                          # the context's own dps
        with ctx.workdps(40): ...      # a shorter (or longer) scope, restored on exit
        with ctx.extradps(10): ...     # guard digits on top of the current ones

python-flint keeps one process-wide precision; this module is the only one that assigns it
(:class:`_FlintPrecision`), always restoring the previous value.
"""
from __future__ import annotations

import math
from fractions import Fraction
from numbers import Integral
from operator import methodcaller

import mpmath
import numpy as np

from solvers.core import orthant as _orthant


class _NoPrecision:
    """The scope of a number type without a precision (float64): nothing to set."""

    def __init__(self, dps=None):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class _FlintPrecision:
    """Set python-flint's process-wide precision to ``dps`` digits for a block; restore it after.

    The one place in the package that assigns ``flint.ctx`` (a small class rather than a
    generator: it runs a few times per right-hand-side evaluation in the arb_mat path).
    """

    __slots__ = ("dps", "_saved")

    def __init__(self, dps: int):
        self.dps = int(dps)

    def __enter__(self):
        import flint
        self._saved = flint.ctx.prec
        flint.ctx.dps = self.dps
        return self

    def __exit__(self, *exc):
        import flint
        flint.ctx.prec = self._saved
        return False


class _Context:
    name = "abstract"
    dps: int | None = None
    _scope = _NoPrecision

    def __enter__(self):
        self._active = self._scope(self.dps)
        self._active.__enter__()
        return self

    def __exit__(self, *exc):
        self._active.__exit__(*exc)
        self._active = None
        return False

    def workdps(self, dps: int):
        """Scope running at ``dps`` digits (for mpmath and flint; a no-op for float64)."""
        return self._scope(dps)

    def extradps(self, n: int):
        """Scope running at ``n`` more digits than the current working precision."""
        return self._scope(self.current_dps() + n)

    def current_dps(self) -> int:
        return self.dps

    def native(self, arr) -> np.ndarray:
        """The array type the generated code runs on (object arrays here)."""
        return arr

    def overflowed(self, arr) -> bool:
        """Whether an array has left the number type's range (only float64 has one)."""
        return False

    def is_finite(self, x) -> bool:
        if hasattr(x, "is_finite"):
            return bool(x.is_finite())
        try:
            return math.isfinite(float(x))
        except (OverflowError, ValueError):
            return False

    def vandermonde_solve(self, lam, B, shift: int) -> np.ndarray:
        """X with Σ_k λ_k^(l+shift) X_k = B_l (l < L): at the working precision + 10 digits."""
        L, cols = len(lam), B.shape[1]
        with mpmath.workdps(self.dps + 10):
            x = [to_mpf(v) for v in lam]
            V = mpmath.matrix([[v ** l for v in x] for l in range(shift, L + shift)])
            out = [mpmath.lu_solve(V, mpmath.matrix([to_mpf(v) for v in B[:, j]]))
                   for j in range(cols)]
        return np.array([[self.convert(out[j][k]) for j in range(cols)] for k in range(L)],
                        dtype=object)

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

    def native(self, arr) -> np.ndarray:
        return np.asarray(arr, dtype=float)

    def overflowed(self, arr) -> bool:
        return not np.all(np.isfinite(np.asarray(arr, dtype=float)))

    def vandermonde_solve(self, lam, B, shift: int) -> np.ndarray:
        V = np.array([[float(v) ** l for v in lam] for l in range(len(lam))])
        if shift:
            V = V * np.asarray(lam, dtype=float) ** shift
        return np.linalg.solve(V, np.asarray(B, dtype=float))

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

    # the elementary functions generated code calls (ctx.sqrt, ctx.asin, ...)
    sqrt, asin, exp, log = map(staticmethod, (np.sqrt, np.arcsin, np.exp, np.log))
    # the four-field orthant probability of ReLU students (a quadrature: solvers/core/orthant.py)
    orthant4 = staticmethod(_orthant.orthant4_float)


class _ArbitraryPrecision(_Context):
    """A number type whose precision is chosen: ``dps`` decimal digits (at least 15)."""

    def __init__(self, dps: int):
        if dps < 15:
            raise ValueError(f"dps must be at least 15, got {dps}")
        self.dps = int(dps)


class MpmathContext(_ArbitraryPrecision):
    """mpmath mpf at ``dps`` decimal digits; the precision is scoped to the ``with`` block."""

    name = "mpmath"

    _scope = staticmethod(mpmath.workdps)


    @staticmethod
    def current_dps() -> int:
        return mpmath.mp.dps

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

    sqrt, asin, exp, log = map(staticmethod, (mpmath.sqrt, mpmath.asin, mpmath.exp, mpmath.log))
    orthant4 = staticmethod(_orthant.orthant4_mpmath)


class FlintContext(_ArbitraryPrecision):
    """python-flint ``arb`` balls at ``dps`` digits; only midpoints are carried between steps.

    flint's precision is process-global, so it is set on entry and restored on exit.
    """

    name = "flint"
    _scope = _FlintPrecision


    @staticmethod
    def current_dps() -> int:
        import flint
        return flint.ctx.dps

    @staticmethod
    def bits() -> int:
        """The working precision in bits (flint's unit)."""
        import flint
        return flint.ctx.prec

    @property
    def pi(self):
        from flint import arb
        return arb.pi()

    @staticmethod
    def convert(x):
        from flint import arb
        if isinstance(x, arb):
            return x
        if isinstance(x, Integral):
            return arb(int(x))
        if isinstance(x, mpmath.mpf) and not mpmath.isfinite(x):
            raise ValueError(f"cannot convert non-finite {x} to arb")
        if isinstance(x, (Fraction, str, float, mpmath.mpf)) or hasattr(x, "q"):
            f = (exact_fraction(x) if isinstance(x, mpmath.mpf) else
                 Fraction(int(x.p), int(x.q)) if hasattr(x, "q") else Fraction(x))
            return arb(f.numerator) / f.denominator
        if hasattr(x, "evalf"):
            return arb(str(x.evalf(FlintContext.current_dps() + 10)))
        return arb(x)

    sqrt, asin, exp, log = (staticmethod(methodcaller(f)) for f in ("sqrt", "asin", "exp", "log"))
    orthant4 = staticmethod(_orthant.orthant4_arb)

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


def exact_fraction(x) -> Fraction:
    """The exact binary value of an mpf (or a float) as a Fraction."""
    sign, man, exp, _ = mpmath.mpf(x)._mpf_     # (man_exp drops the sign)
    return (-1) ** sign * Fraction(int(man)) * Fraction(2) ** int(exp)


def to_mpf(x) -> mpmath.mpf:
    """Exact mpf of a float, mpf or arb midpoint (whatever mpmath's working precision is)."""
    if isinstance(x, mpmath.mpf):
        return x
    if hasattr(x, "mid"):
        man, exp = x.mid().man_exp()
        # make_mpf keeps every bit; mpf(raw) would round to mpmath's current precision.
        return mpmath.mp.make_mpf(mpmath.libmp.from_man_exp(int(man), int(exp)))
    return mpmath.mpf(float(x))
