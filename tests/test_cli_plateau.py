"""``scaling-odes plateau`` / ``asymptotic``: JSON keys, numbers vs the library, one-line errors."""
import json
from fractions import Fraction

import numpy as np
import pytest
import sympy as sp

from derive import plateau as dp
from derive import spectra
from solvers.theory.asymptotic import Linearisation, mode_states
from solvers.theory.plateau import SymmetricTeacher
from solvers.core.problem import random_init
from solvers.app.solve import problem_of
from solvers.app.spec import load_spec
from cli_support import run_cli as _run, write_spec as _write
from specs import erf_K2, toml_list as _toml_list

pytestmark = [pytest.mark.contract, pytest.mark.closed_form]  # oracle (tests/conftest.py)

BASE = erf_K2("{L}", "{N}") + """[training]
eta = {eta}
order = 1
sigma_J = 0.01
seed = {seed}
init = "{init}"
[solve]
{solve}
basis = "modes"
dps = "float64"
"""
PLATEAU_SOLVE = 'alpha_max = 600\nn_points = 301\nspacing = "linear"'


def test_plateau_random_teacher(tmp_path, capsys):
    L, N = 4, 4000
    spec = _write(tmp_path, BASE.format(L=L, N=N, eta=0.5, seed=3, init="random",
                                        solve=PLATEAU_SOLVE))
    code, out, err = _run(["plateau", spec, "--json"], capsys)
    assert code == 0, err
    d = json.loads(out)
    for key in ("R1", "Q1", "fixed_point", "eps_plateau", "escape_rate", "tau_esc",
                "plateau_length"):
        assert key in d
    assert set(d["fixed_point"]) == {"levels", "modes"}
    assert np.shape(d["fixed_point"]["modes"]["R"]) == (L, 2, 2)
    # the symmetrised teacher of the same realisation, by the paper's recipe
    spectrum = spectra.power_law(L, 1)
    init = random_init(2, 2, N, spectrum, Fraction(1, 100), 3)
    tea = SymmetricTeacher.from_modes(init.T)
    lam = spectrum.eigenvalues
    ex = lambda f: sp.Rational(f.numerator, f.denominator)  # noqa: E731
    T1, D1, T2, D2 = (sum(l ** j * ex(v[k]) for k, l in enumerate(lam))
                      for j, v in ((1, tea.T), (1, tea.D), (2, tea.T), (2, tea.D)))
    R, Q = dp.plateau_level1(2, T1, D1)
    # float64 output of 30-digit numbers: 1e-14 relative
    assert d["R1"][0][1] == pytest.approx(float(R), rel=1e-14)
    assert d["Q1"][1][0] == pytest.approx(float(Q), rel=1e-14)
    assert d["eps_plateau"] == pytest.approx(float(dp.plateau_height(2, T1, D1)), rel=1e-13)
    assert d["tau_esc"] == pytest.approx(float(dp.tau_esc(Fraction(1, 2), 2, T1, D1, T2, D2)),
                                         rel=1e-13)
    # the Jacobian eigenvalue (float64 eig) is the closed-form escape rate at order 1
    assert d["escape_rate"] * d["tau_esc"] == pytest.approx(1, rel=1e-10)
    # plateau length: extrapolation vs the escape seen on the spec's grid (spacing 2):
    # agreement to two grid spacings
    assert abs(d["plateau_length"] - d["plateau_length_ode"]) <= 4.0
    assert d["plateau_length"] > 3 * d["tau_esc"]


def test_plateau_expected_teacher_never_escapes(tmp_path, capsys):
    spec = _write(tmp_path, BASE.format(L=3, N=300, eta=0.5, seed=0, init="expected",
                                        solve=PLATEAU_SOLVE))
    code, out, err = _run(["plateau", spec, "--json"], capsys)
    assert code == 0, err
    d = json.loads(out)
    assert "plateau_length" not in d and "plateau_length_note" in d
    # expected teacher: T_k = 1/L, D = 0 -> level 1: T = 1, R* = 1/sqrt(6), Q* = 1/3
    assert d["R1"][0][0] == pytest.approx(6 ** -0.5, rel=1e-14)
    assert d["Q1"][0][0] == pytest.approx(1 / 3, rel=1e-14)


