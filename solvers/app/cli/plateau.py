"""``scaling-odes plateau SPEC.toml``, ``scaling-odes asymptotic SPEC.toml`` and
``scaling-odes floor SPEC.toml`` (the long-time ε_g with label noise or weight decay:
:func:`floor_result`).

Two routes, named by the ``route`` key of the JSON:

* ``"closed form"``: erf teacher = student, paper readouts, K = M >= 2, no training option:
  the closed forms of the paper (below), as before;
* ``"numeric"``: every other variant the theory supports (student / teacher activations erf,
  linear, relu, polynomials; any readouts; label noise, weight decay, batch size):
  :mod:`solvers.theory.variants` finds the fixed point by Newton on the generated system at
  ``dps`` digits and takes the eigenvalues of its generated Jacobian, verified by a rerun at
  higher precision.  Extra keys: ``digits`` (verified digits per quantity; eigenvalues and the
  escape rate relative to the spectral radius, ε_g relative to the ε_g of a zero student),
  ``decimal`` (the headline numbers as decimal
  strings to those digits), ``eigenvalues`` (real, imag), ``fixed_point_residual``, ``dps``
  (the precision of the verifying run); for ``asymptotic`` also ``eps_floor`` (clean ε_g at
  the fixed point: the noise floor with label noise at order 2) and ``fixed_point.start`` /
  ``fixed_point.exact`` (perfect learning R = Q = T exactly, or Newton from it or from the
  ODE state at alpha0).
  What a variant cannot have is refused in one line with the reason (exit status 2): a plateau
  needs K >= 2, uniform student readouts, a student that is neither linear nor ReLU; both need
  a fixed readout and a constant learning rate; the asymptotic linearisation is refused for
  linear students with K >= 2 (a continuum of minima) and for ReLU at exact perfect learning
  (singular covariance).  The plateau is that of the spec's teacher symmetrised as below (on
  both routes), or with ``[plateau] teacher = "actual"`` of the spec's own teacher (all
  students equal; always the numeric route, ``"teacher": "actual"`` in the JSON); the numeric route's ``tau_esc`` is 1/``escape_rate`` and it has no
  ``plateau_length``.  Digits verified: dps - 10 (at least 15).

    [asymptotic]   dps = 30    (the numeric route's working digits)

The closed-form route (K = M, erf):

plateau: the symmetric plateau of the spec's teacher, symmetrised as in the paper (§5.1.1):
T_k = mean diagonal of the mode-k teacher matrix, D_k = mean off-diagonal row sum.  Keys:
``R1``, ``Q1`` (level-1 plateau matrices), ``fixed_point`` (levels 0..L-1 and modes),
``eps_plateau``, ``escape_rate`` (largest real eigenvalue of the generated Jacobian at the fixed
point), ``tau_esc`` (closed form, Eq. 116, an order-1 result), and — when the spec's trajectory
passes the plateau — ``plateau_length`` (see :func:`plateau_length`).

    [plateau]   dps = 30   alpha0 = 300   escape_fraction = 0.1     (all optional)
                teacher = "symmetrised"   ("actual": the spec's own teacher, numeric route)

asymptotic: the linearisation of the generated system at perfect learning R = Q = T (the spec's
actual teacher, students relabelled as they specialised), from the ODE state at ``alpha0``.
Keys: ``rates`` (positive decay rates of eigen-directions with a first-order ε_g weight),
``alpha`` (the spec's grid points >= alpha0), ``eps_g`` (first-order ε_g, Eq. 122 with the
derived matrix), ``eps_g_ode`` (the ODE solution for comparison), ``alpha0``.

    [asymptotic]   alpha0 = 6000    (optional; default: the first point of the α grid)
"""
from __future__ import annotations

import math
import time
from fractions import Fraction

import numpy as np

from solvers.app import sections
from solvers.app.cli.common import spec_command


def register(sub) -> None:
    for name, result_of, text in (
            ("plateau", plateau_result, "symmetric plateau: fixed point, escape"),
            ("asymptotic", asymptotic_result, "linearised convergence near perfect learning"),
            ("floor", floor_result, "the long-time error with label noise or weight decay")):
        spec_command(sub, name, _command(result_of), text)


