"""Every printed system keeps the contract of solvers/core/contract.py: the checked-in modules
and one printed on demand (a trained linear K = 1, M = 2 readout: cheap to print, and it adds
the trained module's readout_rates).  Beyond the names and signatures, the sizes the
assembly relies on are checked against the system's own description: N_STATE = KM + K(K+1)/2
entries, N_TEACHER = M(M+1)/2, and the outputs of coefficients / jets_start against the index
tables."""
import pytest

from cache_support import generated_cache_fixtures
from derive.keys import SystemKey
from solvers.core.contract import JetsModule, SolverModule, violations
from solvers.core.numbers import Float64Context
from solvers.core.registry import CHECKED_IN, load

pytestmark = [pytest.mark.contract]  # oracle (tests/conftest.py)

run_cache, cache = generated_cache_fixtures()

ON_DEMAND = SystemKey("linear", 1, 2, trained=True)


def _check(key):
    solver, jets = load(key, "numpy").module, load(key, "taylor")
    assert isinstance(solver, SolverModule) and isinstance(jets, JetsModule)
    assert violations(solver, SolverModule) == []
    assert violations(jets, JetsModule) == []
    K, M = key.K, key.M
    assert (solver.K, solver.M, jets.K, jets.M) == (K, M, K, M)
    assert solver.N_STATE == len(solver.STATE) == K * M + K * (K + 1) // 2
    assert solver.N_TEACHER == len(solver.TEACHER) == M * (M + 1) // 2
    # a[s, t] multiplies entry t of the next level's state then teacher
    n_next = solver.N_STATE + solver.N_TEACHER
    assert all(0 <= s < solver.N_STATE and 0 <= t < n_next for s, t in solver.A_INDEX)
    # the jets' outputs: the a entries, the f entries, the label-noise coefficients, then a
    # trained readout's rates
    assert jets.N_OUTPUTS == (len(solver.A_INDEX) + len(solver.F_INDEX) + len(solver.FN_INDEX)
                              + getattr(solver, "N_READOUT", 0))
    # a state where every generated function is regular (overlaps of a positive definite
    # covariance): the outputs have the lengths the index tables promise
    v1 = [0.1 if name[0] == "R" else (1.0 if name[-1] == name[-2] else 0.2)
          for name in solver.STATE] + [0.5] * getattr(solver, "N_READOUT", 0)
    t1 = [1.0 if name[-1] == name[-2] else 0.1 for name in solver.TEACHER]
    ctx = Float64Context()
    assert len(solver.coefficients(v1, t1, 0.5, ctx)) == len(solver.A_INDEX) + len(solver.F_INDEX)
    assert len(solver.noise_coefficients(v1, t1, ctx)) == (len(solver.FN_INDEX)
                                                      + len(solver.DFN_INDEX))
    assert len(solver.coefficient_derivatives(v1, t1, 0.5, ctx)) == (len(solver.DA_INDEX)
                                                                + len(solver.DF_INDEX))
    if getattr(solver, "TRAINED", False):
        assert solver.N_READOUT == K and len(solver.readout_rates(v1, t1, ctx)) == K


@pytest.mark.parametrize("key", CHECKED_IN, ids=str)
def test_checked_in_modules_keep_the_contract(key):
    _check(key)


def test_a_module_printed_on_demand_keeps_the_contract(cache):
    _check(ON_DEMAND)


def test_a_broken_module_is_named():
    """The check can fail: a module without eps_g and with a renamed argument is reported."""
    import types
    mod = types.SimpleNamespace(**{n: getattr(load(SystemKey("erf", 1, 1), "numpy").module, n)
                                   for n in SolverModule.__annotations__})
    mod.coefficients = lambda v1, t1, rate, ctx=None: None
    mod.coefficient_derivatives = mod.noise_coefficients = lambda *a: None
    got = violations(mod, SolverModule)
    assert "missing function eps_g" in got
    assert any(g.startswith("coefficients(") for g in got), got
