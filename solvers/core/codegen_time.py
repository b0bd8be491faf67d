"""How long printing a solver module on demand takes (no SymPy here: callers that only size a
request need not import the code generator).

The symbolic work is the hierarchy's Gaussian integrals and their split into next-level
coefficients (``derive.codegen._derive``), the common-subexpression elimination and printing of
the coefficients with their forward-accumulated derivatives (``derive.codegen.render``), and the
Taylor-jet decomposition (``derive.taylor.render_jets``); together they grow about like n^1.9,
n = KM + K(K+1)/2 the number of per-level state variables.  Measured CPU seconds of those
phases in one process (erf, this machine class; BENCHMARKS.md, "Generation speed"): the model
below is a least-squares fit of ``log t`` on ``log n`` over them.  Starting Python and importing
SymPy add ~0.6 s, compiling the printed modules on first import another ~3 % (both outside the
estimate).  ``solvers.app.validate`` sizes a request with its own, older rule before any work.

>>> round(estimate_seconds("erf", 4, 4), 1)
5.4
"""
from __future__ import annotations

# seconds = coefficient · n^EXPONENT + OVERHEAD, n = KM + K(K+1)/2.  Fit on erf K = M = 2..6,
# (1, 2), (2, 1), (3, 2), (2, 4), (4, 2), (6, 2), (2, 6): every measured time within a factor
# 0.85 .. 1.18 of the model (erf K = M = 3: 2.0 s, 4: 5.3 s, 6: 21.6 s).  Linear: every
# coefficient is a polynomial, ~50x cheaper (linear K = M = 6: 0.4 s).
EXPONENT = 1.89
# ReLU and polynomial students (the student's activation sets the cost): erf's coefficient times
# their measured ratio to erf at K = M = 3 (CPU s from a cold process: erf 2.1, ReLU 5.3 (the
# orthant terms and their gradients), x**3 - 3x 5.0; a ReLU/erf pair 2.2)
COEFFICIENT = {"erf": 0.0113, "linear": 0.0002, "relu": 0.0113 * 2.5, "poly": 0.0113 * 2.4}
OVERHEAD = 0.05

# the share of the Taylor jets in that time (erf K = M = 3 .. 6: 0.15 .. 0.19)
JETS_SHARE = 0.2


def n_state(K: int, M: int) -> int:
    """Order parameters per level: R (K x M) and the upper triangle of Q."""
    return K * M + K * (K + 1) // 2


def estimate_seconds(activation: str, K: int, M: int) -> float:
    """Estimated seconds to derive and print the modules of (activation, K, M) (the solver
    module and its Taylor jets) on one free core."""
    kind = activation if activation in ("erf", "linear", "relu") else "poly"
    coefficient = COEFFICIENT[kind]
    return OVERHEAD + coefficient * n_state(K, M) ** EXPONENT


def describe(seconds: float) -> str:
    """``"12 s"`` (at least ``"1 s"``), ``"3 min"``, ``"1.5 h"``: the rounded duration a progress line shows."""
    if seconds < 90:
        return f"{max(seconds, 1):.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
