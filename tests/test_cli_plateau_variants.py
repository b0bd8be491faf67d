"""``scaling-odes plateau`` / ``asymptotic`` on the family's variants: the route key, verified
digits, agreement with the ODE in the same JSON, one-line refusals, sizing by the real route."""
import json

import mpmath
import pytest

from cli_support import run_cli, write_spec
from specs import toml_spec

pytestmark = [pytest.mark.contract]

def _spec(tmp_path, model='activation = "erf"', K=2, M=2, L=3, order=2, training="",
          alpha_max=600, n=31, extra="", N=300):
    return write_spec(tmp_path, toml_spec(
        model=[model, dict(K=K, M=M)], data=dict(L=L, beta=1.0, N=N),
        training=[dict(eta=0.5, order=order, sigma_J=0.01, seed=3), training],
        solve=[dict(alpha_max=alpha_max, n_points=n, spacing="linear", basis="modes",
                    dps="float64"), extra]))


def test_erf_keeps_the_closed_form_route(tmp_path, capsys):
    code, out, err = run_cli(["plateau", _spec(tmp_path, order=1), "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["route"] == "closed form"


def test_plateau_of_a_mixed_noisy_pair(tmp_path, capsys):
    spec = _spec(tmp_path, model='student_activation = "erf"\nteacher_activation = "relu"',
                 training="noise = 0.1")
    code, out, err = run_cli(["plateau", spec, "--json"], capsys)
    assert code == 0, err
    d = json.loads(out)
    assert d["route"] == "numeric"
    for key in ("R1", "Q1", "fixed_point", "eps_plateau", "escape_rate", "tau_esc", "digits",
                "decimal", "eigenvalues"):
        assert key in d
    # [plateau] dps = 30 by default: 20 digits verified (10 guard digits)
    assert min(d["digits"].values()) >= 20
    assert float(d["decimal"]["escape_rate"]) == d["escape_rate"]
    assert d["escape_rate"] == max(d["eigenvalues"]["real"])
    # all students equal: every row of R1 and every entry of Q1 the same
    assert d["R1"][0] == d["R1"][1] and len({x for row in d["Q1"] for x in row}) == 1
    assert d["fixed_point_residual"] < 1e-35


@pytest.mark.parametrize("training", ["noise = 0.1", "weight_decay = 0.01"])
def test_asymptotic_of_a_noisy_erf_pair_against_the_ode(tmp_path, capsys, training):
    spec = _spec(tmp_path, training=training, alpha_max=4000, n=9,
                 extra="[asymptotic]\nalpha0 = 3000\n")
    code, out, err = run_cli(["asymptotic", spec, "--json"], capsys)
    assert code == 0, err
    d = json.loads(out)
    assert d["route"] == "numeric" and d["fixed_point"]["exact"] is False
    assert min(d["digits"].values()) >= 20
    # first-order prediction from the ODE state at alpha0 vs the ODE: the error is second order
    # in the distance to the fixed point (relative ~1e-6 at alpha0 here): 1e-8 relative
    assert d["eps_g"] == pytest.approx(d["eps_g_ode"], rel=1e-8)
    # the ODE has nearly reached the floor (slowest rates 0.0029 / 0.0073: <= 1e-7 left)
    assert d["eps_g_ode"][-1] == pytest.approx(d["eps_floor"], rel=1e-6)
    with mpmath.workdps(40):
        assert abs(mpmath.mpf(d["decimal"]["eps_floor"]) - d["eps_floor"]) < 1e-17
    assert d["rates"][0] == pytest.approx(-max(d["eigenvalues"]["real"]), rel=1e-12)


@pytest.mark.parametrize("command,kw,needle", [
    ("plateau", dict(model='activation = "relu"'), "student activation 'relu'"),
    ("plateau", dict(model='activation = "linear"'), "student activation 'linear'"),
    ("plateau", dict(K=1), "K = 1"),
    ("plateau", dict(model='activation = "erf"\nstudent_readout = [1, 2]\n'
                           'teacher_readout = [1, 1]'), "not uniform"),
    ("plateau", dict(training='schedule = {kind = "power", alpha0 = 10, p = 1}'), "schedule"),
    ("asymptotic", dict(model='activation = "linear"'), "continuum"),
    ("asymptotic", dict(model='activation = "relu"'), "singular covariance"),
])
def test_refusals_are_one_line(tmp_path, capsys, command, kw, needle):
    code, out, err = run_cli([command, _spec(tmp_path, **kw)], capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and needle in err, err


def test_sizing_uses_the_numeric_route(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SCALING_ODES_MAX_HOURS", "0.001")     # 3.6 s
    spec = _spec(tmp_path, model='student_activation = "erf"\nteacher_activation = "relu"',
                 L=64, N=640)
    code, out, err = run_cli(["plateau", spec], capsys)
    assert code == 2 and err.count("\n") == 1 and "numeric route" in err, err


def test_plateau_of_the_actual_teacher(tmp_path, capsys):
    """[plateau] teacher = "actual": all students equal on the spec's own (random) teacher, by
    the numeric route; the erf module's own equal-students Newton (started from the per-row
    approximation, solvers.theory.plateau) finds the same point."""
    from fractions import Fraction
    import numpy as np
    from derive import spectra
    from solvers.core.problem import random_init
    from solvers.theory.plateau import equal_students_plateau
    spec = _spec(tmp_path, order=1, extra='[plateau]\nteacher = "actual"\n')
    code, out, err = run_cli(["plateau", spec, "--json"], capsys)
    assert code == 0, err
    d = json.loads(out)
    assert d["route"] == "numeric" and d["teacher"] == "actual"
    spectrum = spectra.power_law(3, 1)
    init = random_init(2, 2, 300, spectrum, Fraction(1, 100), 3)
    R, Q, res, _ = equal_students_plateau(2, spectrum, init.T, Fraction(1, 2), 1, dps=30)
    # both at >= 20 verified / 25 converged digits: float64 output agrees to 1e-14
    Rm = np.array(d["fixed_point"]["modes"]["R"])          # (L, K, M), rows equal
    Qm = np.array(d["fixed_point"]["modes"]["Q"])
    assert np.allclose(Rm[:, 0, :], np.array(R, dtype=float), rtol=1e-14, atol=0)
    assert np.allclose(Qm[:, 0, 1], np.array(Q, dtype=float), rtol=1e-14, atol=0)
    assert Rm[0, 0, 0] != Rm[0, 0, 1]          # a random teacher: r_n depends on n


def test_asymptotic_of_relu_with_noise_and_decay_from_the_trajectory_end(tmp_path, capsys):
    """ReLU students cannot be linearised at perfect learning (their fields' covariance is
    singular there), and from the first grid point Newton is far from the fixed point.  With
    label noise and weight decay the fixed point moves off the singular set; Newton starts at
    the end of the integrated trajectory.  Checked against that trajectory: the fixed point is
    its end (α = 1000, slowest rate 0.022: e^-22 left, so the float64 ODE's own error decides:
    1e-6 of the state's scale), and the slowest eigenvalue is the log-slope of the trajectory's
    distance to it on α in [150, 450] (the next, 0.10, is e^-12 smaller there).  ε_g
    itself approaches its floor at a rate between the slowest and twice it: near perfect
    learning ∇ε_g is small (it vanishes at the teacher), so the quadratic term competes."""
    import numpy as np
    spec = _spec(tmp_path, model='activation = "relu"', L=1, N=1024,
                 training="noise = 0.01\nweight_decay = 0.0001", alpha_max=1000, n=21,
                 extra="digits = 8")
    spec.write_text(spec.read_text().replace("sigma_J = 0.01", "sigma_J = 0.3"))
    code, out, err = run_cli(["asymptotic", spec, "--json"], capsys)
    assert code == 0, err
    d = json.loads(out)
    assert d["route"] == "numeric" and d["fixed_point"]["exact"] is False
    assert "alpha = 1000" in d["fixed_point"]["start"]
    code, out, err = run_cli(["solve", spec, "--json"], capsys)
    assert code == 0, err
    ode = json.loads(out)
    R_end, Q_end = np.asarray(ode["R1"][-1]), np.asarray(ode["Q1"][-1])
    R_fp, Q_fp = np.asarray(d["fixed_point"]["modes"]["R"][0]), np.asarray(
        d["fixed_point"]["modes"]["Q"][0])
    scale = np.abs(Q_fp).max()
    assert np.abs(R_end - R_fp).max() < 1e-6 * scale
    assert np.abs(Q_end - Q_fp).max() < 1e-6 * scale
    assert ode["eps_g"][-1] == pytest.approx(d["eps_floor"], rel=1e-6)
    a = np.asarray(ode["alpha"])
    dist = np.sqrt(((np.asarray(ode["R1"]) - R_fp) ** 2).sum(axis=(1, 2))
                   + ((np.asarray(ode["Q1"]) - Q_fp) ** 2).sum(axis=(1, 2)))
    window = (a >= 150) & (a <= 450)
    slowest = -max(d["eigenvalues"]["real"])
    assert -np.polyfit(a[window], np.log(dist[window]), 1)[0] == pytest.approx(slowest, rel=1e-3)
    assert d["rates"][0] == pytest.approx(slowest, rel=1e-12)
    e = np.asarray(ode["eps_g"], float) - d["eps_floor"]
    assert np.all(e[window] > 0)
    eps_rate = -np.polyfit(a[window], np.log(e[window]), 1)[0]
    assert slowest < eps_rate < 2 * slowest
