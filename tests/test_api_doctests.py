"""The runnable examples in the API's docstrings (NumPy ``Examples`` sections) run and print
what they show: the quick-start a user copies must work."""
import doctest
import importlib

import pytest

pytestmark = [pytest.mark.contract]  # oracle (tests/conftest.py)

MODULES = ["solvers.api", "solvers.api.run", "solvers.app.compare", "derive.spectra"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    import matplotlib
    matplotlib.use("Agg")        # the examples call .plot() without a display
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0, name
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
