"""The committee-machine family on the simulator's side: activations, readouts, label noise,
weight decay, mini-batches, trained readouts and learning-rate schedules.

The model is the one every part of the project shares (student activation g_s, teacher g_t,
readouts v, u; docs/theory/conventions.md and the family conventions):

    sigma(xi) = sum_i v_i g_s(x_i),   zeta(xi) = sum_n u_n g_t(y_n),   y = zeta + sqrt(noise) eps

and one SGD step on B fresh samples (alpha = steps / N, eta(alpha) at the step's start)

    J_i <- J_i (1 - eta(alpha) kappa / N) + (eta(alpha) / B) sum_mu v_i Delta_mu g_s'(x_i^mu) xi_mu / sqrt(N)
    v_i <- v_i (1 - eta_v kappa_v / N) + (eta_v / (N B)) sum_mu Delta_mu g_s(x_i^mu)
                                                                       (trained readout only)

with Delta_mu = y_mu - sigma(xi_mu) (old J and v on the right).  eps_g is the clean test error
1/2 <(zeta - sigma)^2>.  :class:`Family` holds these options as float64 data; ``Family()`` with no
arguments at given K, M is today's model (erf or linear in both slots, "paper" readouts), which
``simulate`` runs on its original kernels, bit for bit as before.

Activations are parsed without SymPy (derive.polynomial_text; the simulator's start-up stays
light): "erf" (erf(x/sqrt 2)), "linear", "relu" or a polynomial in x with integer literals,
+ - * / and non-negative integer powers, not a constant, its coefficients kept as exact
fractions and rounded once to
float64 (tests/test_sim_family.py checks them against derive.family.activations).  The exact
eps_g of order parameters uses the pair's I2 from derive.family (elementary for every pair),
printed once into a cached NumPy module (:func:`pair_I2`; SymPy runs only the first time a pair
is met); the erf and linear pairs have their closed forms written out here.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from numbers import Integral, Real

import numpy as np

from derive.polynomial_text import ActivationError, parse

__all__ = ["Activation", "parse_activation", "NORMALISATIONS", "readouts", "Schedule",
           "Family", "pair_I2", "eps_g"]

ACT_ERF, ACT_LINEAR, ACT_RELU, ACT_POLY = 0, 1, 2, 3
NORMALISATIONS = ("paper", "1/K", "1/sqrt(K)", "none")
SCHEDULES = ("constant", "power", "steps")
_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


# --------------------------------------------------------------------------------------------
# Activations
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Activation:
    """One activation: ``code`` (ACT_ERF, ACT_LINEAR, ACT_RELU, ACT_POLY), the exact polynomial
    coefficients c_0, c_1, ... for ACT_POLY (and (0, 1) for linear), and ``name`` (the string
    derive.family understands)."""

    code: int
    exact: tuple = ()
    name: str = ""

    @property
    def coeffs(self) -> np.ndarray:
        """float64 c_k of g(x) = sum c_k x^k (each fraction rounded once)."""
        return np.array([float(c) for c in self.exact] or [0.0], dtype=np.float64)

    @property
    def dcoeffs(self) -> np.ndarray:
        """float64 coefficients of g'(x)."""
        d = [float(k * c) for k, c in enumerate(self.exact)][1:]
        return np.array(d or [0.0], dtype=np.float64)

    def __call__(self, x):
        """g(x), elementwise."""
        x = np.asarray(x, dtype=np.float64)
        if self.code == ACT_ERF:
            from scipy.special import erf
            return erf(x * _INV_SQRT2)
        if self.code == ACT_LINEAR:
            return x
        if self.code == ACT_RELU:
            return np.maximum(x, 0.0)
        return np.polynomial.polynomial.polyval(x, self.coeffs)

    def prime(self, x):
        """g'(x), elementwise (ReLU: the step 1[x > 0])."""
        x = np.asarray(x, dtype=np.float64)
        if self.code == ACT_ERF:
            return _SQRT_2_OVER_PI * np.exp(-0.5 * x * x)
        if self.code == ACT_LINEAR:
            return np.ones_like(x)
        if self.code == ACT_RELU:
            return (x > 0).astype(np.float64)
        return np.polynomial.polynomial.polyval(x, self.dcoeffs)

    def at_zero(self) -> float:
        return float(self.exact[0]) if self.code == ACT_POLY else 0.0


