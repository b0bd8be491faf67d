"""The spec file: one TOML file describing a run, loaded into frozen dataclasses.

    [model]    activation = "erf"   K = 2   M = 2
               the committee-machine family (defaults = today's model): student_activation,
               teacher_activation ("erf", "linear", "relu" or a polynomial in x such as
               "x**3 - 3*x"; default: activation), normalisation = "paper" | "1/K" |
               "1/sqrt(K)" | "none", student_readout = [K numbers], teacher_readout = [M
               numbers] (with "paper" only), readout = "fixed" | "trained"
    [data]     L = 16   beta = 1.0   N = 1024   rotate = false   (or eigenvalues = [...])
               (defaults as shown; N only matters, and defaults, with init = "random")
    [training] eta = 0.1   order = 2   sigma_J = 0.01   seed = 0   init = "random"
               init: "random" | "expected" | "explicit" | "informed" (student rows i < min(K, M)
               start at the teacher's, solvers.core.initial) | {from = "run.json"} (the
               overlaps at alpha = 0 written by ``simulate``, read as explicit [init.modes];
               path relative to the spec)
               noise = 0 (label-noise variance)   weight_decay = 0   batch_size = 1
               eta_readout (> 0, with readout = "trained" only)
               weight_decay_readout = 0 (kappa_v >= 0, with readout = "trained" only:
               dv/dalpha gains -eta_readout kappa_v v)
               schedule = {kind = "constant"} | {kind = "power", alpha0 = 1, p = 1}
                        | {kind = "steps", alphas = [a1, a2, ...], etas = [e1, e2, ...]}
    [init.modes] / [init.levels]     R, Q, T    (only with init = "explicit")
    [solve]    alpha_max = 3000   n_points = 200   spacing = "log"   (or alphas = [...])
               alpha_min   basis = "auto"   dps = "auto"   digits = 6
               (basis "auto": the modes basis, or levels with [init.levels]: auto_basis)
    [simulate] the simulator's options (solvers.app.sections.SIMULATE_SCHEMA); read by every
               subcommand, so that one spec drives both the theory and the simulation

Every key but ``[training] eta`` and ``[solve] alpha_max`` (or ``alphas``) has a default.

Numbers that enter the ODEs (beta, eigenvalues, eta, sigma_J, initial conditions) are kept
exact as `Fraction`: a TOML float is read through its shortest repr (0.3 -> 3/10) and a
decimal string ("0.1", "1e-3") is read exactly.  Each problem raises `SpecError`, whose
message is one line starting with the file name.

Per-key validation is driven by `_SCHEMA` (key -> converter, default, check); what involves
several keys lives in the small `_check_*` functions below it.
"""
from __future__ import annotations

import copy
import dataclasses
import json
import math
import re
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib

__all__ = ["SpecError", "ModelSpec", "DataSpec", "TrainingSpec", "InitSpec", "SolveSpec",
           "Spec", "load_spec", "parse_spec", "spec_to_dict", "read_document", "parse_section",
           "REQUIRED", "convert", "check", "section_error"]


class SpecError(ValueError):
    """An invalid spec; the message is one line starting with the file name."""


NORMALISATIONS = ("paper", "1/K", "1/sqrt(K)", "none")
# largest |readout|: as the activations' coefficients (derive.polynomial_text.MAX_COEFFICIENT)
MAX_READOUT = 10**6
# largest sigma_J: Q(0) = sigma_J^2 T past 1e6 T is the simulator's divergence bound
# (solvers.sim.divergence.GROWTH)
MAX_SIGMA_J = 10**3


@dataclass(frozen=True)
class ModelSpec:
    """``[model]``: activations, widths and readouts (docs/theory/conventions.md).

    ``student_activation`` / ``teacher_activation`` default to ``activation``; each is "erf",
    "linear", "relu" or a polynomial in x ("x**3 - 3*x").  The fixed second-layer weights are
    the ``normalisation``'s (paper: v_i = sqrt(M)/K, u_n = 1/sqrt(M); 1/K: 1/K, 1/M;
    1/sqrt(K): 1/sqrt(K), 1/sqrt(M); none: 1, 1) or explicit ``student_readout`` (K numbers)
    and ``teacher_readout`` (M numbers), exact.
    """

    activation: str = "erf"
    K: int = 2
    M: int = 2
    student_activation: str | None = None
    teacher_activation: str | None = None
    normalisation: str = "paper"
    student_readout: tuple | None = None
    teacher_readout: tuple | None = None
    readout: str = "fixed"                     # "fixed" | "trained"

    @property
    def student(self) -> str:
        return self.activation if self.student_activation is None else self.student_activation

    @property
    def teacher(self) -> str:
        return self.activation if self.teacher_activation is None else self.teacher_activation

    @property
    def is_plain(self) -> bool:
        """The original model: one activation for both, the paper's readouts."""
        return (self.student == self.teacher == self.activation
                and self.normalisation == "paper" and self.student_readout is None
                and self.teacher_readout is None and self.readout == "fixed")

    def readouts(self):
        """(v_1..v_K, u_1..u_M) as exact texts, or None for the paper's normalisation."""
        K, M = self.K, self.M
        if self.student_readout is None and self.teacher_readout is None:
            return {"paper": None,
                    "1/K": (f"1/{K}",) * K + (f"1/{M}",) * M,
                    "1/sqrt(K)": (f"1/sqrt({K})",) * K + (f"1/sqrt({M})",) * M,
                    "none": ("1",) * (K + M)}[self.normalisation]
        v = (tuple(str(x) for x in self.student_readout) if self.student_readout is not None
             else (f"sqrt({M})/{K}",) * K)
        u = (tuple(str(x) for x in self.teacher_readout) if self.teacher_readout is not None
             else (f"1/sqrt({M})",) * M)
        return v + u

    def system_key(self):
        """The :class:`derive.keys.SystemKey` of this model (the ODE system it needs)."""
        from derive.keys import SystemKey
        return SystemKey(self.student, self.K, self.M, teacher=self.teacher,
                         readout=self.readouts(), trained=self.readout == "trained")

    def initial_readout(self) -> tuple:
        """v_1..v_K at the start as exact texts (the learned v's start of a trained readout)."""
        from derive.keys import paper_readout
        r = self.readouts()
        return (paper_readout(self.K, self.M) if r is None else r)[:self.K]


