"""The committee-machine family's spec keys ([model] and [training]) and their path into
``scaling-odes simulate``: each bad value is one line naming the key; a family spec runs on the
family's loop and reports it; a spec without the keys is today's model."""
from __future__ import annotations

import json
from fractions import Fraction

import pytest

from solvers.app.cli import main as cli
from solvers.app.simulation import family_kwargs
from solvers.app.spec import SpecError, parse_spec, spec_to_dict

pytestmark = [pytest.mark.contract]

BASE = {"model": {"K": 2, "M": 2}, "data": {"L": 2, "N": 16},
        "training": {"eta": 0.1}, "solve": {"alpha_max": 1, "n_points": 3,
                                             "spacing": "linear"}}


def _spec(model=None, training=None):
    d = json.loads(json.dumps(BASE))
    d["model"].update(model or {})
    d["training"].update(training or {})
    return parse_spec(d, sizing=None)


@pytest.mark.parametrize("model, training, words", [
    ({"activation": "0.5*x"}, {}, ["[model] activation", "decimal literal 0.5"]),
    ({"student_activation": "tanh"}, {}, ["[model] student_activation", "'tanh'"]),
    ({"normalisation": "1/M"}, {}, ["[model] normalisation", '"1/K"']),
    ({"student_readout": [1]}, {}, ["[model] student_readout", "K = 2"]),
    ({"normalisation": "none", "teacher_readout": [1, 1]}, {}, ["teacher_readout", '"paper"']),
    ({"readout": "trained"}, {}, ["eta_readout", "trained"]),
    ({}, {"eta_readout": 1}, ["[training] eta_readout", "only used with"]),
    ({"readout": "trained"}, {"eta_readout": 0}, ["[training] eta_readout = 0", "> 0"]),
    ({}, {"noise": -1}, ["[training] noise = -1", ">= 0"]),
    ({}, {"weight_decay": "-0.1"}, ["[training] weight_decay", ">= 0"]),
    ({}, {"batch_size": 0}, ["[training] batch_size = 0", ">= 1"]),
    ({}, {"batch_size": 2.0}, ["[training] batch_size", "integer"]),
    ({}, {"batch_size": 10**7}, ["[training] batch_size", "<= 1000000"]),
    ({}, {"schedule": "power"}, ["[training] schedule", "table"]),
    ({}, {"schedule": {"kind": "exp"}}, ["[training] schedule kind", '"power"']),
    ({}, {"schedule": {"kind": "power", "alpha0": 0, "p": 1}}, ["schedule alpha0 = 0", "> 0"]),
    ({}, {"schedule": {"kind": "power", "alpha0": 1, "p": -1}}, ["schedule p = -1", ">= 0"]),
    ({}, {"schedule": {"kind": "power", "alpha0": 1}}, ["needs key 'p'"]),
    ({}, {"schedule": {"kind": "steps", "alphas": [2, 1], "etas": [1, 1]}}, ["increasing"]),
    ({}, {"schedule": {"kind": "steps", "alphas": [1], "etas": [-1]}}, ["etas[0] = -1"]),
    ({}, {"schedule": {"kind": "steps", "alphas": [1, 2], "etas": [1]}}, ["one eta per"]),
    ({}, {"schedule": {"kind": "constant", "p": 1}}, ["unknown key 'p'"]),
    ({}, {"noise": "1e400"}, ["[training] noise"]),
])
def test_bad_family_keys_are_one_line(model, training, words):
    with pytest.raises(SpecError) as e:
        _spec(model, training)
    msg = str(e.value)
    assert "\n" not in msg and all(w in msg for w in words), msg


def test_family_keys_round_trip_and_reach_the_simulator():
    s = _spec({"student_activation": "relu", "teacher_readout": [1, "0.5"],
               "readout": "trained"},
              {"eta_readout": "0.3", "noise": 0.2, "batch_size": 4, "weight_decay": "0.01",
               "schedule": {"kind": "steps", "alphas": ["0.5", 1], "etas": ["0.1", 0.05]}})
    assert parse_spec(spec_to_dict(s), sizing=None) == s
    kw = family_kwargs(s)
    assert kw["schedule"] == {"kind": "steps", "alphas": [Fraction(1, 2), 1],
                              "etas": [Fraction(1, 10), Fraction(1, 20)]}
    assert kw["noise"] == Fraction(1, 5) and kw["eta_readout"] == Fraction(3, 10)
    assert family_kwargs(_spec()) == {}          # today's model: nothing new passed
    assert spec_to_dict(_spec())["training"].keys() == {"eta", "order", "sigma_J", "seed",
                                                        "init"}


