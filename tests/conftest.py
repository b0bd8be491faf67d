import os

import pytest


def pytest_collection_modifyitems(config, items):
    """Full-size verification runs only with SCALING_ODES_FULL=1 (`make verify`)."""
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
