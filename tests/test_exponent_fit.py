"""The late-time exponent fit (solvers.theory.exponent) and its report in ``linear curve``.

Oracles: exact power laws (the fit must return their exponent), a curve with a known local
exponent that changes across the window (its uncertainty must cover the change), and the
linear theory's own exponent at the centre of its power-law window (the incomplete-gamma
approximation of solvers.theory.linear, an independent route to the exact modes curve the fit
reads).
"""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from cli_support import run_cli, write_spec
from solvers.theory.exponent import fit_exponent

pytestmark = [pytest.mark.closed_form]


def test_an_exact_power_law_above_a_floor():
    a = np.geomspace(5, 5000, 40)
    r = fit_exponent(a, 0.7 * a ** -0.8 + 0.01, floor=0.01)
    assert r["exponent"] == pytest.approx(0.8, abs=1e-10)
    assert r["uncertainty"] < 1e-10
    assert 500 <= r["window"][0] < 500 * 1.2 and r["window"][1] == 5000   # the last decade


def test_a_bending_curve_has_its_bend_in_the_uncertainty():
    # ε = α^-1 (1 + α/100)^-1: local exponent 1 + α/(100 + α), from 1.5 to 1.9 on [100, 1000]
    a = np.geomspace(100, 1000, 30)
    r = fit_exponent(a, 1 / (a * (1 + a / 100)))
    local = 1 + a / (100 + a)
    assert r["drift"] > 0.05
    assert local.min() < r["exponent"] < local.max()
    assert abs(r["exponent"] - 1.7) < r["uncertainty"]                # the window's middle


def test_too_few_points_is_refused():
    with pytest.raises(ValueError, match="at least"):
        fit_exponent([1, 2, 3, 4], [1, 0.5, 0.3, 0.25])


def test_linear_curve_recovers_the_theory_exponent_at_the_window_centre(tmp_path, capsys):
    """L = 256, β = 1, η = 0.1: the power-law window's centre is α ≈ 7.27 and the window's
    approximation gives the local exponent 0.535 there (the asymptotic β/(1+β) = 0.5 is reached
    only as L grows).  The fit on the exact curve over [centre/e, centre·e] recovers the local
    exponent within its stated uncertainty, and that uncertainty (0.01) is small enough to tell
    it from 0.5."""
    from solvers.theory.linear import window_result
    c = window_result(256, 1.0, 0.1)["alpha_centre"]
    alphas = ", ".join(f"{x:.12g}" for x in np.geomspace(c / math.e, c * math.e, 22))
    spec = write_spec(tmp_path, f"""
[model]
activation = "linear"
K = 1
M = 1
[data]
L = 256
beta = 1.0
[training]
eta = 0.1
init = "expected"
[solve]
alphas = [{alphas}]
basis = "modes"
dps = "float64"
digits = 10
[linear]
route = "modes"
""")
    code, out, err = run_cli(["linear", "curve", str(spec), "--json"], capsys)
    assert code == 0, err
    d = json.loads(out)
    fit, theory = d["late_exponent"], d["exponent_theory"]
    assert fit["n_points"] == 22
    assert abs(fit["exponent"] - theory["local_at_centre"]) < fit["uncertainty"] < 0.02
    assert abs(fit["exponent"] - theory["asymptotic"]) > fit["uncertainty"]