# -- shared -----------------------------------------------------------------------------------

def _load(path, command="plateau"):
    """The spec, sized by the route plateau / asymptotic run (solvers.app.validate.check_plateau:
    a fixed point and float64 modes, not the ODE solve of [solve] basis and dps)."""
    from solvers.app.spec import SpecError, load_spec
    from solvers.app.validate import check_plateau
    from solvers.app.sizing import announce, work_estimate
    from solvers.app.validate import plateau_work
    spec = load_spec(path, extra_sections=("plateau", "asymptotic"), sizing=None)
    sec = plateau_section(spec, command)
    try:
        check_plateau(spec, command, sec)
    except ValueError as e:
        raise SpecError(f"{spec.path}: {' '.join(str(e).split())}") from None
    secs, need, route = plateau_work(spec, command, sec)
    dps = (sec or {}).get("dps", 30)
    announce(work_estimate(command, route, f"{dps} digits", secs, need))
    return spec


def plateau_section(spec, command: str) -> dict | None:
    """The validated ``[plateau]`` / ``[asymptotic]`` section for sizing, or None when it is
    bad (the command itself reports that, in its own words)."""
    schema = sections.PLATEAU_SCHEMA if command == "plateau" else sections.ASYMPTOTIC_SCHEMA
    try:
        return sections.read(spec, command, schema)
    except Exception:
        return None


def closed_form_route(spec, teacher: str = "symmetrised") -> bool:
    """Whether the erf closed forms apply (:func:`solvers.theory.variants.closed_form_applies`)."""
    from solvers.theory.variants import closed_form_applies
    return closed_form_applies(spec, teacher)


def _check_numeric(spec, command):
    """The general route's refusals, one line each (solvers.theory.variants says why)."""
    from solvers.app.spec import refuse_training_options
    from solvers.theory.variants import asymptotic_refusal, plateau_refusal
    m, tr = spec.model, spec.training
    trained = m.readout != "fixed"
    if not trained:
        try:
            refuse_training_options(spec, f"the {command} linearisation",
                                    supported=("noise", "weight_decay", "batch_size"))
        except ValueError as e:
            raise ValueError(f"{spec.path}: {e}") from None
    key = m.system_key() if not trained else None
    if command == "plateau":
        reason = plateau_refusal(key, trained=trained)
    else:
        moved = tr.weight_decay != 0 or (tr.noise != 0 and tr.order == 2)
        reason = asymptotic_refusal(key, trained=trained, moved=moved)
    if reason:
        raise ValueError(f"{spec.path}: no {command} linearisation: {reason}")


def teacher_matrices(problem, dps=30):
    """(L, M, M) exact Fractions of the problem's teacher modes (binary values of the
    working-precision conversion when the spec gives levels)."""
    from solvers.core.numbers import MpmathContext
    from solvers.core.numbers import exact_fraction
    init = problem.init
    M = problem.key.M
    if init.basis == "modes":
        return np.array([[[Fraction(x) for x in row] for row in Tk] for Tk in init.T],
                        dtype=object)
    with MpmathContext(dps + 2 * problem.L + 10) as ctx:
        num = problem.numeric(ctx)
        iu = np.triu_indices(M)
        out = np.empty((problem.L, M, M), dtype=object)
        for k in range(problem.L):
            for p, (i, j) in enumerate(zip(*iu)):
                out[k, i, j] = out[k, j, i] = exact_fraction(num.T_modes[k, p])
        return out


def _grid(spec):
    grid = spec.solve.alpha_grid()
    return grid if grid[0] == 0 else [0.0] + list(grid)



# -- plateau ----------------------------------------------------------------------------------

