"""How long printing a solver module on demand takes (no SymPy here: callers that only size a
request need not import the code generator).

The symbolic work is the hierarchy's Gaussian integrals and their split into next-level
coefficients (``derive.codegen.module_printer._derive``), the common-subexpression
elimination and printing of the coefficients with their forward-accumulated derivatives
(``derive.codegen.module_printer.render``), and the Taylor-jet decomposition
(``derive.codegen.jet_printer.render_jets``); together they grow about like n^1.5,
n = KM + K(K+1)/2 the number of per-level state variables.  Measured CPU seconds of those
phases in one process (erf, this machine class; BENCHMARKS.md, "Generation speed"): the model
below is a least-squares fit of ``log t`` on ``log n`` over them.  Starting Python and importing
SymPy add ~0.6 s, compiling the printed modules on first import another ~3 % (both outside the
estimate).

The activations change the cost by a factor that depends on the student's and the teacher's
kind separately and on the size: ReLU (orthant probabilities and their gradients) and
polynomials of degree >= 3 (long Gaussian-moment expansions) cost more than erf and grow
faster; a linear student makes every integral with its derivative trivial.  ``activation_factor``
is a fit on 13 pairs at K = M = 2, 3, 4, 6 (ReLU/ReLU and the cubic pair also 5) (BENCHMARKS.md, "Generation time per activation pair" and "Generation speed for the family"); the
sizing of a request (``solvers.app.validate``) and the announcement of the registry both use
``estimate_seconds``.

>>> round(estimate_seconds("erf", 4, 4), 1)
4.6
>>> round(estimate_seconds("relu", 4, 4) / estimate_seconds("erf", 4, 4), 1)
1.6
"""
from __future__ import annotations

import math
import re

# seconds = coefficient · n^EXPONENT + OVERHEAD, n = KM + K(K+1)/2.  Fit on erf K = M = 2..6
# (bench/fit_codegen_time.py over bench/bench_codegen_pairs.py, CPU seconds including the Taylor
# jets' second process): every erf point within 0.89 .. 1.19 of the model (erf K = M = 4: 4.1 s,
# 6: 18.6 s).  Linear/linear has its own law (every coefficient a polynomial, mostly start-up):
# LINEAR_COEFFICIENT · n^LINEAR_EXPONENT, within 0.86 .. 1.12 (K = M = 2..6: 0.1 .. 0.5 s).
EXPONENT = 1.563
COEFFICIENT = {"erf": 0.0282}
LINEAR_COEFFICIENT, LINEAR_EXPONENT = 0.0316, 0.640
OVERHEAD = 0.05

# the share of the Taylor jets in that time (erf K = M = 3 .. 6: 0.15 .. 0.19)
JETS_SHARE = 0.2


def n_state(K: int, M: int) -> int:
    """Order parameters per level: R (K x M) and the upper triangle of Q."""
    return K * M + K * (K + 1) // 2


# The activation factor t(student, teacher) / t(erf, erf) at the same K, M, in CPU seconds of
# ``registry.generate`` in a cold process (bench/bench_codegen_pairs.py, fitted by
# bench/fit_codegen_time.py): log factor = A[student kind] + B[teacher kind] + (C[student kind]
# + D[teacher kind]) log(n / 15), least squares over the 50 measurements of 13 pairs at
# K = M = 2, 3, 4, 6 (ReLU/ReLU and the cubic pair also at 5) that are not erf/erf or
# linear/linear; erf is 0.  Every measurement is within a factor 0.62 .. 1.63 of the fit (the
# extremes: ReLU/erf 0.62 .. 0.67, ReLU/ReLU at K = M = 6 1.63: a ReLU on both sides costs more
# than the two sides' terms say).  Kinds: "poly" is a polynomial of degree >= 3 (x**3 - 3*x
# measured), "poly2" of degree <= 2 (x**2).  Below n = 7 the factor is held (overheads).
#        kind       A (student)  B (teacher)  C (student)  D (teacher)
FACTOR_FIT = {"erf": (0.0, 0.0, 0.0, 0.0),
              "relu": (0.085, 0.225, 0.306, 0.039),
              "linear": (-2.122, -0.571, -0.912, -0.101),
              "poly2": (-1.465, 0.150, -0.383, 0.399),
              "poly": (0.319, -0.027, 0.373, 0.170)}
