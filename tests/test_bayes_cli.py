"""``scaling-odes bayes [transitions|limit] SPEC.toml``: contract and one-line errors."""
from __future__ import annotations

import json

import pytest

from cli_support import run_cli, write_spec

pytestmark = [pytest.mark.contract]  # oracle (tests/conftest.py)

BASE = """[bayes]
activation = "cubic"
d = 200
gamma = 1.0
Delta = 0.1
beta = 1.0
"""


def test_curve_json_keys(tmp_path, capsys):
    spec = write_spec(tmp_path, BASE + "n_over_d = [1, 2.5, 100]\n")
    out = tmp_path / "out.json"
    code, stdout, err = run_cli(["bayes", spec, "-o", out], capsys)
    assert code == 0, err
    res = json.loads(out.read_text())
    for key in ("n_over_d", "alpha", "eps_bo", "kc", "q", "fixed_points", "lambda_sigma",
                "q_sigma", "meta"):
        assert key in res, key
    assert res["n_over_d"] == [1.0, 2.5, 100.0]
    assert res["alpha"] == [v / 200 for v in res["n_over_d"]]
    assert len(res["q"]) == 3 and all(len(row) == 200 for row in res["q"])
    assert res["kc"][0] == 0 and res["eps_bo"][0] == 1.0       # uninformed: ε = g(1) Σ v² = 1
    assert len(res["fixed_points"][1]) == 2                     # coexistence at n/d = 2.5
    assert set(res["fixed_points"][1][0]) == {"eps", "kc", "psi"}
    assert res["kc"][2] == sum(q > 0 for q in res["q"][2])
    assert abs(res["lambda_sigma"] - 1.4557767406190114) < 1e-15
    assert res["meta"]["lambda_sigma_digits"].startswith("1.45577674061901145873")


def test_selection_and_alpha(tmp_path, capsys):
    spec = write_spec(tmp_path, BASE + 'alpha = [0.0115]\nselection = "informed"\n')
    code, stdout, err = run_cli(["bayes", spec, "--json"], capsys)
    assert code == 0, err
    res = json.loads(stdout)
    assert res["n_over_d"] == [pytest.approx(2.3)] and res["kc"] == [1]
    assert res["meta"]["selection"] == "informed"


def test_transitions_and_limit(tmp_path, capsys):
    spec = write_spec(tmp_path, BASE + "features = [1]\nalpha = [1.0]\n")
    code, stdout, err = run_cli(["bayes", "transitions", spec, "--json"], capsys)
    assert code == 0, err
    tr = json.loads(stdout)
    (row,) = tr["features"]
    assert set(row) >= {"feature", "appears", "switch", "ends", "q_jump"}
    assert abs(row["ends"] - tr["eq36_n_over_d"]) < 1e-8 * row["ends"]
    code, stdout, err = run_cli(["bayes", "limit", spec, "--json"], capsys)
    assert code == 0, err
    lim = json.loads(stdout)
    assert lim["regime"] == "beta > 1/2"
    assert abs(lim["kc_bar"][0] - 2.04352) < 5e-6 and abs(lim["eps_bar"][0] - 0.50343) < 5e-6


@pytest.mark.parametrize("body,needle", [
    ('[bayes]\nactivation = "erf"\nn_over_d = [1]\n', "k⋆ < 3"),
    ('[bayes]\nactivation = "relu"\nn_over_d = [1]\n', "k⋆ < 3"),
    ('[bayes]\nhermite = [0, 1, 0, 1]\nhermite_start = 0\nn_over_d = [1]\n', "k⋆ = 1"),
    ('[bayes]\nbeta = 0\nn_over_d = [1]\n', "beta"),
    ('[bayes]\nbeta = -0.5\nn_over_d = [1]\n', "beta"),
    ('[bayes]\nDelta = -0.1\nn_over_d = [1]\n', "Delta"),
    ('[bayes]\nreadouts = []\nn_over_d = [1]\n', "readouts"),
    ('[bayes]\nd = 0\nn_over_d = [1]\n', "d"),
    ('[bayes]\nbeta = 1\nreadouts = [0.5, 0.5]\nn_over_d = [1]\n', "either beta or readouts"),
    ('[bayes]\nn_over_d = [1]\nalpha = [1]\n', "either n_over_d or alpha"),
    ('[bayes]\nbeta = 1\n', "n_over_d"),
    ('[bayes]\nselection = "best"\nn_over_d = [1]\n', "selection"),
    ('[bayes]\nwidth = 3\nn_over_d = [1]\n', "unknown key"),
])
def test_bad_input_one_line_exit_2(tmp_path, capsys, body, needle):
    spec = write_spec(tmp_path, body)
    code, stdout, err = run_cli(["bayes", spec], capsys)
    assert code == 2 and stdout == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert needle in err, err