def plateau_result(spec) -> dict:
    from solvers.theory.plateau import (SymmetricTeacher, analytic_escape, escape_rate, plateau_fixed_point,
                          plateau_height, to_float)
    from solvers.app.solve import problem_of
    sec = sections.read(spec, "plateau", sections.PLATEAU_SCHEMA)
    if not closed_form_route(spec, sec["teacher"]):
        return plateau_numeric_result(spec, sec)
    dps = sec["dps"]
    problem = problem_of(spec)
    M = spec.model.M
    teacher = SymmetricTeacher.from_modes(teacher_matrices(problem, dps))
    S1 = float(sum(float(l) * (t + d) for l, t, d in
                   zip(problem.spectrum.eigenvalues, teacher.T, teacher.D)))
    T1 = float(sum(float(l) * t for l, t in zip(problem.spectrum.eigenvalues, teacher.T)))
    D1 = S1 - T1
    if not (M * ((M - 1) * T1 - D1 + M) > 0 and S1 > 0):
        raise ValueError(f"{spec.path}: the symmetrised teacher (T = {T1:.4g}, D = {D1:.4g}) "
                         "has no symmetric plateau (needs (M-1)T - D + M > 0 and T + D > 0)")
    fp = plateau_fixed_point(M, problem.spectrum, teacher, problem.eta, problem.order, dps=dps)
    lam_esc = to_float(analytic_escape(fp, teacher))
    f = lambda a: np.array([[to_float(x) for x in row] for row in a])  # noqa: E731
    from solvers.core.problem import unpack_state
    Rl, Ql = unpack_state(f(fp.y_levels), M, M)
    Rm, Qm = unpack_state(f(fp.y_modes), M, M)
    R1, Q1 = to_float(fp.R1), to_float(fp.Q1)
    out = {
        "R1": np.full((M, M), R1).tolist(),
        "Q1": np.full((M, M), Q1).tolist(),
        "fixed_point": {"levels": {"R": Rl.tolist(), "Q": Ql.tolist()},
                        "modes": {"R": Rm.tolist(), "Q": Qm.tolist()}},
        "eps_plateau": to_float(plateau_height(fp)),
        "escape_rate": escape_rate(fp),
        "tau_esc": 1.0 / lam_esc if lam_esc > 0 else None,
        "teacher": {"T": [float(t) for t in teacher.T], "D": [float(d) for d in teacher.D]},
        "route": "closed form",
    }
    if out["tau_esc"] is None:
        del out["tau_esc"]
        out["note"] = "T_2 - D_2/(M-1) <= 0: the symmetric plateau does not escape"
        return out
    tr = spec.training
    from solvers.theory.plateau_length import plateau_length  # SymPy: only where it is used
    length = plateau_length(problem, _grid(spec), out["eps_plateau"], R1, out["escape_rate"],
                            sec["alpha0"], sec["escape_fraction"],
                            sigma_J=tr.sigma_J if tr.init == "random" else None, N=spec.data.N)
    out.update(length)
    return out


def _digits_of(dps):
    """The digits the general route verifies at ``[plateau] dps``: 10 guard digits, at least
    the 15 a float64 JSON number shows."""
    return max(15, dps - 10)


def _nstr(x, digits):
    import mpmath
    return mpmath.nstr(x, digits, strip_zeros=False)


def _abs_str(x, scale, digits):
    """x to ``digits`` digits relative to ``scale`` (an eigenvalue against the spectral radius)."""
    import mpmath
    if abs(x) <= scale * mpmath.mpf(10) ** (-digits):
        return "0"
    keep = digits - int(mpmath.floor(mpmath.log10(scale))) + int(mpmath.floor(
        mpmath.log10(abs(x))))
    return _nstr(x, max(1, keep))


