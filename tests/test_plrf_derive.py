"""The exact layer of the PLRF room (derive/plrf.py) against hand derivations.

- the Gaussian fourth moment E[x xᵀ A x xᵀ] = 2DAD + tr(AD)D, expanded monomial by monomial;
- the batch factor against a one-dimensional closed form: with v = d = 1 and a reachable target
  (P* = 0), δ' = δ(1 − γΣφᵢ²), φᵢ ~ N(0, λ), so E δ'² = δ²(1 − 2γBλ + γ²(B² + 2B)λ²) (χ²
  moments); the recursion gives S' = a S + 2γ²Bλ² (S/2), which must be the same factor;
- the compute-optimal exponents against the table derived by hand (every phase), and the
  continuity of η across the phase boundaries.
"""
from __future__ import annotations

import pytest
import sympy as sp

from derive import plrf as D

pytestmark = [pytest.mark.closed_form, pytest.mark.higher_precision]

a, b = D.alpha, D.beta


def test_fourth_moment_identity():
    assert D.fourth_moment_check(2)


def test_batch_factor_one_dimensional():
    g, lam, B = D.gam, D.lam, D.B
    closed = 1 - 2 * g * B * lam + g ** 2 * (B ** 2 + 2 * B) * lam ** 2
    recursion = D.batch_factor() + g ** 2 * B * lam ** 2      # + the p-coupling with p = S/2
    assert sp.expand(recursion - closed) == 0
    assert sp.expand(D.batch_factor() - (1 - 2 * g * B * lam + g ** 2 * B * (B + 1) * lam ** 2)) == 0


HAND = {
    "Ia": (1 / (2 * a + 1), (2 * a + 2 * b - 1) / (2 * a + 1)),
    "II": (b / (a + b), 1 - 1 / (2 * (a + b))),
    "III": (sp.Rational(1, 2), 1 - 1 / (4 * a)),
    "Ib": (sp.Rational(1, 2), (2 * a + 2 * b - 1) / 2),
    "Ic": ((2 * a + 2 * b - 1) / (4 * a ** 2 + 2 * (1 - a) * (2 * a + 2 * b - 1)),
           2 * a * (2 * a + 2 * b - 1) / (4 * a ** 2 + 2 * (1 - a) * (2 * a + 2 * b - 1))),
    "IVa": ((b - a) / ((2 - 2 * a) * (b - a) + a * (1 - 2 * a)),
            (1 - 2 * a) * (2 * a + 2 * b - 1) / (2 * ((2 - 2 * a) * (b - a) + a * (1 - 2 * a)))),
    "IVb": (sp.Rational(1, 2), a),
}


@pytest.mark.parametrize("phase", D.PHASES)
def test_exponents_match_hand_table(phase):
    xi, eta = D.exponents(phase)
    assert sp.simplify(xi - HAND[phase][0]) == 0
    assert sp.simplify(eta - HAND[phase][1]) == 0


@pytest.mark.parametrize("left, right, boundary", [
    ("Ia", "II", {b: sp.Rational(1, 2)}), ("II", "III", {b: a}),
    ("III", "IVb", {a: sp.Rational(1, 2)}), ("Ib", "IVb", {b: sp.Rational(1, 2)}),
    ("IVa", "Ic", {a: sp.Rational(1, 4)}), ("Ia", "Ib", {a: sp.Rational(1, 2)}),
])
def test_eta_continuous_across_boundaries(left, right, boundary):
    e1 = D.exponents(left)[1].subs(boundary)
    e2 = D.exponents(right)[1].subs(boundary)
    assert sp.simplify(e1 - e2) == 0


@pytest.mark.parametrize("alpha, beta, phase", [
    (1, 0.3, "Ia"), (1, 0.7, "II"), (1, 1.5, "III"), (0.4, 0.3, "Ib"), (0.2, 0.7, "Ic"),
    (0.27, 0.8, "IVa"), (0.4, 0.7, "IVb"), (0.3, 0.1, None), (0.5, 0.7, None)])
def test_phase_of(alpha, beta, phase):
    assert D.phase_of(alpha, beta) == phase
    assert D.phase_of(sp.nsimplify(alpha), sp.nsimplify(beta)) == phase     # exact route
