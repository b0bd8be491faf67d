"""``scaling-odes kernel`` / ``kernel-mc``: JSON contract and one-line errors."""
import json

import pytest

from cli_support import run_cli, write_spec
from specs import KERNEL

pytestmark = [pytest.mark.contract]  # oracle (tests/conftest.py)

def test_kernel_json(tmp_path, capsys):
    spec = write_spec(tmp_path, KERNEL)
    out = tmp_path / "out.json"
    code, stdout, err = run_cli(["kernel", spec, "-o", out], capsys)
    assert code == 0, err
    res = json.loads(out.read_text())
    assert res["P"] == [16, 32, 64]
    for key in ("kappa", "kappa_S", "gamma", "eps_g"):
        assert set(res[key]) == {"eig", "ek", "rg_ek", "rg_gda"}
        assert all(len(v) == 3 for v in res[key].values())
    from solvers.theory.kernel import eigenlearning, power_law
    want = [p.eps_g for p in eigenlearning(power_law(2, 2000, 2), [16, 32, 64], 1e-2, 1e-2)]
    assert res["eps_g"]["eig"] == pytest.approx(want, rel=1e-14)
    assert res["meta"]["precision"] == "float64" and "rg_ek" in res["meta"]["methods"]


def test_kernel_mc_json(tmp_path, capsys):
    spec = write_spec(tmp_path, KERNEL.replace('methods = ["eig", "ek", "rg_ek", "rg_gda"]',
                                               'methods = ["eig"]\nlearnability = true')
                      + "[mc]\ntrials = 4\nseed = 3\n")
    code, stdout, err = run_cli(["kernel-mc", spec, "--json"], capsys)
    assert code == 0, err
    res = json.loads(stdout)
    assert set(res["mc"]) == {"mean", "sem"} and len(res["mc"]["mean"]) == 3
    assert len(res["learnability"]) == 3 and len(res["learnability"][0]) == 2000
    assert res["meta"]["mc"]["trials"] == 4


def test_data_block_spectrum(tmp_path, capsys):
    """The toolkit's [data] spectrum (L levels × N/L): same numbers as the API's levels()."""
    text = """
[model]
activation = "linear"
K = 1
M = 1
[data]
L = 8
beta = 1.0
N = 256
[training]
eta = 0.1
[solve]
alpha_max = 10
[kernel]
P = [32, 256, 512]
methods = ["eig", "ek"]
"""
    code, stdout, err = run_cli(["kernel", write_spec(tmp_path, text), "--json"], capsys)
    assert code == 0, err
    res = json.loads(stdout)
    from solvers.theory.kernel import eigenlearning, levels
    want = [p.eps_g for p in eigenlearning(levels(8, 1, 256), [32, 256, 512])]
    assert res["eps_g"]["eig"] == pytest.approx(want, rel=1e-14)
    assert res["meta"]["spectrum"]["groups"] == 8 and res["meta"]["spectrum"]["modes"] == 256
    assert res["eps_g"]["eig"][1] == 0.0           # P = rank, noiseless: interpolates exactly


def test_data_block_eigenvalue_list(tmp_path, capsys):
    text = '[data]\neigenvalues = [2, 1, "0.5", "0.5e-1"]\nN = 8\n[kernel]\nP = [3, 6]\n'
    code, stdout, err = run_cli(["kernel", write_spec(tmp_path, text), "--json"], capsys)
    assert code == 0, err
    res = json.loads(stdout)
    from solvers.theory.kernel import eigenlearning, explicit
    v = [2 / 8, 1 / 8, 0.5 / 8, 0.05 / 8]
    want = [p.eps_g for p in eigenlearning(explicit(v, v, [2, 2, 2, 2]), [3, 6])]
    assert res["eps_g"]["eig"] == pytest.approx(want, rel=1e-14)
    assert res["meta"]["spectrum"]["modes"] == 8


def test_explicit_lists(tmp_path, capsys):
    text = '[kernel]\neigenvalues = [1, 0.5, "0.25", 0.125]\ntarget = [1, 0, 1, 0]\nP = [2]\n'
    code, stdout, err = run_cli(["kernel", write_spec(tmp_path, text), "--json"], capsys)
    assert code == 0, err
    assert json.loads(stdout)["meta"]["spectrum"]["modes"] == 4


