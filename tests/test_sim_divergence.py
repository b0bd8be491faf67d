"""A diverging SGD run is refused in one line naming the knob (solvers/sim/divergence.py),
never returned as a saturated, sane-looking eps_g; a run that learns is not flagged.

The reference for where SGD diverges is the exact linear theory: for g(x) = x, K = M = 1 and
one eigenvalue (L = 1, lambda = 1) the averaged order parameters obey a linear system whose
matrix A4 = 2 A1 + eta U is the number -2 + eta, so eps_g decays for eta < 2 and grows like
exp((eta - 2) eta alpha) for eta > 2 (docs/theory/conventions.md).  eta = 1.5 and 3 sit far on
either side (finite-N corrections move the bound by O(1/N)).
"""
import pytest

from solvers.sim.divergence import GROWTH, SimulationDiverged
from solvers.sim.simulate import simulate

pytestmark = [pytest.mark.closed_form]  # oracle (tests/conftest.py)

BASE = dict(activation="erf", K=2, M=2, N=64, L=2, beta=1, sigma_J=0.1, seed=0,
            alphas=[0, 2, 5])


def test_linear_above_the_exact_bound_diverges_and_below_learns():
    lin = dict(BASE, activation="linear", K=1, M=1, L=1, beta=0, alphas=[0, 10, 30])
    res = simulate(eta=1.5, **lin)
    assert res.eps_g[-1] < res.eps_g[0] / 10           # learns: e^(-0.5*1.5*30) ~ 1e-10
    with pytest.raises(SimulationDiverged) as err:     # e^((3-2)*3*30) ~ 1e39 >> GROWTH
        simulate(eta=3, **lin)
    msg = str(err.value)
    assert "[training] eta = 3" in msg and "alpha = " in msg and "\n" not in msg
    assert "noise" not in msg and "sigma_J" not in msg


@pytest.mark.parametrize("extra,named,not_named", [
    (dict(eta=1e100), ["eta = 1e+100"], ["noise", "sigma_J"]),
    (dict(eta=0.5, noise=1e100), ["eta = 0.5", "noise = 1e+100"], ["sigma_J"]),
    (dict(eta=0.5, sigma_J=1e100), ["sigma_J = 1e+100"], ["noise"]),
    # a student readout of 1e3 makes the effective step eta v^2 = 5e5: the weights blow up
    (dict(eta=0.5, student_readout=[1e3, 1e3]), ["eta = 0.5"], ["noise", "sigma_J"]),
])
def test_blown_up_runs_name_the_knob(extra, named, not_named):
    kw = dict(BASE, **extra)
    with pytest.raises(SimulationDiverged) as err:
        simulate(**kw)
    msg = str(err.value)
    assert all(n in msg for n in named) and not any(n in msg for n in not_named), msg
    assert "\n" not in msg


def test_learning_runs_are_not_flagged():
    # small readouts with a ReLU student: its fields must grow by (u/v)^2 to match the
    # teacher, which the bound's readout ratio allows
    simulate(eta=0.5, **dict(BASE, activation="relu", student_readout=[1e-2, 1e-2]))
    # erf above its stability bound (eta_c ~ 4.3): Q grows slowly, as the ODEs say, far below
    # the bound over this run
    res = simulate(eta=50, **BASE)
    assert res.Q1[-1].max() < GROWTH