def parse_activation(spec) -> Activation:
    """"erf" | "linear" | "relu" | a polynomial in x of degree 1 to 6 (exact coefficients;
    derive.polynomial_text).  A constant is refused: nothing could be learned.

    >>> parse_activation("(x**2 - 1)/2").exact
    (Fraction(-1, 2), Fraction(0, 1), Fraction(1, 2))
    >>> parse_activation("x").name
    'linear'
    """
    if isinstance(spec, Activation):
        return spec
    kind, c = parse(spec)
    if kind == "poly" and len(c) == 1:
        raise ActivationError(
            f"activation {spec!r}: it is the constant {c[0]}, whose derivative vanishes (a "
            "student of it gets no gradient, a teacher of it is a constant); use erf, linear, "
            "relu or a polynomial of degree >= 1")
    code = {"erf": ACT_ERF, "relu": ACT_RELU, "linear": ACT_LINEAR, "poly": ACT_POLY}[kind]
    return Activation(code, c, spec.strip() if kind == "poly" else kind)


# --------------------------------------------------------------------------------------------
# Readouts and schedules
# --------------------------------------------------------------------------------------------

def _exact_float(name, value):
    if isinstance(value, bool) or not isinstance(value, (Real, Fraction)):
        raise ValueError(f"{name} must be a finite real number, got {value!r}")
    f = float(value)
    if not math.isfinite(f):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return f


def readouts(K, M, normalisation="paper", student_readout=None, teacher_readout=None):
    """(v (K,), u (M,)) float64 readouts of a normalisation or explicit lists.

    paper: v_i = sqrt(M)/K, u_n = 1/sqrt(M); 1/K: 1/K, 1/M; 1/sqrt(K): 1/sqrt(K), 1/sqrt(M);
    none: 1, 1.  Explicit lists replace the normalisation's value of their layer; giving one
    with a normalisation other than "paper" is an error.

    >>> readouts(2, 4)
    (array([1., 1.]), array([0.5, 0.5, 0.5, 0.5]))
    """
    if normalisation not in NORMALISATIONS:
        raise ValueError(f"normalisation must be one of {NORMALISATIONS}, got {normalisation!r}")
    if normalisation != "paper" and (student_readout is not None or teacher_readout is not None):
        raise ValueError("give student_readout / teacher_readout with the default normalisation "
                         f"\"paper\" only, not with {normalisation!r}")
    v, u = {"paper": (math.sqrt(M) / K, 1.0 / math.sqrt(M)),
            "1/K": (1.0 / K, 1.0 / M),
            "1/sqrt(K)": (1.0 / math.sqrt(K), 1.0 / math.sqrt(M)),
            "none": (1.0, 1.0)}[normalisation]
    v, u = np.full(K, v), np.full(M, u)

    def explicit(name, values, n):
        vals = list(values) if isinstance(values, (list, tuple, np.ndarray)) else None
        if vals is None or len(vals) != n:
            raise ValueError(f"{name} must be a list of {n} numbers, got {values!r}")
        return np.array([_exact_float(f"{name}[{k}]", a) for k, a in enumerate(vals)])

    if student_readout is not None:
        v = explicit("student_readout", student_readout, K)
    if teacher_readout is not None:
        u = explicit("teacher_readout", teacher_readout, M)
    return v, u


@dataclass(frozen=True)
class Schedule:
    """eta(alpha): kind "constant", "power" (eta (1 + alpha/alpha0)^-p) or "steps" (eta before
    alphas[0], etas[j] from alphas[j] on).  The simulator evaluates it at the alpha of each
    step's start, t / N; the steps' boundaries are compared exactly: step t runs with etas[j]
    iff t >= alphas[j] N (Fractions of the given numbers, no rounding)."""

    kind: str = "constant"
    alpha0: float = 1.0
    p: float = 0.0
    alphas: tuple = ()
    etas: tuple = ()

    def __post_init__(self):
        if self.kind not in SCHEDULES:
            raise ValueError(f"schedule kind must be one of {SCHEDULES}, got {self.kind!r}")
        if self.kind == "power":
            if not _exact_float("schedule alpha0", self.alpha0) > 0:
                raise ValueError(f"schedule alpha0 must be > 0, got {self.alpha0}")
            if not _exact_float("schedule p", self.p) >= 0:
                raise ValueError(f"schedule p must be >= 0, got {self.p}")
        if self.kind == "steps":
            a = [_exact_float("schedule alphas", x) for x in self.alphas]
            e = [_exact_float("schedule etas", x) for x in self.etas]
            if not a or len(a) != len(e):
                raise ValueError(f"schedule alphas and etas must be non-empty lists of equal "
                                 f"length, got {len(a)} and {len(e)}")
            if any(x <= 0 for x in a) or any(y <= x for x, y in zip(a, a[1:])):
                raise ValueError(f"schedule alphas must be > 0 and increasing, got {a}")
            if any(y <= 0 for y in e):
                raise ValueError(f"schedule etas must be > 0, got {e}")

    def thresholds(self, N):
        """First step of each of ``alphas`` (steps): ceil(alphas[j] N), exact."""
        return np.array([math.ceil(Fraction(a) * N) for a in self.alphas], dtype=np.int64)

    def etas_of_steps(self, eta, N, t0, n):
        """float64 eta of steps t0, ..., t0 + n - 1."""
        t = np.arange(t0, t0 + n, dtype=np.int64)
        if self.kind == "constant":
            return np.full(n, float(eta))
        if self.kind == "power":
            return float(eta) * (1.0 + (t / N) / float(self.alpha0)) ** (-float(self.p))
        table = np.array([float(eta)] + [float(e) for e in self.etas])
        return table[np.searchsorted(self.thresholds(N), t, side="right")]

    def describe(self):
        if self.kind == "constant":
            return {"kind": "constant"}
        if self.kind == "power":
            return {"kind": "power", "alpha0": float(self.alpha0), "p": float(self.p)}
        return {"kind": "steps", "alphas": [float(a) for a in self.alphas],
                "etas": [float(e) for e in self.etas]}