@pytest.mark.parametrize("text,needle", [
    ("[kernel]\neigenvalues = [1, -0.5]\nP = [4]\n", "eigenvalues[1]"),
    ("[kernel]\na = 2\nP = [0, 4]\n", "P[0] = 0"),
    ("[kernel]\na = 2\nP = [-4]\n", "P[0] = -4"),
    ("[kernel]\na = 2\nP = [4]\nrg_cut = 1.5\n", "rg_cut"),
    ("[kernel]\na = 2\nP = [4]\nrg_cut = 0\n", "rg_cut"),
    ("[kernel]\na = 2\nM = 50\nnoise = 0.1\nP = [10, 50]\n", "P = 50 = rank"),
    ("[kernel]\neigenvalues = [1, 0.5]\nnoise = 0.1\nP = [2]\n", "P = 2 = rank"),
    ("[kernel]\na = 2\neigenvalues = [1]\nP = [4]\n", "exactly one of"),
    ("[kernel]\nP = [4]\n", "neither"),
    ("[kernel]\na = 2\nP = [4]\nmethods = [\"svm\"]\n", "methods[0]"),
    ("[kernel]\na = 2\nP = [4]\nfoo = 1\n", "unknown key 'foo'"),
    ("[kernel]\na = 2\nM = 1000000000\nP = [4]\n", "M = 1000000000"),
    ("[kernel]\na = 2\n", "missing required key 'P'"),
    ("[kernel]\na = 2\nP = [4]\n[extra]\nx = 1\n", "unknown section"),
    ("[data]\nL = 4\nbeta = 1\n[kernel]\nP = [4]\n", "missing required key 'N'"),
    ("[data]\nL = 3\nbeta = 1\nN = 8\n[kernel]\nP = [4]\n", "does not divide"),
    ("[data]\nL = 4\nbeta = 1\nN = 8\n[kernel]\na = 2\nP = [4]\n", "not both"),
])
def test_bad_input_one_line_exit_2(tmp_path, capsys, text, needle):
    code, stdout, err = run_cli(["kernel", write_spec(tmp_path, text)], capsys)
    assert code == 2 and stdout == ""
    assert err.count("\n") == 1 and needle in err, err


def test_mc_section_only_for_kernel_mc(tmp_path, capsys):
    spec = write_spec(tmp_path, KERNEL + "[mc]\ntrials = 1\n")
    code, _, err = run_cli(["kernel-mc", spec], capsys)
    assert code == 2 and "trials" in err and err.count("\n") == 1
    # kernel accepts [mc] (one file for both subcommands) and checks it
    code, _, err = run_cli(["kernel", spec], capsys)
    assert code == 2 and "[mc] trials = 1" in err and err.count("\n") == 1


def test_beyond_double_range_goes_to_mpmath(tmp_path, capsys):
    """A ridge of 1e-500 or κ below 1e-308 must not become 0.0: mpmath, decimal strings."""
    text = '[kernel]\na = 200\nM = 50\nP = [5, 40]\nmethods = ["eig"]\nridge = "1e-500"\n'
    code, stdout, err = run_cli(["kernel", write_spec(tmp_path, text), "--json"], capsys)
    assert code == 0, err
    res = json.loads(stdout)
    assert res["meta"]["precision"] == "mpmath"
    import mpmath
    k5, k40 = (mpmath.mpf(v) for v in res["kappa"]["eig"])
    assert 0 < k40 < mpmath.mpf("1e-308") < k5
    # at P = 40 < M the 1e-500 ridge is negligible next to κ: ridgeless E_g = κ (prior target)
    assert mpmath.mpf(res["eps_g"]["eig"][1]) == pytest.approx(k40, rel=1e-12)
    text = text.replace('methods = ["eig"]\n', "")
    code, _, err = run_cli(["kernel", write_spec(tmp_path, text)], capsys)
    assert code == 2 and "float64 range" in err and err.count("\n") == 1
