"""The generated systems at L = 1 against the peers' published equations.

At L = 1 (isotropic inputs, Σ = I, ν_1 = 1) the level system is the classical soft-committee
ODE that the peer codes integrate.  tests/peers/ re-implements, from their equations and with no
import from derive/ or solvers/, nn2pp's right-hand side (``scmpp_ode.cpp``) and pyscm's
closed-form ε_g (``scm/scm.py``); the conventions' map (learning rates, weight decay, noise,
readouts) is in the docstrings there.

Today's model (erf, paper normalisation v = √M/K, u = 1/√M, fixed readout, no noise or decay)
is nn2pp's ODE with those readouts: dR/dα, dQ/dα and ε_g of the generated module must equal the
reference at random admissible points (overlaps of random weight vectors) to rounding.

* 40 digits: the generated module through ``MpmathContext(40)`` against the reference in
  mpmath at 40 digits.  Both evaluate the same closed forms in different orders; each entry is
  a sum of at most (K+M)² + 2(K+M) terms of size ≲ 1 whose own rounding is ~1e-40, and the
  points keep every covariance well away from singular (smallest eigenvalue of the joint
  covariance ≥ 0.05, so no Λ of the erf forms loses more than ~2 digits): 1e-34 of the largest
  entry leaves a factor 1e4 over that.
* float64: the numpy-target module (``Float64Context``) against the 40-digit reference: 1e-13
  of the largest entry is ~450 ulp — the same term count and the ≤ 2 digits the Λ's may lose.
"""
from __future__ import annotations

import mpmath
import numpy as np
import pytest

from derive.keys import SystemKey
from peers import nn2pp_equations as nn2pp
from peers import pyscm_equations as pyscm
from solvers.core import registry
from solvers.core.numbers import MpmathContext

pytestmark = [pytest.mark.closed_form]   # oracle: the peers' published equations (tests/peers)

DPS = 40
TOL_MP = mpmath.mpf(10) ** -34
TOL_F64 = 1e-13
SIZES = [(1, 1), (2, 2), (3, 2)]


# -- admissible points -------------------------------------------------------------------------

def random_point(K, M, seed, N=24):
    """(Q, R, T) of random weights (a joint Gram matrix: admissible by construction), with
    student norms between 0.1 and 2 and, for half the seeds, students partly aligned with the
    teacher (R of order 1, as late in learning)."""
    rng = np.random.default_rng(seed)
    while True:
        B = rng.standard_normal((M, N))
        J = rng.standard_normal((K, N)) * rng.uniform(0.3, 1.4, size=(K, 1))
        if seed % 2:
            J += rng.uniform(0.5, 1.0) * B[rng.integers(0, M, size=K)]
        W = np.vstack([J, B])
        C = W @ W.T / N
        if np.linalg.eigvalsh(C).min() >= 0.05:   # far from singular (see the docstring)
            return C[:K, :K], C[:K, K:], C[K:, K:]


# -- the generated level system at L = 1 -------------------------------------------------------

def _state_values(system, Q, R):
    """The level-0 state in the module's STATE order (names R_in, Q_ij, 1-based)."""
    out = []
    for name in system.STATE:
        kind, idx = name.split("_")
        a, b = int(idx[0]) - 1, int(idx[1]) - 1
        out.append({"R": R, "Q": Q}[kind][a][b])
    return out


def _teacher_values(system, T):
    return [T[int(n[2]) - 1][int(n[3]) - 1] for n in system.TEACHER]


def generated_rhs(key, Q, R, T, eta, ctx, target):
    """dQ/dα, dR/dα (dicts by state name) and ε_g of the generated module at L = 1, order 2:
    Σ = I has characteristic polynomial λ − 1 (c_0 = −1, so X^(1) = X^(0)) and ν_1 = 1."""
    system = registry.load(key, target)
    conv = ctx.convert
    y = np.array([[conv(x) for x in _state_values(system, Q, R)]], dtype=object)
    t = np.array([[conv(x) for x in _teacher_values(system, T)]], dtype=object)
    if target == "numpy":
        y, t = y.astype(float), t.astype(float)
    eta = conv(eta)
    out = system.rhs_levels(y, t, np.array([conv(-1)], dtype=object),
                            np.array([conv(1)], dtype=object), eta, eta ** 2, ctx)
    return dict(zip(system.STATE, out[0])), system.eps_g(list(y[0]), list(t[0]), ctx)


def reference(Q, R, T, K, M, eta, lib, **params):
    """nn2pp's dQ, dR (dicts by state name) and ε_g with the paper's readouts."""
    v = [lib.sqrt(lib.convert(M)) / K] * K
    A = [1 / lib.sqrt(lib.convert(M))] * M
    dQ, dR, dv = nn2pp.rhs(Q, R, T, v, A, lr=eta, lib=lib, **params)
    named = {f"R_{i + 1}{n + 1}": dR[i, n] for i in range(K) for n in range(M)}
    named |= {f"Q_{i + 1}{j + 1}": dQ[i, j] for i in range(K) for j in range(i, K)}
    return named, nn2pp.eps_g(Q, R, T, v, A, lib=lib)


def _worst(got: dict, ref: dict):
    """max |got − ref| and max |ref| over the state entries."""
    assert set(got) == set(ref)
    return (max(abs(mpmath.mpf(got[k]) - ref[k]) for k in ref), max(abs(x) for x in ref.values()))


@pytest.mark.parametrize("K, M", SIZES, ids=[f"K{k}M{m}" for k, m in SIZES])
@pytest.mark.parametrize("eta", ["0.1", "0.5", "2"])
def test_todays_model_matches_nn2pp(K, M, eta):
    """erf, paper readouts, order 2: the generated right-hand side and ε_g are nn2pp's."""
    key = SystemKey("erf", K, M)
    for seed in range(4):
        Q, R, T = random_point(K, M, seed)
        with mpmath.workdps(DPS):
            ref, ref_eps = reference(Q, R, T, K, M, mpmath.mpf(eta), nn2pp.MPMATH)
        with MpmathContext(DPS) as ctx:
            got, got_eps = generated_rhs(key, Q, R, T, mpmath.mpf(eta), ctx, "mpmath")
            err, scale = _worst(got, ref)
            assert err <= TOL_MP * scale, (seed, err, scale)
            assert abs(got_eps - ref_eps) <= TOL_MP * abs(ref_eps), seed
        system = registry.load(key, "numpy")
        got, got_eps = generated_rhs(key, Q, R, T, float(eta), system.ctx, "numpy")
        err, scale = _worst(got, ref)
        assert err <= TOL_F64 * scale, (seed, float(err), float(scale))
        assert abs(got_eps - ref_eps) <= TOL_F64 * abs(ref_eps), seed


def test_reference_float64_agrees_with_its_mpmath_evaluation():
    """The reference itself in float64 vs 40 digits (the same bound as the generated module):
    the float64 comparisons above measure the module, not the reference's own rounding."""
    for seed in range(4):
        Q, R, T = random_point(3, 2, seed)
        with mpmath.workdps(DPS):
            ref, ref_eps = reference(Q, R, T, 3, 2, mpmath.mpf("0.5"), nn2pp.MPMATH)
        f64, f64_eps = reference(Q, R, T, 3, 2, 0.5, nn2pp.FLOAT64)
        err, scale = _worst(f64, ref)
        assert err <= TOL_F64 * scale
        assert abs(f64_eps - ref_eps) <= TOL_F64 * abs(ref_eps)
