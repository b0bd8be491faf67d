"""derive/kernel.py: the exact statements behind the kernel numerics."""
import ast
import math
from pathlib import Path

import pytest
import sympy as sp

from derive import kernel as K

pytestmark = [pytest.mark.closed_form]  # oracle (tests/conftest.py)


def test_no_float_literals_in_the_symbolic_layer():
    tree = ast.parse(Path(K.__file__).read_text())
    floats = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
              and isinstance(n.value, float)]
    assert floats == []


def test_two_forms_of_the_kappa_equation_are_equivalent():
    assert K.summand_identity() == 0
    assert K.forms_relation(3) == 0
    assert K.one_minus_gamma_identity(3) == 0


def test_rank_d_root_solves_the_kappa_equation():
    kap = K.rank_d_kappa()
    eq = kap - K.T - kap * K.d * K.lam0 / (K.lam0 * K.P + kap)
    vals = {K.P: sp.Rational(37, 3), K.T: sp.Rational(1, 20), K.d: 64, K.lam0: sp.Rational(1, 64)}
    assert abs(sp.N(eq.subs(vals), 50)) < 1e-45
    # ridgeless: κ = λ_0 (d − P) below the threshold, 0 above
    assert sp.simplify(kap.subs(K.T, 0).subs({K.P: 10, K.d: 64}) - K.lam0 * 54) == 0
    assert sp.simplify(kap.subs(K.T, 0).subs({K.P: 100, K.d: 64})) == 0


def test_rank_d_ridgeless_laws_follow_from_eigenlearning():
    laws = K.rank_d_ridgeless()
    for Pv, key in ((10, "below"), (100, "above")):
        kap = K.rank_d_kappa().subs({K.T: 0, K.P: Pv, K.d: 64})
        _, _, E = K.rank_d_quantities(kap)
        E = E.subs({K.P: Pv, K.d: 64})
        assert sp.simplify(E - laws[key].subs({K.P: Pv, K.d: 64})) == 0
    # the exact Gaussian-design laws are the d → ∞ forms' finite-d versions
    ratio = (laws["exact_below"] - laws["below"]).subs({K.P: K.d / 2})
    assert sp.limit(ratio, K.d, sp.oo) == 0


def test_ridge_removes_the_double_descent():
    """At P = d the ridgeless noise term diverges; with T > 0 E_g is finite there."""
    laws = K.rank_d_ridgeless()
    assert sp.limit(laws["below"].subs(K.sigma2, sp.Rational(1, 10)), K.P, K.d, "-") == sp.oo
    _, _, E = K.rank_d_quantities()
    at = E.subs({K.P: 64, K.d: 64, K.lam0: sp.Rational(1, 64), K.T: sp.Rational(1, 20),
                 K.sigma2: sp.Rational(1, 10), K.csq: 1})
    assert sp.N(at).is_finite and 0 < sp.N(at) < 1


def test_equivalent_kernel_is_a_limit():
    """Rank-d: κ/T → 1 as P → ∞ (finite rank) and as T → ∞; γ → 0 in both."""
    kap = K.rank_d_kappa()
    vals = {K.d: 64, K.lam0: sp.Rational(1, 64)}
    k1 = kap.subs(vals).subs(K.T, sp.Rational(1, 20))
    assert sp.limit(k1 / sp.Rational(1, 20), K.P, sp.oo) == 1
    k2 = kap.subs(vals).subs(K.P, 100)
    assert sp.limit(k2 / K.T, K.T, sp.oo) == 1
    _, g, _ = K.rank_d_quantities()
    assert sp.limit(g.subs(vals).subs(K.T, sp.Rational(1, 20)), K.P, sp.oo) == 0
    # and then the EK learnability is eigenlearning's with κ_S = T/P
    assert sp.simplify(K.ek_learnability(K.lam0) - K.learnability(K.lam0, K.T / K.P)) == 0


@pytest.mark.parametrize("av", [2, sp.Rational(3, 2)])
def test_C_of_a_and_gamma_limit(av):
    assert sp.simplify(K.C_of_a_integral(av) - K.C_of_a(av)) == 0
    assert sp.simplify(K.gamma_limit(av) - (1 - 1 / sp.S(av))) == 0
    assert float(K.C_of_a(av)) == pytest.approx((math.pi / float(av)) / math.sin(math.pi / float(av)))


def test_exponent_map():
    ex = K.exponents
    assert ex(2, 2)["ridgeless"] == -1 and ex(2, 6)["ridgeless"] == -4
    assert ex(sp.Rational(3, 2), sp.Rational(5, 2))["ridgeless"] == sp.Rational(-3, 2)
    assert ex(2, 2)["fixed_ridge"] == sp.Rational(-1, 2) and ex(2, 6)["fixed_ridge"] == -2
    assert ex(2, 2)["noise"] == sp.Rational(-1, 2)
    assert K.kappa_S_asymptotic(2) == (sp.pi / 2 / K.P) ** 2
