"""The numeric layer (solvers/core, solvers/hierarchy) does not depend on the simulator: the
initial draw lives in solvers/core/initial.py and the float64 power law in
solvers/core/eigenvalues.py, and the simulator imports them, not the other way round.

Checked twice: statically (no import statement under solvers/core or solvers/hierarchy names
solvers.sim, also inside functions) and at run time (a fresh interpreter that imports every
module of both packages and builds the float64 modes inputs from a seed and a power law has no
solvers.sim module loaded).  The numbers are then compared with the simulator's own draw, which
the ODE's random start must equal bit for bit.
"""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = [pytest.mark.contract, pytest.mark.second_basis]

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("solvers/core", "solvers/hierarchy")


def _imports(path: Path):
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.level == 0:
                yield node.module
                yield from (f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            yield from (a.name for a in node.names)


def test_no_module_of_the_numeric_layer_imports_the_simulator():
    offenders = [(str(p.relative_to(ROOT)), name)
                 for layer in LAYERS for p in sorted((ROOT / layer).rglob("*.py"))
                 for name in _imports(p)
                 if name == "solvers.sim" or name.startswith("solvers.sim.")]
    assert not offenders, offenders


CHILD = """
import importlib, pkgutil, sys
import solvers.core, solvers.hierarchy
for pkg in (solvers.core, solvers.hierarchy):
    for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
        importlib.import_module(info.name)
from solvers.hierarchy import modes_fast as mf
mf.random_inputs(2, 1, 16, eta=0.1, sigma_J=0.5, seed=3, L=4, beta=0.5)
mf.expected_inputs(2, 1, eta=0.1, sigma_J=0.5, L=4, beta=0.5)
print(sorted(m for m in sys.modules if m == "solvers.sim" or m.startswith("solvers.sim.")))
"""


def test_importing_and_running_the_numeric_layer_loads_no_simulator():
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                         cwd=ROOT, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout


def test_the_random_start_is_the_simulators_draw():
    from solvers.hierarchy import modes_fast as mf
    from solvers.sim.simulate import initial_mode_overlaps, power_law_eigenvalues

    lam = power_law_eigenvalues(4, 0.5)
    inp = mf.random_inputs(2, 3, 16, eta=0.1, sigma_J=0.5, seed=7, L=4, beta=0.5)
    assert np.array_equal(inp.lam, lam)
    sim = initial_mode_overlaps(K=2, M=3, N=16, sigma_J=0.5, seed=7, L=4, beta=0.5)
    # the inputs carry factors of the overlaps (Ω_k = Z_k diag(s_k) Z_kᵀ): their blocks must be
    # the simulator's overlaps up to the rounding of the factorisation, which the inputs
    # themselves bound (factor_error, relative to each block's largest entry; 1e-12 allowed)
    assert inp.factor_error <= 1e-12
    R = np.einsum("kai,ka,kan->kin", inp.J, inp.s, inp.B)
    Q = np.einsum("kai,ka,kaj->kij", inp.J, inp.s, inp.J)
    T = np.einsum("kan,ka,kam->knm", inp.B, inp.s, inp.B)
    for got, want in ((R, sim["R"]), (Q, sim["Q"]), (T, sim["T"])):
        scale = np.abs(want).max()
        assert np.abs(got - want).max() <= 1e-12 * scale, (np.abs(got - want).max(), scale)