def plateau_numeric_result(spec, sec) -> dict:
    """The general route (solvers.theory.variants.plateau_numeric) on the symmetrised teacher."""
    import mpmath
    from solvers.app.solve import problem_of
    from solvers.theory.plateau import SymmetricTeacher
    from solvers.theory.variants import Refused, plateau_numeric, symmetric_teacher_modes
    from solvers.theory.fixed_points import NotVerified
    from solvers.core.problem import unpack_state
    _check_numeric(spec, "plateau")
    dps = sec["dps"]
    problem = problem_of(spec)
    K, M = spec.model.K, spec.model.M
    Tm = teacher_matrices(problem, dps)
    teacher = SymmetricTeacher.from_modes(Tm)
    if sec["teacher"] == "actual":
        iu = np.triu_indices(M)
        T_packed = np.array([list(Tk[iu]) for Tk in Tm], dtype=object)
    else:
        T_packed = symmetric_teacher_modes(M, teacher)
    digits = _digits_of(dps)
    try:
        r = plateau_numeric(problem, T_packed, dps=dps, digits=digits)
    except (Refused, NotVerified) as e:
        raise ValueError(f"{spec.path}: no plateau: {e}") from None
    y = r["y"]
    L = problem.L
    with mpmath.workdps(r["dps"]):
        lam = [mpmath.mpf(int(v.p)) / int(v.q) for v in problem.spectrum.eigenvalues]
        levels = np.array([[sum(lam[k] ** l * y[k, s] for k in range(L))
                            for s in range(y.shape[1])] for l in range(L + 1)], dtype=object)
    f = lambda a: np.array([[float(x) for x in row] for row in a])  # noqa: E731
    Rl, Ql = unpack_state(f(levels[:L]), K, M)
    Rm, Qm = unpack_state(f(y), K, M)
    R1, Q1 = unpack_state(f(levels[1:2]), K, M)
    esc = float(r["escape"])
    ev = r["eigenvalues"]
    out = {
        "R1": R1[0].tolist(),
        "Q1": Q1[0].tolist(),
        "fixed_point": {"levels": {"R": Rl.tolist(), "Q": Ql.tolist()},
                        "modes": {"R": Rm.tolist(), "Q": Qm.tolist()}},
        "eps_plateau": float(r["eps"]),
        "escape_rate": esc,
        "teacher": ({"T": [float(t) for t in teacher.T], "D": [float(d) for d in teacher.D]}
                    if sec["teacher"] == "symmetrised" else "actual"),
        "route": "numeric",
        "eigenvalues": {"real": [float(z.real) for z in ev], "imag": [float(z.imag) for z in ev]},
        "digits": {"fixed_point": r["digits"]["fixed_point"], "eps_plateau": r["digits"]["eps"],
                   "escape_rate": r["digits"]["escape"],
                   "eigenvalues": r["digits"]["eigenvalues"]},
        "decimal": {"eps_plateau": _abs_str(r["eps"], r["eps_scale"], r["digits"]["eps"]),
                    "escape_rate": _abs_str(r["escape"], r["radius"], r["digits"]["escape"])},
        "fixed_point_residual": float(r["residual"]),
        "dps": r["dps"],
    }
    if esc > 0:
        out["tau_esc"] = 1.0 / esc
    else:
        out["note"] = ("the largest real eigenvalue at the equal-students fixed point is "
                       f"{'0 to the verified digits' if esc == 0 else 'negative'}: no "
                       "exponential escape from it")
    return out


def _f64():
    from solvers.core.numbers import Float64Context
    return Float64Context()


# -- asymptotic -------------------------------------------------------------------------------

def asymptotic_result(spec) -> dict:
    from solvers.theory.asymptotic import FullLinearisation, matched_permutation
    from solvers.app.solve import problem_of
    sec = sections.read(spec, "asymptotic", sections.ASYMPTOTIC_SCHEMA)
    if not closed_form_route(spec):
        return _with_exponents(asymptotic_numeric_result(spec, sec))
    problem = problem_of(spec)
    M = spec.model.M
    alpha0, after, states, eps, i0 = _trajectory_from(spec, sec, problem)
    from solvers.theory.plateau_length import level_one_R
    R1, _ = level_one_R([states[i0]], problem.numeric(_f64()).lam, M)
    lin = FullLinearisation(problem, matched_permutation(R1[0], M))
    alphas = [alpha0] + after
    return _with_exponents({
        "rates": lin.rates(),
        "alpha": alphas,
        "eps_g": lin.eps_g(states[i0], alpha0, alphas),
        "eps_g_ode": [float(e) for e in eps[i0:]],
        "alpha0": alpha0,
        "fixed_point_residual": lin.residual,
        "route": "closed form",
    })


