"""``scaling-odes plrf curve|frontier|simulate``: the TOML → JSON contract, ``solvers.plrf``, and
one-line errors (exit 2, naming the key) for bad input, before any work."""
from __future__ import annotations

import json

import pytest

from cli_support import run_cli, write_spec

pytestmark = [pytest.mark.contract]

BASE = """[plrf]
alpha = 1.0
beta = 0.7
v = 200
d = 50
batch = 2
gamma = 0.3
steps = [0, 10, 100, 100000000]
"""


def test_curve_json(tmp_path, capsys):
    code, out, err = run_cli(["plrf", "curve", write_spec(tmp_path, BASE), "--json"], capsys)
    assert code == 0, err
    res = json.loads(out)
    assert res["r"] == [0, 10, 100, 100000000]
    assert len(res["loss"]) == 4 and res["loss"][0] > res["loss"][1] > res["loss"][2]
    m = res["meta"]
    assert m["route"] == "exact" and m["seed"] == 0 and m["batch"] == 2
    # r = 10⁸ sits on the plateau P*/(1 − ‖K‖) (the definition of p_inf, computed apart)
    assert res["loss"][3] == pytest.approx(m["p_star"] / (1 - m["norm_K"]), rel=1e-9)


def test_deterministic_route_with_infinite_v(tmp_path, capsys):
    text = BASE.replace("v = 200", 'v = "inf"').replace("d = 50", "d = 100") + \
        'route = "deterministic"\n'
    code, out, err = run_cli(["plrf", "curve", write_spec(tmp_path, text), "--json"], capsys)
    assert code == 0, err
    res = json.loads(out)
    assert res["meta"]["v"] == "inf" and res["meta"]["c0"] > 0
    assert abs(res["meta"]["eigenvalue_total"] / 100 - 1) < 1e-4


def test_api_matches_cli(tmp_path, capsys):
    import solvers
    path = write_spec(tmp_path, BASE)
    res = solvers.plrf(path)
    code, out, _ = run_cli(["plrf", "curve", path, "--json"], capsys)
    assert json.loads(out)["loss"] == res["loss"]
    with pytest.raises(solvers.SpecError, match="gamma"):
        solvers.plrf({"plrf": {"alpha": 1.0, "beta": 0.7, "v": 200, "d": 50, "gamma": -1,
                               "steps": [1]}})


def test_simulate_json(tmp_path, capsys):
    text = BASE.replace("steps = [0, 10, 100, 100000000]", "steps = [1, 5, 20]") + \
        "runs = 50\n"
    code, out, err = run_cli(["plrf", "simulate", write_spec(tmp_path, text), "--json"], capsys)
    assert code == 0, err
    res = json.loads(out)
    assert set(res["sim"]) >= {"loss", "sem", "z", "runs"} and res["sim"]["runs"] == 50
    assert len(res["sim"]["loss"]) == 3


@pytest.mark.parametrize("edit, verb, needle", [
    (("gamma = 0.3", ""), "curve", "missing required key 'gamma'"),
    (("gamma = 0.3", "gamma = 5.0"), "curve", "unstable"),
    (("alpha = 1.0", "alpha = 0.4"), "curve", "||K||"),           # flat spectrum: trace binds
    (("v = 200", 'v = "inf"'), "curve", "needs a finite v"),
    (("v = 200", "v = \"inf\"\\nalpha = 0.4"), "curve", "invalid TOML"),   # one line too
    (("alpha = 1.0", "alpha = 0.4"), "frontier", "list of at least 3"),
    (("beta = 0.7", "beta = -0.6"), "curve", "alpha + beta"),
    (("steps = [0, 10, 100, 100000000]", "steps = [10, 5]"), "curve", "increasing"),
    (("steps = [0, 10, 100, 100000000]", "r_max = 100"), "curve", "r_max with n_points"),
    (("d = 50", "d = 300000"), "curve", "GiB"),
    (("v = 200\nd = 50", 'v = "inf"\nd = 2000000\nroute = "deterministic"'), "curve",
     "checked up to d = 1638400"),
    (("d = 50", "d = 50\nwidth = 3"), "curve", "unknown key 'width'"),
    (("v = 200", "v = 40"), "curve", "P*"),                         # runs: v < d is fine
])
def test_bad_input_one_line(tmp_path, capsys, edit, verb, needle):
    text = BASE.replace(*edit)
    code, out, err = run_cli(["plrf", verb, write_spec(tmp_path, text), "--json"], capsys)
    if needle == "P*":                 # a valid spec (v < d: zero modes dropped)
        assert code == 0, err
        return
    assert code == 2, (out, err)
    assert err.count("\n") == 1 and needle in err, err
    assert "Traceback" not in err


def test_v_inf_below_the_line_refused(tmp_path, capsys):
    text = BASE.replace("alpha = 1.0", "alpha = 0.4").replace("v = 200", 'v = "inf"')
    code, _, err = run_cli(["plrf", "curve", write_spec(tmp_path, text)], capsys)
    assert code == 2 and "2*alpha > 1" in err and err.count("\n") == 1


def test_frontier_json(tmp_path, capsys):
    text = """[plrf]
alpha = 1.0
beta = 0.7
v_over_d = 4
d = [50, 71, 100, 141]
gamma = "auto"
f_min = 1e3
f_max = 1e9
n_f = 40
"""
    code, out, err = run_cli(["plrf", "frontier", write_spec(tmp_path, text), "--json"], capsys)
    assert code == 0, err
    res = json.loads(out)
    for key in ("f", "d_star", "loss_star", "xi", "eta", "xi_se", "eta_se", "predicted"):
        assert key in res
    assert res["predicted"]["phase"] == "II"
    # four sizes: the sub-ladders of three have too few minima to fit, so no drift is claimed
    assert res["xi_err"] is None and res["xi_sub"] == [None, None]
    assert 50 <= min(res["d_star"]) and max(res["d_star"]) <= 141


def test_simulate_twice_in_one_process(tmp_path, capsys):
    """The API's simulate stays callable after its SGD module was imported (a submodule of the
    same name once replaced the function on the package)."""
    import solvers.theory.plrf as T
    import solvers.theory.plrf.sgd  # noqa: F401
    pb = T.Problem(1.0, 0.7, 60, 20, 1, 0.2)
    for _ in range(2):
        assert callable(T.simulate)
        assert len(T.simulate(pb, [1, 2], runs=8)["sim"]["loss"]) == 2
