"""``scaling-odes derive``: printed equations against hand-written ones, LaTeX, --write, bad input.

The references are written here from the conventions (student v_i g_s(x_i), teacher u_n g_t(y_n),
paper readouts v = u = 1 at K = M = 1), with the textbook erf closed forms of I3 and I4
(g = erf(x/√2)) and, for the ReLU and polynomial pairs, expectations reduced by hand with
Stein's lemma E[z F(x, y)] = Σ_a cov(z, a) E[∂_a F] and Gaussian moments.  The printed text is
read back with ``sympify`` and both are evaluated at random points in 30-digit arithmetic.
"""
from __future__ import annotations

import json
import random
import re

import mpmath as mp
import pytest
import sympy as sp

from cli_support import run_cli, write_spec
from specs import toml_spec

# the references are closed forms written here; the rest checks the command's contract
pytestmark = [pytest.mark.closed_form, pytest.mark.contract]

def spec(tmp_path, model='activation = "erf"', K=1, M=1, L=2, name="spec.toml"):
    text = toml_spec(model=[model, dict(K=K, M=M)], data=dict(L=L, beta=1.0, N=64),
                     training=dict(eta=0.5), solve=dict(alpha_max=10, n_points=3, basis="modes",
                                                        dps="float64", digits=6))
    return write_spec(tmp_path, text, name)


def derive_json(path, capsys, *extra):
    code, out, err = run_cli(["derive", path, "--json", *extra], capsys)
    assert code == 0, err
    return json.loads(out), err


def printed(doc):
    """{state label: sympy rhs} and eps_g, read back from the text form."""
    rhs = {e["lhs"]: sp.sympify(e["rhs_text"]) for e in doc["equations"]}
    return rhs, sp.sympify(doc["eps_g"]["text"])


def at(expr, point):
    """expr at {name: mpf} in the current mpmath precision."""
    subs = {s: sp.Float(str(point[s.name]), 40) for s in expr.free_symbols}
    return mp.mpf(str(sp.N(expr.xreplace(subs), 35)))


def random_point(seed):
    """A point with valid covariances: Q, T > 0, |R| < sqrt(QT), next level arbitrary."""
    rng = random.Random(seed)
    Q, T = mp.mpf(rng.uniform(0.2, 1.5)), mp.mpf(rng.uniform(0.2, 1.5))
    R = mp.mpf(rng.uniform(-0.8, 0.8)) * mp.sqrt(Q * T)
    nxt = {k: mp.mpf(rng.uniform(-1, 1)) for k in ("nR_1_1", "nQ_1_1", "nT_1_1")}
    return {"Q_1_1": Q, "T_1_1": T, "R_1_1": R, **nxt, "eta": mp.mpf(rng.uniform(0.1, 2)),
            "nu": mp.mpf(rng.uniform(0.1, 2)), "e2": mp.mpf(rng.uniform(0.1, 2))}


# -- erf closed forms (g = erf(x/sqrt 2)), C indexed from 1 as in the literature ------------
def I3(C11, C12, C13, C23, C33):
    """<g'(a) b g(c)>."""
    lam = (1 + C11) * (1 + C33) - C13 ** 2
    return 2 / mp.pi / mp.sqrt(lam) * (C23 * (1 + C11) - C12 * C13) / (1 + C11)


def I4(C):
    """<g'(a) g'(b) g(c) g(d)> for the symmetric 4x4 covariance C (0-based)."""
    l4 = (1 + C[0][0]) * (1 + C[1][1]) - C[0][1] ** 2
    l0 = (l4 * C[2][3] - C[1][2] * C[1][3] * (1 + C[0][0]) - C[0][2] * C[0][3] * (1 + C[1][1])
          + C[0][1] * C[0][2] * C[1][3] + C[0][1] * C[0][3] * C[1][2])
    l1 = (l4 * (1 + C[2][2]) - C[1][2] ** 2 * (1 + C[0][0]) - C[0][2] ** 2 * (1 + C[1][1])
          + 2 * C[0][1] * C[0][2] * C[1][2])
    l2 = (l4 * (1 + C[3][3]) - C[1][3] ** 2 * (1 + C[0][0]) - C[0][3] ** 2 * (1 + C[1][1])
          + 2 * C[0][1] * C[0][3] * C[1][3])
    return 4 / mp.pi ** 2 / mp.sqrt(l4) * mp.asin(l0 / mp.sqrt(l1 * l2))


