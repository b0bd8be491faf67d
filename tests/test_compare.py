"""``scaling-odes compare`` / ``solvers.compare``: theory and simulation of one spec, and a
deviation measure that passes the right theory and catches a wrong one.

Setting: erf, K = M = 2, L = 4, β = 1, η = 0.5, σ_J = 0.1, α ≤ 10 (well before the plateau
escape, whose exponential sensitivity would make the finite-size spread O(1)), theory in the
modes basis in float64 (its error, ~1e-8, is negligible next to N^-1/2).

Why 3/√N is the right threshold for the relative RMS deviation (solvers/app/compare.py):
measured rms_deviation·√N over 12 seeds each (each seed against its own realisation's ODE):
mean 0.64 / 0.64 / 0.64 / 0.57 and largest 1.10 / 1.24 / 0.85 / 0.83 at N = 128 / 256 / 512 /
1024 — constant in N, as an N^-1/2 law should be, and the largest of 48 runs is 2.4x below the
threshold.  A theory with η halved (0.25) against the η = 0.5 simulation: rms·√N ≥ 7.04 over 6
seeds at N = 512 (mean 7.47), 2.3x above it; at N = 256 the smallest was 4.92.
"""
import json

import numpy as np
import pytest

import solvers
from solvers.app.compare import deviation
from cli_support import run_cli, write_spec
from specs import erf_K2

pytestmark = [pytest.mark.simulation, pytest.mark.contract]  # oracle (tests/conftest.py)


def spec(N, seeds=(0,), eta=0.5, n_points=21):
    return {"model": {"activation": "erf", "K": 2, "M": 2},
            "data": {"L": 4, "beta": 1.0, "N": N},
            "training": {"eta": eta, "sigma_J": 0.1, "seed": seeds[0]},
            "solve": {"alpha_max": 10, "n_points": n_points, "spacing": "linear",
                      "basis": "modes", "dps": "float64", "digits": 8},
            "simulate": {"seeds": list(seeds), "n_jobs": 1}}


@pytest.fixture(scope="module")
def right():
    """N = 512, two seeds (each against its own realisation's theory)."""
    return solvers.compare(spec(512, seeds=(0, 1)))


def test_right_theory_is_within_the_finite_size_scale(right):
    N = 512
    assert right.finite_size_scale == pytest.approx(3 / np.sqrt(N))
    # measured rms*sqrt(N) <= 1.24 in 48 runs (module docstring): 3 leaves 2.4x margin
    assert right.within and right.rms_deviation < right.finite_size_scale, right.rms_deviation
    assert len(right.rms_deviation_per_seed) == 2
    # and the comparison is not vacuous: the simulation does differ from the theory
    assert right.rms_deviation > 0.01 / np.sqrt(N)


def test_wrong_theory_is_detected(right):
    """The simulation at η = 0.5 against the ODEs at η = 0.25 (same realisations, same α):
    measured rms*sqrt(N) >= 7.04 at N = 512, 2.3x above the threshold 3."""
    sim = right.simulation
    wrong = []
    for seed in right.seeds:
        s = spec(512, seeds=(seed,), eta=0.25)
        s["solve"] = {"alphas": right.alpha.tolist(), "basis": "modes", "dps": "float64",
                      "digits": 8}
        wrong.append(solvers.solve(s).eps_g)
    d = deviation(wrong, sim.eps_g_runs, 512)
    assert not d["within"] and d["rms_deviation"] > d["finite_size_scale"], d


def test_same_realisation_and_same_alpha(right):
    """The theory starts where the simulation starts (the same order parameters through two
    codes: generated ε_g vs the simulator's), and is reported at the simulator's α."""
    th, sim = right.eps_g_theory_runs, right.simulation
    assert right.alpha.tolist() == sim.alpha.tolist() == right.theory.alpha.tolist()
    np.testing.assert_allclose(th[:, 0], sim.eps_g_runs[:, 0], rtol=1e-13)
    # two seeds are two realisations: their initial eps_g differ (by O(N^-1/2))
    assert th[0, 0] != th[1, 0]


def test_simulated_alpha_need_not_be_the_requested_grid():
    """N = 64, 7 points on [0, 10]: α N is not an integer; the theory is solved at
    round(α N) / N, where the simulator recorded."""
    c = solvers.compare(spec(64, n_points=7))
    expected = np.unique(np.rint(np.linspace(0, 10, 7) * 64)) / 64
    np.testing.assert_array_equal(c.alpha, expected)
    np.testing.assert_array_equal(c.theory.alpha, expected)


def test_cli_writes_json_and_plot(tmp_path, capsys):
    text = erf_K2(4, 256) + ("[training]\neta = 0.5\nsigma_J = 0.1\nseed = 2\n"
                             "[solve]\nalpha_max = 10\nn_points = 11\nspacing = \"linear\"\n"
                             "basis = \"modes\"\ndps = \"float64\"\ndigits = 8\n"
                             "[simulate]\nseeds = [2, 5]\nn_jobs = 1\n")
    path = write_spec(tmp_path, text)
    out, png = tmp_path / "c.json", tmp_path / "c.png"
    code, _, err = run_cli(["compare", path, "-o", out, "--plot", png, "--no-progress"], capsys)
    assert code == 0, err
    res = json.loads(out.read_text())
    for key in ("alpha", "theory", "simulation", "theory_ensemble", "rms_deviation",
                "rms_deviation_per_seed", "rms_absolute", "finite_size_scale", "within",
                "meta"):
        assert key in res, key
    assert res["meta"]["seeds"] == [2, 5] and res["finite_size_scale"] == 3 / 16
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    # the API gives the same numbers (the simulation is reproducible bit for bit)
    api = solvers.compare(path)
    assert api.rms_deviation == res["rms_deviation"]
    assert api.to_dict()["theory"]["eps_g"] == res["theory"]["eps_g"]


def test_cli_refuses_what_it_cannot_compare(tmp_path, capsys):
    text = erf_K2(4, 256) + ("[training]\neta = 0.5\ninit = \"expected\"\n"
                             "[solve]\nalpha_max = 10\n")
    code, _, err = run_cli(["compare", write_spec(tmp_path, text)], capsys)
    assert code == 2 and "init = \"random\"" in err and err.count("\n") == 1
    with pytest.raises(solvers.SpecError, match="init = \"random\""):
        solvers.compare(write_spec(tmp_path, text))


def test_plot_and_xarray(right):
    from matplotlib.figure import Figure
    ax = Figure().add_subplot()
    assert right.plot(ax=ax) is ax
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("theory" in x for x in labels) and any("std" in x for x in labels)
    ds = right.to_xarray()
    assert ds["eps_g_sim"].shape == ds["eps_g_theory"].shape == (2, right.alpha.size)
    assert ds.attrs["within"] == 1