@dataclass(frozen=True)
class DataSpec:
    L: int
    beta: Fraction | None          # None when eigenvalues are given
    eigenvalues: tuple[Fraction, ...] | None
    N: int | None
    rotate: bool = False


@dataclass(frozen=True)
class TrainingSpec:
    eta: Fraction
    order: int = 2
    sigma_J: Fraction = Fraction(1, 100)
    seed: int = 0
    init: str = "random"           # "random" | "explicit" | "expected" | "informed"
    # the committee-machine family (its conventions; defaults = today's training)
    noise: Fraction = Fraction(0)           # label-noise variance
    weight_decay: Fraction = Fraction(0)    # kappa, first layer
    batch_size: int = 1                     # fresh samples per SGD step
    eta_readout: Fraction | None = None     # required with [model] readout = "trained"
    weight_decay_readout: Fraction = Fraction(0)   # kappa_v, trained readout only
    schedule: tuple | None = None           # None: constant; else (kind, ((key, value), ...))

    def schedule_dict(self) -> dict | None:
        """The schedule as {"kind": ..., key: value} (Fractions / tuples of Fractions)."""
        return None if self.schedule is None else {"kind": self.schedule[0],
                                                   **dict(self.schedule[1])}

    @property
    def is_plain(self) -> bool:
        """No label noise, no weight decay, one sample per step (the original model)."""
        return self.noise == 0 and self.weight_decay == 0 and self.batch_size == 1

    def family_options(self) -> list[str]:
        """The family's training options given with other than their default values."""
        return [k for k, plain in (("noise", 0), ("weight_decay", 0), ("batch_size", 1),
                                   ("eta_readout", None), ("weight_decay_readout", 0),
                                   ("schedule", None))
                if getattr(self, k) != plain]


def refuse_training_options(spec, what: str, supported=()) -> None:
    """One-line ValueError when the spec asks for a training option that ``what`` does not
    implement (so that it is never silently ignored)."""
    extra = [k for k in spec.training.family_options() if k not in supported]
    if extra:
        raise ValueError(f"[training] {', '.join(extra)}: not implemented by {what} "
                         f"(the simulator runs it: scaling-odes simulate)")


@dataclass(frozen=True)
class InitSpec:
    basis: str                     # "modes" | "levels"
    R: tuple                       # nested tuples of Fraction, see the module docstring
    Q: tuple
    T: tuple


@dataclass(frozen=True)
class SolveSpec:
    alphas: tuple[float, ...] | None
    alpha_max: float | None        # None when alphas are given
    alpha_min: float | None        # resolved default; None when alphas are given
    n_points: int                  # len(alphas) when alphas are given
    spacing: str                   # "log" | "linear" | "explicit" (alphas given)
    basis: str = "modes"           # "levels" | "modes" (a spec's "auto" is resolved: auto_basis)
    dps: int | str = "auto"        # "auto" | "float64" | int >= 15
    digits: int = 6

    def alpha_grid(self) -> list[float]:
        """The output times: `alphas`, or `n_points` linear/log-spaced points, increasing."""
        if self.alphas is not None:
            return list(self.alphas)
        lo, hi, n = self.alpha_min, self.alpha_max, self.n_points
        if self.spacing == "log":
            a, b = math.log(lo), math.log(hi)
            grid = [math.exp(a + (b - a) * i / (n - 1)) for i in range(n)]
        else:
            grid = [lo + (hi - lo) * i / (n - 1) for i in range(n)]
        grid[0], grid[-1] = lo, hi
        return grid


@dataclass(frozen=True)
class Spec:
    model: ModelSpec
    data: DataSpec
    training: TrainingSpec
    init: InitSpec | None
    solve: SolveSpec
    extra: dict = field(default_factory=dict)
    path: str = "<spec>"


class _Problem(Exception):
    """Raised inside parsing; `parse_spec` prefixes the file name and re-raises SpecError."""


# ---- formatting ------------------------------------------------------------------------