def _with_exponents(out: dict) -> dict:
    """The late exponent of the ODE's curve (above its floor, if any) next to the
    linearisation's: its first-order curve fitted on the same window, and what it is in the
    end, an exponential approach at the slowest rate, not a power law (L is finite)."""
    from solvers.theory.exponent import late_exponent
    floor = out.get("eps_floor", 0.0)
    out["late_exponent"] = late_exponent(out["alpha"], out["eps_g_ode"], floor=floor)
    out["exponent_theory"] = {
        "linearisation": late_exponent(out["alpha"], [float(e) for e in out["eps_g"]],
                                       floor=floor),
        "approach": "exponential",
        "slowest_rate": min(out["rates"]) if out["rates"] else 0.0,
        "note": "the linearised eps_g is a sum of exp(-rate alpha): its exponent is local to "
                "the window and grows without bound once the slowest rate dominates"}
    return out


def _trajectory_from(spec, sec, problem):
    """(alpha0, the grid points after it, the modes states at 0, alpha0 and after, their ε_g,
    the index of alpha0 among them) of ``[asymptotic] alpha0`` (default: the first point)."""
    from solvers.theory.asymptotic import mode_states
    grid = _grid(spec)
    alpha0 = sec["alpha0"] if sec["alpha0"] is not None else float(spec.solve.alpha_grid()[0])
    if alpha0 >= grid[-1]:
        raise ValueError(f"{spec.path}: [asymptotic] alpha0 = {alpha0:g} must be below the "
                         f"last grid point {grid[-1]:g}")
    after = [a for a in grid if a > alpha0]
    states, eps = mode_states(problem, [0.0] + ([alpha0] if alpha0 > 0 else []) + after)
    return alpha0, after, states, eps, 1 if alpha0 > 0 else 0


def asymptotic_numeric_result(spec, sec, command="asymptotic") -> dict:
    """The general route (solvers.theory.variants.asymptotic_numeric) at the spec's teacher."""
    from solvers.app.solve import problem_of
    from solvers.theory.asymptotic import matched_permutation
    from solvers.theory.fixed_points import NotVerified
    from solvers.theory.variants import NumericLinearisation, Refused, asymptotic_numeric
    from solvers.core.problem import unpack_state
    _check_numeric(spec, command)
    problem = problem_of(spec)
    K, M = spec.model.K, spec.model.M
    alpha0, after, states, eps, i0 = _trajectory_from(spec, sec, problem)
    y0 = np.asarray(states[i0], dtype=float)
    R1 = np.tensordot(np.asarray(problem.numeric(_f64()).lam, dtype=float),
                      unpack_state(y0, K, M)[0], axes=1)
    try:
        perm = matched_permutation(R1, M) if K == M else None
    except ValueError:
        perm = None
    dps = sec["dps"]
    digits = _digits_of(dps)
    try:
        # Newton from the end of the integrated trajectory, the state nearest the fixed point
        # (from alpha0 it may not converge: still near a plateau, or far along a slow mode)
        r = asymptotic_numeric(problem, np.asarray(states[-1], dtype=float), perm, dps=dps,
                               digits=digits, alpha_ode=float(([alpha0] + after)[-1]))
    except (Refused, NotVerified) as e:
        what = "asymptotic linearisation" if command == "asymptotic" else command
        raise ValueError(f"{spec.path}: no {what}: {e}") from None
    lin = NumericLinearisation(problem, r)
    alphas = [alpha0] + after
    f = lambda a: np.array([[float(x) for x in row] for row in a])  # noqa: E731
    Rm, Qm = unpack_state(f(r["y"]), K, M)
    ev = r["eigenvalues"]
    return {
        "rates": lin.rates(),
        "alpha": alphas,
        "eps_g": lin.eps_g(y0, alpha0, alphas),
        "eps_g_ode": [float(e) for e in eps[i0:]],
        "alpha0": alpha0,
        "fixed_point_residual": float(r["residual"]),
        "route": "numeric",
        "fixed_point": {"modes": {"R": Rm.tolist(), "Q": Qm.tolist()}, "start": r["start"],
                        "exact": r["exact"]},
        "eps_floor": float(r["eps"]),
        "eigenvalues": {"real": [float(z.real) for z in ev], "imag": [float(z.imag) for z in ev]},
        "digits": {"fixed_point": r["digits"]["fixed_point"], "eps_floor": r["digits"]["eps"],
                   "eigenvalues": r["digits"]["eigenvalues"]},
        "decimal": {"eps_floor": _abs_str(r["eps"], r["eps_scale"], r["digits"]["eps"]),
                    "slowest_rate": _abs_str(-ev[0].real, max(abs(z) for z in ev),
                                             r["digits"]["eigenvalues"])},
        "dps": r["dps"],
    }


