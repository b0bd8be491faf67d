"""A solvable problem: system key, spectrum, learning rate and an initial condition.

The initial condition is held in exact form (Fractions, or float64 numbers of a finite-N
realisation, which are exact binary fractions) either as mode overlaps (R_k, Q_k, T_k) or as
levels (R^(l), Q^(l) for l < L and T^(l) for l <= L).  ``numeric(ctx)`` turns everything into
numbers of the context at its precision: eigenvalues, the characteristic polynomial
c_0..c_{L-1}, ν_1..ν_L, and the state in either basis.  Conversions between bases happen here,
at the working precision (levels = Vandermonde × modes; the reverse solves the Vandermonde
system, which is what needs digits).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from derive.keys import SystemKey

from solvers.core.layout import pack_state, pack_teacher, unpack_state  # noqa: F401

if TYPE_CHECKING:   # the symbolic layer is not imported at run time (no SymPy here)
    from derive import spectra


@dataclass(frozen=True)
class InitialCondition:
    basis: str          # "modes" | "levels"
    R: np.ndarray       # modes: (L, K, M); levels: (L, K, M) levels 0..L-1   (object arrays)
    Q: np.ndarray       # modes: (L, K, K); levels: (L, K, K)
    T: np.ndarray       # modes: (L, M, M); levels: (L+1, M, M) levels 0..L


@dataclass(frozen=True)
class Problem:
    """One ODE problem.  Checked on construction (one-line ``ValueError`` naming the values):
    ``eta > 0`` (a float is read through its shortest decimal repr, 0.1 -> 1/10, as in a spec
    file), ``order`` in (1, 2), and an initial condition whose L, K and M match the spectrum
    and the system key."""
    key: SystemKey
    spectrum: spectra.Spectrum
    eta: Fraction
    order: int
    init: InitialCondition
    # docs/theory/conventions.md: label noise variance, weight decay κ on the first layer,
    # samples per step (the η² term is divided by it); the defaults are the original model
    noise: Fraction = Fraction(0)
    weight_decay: Fraction = Fraction(0)
    batch_size: int = 1
    # learning-rate schedule (conventions.md): None (constant), ("power", alpha0, p) for
    # η(α) = η (1 + α/α0)^(-p), or ("steps", alphas, etas) for η before alphas[0], etas[j] from
    # alphas[j] on; exact numbers (a dict {kind, ...} as in a spec is accepted too)
    schedule: tuple | None = None
    # a trained readout (key.trained): its learning rate η_v (> 0) and the initial v_1..v_K as
    # exact texts ("sqrt(2)/2", "1/2"; default the paper's sqrt(M)/K); None for fixed readouts
    eta_readout: Fraction | None = None
    readout0: tuple | None = None
    # weight decay κ_v of a trained readout: dv/dα gains -η_v κ_v v (conventions.md)
    weight_decay_readout: Fraction = Fraction(0)

    def __post_init__(self):
        eta = self.eta
        if isinstance(eta, bool):
            raise ValueError(f"eta must be a number, got {eta!r}")
        if isinstance(eta, float):        # also numpy.float64
            if not math.isfinite(eta):
                raise ValueError(f"eta must be finite, got {eta!r}")
            eta = Fraction(repr(float(eta)))
        elif isinstance(eta, int):
            eta = Fraction(eta)
        try:
            positive = bool(eta > 0)
        except TypeError:
            raise ValueError(f"eta must be a number, got {eta!r}") from None
        if not positive:
            raise ValueError(f"eta = {eta} must be > 0 (the learning rate)")
        object.__setattr__(self, "eta", eta)
        if self.order not in (1, 2) or isinstance(self.order, bool):
            raise ValueError(f"order = {self.order!r} must be 1 (no eta^2 term) or 2")
        _check_shapes(self.init, self.spectrum.L, self.key.K, self.key.M)
        for name in ("noise", "weight_decay", "weight_decay_readout"):
            value = Fraction(str(getattr(self, name))) if isinstance(getattr(self, name), float) \
                else Fraction(getattr(self, name))
            if value < 0:
                raise ValueError(f"{name} = {value} must be >= 0")
            object.__setattr__(self, name, value)
        if isinstance(self.batch_size, bool) or int(self.batch_size) != self.batch_size \
                or self.batch_size < 1:
            raise ValueError(f"batch_size = {self.batch_size!r} must be an integer >= 1")
        object.__setattr__(self, "schedule", checked_schedule(self.schedule))
        self._check_readout()

    def _check_readout(self):
        K = self.key.K
        if not self.key.trained:
            if self.eta_readout is not None or self.readout0 is not None \
                    or self.weight_decay_readout != 0:
                raise ValueError("eta_readout, readout0 and weight_decay_readout go with a "
                                 "trained readout only (SystemKey(..., trained=True))")
            return
        if self.eta_readout is None:
            raise ValueError("a trained readout needs eta_readout > 0 (its learning rate)")
        x = self.eta_readout
        try:   # a float through its shortest decimal repr, as eta
            eta_v = Fraction(repr(float(x))) if isinstance(x, float) else Fraction(x)
        except (TypeError, ValueError, OverflowError):
            raise ValueError(f"eta_readout must be a finite number, got {x!r}") from None
        if not eta_v > 0:
            raise ValueError(f"eta_readout = {eta_v} must be > 0")
        object.__setattr__(self, "eta_readout", eta_v)
        from derive.keys import paper_readout
        v0 = paper_readout(K, self.key.M)[:K] if self.readout0 is None else self.readout0
        v0 = tuple(str(x) for x in v0)
        if len(v0) != K:
            raise ValueError(f"readout0 must have K = {K} entries, got {len(v0)}")
        from solvers.core.numbers import Float64Context
        for x in v0:
            with np.errstate(all="ignore"):
                readout_value(x, Float64Context())   # one line on anything but a number
        object.__setattr__(self, "readout0", v0)

    @property
    def trained(self) -> bool:
        """The student's readouts are learned: v_1..v_K follow the level state."""
        return self.key.trained

    @property
    def autonomous(self) -> bool:
        """False for a power schedule: η depends on α continuously (a "steps" schedule is
        constant on each piece, which the solvers integrate one at a time)."""
        return self.schedule is None or self.schedule[0] != "power"

    def eta_pieces(self, end) -> list:
        """[(α_start, η)] of the pieces of constant η that start before ``end`` (exact
        Fractions): one piece unless the schedule is "steps"."""
        if self.schedule is None or self.schedule[0] != "steps":
            return [(Fraction(0), self.eta)]
        _, alphas, etas = self.schedule
        return [(Fraction(0), self.eta)] + [(a, e) for a, e in zip(alphas, etas) if a < end]

    @property
    def plain_training(self) -> bool:  # (a schedule is checked separately: ``autonomous``)
        """No label noise, no weight decay, one sample per step (the original model)."""
        return self.noise == 0 and self.weight_decay == 0 and self.batch_size == 1

    @property
    def L(self) -> int:
        return self.spectrum.L

    def numeric(self, ctx) -> "NumericProblem":
        return NumericProblem(self, ctx)


