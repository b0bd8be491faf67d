"""The default solve (no [solve] keys but the grid) takes the fast verified route: the modes basis
in float64, with at least the default digits verified, and those digits are right against an
independent route (the levels basis in arbitrary precision at 12 digits: another basis, another
integrator, another arithmetic)."""
import json

import numpy as np
import pytest

from cli_support import run_cli, write_spec
from specs import erf_K2

pytestmark = [pytest.mark.second_basis, pytest.mark.contract]  # oracle (tests/conftest.py)

GRID = "[training]\neta = 0.5\n[solve]\nalpha_max = 100\nn_points = 12\n"


def test_the_default_route_is_modes_float64_and_its_digits_hold(tmp_path, capsys):
    spec = write_spec(tmp_path, erf_K2(4, 64) + GRID)
    code, out, err = run_cli(["solve", spec, "--json"], capsys)
    assert code == 0, err
    fast = json.loads(out)
    meta = fast["meta"]
    assert meta["route"].startswith("modes/float64/") and meta["digits"] == 6
    assert meta["agreement_digits"] >= 6
    ref_spec = write_spec(tmp_path, erf_K2(4, 64) + GRID + 'basis = "levels"\ndps = "auto"\n'
                          "digits = 12\n", name="ref.toml")
    code, out, err = run_cli(["solve", ref_spec, "--json"], capsys)
    assert code == 0, err
    ref = json.loads(out)
    assert ref["meta"]["route"].startswith("levels/flint/")
    a, b = np.asarray(fast["eps_g"], float), np.asarray(ref["eps_g"], float)
    # the fast route's claim (docs/guide/reliability.md): |error| <= max(10^-digits |eps_g|,
    # eps_g_bound), digits = its agreement_digits (at least the 6 asked), the distance between
    # the two runs of its pair, an estimate of the error good to a factor of a few, hence one
    # digit of room; eps_g_bound is the absolute error float64 can resolve (100 roundings of
    # the O(T) terms whose difference eps_g is), below which the pair's agreement says nothing
    rel = min(10.0 ** -meta["agreement_digits"] * 10, 1e-6)
    assert meta["eps_g_bound"] > 0
    assert np.all(np.abs(a - b) <= np.maximum(rel * np.abs(b), meta["eps_g_bound"]))