def schedule_of(value) -> Schedule:
    """A Schedule from None, a Schedule or a dict {kind, alpha0, p, alphas, etas}."""
    if value is None:
        return Schedule()
    if isinstance(value, Schedule):
        return value
    if not isinstance(value, dict) or "kind" not in value:
        raise ValueError(f"schedule must be a table with a kind, got {value!r}")
    keys = {"constant": (), "power": ("alpha0", "p"), "steps": ("alphas", "etas")}
    kind = value["kind"]
    if kind not in keys:
        raise ValueError(f"schedule kind must be one of {SCHEDULES}, got {kind!r}")
    extra = set(value) - {"kind", *keys[kind]}
    missing = [k for k in keys[kind] if k not in value]
    if extra or missing:
        raise ValueError(f"schedule kind = {kind!r} takes exactly the keys {list(keys[kind])}"
                         + (f"; unknown {sorted(extra)}" if extra else "")
                         + (f"; missing {missing}" if missing else ""))
    kw = {k: (tuple(value[k]) if k in ("alphas", "etas") else value[k]) for k in keys[kind]}
    if kind == "steps" and not all(isinstance(value[k], (list, tuple)) for k in keys[kind]):
        raise ValueError("schedule alphas and etas must be lists")
    return Schedule(kind, **kw)


# --------------------------------------------------------------------------------------------
# The whole set of options
# --------------------------------------------------------------------------------------------

@dataclass
class Family:
    """Model options of one simulation (float64), validated at construction by :func:`family`."""

    student: Activation
    teacher: Activation
    v: np.ndarray                     # (K,) initial student readout
    u: np.ndarray                     # (M,) teacher readout
    trained: bool = False
    eta_readout: float = 0.0
    noise: float = 0.0
    weight_decay: float = 0.0
    batch_size: int = 1
    schedule: Schedule = field(default_factory=Schedule)
    normalisation: str = "paper"
    weight_decay_readout: float = 0.0     # kappa_v of a trained readout

    def is_default(self, K, M) -> bool:
        """Today's model (original kernels): one activation in {erf, linear} for both, the
        paper's readouts, fixed, no noise, no decay, one sample per step, constant eta."""
        pv, pu = readouts(K, M)
        return (self.student.code == self.teacher.code and self.student.code in (ACT_ERF,
                                                                                  ACT_LINEAR)
                and np.array_equal(self.v, pv) and np.array_equal(self.u, pu)
                and not self.trained and self.noise == 0.0 and self.weight_decay == 0.0
                and self.batch_size == 1 and self.schedule.kind == "constant")

    def describe(self) -> dict:
        return dict(student_activation=self.student.name, teacher_activation=self.teacher.name,
                    normalisation=self.normalisation, student_readout=self.v.tolist(),
                    teacher_readout=self.u.tolist(),
                    readout="trained" if self.trained else "fixed",
                    eta_readout=self.eta_readout if self.trained else None,
                    weight_decay_readout=self.weight_decay_readout, noise=self.noise,
                    weight_decay=self.weight_decay, batch_size=self.batch_size,
                    schedule=self.schedule.describe())


MAX_BATCH_SIZE = 10**6