def readout_value(text: str, ctx):
    """The number an exact readout text ("sqrt(2)/2", "-1/3", "1/sqrt(2)", "3") stands for, as
    a number of the context ``ctx`` (its ``convert`` and ``sqrt``: its precision), without
    SymPy.  Anything else is a one-line ValueError.

    >>> from solvers.core.numbers import Float64Context
    >>> float(readout_value("sqrt(2)/2", Float64Context())) == 2 ** 0.5 / 2
    True
    """
    import ast
    import operator
    ops = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv}

    def value(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, int) \
                and not isinstance(node.value, bool):
            return ctx.convert(node.value)
        if isinstance(node, ast.BinOp) and type(node.op) in ops:
            return ops[type(node.op)](value(node.left), value(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            x = value(node.operand)
            return -x if isinstance(node.op, ast.USub) else x
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id == "sqrt" and len(node.args) == 1 and not node.keywords):
            return ctx.sqrt(value(node.args[0]))
        raise ValueError
    try:
        out = value(ast.parse(str(text), mode="eval").body)
    except (ValueError, SyntaxError, ZeroDivisionError, TypeError):
        out = None
    if out is None or not ctx.is_finite(out):
        raise ValueError(f"readout {text!r} is not an exact finite number (integers, "
                         f"+ - * /, sqrt)")
    return out


def _exact(x, name) -> Fraction:
    if isinstance(x, bool):
        raise ValueError(f"schedule {name} must be a number, got {x!r}")
    try:
        return Fraction(repr(float(x))) if isinstance(x, float) else Fraction(x)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"schedule {name} must be a finite number, got {x!r}") from None


