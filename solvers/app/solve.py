"""From a spec to a result: the ``solve`` subcommand's engine.

Precision policy (``[solve] dps``):
  * ``"auto"``: levels basis -> arbitrary precision (python-flint arb) raised until two runs
    agree on ``digits`` significant digits of ε_g; modes basis -> float64 when ``digits`` <= 10
    (checked the same way with a 100x tighter tolerance), arbitrary precision otherwise.
  * an integer: one arbitrary-precision run at that many digits.
  * ``"float64"``: SciPy DOP853; in the levels basis the run is checked against the modes basis
    and refused (PrecisionLost) when the closure has cancelled the asked-for digits away.
"""
from __future__ import annotations

import time
from fractions import Fraction

import mpmath
import numpy as np

from derive import spectra
from derive.hierarchy import SystemKey

from solvers import __version__
from solvers.hierarchy.odes import (PrecisionLost, agreement_digits, check_float64_levels, choose_method,
                   default_rtol,
                   integrate_problem, solve_auto)
from solvers.core.problem import Problem, expected_init, explicit_init, random_init
from solvers.app.spec import Spec

# float64 runs are checked by a second run at 100x tighter tolerance; below rtol ~ 1e-15 the
# rounding of float64 itself dominates, so the first run sits at 1e-13 (~9 digits of eps_g).
FLOAT64_MAX_DIGITS = 9
FLOAT64_RTOL = 1e-13


def spectrum_of(spec: Spec) -> spectra.Spectrum:
    if spec.data.eigenvalues is not None:
        return spectra.explicit(spec.data.eigenvalues)
    return spectra.power_law(spec.data.L, spec.data.beta)


def problem_of(spec: Spec) -> Problem:
    m, d, tr = spec.model, spec.data, spec.training
    key = SystemKey(m.activation, m.K, m.M)
    spectrum = spectrum_of(spec)
    if tr.init == "random":
        init = random_init(m.K, m.M, d.N, spectrum, tr.sigma_J, tr.seed, d.rotate)
    elif tr.init == "expected":
        init = expected_init(spectrum, m.K, m.M, tr.sigma_J)
    else:
        init = explicit_init(spec.init.basis, spec.init.R, spec.init.Q, spec.init.T)
    return Problem(key, spectrum, Fraction(tr.eta), tr.order, init)


def run(problem: Problem, alphas, *, basis: str, dps, digits: int, progress=None):
    """The trajectory at ``alphas`` (starting at 0) under the precision policy above."""
    if dps == "float64":
        traj = integrate_problem(problem, alphas, basis=basis, arithmetic="float64",
                                 rtol=default_rtol(digits), progress=progress)
        if basis == "levels":
            modes = integrate_problem(problem, alphas, basis="modes", arithmetic="float64",
                                      rtol=default_rtol(digits))
            traj.stats["agreement_digits"] = check_float64_levels(traj, modes, digits)
        return traj
    if dps == "auto" and basis == "modes" and digits <= FLOAT64_MAX_DIGITS:
        first = integrate_problem(problem, alphas, basis=basis, arithmetic="float64",
                                  rtol=FLOAT64_RTOL, progress=progress)
        second = integrate_problem(problem, alphas, basis=basis, arithmetic="float64",
                                   rtol=FLOAT64_RTOL / 100)
        agree = agreement_digits(first.eps_g, second.eps_g)
        if agree >= digits:
            second.stats["agreement_digits"] = agree
            return second
        return solve_auto(problem, alphas, basis=basis, digits=digits, progress=progress)
    if dps == "auto":
        return solve_auto(problem, alphas, basis=basis, digits=digits, progress=progress)
    return integrate_problem(problem, alphas, basis=basis, arithmetic="flint", dps=int(dps),
                             rtol=default_rtol(digits), progress=progress,
                             method=choose_method(digits))


def _format_eps(values, digits: int):
    if digits > 15:
        with mpmath.workdps(digits + 5):
            return [mpmath.nstr(v, digits, strip_zeros=False) for v in values]
    return [float(v) for v in values]


def solve_spec(spec: Spec, progress=None) -> dict:
    """Solve a spec; returns the JSON-ready result (DESIGN.md §5 keys)."""
    started = time.perf_counter()
    problem = problem_of(spec)
    grid = spec.solve.alpha_grid()
    alphas = grid if grid[0] == 0 else [0.0] + list(grid)
    traj = run(problem, alphas, basis=spec.solve.basis, dps=spec.solve.dps,
               digits=spec.solve.digits, progress=progress)
    skip = len(alphas) - len(grid)
    eps = traj.eps_g[skip:]
    for a, e in zip(grid, eps):
        if not mpmath.isfinite(e):
            raise PrecisionLost(f"eps_g is not finite at alpha = {a}")
    return {
        "alpha": [float(a) for a in grid],
        "eps_g": _format_eps(eps, spec.solve.digits),
        "R1": np.asarray(traj.R1[skip:]).tolist(),
        "Q1": np.asarray(traj.Q1[skip:]).tolist(),
        "meta": {
            "version": __version__,
            "basis": traj.basis,
            "arithmetic": traj.arithmetic,
            "dps": traj.dps,
            "digits": spec.solve.digits,
            "agreement_digits": _json_float(traj.stats.get("agreement_digits")),
            "n_steps": traj.stats.get("n_steps"),
            "n_fevals": traj.stats.get("n_fevals"),
            "wall_s": time.perf_counter() - started,
            "activation": spec.model.activation, "K": spec.model.K, "M": spec.model.M,
            "L": problem.L, "eta": float(spec.training.eta), "order": spec.training.order,
        },
    }


def _json_float(x):
    if x is None:
        return None
    x = float(x)
    return x if np.isfinite(x) else None