FACTOR_N_MIN = 7             # the smallest measured n


def activation_kind(activation: str) -> str:
    """``"erf"``, ``"relu"``, ``"linear"``, ``"poly2"`` (a polynomial of degree <= 2) or
    ``"poly"`` (degree >= 3), read from the activation's name or polynomial string: a
    canonical (expanded) text, as a SystemKey holds it; a spec's raw text goes through
    ``solvers.app.validate.parsed_activation`` first (x*x*x names no power).

    >>> activation_kind("x**3 - 3*x"), activation_kind("x^2 + 1"), activation_kind("relu")
    ('poly', 'poly2', 'relu')
    """
    if activation in ("erf", "relu", "linear"):
        return activation
    powers = [int(p) for p in re.findall(r"x\s*(?:\*\*|\^)\s*(\d+)", activation)]
    return "poly" if max(powers, default=1) >= 3 else "poly2"


def activation_factor(student: str, teacher: str | None, K: int, M: int) -> float:
    """Generation time of the pair over that of erf/erf at the same K, M (the fit above)."""
    ks, kt = activation_kind(student), activation_kind(teacher or student)
    n = max(n_state(K, M), FACTOR_N_MIN)
    a, _, c, _ = FACTOR_FIT[ks]
    _, b, _, d = FACTOR_FIT[kt]
    return math.exp(a + b + (c + d) * math.log(n / 15))


def estimate_seconds(activation: str, K: int, M: int, teacher: str | None = None) -> float:
    """Estimated seconds to derive and print the modules of a system (the solver module and its
    Taylor jets) on one free core.

    Parameters
    ----------
    activation : str
        The student's activation (the system key's ``activation``).
    K, M : int
        Student and teacher widths.
    teacher : str, optional
        The teacher's activation; None means the student's.
    """
    teacher = teacher or activation
    if activation == teacher == "linear":
        # every coefficient a polynomial in the overlaps: its own measured law
        return OVERHEAD + LINEAR_COEFFICIENT * n_state(K, M) ** LINEAR_EXPONENT
    return OVERHEAD + (COEFFICIENT["erf"] * n_state(K, M) ** EXPONENT
                       * activation_factor(activation, teacher, K, M))


# Peak memory of the generation above the interpreter with SymPy loaded (~91 MiB): the SymPy
# expressions of the derivation and the CSE.  Measured (max RSS of the cold process, erf):
# n = 15: +15 MiB, 26: +26, 40: +51, 57: +93; the fit MEMORY_MIB · n^MEMORY_EXPONENT matches the
# three larger within 6%.  The activation factor of the time is applied too (its expressions
# are what the time is spent on; ReLU K = M = 5: +163 MiB measured, 226 estimated).  Below
# ~20 MiB the high-water mark of the imports hides the generation (a second process measured
# +7 MiB for erf/ReLU K = M = 3 where the table says +16): the estimate is for sizing large
# requests, where it refuses K = M = 40 erf (53 GiB) long before its 7.8 h.
MEMORY_MIB = 0.0966
MEMORY_EXPONENT = 1.7


def estimate_peak_bytes(activation: str, K: int, M: int, teacher: str | None = None) -> float:
    """Estimated extra peak memory (bytes) of deriving and printing the modules of a system.

    >>> round(estimate_peak_bytes("erf", 6, 6) / 2 ** 20)
    93
    """
    teacher = teacher or activation
    factor = 1.0 if activation == teacher == "linear" else activation_factor(activation,
                                                                             teacher, K, M)
    return MEMORY_MIB * 2 ** 20 * n_state(K, M) ** MEMORY_EXPONENT * factor


def describe(seconds: float) -> str:
    """``"12 s"`` (at least ``"1 s"``), ``"3 min"``, ``"1.5 h"``: the rounded duration a progress line shows."""
    if seconds < 90:
        return f"{max(seconds, 1):.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
