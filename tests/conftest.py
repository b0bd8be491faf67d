import os

import pytest


# What each test module's results are checked against (its oracle), as markers: e.g.
# `pytest -m quadrature` runs the checks against numerical integration.  A module with several
# kinds of reference carries several markers.
#   closed_form       an analytic result (paper formula, exact solution, eigenvalue claim)
#   quadrature        numerical integration / Monte Carlo of the Gaussian expectations
#   second_basis      the same dynamics by another route (levels vs modes, arb_mat vs arrays,
#                     the generated system vs the index-vectorised kernel)
#   higher_precision  the same computation with more digits (or exact SymPy arithmetic)
#   simulation        finite-N online SGD
#   contract          not a number: the spec / CLI / JSON contracts and the package structure
ORACLES = {
    "test_arb_rhs.py": ("second_basis", "higher_precision"),
    "test_architecture.py": ("contract",),
    "test_asymptotic.py": ("closed_form",),
    "test_asymptotic_groups.py": ("closed_form",),
    "test_backbone.py": ("second_basis", "closed_form", "simulation", "higher_precision"),
    "test_cli.py": ("contract",),
    "test_cli_linear.py": ("contract", "closed_form"),
    "test_cli_plateau.py": ("contract", "closed_form"),
    "test_cli_simulate.py": ("contract", "simulation"),
    "test_codegen.py": ("higher_precision", "second_basis", "contract"),
    "test_eq122.py": ("closed_form", "second_basis"),
    "test_escape.py": ("closed_form",),
    "test_feature_scaling.py": ("closed_form", "simulation"),
    "test_integrals.py": ("quadrature",),
    "test_integrate.py": ("closed_form", "higher_precision"),
    "test_linear.py": ("closed_form", "higher_precision", "second_basis"),
    "test_modes_fast.py": ("second_basis",),
    "test_modes_scale.py": ("second_basis",),
    "test_notebook_feature_scaling.py": ("closed_form", "simulation"),
    "test_notebook_linear.py": ("closed_form",),
    "test_notebook_overlays.py": ("simulation",),
    "test_notebook_plateau.py": ("closed_form",),
    "test_notebook_simulation.py": ("simulation",),
    "test_notebooks.py": ("second_basis", "closed_form"),
    "test_plateau.py": ("closed_form",),
    "test_precision_policy.py": ("contract", "higher_precision"),
    "test_realdata.py": ("simulation",),
    "test_sim_vs_ode.py": ("simulation",),
    "test_simulate.py": ("closed_form",),
    "test_spec.py": ("contract",),
    "test_sweep.py": ("contract",),
    "test_bayes.py": ("closed_form", "higher_precision", "quadrature", "brute_force"),
    "test_bayes_cli.py": ("contract",),
    "test_bayes_full.py": ("closed_form", "quadrature"),
    "test_bayes_sampling.py": ("sampling",),
    "test_cli_kernel.py": ("contract",),
    "test_gallery.py": ("contract", "closed_form", "simulation"),
    "test_kernel.py": ("closed_form", "higher_precision", "second_basis"),
    "test_kernel_derive.py": ("closed_form",),
    "test_kernel_finite_size.py": ("sampling", "higher_precision"),
    "test_kernel_mc.py": ("sampling",),
    "test_normals.py": ("statistics", "quadrature"),
    "test_notebook_bayes.py": ("closed_form",),
    "test_notebook_kernel.py": ("sampling",),
    "test_reliability.py": ("contract", "second_basis", "higher_precision"),
    "test_spec_fuzz.py": ("contract",),
    "test_sweep_faults.py": ("contract",),
    "test_taylor.py": ("closed_form", "higher_precision", "second_basis"),
}


def pytest_collection_modifyitems(config, items):
    """Oracle markers from ORACLES; full-size verification runs only with SCALING_ODES_FULL=1
    (`make verify`)."""
    for item in items:
        for name in ORACLES.get(item.path.name, ()):
            item.add_marker(getattr(pytest.mark, name))
    if os.environ.get("SCALING_ODES_FULL") == "1":
        return
    skip = pytest.mark.skip(reason="full-size verification: run `make verify`")
    for item in items:
        if "full" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """Generated-on-demand modules go to a per-session temporary cache, not ~/.cache."""
    monkeypatch.setenv("SCALING_ODES_CACHE", str(tmp_path_factory.getbasetemp() / "codegen-cache"))