def checked_schedule(schedule) -> tuple | None:
    """The schedule of a Problem in its normal form (None, ("power", alpha0, p) or ("steps",
    alphas, etas) with Fractions), or a one-line ValueError naming the bad value.  Accepts the
    spec's ``schedule_dict()`` form {kind, alpha0, p} / {kind, alphas, etas}."""
    if schedule is None:
        return None
    if isinstance(schedule, dict):
        kind = schedule.get("kind")
        if kind == "constant":
            return None
        if kind == "power":
            schedule = ("power", schedule["alpha0"], schedule["p"])
        elif kind == "steps":
            schedule = ("steps", schedule["alphas"], schedule["etas"])
        else:
            raise ValueError(f"schedule kind = {kind!r} must be 'constant', 'power' or 'steps'")
    kind = schedule[0]
    if kind == "power":
        a0, p = _exact(schedule[1], "alpha0"), _exact(schedule[2], "p")
        if not a0 > 0:
            raise ValueError(f"schedule alpha0 = {a0} must be > 0")
        if p < 0:
            raise ValueError(f"schedule p = {p} must be >= 0")
        return ("power", a0, p)
    if kind == "steps":
        a = tuple(_exact(x, "alphas") for x in schedule[1])
        e = tuple(_exact(x, "etas") for x in schedule[2])
        if not a or len(a) != len(e):
            raise ValueError(f"schedule alphas and etas must be non-empty and of equal length, "
                             f"got {len(a)} and {len(e)}")
        if any(x <= 0 for x in a) or any(y <= x for x, y in zip(a, a[1:])):
            raise ValueError(f"schedule alphas must be > 0 and increasing, got "
                             f"{[float(x) for x in a]}")
        if any(y <= 0 for y in e):
            raise ValueError(f"schedule etas must be > 0, got {[float(y) for y in e]}")
        return ("steps", a, e)
    raise ValueError(f"schedule kind = {kind!r} must be 'constant', 'power' or 'steps'")


def _check_shapes(init: InitialCondition, L: int, K: int, M: int) -> None:
    """The initial condition's arrays against the spectrum's L and the key's K, M."""
    nT = L + 1 if init.basis == "levels" else L
    want = {"R": (L, K, M), "Q": (L, K, K), "T": (nT, M, M)}
    for name, shape in want.items():
        got = np.shape(getattr(init, name))
        if got != shape:
            n = f"{got[0]} {'levels' if init.basis == 'levels' else 'modes'}" if got else \
                "no axis"
            raise ValueError(f"the spectrum has L = {L} but the initial condition's {name} has "
                             f"{n} (shape {got}; expected {shape} for L = {L}, K = {K}, "
                             f"M = {M} in the {init.basis} basis)")


def characteristic_coefficients(lam, one):
    """c_0..c_(L-1) of Π_k (λ - λ_k) from the eigenvalues at working precision.

    The coefficients are elementary symmetric functions of positive numbers (alternating
    signs only), so this product is accurate to the working precision, and much cheaper than
    the exact polynomial.
    """
    c = [one]
    for x in lam:
        c = [(c[j - 1] if j > 0 else 0) - x * (c[j] if j < len(c) else 0)
             for j in range(len(c) + 1)]
    return np.array(c[:len(lam)], dtype=object)


def spectrum_numbers(spectrum, ctx):
    """(λ, w, c, ν_1..ν_L) of a spectrum as object arrays of the context's numbers."""
    lam = np.array([ctx.convert(v) for v in spectrum.eigenvalues], dtype=object)
    w = np.array([ctx.convert(v) for v in spectrum.weights], dtype=object)
    c = characteristic_coefficients(lam, ctx.convert(1))
    nu = np.array([sum(w * lam ** l) for l in range(1, len(lam) + 1)], dtype=object)
    return lam, w, c, nu