def family(K, M, *, activation=None, student_activation=None, teacher_activation=None,
           normalisation="paper", student_readout=None, teacher_readout=None, readout="fixed",
           eta_readout=None, noise=0, weight_decay=0, batch_size=1, schedule=None,
           weight_decay_readout=0) -> Family:
    """Validate the family options (ValueError naming the key) into a :class:`Family`.

    ``activation`` sets both slots; ``student_activation`` / ``teacher_activation`` override it.
    """
    base = activation if activation is not None else "erf"
    s = parse_activation(student_activation if student_activation is not None else base)
    t = parse_activation(teacher_activation if teacher_activation is not None else base)
    v, u = readouts(K, M, normalisation, student_readout, teacher_readout)
    if readout not in ("fixed", "trained"):
        raise ValueError(f"readout must be 'fixed' or 'trained', got {readout!r}")
    trained = readout == "trained"
    if trained:
        if eta_readout is None:
            raise ValueError("readout = 'trained' needs eta_readout (> 0)")
        eta_v = _exact_float("eta_readout", eta_readout)
        if eta_v <= 0:
            raise ValueError(f"eta_readout must be > 0, got {eta_readout}")
    else:
        if eta_readout is not None:
            raise ValueError("eta_readout is only used with readout = 'trained'")
        eta_v = 0.0
    noise = _exact_float("noise", noise)
    if noise < 0:
        raise ValueError(f"noise (label-noise variance) must be >= 0, got {noise}")
    kappa = _exact_float("weight_decay", weight_decay)
    if kappa < 0:
        raise ValueError(f"weight_decay must be >= 0, got {kappa}")
    kappa_v = _exact_float("weight_decay_readout", weight_decay_readout)
    if kappa_v < 0:
        raise ValueError(f"weight_decay_readout must be >= 0, got {kappa_v}")
    if kappa_v and not trained:
        raise ValueError("weight_decay_readout decays a trained readout: it is only used with "
                         "readout = 'trained'")
    if isinstance(batch_size, bool) or not isinstance(batch_size, Integral) \
            or not 1 <= batch_size <= MAX_BATCH_SIZE:
        raise ValueError(f"batch_size must be an integer between 1 and {MAX_BATCH_SIZE}, "
                         f"got {batch_size!r}")
    return Family(s, t, v, u, trained, eta_v, noise, kappa, int(batch_size),
                  schedule_of(schedule), normalisation, kappa_v)


# --------------------------------------------------------------------------------------------
# I2 of a pair and the exact eps_g
# --------------------------------------------------------------------------------------------

def _closed_I2(a: str, b: str):
    """float64 I2 of the erf / linear pairs without SymPy (erf-erf: the printed one), or None."""
    if (a, b) == ("erf", "erf"):
        from solvers.generated.gaussian_erf_numpy import I2     # the printed closed form
        return I2
    if (a, b) == ("linear", "linear"):
        return lambda c11, c12, c22: c12 + 0.0 * (c11 + c22)
    if (a, b) == ("erf", "linear"):          # <erf(z1/sqrt2) z2> = sqrt(2/pi) C12 / sqrt(1 + C11)
        return lambda c11, c12, c22: _SQRT_2_OVER_PI * c12 / np.sqrt(1 + c11) + 0.0 * c22
    if (a, b) == ("linear", "erf"):
        return lambda c11, c12, c22: _SQRT_2_OVER_PI * c12 / np.sqrt(1 + c22) + 0.0 * c11
    return None


def _I2_source(a: str, b: str) -> str:
    """Python source of derive.family.I2(a, b) as ``I2(C11, X, C22)`` in NumPy, X = C12, or
    X = rho = C12 / sqrt(C11 C22) for forms with an asin (``USES_RHO``).

    Forms with an asin (ReLU pairs) are rewritten in the correlation rho before printing:
    asin(rho) and sqrt(1 - rho^2) are then computed from one rounded rho, so their singular
    parts cancel at parallel fields (rho -> 1), where asin(C12/(sqrt(C11) sqrt(C22))) next to
    sqrt(C11 C22 - C12^2) = 0 would be off by sqrt(ulp) ~ 1e-8."""
    import sympy as sp
    from sympy.printing.numpy import NumPyPrinter
    from derive.family import I2
    c11, c22 = sp.symbols("C11 C22", positive=True)
    c12, rho = sp.symbols("C12 rho", real=True)
    expr = I2(a, b, sp.Matrix([[c11, c12], [c12, c22]]))
    uses_rho = expr.has(sp.asin)
    if uses_rho:
        half = sp.Rational(1, 2)
        expr = expr.subs(c12, rho * sp.sqrt(c11) * sp.sqrt(c22))
        expr = expr.replace(lambda t: t.is_Pow and abs(t.exp) == half,
                            lambda t: sp.sqrt(sp.factor(t.base)) ** sp.sign(t.exp))
        if expr.has(c12) or not expr.has(rho):
            raise RuntimeError(f"I2({a}, {b}): correlation form failed: {expr}")
    x = "rho" if uses_rho else "C12"
    return (f"# generated by solvers/sim/family.py from derive.family.I2({a!r}, {b!r}); "
            f"do not edit\nimport numpy\n\nUSES_RHO = {uses_rho}\n\n\n"
            f"def I2(C11, {x}, C22):\n    return {NumPyPrinter().doprint(expr)}\n")


