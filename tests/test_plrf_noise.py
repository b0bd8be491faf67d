"""The SGD-noise part of the deterministic route at large d: the cells' eigenvalue counts.

The noise kernel's norm ‖K‖ = Σ n γλ/(2 − γ(B+1)λ) is set mostly by the top eigenvalues of K̂.
At large d they are isolated bumps of relative width ~ d^(−1/2); once that is below a cell of
the log grid, a midpoint rule gave a bump anything between 0.9 and 1.1 eigenvalues (worse
beyond), and P(noise)/P(no noise) jumped from one d to the next (seen at d ≥ 10⁵ on the
default grid).  A coarse grid at small d shows the same thing cheaply.

References, independent of the cells:
- exact separation: between two isolated bumps the deterministic spectrum has a gap, and the
  number of eigenvalues above a gap is an integer — one per input direction j above it (the
  counting function there is d − #{j: σ_j|s| > 1}, s real);
- the same equivalent on a grid four times finer: what the noise sees must not depend on it;
- the same quantity on a fine ladder of d: it must be a smooth function of d.
"""
from __future__ import annotations

import numpy as np
import pytest

from solvers.theory.plrf.deterministic import equivalent
from solvers.theory.plrf.frontier import gamma_auto, noiseless
from solvers.theory.plrf.model import Problem
from solvers.theory.plrf.recursion import kernel_norm, loss_curve

pytestmark = [pytest.mark.closed_form]

RS = np.array([10 ** 4, 10 ** 6, 10 ** 8, 10 ** 10], dtype=np.int64)


def _case(d, cells, alpha=1.0, beta=0.7):
    gamma = gamma_auto(alpha, 4 * d)
    sp = equivalent(Problem(alpha, beta, 4 * d, d, 1, gamma), *cells).spectrum
    ratio = loss_curve(sp, gamma, 1, RS, rtol=1e-9)["loss"] / noiseless(sp, gamma, 1, RS)
    return sp, kernel_norm(sp, gamma, 1), ratio


@pytest.mark.parametrize("cells", [(80, 250), (80, 1000)])
def test_isolated_eigenvalues_count_one_each(cells):
    """d = 2000, α = 1: the four top bumps (σ_j = 1, ¼, ⅑, 1/16) each hold one eigenvalue.  At
    250 cells per decade (relative width 0.009) the top bump is a few cells wide; the old
    midpoint counts were 0.981, 1.015, 1.015, 0.983.  Tolerance: the counts come from the
    antiderivative of s, exact up to rounding (~1e-10 here) and the bisection's 1e-6 per leaf."""
    sp, _, _ = _case(2000, cells)
    sig = np.arange(1, 6, dtype=float) ** -2.0
    gaps = np.sqrt(sig[1:] * sig[:-1])          # between neighbouring bumps (σ_j ± 1 %)
    above = np.array([sp.mult[sp.lam > g].sum() for g in gaps])
    assert np.max(np.abs(above - np.arange(1, 5))) < 1e-6, above


def test_noise_does_not_depend_on_the_grid():
    """‖K‖ and P(noise)/P(no noise) at r = 10⁴…10¹⁰ on 250 and 1000 cells per decade above
    d^(−α) (d = 2000): the old midpoint counts gave ‖K‖ = 0.31694 against 0.32103.  With exact
    counts only the place of a cell's mass inside it moves (second order in the cell's relative
    width, 0.009: measured 1.3e-6); 1e-5."""
    _, k_coarse, r_coarse = _case(2000, (80, 250))
    _, k_fine, r_fine = _case(2000, (80, 1000))
    assert abs(k_coarse / k_fine - 1) < 1e-5, (k_coarse, k_fine)
    assert np.max(np.abs(r_coarse / r_fine - 1)) < 1e-5, r_coarse / r_fine


@pytest.mark.full
def test_noise_share_is_smooth_in_d():
    """Phase II (1, 0.7), v = 4d, γ = "auto", d = 6·10⁴ … 4·10⁵ in nine steps, the default grid:
    P(noise)/P(no noise) at r = 10⁴…10¹⁰ against a quadratic in log d.  The old cells jumped
    by 1-3 % between neighbouring d (1.4670, 1.4661, 1.4784, 1.4870 … at r = 10¹⁰); the ratio's
    real change over the range is ~1e-3 and the grid's part 1e-6 (test above): residuals
    < 1e-4.  At d = 4·10⁵ the default grid and one four times finer agree to 1e-5."""
    ds = np.unique(np.round(6e4 * (4e5 / 6e4) ** (np.arange(9) / 8)).astype(int))
    ratios = np.array([_case(int(d), (250, 1000))[2] for d in ds])
    x = np.log(ds)
    for col in ratios.T:
        fit = np.polyval(np.polyfit(x, col, 2), x)
        assert np.max(np.abs(col / fit - 1)) < 1e-4, col
    _, k_fine, r_fine = _case(int(ds[-1]), (250, 4000))
    assert np.max(np.abs(ratios[-1] / r_fine - 1)) < 1e-5, ratios[-1] / r_fine