def erf_reference(p):
    """dR/dα, dQ/dα and ε_g of erf K = M = 1 at level l (conventions, v = u = 1)."""
    Q, R, T = p["Q_1_1"], p["R_1_1"], p["T_1_1"]
    nR, nQ, nT = p["nR_1_1"], p["nQ_1_1"], p["nT_1_1"]
    # <g'(x) y^(l) (g(y) - g(x))>: cov(x, y^(l)) = R^(l+1), cov(y, y^(l)) = T^(l+1), ...
    dR = p["eta"] * (I3(Q, nR, R, nT, T) - I3(Q, nR, Q, nR, Q))
    lin = 2 * p["eta"] * (I3(Q, nQ, R, nR, T) - I3(Q, nQ, Q, nQ, Q))
    # fields (x, x, a, b): a, b in {x, y}
    cov = {("x", "x"): Q, ("x", "y"): R, ("y", "x"): R, ("y", "y"): T}

    def i4(a, b):
        f = ("x", "x", a, b)
        return I4([[cov[f[i], f[j]] for j in range(4)] for i in range(4)])
    quad = i4("y", "y") - 2 * i4("x", "y") + i4("x", "x")
    dQ = lin + p["e2"] * p["nu"] * quad
    eps = (mp.asin(Q / (1 + Q)) + mp.asin(T / (1 + T))
           - 2 * mp.asin(R / mp.sqrt((1 + Q) * (1 + T)))) / mp.pi
    return dR, dQ, eps


def test_erf_text_matches_the_hand_written_hierarchy(tmp_path, capsys):
    doc, _ = derive_json(spec(tmp_path), capsys)
    assert doc["state"] == ["R_11", "Q_11"] and doc["tag"] == "erf_K1_M1"
    rhs, eps = printed(doc)
    with mp.workdps(30):
        for seed in range(3):
            p = random_point(seed)
            dR, dQ, e = erf_reference(p)
            # both sides exact closed forms at 30 digits: agreement to 1e-20 leaves 10 digits
            # for the rounding of the sympy evaluation, far above it
            for got, want in ((at(rhs["dR^(l)_11/dalpha"], p), dR),
                              (at(rhs["dQ^(l)_11/dalpha"], p), dQ), (at(eps, p), e)):
                assert abs(got - want) <= mp.mpf(10) ** -20 * (1 + abs(want)), (seed, got, want)


def test_erf_latex_and_default_text(tmp_path, capsys):
    path = spec(tmp_path)
    code, out, err = run_cli(["derive", path, "--latex"], capsys)
    assert code == 0, err
    assert out.startswith("\\begin{aligned}") and out.rstrip().endswith("\\end{aligned}")
    assert "\\frac{d R^{(l)}_{11}}{d\\alpha}" in out and "R^{(l+1)}_{11}" in out
    assert "\\nu_{l+1}" in out and "\\varepsilon_g" in out
    code, out, err = run_cli(["derive", path], capsys)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "# erf K=1 M=1 (erf_K1_M1)"
    lines = [line for line in lines if not line.startswith("#   ")]      # the legend
    assert lines[1].startswith("dR^(l)_11/dalpha = ") and lines[-1].startswith("eps_g = ")


def test_relu_erf_pair(tmp_path, capsys):
    doc, _ = derive_json(spec(tmp_path, 'student_activation = "relu"\n'
                                        'teacher_activation = "erf"'), capsys)
    assert doc["model"] == "relu/erf K=1 M=1"
    rhs, eps = printed(doc)
    with mp.workdps(30):
        p = random_point(7)
        Q, R, T = p["Q_1_1"], p["R_1_1"], p["T_1_1"]
        # Stein on y^(l): <θ(x) y^(l) erf(y/√2)> = nT <θ(x) √(2/π) e^(-y²/2)> (the nR term
        # <δ(x) erf> vanishes by parity) = nT / sqrt(2π(1+T)); <θ(x) y^(l) relu(x)> = nR / 2
        dR = p["eta"] * (p["nT_1_1"] / mp.sqrt(2 * mp.pi * (1 + T)) - p["nR_1_1"] / 2)
        # ε_g = ½<erf²> - <relu(x) erf(y/√2)> + ½<relu²>, the middle term by Stein on x
        e = mp.asin(T / (1 + T)) / mp.pi - R / mp.sqrt(2 * mp.pi * (1 + T)) + Q / 4
        for got, want in ((at(rhs["dR^(l)_11/dalpha"], p), dR), (at(eps, p), e)):
            assert abs(got - want) <= mp.mpf(10) ** -20 * (1 + abs(want))


