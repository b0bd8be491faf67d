"""Tests for solvers/app/spec.py: loading and validating the TOML spec file."""
from __future__ import annotations

from fractions import Fraction
from itertools import pairwise

import pytest

from solvers.app.spec import (DataSpec, InitSpec, ModelSpec, SolveSpec, Spec, SpecError,
                          TrainingSpec, load_spec, parse_spec, spec_to_dict)

pytestmark = [pytest.mark.contract]  # oracle (tests/conftest.py)

SECTIONS = {
    "model": "",
    "data": "L = 4\nbeta = 1.0\nN = 64",
    "training": "eta = 0.1",
    "solve": "alpha_max = 100",
}


def toml(extra: str = "", **sections) -> str:
    """Minimal valid spec text with some sections replaced (None drops a section)."""
    body = {**SECTIONS, **sections}
    text = "".join(f"[{name}]\n{content}\n\n" for name, content in body.items()
                   if content is not None)
    return text + extra


def write(tmp_path, text, name="spec.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def load_error(tmp_path, text, *fragments, extra_sections=()) -> str:
    path = write(tmp_path, text)
    with pytest.raises(SpecError) as info:
        load_spec(path, extra_sections=extra_sections)
    msg = str(info.value)
    assert "\n" not in msg
    assert msg.startswith(f"{path}: ")
    for fragment in fragments:
        assert fragment in msg, (fragment, msg)
    return msg


FULL = """
[model]
activation = "linear"
K = 3
M = 2

[data]
L = 2
beta = 0.5
N = 8
rotate = true

[training]
eta = 0.25
order = 1
sigma_J = "0.001"
seed = 7
init = "explicit"

[init.levels]
R = [[[0.1, 0], [0, 0], [0, 0]], [[0, 0], [0, "0.2"], [0, 0]]]
Q = [[[1, 0, 0], [0, 1, 0], [0, 0, 1]], [[1, 0.25, 0], [0.25, 1, 0], [0, 0, 1]]]
T = [[[1, 0], [0, 1]], [[2, 0], [0, 2]], [[2, 0.5], [0.5, 2]]]

[solve]
alpha_max = 50
alpha_min = 1
n_points = 5
spacing = "linear"
basis = "modes"
dps = 40
digits = 30

[custom]
runs = 3
"""


def test_full_spec(tmp_path):
    path = write(tmp_path, FULL)
    spec = load_spec(path, extra_sections=("custom",))
    assert spec.model == ModelSpec("linear", 3, 2)
    assert spec.data == DataSpec(L=2, beta=Fraction(1, 2), eigenvalues=None, N=8, rotate=True)
    assert spec.training == TrainingSpec(eta=Fraction(1, 4), order=1,
                                         sigma_J=Fraction(1, 1000), seed=7, init="explicit")
    assert spec.init.basis == "levels"
    assert spec.init.R[1][1][1] == Fraction(1, 5)
    assert spec.init.Q[1][0][1] == Fraction(1, 4)
    assert len(spec.init.T) == 3 and spec.init.T[2] == ((2, Fraction(1, 2)), (Fraction(1, 2), 2))
    assert spec.solve == SolveSpec(alphas=None, alpha_max=50.0, alpha_min=1.0, n_points=5,
                                   spacing="linear", basis="modes", dps=40, digits=30)
    assert spec.solve.alpha_grid() == [1.0, 13.25, 25.5, 37.75, 50.0]
    assert spec.extra == {"custom": {"runs": 3}}
    assert spec.path == str(path)


def test_minimal_spec_and_defaults(tmp_path):
    spec = load_spec(write(tmp_path, toml(model=None)))
    assert spec.model == ModelSpec("erf", 2, 2)
    assert spec.data == DataSpec(L=4, beta=Fraction(1), eigenvalues=None, N=64, rotate=False)
    assert spec.training == TrainingSpec(eta=Fraction(1, 10), order=2,
                                         sigma_J=Fraction(1, 100), seed=0, init="random")
    assert spec.init is None
    s = spec.solve
    assert (s.alphas, s.alpha_max, s.n_points, s.spacing) == (None, 100.0, 200, "log")
    assert s.alpha_min == pytest.approx(100 * 1e-4)
    # basis "auto" resolves to the modes basis (no [init.levels]); digits: DEFAULT_DIGITS
    assert (s.basis, s.dps, s.digits) == ("modes", "auto", 6)
    assert spec.extra == {}


@pytest.mark.parametrize("spacing, first", [("log", 1e-2), ("linear", 0.0)])
def test_alpha_grid(spacing, first):
    spec = parse_spec({**_doc(), "solve": {"alpha_max": 100, "spacing": spacing,
                                           "n_points": 50}})
    grid = spec.solve.alpha_grid()
    assert len(grid) == 50 and grid[-1] == 100.0
    assert grid[0] == pytest.approx(first)
    assert all(b > a for a, b in pairwise(grid))


def test_alphas_given():
    spec = parse_spec({**_doc(), "solve": {"alphas": [0, 1, 2.5, 10]}})
    assert spec.solve.alphas == (0.0, 1.0, 2.5, 10.0)
    assert spec.solve.alpha_grid() == [0.0, 1.0, 2.5, 10.0]
    assert spec.solve.alpha_max is None and spec.solve.n_points == 4


def _doc(**data):
    return {"data": {"L": 4, "beta": 1, "N": 64, **data}, "training": {"eta": 0.1},
            "solve": {"alpha_max": 100}}


@pytest.mark.parametrize("beta, expected", [
    (0.3, Fraction(3, 10)), (1, Fraction(1)), (-0.5, Fraction(-1, 2)), ("0.3", Fraction(3, 10)),
    (1e-3, Fraction(1, 1000)),
])
def test_exact_beta(beta, expected):
    spec = parse_spec(_doc(beta=beta))
    assert spec.data.beta == expected and isinstance(spec.data.beta, Fraction)


def test_exact_eigenvalues_from_strings(tmp_path):
    text = toml(data='eigenvalues = ["0.1", "1e-3", 0.3, 2]\nN = 8')
    data = load_spec(write(tmp_path, text)).data
    assert data.eigenvalues == (Fraction(1, 10), Fraction(1, 1000), Fraction(3, 10), 2)
    assert all(isinstance(x, Fraction) for x in data.eigenvalues)
    assert (data.L, data.beta, data.N) == (4, None, 8)


MODES = """
[init.modes]
R = [[[0, 0], [0, 0]], [[0, "0.5"], [0, 0]]]
Q = [[[1, 0], [0, 1]], [[1, 0.25], [0.25, 1]]]
T = [[[1, 0], [0, 1]], [[2, 0], [0, 2]]]
"""


def test_explicit_modes(tmp_path):
    text = toml(data="L = 2\nbeta = 1", training='eta = 0.1\ninit = "explicit"', extra=MODES)
    init = load_spec(write(tmp_path, text)).init
    assert init.basis == "modes"
    assert init.R[1][0][1] == Fraction(1, 2) and init.Q[1][1][0] == Fraction(1, 4)
    assert (len(init.R), len(init.Q), len(init.T)) == (2, 2, 2)


@pytest.mark.parametrize("init", ["expected", "random"])
def test_non_explicit_init_has_no_tables(init):
    doc = _doc()
    doc["training"]["init"] = init
    assert parse_spec(doc).init is None


@pytest.mark.parametrize("text", [FULL, toml(), toml(data='eigenvalues = ["0.5", 0.25]\nN = 4'),
                                  toml(solve="alphas = [0, 1.5, 3]\ndps = 'float64'")])
def test_round_trip(text, tmp_path):
    spec = load_spec(write(tmp_path, text), extra_sections=("custom",))
    again = parse_spec(spec_to_dict(spec), name=spec.path, extra_sections=("custom",))
    assert again == spec


def test_spec_to_dict_writes_decimal_strings():
    d = spec_to_dict(parse_spec(_doc(beta=0.3)))
    assert d["data"]["beta"] == "0.3" and d["training"]["eta"] == "0.1"


# --- errors -----------------------------------------------------------------------------

def test_missing_file(tmp_path):
    path = tmp_path / "nope.toml"
    with pytest.raises(SpecError, match="cannot read .*: no such file") as info:
        load_spec(path)
    assert str(info.value).startswith(str(path)) and "\n" not in str(info.value)


def test_bad_toml(tmp_path):
    msg = load_error(tmp_path, "[data\nL = 3\n", "invalid TOML")
    assert "line 1" in msg


ERRORS = [
    ("unknown key", toml(data="L = 4\nbeta = 1\nN = 64\nLx = 2"),
     ["[data]", "'Lx'", "allowed: L, beta, eigenvalues, N, rotate"]),
    ("unknown solve key", toml(solve="alpha_max = 10\ntol = 1e-3"), ["[solve]", "'tol'"]),
    ("unknown section", toml(extra="[custom]\nruns = 2\n"), ["unknown section [custom]"]),
    ("L does not divide N", toml(data="L = 3\nbeta = 1\nN = 1024"),
     ["[data] L = 3 does not divide N = 1024"]),
    ("beta <= -1", toml(data="L = 4\nbeta = -1\nN = 64"), ["[data] beta = -1", "> -1"]),
    ("eta <= 0", toml(training="eta = 0"), ["[training] eta = 0", "> 0"]),
    ("eta missing", toml(training="seed = 1"), ["[training]", "'eta'"]),
    ("K < 1", toml(model="K = 0"), ["[model] K = 0", ">= 1"]),
    ("K wrong type", toml(model='K = "2"'), ['[model] K = "2"', "wrong type", "integer"]),
    ("activation", toml(model='activation = "tanh"'), ['activation = "tanh"', "relu"]),
    ("order 3", toml(training="eta = 0.1\norder = 3"), ["[training] order = 3", "1, 2"]),
    ("seed < 0", toml(training="eta = 0.1\nseed = -1"), ["[training] seed = -1"]),
    ("dps too small for digits", toml(solve="alpha_max = 10\ndps = 20\ndigits = 18"),
     ["dps = 20 is too small for digits = 18 (need dps >= digits + 5)"]),
    ("dps below 15", toml(solve="alpha_max = 10\ndps = 10"), ["[solve] dps = 10", ">= 15"]),
    ("dps bad string", toml(solve='alpha_max = 10\ndps = "quad"'), ['dps = "quad"']),
    ("digits range", toml(solve="alpha_max = 10\ndigits = 0"), ["[solve] digits = 0"]),
    ("L and eigenvalues", toml(data="L = 2\nbeta = 1\neigenvalues = [1, 2]\nN = 64"),
     ["[data]", "eigenvalues", "not both"]),
    ("duplicate eigenvalues", toml(data='eigenvalues = [1, "0.5", 0.5]\nN = 6'),
     ["[data] eigenvalues[2] = 0.5 duplicates eigenvalues[1]"]),
    ("non-positive eigenvalue", toml(data="eigenvalues = [1, 0]\nN = 6"),
     ["[data] eigenvalues[1] = 0", "> 0"]),
    ("eigenvalue fraction string", toml(data='eigenvalues = ["1/3"]\nN = 6'),
     ['eigenvalues[0] = "1/3"', "decimal string"]),
    ("random init, default N not a multiple of L", toml(data="L = 3\nbeta = 1"),
     ["[data] N is not given", "default 1024", "L = 3"]),
    ("init tables with random init", toml(extra=MODES),
     ["[init.modes] given but training.init = 'random'"]),
    ("explicit init without tables", toml(training='eta = 0.1\ninit = "explicit"'),
     ["init.modes", "init.levels"]),
    ("both init tables", toml(data="L = 2\nbeta = 1", training='eta = 0.1\ninit = "explicit"',
                              extra=MODES + MODES.replace("modes", "levels")),
     ["[init]", "exactly one"]),
    ("non-symmetric Q", toml(data="L = 2\nbeta = 1", training='eta = 0.1\ninit = "explicit"',
                             extra=MODES.replace("[0.25, 1]]]", "[0.5, 1]]]")),
     ["[init.modes] Q[1] is not symmetric", "Q[1][1][0] = 0.5", "Q[1][0][1] = 0.25"]),
    ("wrong shape", toml(data="L = 3\nbeta = 1", training='eta = 0.1\ninit = "explicit"',
                         extra=MODES), ["[init.modes] R", "wrong shape", "length 3", "3x2x2"]),
    ("wrong levels shape", toml(data="L = 2\nbeta = 1",
                                training='eta = 0.1\ninit = "explicit"',
                                extra=MODES.replace("modes", "levels")),
     ["[init.levels] T", "length 3", "(L+1) x M x M"]),
    ("wrong inner shape", toml(data="L = 2\nbeta = 1", training='eta = 0.1\ninit = "explicit"',
                               extra=MODES.replace('[0, "0.5"]', '[0]')),
     ["[init.modes] R[1][0]", "length 2"]),
    ("unknown init key", toml(data="L = 2\nbeta = 1", training='eta = 0.1\ninit = "explicit"',
                              extra=MODES + "S = [1]\n"), ["[init.modes]", "'S'", "R, Q, T"]),
    ("missing init key", toml(data="L = 2\nbeta = 1", training='eta = 0.1\ninit = "explicit"',
                              extra=MODES.replace("T = ", "#")), ["[init.modes]", "'T'"]),
    ("alphas not increasing", toml(solve="alphas = [0, 5, 2]"),
     ["[solve] alphas[2] = 2.0 is not greater than alphas[1] = 5.0"]),
    ("alphas with alpha_max", toml(solve="alphas = [0, 5]\nalpha_max = 5"),
     ["[solve]", "alphas", "alpha_max"]),
    ("no alpha_max", toml(solve="n_points = 10"), ["[solve]", "'alpha_max'"]),
    ("alpha_min above alpha_max", toml(solve="alpha_max = 10\nalpha_min = 20"),
     ["[solve] alpha_min = 20.0"]),
    ("alpha_min zero for log", toml(solve="alpha_max = 10\nalpha_min = 0"),
     ["[solve] alpha_min = 0.0", "log"]),
    ("bad spacing", toml(solve='alpha_max = 10\nspacing = "cubic"'), ['spacing = "cubic"']),
    ("bad basis", toml(solve='alpha_max = 10\nbasis = "eigen"'), ['basis = "eigen"']),
    ("rotate wrong type", toml(data="L = 4\nbeta = 1\nN = 64\nrotate = 1"),
     ["[data] rotate = 1", "boolean"]),
    ("section not a table", "data = 3\n" + toml(data=None), ["[data]", "table"]),
]


@pytest.mark.parametrize("text, fragments", [c[1:] for c in ERRORS], ids=[c[0] for c in ERRORS])
def test_errors(tmp_path, text, fragments):
    load_error(tmp_path, text, *fragments)


def test_extra_section_allowed_only_when_asked(tmp_path):
    text = toml(extra="[custom]\nruns = 2\n")
    msg = load_error(tmp_path, text, "unknown section [custom]")
    assert "allowed: model, data, training, solve, init, simulate" in msg
    spec = load_spec(tmp_path / "spec.toml", extra_sections=("custom",))
    assert spec.extra == {"custom": {"runs": 2}}


def test_parse_spec_uses_name():
    with pytest.raises(SpecError, match=r"^cfg: \[model\] M = 0 must be >= 1$"):
        parse_spec({**_doc(), "model": {"M": 0}}, name="cfg")


def test_spec_error_is_value_error():
    assert issubclass(SpecError, ValueError)
    assert Spec.__dataclass_params__.frozen and InitSpec.__dataclass_params__.frozen
