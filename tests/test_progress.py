"""Progress: one implementation; plain lines in a log (integers, labelled, no carriage
returns), labelled phases for every run of the policy, per-curve demo, labelled seeds."""
import io
import re

import pytest

from cli_support import run_cli, write_spec
from specs import erf_spec
from solvers.core import progress as pg

pytestmark = [pytest.mark.contract]  # oracle (tests/conftest.py)

LINE = re.compile(r"^(?P<title>.+): (?P<unit>\w+) (?P<n>\d+)/(?P<total>\d+) \((?P<pct>\d+) %\)")


def _lines(text):
    assert "\r" not in text
    # (a command's heartbeat, "scaling-odes solve: working, 12 s so far", on a slow machine)
    rows = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("scaling-odes ")]
    return rows, [LINE.match(r) for r in rows]


def test_plain_lines_are_integers_labelled_and_about_one_per_tenth():
    out = io.StringIO()
    p = pg.Progress("solve", stream=out, mode="plain", delay=0)
    with p.phase("run 1/2 at 190 digits", total=2000.0) as tick:
        for k in range(1, 4001):
            tick(k * 0.4999)                      # floats like 1173.2039475428865
    rows, matches = _lines(out.getvalue())
    assert all(matches), rows
    assert all(m["title"] == "solve: run 1/2 at 190 digits" and m["unit"] == "alpha"
               for m in matches)
    assert all(m["total"] == "2000" for m in matches)
    assert 9 <= len(rows) <= 11                   # one per ~10 %, plus the closing line
    assert "done in" in rows[-1] and matches[-1]["n"] == "2000"


def test_a_stopped_phase_says_so_and_short_phases_stay_silent():
    out = io.StringIO()
    p = pg.Progress("solve", stream=out, mode="plain", delay=0)
    with pytest.raises(RuntimeError):
        with p.phase("run 2/2 (check)", 100) as tick:
            tick(55.5)                            # a line at 50 %: the phase was shown
            raise RuntimeError("boom")
    assert "alpha 55/100 (55 %) stopped" in out.getvalue()
    quiet = io.StringIO()
    with pg.Progress("solve", stream=quiet, mode="plain", delay=60).phase("x", 10) as tick:
        tick(10)
    assert quiet.getvalue() == ""


def test_the_form_follows_the_stream(monkeypatch):
    monkeypatch.delenv(pg.ENV, raising=False)
    assert pg.choose_mode(io.StringIO()) == "plain"

    class Tty(io.StringIO):
        def isatty(self):
            return True
    assert pg.choose_mode(Tty()) == "tty"
    monkeypatch.setenv(pg.ENV, "off")
    assert pg.choose_mode(Tty()) == "off"
    bar = pg.Progress("solve", stream=Tty(), mode="tty", delay=0).phase("run 1/2", 10.0)
    bar(3.7)
    assert bar._bar.n == 3 and bar._bar.leave      # integer positions; kept when done
    bar.close(done=True)


def test_every_run_of_the_policy_is_a_labelled_phase(monkeypatch, tmp_path):
    from solvers.app.solve import solve_spec
    from solvers.app.spec import load_spec
    monkeypatch.setenv("SCALING_ODES_SERIAL", "1")      # both runs of the pair shown here
    text = erf_spec(eta=0.1, sigma_J=0.01, seed=1, alpha_max=200, basis='"modes"',
                    dps='"auto"', digits=6)
    out = io.StringIO()
    solve_spec(load_spec(write_spec(tmp_path, text)),
               progress=pg.Progress("solve", stream=out, mode="plain", delay=0))
    rows, matches = _lines(out.getvalue())
    assert all(matches), rows
    titles = [m["title"] for m in matches]
    assert any("run 1/2" in t for t in titles) and any("run 2/2 (check)" in t for t in titles)
    # each phase ends at its own total: the checking run is not frozen behind the first
    ends = [m for m in matches if "done in" in m.string]
    assert len(ends) >= 2 and all(m["n"] == m["total"] == "200" for m in ends)


def test_the_cli_writes_plain_progress_to_a_log(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv(pg.ENV, "plain")
    monkeypatch.setattr(pg, "PLAIN_DELAY", 0.0)
    text = erf_spec(eta=0.1, sigma_J=0.01, seed=1, alpha_max=200, basis='"modes"',
                    dps='"auto"', digits=6)
    code, out, err = run_cli(["solve", write_spec(tmp_path, text), "-o", tmp_path / "o.json"],
                             capsys)
    assert code == 0, err
    rows, matches = _lines(err)
    assert rows and all(matches), rows
    assert all(m["title"].startswith("solve: run") for m in matches)


def test_demo_progress_is_per_curve(tmp_path):
    from solvers.app.demo import run_demo
    out = io.StringIO()
    run_demo(tmp_path, alpha_max=100.0, n_points=11, Ls=(1, 4),
             progress=pg.Progress("Figure 1", stream=out, mode="plain", delay=0))
    rows, matches = _lines(out.getvalue())
    assert all(matches), rows
    assert {m["title"] for m in matches} == {"Figure 1: L = 1 (curve 1/2)",
                                             "Figure 1: L = 4 (curve 2/2)"}
    assert all(m["total"] == "100" for m in matches)


def test_several_seeds_are_labelled_seeds(monkeypatch, capsys):
    from solvers.sim.simulate import simulate_many
    monkeypatch.setenv(pg.ENV, "plain")
    monkeypatch.setattr(pg, "PLAIN_DELAY", 0.0)
    simulate_many([0, 1], n_jobs=1, activation="erf", K=1, M=1, N=64, L=4, beta=1.0, eta=0.1, sigma_J=0.01,
                  alphas=[0, 1, 2], progress=True)
    rows, matches = _lines(capsys.readouterr().err)
    assert rows and all(matches), rows
    assert all(m["title"] == "SGD: seeds" and m["unit"] == "seed" for m in matches)
    assert matches[-1]["n"] == matches[-1]["total"] == "2"
