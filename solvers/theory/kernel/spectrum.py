"""Kernel eigen-systems: eigenvalues λ_k with multiplicities and the target power c_k² per mode.

A `KernelSpectrum` holds *groups* of degenerate modes (value, multiplicity, target power per
mode), sorted by decreasing eigenvalue.  Three constructors cover the theory's uses:

- `power_law(a, M, b)`: λ_k = k^(−a), c_k² = k^(−b), k = 1..M (not normalised; one mode each);
- `explicit(eigenvalues, target)`: a user's lists (e.g. measured from data);
- `levels(L, beta, N)`: the toolkit's L-level spectrum (derive/spectra.py), each level with
  multiplicity N/L, seen as the linear kernel x·x'/N: eigenvalue λ_l/N per direction and the
  linear teacher's power c² = λ_l/N per direction (Σ c² = Tr Σ/N = 1).

Every spectrum keeps an exact description next to the float64 arrays, so that the same system
can be evaluated with mpmath at any precision: when it spans more than the double range (the
float64 arrays are then ``None``) and for digit checks.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import mpmath
import numpy as np

# float64 is used only when every eigenvalue and target power (and λ·P, 1/λ sums) stays
# comfortably inside the normal range; beyond this, mpmath takes over.
_LOG10_SAFE = 250.0
MAX_MODES = 50_000_000


def _log10(x) -> float:
    """log10 of a positive Fraction / int / float / mpf without under- or overflow."""
    if isinstance(x, Fraction):
        return math.log10(x.numerator) - math.log10(x.denominator)
    if isinstance(x, mpmath.mpf):
        return float(mpmath.log10(x))
    return math.log10(x)


def _as_fraction(x) -> Fraction:
    if isinstance(x, Fraction):
        return x
    if isinstance(x, int):
        return Fraction(x)
    if isinstance(x, float):
        if not math.isfinite(x):
            raise ValueError(f"not a finite number: {x!r}")
        return Fraction(str(x))
    if isinstance(x, str):
        return Fraction(x)
    raise TypeError(f"cannot read {x!r} as an exact number")


@dataclass(frozen=True)
class KernelSpectrum:
    """Groups of degenerate modes, by decreasing eigenvalue.

    ``lam``, ``c2`` are float64 arrays (None when the spectrum leaves the double range),
    ``mult`` the multiplicities (float64 array of integers).  ``mp_values()`` evaluates the
    exact description at the current mpmath precision.
    """

    kind: str                      # "power_law" | "explicit" | "levels"
    params: dict                   # exact parameters of the constructor (for meta / mpmath)
    mult: np.ndarray
    lam: np.ndarray | None
    c2: np.ndarray | None
    _mp: object = field(repr=False, compare=False, default=None)

    @property
    def groups(self) -> int:
        return int(self.mult.size)

    @property
    def modes(self) -> int:
        """Number of modes N = Σ multiplicities (the rank of the kernel)."""
        return int(self.mult.sum())

    @property
    def float64_ok(self) -> bool:
        return self.lam is not None

    def mp_values(self):
        """(λ, c², m) as lists of mpf at the current precision (exact data re-evaluated)."""
        lam, c2 = self._mp()
        return lam, c2, [mpmath.mpf(int(m)) for m in self.mult]

    def expanded(self):
        """(λ, c²) per mode, float64, each group repeated by its multiplicity."""
        if not self.float64_ok:
            raise ValueError("this spectrum spans more than the float64 range")
        reps = self.mult.astype(np.int64)
        return np.repeat(self.lam, reps), np.repeat(self.c2, reps)

    def describe(self) -> dict:
        out = {"kind": self.kind, "modes": self.modes, "groups": self.groups}
        for k, v in self.params.items():
            if isinstance(v, Fraction):
                out[k] = float(v)
            elif isinstance(v, (int, float, str)):
                out[k] = v
        return out


def _finish(kind, params, mult, exact_lam_log10, exact_c2_log10, float_builder, mp_builder):
    lo = min(exact_lam_log10)
    hi = max(exact_lam_log10)
    c_nonzero = [v for v in exact_c2_log10 if v is not None]
    ok = (-_LOG10_SAFE < lo and hi < _LOG10_SAFE and
          all(-_LOG10_SAFE < v < _LOG10_SAFE for v in c_nonzero))
    lam, c2 = float_builder() if ok else (None, None)
    return KernelSpectrum(kind, params, np.asarray(mult, dtype=np.float64), lam, c2, mp_builder)


def power_law(a, M: int, b=None) -> KernelSpectrum:
    """λ_k = k^(−a), c_k² = k^(−b) (b = a when not given: a draw from the GP prior)."""
    a = _as_fraction(a)
    b = a if b is None else _as_fraction(b)
    M = int(M)
    if M < 1:
        raise ValueError(f"M must be >= 1, got {M}")
    if M > MAX_MODES:
        raise ValueError(f"M = {M} modes is more than this machine-independent cap "
                         f"({MAX_MODES}: float64 arrays plus block moments in memory)")
    if not a > 0:
        raise ValueError(f"a must be > 0, got {float(a)}")
    logM = math.log10(M)

    def floats():
        k = np.arange(1, M + 1, dtype=np.float64)
        return k ** (-float(a)), k ** (-float(b))

    def mp():
        ka, kb = mpmath.mpf(a.numerator) / a.denominator, mpmath.mpf(b.numerator) / b.denominator
        return ([mpmath.mpf(k) ** (-ka) for k in range(1, M + 1)],
                [mpmath.mpf(k) ** (-kb) for k in range(1, M + 1)])

    return _finish("power_law", {"a": a, "b": b, "M": M}, np.ones(M),
                   [0.0, -float(a) * logM], [0.0, -float(b) * logM], floats, mp)


def explicit(eigenvalues, target=None, multiplicities=None) -> KernelSpectrum:
    """User lists: eigenvalues (> 0), target power c_k² per mode (≥ 0; default c_k² = λ_k)."""
    lam = [_as_fraction(v) for v in eigenvalues]
    if not lam:
        raise ValueError("the eigenvalue list is empty")
    for i, v in enumerate(lam):
        if not v > 0:
            raise ValueError(f"eigenvalues[{i}] = {float(v):g} must be > 0")
    c2 = list(lam) if target is None else [_as_fraction(v) for v in target]
    if len(c2) != len(lam):
        raise ValueError(f"target has {len(c2)} entries but there are {len(lam)} eigenvalues")
    for i, v in enumerate(c2):
        if v < 0:
            raise ValueError(f"target[{i}] = {float(v):g} must be >= 0 (it is c_k^2)")
    mult = [1] * len(lam) if multiplicities is None else [int(m) for m in multiplicities]
    if len(mult) != len(lam) or any(m < 1 for m in mult):
        raise ValueError("one multiplicity >= 1 per eigenvalue")
    order = sorted(range(len(lam)), key=lambda i: lam[i], reverse=True)
    lam, c2, mult = [lam[i] for i in order], [c2[i] for i in order], [mult[i] for i in order]

    def floats():
        return (np.array([float(v) for v in lam]), np.array([float(v) for v in c2]))

    def mp():
        return ([mpmath.mpf(v.numerator) / v.denominator for v in lam],
                [mpmath.mpf(v.numerator) / v.denominator for v in c2])

    return _finish("explicit", {"eigenvalues": len(lam)}, mult, [_log10(v) for v in lam],
                   [_log10(v) if v > 0 else None for v in c2], floats, mp)


def levels(L: int, beta, N: int) -> KernelSpectrum:
    """The toolkit's spectrum (derive/spectra.power_law) as the linear kernel x·x'/N.

    Level l: eigenvalue λ_l/N with multiplicity N/L, target power λ_l/N per direction (the
    linear teacher y = B·x/√N with B ~ N(0, I) has E[c²] = λ_l/N).
    """
    from derive.spectra import power_law as level_power_law
    import sympy as sp
    L, N = int(L), int(N)
    if N % L:
        raise ValueError(f"L = {L} does not divide N = {N}")
    beta = _as_fraction(beta)
    spec = level_power_law(L, sp.Rational(beta.numerator, beta.denominator))
    vals = [v / N for v in spec.eigenvalues]       # exact SymPy numbers
    logs = [float(sp.log(v, 10).evalf(20)) for v in vals]

    def floats():
        arr = np.array([float(sp.N(v, 20)) for v in vals])
        return arr, arr.copy()

    def mp():
        dps = mpmath.mp.dps + 5
        lam = [mpmath.mpf(sp.N(v, dps)) for v in vals]
        return lam, list(lam)

    return _finish("levels", {"L": L, "beta": beta, "N": N}, [N // L] * L, logs, logs,
                   floats, mp)
