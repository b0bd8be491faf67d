"""The printed solver modules against the SymPy systems they come from, and their upkeep."""
import shutil
from fractions import Fraction

import mpmath
import numpy as np
import pytest
import sympy as sp

from derive import spectra, systems
from derive.codegen import module_printer as codegen
from derive.hierarchy import Hierarchy, SystemKey
from solvers.core import registry
from solvers.core.numbers import FlintContext, Float64Context, MpmathContext, to_mpf
from solvers.core.problem import Problem, random_init

pytestmark = [pytest.mark.higher_precision, pytest.mark.second_basis, pytest.mark.contract]  # oracle (tests/conftest.py)

DPS = 40
TOL = mpmath.mpf(10) ** (-(DPS - 8))   # a few hundred roundings of O(1) terms, 8 digits spare


def _problem(key, L, beta=1, order=2, N=None, seed=3):
    spec = spectra.power_law(L, beta)
    N = N or 6 * L
    # σ_J = 0.5 puts the state away from the symmetric plateau, so all terms matter.
    return Problem(key, spec, Fraction(3, 10), order,
                   random_init(key.K, key.M, N, spec, Fraction(1, 2), seed))


def _sympy_values(system, states, params, eta):
    sub = {s: sp.Float(mpmath.nstr(v, DPS + 10), DPS + 10)
           for s, v in zip(system.states, states, strict=True)}
    sub |= {p: sp.Float(mpmath.nstr(v, DPS + 10), DPS + 10)
            for p, v in zip(system.parameters[1:], params, strict=True)}
    sub[system.parameters[0]] = sp.Rational(eta.numerator, eta.denominator)
    return [mpmath.mpf(str(sp.N(r.xreplace(sub), DPS + 5))) for r in system.rhs]


@pytest.mark.parametrize("key,L,order", [
    (SystemKey("erf", 2, 2), 3, 2),
    (SystemKey("erf", 2, 2), 1, 1),
    (SystemKey("erf", 1, 1), 4, 2),
    (SystemKey("linear", 1, 1), 3, 2),
])
def test_generated_rhs_equals_sympy_closed_systems(key, L, order):
    prob = _problem(key, L, order=order)
    mod = registry.load(key, "mpmath")
    with MpmathContext(DPS) as ctx:
        n = prob.numeric(ctx)
        lev = mod.rhs_levels(n.y_levels, n.T_levels, n.c, n.nu, n.eta, n.e2, ctx).ravel()
        ref = _sympy_values(systems.level_system(key, prob.spectrum, order),
                            n.y_levels.ravel(), n.T_levels.ravel(), prob.eta)
        assert max(abs(a - b) for a, b in zip(lev, ref, strict=True)) < TOL
        mod_ = mod.rhs_modes(n.y_modes, n.T_modes, n.lam, n.w, n.eta, n.e2, ctx).ravel()
        ref = _sympy_values(systems.mode_system(key, prob.spectrum, order),
                            n.y_modes.ravel(), n.T_modes.ravel(), prob.eta)
        assert max(abs(a - b) for a, b in zip(mod_, ref, strict=True)) < TOL


@pytest.mark.parametrize("L", [1, 2, 4])
def test_levels_and_modes_are_the_same_dynamics(L):
    """d/dα of the levels equals the Vandermonde map of d/dα of the modes."""
    key = SystemKey("erf", 2, 2)
    prob = _problem(key, L)
    mod = registry.load(key, "mpmath")
    with MpmathContext(DPS) as ctx:
        n = prob.numeric(ctx)
        lev = mod.rhs_levels(n.y_levels, n.T_levels, n.c, n.nu, n.eta, n.e2, ctx)
        modes = mod.rhs_modes(n.y_modes, n.T_modes, n.lam, n.w, n.eta, n.e2, ctx)
        V = np.array([[lam ** l for lam in n.lam] for l in range(L)], dtype=object)
        assert max(abs(x) for x in (lev - V @ modes).ravel()) < TOL