def test_opt_in_low_orders_and_hermite(tmp_path, capsys):
    spec = write_spec(tmp_path, '[bayes]\nactivation = "erf"\ndrop_low_orders = true\n'
                                'd = 50\nn_over_d = [1e4]\n')
    code, stdout, err = run_cli(["bayes", spec, "--json"], capsys)
    assert code == 0, err
    assert json.loads(stdout)["meta"]["activation"] == "erf3"
    # hermite = [√6] from ℓ = 3 is the cubic activation: same λ_σ
    spec = write_spec(tmp_path, '[bayes]\nhermite = ["2.449489742783178098197284074705891391965947"]\n'
                                'd = 50\nn_over_d = [10]\n')
    code, stdout, err = run_cli(["bayes", spec, "--json"], capsys)
    assert code == 0, err
    assert abs(json.loads(stdout)["lambda_sigma"] - 1.4557767406190114) < 1e-13


def test_usage_error(tmp_path, capsys):
    spec = write_spec(tmp_path, BASE + "n_over_d = [1]\n")
    code, _, err = run_cli(["bayes", "sideways", spec], capsys)
    assert code == 2 and "usage" in err


def test_explicit_readouts(tmp_path, capsys):
    spec = write_spec(tmp_path, '[bayes]\nreadouts = [0.15, 0.6, 0.25]\nDelta = 0.1\n'
                                'n_over_d = [2, 400]\n')
    code, stdout, err = run_cli(["bayes", spec, "--json"], capsys)
    assert code == 0, err
    res = json.loads(stdout)
    assert res["meta"]["k"] == 3 and res["meta"]["readouts"] == "list"
    assert res["kc"] == [0, 3]
    q = res["q"][1]
    assert q[1] > q[2] > q[0] > 0          # order follows the readouts as given


def test_transitions_report_the_readout_regime(tmp_path, capsys):
    """Feature 1 of the β = 1 hierarchy (v² ≈ 0.61 at d = 200, Δ = 0.1) has an O(1) readout: the
    JSON marks it outside the Gaussian-channel regime, and stderr sums the run's warnings up in
    one line that quotes the first."""
    spec = write_spec(tmp_path, BASE + "features = [1, 2]\n")
    code, stdout, err = run_cli(["bayes", "transitions", spec, "--json"], capsys)
    assert code == 0, err
    reg = json.loads(stdout)["readout_regime"]
    feats = {f["feature"]: f for f in reg["features"]}
    assert set(feats) == {1, 2}
    assert feats[1]["in_gaussian_regime"] is False and feats[1]["correction_estimate"] > 0.1
    assert len(reg["warnings"]) == sum(not f["in_gaussian_regime"] for f in feats.values())
    n_out = sum(not f["in_gaussian_regime"] for f in feats.values())
    lines = [line for line in err.splitlines() if "warning" in line]
    assert lines == [lines[0]] and f"{n_out} warning(s)" in lines[0] and "feature 1:" in lines[0]


def test_glm_channel_curve_and_refusals(tmp_path, capsys):
    # channel = "glm" (experimental): k = 20 at d = 40, every feature can leave the Gaussian
    # regime at Δ = 0.1, so all are GLM units; no readout_regime (the channel replaces it)
    small = BASE.replace("d = 200", "d = 40").replace("gamma = 1.0", "gamma = 0.5")
    spec = write_spec(tmp_path, small + 'n_over_d = [3.775]\nchannel = "glm"\n')
    code, stdout, err = run_cli(["bayes", spec, "--json"], capsys)
    assert code == 0, err
    res = json.loads(stdout)
    assert res["meta"]["channel"] == "glm" and res["meta"]["glm_features"] == list(range(1, 21))
    assert "readout_regime" not in res and min(res["q"][0]) > 0
    for extra, words, needle in (
            ('glm_units = "all"\n', ["bayes"], "glm_units goes with channel"),
            ('channel = "exact"\n', ["bayes"], "channel"),
            ('channel = "glm"\nfeatures = [1]\n', ["bayes", "transitions"], "gaussian"),
            ('channel = "glm"\nactivation = "erf3"\n', ["bayes"], "cubic"),
            ('channel = "glm"\nDelta = 0.001\n', ["bayes"], "beyond the GLM table")):
        text = (small.replace('activation = "cubic"\n', "").replace("Delta = 0.1\n", "")
                + "n_over_d = [1]\n" + extra + ("Delta = 0.1\n" if "Delta" not in extra else ""))
        spec = write_spec(tmp_path, text)
        code, _, err = run_cli(words + [spec], capsys)
        assert code == 2 and needle in err and len(err.strip().splitlines()) == 1, (extra, err)


def test_glm_channel_is_sized_by_its_glm_units(tmp_path, capsys, monkeypatch):
    # 2000 GLM units (glm_units = "all", k = 2000) cost ≈ 37 s CPU per point (measured); the
    # estimate must refuse 100 points under a 1-hour limit before any work, naming the unit count
    monkeypatch.setenv("SCALING_ODES_MAX_HOURS", "1")
    text = BASE.replace("d = 200", "d = 2000") + (
        'channel = "glm"\nglm_units = "all"\nn_over_d = [' + ", ".join(["10"] * 100) + "]\n")
    code, _, err = run_cli(["bayes", write_spec(tmp_path, text)], capsys)
    assert code == 2 and "2000 GLM units" in err and len(err.strip().splitlines()) == 1, err
