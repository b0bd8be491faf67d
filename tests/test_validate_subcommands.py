"""Validation before any work, per subcommand: each one sizes the work its own route will do
(not another subcommand's), every size has a cap with the estimate in the message, and bad
input ends in one line naming the problem.  Each test is a reported case (it failed before the
fix: refused, hung, crashed with "internal error", or printed NaN / a wrong-looking number).
"""
import json
import math
import time
from fractions import Fraction

import pytest

from cli_support import run_cli, write_spec
from specs import KERNEL, linear_K1, toml_spec

pytestmark = [pytest.mark.contract]  # oracle (tests/conftest.py)


def linear(L, beta):
    """linear K = M = 1 at eta = 0.05 from the expected start, alpha <= 1000 at 12 digits"""
    return linear_K1(L, beta) + toml_spec(training=dict(eta=0.05, init="expected"),
                                          solve=dict(alpha_max=1000, digits=12))


def one_line_error(code, out, err, *fragments):
    assert code == 2 and out == "", (code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("scaling-odes: error: "), err
    assert "internal error" not in err, err
    for f in fragments:
        assert f in err, (f, err)
    return lines[0]


def cpu_run(args, capsys):
    started = time.process_time()
    code, out, err = run_cli(args, capsys)
    return code, out, err, time.process_time() - started


# ---- linear: the route it runs ----------------------------------------------------------------

def test_linear_window_paper_size_runs_fast(tmp_path, capsys):
    """The paper's window figure (L = 4096, beta = 1, eta = 0.05) was refused: validation sized
    a level-basis trajectory at dps 10672 (23.7 GiB) that the window never computes."""
    path = write_spec(tmp_path, linear(4096, 1.0))
    started = time.process_time()
    code, out, err = run_cli(["linear", "window", path, "--json"], capsys)
    # CPU time, in process, so that a loaded machine cannot fail it
    assert time.process_time() - started < 10, "the window is O(L) float64 work"
    assert code == 0, err
    res = json.loads(out)
    # the local exponent at the window's centre tends to beta/(1+beta) = 1/2 as L grows
    # (0.5171 at L = 1024, 0.5084 here: the finite-L correction halves per factor 4 in L)
    assert res["exponent_theory"] == 0.5 and abs(res["exponent"] - 0.5) < 0.02


def test_linear_window_exact_exponent_without_sympy(tmp_path, capsys):
    """At L <= 2048 the window adds the exact curve's exponent; with a non-integer beta the
    exact SymPy spectrum alone took minutes (69 s at L = 1024); the float64 modes route needs
    only the correctly rounded eigenvalues.  Checked against the exact-spectrum route at a size
    where that is cheap (L = 64, beta = 1/2)."""
    from solvers.app.cli.linear import window_result_of
    from solvers.app.solve import spectrum_of
    from solvers.app.spec import load_spec
    from solvers.theory.linear import modes_solution
    path = write_spec(tmp_path, linear(1024, 0.5), "big.toml")
    cpu = time.process_time()
    code, out, err = run_cli(["linear", "window", path, "--json"], capsys)
    assert code == 0 and time.process_time() - cpu < 10, err
    assert math.isfinite(json.loads(out)["exponent_exact_curve"])
    spec = load_spec(write_spec(tmp_path, linear(64, 0.5)), sizing=None)
    res = window_result_of(spec)
    sol = modes_solution(spectrum_of(spec), spec.training.eta)
    a, h = res["alpha_centre"], 1e-4
    ref = -(math.log(sol.eps_g(a * math.exp(h))) - math.log(sol.eps_g(a * math.exp(-h)))) / (2 * h)
    # same float64 route on eigenvalues that differ by <= 1 ulp: agreement to ~1e-9 (the
    # central difference divides an O(1e-16) relative change by 2h = 2e-4)
    assert res["exponent_exact_curve"] == pytest.approx(ref, rel=1e-9)


def test_linear_curve_sized_by_its_route(tmp_path, capsys, monkeypatch):
    from solvers.theory.linear import route_dps
    path = write_spec(tmp_path, linear(4096, 1.0) + '[linear]\nroute = "levels"\n')
    dps = route_dps("levels", 4096, 12)
    one_line_error(*run_cli(["linear", "curve", path, "--json"], capsys),
                   "route = 'levels'", f"dps = {dps}")
    # the modes route needs digits + 10 only; its O(L^2) mpmath work is the estimate
    monkeypatch.setenv("SCALING_ODES_MAX_HOURS", "0.1")
    path = write_spec(tmp_path, linear(4096, 1.0), "modes.toml")
    msg = one_line_error(*run_cli(["linear", "curve", path, "--json"], capsys),
                         "modes route at dps = 22", "would take about", "SCALING_ODES_MAX_HOURS")
    assert "GiB" not in msg


# ---- solve and simulate ----------------------------------------------------------------------

def test_solve_still_sizes_its_trajectory(tmp_path, capsys):
    text = linear(4096, 1.0).replace('activation = "linear"\nK = 1\nM = 1',
                                     'activation = "erf"\nK = 2\nM = 2')
    # the level basis at 12 digits (the default route before basis "auto"): thousands of digits
    text = text.replace("[solve]\n", "[solve]\nbasis = \"levels\"\n")
    path = write_spec(tmp_path, text)
    dps = 12 + 10 + math.ceil(2.6 * 4096)
    one_line_error(*run_cli(["solve", path, "--json"], capsys), f"dps = {dps}",
                   "the trajectory needs about", "GiB")


@pytest.mark.parametrize("command", ["plateau", "asymptotic"])
def test_plateau_sized_by_its_route(tmp_path, capsys, command):
    """plateau / asymptotic run a fixed point and float64 modes, not the [solve] basis: they were
    sized (and refused) as a level-basis trajectory at thousands of digits."""
    text = "[data]\nL = 4096\nN = 4096\n[training]\neta = 0.5\n[solve]\nalpha_max = 1000\n"
    code, out, err, cpu = cpu_run([command, write_spec(tmp_path, text), "--json"], capsys)
    msg = one_line_error(code, out, err, f"{command} (fixed point and Jacobian over L levels) "
                                         f"would take about")
    assert "GiB" not in msg and cpu < 5


SIM = """
[data]
L = {L}
N = {N}
[training]
eta = 0.1
[solve]
alpha_max = {alpha}
n_points = 3
spacing = "linear"
[simulate]
{sim}
"""


def test_simulate_not_sized_as_an_ode_trajectory(tmp_path, capsys):
    """L = 4096 levels: the simulator stores three overlaps per point, not a level trajectory
    at 10672 digits (refused before)."""
    path = write_spec(tmp_path, SIM.format(L=4096, N=4096, alpha=0.01, sim="seeds = [0]"))
    code, out, err = run_cli(["simulate", path, "--json", "--no-progress"], capsys)
    assert code == 0, err
    assert len(json.loads(out)["eps_g"]) == 3


def test_simulate_holdout_capped_with_estimate(tmp_path, capsys):
    """eps_holdout = 1e9 ran (hung) for hours; refused before any work, with an estimate."""
    path = write_spec(tmp_path, SIM.format(L=2, N=8, alpha=10, sim="eps_holdout = 1000000000"))
    code, out, err, cpu = cpu_run(["simulate", path, "--json", "--no-progress"], capsys)
    one_line_error(code, out, err, "[simulate] eps_holdout = 1000000000", "at most 10000000",
                   "would take about")
    assert cpu < 5


def test_simulate_numpy_generator_estimate_includes_the_generator(tmp_path, capsys):
    """N = 2^20, alpha = 40 with numpy inputs: ~27 h measured, estimated 0.6 h before (the
    estimate assumed 2e7 steps/s per 1000 dimensions)."""
    path = write_spec(tmp_path, SIM.format(L=16, N=2 ** 20, alpha=40, sim='generator = "numpy"'))
    msg = one_line_error(*run_cli(["simulate", path, "--json", "--no-progress"], capsys),
                         "N = 1048576", "numpy inputs", "limit 24 h")
    hours = float(msg.split("about ")[1].split(" h")[0])
    assert 24 < hours < 200


def test_defaults_and_simulate_section_in_solve(tmp_path, capsys):
    """Every key but eta and alpha_max has a default (N and beta were required), and solve
    reads [simulate] (it refused the section), checking its keys."""
    from solvers.app.spec import load_spec
    text = "[training]\neta = 0.5\n[solve]\nalpha_max = 10\n[simulate]\nseeds = [0, 1]\n"
    spec = load_spec(write_spec(tmp_path, text))
    assert (spec.data.L, spec.data.beta, spec.data.N) == (16, Fraction(1), 1024)
    assert spec.extra["simulate"] == {"seeds": [0, 1]}
    text = ('[data]\nL = 2\n[training]\neta = 0.5\n[solve]\nalpha_max = 10\nn_points = 3\n'
            'basis = "modes"\ndigits = 6\n[simulate]\nseeds = [0]\neps_holdout = 10\n')
    code, out, err = run_cli(["solve", write_spec(tmp_path, text, "s.toml"), "--json"], capsys)
    assert code == 0, err
    bad = text.replace("eps_holdout", "eps_holdot")
    one_line_error(*run_cli(["solve", write_spec(tmp_path, bad, "b.toml"), "--json"], capsys),
                   "[simulate] unknown key 'eps_holdot'")


# ---- bayes -----------------------------------------------------------------------------------

@pytest.mark.parametrize("text, fragments", [
    ("[bayse]\nd = 20\nn_over_d = [1]\n", ["unknown section [bayse]"]),
    ("[bayes]\nd = 20\nn_over_d = [1]\n[extra]\nx = 1\n", ["unknown section [extra]"]),
    ("", ["missing section [bayes]"]),
    ("[bayes]\nhermite = [1e-300]\nd = 20\nn_over_d = [1]\n", ["[bayes] hermite[0] = 1e-300",
                                                                 "out of range"]),
    ("[bayes]\nhermite = [1]\nhermite_start = 1000000000\nn_over_d = [1]\n",
     ["hermite_start = 1000000000", "<= 64"]),
    ('[bayes]\nactivation = "erf3"\nhermite = [1]\nn_over_d = [1]\n',
     ["either activation or hermite"]),
    ('[bayes]\ngamma = "1e9999"\nn_over_d = [1]\n', ["[bayes] gamma = 1e+9999", "out of range"]),
    ("[bayes]\nd = 100000000000\nn_over_d = [1]\n", ["features: at most"]),
    ("[bayes]\nbeta = 50\nd = 10000\nn_over_d = [1]\n", ["beta = 50 with k = 10000", "10^250"]),
], ids=["misspelt", "extra-section", "empty", "hermite-tiny", "hermite-start", "both-activations",
        "huge-exponent", "huge-d", "readouts-underflow"])
def test_bayes_bad_input(tmp_path, capsys, text, fragments):
    path = write_spec(tmp_path, text)
    code, out, err, cpu = cpu_run(["bayes", path, "--json"], capsys)
    one_line_error(code, out, err, *fragments)
    assert cpu < 5


@pytest.mark.parametrize("beta", ["0.5000000001", "0.499", "100", "1e-90"])
def test_bayes_limit_beta_outside_its_forms(tmp_path, capsys, beta):
    """0.5000000001 printed NaN, 100 hung in SymPy, 1e-90 overflowed (internal error)."""
    path = write_spec(tmp_path, f'[bayes]\nbeta = "{beta}"\nalpha = [1]\n')
    code, out, err, cpu = cpu_run(["bayes", "limit", path, "--json"], capsys)
    one_line_error(code, out, err, "[bayes] beta")
    assert cpu < 5


def test_bayes_limit_kc_at_d_never_above_k(tmp_path, capsys):
    """k_c ~ kbar d^(1/(2 beta)) is a d -> infinity form: at d = 10 it exceeded k = 10."""
    path = write_spec(tmp_path, "[bayes]\nd = 10\nbeta = 0.6\nalpha = [0.01, 100]\n")
    code, out, err = run_cli(["bayes", "limit", path, "--json"], capsys)
    assert code == 0, err
    res = json.loads(out)
    kbar = res["kc_bar"][1]
    assert kbar * 10 ** res["kc_exponent"] > 10           # the form alone would say > k
    assert res["kc_at_d"][1] is None and res["eps_at_d"][1] is None and "at_d_note" in res
    assert 0 <= res["kc_at_d"][0] <= 10


# ---- kernel ----------------------------------------------------------------------------------

def test_kernel_levels_spectrum_without_sympy_matches_exact():
    """[data] L = N = 1e5 hung in the exact SymPy spectrum; the mpmath spectrum is the same."""
    import mpmath
    from solvers.app.cli.kernel import _levels_spectrum
    from solvers.theory.kernel import spectrum as S
    for beta in (Fraction(1), Fraction(1, 2)):
        ref, new = S.levels(32, beta, 64), _levels_spectrum(32, beta, 64)
        assert list(new.mult) == list(ref.mult)
        # float64: both correctly rounded from >= 20 digits: equal, or 1 ulp apart after a
        # double rounding of the reference (20 digits, then float)
        assert max(abs(a - b) / a for a, b in zip(ref.lam, new.lam, strict=True)) <= 2.3e-16
        with mpmath.workdps(50):
            r, n = ref.mp_values()[0], new.mp_values()[0]
            assert max(abs(a - b) / a for a, b in zip(r, n, strict=True)) < mpmath.mpf(10) ** -45


def test_kernel_data_at_large_L_runs(tmp_path, capsys):
    path = write_spec(tmp_path, '[kernel]\nP = [10, 1000]\nmethods = ["eig"]\n'
                                '[data]\nL = 100000\nN = 100000\nbeta = 1\n')
    code, out, err, cpu = cpu_run(["kernel", path, "--json"], capsys)
    assert code == 0 and cpu < 30, (err, cpu)
    assert json.loads(out)["meta"]["spectrum"]["modes"] == 100000


# the kernel guide's example in full
README_KERNEL = KERNEL + "learnability = false\n" + toml_spec(mc=dict(trials=32, seed=0))


def test_kernel_accepts_the_readme_file_with_mc(tmp_path, capsys):
    code, out, err = run_cli(["kernel", write_spec(tmp_path, README_KERNEL), "--json"], capsys)
    assert code == 0, err
    assert set(json.loads(out)["eps_g"]) == {"eig", "ek", "rg_ek", "rg_gda"}


@pytest.mark.parametrize("mc, fragments", [
    ("trials = 100000", ["[mc] trials = 100000", "of Monte Carlo", "limit 24 h"]),
    ("trials = 100000000", ["[mc] trials = 100000000", "<= 1000000"]),
], ids=["estimate", "cap"])
def test_kernel_mc_sized_before_any_work(tmp_path, capsys, mc, fragments):
    text = "[kernel]\na = 2\nM = 20000\nP = [2000]\nridge = 0.01\n[mc]\n" + mc + "\n"
    code, out, err, cpu = cpu_run(["kernel-mc", write_spec(tmp_path, text), "--json"], capsys)
    one_line_error(code, out, err, *fragments)
    assert cpu < 5


def test_kernel_mc_estimate_is_honest():
    """The Monte-Carlo estimate against a measured run (same machine, same process): within a
    factor 20 either way.  The estimate is the time on an idle machine, i.e. the CPU time of
    the run (measured so: a loaded machine stretches the wall time, not the CPU time; the
    factor covers a second BLAS thread and another CPU model)."""
    from solvers.app.cli.kernel import mc_seconds
    from solvers.theory.kernel import kernel_mc, power_law
    spec = power_law(2, 3000, 2)
    started = time.process_time()
    kernel_mc(spec, [200, 400], ridge=0.01, noise=0.0, trials=4)
    took = time.process_time() - started
    est = mc_seconds(spec, [200, 400], 4)
    assert est / 20 < took < est * 20, (est, took)


def test_kernel_equivalent_kernel_at_ridge_zero(tmp_path, capsys):
    """ek at ridge 0 printed eps_g = 0 at every P below the number of modes (kappa_S = 0/P);
    so did rg_ek when its cut decimated no mode: those entries are null, with a note."""
    text = "[kernel]\na = 2\nM = 100\nP = [10, 20, 100]\n"
    code, out, err = run_cli(["kernel", write_spec(tmp_path, text), "--json"], capsys)
    assert code == 0, err
    res = json.loads(out)
    assert res["eps_g"]["ek"][:2] == [None, None] and "ek at P = 10" in res["meta"]["null_entries"]
    assert res["eps_g"]["ek"][2] == 0.0            # P = rank, noiseless: interpolates exactly
    assert all(v > 0 for v in res["eps_g"]["eig"][:2])
    tiny = text + "rg_cut = 1e-90\n"
    code, out, err = run_cli(["kernel", write_spec(tmp_path, tiny, "c.toml"), "--json"], capsys)
    assert code == 0, err
    res = json.loads(out)
    assert res["eps_g"]["rg_ek"][:2] == [None, None]
    assert "rg_ek at P = 20" in res["meta"]["null_entries"]


def test_kernel_learnability_output_capped(tmp_path, capsys):
    text = "[kernel]\na = 2\nM = 50000000\nP = [10]\nlearnability = true\n"
    code, out, err, cpu = cpu_run(["kernel", write_spec(tmp_path, text), "--json"], capsys)
    one_line_error(code, out, err, "learnability = true", "50000000 numbers in the JSON")
    assert cpu < 5


@pytest.mark.parametrize("line, fragments", [
    ('ridge = "1e-9999"', ["[kernel] ridge = 1e-9999", "out of range"]),
    ('noise = "-1e-9999"', ["[kernel] noise = -1e-9999", ">= 0"]),
    ('ridge = "1e9999"', ["[kernel] ridge = 1e+9999", "out of range"]),
    ("a = 1e300", ["[kernel] a = 1e+300", "-1000 .. 1000"]),
    ("P = []", ["[kernel] P = [] must not be empty"]),
], ids=["ridge-tiny-exponent", "noise-exponent", "ridge-huge-exponent", "a-huge", "P-empty"])
def test_kernel_bad_numbers(tmp_path, capsys, line, fragments):
    text = "[kernel]\na = 2\nP = [10]\n" + line + "\n"
    text = text.replace("a = 2\n", "") if line.startswith("a =") else text
    text = text.replace("P = [10]\n", "") if line.startswith("P =") else text
    one_line_error(*run_cli(["kernel", write_spec(tmp_path, text), "--json"], capsys),
                   *fragments)


# ---- figures and the JSON emitter ------------------------------------------------------------

def test_figures_empty_fig_is_refused(capsys):
    """--fig '' ran every figure (hours)."""
    one_line_error(*run_cli(["figures", "--fig", ""], capsys), "--fig names no figure")


def test_emit_refuses_non_finite_numbers():
    from types import SimpleNamespace
    from solvers.app.cli.common import CliError, emit
    args = SimpleNamespace(json=True, output=None)
    for bad in (float("nan"), float("inf")):
        with pytest.raises(CliError, match=r"not finite at 'meta\.x\[1\]'"):
            emit({"a": [1.0], "meta": {"x": [0.5, bad]}}, args)
