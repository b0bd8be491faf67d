"""``scaling-odes onestep`` / ``onestep-sim``: the TOML → JSON contract and one-line errors."""
from __future__ import annotations

import json

import pytest

from cli_support import run_cli, write_spec

pytestmark = [pytest.mark.contract]

BASE = """[onestep]
student_activation = "tanh"
target_activation = "tanh"
alpha0 = 0.5
eta = 1.0
width = 1.0
ridge = 0.01
noise = 0.0
alpha = [0.2, 0.5, 1, 2, 3]
"""


def test_theory_json(tmp_path, capsys):
    spec = write_spec(tmp_path, BASE + "[sim]\nd = 100\n")      # [sim] is allowed, unused
    code, out, err = run_cli(["onestep", spec, "--json"], capsys)
    assert code == 0, err
    res = json.loads(out)
    for key in ("alpha", "eps_g", "train_error", "overlaps", "srf", "bounds",
                "linear_baseline", "meta"):
        assert key in res, key
    assert res["alpha"] == [0.2, 0.5, 1.0, 2.0, 3.0]
    assert len(res["eps_g"]) == 5 and set(res["srf"]) == {"gamma", "r", "c"}
    assert {"upper", "lower"} <= set(res["bounds"])
    assert {"m", "t", "psi", "q1", "q2", "V1", "V2"} <= set(res["overlaps"])
    assert res["meta"]["width"] == 1.0 and "version" in res["meta"]


def test_sim_json(tmp_path, capsys):
    spec = write_spec(tmp_path, BASE.replace("[0.2, 0.5, 1, 2, 3]", "[0.5, 2]")
                      + '[sim]\nd = 60\nseeds = 2\nkinds = ["protocol", "srf", "gaussian"]\n')
    out = tmp_path / "o.json"
    code, _, err = run_cli(["onestep-sim", spec, "-o", out], capsys)
    assert code == 0, err
    res = json.loads(out.read_text())
    assert set(res["sim"]) == {"protocol", "srf", "gaussian"}
    for v in res["sim"].values():
        assert len(v["eps_g"]) == 2 and len(v["eps_g_sem"]) == 2 and v["seeds"] == [0, 1]
    assert {"gamma", "r", "c", "r_sem"} <= set(res["measured_srf"])


def test_sim_is_reproducible(tmp_path, capsys):
    spec = write_spec(tmp_path, BASE.replace("[0.2, 0.5, 1, 2, 3]", "[1]")
                      + '[sim]\nd = 40\nseeds = 2\nkinds = ["srf"]\n')
    runs = []
    for _ in range(2):
        code, out, err = run_cli(["onestep-sim", spec, "--json"], capsys)
        assert code == 0, err
        runs.append(json.loads(out)["sim"])
    assert runs[0] == runs[1]


@pytest.mark.parametrize("line,word", [
    ("alpha0 = -1", "alpha0"), ("ridge = -0.1", "ridge"), ("ridge = 0", "ridge"),
    ("width = 0", "width"), ("eta = nan", "eta"), ("noise = inf", "noise"),
    ('student_activation = "relu"', "odd"), ('target_activation = "cos"', "even"),
    ('target_activation = "nope"', "unknown activation"), ("alpha = []", "alpha"),
    ("alpha = [0, 1]", "alpha"), ("bogus = 1", "bogus"), ('alpha = ["x"]', "alpha"),
])
def test_bad_input_one_line(tmp_path, capsys, line, word):
    body = "\n".join(l for l in BASE.splitlines()
                     if l.split(" = ")[0] != line.split(" = ")[0]) + "\n" + line + "\n"
    spec = write_spec(tmp_path, body)
    code, out, err = run_cli(["onestep", spec], capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and word in err, err


def test_missing_section_and_unknown_section(tmp_path, capsys):
    code, _, err = run_cli(["onestep", write_spec(tmp_path, "[sim]\nd = 10\n")], capsys)
    assert code == 2 and "[onestep]" in err
    code, _, err = run_cli(["onestep", write_spec(tmp_path, BASE + "[model]\nK = 1\n")], capsys)
    assert code == 2 and "unknown section [model]" in err


def test_large_simulation_sized_before_work(tmp_path, capsys):
    spec = write_spec(tmp_path, BASE + "[sim]\nd = 30000\n")
    code, _, err = run_cli(["onestep-sim", spec], capsys)
    assert code == 2 and "GiB" in err and err.count("\n") == 1


def test_one_seed_has_no_standard_error(tmp_path, capsys):
    """One seed has no spread: the *_sem keys are absent (never NaN, never null)."""
    spec = write_spec(tmp_path, BASE.replace("[0.2, 0.5, 1, 2, 3]", "[1]")
                      + '[sim]\nd = 40\nseeds = 1\n')
    code, out, err = run_cli(["onestep-sim", spec, "--json"], capsys)
    assert code == 0, err
    assert "NaN" not in out
    res = json.loads(out)
    assert "null" not in out
    assert "eps_g_sem" not in res["sim"]["protocol"] and "r_sem" not in res["measured_srf"]
    assert len(res["sim"]["protocol"]["eps_g"]) == 1


@pytest.mark.parametrize("line", ["eta = 1e300", "noise = 1e300", "alpha = [1e300]"])
def test_extreme_values_refused_in_one_line(tmp_path, capsys, line):
    body = BASE.replace("alpha = [0.2, 0.5, 1, 2, 3]\n", "") + line + "\n"
    if not line.startswith("alpha"):
        body += "alpha = [1]\n"
    body = "\n".join(l for l in body.splitlines()
                     if not (l.startswith(line.split(" = ")[0] + " ") and l != line)) + "\n"
    code, out, err = run_cli(["onestep", write_spec(tmp_path, body)], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "internal error" not in err, err
