"""What every API function accepts as a spec: a dict (the TOML schema), a path to a TOML file,
or a parsed :class:`~solvers.app.spec.Spec`; and the one exception class for bad input.

Bad input raises :class:`SpecError` (a ``ValueError``) with the one-line message the command
line prints after ``scaling-odes: error:``.  The command line also treats any other
``ValueError`` of a run as the user's (exit status 2); the API re-raises those as
``SpecError`` with the same one-line text, the original chained as ``__cause__``.
"""
from __future__ import annotations

import contextlib
import os
from fractions import Fraction

import numpy as np

from solvers.app.spec import (COMMON_EXTRA, OTHER_SECTIONS, Spec, SpecError, load_spec as _load_file,
                              parse_spec)

__all__ = ["SpecError", "as_spec", "user_errors", "DICT_NAME"]

DICT_NAME = "<spec>"       # how error messages name a spec given as a dict

# the optional sections each entry point reads beside the common ones (as on the command line)
# every entry point of the common spec accepts the sections of all of them (one file serves
# solve, simulate, asymptotic, ...); each section is validated where it is read
_COMMON = (*COMMON_EXTRA, *OTHER_SECTIONS)
SECTIONS = {name: _COMMON for name in ("solve", "simulate", "compare", "linear", "plateau",
                                       "asymptotic", "floor", "derive", "any")}

# entry points whose work is the ODE solve of [solve], sized when the spec is read; the others
# size the route they run when they run it (simulation steps, linear route, plateau fixed point)
SOLVE_SIZED = ("solve", "compare")


def _plain(x, label="spec"):
    """NumPy scalars and arrays, tuples and Fractions as the TOML types the schema reads."""
    if isinstance(x, dict):
        return {k: _plain(v, f"{label}.{k}") for k, v in x.items()}
    if isinstance(x, (list, tuple, np.ndarray)):
        return [_plain(v, label) for v in (x.tolist() if isinstance(x, np.ndarray) else x)]
    if isinstance(x, np.bool_):
        return bool(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return float(x)
    if isinstance(x, Fraction):
        # a terminating decimal is exact as a decimal string; 1/3 has no exact TOML form
        from solvers.app.spec import _decimal
        text = _decimal(x)
        if text is None:
            raise SpecError(f"{DICT_NAME}: {label} = {x} has no exact decimal form (give a "
                            f"decimal string or a float)")
        return text
    return x


def as_spec(spec, sections: str = "any") -> Spec:
    """A validated Spec from a dict, a path or a Spec.

    ``sections`` names the entry point (a key of ``SECTIONS``): its optional sections are
    accepted, any other is refused as the command line refuses it.
    """
    extra = SECTIONS[sections]
    sizing = "solve" if sections in SOLVE_SIZED else None
    if isinstance(spec, Spec):
        allowed = ("model", "data", "training", "solve", "init", *extra)
        for sec in spec.extra:
            if sec not in extra:
                raise SpecError(f"{spec.path}: unknown section [{sec}] (allowed: "
                                f"{', '.join(allowed)})")
        if sizing == "solve":
            from solvers.app.sizing import size_solve
            try:
                size_solve(spec)
            except ValueError as e:
                raise SpecError(" ".join(f"{spec.path}: {e}".split())) from None
        return spec
    if isinstance(spec, dict):
        return parse_spec(_plain(spec), name=DICT_NAME, extra_sections=extra, sizing=sizing)
    if isinstance(spec, (str, os.PathLike)):
        return _load_file(spec, extra_sections=extra, sizing=sizing)
    raise TypeError(f"a spec is a dict, a path to a TOML file or a parsed Spec, got "
                    f"{type(spec).__name__}")


@contextlib.contextmanager
def user_errors():
    """ValueErrors of a run (bad input found while computing) as SpecError, one line."""
    try:
        yield
    except SpecError:
        raise
    except ValueError as exc:
        raise SpecError(" ".join(str(exc).split())) from exc
