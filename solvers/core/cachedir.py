"""Where generated and compiled artefacts are cached: ``$SCALING_ODES_CACHE`` or
``~/.cache/scaling-odes`` (a module of its own so that light callers need not import the
code generator)."""
from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    return Path(os.environ.get("SCALING_ODES_CACHE", Path.home() / ".cache" / "scaling-odes"))