# -- floor ------------------------------------------------------------------------------------

def floor_result(spec) -> dict:
    """``scaling-odes floor``: the clean ε_g at the fixed point that label noise or weight decay
    moves off perfect learning (the numeric asymptotic route: Newton from the end of the
    integrated trajectory, verified by a rerun), the slowest relaxation rate, and, where it
    applies, the linear-response estimate (solvers.theory.floor) beside it."""
    from solvers.app.solve import problem_of
    from solvers.theory.floor import linear_response, linear_response_refusal
    from solvers.theory.variants import _readout_numbers, _teacher_matrices
    tr, m = spec.training, spec.model
    if tr.weight_decay == 0 and (tr.noise == 0 or tr.order == 1):
        raise ValueError(f"{spec.path}: no floor: without label noise (at order 2) or weight "
                         f"decay a student that can learn its teacher reaches eps_g = 0; set "
                         f"[training] noise or weight_decay")
    sec = sections.read(spec, "asymptotic", sections.ASYMPTOTIC_SCHEMA)
    r = asymptotic_numeric_result(spec, sec, command="floor")
    out = {"eps_floor": r["eps_floor"], "digits": r["digits"]["eps_floor"],
           "decimal": r["decimal"]["eps_floor"], "rates": r["rates"],
           "slowest_rate": -max(r["eigenvalues"]["real"]),
           "relaxation_alpha": 1 / -max(r["eigenvalues"]["real"]),
           "fixed_point": r["fixed_point"], "fixed_point_residual": r["fixed_point_residual"],
           "alpha": r["alpha"], "eps_g_ode": r["eps_g_ode"], "route": "numeric", "dps": r["dps"]}
    key = m.system_key() if m.readout == "fixed" else None
    why = linear_response_refusal(key, noise=tr.noise, weight_decay=tr.weight_decay,
                                  order=tr.order) if key else "a trained readout moves"
    if why is None:
        problem = problem_of(spec)
        num = problem.numeric(_f64())
        lam = np.asarray(num.lam, dtype=float)
        Tm = np.asarray(_teacher_matrices(num.T_modes, m.M), dtype=float)
        T1 = np.tensordot(lam, Tm, axes=1)
        v = [float(x) for x in _readout_numbers(key)[0]]
        est = linear_response(key.student, v, T1, float(tr.eta), float(tr.noise),
                              tr.batch_size)
        out["linear_response"] = {"eps_floor": est,
                                  "relative_deviation": r["eps_floor"] / est - 1}
    else:
        out["linear_response"] = {"refused": why}
    return out


def _command(result_of):
    """The subcommand: load the spec, compute, add meta, check finiteness, write JSON."""
    def run(args) -> int:
        started = time.perf_counter()
        spec = _load(args.spec, args.command)
        out = result_of(spec)
        out["meta"] = _meta(spec, started)
        _emit(out, args)
        return 0
    return run


def _meta(spec, started):
    from solvers import __version__
    return {"version": __version__, "K": spec.model.K, "M": spec.model.M, "L": spec.data.L,
            "eta": float(spec.training.eta), "order": spec.training.order,
            "teacher": spec.training.init, "wall_s": time.perf_counter() - started}


def _emit(out, args):
    from solvers.app.cli.common import emit
    _check_finite(out)
    emit(out, args)


def _check_finite(x, where="result"):
    if isinstance(x, dict):
        for k, v in x.items():
            _check_finite(v, f"{where}.{k}")
    elif isinstance(x, (list, tuple)):
        for v in x:
            _check_finite(v, where)
    elif isinstance(x, float) and not math.isfinite(x):
        raise ValueError(f"{where} is not finite ({x}): precision lost, raise [plateau] dps")
