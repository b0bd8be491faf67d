"""`scaling-odes linear curve|window`: JSON keys and one-line errors."""
import json

import pytest

from specs import LINEAR_L16
from solvers.app.cli.main import main

pytestmark = [pytest.mark.contract, pytest.mark.closed_form]  # oracle (tests/conftest.py)

BASE = LINEAR_L16 + """[training]
eta = 0.5
sigma_J = 0.1
init = "expected"
[solve]
alpha_max = 100
n_points = 4
digits = DIGITS
"""


def _spec(tmp_path, text, digits=12):
    p = tmp_path / "spec.toml"
    p.write_text(text.replace("DIGITS", str(digits)))
    return str(p)


def _run(capsys, argv):
    rc = main(argv)
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_curve_json(tmp_path, capsys):
    rc, out, _ = _run(capsys, ["linear", "curve", _spec(tmp_path, BASE), "--json"])
    res = json.loads(out)
    assert rc == 0 and set(res) >= {"alpha", "eps_g", "meta"}
    assert len(res["alpha"]) == len(res["eps_g"]) == 4
    assert all(isinstance(e, float) for e in res["eps_g"])
    assert res["eps_g"][0] > res["eps_g"][-1] > 0


def test_curve_decimal_strings_and_routes_agree(tmp_path, capsys):
    vals = {}
    for route in ("modes", "companion", "levels"):
        spec = _spec(tmp_path, BASE + f'[linear]\nroute = "{route}"\n', digits=25)
        rc, out, _ = _run(capsys, ["linear", "curve", spec, "--json"])
        res = json.loads(out)
        assert rc == 0 and all(isinstance(e, str) for e in res["eps_g"])
        assert res["meta"]["route"] == route
        vals[route] = res["eps_g"]
    # all three verified to 25 digits and printed with 25: equal up to the last printed digit
    from mpmath import mp, mpf
    with mp.workdps(40):
        for r in ("companion", "levels"):
            for a, b in zip(vals["modes"], vals[r], strict=True):
                assert abs(mpf(a) - mpf(b)) <= abs(mpf(a)) * mpf(10) ** -23


def test_window_json(tmp_path, capsys):
    rc, out, _ = _run(capsys, ["linear", "window", _spec(tmp_path, BASE), "--json"])
    res = json.loads(out)
    assert rc == 0
    assert set(res) >= {"alpha_lower", "alpha_upper", "exponent", "exponent_theory"}
    assert res["alpha_lower"] < res["alpha_upper"]
    assert res["exponent_theory"] == pytest.approx(0.5)


@pytest.mark.parametrize("edit,needle", [
    (("K = 1", "K = 2"), "K = 2"),
    (('activation = "linear"', 'activation = "erf"'), "activation"),
    (("eta = 0.5", "eta = -1"), "eta"),
    (("[solve]", '[linear]\nroute = "magic"\n[solve]'), "route"),
    (("[solve]", '[linear]\nspeed = 1\n[solve]'), "speed"),
])
def test_bad_input_one_line(tmp_path, capsys, edit, needle):
    spec = _spec(tmp_path, BASE.replace(*edit))
    rc, out, err = _run(capsys, ["linear", "curve", spec])
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and needle in err and "Traceback" not in err


def test_missing_file_and_window_needs_power_law(tmp_path, capsys):
    rc, _, err = _run(capsys, ["linear", "window", str(tmp_path / "nope.toml")])
    assert rc == 2 and err.count("\n") == 1
    spec = _spec(tmp_path, BASE.replace("L = 16\nbeta = 1.0", "eigenvalues = [2, 1, 0.5]"))
    rc, _, err = _run(capsys, ["linear", "window", spec])
    assert rc == 2 and "beta" in err and err.count("\n") == 1


def test_too_small_dps_is_refused(tmp_path, capsys):
    text = BASE.replace("digits = DIGITS", "digits = 30\ndps = 36") + '[linear]\nroute = "companion"\n'
    rc, _, err = _run(capsys, ["linear", "curve", _spec(tmp_path, text)])
    assert rc == 2 and "digits" in err and err.count("\n") == 1
