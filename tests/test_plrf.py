"""The PLRF expected-loss recursion for one draw of W: three forms of the same dynamics and the
stability refusal.

References: the per-mode recursion stepped one r at a time (plain float64 loop), the renewal
(Volterra) sum computed independently from F and K, and the closed form (secular roots).  All
three are float64 evaluations of the same exact dynamics; the loss is O(1e-3..1) here and each
route accumulates at most a few hundred roundings per value, so 1e-12 relative leaves three
orders of margin and still catches any mis-weighted term (those are O(γ²) ~ 1e-2 effects).
"""
from __future__ import annotations

import numpy as np
import pytest

from solvers.theory.plrf.model import Problem, draw
from solvers.theory.plrf import recursion as R

pytestmark = [pytest.mark.second_basis]


def _spectrum(alpha, beta, v, d, seed=0):
    m = draw(Problem(alpha, beta, v, d), seed)
    return R.Spectrum(m.lam, np.ones_like(m.lam), m.w, m.p_star)


def test_volterra_equals_recursion():
    sp = _spectrum(1.0, 0.7, 200, 50)
    B = 2
    gamma = 0.6 / sp.lam.sum()
    stepped = R.steps(sp, gamma, B, 1500)
    renewal = R.volterra(sp, gamma, B, 1500)
    closed = R.loss_curve(sp, gamma, B, np.arange(1501))["loss"]
    assert np.max(np.abs(renewal - stepped) / stepped) < 1e-12
    assert np.max(np.abs(closed - stepped) / stepped) < 1e-12


def test_closed_form_reaches_the_plateau():
    """p(∞) = P*/(1 − ‖K‖): the fixed point of the recursion, derived by hand (S∞ = c p∞/e
    summed); the closed form at r = 10⁹ must land on it (every rate 1 − μ is ≥ 1e-5 here)."""
    sp = _spectrum(1.0, 0.7, 200, 50, seed=3)
    gamma = 0.5 / sp.lam.sum()
    out = R.loss_curve(sp, gamma, 1, [10 ** 9])
    norm = float(np.sum(gamma * sp.lam / (2 - 2 * gamma * sp.lam)))
    assert out["loss"][0] == pytest.approx(sp.p_star / (1 - norm), rel=1e-12)


def test_closed_form_matches_stepping_at_long_r():
    """10⁵ plain steps against the closed form (B = 3): drift in the roots would show as an
    error growing like r·δν."""
    sp = _spectrum(0.8, 0.5, 300, 100, seed=1)
    gamma = 0.3 / sp.lam.sum()
    stepped = R.steps(sp, gamma, 3, 100_000)
    rs = np.array([0, 1, 7, 100, 3_000, 40_000, 100_000])
    closed = R.loss_curve(sp, gamma, 3, rs)["loss"]
    assert np.max(np.abs(closed - stepped[rs]) / stepped[rs]) < 1e-11


@pytest.mark.parametrize("alpha, gamma_factor, what", [
    (0.4, 2.5, "||K||"),          # flat spectrum: the trace binds (gamma*2*lambda_max = 0.52)
    (1.0, 2.5, "lambda_max"),     # steep spectrum: the top mode binds first
])
def test_unstable_step_is_refused(alpha, gamma_factor, what):
    sp = _spectrum(alpha, 0.7, 200, 50)
    gamma = gamma_factor / sp.lam.sum()
    with pytest.raises(R.Unstable, match=what.replace("|", r"\|")) as exc:
        R.loss_curve(sp, gamma, 1, [10, 100])
    assert "\n" not in str(exc.value)