def _lambdified_I2(a: str, b: str):
    """derive.family.I2(a, b) as a NumPy function of (C11, C12, C22).

    Printed once into the cache of generated code (solvers.core.artifacts, keyed by the pair
    and the derivation's sources), then imported: SymPy runs only the first time a pair is met
    on a machine.  rho is clipped to [-1, 1] (rounding can push it an ulp past)."""
    from solvers.core.artifacts import remembered
    return remembered(("pair I2", a, b), lambda: _I2_function(a, b))


def _I2_function(a: str, b: str):
    import hashlib
    from solvers.core.artifacts import PAIR_I2, printed_module
    tag = hashlib.sha256(f"{a}\0{b}".encode()).hexdigest()[:20]
    mod = printed_module(PAIR_I2, f"family_I2_{tag}", lambda: _I2_source(a, b),
                         f"I2 of the pair ({a}, {b})")
    g = mod.I2
    if not mod.USES_RHO:
        return lambda x, y, z: g(x, y, z) + 0.0 * (x + y + z)    # broadcast constants

    def f_rho(x, y, z):
        r = np.clip(y / np.sqrt(x * z), -1.0, 1.0)
        return g(x, r, z) + 0.0 * (x + y + z)

    return f_rho


def pair_I2(a: Activation, b: Activation):
    """float64 f(C11, C12, C22) = <g_a(z1) g_b(z2)> for a covariance [[C11, C12], [C12, C22]],
    broadcasting.  Exact for a singular field (C11 = 0 or C22 = 0): g(0) times the other's
    mean.

    >>> f = pair_I2(parse_activation("relu"), parse_activation("relu"))
    >>> round(float(f(1.0, 1.0, 1.0)), 12)        # <relu(z)^2> = 1/2
    0.5
    """
    closed = _closed_I2(a.name, b.name)
    if closed is not None:
        return closed
    f = _lambdified_I2(a.name, b.name)
    mean_b = _lambdified_I2("1", b.name)      # <g_b(z2)> = I2("1", b) at C11 = 1, C12 = 0
    mean_a = _lambdified_I2("1", a.name)

    def I2(c11, c12, c22):
        c11, c12, c22 = np.broadcast_arrays(*(np.asarray(c, dtype=np.float64)
                                               for c in (c11, c12, c22)))
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.asarray(f(c11, c12, c22), dtype=np.float64)
            z1, z2 = c11 == 0, c22 == 0
            if np.any(z1 | z2):
                out = np.array(out, dtype=np.float64)
                out[z1] = a.at_zero() * np.broadcast_to(mean_b(1.0, 0.0, c22), c22.shape)[z1]
                only2 = z2 & ~z1
                out[only2] = b.at_zero() * np.broadcast_to(mean_a(1.0, 0.0, c11),
                                                           c11.shape)[only2]
        return out if out.ndim else float(out)

    return I2


def eps_g(student, teacher, v, u, R1, Q1, T1):
    """Exact clean eps_g = 1/2 <(zeta - sigma)^2> from level-1 overlaps and readouts.

    eps_g = 1/2 [ u^T I2_tt(T) u + v^T I2_ss(Q) v - 2 v^T I2_st(Q_ii, R_in, T_nn) u ];
    leading axes of R1, Q1 (and of v, for a trained readout recorded per alpha) broadcast.
    """
    from solvers.core.modes_kernel import eps_g_of_I2      # the one ε_g of level-1 overlaps
    s, t = parse_activation(student), parse_activation(teacher)
    R1, Q1, T1, v, u = (np.asarray(a, dtype=np.float64) for a in (R1, Q1, T1, v, u))
    return eps_g_of_I2(pair_I2(t, t), pair_I2(s, s), pair_I2(s, t), R1, Q1, T1, v, u)
