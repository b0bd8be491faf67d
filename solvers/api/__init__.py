"""The Python API: the command line's computations as functions that take a spec and return
result objects.

A spec is what ``scaling-odes`` reads from TOML: a dict of the same schema, a path to a TOML
file, or a parsed :class:`~solvers.app.spec.Spec`.  Bad input raises :class:`SpecError` (a
``ValueError``) with the command line's one-line message; nothing is computed before the spec
is valid.

=================  =========================================  ===============================
function           subcommand                                 returns
=================  =========================================  ===============================
``load_spec``      (validation only)                          ``Spec``
``solve``          ``scaling-odes solve``                     :class:`SolveResult`
``simulate``       ``scaling-odes simulate``                  :class:`SimulateResult`
``compare``        ``scaling-odes compare``                   :class:`CompareResult`
``linear``         ``scaling-odes linear curve|window|…``     the JSON dict
``plateau``        ``scaling-odes plateau``                   the JSON dict
``asymptotic``     ``scaling-odes asymptotic``                the JSON dict
``floor``          ``scaling-odes floor``                     the JSON dict
``fit_exponent``   (any curve: alpha, values)                 exponent and its uncertainty
``bayes``          ``scaling-odes bayes [transitions|limit]`` the JSON dict
``kernel``         ``scaling-odes kernel`` / ``kernel-mc``    the JSON dict
``plrf``           ``scaling-odes plrf curve|frontier|…``     the JSON dict
``derive``         ``scaling-odes derive``                    :class:`DeriveResult`
=================  =========================================  ===============================

Results carry float64 NumPy arrays (``.alpha``, ``.eps_g``, ``.R1``, ``.Q1``), ``.meta``,
``.to_dict()`` / ``.to_json()`` (the subcommand's JSON), ``.to_xarray()`` and ``.plot(ax=None)``
(log-log learning curve, returns the Axes).  ``SolveResult.exact("eps_g")`` gives ε_g as
decimal strings with every digit the run verified (``[solve] digits``, up to 1000).

Examples
--------
Theory and simulation of one realisation (erf, K = M = 2, L = 4, N = 256), a few seconds:

>>> import solvers
>>> spec = {"model": {"activation": "erf", "K": 2, "M": 2},
...         "data": {"L": 4, "beta": 1.0, "N": 256},
...         "training": {"eta": 0.5, "sigma_J": 0.1, "seed": 0},
...         "solve": {"alpha_max": 10, "n_points": 21, "spacing": "linear",
...                   "basis": "modes", "dps": "float64", "digits": 8}}
>>> theory = solvers.solve(spec)
>>> sim = solvers.simulate(spec)
>>> c = solvers.compare(spec)          # both, at the simulator's alpha, and their deviation
>>> bool(c.rms_deviation < c.finite_size_scale)
True
>>> ax = c.plot()                      # theory line, simulation points; log-log

More digits than float64 carries, in the level basis (python-flint; the precision is chosen
and checked by a second run):

>>> r = solvers.solve({"data": {"L": 4, "beta": 1, "N": 64}, "training": {"eta": 0.5},
...                    "solve": {"alphas": [10], "digits": 16}})
>>> r.exact("eps_g"), r.eps_g.dtype
(['0.01391391958148942'], dtype('float64'))
"""
from solvers.api.inputs import SpecError
from solvers.api.results import (CompareResult, DeriveResult, Result, SimulateResult,
                                 SolveResult)
from solvers.api.run import (asymptotic, bayes, compare, derive, floor, kernel, linear,
                             load_spec, plateau, plrf, simulate, solve)
from solvers.theory.exponent import fit_exponent

__all__ = ["load_spec", "solve", "simulate", "compare", "linear", "plateau", "asymptotic", "floor",
           "fit_exponent",
           "bayes", "kernel", "plrf", "derive", "SpecError", "Result", "SolveResult",
           "SimulateResult", "CompareResult", "DeriveResult"]
