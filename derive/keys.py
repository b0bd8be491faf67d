"""What names a derived system: the student and teacher activations, the widths K, M and the
second-layer readouts.

Kept apart from :mod:`derive.hierarchy` so that the numeric layer can name systems (and lay out
their states) without the symbolic machinery.  The named activations ("erf", "linear", "relu")
need no SymPy; a polynomial activation such as ``"x**3 - 3*x"`` is put in canonical form by
:mod:`derive.family.activations` (which imports SymPy) so that equal polynomials name the same
system.

>>> SystemKey("erf", 2, 2).tag                      # the checked-in modules keep their names
'erf_K2_M2'
>>> SystemKey("relu", 2, 2, teacher="erf").tag
'relu_erf_K2_M2'
>>> SystemKey("erf", 1, 1, teacher="erf") == SystemKey("erf", 1, 1)
True
>>> SystemKey("erf", 2, 2, trained=True).tag        # v learned: it joins the state
'erf_K2_M2_tv'
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

# the activations of derive/integrals.py (hand-written erf / linear forms, the float64 kernels)
ACTIVATIONS = ("erf", "linear")
# the named activations of the committee-machine family (derive/family); polynomials besides
from derive.polynomial_text import NAMED  # noqa: E402  (the one list, SymPy-free)


def check_activation(activation: str) -> str:
    """``activation`` if it is one of ACTIVATIONS (erf, linear), else ValueError."""
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {ACTIVATIONS}, got {activation!r}")
    return activation


def canonical_activation(spec) -> str:
    """The canonical name of an activation: "erf", "linear", "relu" or the canonical SymPy text
    of a polynomial in x ("x" is "linear").  Raises ValueError (one line) on anything else.

    >>> canonical_activation(" relu "), canonical_activation("x"), canonical_activation("-3*x + x**3")
    ('relu', 'linear', 'x**3 - 3*x')
    """
    if isinstance(spec, str) and spec.strip() in NAMED:
        return spec.strip()
    from derive.family.activations import X, activation   # SymPy: polynomials only
    import sympy as sp
    act = activation(spec)
    if act.kind != "poly":
        return act.kind
    return sp.sstr(act.expr(X))


def activation_tag(name: str) -> str:
    """Module-name-safe tag of a canonical activation: the name, or p + a hash of the polynomial."""
    if name in NAMED:
        return name
    return "p" + hashlib.sha256(name.encode()).hexdigest()[:10]


# paper normalisation of the readouts (docs/theory/conventions.md): v_i = sqrt(M)/K, u_n = 1/sqrt(M)
PAPER = "paper"


@dataclass(frozen=True)
class SystemKey:
    """What a derived system depends on besides the spectrum.

    Parameters
    ----------
    activation : str
        The student activation g_s ("erf", "linear", "relu" or a polynomial in x).
    K, M : int
        Student and teacher widths.
    teacher : str or None
        The teacher activation g_t; None (or equal to ``activation``) means the same as the
        student's.  Stored as None in that case, so that equal systems compare equal.
    readout : tuple of str or None
        The fixed second-layer weights (v_1..v_K, u_1..u_M) as exact SymPy texts (e.g.
        ``"1/2"``, ``"sqrt(2)/2"``); None is the paper's normalisation v_i = sqrt(M)/K,
        u_n = 1/sqrt(M).  Readouts equal to the paper's are stored as None.
    trained : bool
        The student's readouts v are learned (they join the state; the module takes them as
        arguments).  The system then depends on the teacher's u only: the v entries of
        ``readout`` are stored as the paper's, and the initial v belongs to the problem.
    """

    activation: str
    K: int
    M: int
    teacher: str | None = None
    readout: tuple | None = None
    trained: bool = False

    def __post_init__(self):
        for name in ("K", "M"):
            v = getattr(self, name)
            if int(v) != v or v < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
        student = canonical_activation(self.activation)
        teacher = None if self.teacher is None else canonical_activation(self.teacher)
        object.__setattr__(self, "activation", student)
        object.__setattr__(self, "teacher", None if teacher == student else teacher)
        if self.readout is not None:
            readout = tuple(_exact_text(x) for x in self.readout)
            if len(readout) != self.K + self.M:
                raise ValueError(f"readout must have K + M = {self.K + self.M} entries "
                                 f"(v_1..v_K, u_1..u_M), got {len(readout)}")
            if self.trained:        # v is state, not part of the system
                readout = paper_readout(self.K, self.M)[:self.K] + readout[self.K:]
            object.__setattr__(self, "readout", None if readout == paper_readout(self.K, self.M)
                               else readout)
        if not isinstance(self.trained, bool):
            raise ValueError(f"trained must be True or False, got {self.trained!r}")

    @property
    def student(self) -> str:
        """The student activation g_s."""
        return self.activation

    @property
    def teacher_activation(self) -> str:
        """The teacher activation g_t."""
        return self.activation if self.teacher is None else self.teacher

    @property
    def same_activation(self) -> bool:
        return self.teacher is None

    def is_plain(self, *activations) -> bool:
        """True for teacher = student in ``activations`` (default erf, linear) with the paper's
        readouts: the systems of the original model, which every route supports."""
        return (self.teacher is None and self.readout is None and not self.trained
                and self.activation in (activations or ACTIVATIONS))

    @property
    def readouts(self) -> tuple:
        """(v_1..v_K, u_1..u_M) as exact SymPy texts (the paper's when ``readout`` is None)."""
        return paper_readout(self.K, self.M) if self.readout is None else self.readout

    @property
    def description(self) -> str:
        """Human-readable name, e.g. ``relu/erf K=2 M=2`` (student/teacher)."""
        act = (self.activation if self.teacher is None
               else f"{self.activation}/{self.teacher}")
        extra = "" if self.readout is None else " readout=" + ",".join(
            self.readout[self.K:] if self.trained else self.readout)
        if self.trained:
            extra += " trained readout"
        return f"{act} K={self.K} M={self.M}{extra}"

    @property
    def tag(self) -> str:
        act = activation_tag(self.activation)
        if self.teacher is not None:
            act += "_" + activation_tag(self.teacher)
        tag = f"{act}_K{self.K}_M{self.M}"
        if self.readout is not None:
            tag += "_r" + hashlib.sha256(",".join(self.readout).encode()).hexdigest()[:10]
        if self.trained:
            tag += "_tv"
        return tag


def paper_readout(K: int, M: int) -> tuple:
    """The paper's readouts as exact texts: v_i = sqrt(M)/K (K times), u_n = 1/sqrt(M) (M times).

    >>> paper_readout(2, 2)
    ('sqrt(2)/2', 'sqrt(2)/2', 'sqrt(2)/2', 'sqrt(2)/2')
    """
    import sympy as sp
    v = sp.sstr(sp.sqrt(M) / K)
    u = sp.sstr(1 / sp.sqrt(M))
    return (v,) * K + (u,) * M


def _exact_text(x) -> str:
    """Canonical SymPy text of an exact real number (a Fraction, an int, or a text built by the
    package such as "sqrt(3)/3"); floats are refused (the symbolic layer is exact)."""
    import sympy as sp
    from fractions import Fraction
    if isinstance(x, float):
        raise ValueError(f"readout {x!r} is a float; give it exactly (a fraction or a text)")
    if isinstance(x, Fraction):
        x = sp.Rational(x.numerator, x.denominator)
    e = sp.sympify(x, rational=True)
    if not (e.is_number and e.is_real) or e.has(sp.Float):
        raise ValueError(f"readout {x!r} is not an exact real number")
    return sp.sstr(sp.nsimplify(e) if e.is_Rational else sp.radsimp(e))
