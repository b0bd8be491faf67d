"""pyscm's closed-form generalisation error (erf / ReLU / linear) and its ODE, from its equations.

Peer: ``sgoldt/pyscm`` (S. Goldt, Python/Cython), files ``scm/scm.py``
(``eg_white_inputs_orderparameters``: ε_g for isotropic inputs from (Q, R, T); ``phi``,
``gradient``, ``learn``: the network and its SGD step) and ``scm/ode/scm_ode_erf.pyx``
(``propagate``: the erf ODE's forward-Euler loop).

Model and conventions
---------------------
φ(ξ) = (1/K)^s Σ_i g_s(λ_i), φ*(ξ) = (1/M)^s Σ_n g_t(ν_n), s = 1 with ``normalise=True`` and
s = 0 without, g ∈ {erf(x/√2), max(0, x), x}.  In the project's conventions: normalise=True is
normalisation = "1/K" (v_i = 1/K, u_n = 1/M), normalise=False is normalisation = "none"
(v_i = u_n = 1).  Learning rate: w ← w + (lr/√N) v_i Δ g'(λ) ξ − (wd/N) w, so lr = our eta and
wd = our eta · weight_decay (as in nn2pp); label noise σ is a standard deviation, our
noise = σ².  The second layer is never trained.

Closed-form ε_g (clean: no label noise), with P(c11, c12, c22) = <g(a) g(b)> for a, b jointly
Gaussian with covariance [[c11, c12], [c12, c22]]::

    ε_g = ½ [ Σ_ij v_i v_j P_ss(Q_ii, Q_ij, Q_jj) + Σ_nm u_n u_m P_tt(T_nn, T_nm, T_mm)
              − 2 Σ_in v_i u_n P_st(Q_ii, R_in, T_nn) ]

    erf–erf:    P = (2/π) asin(c12 / √((1 + c11)(1 + c22)))
    ReLU–ReLU:  P = [2 √(c11 c22 − c12²) + π c12 + 2 c12 atan(c12 / √(c11 c22 − c12²))] / (4π)
                (pyscm's ``integral`` is P/2, the ½ of ε_g taken inside; at c12² = c11 c22 it
                returns c12/4, i.e. P = c12/2 — the limit for c12 > 0; for perfectly
                anti-correlated fields the limit is 0, see :func:`relu_relu`)
    ReLU–erf:   P = c12 · √(2/π) / (2 √(1 + c_erf)), c_erf the variance of the erf field
                (pyscm: R_in / √(2π (1 + Q_ii)) for a ReLU teacher and an erf student, and
                R_in / √(2π (1 + T_nn)) for an erf teacher and a ReLU student)
    linear:     P = c12 (pyscm treats linear only with a linear partner).

ODE (``scm_ode_erf.pyx``): erf only, the nn2pp right-hand side (:mod:`.nn2pp_equations`) with
v_i = A_n = 1 or v_i = 1/K, A_n = 1/M, lr2 unused, output noise σ, weight decay wd — with one
difference in the published Euler loop: the weight-decay line of Q lacks its factor dt
(``Q[i, k] -= 2 * wd * Q[i, k]``), so the loop integrates dQ/dα ∋ −(2 wd / dt) Q, a decay 1/dt
(= 100 at dt = 0.01) times faster than its own simulator and its R equation (−wd R).  Its noise
and decay terms also read Q entries already updated earlier in the same step (an O(dt) change of
the scheme, not of the ODE).  :func:`rhs` gives the ODE the simulator implies (decay 2 wd Q).

>>> import numpy as np
>>> round(eps_g(np.eye(1), np.eye(1), np.eye(1), "relu", "relu"), 15)   # student = teacher
0.0
"""
from __future__ import annotations

import math

import numpy as np

from . import nn2pp_equations as nn2pp
from .nn2pp_equations import FLOAT64, MPMATH  # noqa: F401  (re-exported for callers)

ACTIVATIONS = ("erf", "relu", "linear")


def _atan(lib):
    if lib.name == "mpmath":
        import mpmath
        return mpmath.atan
    return math.atan


def relu_relu(c11, c12, c22, lib=FLOAT64):
    """<relu(a) relu(b)> in pyscm's closed form (twice its ``integral``).

    At c12² = c11 c22 the atan argument is infinite: the limit c12/2 is taken for c12 ≥ 0 and
    0 for c12 < 0 (pyscm returns c12/2 in both cases, see the module docstring).
    """
    det = c11 * c22 - c12 ** 2
    if det <= 0:
        return c12 / 2 if c12 >= 0 else lib.convert(0)
    r = lib.sqrt(det)
    return (2 * r + lib.pi * c12 + 2 * c12 * _atan(lib)(c12 / r)) / (4 * lib.pi)