@pytest.mark.parametrize("basis", ["levels", "modes"])
@pytest.mark.parametrize("L", [1, 3])
def test_jacobian_matches_central_differences(basis, L):
    key = SystemKey("erf", 2, 2)
    prob = _problem(key, L)
    mod = registry.load(key, "mpmath")
    with MpmathContext(DPS) as ctx:
        n = prob.numeric(ctx)
        if basis == "levels":
            y, args, rhs, jac = n.y_levels, (n.T_levels, n.c, n.nu, n.eta, n.e2, ctx), mod.rhs_levels, mod.jac_levels
        else:
            y, args, rhs, jac = n.y_modes, (n.T_modes, n.lam, n.w, n.eta, n.e2, ctx), mod.rhs_modes, mod.jac_modes
        J = jac(y, *args)
        h = mpmath.mpf(10) ** -12
        worst = 0
        for i in range(y.size):
            up, dn = y.copy().ravel(), y.copy().ravel()
            up[i] += h
            dn[i] -= h
            col = (rhs(up.reshape(y.shape), *args) - rhs(dn.reshape(y.shape), *args)).ravel() / (2 * h)
            worst = max(worst, max(abs(col[j] - J[j, i]) for j in range(y.size)))
        scale = max(abs(x) for x in J.ravel())
        assert worst < 1e-18 * max(scale, 1)   # central differences: O(h²) = 1e-24 times 3rd derivatives


def test_number_types_agree():
    """One printed module, three number types: float64, mpmath mpf and flint arb."""
    key = SystemKey("erf", 2, 2)
    prob = _problem(key, 3)
    out = {}
    for name, ctx in [("mpmath", MpmathContext(30)), ("flint", FlintContext(30))]:
        with ctx:
            n = prob.numeric(ctx)
            r = registry.load(key, "mpmath").rhs_levels(n.y_levels, n.T_levels, n.c, n.nu, n.eta, n.e2, ctx)
            out[name] = [to_mpf(x) for x in r.ravel()]
    with mpmath.workdps(30):
        gap = max(abs(a - b) for a, b in zip(out["mpmath"], out["flint"], strict=True))
        assert gap < mpmath.mpf(10) ** -24
    n = prob.numeric(Float64Context())
    r = registry.load(key, "numpy").rhs_levels(n.y_levels, n.T_levels, n.c, n.nu, float(n.eta), float(n.e2))
    ref = np.array([float(x) for x in out["mpmath"]])
    # float64 in the level basis at L = 3 loses ~ log10(cond V) ≈ 2 digits: 1e-12 relative is safe.
    assert np.max(np.abs(r.ravel() - ref)) < 1e-12 * np.max(np.abs(ref))


def test_no_floats_in_symbolic_layer():
    h = Hierarchy(SystemKey("erf", 2, 2))
    exprs = list(h.a) + list(h.f) + [h.eps_g]
    assert not any(sp.sympify(e).atoms(sp.Float) for e in exprs)
    assert not any(spectra.power_law(5, sp.Rational(1, 2)).charpoly[j].atoms(sp.Float) for j in range(6))


def test_charpoly_exact_and_annihilates():
    s = spectra.power_law(6, 1)
    x = sp.Symbol("x")
    poly = sum(c * x**j for j, c in enumerate(s.charpoly))
    assert all(poly.subs(x, lam) == 0 for lam in s.eigenvalues)
    assert s.nu(1) == 1                               # Tr Σ = N normalisation
    assert all(isinstance(c, sp.Rational) for c in s.charpoly)


def test_missing_symbol_fails_generation_early():
    with pytest.raises(ValueError, match="not an argument"):
        codegen._check_symbols([sp.Symbol("R_1_1") + sp.Symbol("mystery")], [sp.Symbol("R_1_1")], "test")


