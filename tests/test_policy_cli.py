"""Failures before work: an unwritable output path, a precision float64 cannot give."""
import time

import pytest

from cli_support import run_cli, write_spec
from specs import LINEAR_L16, erf_spec

pytestmark = [pytest.mark.contract]  # oracle (tests/conftest.py)

SPEC = erf_spec(eta=0.1, sigma_J=0.01, seed=1, alpha_max=200, basis='"modes"', dps='"auto"',
                digits=6)


def _nowhere(tmp_path):
    return tmp_path / "no" / "such" / "dir" / "out.json"


@pytest.mark.parametrize("argv", [["solve", "{spec}"], ["simulate", "{spec}", "--no-progress"],
                                  ["plateau", "{spec}"], ["asymptotic", "{spec}"],
                                  ["linear", "curve", "{lin}"]])
def test_an_unwritable_output_fails_before_any_work(tmp_path, capsys, monkeypatch, argv):
    spec = write_spec(tmp_path, SPEC)
    lin = write_spec(tmp_path, LINEAR_L16 + "[training]\neta = 0.1\n[solve]\nalpha_max = 100\n",
                     "lin.toml")
    args = [a.format(spec=spec, lin=lin) for a in argv]
    # nothing may be computed: the integrators and the simulator would raise if reached
    import solvers.hierarchy.odes as odes
    import solvers.sim.simulate as sim

    def forbidden(*a, **k):
        raise AssertionError("work started before the output path was checked")
    monkeypatch.setattr(odes, "integrate_problem", forbidden)
    monkeypatch.setattr(sim, "simulate", forbidden)
    started = time.process_time()
    code, out, err = run_cli(args + ["-o", _nowhere(tmp_path)], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and out == "", err
    assert len(lines) == 1 and "does not exist" in lines[0] and "-o" in lines[0], err
    # CPU time, in process, so that a loaded machine cannot fail it
    assert time.process_time() - started < 5


def test_an_output_that_is_a_directory_or_read_only_is_refused(tmp_path, capsys):
    spec = write_spec(tmp_path, SPEC)
    code, _, err = run_cli(["solve", spec, "-o", tmp_path], capsys)
    assert code == 2 and "is a directory" in err
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        import os
        if os.access(ro, os.W_OK) and os.geteuid() == 0:
            # root writes anyway: the probe file is created, so the output is writable
            code, _, err = run_cli(["solve", spec, "-o", ro / "out.json"], capsys)
            assert code == 0, err
        else:
            code, _, err = run_cli(["solve", spec, "-o", ro / "out.json"], capsys)
            assert code == 2 and "cannot write" in err
    finally:
        ro.chmod(0o700)


def test_demo_out_that_is_a_file_is_refused(tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("x")
    code, _, err = run_cli(["demo", "--out", f], capsys)
    assert code == 2 and "not a directory" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("basis", ["modes", "levels"])
def test_float64_cannot_give_20_digits(tmp_path, capsys, monkeypatch, basis):
    import solvers.hierarchy.odes as odes
    monkeypatch.setattr(odes, "integrate_problem",
                        lambda *a, **k: (_ for _ in ()).throw(AssertionError("ran")))
    text = erf_spec(eta=0.1, sigma_J=0.01, seed=1, alpha_max=200, basis=f'"{basis}"',
                    dps='"float64"', digits=20)
    code, out, err = run_cli(["solve", write_spec(tmp_path, text), "--json"], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and out == ""
    assert len(lines) == 1 and "float64 cannot give 20 digits" in lines[0], err


def test_float64_without_digits_defaults_to_what_float64_verifies():
    """dps = "float64" alone is a valid request: its default digits is the float64 limit (the
    default of arbitrary precision could be refused)."""
    from solvers.app.spec import parse_spec
    from solvers.hierarchy.precision import FLOAT64_FIXED_MAX_DIGITS
    base = {"model": {"activation": "erf", "K": 2, "M": 2}, "data": {"L": 2, "N": 64},
            "training": {"eta": 0.5}}
    spec = parse_spec({**base, "solve": {"alpha_max": 5, "basis": "modes", "dps": "float64"}})
    assert spec.solve.digits == FLOAT64_FIXED_MAX_DIGITS
    # otherwise the default (DEFAULT_DIGITS), answered by the verified float64 modes pair
    from solvers.app.spec import DEFAULT_DIGITS
    from solvers.hierarchy.precision import FLOAT64_MAX_DIGITS
    assert parse_spec({**base, "solve": {"alpha_max": 5}}).solve.digits == DEFAULT_DIGITS
    assert DEFAULT_DIGITS <= FLOAT64_MAX_DIGITS
    explicit = {"alpha_max": 5, "basis": "modes", "dps": "float64", "digits": 7}
    assert parse_spec({**base, "solve": explicit}).solve.digits == 7
