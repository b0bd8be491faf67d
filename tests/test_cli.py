"""The command line as a user meets it: JSON contract, one-line errors, demo, regenerate."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from cli_support import run_cli as _run, write_spec as _spec
from specs import erf_spec

pytestmark = [pytest.mark.contract]  # oracle (tests/conftest.py)

GOOD = erf_spec(eta=0.1, sigma_J=0.01, seed=1, alpha_max=200, basis='"{basis}"', dps="{dps}",
                digits="{digits}")


@pytest.mark.parametrize("basis,dps,digits", [("modes", '"auto"', 8), ("levels", 40, 20),
                                              ("modes", '"float64"', 6)])
def test_solve_writes_the_json_contract(tmp_path, capsys, basis, dps, digits):
    spec = _spec(tmp_path, GOOD.format(basis=basis, dps=dps, digits=digits))
    out = tmp_path / "out.json"
    code, _, err = _run(["solve", spec, "-o", out], capsys)
    assert code == 0, err
    res = json.loads(out.read_text())
    assert res["alpha"] == [0.0, 50.0, 100.0, 150.0, 200.0]
    assert len(res["eps_g"]) == 5
    if digits > 15:
        assert all(isinstance(e, str) and len(e.replace(".", "").lstrip("0")) >= digits for e in res["eps_g"])
    else:
        assert all(isinstance(e, float) for e in res["eps_g"])
    assert len(res["R1"]) == 5 and len(res["R1"][0]) == 2 and len(res["R1"][0][0]) == 2
    assert len(res["Q1"][0]) == 2 and res["Q1"][3][0][1] == res["Q1"][3][1][0]
    for key in ("basis", "dps", "wall_s", "version"):
        assert key in res["meta"]
    assert res["meta"]["basis"] == basis


def test_solve_json_to_stdout(tmp_path, capsys):
    spec = _spec(tmp_path, GOOD.format(basis="modes", dps='"auto"', digits=6))
    code, out, _ = _run(["solve", spec, "--json"], capsys)
    assert code == 0 and json.loads(out)["meta"]["basis"] == "modes"


def test_bases_agree_through_the_cli(tmp_path, capsys):
    results = {}
    for basis, dps in (("levels", 40), ("modes", 30)):
        spec = _spec(tmp_path, GOOD.format(basis=basis, dps=dps, digits=18), f"{basis}.toml")
        code, out, err = _run(["solve", spec, "--json"], capsys)
        assert code == 0, err
        results[basis] = [float(e) for e in json.loads(out)["eps_g"]]
    for a, b in zip(results["levels"], results["modes"], strict=True):
        assert abs(a - b) <= 1e-13 * abs(b)


def test_float64_levels_refused_at_large_L(tmp_path, capsys):
    text = GOOD.format(basis="levels", dps='"float64"', digits=6).replace("L = 4", "L = 32")
    code, out, err = _run(["solve", _spec(tmp_path, text), "--json"], capsys)
    assert code == 2 and out == ""
    assert "level basis" in err and len(err.strip().splitlines()) == 1


BAD = {
    "missing file": (None, "no such file"),
    "bad TOML": ("[model\nK = 2", "TOML"),
    "L not dividing N": (GOOD.replace("L = 4", "L = 5"), "divide"),
    "beta <= -1": (GOOD.replace("beta = 1.0", "beta = -1.0"), "beta"),
    "eta <= 0": (GOOD.replace("eta = 0.1", "eta = 0.0"), "eta"),
    "K < 1": (GOOD.replace("K = 2", "K = 0"), "K"),
    "dps too small": (GOOD.replace("digits = {digits}", "digits = 30"), "dps"),
    "unknown key": (GOOD.replace("seed = 1", "seed = 1\nsede = 2"), "sede"),
    "unknown basis": (GOOD.replace('basis = "{basis}"', 'basis = "eigen"'), "basis"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_one_line_and_nonzero(tmp_path, capsys, case):
    text, needle = BAD[case]
    if text is None:
        path = tmp_path / "nope.toml"
    else:
        path = _spec(tmp_path, text.format(basis="modes", dps=20, digits=8))
    code, out, err = _run(["solve", path, "--json"], capsys)
    assert code != 0
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("scaling-odes: error:"), err
    assert needle.lower() in lines[0].lower()
    assert "Traceback" not in err and "nan" not in err.lower().split()


def test_console_script_exit_status(tmp_path):
    """The installed entry point (not just main()) exits non-zero with one line."""
    exe = Path(sys.executable).with_name("scaling-odes")
    if not exe.exists():
        pytest.skip("console script not installed in this environment")
    proc = subprocess.run([str(exe), "solve", str(tmp_path / "missing.toml")], capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1


def test_regenerate_check_passes_via_cli(capsys):
    code, out, _ = _run(["regenerate", "--check"], capsys)
    assert code == 0 and "up to date" in out


def test_regenerate_check_fails_via_cli_when_stale(tmp_path, capsys, monkeypatch):
    import shutil
    from solvers.core import registry
    copy = tmp_path / "generated"
    shutil.copytree(registry.GENERATED_DIR, copy)
    (copy / "erf_K1_M1.py").write_text("# stale\n")
    monkeypatch.setattr(registry, "GENERATED_DIR", copy)
    code, _, err = _run(["regenerate", "--check"], capsys)
    assert code == 2 and "erf_K1_M1.py" in err


def test_demo_writes_figure_and_plateau_shortens_with_L(tmp_path, capsys):
    code, out, err = _run(["demo", "--out", tmp_path], capsys)
    assert code == 0, err
    png = tmp_path / "figure1.png"
    assert png.exists() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = (tmp_path / "figure1.csv").read_text().splitlines()
    assert rows[0] == "alpha,eps_g_L1,eps_g_L4,eps_g_L16,eps_g_L64" and len(rows) == 702
    lengths = dict(line.split(",") for line in (tmp_path / "plateau.csv").read_text().splitlines()[1:])
    plateau = [float(lengths[L]) for L in ("1", "4", "16", "64")]
    assert plateau[0] > 500                       # a real plateau at L = 1 ...
    assert plateau[1] < 0.6 * plateau[0]          # ... clearly shorter at L = 4 ...
    assert plateau[2] <= plateau[1] and plateau[3] <= plateau[2]   # ... and gone beyond