def test_regenerate_check_detects_stale_module(tmp_path, monkeypatch):
    assert registry.regenerate(check=True) == []          # checked-in files are in sync
    copy = tmp_path / "generated"
    shutil.copytree(registry.GENERATED_DIR, copy)
    target = copy / "linear_K1_M1.py"
    target.write_text(target.read_text().replace("\nSTATE, TEACHER", "\n# edited\nSTATE, TEACHER", 1))
    monkeypatch.setattr(registry, "GENERATED_DIR", copy)
    assert registry.regenerate(check=True) == [target]
    assert target.read_text().count("# edited") == 1      # --check never writes
    assert registry.regenerate() == [target]               # regenerate repairs it ...
    assert registry.regenerate(check=True) == []           # ... atomically, in place


def test_regenerate_check_guards_the_gaussian_kernels(tmp_path, monkeypatch):
    copy = tmp_path / "generated"
    shutil.copytree(registry.GENERATED_DIR, copy)
    target = copy / f"{codegen.KERNELS_MODULE}.py"
    target.write_text(target.read_text().replace("numpy.pi", "3.14159", 1))
    monkeypatch.setattr(registry, "GENERATED_DIR", copy)
    assert registry.regenerate(check=True) == [target]


def test_printed_kernels_match_the_symbolic_ones():
    """The float64 kernels (printed once) against SymPy's exact expressions at a random point."""
    from derive import integrals
    from solvers.generated import gaussian_erf_numpy as gk
    rng = np.random.default_rng(5)
    A = rng.normal(size=(4, 4))
    C = A @ A.T / 4
    names4 = [(0, 0), (0, 1), (0, 2), (0, 3), (1, 1), (1, 2), (1, 3), (2, 2), (2, 3), (3, 3)]
    S4 = integrals.covariance_symbols(4)
    sub = {S4[a, b]: sp.Float(C[a, b], 30) for a, b in names4}
    checks = [
        (gk.I4(*[C[a, b] for a, b in names4]), integrals.I4("erf", S4)),
        (gk.I3(C[0, 0], C[0, 1], C[0, 2], C[1, 2], C[2, 2]), integrals.I3("erf", S4[:3, :3])),
        (gk.I2(C[0, 0], C[0, 1], C[1, 1]), integrals.I2("erf", S4[:2, :2])),
        (gk.gp_gp(C[0, 0], C[0, 1], C[1, 1]), integrals.gp_gp("erf", S4[:2, :2])),
        (gk.gpp_g(C[0, 0], C[0, 1], C[1, 1]), integrals.gpp_g("erf", S4[:2, :2])),
    ]
    for got, expr in checks:
        assert got == pytest.approx(float(expr.xreplace(sub).evalf(30)), rel=1e-13)
    # the gradients against central differences of the printed kernels (h = 1e-5: error ~1e-10)
    x, h = np.array([C[0, 0], C[0, 1], C[1, 1]]), 1e-5
    for f, grad in ((gk.gp_gp, gk.gp_gp_grad), (gk.gpp_g, gk.gpp_g_grad)):
        for u in range(3):
            e = np.eye(3)[u] * h
            fd = (f(*(x + e)) - f(*(x - e))) / (2 * h)
            assert grad(*x)[u] == pytest.approx(fd, rel=1e-8, abs=1e-12)


def test_uncovered_system_is_generated_on_demand(tmp_path, monkeypatch):
    monkeypatch.setenv("SCALING_ODES_CACHE", str(tmp_path))
    key = SystemKey("erf", 1, 2)
    assert key not in registry.CHECKED_IN
    mod = registry.load(key, "numpy")
    assert (mod.K, mod.M) == (1, 2)
    assert list(tmp_path.rglob("erf_K1_M2.py"))
    prob = _problem(key, 2)
    with MpmathContext(DPS) as ctx:
        n = prob.numeric(ctx)
        ref = _sympy_values(systems.mode_system(key, prob.spectrum, 2), n.y_modes.ravel(),
                            n.T_modes.ravel(), prob.eta)
    n = prob.numeric(Float64Context())
    got = mod.rhs_modes(n.y_modes, n.T_modes, n.lam, n.w, float(n.eta), float(n.e2)).ravel()
    assert np.allclose(got, [float(v) for v in ref], rtol=1e-12, atol=1e-15)
