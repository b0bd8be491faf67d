"""Numeric layer: integrators, exact solutions, simulators, the command line and the Python API.

``from solvers import solve, simulate, compare, load_spec`` (and ``linear``, ``plateau``,
``asymptotic``, ``floor``, ``bayes``, ``kernel``, ``plrf``, ``derive``): the command line's computations as
functions of a spec (a dict of the TOML schema, a TOML path or a parsed Spec); see
:mod:`solvers.api`.  They are loaded on first use, so ``import solvers.core…`` stays light.
"""

__version__ = "0.1.0"

_API = ("load_spec", "solve", "simulate", "compare", "linear", "plateau", "asymptotic", "floor",
        "fit_exponent",
        "bayes",
        "kernel", "plrf", "derive", "SpecError", "PrecisionLost", "Result", "SolveResult",
        "SimulateResult", "CompareResult", "DeriveResult")
__all__ = ["__version__", *_API]


def __getattr__(name):
    if name == "PrecisionLost":
        from solvers.hierarchy.precision import PrecisionLost
        return PrecisionLost
    if name in _API:
        from solvers import api
        return getattr(api, name)
    raise AttributeError(f"module 'solvers' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_API))