class NumericProblem:
    """Everything the generated modules take, as numbers of one context."""

    def __init__(self, problem: Problem, ctx):
        self.problem, self.ctx = problem, ctx
        sp_ = problem.spectrum
        conv = ctx.convert
        self.lam = np.array([conv(v) for v in sp_.eigenvalues], dtype=object)
        self.w = np.array([conv(v) for v in sp_.weights], dtype=object)
        self.c = characteristic_coefficients(self.lam, conv(1))
        self.eta, self.e2 = self.rates(problem.eta)
        if problem.schedule is not None and problem.schedule[0] == "power":
            self._a0, self._p = conv(problem.schedule[1]), conv(problem.schedule[2])
        self.noise = conv(problem.noise)
        self.decay = conv(problem.weight_decay)
        if problem.trained:
            self.eta_v = conv(problem.eta_readout)
            self.decay_v = conv(problem.weight_decay_readout)
            self.v0 = ctx.native(np.array([readout_value(x, ctx) for x in problem.readout0],
                                          dtype=object))
        init = problem.init
        if init.basis == "modes":
            self.y_modes = pack_state(ctx.array(init.R), ctx.array(init.Q))
            self.T_modes = pack_teacher(ctx.array(init.T))
            # nu, y_levels, T_levels: on first use (__getattr__) -- a modes run never needs
            # them, and in float64 the powers λ^l overflow from L ≈ 256
        else:
            self.y_levels = pack_state(ctx.array(init.R), ctx.array(init.Q))
            self.T_levels = pack_teacher(ctx.array(init.T))[1:]
            self._level_quantities()
            self.y_modes, self.T_modes = self._levels_to_modes()
        for name in ("lam", "w", "c", "nu", "y_modes", "T_modes", "y_levels", "T_levels"):
            if name in self.__dict__:
                setattr(self, name, ctx.native(getattr(self, name)))

    _LAZY = ("nu", "y_levels", "T_levels")

    def rates(self, eta):
        """(η, e2) as numbers of the context for the learning rate ``eta`` (exact or a number
        of the context): the η² term of one step averages over batch_size samples
        (conventions.md); e2 = 0 for the order-1 system."""
        eta = self.ctx.convert(eta) if isinstance(eta, (int, Fraction)) else eta
        p = self.problem
        return eta, (eta ** 2 / p.batch_size if p.order == 2 else self.ctx.convert(0))

    def eta_at(self, alpha):
        """η(α) of a power schedule as a number of the context (α a number of the context)."""
        return self.eta * (1 + alpha / self._a0) ** (-self._p)

    def __getattr__(self, name):
        # only called when the attribute is not set yet
        if name in NumericProblem._LAZY and "lam" in self.__dict__:
            self._level_quantities()
            return self.__dict__[name]
        raise AttributeError(name)

    def _level_quantities(self):
        """ν_1..ν_L and, for a modes initial condition, the level-basis state (Vandermonde)."""
        L = self.problem.L
        try:
            with np.errstate(over="ignore", invalid="ignore"):
                pw = [self.lam ** l for l in range(L + 1)]
            if self.ctx.overflowed(pw[-1]):
                raise OverflowError
        except OverflowError:
            raise ValueError(f"the level basis is out of float64 range at L = {L} (λ^l "
                             f"overflows): use basis = \"modes\" or an arbitrary-precision "
                             f"dps") from None
        self.nu = np.array([sum(self.w * pw[l]) for l in range(1, L + 1)], dtype=object)
        if "y_levels" not in self.__dict__:
            V = np.array(pw, dtype=object)
            self.y_levels = V[:L] @ self.y_modes
            self.T_levels = V[1:] @ self.T_modes            # levels 1..L
        for name in NumericProblem._LAZY:
            setattr(self, name, self.ctx.native(getattr(self, name)))

    def _levels_to_modes(self):
        """Solve the Vandermonde system X^(l) = Σ_k λ_k^l X_k at the working precision."""
        solve = self.ctx.vandermonde_solve
        return solve(self.lam, self.y_levels, 0), solve(self.lam, self.T_levels, 1)


# -- initial conditions ---------------------------------------------------------------------

def random_init(K, M, N, spectrum, sigma_J, seed, rotate=False,
                informed=False) -> InitialCondition:
    """Mode overlaps of the finite-N realisation that ``simulate`` uses for the same seed.

    J_ia ~ N(0, σ_J²), B_na ~ N(0, 1) (optionally rotated by a Haar W); the float64 overlaps
    are exact binary fractions and are taken as exact from here on.  ``informed``: the
    student's rows i < min(K, M) start at the teacher's (``[training] init = "informed"``,
    solvers.core.initial).
    """
    from solvers.core.initial import initial_mode_overlaps
    modes = initial_mode_overlaps(K=K, M=M, N=N, sigma_J=float(sigma_J), seed=seed,
                                  L=spectrum.L, rotate=rotate, informed=informed)
    obj = lambda a: np.asarray(a, dtype=object)  # noqa: E731
    return InitialCondition("modes", obj(modes["R"]), obj(modes["Q"]), obj(modes["T"]))


def expected_init(spectrum, K, M, sigma_J) -> InitialCondition:
    """The average over teacher and student draws: R = 0, Q_k = σ_J² p_k δ, T_k = p_k δ."""
    L = spectrum.L
    s2 = Fraction(sigma_J) ** 2
    w = [Fraction(int(v.p), int(v.q)) for v in spectrum.weights]
    R = np.full((L, K, M), Fraction(0), dtype=object)
    Q = np.array([[[s2 * w[k] if i == j else Fraction(0) for j in range(K)] for i in range(K)]
                  for k in range(L)], dtype=object)
    T = np.array([[[w[k] if n == m else Fraction(0) for m in range(M)] for n in range(M)]
                  for k in range(L)], dtype=object)
    return InitialCondition("modes", R, Q, T)


def explicit_init(basis, R, Q, T) -> InitialCondition:
    return InitialCondition(basis, np.array(R, dtype=object), np.array(Q, dtype=object),
                            np.array(T, dtype=object))
