"""How long printing a solver module on demand takes (no SymPy here: callers that only size a
request need not import the code generator).

The symbolic work is dominated by the derivatives of the level-1 coefficients by the level-1
state (``derive.codegen._derive``) and by the common-subexpression passes of the printing; both
grow about like the square of the number of per-level state variables n = KM + K(K+1)/2.
Measured CPU seconds from a cold cache (erf, this machine class; BENCHMARKS.md, "On-demand
generation"): the model below is a least-squares fit of ``log t`` on ``log n`` over them.
``solvers.app.validate`` sizes a request with its own, older rule before any work.

>>> round(estimate_seconds("erf", 3, 3))
6
"""
from __future__ import annotations

# seconds = coefficient · n^EXPONENT + OVERHEAD, n = KM + K(K+1)/2.  Fit on erf with K, M <= 3,
# (4, 2), (4, 4): every measured time within a factor 0.76 .. 1.31 of the model (erf K = M = 2:
# 1.5 s, 3: 6.3 s, 4: 18.6 s).  Linear: every coefficient is a polynomial, ~30x cheaper.
EXPONENT = 1.84
# ReLU and polynomial students (one measurement each, K = M = 3, same machine, CPU s): ReLU 15.4 s
# (the orthant terms and their gradients), x**3 - 3x 8.5 s, erf 6.2 s
COEFFICIENT = {"erf": 0.042, "linear": 0.0012, "relu": 0.105, "poly": 0.058}
OVERHEAD = 0.05


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