def relu_relu_as_published(c11, c12, c22, lib=FLOAT64):
    """<relu(a) relu(b)> with pyscm's shortcut: c12/2 whenever c12² and c11 c22 agree to
    numpy's ``allclose`` defaults (|difference| ≤ 1e-8 + 1e-5 |c11 c22|), whatever the sign of
    c12; the closed form otherwise."""
    if abs(c12 ** 2 - c11 * c22) <= 1e-8 + 1e-5 * abs(c11 * c22):
        return c12 / 2
    return relu_relu(c11, c12, c22, lib)


def relu_erf(c_relu, c12, c_erf, lib=FLOAT64):
    """<relu(a) erf(b/√2)> with Var a = c_relu, Cov = c12, Var b = c_erf."""
    return c12 / lib.sqrt(2 * lib.pi * (1 + c_erf))


def erf_erf(c11, c12, c22, lib=FLOAT64):
    """<erf(a/√2) erf(b/√2)>."""
    return 2 / lib.pi * lib.asin(c12 / (lib.sqrt(1 + c11) * lib.sqrt(1 + c22)))


def pair(g1, g2, c11, c12, c22, lib=FLOAT64):
    """<g1(a) g2(b)> for the activations pyscm's ε_g knows."""
    if g1 not in ACTIVATIONS or g2 not in ACTIVATIONS:
        raise ValueError(f"pyscm's eps_g knows {ACTIVATIONS}, got {g1!r}, {g2!r}")
    if (g1, g2) == ("relu", "relu"):
        return relu_relu(c11, c12, c22, lib)
    if (g1, g2) == ("relu", "erf"):
        return relu_erf(c11, c12, c22, lib)
    if (g1, g2) == ("erf", "relu"):
        return relu_erf(c22, c12, c11, lib)
    if (g1, g2) == ("erf", "erf"):
        return erf_erf(c11, c12, c22, lib)
    if (g1, g2) == ("linear", "linear"):
        return c12
    raise ValueError(f"pyscm's eps_g pairs linear only with linear, got {g1!r}, {g2!r}")


def readouts(K, M, normalise, lib=FLOAT64):
    """(v, u) of pyscm's networks: 1/K, 1/M with ``normalise``, else ones (``lib`` numbers)."""
    one = lib.convert(1)
    return ([one / K] * K, [one / M] * M) if normalise else ([one] * K, [one] * M)


def eps_g(Q, R, T, teacher, student, normalise=False, lib=FLOAT64, v=None, u=None,
          absolute=False):
    """pyscm's ``eg_white_inputs_orderparameters(Q, R, T, g1=teacher, g2=student, normalise)``.

    ``v``, ``u`` override the readouts (pyscm itself has only ``normalise``); numbers are
    converted with ``lib`` (mpmath precision is the caller's scope).  ``absolute`` returns the
    sum of the absolute values of the terms instead (the scale of ε_g's rounding error).
    """
    Q, R, T = (np.asarray(x, dtype=object) for x in (Q, R, T))
    K, M = R.shape
    dv, du = readouts(K, M, normalise, lib)
    v = [lib.convert(x) for x in (dv if v is None else v)]
    u = [lib.convert(x) for x in (du if u is None else u)]
    c = lib.convert
    mag = abs if absolute else (lambda x: x)
    ss = sum(mag(v[i] * v[j] * pair(student, student, c(Q[i, i]), c(Q[i, j]), c(Q[j, j]), lib))
             for i in range(K) for j in range(K))
    tt = sum(mag(u[n] * u[m] * pair(teacher, teacher, c(T[n, n]), c(T[n, m]), c(T[m, m]), lib))
             for n in range(M) for m in range(M))
    st = sum(mag(v[i] * u[n] * pair(student, teacher, c(Q[i, i]), c(R[i, n]), c(T[n, n]), lib))
             for i in range(K) for n in range(M))
    return (ss + tt + 2 * st) / 2 if absolute else (ss + tt - 2 * st) / 2


def rhs(Q, R, T, *, lr, wd=0, sigma=0, normalise=False, lib=FLOAT64):
    """(dQ/dα, dR/dα) of pyscm's erf ODE as its simulator implies it (decay −2 wd Q)."""
    K, M = np.asarray(R, dtype=object).shape
    v, A = readouts(K, M, normalise, lib)
    dQ, dR, _ = nn2pp.rhs(Q, R, T, v, A, lr=lr, wd=wd, sigma=sigma, activation="erf", lib=lib)
    return dQ, dR