def _decimal(f: Fraction) -> str | None:
    """Exact decimal string of `f`, or None if its expansion does not terminate."""
    q, k = f.denominator, 0
    for p in (2, 5):
        e = 0
        while q % p == 0:
            q, e = q // p, e + 1
        k = max(k, e)
    if q != 1:
        return None
    digits = str(abs(f.numerator) * 10**k // f.denominator).rjust(k + 1, "0")
    body = f"{digits[:-k]}.{digits[-k:]}" if k else digits
    return ("-" if f < 0 else "") + body


def _fmt(v, limit: int = 60) -> str:
    """A value as it would look in TOML, shortened to one line."""
    if isinstance(v, bool):
        s = "true" if v else "false"
    elif isinstance(v, str):
        s = json.dumps(v)
    elif isinstance(v, Fraction):
        if max(abs(v.numerator).bit_length(), v.denominator.bit_length()) > 80:
            from solvers.app.validate import _sci     # 1e-300 read exactly: as written
            s = _sci(v)
        else:
            s = _decimal(v) or f"{v.numerator}/{v.denominator}"
    elif isinstance(v, (list, tuple)):
        s = "[" + ", ".join(_fmt(x, limit) for x in v) + "]"
    elif isinstance(v, dict):
        s = "{" + ", ".join(f"{_key(k)} = {_fmt(x, limit)}" for k, x in v.items()) + "}"
    else:
        s = str(v)
    return s if len(s) <= limit else s[: limit - 3] + "..."


def _key(k: str) -> str:
    return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else json.dumps(k)


def _wrong_type(label, v, expected):
    return _Problem(f"{label} = {_fmt(v)} has wrong type: expected {expected}")


# ---- converters: (raw TOML value, label) -> value, or raise _Problem ---------------------

_DECIMAL_RE = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_EXACT = "number or decimal string"


def _int(v, label):
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    raise _wrong_type(label, v, "integer")


def _bool(v, label):
    if isinstance(v, bool):
        return v
    raise _wrong_type(label, v, "boolean")


def _str(v, label):
    if isinstance(v, str):
        return v
    raise _wrong_type(label, v, "string")


def _float(v, label):
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        if not math.isfinite(v):
            raise _Problem(f"{label} = {_fmt(v)} must be finite")
        return float(v)
    raise _wrong_type(label, v, "number")


def _exact(v, label):
    """Fraction from an int, a float (via its repr: 0.3 -> 3/10) or a decimal string."""
    if isinstance(v, int) and not isinstance(v, bool):
        return Fraction(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise _Problem(f"{label} = {_fmt(v)} must be finite")
        return Fraction(str(v))
    if isinstance(v, str) and _DECIMAL_RE.fullmatch(v):
        from solvers.app.validate import decimal_string_problem
        problem = decimal_string_problem(v)     # "1e999999999" would hang inside Fraction()
        if problem:
            raise _Problem(f"{label} = {_fmt(v, 30)} {problem}")
        return Fraction(v)
    raise _wrong_type(label, v, _EXACT)


def _list_of(conv, expected):
    def convert(v, label):
        if not isinstance(v, list):
            raise _wrong_type(label, v, expected)
        if not v:
            raise _Problem(f"{label} = [] must not be empty")
        return tuple(conv(x, f"{label}[{i}]") for i, x in enumerate(v))
    return convert


def _dps(v, label):
    if isinstance(v, (int, str)) and not isinstance(v, bool):
        return v
    raise _wrong_type(label, v, 'integer >= 15, "auto" or "float64"')


# ---- checks: (converted value, label) -> None, or raise _Problem -------------------------

def _rule(pred, text):
    def check(v, label):
        if not pred(v):
            raise _Problem(f"{label} = {_fmt(v)} {text}")
    return check


def _one_of(*allowed):
    return _rule(lambda v: v in allowed, "must be one of " + ", ".join(map(_fmt, allowed)))


def _ge(x):
    return _rule(lambda v: v >= x, f"must be >= {x}")


def _gt(x):
    return _rule(lambda v: v > x, f"must be > {x}")


def _each(check):
    def check_all(vs, label):
        for i, v in enumerate(vs):
            check(v, f"{label}[{i}]")
    return check_all


def _bare(label):
    """'[data] eigenvalues' -> 'eigenvalues'."""
    return label.rsplit("] ", 1)[-1]


def _distinct(vs, label):
    seen = {}
    for i, v in enumerate(vs):
        if v in seen:
            raise _Problem(f"{label}[{i}] = {_fmt(v)} duplicates {_bare(label)}[{seen[v]}] "
                           f"({_bare(label)} must be pairwise distinct)")
        seen[v] = i


def _increasing(vs, label):
    for i in range(1, len(vs)):
        if not vs[i] > vs[i - 1]:
            raise _Problem(f"{label}[{i}] = {_fmt(vs[i])} is not greater than "
                           f"{_bare(label)}[{i - 1}] = {_fmt(vs[i - 1])} ({_bare(label)} must "
                           f"be strictly increasing)")


def _all(*checks):
    def check(v, label):
        for c in checks:
            c(v, label)
    return check


def _dps_ok(v, label):
    if isinstance(v, str):
        _one_of("auto", "float64")(v, label)
    elif v < 15:
        raise _Problem(f'{label} = {v} must be >= 15 (or "auto" / "float64")')


def _activation_ok(v, label):
    """An activation string of the family: erf, linear, relu or a polynomial in x (parsed
    exactly, without SymPy)."""
    from solvers.sim.family import parse_activation
    try:
        parse_activation(v)
    except ValueError as e:
        raise _Problem(f"{label} = {_fmt(v)}: {str(e).split(': ', 1)[-1]}") from None


MAX_BATCH_SIZE = 10**6      # samples per step; the time of a run is sized in validate.py
# [training] schedule: kind -> the keys it needs (the spec reference prints the comments)
_SCHEDULE_KEYS = {
    "constant": (),                     # eta at every alpha (the same as no schedule)
    "power": ("alpha0", "p"),           # eta(alpha) = eta (1 + alpha/alpha0)^(-p); alpha0 > 0, p >= 0
    # eta until alphas[0], then etas[k] from alphas[k] on (alphas > 0 increasing, etas > 0)
    "steps": ("alphas", "etas"),
}


def _schedule(v, label):
    """[training] schedule = {kind = "constant"} | {kind = "power", alpha0, p} |
    {kind = "steps", alphas = [...], etas = [...]}: checked, exact numbers, stored as a
    hashable (kind, ((key, value), ...))."""
    if not isinstance(v, dict):
        raise _wrong_type(label, v, 'table such as {kind = "power", alpha0 = 1, p = 1}')
    kind = v.get("kind")
    if kind not in _SCHEDULE_KEYS:
        raise _Problem(f"{label} kind = {_fmt(kind)} must be one of "
                       + ", ".join(map(_fmt, _SCHEDULE_KEYS)))
    keys = _SCHEDULE_KEYS[kind]
    for k in v:
        if k != "kind" and k not in keys:
            raise _Problem(f"{label} unknown key '{_key(k)}' for kind = {_fmt(kind)} "
                           f"(allowed: kind{''.join(', ' + x for x in keys)})")
    for k in keys:
        if k not in v:
            raise _Problem(f"{label} kind = {_fmt(kind)} needs key {k!r}")
    out = []
    if kind == "power":
        a0, p = _exact(v["alpha0"], f"{label} alpha0"), _exact(v["p"], f"{label} p")
        _gt(0)(a0, f"{label} alpha0")
        _ge(0)(p, f"{label} p")
        out = [("alpha0", a0), ("p", p)]
    elif kind == "steps":
        conv = _list_of(_exact, f"list of {_EXACT}s")
        a, e = conv(v["alphas"], f"{label} alphas"), conv(v["etas"], f"{label} etas")
        _each(_gt(0))(a, f"{label} alphas")
        _increasing(a, f"{label} alphas")
        _each(_gt(0))(e, f"{label} etas")
        if len(a) != len(e):
            raise _Problem(f"{label} alphas has {len(a)} entries and etas {len(e)}: one eta "
                           f"per switching time")
        out = [("alphas", a), ("etas", e)]
    return None if kind == "constant" else (kind, tuple(out))


_INIT_NAMES = ("random", "explicit", "expected", "informed")


def _init_value(v, label):
    """A named start (``_INIT_NAMES``) or ``{from = "run.json"}``: the mode overlaps at alpha = 0
    that ``scaling-odes simulate`` wrote (its ``init.modes``, exact decimal strings), read as an
    explicit [init.modes] start (parse_spec reads the file)."""
    if isinstance(v, str):
        _one_of(*_INIT_NAMES)(v, label)
        return v
    if isinstance(v, dict):
        if set(v) != {"from"} or not isinstance(v["from"], str) or not v["from"]:
            raise _Problem(f'{label} = {_fmt(v)} must be one of '
                           + ", ".join(map(_fmt, _INIT_NAMES))
                           + ' or a table {from = "run.json"} (the JSON of scaling-odes simulate)')
        return ("from", v["from"])
    raise _wrong_type(label, v, 'string or table {from = "run.json"}')


_MAX_RUN_FILE = 1 << 28


def _read_capped(path, cap: int, error, regular: bool = False) -> bytes:
    """At most cap + 1 bytes of ``path`` (capped: /dev/zero would never end); ``error(message)``
    is the exception raised when it cannot be read.  ``regular``: refuse a device or FIFO
    up front (its read may block)."""
    try:
        if regular and Path(path).exists() and not Path(path).is_file():
            raise error(f"{path} is not a regular file")
        with open(path, "rb") as fh:
            return fh.read(cap + 1)
    except FileNotFoundError:
        raise error(f"cannot read {path}: no such file") from None
    except OSError as e:
        raise error(f"cannot read {path}: {e.strerror or e}") from None


def _init_from_run(path_text: str, spec_name: str) -> dict:
    """The [init.modes] table of a simulate JSON (``init.modes``), path relative to the spec."""
    label = f'[training] init = {{from = {_fmt(path_text)}}}'
    path = Path(path_text)
    if not path.is_absolute() and spec_name not in ("<spec>", ""):
        path = Path(spec_name).parent / path
    text = _read_capped(path, _MAX_RUN_FILE, lambda m: _Problem(f"{label}: {m}"), regular=True)
    if len(text) > _MAX_RUN_FILE:
        raise _Problem(f"{label}: {path} is larger than 256 MiB")
    try:
        doc = json.loads(text.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise _Problem(f"{label}: {path} is not JSON ({' '.join(str(e).split())[:80]})") \
            from None
    modes = doc.get("init", {}).get("modes") if isinstance(doc, dict) and \
        isinstance(doc.get("init"), dict) else None
    if not isinstance(modes, dict) or not all(k in modes for k in _TENSOR_KEYS):
        raise _Problem(f"{label}: {path} has no init.modes with R, Q, T (write it with "
                       f"scaling-odes simulate)")
    return {"modes": {k: modes[k] for k in _TENSOR_KEYS}}


_REQUIRED = object()

# section -> key -> (converter, default, check).  None as a default means "not given";
# whether it is then required depends on other keys (see the _check_* functions).
_SCHEMA = {
    "model": {
        "activation": (_str, "erf", _activation_ok),
        "K": (_int, 2, _ge(1)),
        "M": (_int, 2, _ge(1)),
        "student_activation": (_str, None, _activation_ok),
        "teacher_activation": (_str, None, _activation_ok),
        "normalisation": (_str, "paper", _one_of(*NORMALISATIONS)),
        "student_readout": (_list_of(_exact, f"list of {_EXACT}s"), None, None),
        "teacher_readout": (_list_of(_exact, f"list of {_EXACT}s"), None, None),
        "readout": (_str, "fixed", _one_of("fixed", "trained")),
    },
    "data": {
        "L": (_int, None, _ge(1)),
        "beta": (_exact, None, _gt(-1)),
        "eigenvalues": (_list_of(_exact, f"list of {_EXACT}s"), None,
                        _all(_each(_gt(0)), _distinct)),
        "N": (_int, None, _ge(1)),
        "rotate": (_bool, False, None),
    },
    "training": {
        "eta": (_exact, _REQUIRED, _gt(0)),
        "order": (_int, 2, _one_of(1, 2)),
        "sigma_J": (_exact, Fraction(1, 100), _all(_ge(0), _rule(
            lambda v: v <= MAX_SIGMA_J, f"must be <= {MAX_SIGMA_J} (initial student fields "
            f"{MAX_SIGMA_J}x the teacher's are the simulator's divergence bound)"))),
        "seed": (_int, 0, _ge(0)),
        "init": (_init_value, "random", None),
        "noise": (_exact, Fraction(0), _ge(0)),
        "weight_decay": (_exact, Fraction(0), _ge(0)),
        "batch_size": (_int, 1, _all(_ge(1), _rule(lambda v: v <= MAX_BATCH_SIZE,
                                                   f"must be <= {MAX_BATCH_SIZE}"))),
        "eta_readout": (_exact, None, _gt(0)),
        "weight_decay_readout": (_exact, Fraction(0), _ge(0)),   # kappa_v of a trained readout
        "schedule": (_schedule, None, None),
    },
    "solve": {
        "alphas": (_list_of(_float, "list of numbers"), None, _all(_each(_ge(0)), _increasing)),
        "alpha_max": (_float, None, _gt(0)),
        "alpha_min": (_float, None, None),            # alpha_max/10^4 (log spacing), 0 (linear)
        "n_points": (_int, 200, _all(_ge(2), _rule(lambda v: v <= 10**6, "must be <= 1000000"))),
        "spacing": (_str, "log", _one_of("log", "linear")),
        "basis": (_str, "auto", _one_of("auto", "levels", "modes")),
        "dps": (_dps, "auto", _dps_ok),
        # DEFAULT_DIGITS; 11 when dps = "float64" (the most a float64 run verifies)
        "digits": (_int, None, _rule(lambda v: 1 <= v <= 1000, "must be between 1 and 1000")),
    },
}
# [simulate]: the simulator's options.  Declared here, beside the common sections, because every
# subcommand of the common spec reads it (one spec drives the ODEs and the simulation);
# solvers.app.sections re-exports it.  The generator is spelled out so that reading a spec does
# not import numba; eps_holdout and the number of seeds are capped in solvers.app.validate.
SIMULATE_SCHEMA = {
    "seeds": (_list_of(_int, "list of integers"), None,             # [training.seed]
              _all(_each(_ge(0)), _distinct)),
    "n_jobs": (_int, None, _all(_ge(1), _rule(lambda v: v <= 1024, "must be <= 1024"))),
    "n_trainable": (_int, None, _ge(1)),                              # all N directions
    "untrainable": (_str, "zero", _one_of("zero", "frozen")),
    "eps_holdout": (_int, 0, _ge(0)),
    "generator": (_str, "float32", _one_of("xoshiro", "numpy", "float32")),
}
_INIT_KEYS = ("modes", "levels")
_TENSOR_KEYS = ("R", "Q", "T")


def _table(v, where):
    if not isinstance(v, dict):
        raise _Problem(f"{where} must be a table, got {_fmt(v)}")
    return v


def _no_unknown(raw: dict, allowed, where: str):
    for k in raw:
        if k not in allowed:
            raise _Problem(f"{where} unknown key '{_key(k)}' (allowed: {', '.join(allowed)})")


def _read_section(doc: dict, sec: str, schema: dict | None = None) -> dict:
    raw = _table(doc.get(sec, {}), f"[{sec}]")
    schema = _SCHEMA[sec] if schema is None else schema
    _no_unknown(raw, schema, f"[{sec}]")
    out = {}
    for key, (convert, default, check) in schema.items():
        label = f"[{sec}] {key}"
        if key not in raw:
            if default is _REQUIRED:
                raise _Problem(f"[{sec}] missing required key {key!r}")
            out[key] = default
            continue
        out[key] = convert(raw[key], label)
        if check is not None:
            check(out[key], label)
    return out


# ---- cross-key checks --------------------------------------------------------------------

def _check_training(t: dict, model: ModelSpec) -> TrainingSpec:
    if model.readout == "trained" and t["eta_readout"] is None:
        raise _Problem("[training] missing key 'eta_readout' (> 0): needed with [model] "
                       "readout = \"trained\"")
    if model.readout != "trained" and t["eta_readout"] is not None:
        raise _Problem(f"[training] eta_readout = {_fmt(t['eta_readout'])} is only used with "
                       f"[model] readout = \"trained\" (got readout = {_fmt(model.readout)})")
    if model.readout != "trained" and t["weight_decay_readout"] != 0:
        raise _Problem(f"[training] weight_decay_readout = {_fmt(t['weight_decay_readout'])} "
                       f"decays a trained readout: it is only used with [model] readout = "
                       f"\"trained\" (weight_decay acts on the first layer)")
    return TrainingSpec(**t)


def _check_model(m: dict) -> ModelSpec:
    for key, n, size in (("student_readout", m["K"], "K"), ("teacher_readout", m["M"], "M")):
        if m[key] is None:
            continue
        if m["normalisation"] != "paper":
            raise _Problem(f"[model] give {key} with the default normalisation = \"paper\" "
                           f"only, not with normalisation = {_fmt(m['normalisation'])}")
        if len(m[key]) != n:
            raise _Problem(f"[model] {key} has {len(m[key])} entries: need {size} = {n}")
        if key == "student_readout" and m["readout"] == "fixed" and not any(m[key]):
            # sigma = sum_i v_i g(x_i) = 0 for every input and every gradient carries a v_i:
            # nothing moves (and the printed system would have no terms)
            raise _Problem(f"[model] student_readout = {_fmt(list(m[key]))}: every fixed "
                           f"student readout is zero, so the student's output and its gradient "
                           f"vanish and nothing is learned; give a non-zero entry (or "
                           f"readout = \"trained\")")
        big = [x for x in m[key] if abs(x) > MAX_READOUT]
        if big:
            raise _Problem(f"[model] {key} = {_fmt(list(m[key]))}: |{_fmt(big[0])}| is above "
                           f"{MAX_READOUT:.0e}; a readout v scales the effective step to "
                           f"eta v^2 and the outputs to v times the fields")
    return ModelSpec(**m)


# the paper's defaults: a power law with L = 16 levels, beta = 1 in N = 1024 dimensions
DEFAULT_L, DEFAULT_BETA, DEFAULT_N = 16, Fraction(1), 1024


def _check_data(d: dict, training_init: str) -> DataSpec:
    if d["eigenvalues"] is not None:
        if d["L"] is not None or d["beta"] is not None:
            raise _Problem("[data] give either L and beta or eigenvalues, not both")
        d["L"] = len(d["eigenvalues"])
    else:
        d["L"] = DEFAULT_L if d["L"] is None else d["L"]
        d["beta"] = DEFAULT_BETA if d["beta"] is None else d["beta"]
    if d["N"] is None and training_init in ("random", "informed"):
        # N only matters for a finite-N realisation; its default must hold the L levels
        if DEFAULT_N % d["L"]:
            raise _Problem(f"[data] N is not given and its default {DEFAULT_N} is not a "
                           f"multiple of L = {d['L']}: give N (a multiple of L)")
        d["N"] = DEFAULT_N
    if d["N"] is not None and d["N"] % d["L"]:
        raise _Problem(f"[data] L = {d['L']} does not divide N = {d['N']}")
    return DataSpec(**d)


_GRID_KEYS = ("alpha_max", "alpha_min", "n_points", "spacing")


FLOAT64_DEFAULT_DIGITS = 11       # [solve] digits when dps = "float64" and digits is not given
# [solve] digits otherwise: a curve to plot or fit needs 3-4 digits; 6 leaves a margin and is
# within reach of the verified float64 modes pair (solvers.hierarchy.precision
# FLOAT64_MAX_DIGITS = 9), the fast route; verification work asks for more explicitly
DEFAULT_DIGITS = 6


def auto_basis(init_basis: str | None) -> str:
    """``[solve] basis = "auto"`` (the default): the modes basis, whose float64 pair is the
    fast verified route and whose arbitrary-precision runs need no closure digits; the level
    basis only for an explicit ``[init.levels]`` (level values of a large L carry their
    meaning only at many digits, which a float64 modes start would round away)."""
    return "levels" if init_basis == "levels" else "modes"


def _check_solve(s: dict, raw: dict) -> SolveSpec:
    if s["alphas"] is not None:
        clash = [k for k in _GRID_KEYS if k in raw]
        if clash:
            raise _Problem(f"[solve] give either alphas or {'/'.join(_GRID_KEYS)}, not both "
                           f"(got alphas and {', '.join(clash)})")
        s.update(n_points=len(s["alphas"]), spacing="explicit")
    else:
        hi = s["alpha_max"]
        if hi is None:
            raise _Problem("[solve] missing required key 'alpha_max' (or give alphas)")
        log = s["spacing"] == "log"
        if s["alpha_min"] is None:
            s["alpha_min"] = hi * 1e-4 if log else 0.0
        lo = s["alpha_min"]
        if not ((lo > 0 if log else lo >= 0) and lo < hi):
            bound = "> 0" if log else ">= 0"
            raise _Problem(f"[solve] alpha_min = {_fmt(lo)} must be {bound} and < alpha_max "
                           f"= {_fmt(hi)} (spacing = {_fmt(s['spacing'])})")
    if s["digits"] is None:
        # a fixed dps = "float64" asks for the most a float64 run verifies
        # (solvers.hierarchy.precision.FLOAT64_FIXED_MAX_DIGITS); otherwise DEFAULT_DIGITS
        s["digits"] = FLOAT64_DEFAULT_DIGITS if s["dps"] == "float64" else DEFAULT_DIGITS
    spec = SolveSpec(**s)
    if spec.alphas is None:
        grid = spec.alpha_grid()
        if any(b <= a for a, b in zip(grid, grid[1:])):
            raise _Problem(f"[solve] n_points = {spec.n_points} is too many for alpha_min = "
                           f"{_fmt(lo)} .. alpha_max = {_fmt(hi)} (grid not strictly increasing)")
    if isinstance(s["dps"], int) and s["digits"] > s["dps"] - 5:
        raise _Problem(f"[solve] dps = {s['dps']} is too small for digits = {s['digits']} "
                       f"(need dps >= digits + 5)")
    return spec


def _tensor(v, shape, label, hint):
    if not shape:
        return _exact(v, label)
    if not isinstance(v, list) or len(v) != shape[0]:
        got = f"length {len(v)}" if isinstance(v, list) else _fmt(v)
        raise _Problem(f"{label} has wrong shape: expected a list of length {shape[0]}, "
                       f"got {got} ({hint})")
    return tuple(_tensor(x, shape[1:], f"{label}[{i}]", hint) for i, x in enumerate(v))


def _check_symmetric(t, label):
    for k, mat in enumerate(t):
        for i in range(len(mat)):
            for j in range(i):
                if mat[i][j] != mat[j][i]:
                    raise _Problem(f"{label}[{k}] is not symmetric: {label}[{k}][{i}][{j}] = "
                                   f"{_fmt(mat[i][j])} != {label}[{k}][{j}][{i}] = "
                                   f"{_fmt(mat[j][i])}")


def _read_init(raw, model: ModelSpec, data: DataSpec, training: TrainingSpec):
    if training.init != "explicit":
        if raw is None:
            return None
        sub = next((s for s in _INIT_KEYS if isinstance(raw, dict) and s in raw), None)
        where = f"[init.{sub}]" if sub else "[init]"
        raise _Problem(f"{where} given but training.init = '{training.init}'")
    if raw is None:
        raise _Problem("training.init = 'explicit' needs an [init.modes] or [init.levels] table")
    _no_unknown(_table(raw, "[init]"), _INIT_KEYS, "[init]")
    given = [s for s in _INIT_KEYS if s in raw]
    if len(given) != 1:
        raise _Problem("[init] give exactly one of [init.modes] or [init.levels], not both")
    basis = given[0]
    where = f"[init.{basis}]"
    tables = _table(raw[basis], where)
    _no_unknown(tables, _TENSOR_KEYS, where)
    L, K, M = data.L, model.K, model.M
    nT = L + 1 if basis == "levels" else L
    shapes = {"R": ((L, K, M), "L x K x M"), "Q": ((L, K, K), "L x K x K"),
              "T": ((nT, M, M), "(L+1) x M x M" if basis == "levels" else "L x M x M")}
    out = {}
    for key, (shape, dims) in shapes.items():
        if key not in tables:
            raise _Problem(f"{where} missing required key {key!r}")
        hint = f"{key} is {dims} = {'x'.join(map(str, shape))}"
        out[key] = _tensor(tables[key], shape, f"{where} {key}", hint)
    _check_symmetric(out["Q"], f"{where} Q")
    _check_symmetric(out["T"], f"{where} T")
    return InitSpec(basis=basis, **out)


# ---- public API --------------------------------------------------------------------------

# read by every subcommand of the common spec: one file drives the ODEs and the simulation
# (``solve`` and ``simulate`` of the same spec); its keys are checked wherever it appears
COMMON_EXTRA = ("simulate",)
# the sections of the other subcommands of the common spec: accepted everywhere, so that one
# file serves ``solve``, ``asymptotic``, ``sweep``, ...; each is validated by the subcommand
# that reads it (solvers.app.sections)
OTHER_SECTIONS = ("sweep", "plateau", "asymptotic", "linear", "compare")
SIZINGS = ("solve", None)


def parse_spec(mapping: dict, *, name: str = "<spec>", extra_sections=(),
               sizing: str | None = "solve") -> Spec:
    """Validate an already-parsed TOML document.  Raises SpecError.

    ``sizing``: "solve" (default) also sizes the ODE solve of ``[solve]`` (trajectory memory
    and time at the precision it will run at, `solvers.app.sizing.size_solve`); None leaves
    the sizing to the caller, whose work is another one (``simulate``, ``linear``: each sizes
    the route it really runs before any work).
    """
    if sizing not in SIZINGS:
        raise ValueError(f"sizing = {sizing!r} must be one of {SIZINGS}")
    extra_sections = tuple(dict.fromkeys((*extra_sections, *COMMON_EXTRA, *OTHER_SECTIONS)))
    try:
        doc = _table(mapping, "the spec")
        allowed = (*_SCHEMA, "init", *extra_sections)
        for sec in doc:
            if sec not in allowed:
                raise _Problem(f"unknown section [{_key(sec)}] (allowed: {', '.join(allowed)})")
        model, data, training, solve = (_read_section(doc, sec) for sec in _SCHEMA)
        model = _check_model(model)
        raw_init = doc.get("init")
        if isinstance(training["init"], tuple):      # {from = "run.json"}: explicit modes
            if raw_init is not None:
                raise _Problem("[init] given together with [training] init = {from = ...}: "
                               "give one of them")
            raw_init = _init_from_run(training["init"][1], name)
            training["init"] = "explicit"
        training = _check_training(training, model)
        data = _check_data(data, training.init)
        solve = _check_solve(solve, doc.get("solve", {}))
        init = _read_init(raw_init, model, data, training)
        if solve.basis == "auto":
            solve = dataclasses.replace(solve, basis=auto_basis(init and init.basis))
        extra = {sec: _table(doc[sec], f"[{sec}]") for sec in extra_sections if sec in doc}
    except _Problem as p:
        raise SpecError(f"{name}: {' '.join(str(p).split())}") from None
    spec = Spec(model, data, training, init, solve, extra, name)
    from solvers.app.validate import check_simulate_section, check_spec
    try:
        if "simulate" in extra:
            try:
                opts = _read_section(doc, "simulate", SIMULATE_SCHEMA)
            except _Problem as p:
                raise ValueError(str(p)) from None
            check_simulate_section(spec, opts)
        check_spec(spec)        # ranges, float64 range, realisability: before any work
        if sizing == "solve":
            from solvers.app.sizing import size_solve
            size_solve(spec)    # the ODE solve's memory, and the time of its route
    except ValueError as e:
        msg = str(e)
        if not msg.startswith(f"{name}: "):
            msg = f"{name}: {msg}"
        raise SpecError(" ".join(msg.split())) from None
    return spec


_MAX_SPEC_FILE = 1 << 24


def read_document(path) -> dict:
    """The TOML document of a spec file, unvalidated.  Raises SpecError.

    A JSON file written by a subcommand (``-o out.json``) is read as the spec it records
    (``meta.spec``, the resolved spec: every default filled in), so a result re-runs as it ran.
    """
    name = str(path)
    if Path(path).suffix.lower() == ".json":
        return _spec_of_result(path)
    text = _read_capped(path, _MAX_SPEC_FILE, lambda m: SpecError(f"{name}: {m}"))
    if len(text) > _MAX_SPEC_FILE:
        raise SpecError(f"{name}: larger than {_MAX_SPEC_FILE >> 20} MiB: not a spec")
    try:
        doc = tomllib.loads(text.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise SpecError(f"{name}: invalid TOML: {' '.join(str(e).split())}") from None
    except RecursionError:
        raise SpecError(f"{name}: invalid TOML: nested too deeply") from None
    return doc


def _spec_of_result(path) -> dict:
    name = str(path)
    try:
        doc = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise SpecError(f"{name}: cannot read {name}: no such file") from None
    except OSError as e:
        raise SpecError(f"{name}: cannot read {name}: {e.strerror or e}") from None
    except (ValueError, RecursionError) as e:
        raise SpecError(f"{name}: invalid JSON: {' '.join(str(e).split())[:200]}") from None
    spec = doc.get("meta", {}).get("spec") if isinstance(doc, dict) and isinstance(
        doc.get("meta"), dict) else None
    if not isinstance(spec, dict):
        raise SpecError(f"{name}: a JSON spec must be a result of this tool holding its spec "
                        f"under meta.spec (give a TOML spec otherwise)")
    return spec


def load_spec(path, extra_sections=(), sizing: str | None = "solve") -> Spec:
    """Read and validate a spec file (``sizing``: see `parse_spec`).  Raises SpecError."""
    return parse_spec(read_document(path), name=str(path), extra_sections=extra_sections,
                      sizing=sizing)


# ---- sections of other theories ----------------------------------------------------------
# Subcommands whose spec is not the online-SGD one (e.g. ``[bayes]``, ``[kernel]``) declare a
# schema of the same form as `_SCHEMA` (key -> (converter, default, check)) built from the
# converters and checks below, and read it with `parse_section`: one error format everywhere.
REQUIRED = _REQUIRED
convert = SimpleNamespace(int=_int, bool=_bool, str=_str, float=_float, exact=_exact,
                          list_of=_list_of)
check = SimpleNamespace(one_of=_one_of, ge=_ge, gt=_gt, each=_each, all=_all, rule=_rule,
                        distinct=_distinct, increasing=_increasing)


def check_sections(doc: dict, allowed, required: str, *, name: str, why: str = "") -> None:
    """SpecError unless every section of ``doc`` is in ``allowed`` and ``required`` is there
    (``why`` follows the missing-section message)."""
    for sec in doc:
        if sec not in allowed:
            raise SpecError(f"{name}: unknown section [{sec}] (allowed: {', '.join(allowed)})")
    if required not in doc:
        raise SpecError(f"{name}: missing section [{required}]{why}")


def parse_section(doc: dict, sec: str, schema: dict, *, name: str = "<spec>") -> dict:
    """Validate section ``[sec]`` of ``doc`` against ``schema``; a missing section is empty.

    Returns key -> converted value (defaults filled in).  Raises SpecError (one line, starting
    with ``name``).  Cross-key rules stay with the caller: raise ``SpecError`` via `section_error`.
    """
    try:
        doc = _table(doc, "the spec")
        return _read_section(doc, sec, schema)
    except _Problem as p:
        raise SpecError(f"{name}: {' '.join(str(p).split())}") from None


def section_error(name: str, sec: str, text: str) -> SpecError:
    """The SpecError for a rule involving several keys of ``[sec]``."""
    return SpecError(f"{name}: [{sec}] {' '.join(text.split())}")


def _out(v):
    """Fractions as decimal strings (str(float) if the expansion does not terminate)."""
    if isinstance(v, Fraction):
        return _decimal(v) or str(float(v))
    if isinstance(v, tuple):
        return [_out(x) for x in v]
    return v


def _model_dict(m: ModelSpec) -> dict:
    out = {"activation": m.activation, "K": m.K, "M": m.M}
    # the family's keys only when given: the original model's dictionary is unchanged
    for key in ("student_activation", "teacher_activation", "student_readout", "teacher_readout"):
        if getattr(m, key) is not None:
            out[key] = _out(getattr(m, key))
    if m.normalisation != "paper":
        out["normalisation"] = m.normalisation
    if m.readout != "fixed":
        out["readout"] = m.readout
    return out


def resolved_spec(spec: Spec, **sections) -> dict:
    """The spec as it ran, for a result's ``meta.spec``: `spec_to_dict` (every default of the
    common sections filled in), with each validated section given here (e.g. ``simulate=``
    the options of `solvers.app.simulation.simulate_options`) in place of its raw text;
    keys whose value is None ("not given") are left out.  Fed back (a ``.json`` spec) it
    re-runs to the same numbers."""
    out = spec_to_dict(spec)
    m, t = spec.model, spec.training
    out["model"].update(normalisation=m.normalisation, readout=m.readout)
    for key in ("noise", "weight_decay", "batch_size"):
        out["training"][key] = _out(getattr(t, key))
    for sec, values in sections.items():
        out[sec] = {k: (list(v) if isinstance(v, tuple) else v)
                    for k, v in values.items() if v is not None}
    return json.loads(json.dumps(out, default=_json_default))


def _json_default(v):
    if isinstance(v, Fraction):
        return _out(v)
    raise TypeError(f"{type(v).__name__} is not JSON")


def spec_to_dict(spec: Spec) -> dict:
    """Inverse of `parse_spec`: parse_spec(spec_to_dict(s)) == s for terminating decimals."""
    m, d, t, s = spec.model, spec.data, spec.training, spec.solve
    data = {"eigenvalues": _out(d.eigenvalues)} if d.eigenvalues is not None else \
        {"L": d.L, "beta": _out(d.beta)}
    if d.N is not None:
        data["N"] = d.N
    data["rotate"] = d.rotate
    solve = {"alphas": list(s.alphas)} if s.alphas is not None else \
        {"alpha_max": s.alpha_max, "alpha_min": s.alpha_min, "n_points": s.n_points,
         "spacing": s.spacing}
    solve.update(basis=s.basis, dps=s.dps, digits=s.digits)
    out = {
        "model": _model_dict(m),
        "data": data,
        "training": {"eta": _out(t.eta), "order": t.order, "sigma_J": _out(t.sigma_J),
                     "seed": t.seed, "init": t.init,
                     **{k: _out(getattr(t, k)) for k in ("noise", "weight_decay", "batch_size",
                                                         "eta_readout", "weight_decay_readout")
                        if getattr(t, k) != _SCHEMA["training"][k][1]},
                     **({"schedule": {k: _out(x) for k, x in t.schedule_dict().items()}}
                        if t.schedule is not None else {})},
        "solve": solve,
    }
    if spec.init is not None:
        i = spec.init
        out["init"] = {i.basis: {"R": _out(i.R), "Q": _out(i.Q), "T": _out(i.T)}}
    out.update(copy.deepcopy(spec.extra))
    return out