def test_polynomial_pair(tmp_path, capsys):
    doc, _ = derive_json(spec(tmp_path, 'student_activation = "x**3 - 3*x"\n'
                                        'teacher_activation = "x**2"'), capsys)
    rhs, eps = printed(doc)
    with mp.workdps(30):
        p = random_point(11)
        Q, T = p["Q_1_1"], p["T_1_1"]
        # drive <g_s'(x) y^(l) y²> = 0 (odd); back <g_s'(x) y^(l) g_s(x)> = nR <F'(x)>,
        # F = (3x² - 3)(x³ - 3x): <F'> = 45Q² - 36Q + 9
        dR = -p["eta"] * p["nR_1_1"] * (45 * Q ** 2 - 36 * Q + 9)
        # ε_g = ½(<y⁴> - 2<y²(x³ - 3x)> + <(x³ - 3x)²>) = ½(3T² + 15Q³ - 18Q² + 9Q)
        e = (3 * T ** 2 + 15 * Q ** 3 - 18 * Q ** 2 + 9 * Q) / 2
        for got, want in ((at(rhs["dR^(l)_11/dalpha"], p), dR), (at(eps, p), e)):
            assert abs(got - want) <= mp.mpf(10) ** -20 * (1 + abs(want))


def test_closed_system_at_small_L(tmp_path, capsys):
    doc, _ = derive_json(spec(tmp_path, L=2), capsys, "--closed")
    closed = doc["closed"]
    assert closed["basis"] == "modes" and closed["L"] == 2
    assert len(closed["equations"]) == 2 * 2 == len(closed["states"])
    for e in closed["equations"]:
        assert not sp.sympify(e["rhs_text"]).has(sp.Symbol("nu"))   # ν substituted


