"""Perfect-learning linearisation: the group constants and their presence in the spectrum."""
from fractions import Fraction

import mpmath
import pytest
import sympy as sp

from derive import asymptotic as da
from derive import spectra
from solvers.theory.asymptotic import Linearisation

pytestmark = [pytest.mark.closed_form]  # oracle (tests/conftest.py)


def test_G_matches_paper_at_M2():
    G = da.G_paper(2)
    s3 = sp.sqrt(3)
    expected = sp.Matrix([[1, s3 / 2, 0, 0], [s3 / 2, 1, 0, 0],
                          [-2, -s3, 2, s3], [-s3, -2, s3, 2]])          # Eq. (119)
    assert sp.simplify(G - expected) == sp.zeros(4, 4)


@pytest.mark.parametrize("M", [2, 3])
def test_eps_gradient_eq121(M):
    g = da.eps_gradient(M)
    s3 = sp.sqrt(3)
    expected = [-4 * s3, -6 * (M - 1), 2 * s3, 3 * (M - 1)]
    assert all(sp.simplify(a - b / (6 * sp.pi)) == 0 for a, b in zip(g, expected, strict=True))


@pytest.mark.parametrize("L", [2, 5])
def test_2pm_sqrt3_groups_are_jacobian_eigenvalues_M2(L):
    eta = Fraction(1, 4)
    lin = Linearisation(2, spectra.power_law(L, 1), eta, dps=30)
    assert lin.residual < 1e-28 and lin.defect < 1e-25
    with mpmath.workdps(30):
        _check_groups(lin)


def _check_groups(lin):
    a = 2 * mpmath.mpf(1) / 4 / (mpmath.sqrt(3) * mpmath.pi * 2)
    for lam in lin.lam:
        for gconst in (2 - mpmath.sqrt(3), 2 + mpmath.sqrt(3)):
            target = -a * gconst * lam
            # 30-digit eigenvalues of a 4L matrix of O(1) entries
            assert min(abs(m - target) for m in lin.mu) < 1e-25
