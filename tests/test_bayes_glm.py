"""The one-unit GLM replica formula (solvers/theory/bayes/glm.py), the reference the sampler meets.

Oracles: the linear channel, where Ψ_out is Gaussian in closed form; the q → 1 limit (the noise
entropy alone); Monte Carlo over (ξ, z, noise) for the cubic channel.  And the structural facts
that separate it from the extensive-width fixed-point system: for σ = He₃/√6 the output is not
Gaussian, so Ψ_out(0) lies above the Gaussian replacement and Ψ_out′(0) > 0 (q = 0 is never a
fixed point), while for a small readout the two agree.
"""
import math

import numpy as np
import pytest

from solvers.theory.bayes import glm

pytestmark = [pytest.mark.quadrature]  # oracle (tests/conftest.py)

# the default rule (same values as a finer one to ~2e−5 here)
KW = dict(nxi=16, nz0=60, neta=12, nz=1000)


def test_linear_channel_is_gaussian_in_closed_form():
    lin = lambda u: u  # noqa: E731
    for q in (0.0, 0.3, 0.7):
        got = glm.psi_out(q, 1.0, 0.1, act=lin, **KW)
        want = float(glm.psi_out_gaussian(q, 1.0, 0.1, g=lambda x: x))
        assert abs(got - want) < 1e-10


def test_cubic_channel_against_monte_carlo():
    rng = np.random.default_rng(0)
    q, s, M = 0.3, 0.1, 10000
    om = math.sqrt(q) * rng.standard_normal(M)
    y = glm.cubic(om + math.sqrt(1 - q) * rng.standard_normal(M)) + math.sqrt(s) * rng.standard_normal(M)
    z = np.linspace(-9, 9, 2000)
    logw = -0.5 * z * z + math.log(z[1] - z[0]) - 0.5 * math.log(2 * math.pi)
    vals = []
    for a in range(0, M, 2000):
        L = logw - (y[a:a + 2000, None] - glm.cubic(om[a:a + 2000, None] + math.sqrt(1 - q) * z)) ** 2 / (2 * s)
        top = L.max(axis=1)
        vals.append(top + np.log(np.exp(L - top[:, None]).sum(axis=1)) - 0.5 * math.log(2 * math.pi * s))
    vals = np.concatenate(vals)
    got = glm.psi_out(q, 1.0, s, **KW)
    assert abs(got - vals.mean()) < 4 * vals.std() / math.sqrt(M)


def test_cubic_output_is_not_gaussian_but_small_readouts_are():
    s = 0.1
    p0, p1 = glm.psi_out(0.0, 1.0, s, **KW), glm.psi_out(0.999, 1.0, s, **KW)
    g0, g1 = float(glm.psi_out_gaussian(0.0, 1.0, s)), float(glm.psi_out_gaussian(0.999, 1.0, s))
    assert p0 - g0 > 0.3                 # lower output entropy than the Gaussian of equal power
    assert abs(p1 - g1) < 3e-3           # at q → 1 only the noise is left
    assert glm.psi_out(0.05, 1.0, s, **KW) - p0 > 0.005   # Ψ_out′(0) > 0: q = 0 is no fixed point
    # a small readout against the power of the other units (v = 0.1, s = 1: the extensive regime,
    # non-Gaussianity κ₄v⁴/(s+v²)² ≈ 0.009 with κ₄ = 90 for He₃/√6): the information gain
    # Ψ(0.9) − Ψ(0) is Gaussian to < 1 % (measured 0.47 %); at s = 0.1 it is off by 7 %
    v, s = 0.1, 1.0
    d_true = glm.psi_out(0.9, v, s, **KW) - glm.psi_out(0.0, v, s, **KW)
    d_gauss = float(glm.psi_out_gaussian(0.9, v, s) - glm.psi_out_gaussian(0.0, v, s))
    assert abs(d_true / d_gauss - 1) < 0.01