def test_write_then_solve_uses_the_module(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SCALING_ODES_CACHE", str(tmp_path / "cache"))
    path = spec(tmp_path, 'student_activation = "relu"\nteacher_activation = "erf"')
    doc, err = derive_json(path, capsys, "--write")
    module = doc["module"]
    assert module and module.startswith(str(tmp_path / "cache"))
    assert "generating relu/erf K=1 M=1 solver" in err and f"solver module: {module}" in err
    from pathlib import Path
    assert Path(module).is_file()
    code, out, err = run_cli(["solve", path, "--json"], capsys)
    assert code == 0, err
    assert "generating" not in err                       # the module written above was used
    assert len(json.loads(out)["eps_g"]) == 3


@pytest.mark.parametrize("model,K,extra,words", [
    ('activation = "tanh"', 1, (), "[model] activation"),
    ('activation = "erf"', 20, (), "K = 20"),
    ('activation = "erf"', 2, ("--closed",), "--closed"),
    ('activation = "erf"\nreadout = "trained"', 1, (), "eta_readout"),
])
def test_bad_input_one_line(tmp_path, capsys, model, K, extra, words):
    L = 16 if extra else 2
    path = spec(tmp_path, model, K=K, L=L)
    # a trained readout without its learning rate
    code, out, err = run_cli(["derive", path, *extra], capsys)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and words in err, err
    if K == 20:
        assert "about" in err                      # the estimate is in the message


def test_trained_readout_equations(tmp_path, capsys):
    """A trained readout prints dv_i/dα (η_v times <g(x_i) Δ>) after the level equations, and
    v_i in the coefficients and ε_g."""
    path = spec(tmp_path, 'activation = "erf"\nreadout = "trained"', K=2)
    path.write_text(path.read_text().replace("eta = 0.5", "eta = 0.5\neta_readout = 0.3"))
    doc, _ = derive_json(path, capsys)
    assert doc["state"][-2:] == ["v_1", "v_2"]
    assert [e["lhs"] for e in doc["equations"][-2:]] == ["dv_1/dalpha", "dv_2/dalpha"]
    assert "eta_v" in doc["equations"][-1]["rhs_text"] and "v_1" in doc["eps_g"]["text"]


def test_api_result(tmp_path):
    import solvers
    d = solvers.derive(str(spec(tmp_path)))
    assert d.text().splitlines()[0] == "# erf K=1 M=1 (erf_K1_M1)"
    assert d._repr_latex_().startswith("$$\\begin{aligned}")
    assert d.module is None and d.to_dict()["state"] == ["R_11", "Q_11"]


def test_label_noise_and_weight_decay_terms(tmp_path, capsys):
    plain, _ = derive_json(spec(tmp_path), capsys)
    path = spec(tmp_path, name="noisy.toml")
    path.write_text(path.read_text().replace("eta = 0.5", "eta = 0.5\nnoise = 0.1\n"
                                             "weight_decay = 0.01"))
    noisy, _ = derive_json(path, capsys)
    (p0, _), (p1, _) = printed(plain), printed(noisy)
    with mp.workdps(30):
        p = random_point(3)
        p.update(noise=mp.mpf("0.3"), kappa=mp.mpf("0.07"), lR_1_1=mp.mpf("0.4"),
                 lQ_1_1=mp.mpf("0.9"))
        Q = p["Q_1_1"]
        # erf: g'(x) = sqrt(2/π) exp(-x²/2), so <g'(x)²> = (2/π)/sqrt(1 + 2Q) (v = 1)
        fn = 2 / mp.pi / mp.sqrt(1 + 2 * Q)
        for lhs, want in (("dR^(l)_11/dalpha", -p["eta"] * p["kappa"] * p["lR_1_1"]),
                          ("dQ^(l)_11/dalpha", p["e2"] * p["nu"] * p["noise"] * fn
                           - 2 * p["eta"] * p["kappa"] * p["lQ_1_1"])):
            got = at(p1[lhs], p) - at(p0[lhs], p)
            assert abs(got - want) <= mp.mpf(10) ** -20, (lhs, got, want)


@pytest.mark.parametrize("model, extra, order", [
    ('activation = "erf"', "", 2),
    ('activation = "erf"\nreadout = "trained"', "eta_readout = 0.3\nweight_decay_readout = 0.01", 1),
    ('student_activation = "relu"\nteacher_activation = "erf"', "noise = 0.1\nweight_decay = 0.01", 2),
])
def test_legend_defines_every_symbol_printed(tmp_path, capsys, model, extra, order):
    """Every free symbol of the printed equations (read back with sympify, independently of the
    legend's own patterns) is named by one legend entry, in the JSON, the text and the LaTeX."""
    path = spec(tmp_path, model)                  # K = M = 1: small and quick to derive
    path.write_text(path.read_text().replace("eta = 0.5", f"eta = 0.5\norder = {order}\n{extra}"))
    doc, _ = derive_json(path, capsys)
    rhs, eps = printed(doc)
    symbols = {str(s) for e in [*rhs.values(), eps] for s in e.free_symbols}
    names = {"R", "Q", "T", "nR", "nQ", "nT", "lR", "lQ", "v"}
    covered = set()
    for entry in doc["legend"]:
        for word in re.findall(r"[A-Za-z]\w*", entry["text"].split(" = ")[0]):
            covered.add(word.split("_")[0] if word.split("_")[0] in names else word)
    for s in symbols:
        base = s.split("_")[0] if s.split("_")[0] in names else s
        assert base in covered, f"{s} is printed but not in the legend {covered}"
    if order == 2:
        assert any(e["text"].startswith("e2") for e in doc["legend"])
    from solvers.app.cli.derive import render_text        # what the command prints
    text, latex = render_text(doc), render_text(doc, latex=True)
    assert all(f"#   {e['text']}: " in text for e in doc["legend"])
    assert all(e["latex"] in latex for e in doc["legend"])
    assert latex.rstrip().endswith("\\end{aligned}")