def _asymptotic_spec(tmp_path, L, eta, alpha0, alphas):
    """Expected teacher T_k = δ/L with the students of a random realisation (explicit init)."""
    spectrum = spectra.power_law(L, 1)
    init = random_init(2, 2, 300 * L, spectrum, Fraction(1, 100), 0)
    f = lambda a: [[[float(x) for x in row] for row in m] for m in a]  # noqa: E731
    T = [[[1 / L if n == m else 0.0 for m in range(2)] for n in range(2)] for _ in range(L)]
    text = BASE.format(L=L, N=300 * L, eta=float(eta), seed=0, init="explicit",
                       solve=f"alphas = {_toml_list(alphas)}")
    text += (f"[init.modes]\nR = {_toml_list(f(init.R))}\nQ = {_toml_list(f(init.Q))}\n"
             f"T = {_toml_list(T)}\n[asymptotic]\nalpha0 = {alpha0}\n")
    return _write(tmp_path, text), spectrum


def test_asymptotic_vs_restricted_linearisation(tmp_path, capsys):
    L, eta = 3, Fraction(1, 4)
    spec, spectrum = _asymptotic_spec(tmp_path, L, eta, 6000, [6000, 6500, 9000])
    code, out, err = _run(["asymptotic", spec, "--json"], capsys)
    assert code == 0, err
    d = json.loads(out)
    assert {"rates", "alpha", "eps_g"} <= set(d)
    assert d["alpha"] == [6000, 6500, 9000]
    # independent route: the 4L restricted Jacobian at 30 digits (mpmath eig) — the full
    # float64 Jacobian sees the same first-order rates (eig of a 21x21 O(1) matrix: 1e-10)
    lin = Linearisation(2, spectrum, eta, dps=30)
    assert d["rates"] == pytest.approx(lin.rates(), rel=1e-9)
    # first-order ε_g: expm of the full Jacobian vs eigen-decomposition on the symmetric
    # subspace, from the same ODE state (float64 ODE, rtol 1e-13)
    states, eps = mode_states(problem_of(load_spec(spec, ("asymptotic",))), [0, 6000])
    ref = [float(x) for x in lin.eps_g(states[1], 6000, d["alpha"])]
    assert d["eps_g"] == pytest.approx(ref, rel=1e-6)
    assert d["eps_g_ode"][0] == pytest.approx(float(eps[1]), rel=1e-12)


@pytest.mark.parametrize("edit,needle", [
    (("K = 2\nM = 2", "K = 1\nM = 2"), "K = 1"),
    (('activation = "erf"', 'activation = "linear"'), "student activation 'linear'"),
    (("[solve]", "[plateau]\nbogus = 1\n[solve]"), "[plateau] unknown key 'bogus'"),
    (("[solve]", "[plateau]\ndps = 5\n[solve]"), "dps = 5"),
])
def test_plateau_bad_input_is_one_line(tmp_path, capsys, edit, needle):
    text = BASE.format(L=3, N=300, eta=0.5, seed=0, init="random", solve=PLATEAU_SOLVE)
    spec = _write(tmp_path, text.replace(*edit))
    code, out, err = _run(["plateau", spec], capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and needle in err, err


def test_asymptotic_unspecialised_is_one_line(tmp_path, capsys):
    text = BASE.format(L=3, N=300, eta=0.5, seed=0, init="expected",
                       solve="alphas = [100, 200]") + "[asymptotic]\nalpha0 = 100\n"
    code, out, err = _run(["asymptotic", _write(tmp_path, text)], capsys)
    assert code == 2 and err.count("\n") == 1 and "not specialised" in err, err
    code, out, err = _run(["asymptotic", _write(tmp_path, text.replace("alpha0 = 100",
                                                                        "alpha0 = 500"))], capsys)
    assert code == 2 and err.count("\n") == 1 and "alpha0" in err, err