def test_simulate_command_runs_a_family_spec(tmp_path, capsys):
    p = tmp_path / "s.toml"
    p.write_text("""
[model]
student_activation = "relu"
teacher_activation = "x**3 - 3*x"
normalisation = "1/K"
readout = "trained"
[data]
L = 2
N = 16
[training]
eta = 0.1
eta_readout = 0.2
noise = 0.1
batch_size = 2
[solve]
alpha_max = 1
n_points = 2
spacing = "linear"
""")
    assert cli.main(["simulate", str(p), "--json", "--no-progress"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["meta"]["kernel"] == "numba-family"
    assert out["meta"]["model"]["teacher_activation"] == "x**3 - 3*x"
    assert out["meta"]["model"]["batch_size"] == 2 and len(out["v"]) == 2
    # sized with the batch: a run past the time limit is refused before any work
    big = p.read_text().replace("batch_size = 2", "batch_size = 1000000") \
        .replace("alpha_max = 1", "alpha_max = 1000000")
    p.write_text(big)
    assert cli.main(["simulate", str(p), "--json", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "1000000 samples per step" in err, err


def test_informed_init_in_solve_simulate_and_linear(tmp_path, capsys):
    import numpy as np
    from solvers.app.solve import problem_of
    from solvers.core.problem import random_init
    s = _spec(training={"init": "informed"})
    assert parse_spec(spec_to_dict(s), sizing=None) == s
    pr = problem_of(s)
    ref = random_init(2, 2, 16, pr.spectrum, s.training.sigma_J, 0, False, informed=True)
    for k in "RQT":
        np.testing.assert_array_equal(np.asarray(getattr(pr.init, k), dtype=float),
                                      np.asarray(getattr(ref, k), dtype=float))
    p = tmp_path / "s.toml"
    p.write_text('[model]\nactivation = "linear"\nK = 1\nM = 1\n[data]\nL = 2\nN = 16\n'
                 '[training]\neta = 0.1\ninit = "informed"\n[solve]\nalpha_max = 1\n'
                 'n_points = 2\nspacing = "linear"\n')
    assert cli.main(["simulate", str(p), "--json", "--no-progress"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["meta"]["init"] == "informed" and out["eps_g"][0] < 1e-15
    assert cli.main(["linear", "curve", str(p), "--json"]) == 2
    err = capsys.readouterr().err
    assert 'init = "informed" is not supported by the linear' in err


RUN_SPEC = ('[model]\nK = 2\nM = 2\n[data]\nL = 2\nN = 16\n[training]\neta = 0.5\nseed = 3\n'
            '{init}[solve]\nalpha_max = 2\nn_points = 3\nspacing = "linear"\n')


def test_init_from_a_simulation_run(tmp_path, capsys):
    """init = {from = "run.json"} starts the ODE at the overlaps a simulate run wrote: the
    random start of that run's seed, exactly (the JSON holds exact decimals)."""
    import numpy as np
    from solvers.app.solve import problem_of
    from solvers.app.spec import load_spec
    (tmp_path / "a.toml").write_text(RUN_SPEC.format(init=""))
    assert cli.main(["simulate", str(tmp_path / "a.toml"), "--json", "--no-progress"]) == 0
    (tmp_path / "run.json").write_text(capsys.readouterr().out)
    (tmp_path / "b.toml").write_text(RUN_SPEC.format(init='init = {from = "run.json"}\n'))
    a, b = (problem_of(load_spec(tmp_path / f, sizing=None)) for f in ("a.toml", "b.toml"))
    assert b.init.basis == "modes"
    for k in "RQT":
        np.testing.assert_array_equal(np.asarray(getattr(a.init, k), dtype=object),
                                      np.asarray(getattr(b.init, k), dtype=object))
    # the simulator starts from weights with those overlaps
    assert cli.main(["simulate", str(tmp_path / "b.toml"), "--json", "--no-progress"]) == 0
    out = json.loads(capsys.readouterr().out)
    run = json.loads((tmp_path / "run.json").read_text())
    assert out["meta"]["init"] == "modes"
    for k in "RQT":
        np.testing.assert_allclose(np.array(out["init"]["modes"][k], dtype=float),
                                   np.array(run["init"]["modes"][k], dtype=float),
                                   rtol=0, atol=1e-14)
    # errors: one line each
    for init, words in (('init = {from = "nope.json"}', "no such file"),
                        ('init = {from = "a.toml"}', "is not JSON"),
                        ('init = {from = "empty.json"}', "no init.modes"),
                        ('init = {path = "run.json"}', 'table {from = "run.json"}')):
        (tmp_path / "empty.json").write_text("{}")
        (tmp_path / "c.toml").write_text(RUN_SPEC.format(init=init + "\n"))
        with pytest.raises(SpecError) as e:
            load_spec(tmp_path / "c.toml", sizing=None)
        assert words in str(e.value) and "\n" not in str(e.value), str(e.value)
    # the run's K must be the spec's
    (tmp_path / "d.toml").write_text(RUN_SPEC.format(init='init = {from = "run.json"}\n')
                                     .replace("K = 2", "K = 3"))
    with pytest.raises(SpecError, match="wrong shape"):
        load_spec(tmp_path / "d.toml", sizing=None)


def test_solve_runs_a_trained_readout_and_refuses_a_route_without_it(tmp_path, capsys):
    p = tmp_path / "n.toml"
    p.write_text(RUN_SPEC.format(init='eta_readout = 0.1\n')
                 .replace("M = 2\n", 'M = 2\nreadout = "trained"\n', 1))
    assert cli.main(["solve", str(p), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["v"]) == len(doc["alpha"]) and doc["meta"]["readout"] == "trained"
    # the linearisations do not carry v: one line, exit 2
    assert cli.main(["plateau", str(p)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "trained" in err, err
