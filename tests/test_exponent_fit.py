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
from specs import linear_K1, toml_spec
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


def _window_spec(tmp_path, L, n, tail=""):
    """A linear K = M = 1 spec (β = 1, η = 0.1) on n points over [centre/e, centre·e] of its
    power-law window."""
    from solvers.theory.linear import window_result
    c = window_result(L, 1.0, 0.1)["alpha_centre"]
    alphas = ", ".join(f"{x:.12g}" for x in np.geomspace(c / math.e, c * math.e, n))
    return write_spec(tmp_path, linear_K1(L) + toml_spec(
        training=dict(eta=0.1, init="expected"), solve=[f"alphas = [{alphas}]", tail]))


def test_linear_curve_recovers_the_theory_exponent_at_the_window_centre(tmp_path, capsys):
    """L = 256, β = 1, η = 0.1: the power-law window's centre is α ≈ 7.27 and the window's
    approximation gives the local exponent 0.535 there (the asymptotic β/(1+β) = 0.5 is reached
    only as L grows).  The fit on the exact curve over [centre/e, centre·e] recovers the local
    exponent within its stated uncertainty, and that uncertainty (0.01) is small enough to tell
    it from 0.5."""
    spec = _window_spec(tmp_path, 256, 22, 'basis = "modes"\ndps = "float64"\ndigits = 10\n'
                                           '[linear]\nroute = "modes"\n')
    code, out, err = run_cli(["linear", "curve", str(spec), "--json"], capsys)
    assert code == 0, err
    d = json.loads(out)
    fit, theory = d["late_exponent"], d["exponent_theory"]
    assert fit["n_points"] == 22
    assert abs(fit["exponent"] - theory["local_at_centre"]) < fit["uncertainty"] < 0.02
    assert abs(fit["exponent"] - theory["asymptotic"]) > fit["uncertainty"]


# -- the late_exponent field of every curve's JSON ------------------------------------------------

def test_late_exponent_subtracts_the_floor_and_stops_where_the_curve_reaches_it():
    """0.3 α^-1.5 above a floor 0.01, on a grid that runs on long after the excess falls below
    the float64 resolution of the values (α ~ 1e5): the window ends where the excess is still
    resolved and the fit returns 1.5 (an exact power law there: the uncertainty is rounding)."""
    from solvers.theory.exponent import late_exponent
    a = np.geomspace(1, 1e9, 91)
    r = late_exponent(a, 0.3 * a ** -1.5 + 0.01, floor=0.01)
    assert r["floor"] == 0.01
    assert r["window"][1] < 1e5
    assert abs(r["exponent"] - 1.5) < 1e-6 and r["uncertainty"] < 1e-6


def test_late_exponent_gives_a_reason_instead_of_a_number():
    from solvers.theory.exponent import late_exponent
    r = late_exponent([1, 2, 3], [1.0, 0.5, 0.3])
    assert set(r) == {"reason"} and "at least" in r["reason"]


def test_solve_json_recovers_the_linear_theory_exponent(tmp_path, capsys):
    """``solve`` (the ODE route, not ``linear curve``) reports late_exponent; on the linear
    network's power-law window it agrees with the window approximation's local exponent at the
    centre within its stated uncertainty (the oracle of the ``linear curve`` test above)."""
    from solvers.theory.linear import window_result
    spec = _window_spec(tmp_path, 64, 16)
    code, out, err = run_cli(["solve", str(spec), "--json"], capsys)
    assert code == 0, err
    fit = json.loads(out)["late_exponent"]
    local = window_result(64, 1.0, 0.1)["exponent"]
    assert fit["n_points"] == 16
    assert abs(fit["exponent"] - local) < fit["uncertainty"] < 0.05


def test_asymptotic_reports_the_ode_exponent_next_to_the_linearisation(tmp_path, capsys):
    """erf K = M = 2, L = 4 after specialisation (α ≥ 1500): the ODE curve's exponent on the
    last decade and the first-order linearisation's (a sum of exponentials from its eigen-
    decomposition, an independent route) agree within the fit's uncertainty; the approach is
    called exponential, at the smallest of the reported rates."""
    from specs import erf_K2
    spec = write_spec(tmp_path, erf_K2(4, 256) + """[training]
eta = 0.5
order = 1
[solve]
alpha_max = 3000
n_points = 31
spacing = "linear"
[asymptotic]
alpha0 = 1500
""")
    code, out, err = run_cli(["asymptotic", str(spec), "--json"], capsys)
    assert code == 0, err
    d = json.loads(out)
    fit, th = d["late_exponent"], d["exponent_theory"]
    assert th["approach"] == "exponential" and th["slowest_rate"] == min(d["rates"])
    lin = th["linearisation"]
    assert fit["n_points"] >= 6 and lin["n_points"] == fit["n_points"]
    assert abs(fit["exponent"] - lin["exponent"]) < fit["uncertainty"]


def test_compare_and_plrf_curve_report_late_exponents(tmp_path, capsys):
    """The fields exist where the curves come out: compare (theory and simulation, the
    simulation's fit within a few of its uncertainties of the theory's, N = 1024) and plrf
    curve (p(r) - p_inf)."""
    from specs import erf_K2
    spec = write_spec(tmp_path, erf_K2(4, 1024) + (
        "[training]\neta = 0.5\nsigma_J = 0.1\n[solve]\nalpha_max = 10\nn_points = 21\n"
        "basis = \"modes\"\ndps = \"float64\"\n[simulate]\nseeds = [0]\nn_jobs = 1\n"))
    code, out, err = run_cli(["compare", str(spec), "--json", "--no-progress"], capsys)
    assert code == 0, err
    d = json.loads(out)
    th, sim = d["late_exponent"]["theory"], d["late_exponent"]["simulation"]
    assert th == d["theory"]["late_exponent"]
    assert th["window"] == sim["window"]
    # one SGD run at N = 1024 lies within 3/sqrt(N) = 0.09 (relative) of its ODE: over the
    # last decade (ln 10 in log alpha) that moves the slope by at most 2 x 0.09 / ln 10 = 0.08
    assert abs(th["exponent"] - sim["exponent"]) < 2 * 3 / math.sqrt(1024) / math.log(10)
    plrf = write_spec(tmp_path, "[plrf]\nalpha = 1.0\nbeta = 0.7\nv = 400\nd = 100\n"
                      "gamma = \"auto\"\nbatch = 1\nr_max = 100000\nn_points = 40\n",
                      name="plrf.toml")
    code, out, err = run_cli(["plrf", "curve", str(plrf), "--json"], capsys)
    assert code == 0, err
    d = json.loads(out)
    assert d["late_exponent"]["floor"] == d["meta"]["p_inf"]
    assert d["late_exponent"]["exponent"] > 0
