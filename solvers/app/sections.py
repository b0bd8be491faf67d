"""The optional spec sections of the subcommands, declared in the schema form of
:mod:`solvers.app.spec` (key -> (converter, default, check)) and read with ``parse_section``,
so that every section reports its errors in one format.

``None`` as a default means "not given"; what that means is said next to the key.
"""
from __future__ import annotations

from solvers.app.validate import MAX_DPS
from solvers.app.spec import REQUIRED, check, convert, parse_section, section_error  # noqa: F401
from solvers.app.spec import SIMULATE_SCHEMA as _SIMULATE_SCHEMA

ROUTES = ("modes", "companion", "levels")


def _at_most(n):
    return check.rule(lambda v: v <= n, f"must be <= {n}")


# [linear]: `linear curve|window|feature-scaling`
LINEAR_SCHEMA = {
    "route": (convert.str, "modes", check.one_of(*ROUTES)),
    "N_l": (convert.list_of(convert.int, "list of integers"), None,    # powers of two below N
            check.all(check.each(check.ge(1)), check.distinct, check.rule(
                lambda v: len(v) <= 1000, "must have at most 1000 entries"))),
    "rotated": (convert.bool, False, None),
    "n_W": (convert.int, 20, check.all(check.ge(2), _at_most(10_000))),
    "simulate": (convert.bool, False, None),
    "n_seeds": (convert.int, 20, check.all(check.ge(2), _at_most(10_000))),
    "untrainable": (convert.str, "frozen", check.one_of("frozen", "zero")),
    "alpha_burn": (convert.float, None, check.ge(0)),     # 10 relaxation times of the slowest mode
    "alpha_max": (convert.float, None, check.gt(0)),      # 2 alpha_burn + 50; > alpha_burn
}

# [simulate]: `simulate`, the simulate cells of a sweep, and read by every subcommand of the
# common spec (declared next to the common sections in solvers.app.spec)
SIMULATE_SCHEMA = _SIMULATE_SCHEMA

# [plateau]: `plateau`
PLATEAU_SCHEMA = {
    "dps": (convert.int, 30, check.all(check.ge(15), check.rule(lambda v: v <= MAX_DPS,
                                                                 f"must be <= {MAX_DPS}"))),
    "alpha0": (convert.float, None, check.ge(0)),         # first grid point near the plateau
    # a fraction of R*: beyond 1 the linear extrapolation means nothing (plateau_length)
    "escape_fraction": (convert.float, 0.1, check.all(check.gt(0), check.rule(
        lambda v: v <= 1, "must be <= 1"))),
    # "symmetrised": the paper's symmetric teacher (T_k, D_k); "actual": the spec's own teacher
    # (the numeric route: all students equal, any teacher)
    "teacher": (convert.str, "symmetrised", check.one_of("symmetrised", "actual")),
}

# [asymptotic]: `asymptotic`
ASYMPTOTIC_SCHEMA = {
    "alpha0": (convert.float, None, check.ge(0)),         # the first point of the α grid
    # working digits of the general (numeric) route's fixed point and eigenvalues
    "dps": PLATEAU_SCHEMA["dps"],
}

# [compare]: `compare` (solvers.app.compare)
COMPARE_SCHEMA = {
    # restart the ODEs at this alpha from each seed's simulated mode overlaps; none: the ODEs
    # run from the initial weights only
    "restart_alpha": (convert.float, None, check.gt(0)),
}

# [sweep]: `sweep` (the axes table [sweep.axes] is checked by solvers.app.sweep)
SWEEP_WHAT = ("simulate", "solve")
SWEEP_SCHEMA = {
    "what": (convert.list_of(convert.str, "list of strings"), list(SWEEP_WHAT),
             check.all(check.each(check.one_of(*SWEEP_WHAT)), check.distinct)),
    "out": (convert.str, None, None),                     # SWEEP.sweep next to the file
    "scheduler": (convert.str, None, None),               # local processes
    "n_jobs": (convert.int, None, check.all(check.ge(1), _at_most(1024))),   # all cores
    "axes": (lambda v, label: v, {}, None),               # a table, checked by the sweep
}


def read(spec, sec: str, schema: dict) -> dict:
    """Section ``[sec]`` of a loaded spec (``load_spec(..., extra_sections=...)``), validated."""
    return parse_section({sec: spec.extra.get(sec, {})}, sec, schema, name=str(spec.path))


def error(spec, sec: str, text: str):
    """The SpecError for a rule involving several keys (or other sections)."""
    return section_error(str(spec.path), sec, text)
