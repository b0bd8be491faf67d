"""Stability: the learning-rate bound of perfect learning, the watch on modes runs, and a
diverging request that ends early with one line."""
import time
from fractions import Fraction

import numpy as np
import pytest

from cli_support import run_cli, write_spec
from specs import erf_K2
from derive import spectra
from derive.keys import SystemKey
from solvers.core.numbers import Float64Context
from solvers.core.problem import Problem, expected_init, random_init
from solvers.core.registry import load
from solvers.hierarchy import stability

pytestmark = [pytest.mark.second_basis, pytest.mark.contract]  # oracle (tests/conftest.py)


def _full_jacobian_bound(problem):
    """η_c from the full L·N_STATE Jacobian of the generated modes system at the problem's own
    perfect-learning point R_k = Q_k = T_k (the reference for the one-mode reduction)."""
    key = problem.key
    ctx = Float64Context()
    num = problem.numeric(ctx)
    K = key.K
    iu = np.triu_indices(K)
    y = []
    for Tk in np.asarray(num.T_modes, dtype=float):
        full = np.zeros((K, K))
        full[iu] = Tk
        full.T[iu] = Tk
        y.append(np.concatenate([full.ravel(), full[iu]]))
    y = np.array(y)
    T, lam, w = (np.asarray(x, dtype=float) for x in (num.T_modes, num.lam, num.w))
    mod = load(key, "numpy")
    A = np.asarray(mod.jac_modes(y, T, lam, w, 1.0, 0.0, ctx), dtype=float)
    B = np.asarray(mod.jac_modes(y, T, lam, w, 0.0, 1.0, ctx), dtype=float)
    return stability.perfect_learning_bound(A, B), A, B


@pytest.mark.parametrize("activation,K,L,init", [("erf", 2, 4, "expected"), ("erf", 2, 4, "random"),
                                                  ("erf", 1, 8, "random"), ("linear", 1, 4, "random")])
def test_the_one_mode_bound_is_the_full_jacobian_bound(activation, K, L, init):
    sp = spectra.power_law(L, Fraction(1, 2))
    ini = (expected_init(sp, K, K, Fraction(1, 100)) if init == "expected"
           else random_init(K, K, 16 * L, sp, Fraction(1, 100), 3))
    prob = Problem(SystemKey(activation, K, K), sp, Fraction(1, 10), 2, ini)
    eta_c, _ = stability.eta_bound(prob)
    full, A, B = _full_jacobian_bound(prob)
    # both are roots of det(A + eta B) found by float64 eigenvalues of well-scaled matrices
    assert eta_c == pytest.approx(full, rel=1e-9)
    # and it is the stability edge of the full linearisation: stable just below, not above
    top = lambda e: np.max(np.linalg.eigvals(A + e * B).real)  # noqa: E731
    assert top(0.99 * eta_c) < 0 < top(1.01 * eta_c)
    if activation == "linear":      # 2K / (M nu_1), nu_1 = 1 on a power law
        assert eta_c == pytest.approx(2.0, rel=1e-12)


def test_no_bound_at_order_one_or_without_perfect_learning():
    sp = spectra.power_law(4, 1)
    ini = expected_init(sp, 2, 2, Fraction(1, 100))
    assert stability.eta_bound(Problem(SystemKey("erf", 2, 2), sp, Fraction(50), 1, ini)) is None
    ini = expected_init(sp, 2, 1, Fraction(1, 100))
    assert stability.eta_bound(Problem(SystemKey("erf", 2, 1), sp, Fraction(50), 2, ini)) is None


def test_the_watch_stops_unrealisable_states():
    sp = spectra.power_law(2, 1)
    prob = Problem(SystemKey("erf", 1, 1), sp, Fraction(1, 10), 2, expected_init(sp, 1, 1, 0))
    watch = stability.Watch(prob, interval=0)
    good = np.array([[0.1, 0.2], [0.05, 0.1]])           # per mode: R, Q with R^2 <= Q T
    watch(0.0, good)
    for bad, needle in ((np.array([[0.5, 0.01], [0.05, 0.1]]), "positive semidefinite"),
                        (np.array([[0.1, -0.2], [0.05, 0.1]]), "positive semidefinite"),
                        (np.array([[0.1, np.nan], [0.05, 0.1]]), "not finite")):
        with pytest.raises(stability.Unstable, match=needle):
            watch(1.0, bad)


def test_a_diverging_run_ends_early_with_one_line(tmp_path, capsys):
    """eta = 100 (erf K = M = 2, L = 16, order 2) is far above eta_c ~ 4.5: the request is
    refused before the integration (it used to run silently for minutes)."""
    text = erf_K2(16, 1024) + ("[training]\neta = 100\n[solve]\nalpha_max = 3000\n")
    spec = write_spec(tmp_path, text)
    started = time.process_time()
    code, out, err = run_cli(["solve", spec, "--json"], capsys)
    elapsed = time.process_time() - started       # CPU, in process: load cannot fail it
    lines = err.strip().splitlines()
    assert code == 2 and out == ""
    assert len(lines) == 1 and "stability bound" in lines[0] and "eta = 100" in lines[0], err
    assert elapsed < 10
