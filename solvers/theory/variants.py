"""The plateau and the asymptotic state of every variant of the family: which exist, and the
numeric route that finds them (:mod:`solvers.theory.fixed_points`).

Plateau (the symmetric, unspecialised fixed point).  Identical students stay identical when the
student readouts are uniform: the update of J_i is η v_i Δ g_s'(x_i) ξ/√N, the same for equal
J_i and equal v_i, whatever the teacher (activation, readouts, label noise), the weight decay
and the batch size; in the order parameters, the right-hand side commutes with permutations of
the students, and the states they fix (R_in = r_n, Q_ij = q) form an invariant subspace.  On
it the dynamics is that of one averaged student; its attracting fixed point is the plateau of
the full system when the full Jacobian has an unstable direction there (the escape).  So:

* mixed pairs (student ≠ teacher activation), any K, M, any teacher readouts, noise, weight
  decay, batch size: the plateau exists (it is found, not assumed: Newton from the ODE state
  on the subspace, the full right-hand side checked to vanish there);
* non-uniform student readouts: refused (students with different v_i move apart at once, the
  subspace is not invariant);
* K = 1: refused (every state has all students equal: that fixed point is where the student
  converges, not a plateau);
* a ReLU student: refused (equal students have coinciding fields, where the ReLU integrals'
  derivatives diverge, ∂P(x_i > 0, x_j > 0)/∂ρ = 1/(2π sqrt(1-ρ²)); the generated coefficients
  divide by zero there: no linearisation; a ReLU *teacher* with a smooth student is fine);
* a linear student: refused (the output depends on Σ_i v_i J_i only, the loss is a convex
  quadratic in it, and the equal-students point is a minimum: no saddle, no plateau);
* a trained readout or a learning-rate schedule: refused (v moves, resp. no fixed point of a
  non-autonomous ODE).

A fixed point that comes out stable (largest real eigenvalue <= 0) is reported with a note: the
students never leave it.

Asymptotic state.  Perfect learning R = Q = T (students relabelled as they specialised) is a
fixed point when the student can copy the teacher unit by unit: same activation, K = M and
v_i = u_{π(i)} for the matching π, no weight decay, no label noise at order 2.  Label noise
(order 2) or weight decay move it; then, and whenever perfect learning is not available, the
asymptotic state is the stable fixed point next to the ODE's late state (the end of the
integrated trajectory, from the command line), found by Newton from it.  Refused with the reason: ReLU at exact perfect learning (the fields x_i = y_i have a
singular covariance where the ReLU integrals' derivatives diverge), a singular Jacobian (a
continuum of minima, e.g. linear students with K >= 2, where only Σ v_i J_i is determined), an
unstable fixed point (the ODE state is still near a plateau).
"""
from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np
import sympy as sp

from solvers.core.numbers import Float64Context, MpmathContext, exact_fraction
from solvers.core.problem import Problem, explicit_init, unpack_state
from solvers.core.registry import load
from solvers.theory.asymptotic import FirstOrderEps, eps_gradient
from solvers.theory.fixed_points import (NoFixedPoint, Setup, equal_students, full_state,
                                         eigenvalues, newton, verified)


def closed_form_applies(spec, teacher: str = "symmetrised") -> bool:
    """Whether a spec runs the erf closed-form route (:mod:`solvers.theory.plateau`): erf
    teacher = student, paper readouts, K = M >= 2, no training option (noise, weight decay,
    batch size, schedule, trained readout), and for ``plateau`` the symmetrised teacher
    (``[plateau] teacher``).  Everything else takes the numeric route."""
    m = spec.model
    return (m.is_plain and m.activation == "erf" and spec.training.is_plain
            and not spec.training.family_options() and m.K == m.M and m.M >= 2
            and teacher == "symmetrised")


def numeric_seconds(L, K, M, command, dps=30) -> float:
    """CPU seconds of the numeric route (:func:`plateau_numeric` / :func:`asymptotic_numeric`
    with the default two runs at dps and 1.5 dps).  Measured (erf student, ReLU teacher,
    K = M = 2, order 2, one core, loaded machine; BENCHMARKS.md "plateau / asymptotic: the
    numeric route"): plateau 1.0 / 2.6 / 6.8 / 35 s at L = 3 / 8 / 16 / 32, i.e. about
    1 + 4.6e-5 (L N_STATE)^2.5 (a dense eigenproblem plus Jacobians of L N_STATE rows);
    asymptotic 6.2 / 30 / 211 s at L = 8 / 16 / 32, about 2 + 2.1e-5 (L N_STATE)^3 (Newton on
    the whole state: dense mpmath solves).  Precision: (dps/30)^1.5."""
    size = L * (K * M + K * (K + 1) // 2)
    p = max(1.0, dps / 30) ** 1.5
    if command == "plateau":
        return (1.0 + 4.6e-5 * size ** 2.5) * p
    return (2.0 + 2.1e-5 * size ** 3) * p


class Refused(ValueError):
    """The variant has no such fixed point (the message is the one-line reason)."""


def _readout_numbers(key):
    vals = [sp.sympify(t) for t in key.readouts]
    return vals[:key.K], vals[key.K:]


def _not_autonomous(trained, schedule) -> str | None:
    """Why neither linearisation applies to a moving readout or a schedule (None otherwise)."""
    if trained:
        return ('[model] readout = "trained": the readouts move too; the linearisations are '
                'for fixed readouts')
    if schedule is not None:
        return ("[training] schedule: eta changes with alpha, the ODE is not autonomous and "
                "has no fixed point")
    return None


def plateau_refusal(key, *, trained=False, schedule=None) -> str | None:
    """None when the variant has a symmetric plateau to look for, else the reason (one line)."""
    if (why := _not_autonomous(trained, schedule)):
        return why
    if key.K < 2:
        return ("K = 1: every state has all students equal, so the equal-students fixed point "
                "is where the student converges, not a plateau")
    if key.student == "relu":
        return ("student activation 'relu': on the equal-students subspace two students' "
                "fields coincide, where the ReLU integrals of g'(x_i) g'(x_j) have derivatives "
                "~ 1/sqrt(1 - rho^2) that diverge (the generated coefficients divide by zero "
                "there): no linearisation")
    if key.student == "linear":
        return ("student activation 'linear': the output depends on sum_i v_i J_i only, the "
                "loss is a convex quadratic in it and the equal-students point is its minimum "
                "(no saddle, no plateau)")
    v, _ = _readout_numbers(key)
    if any(sp.simplify(x - v[0]) != 0 for x in v):
        return (f"student readouts {[str(x) for x in v]} are not uniform: students with "
                f"different v_i move apart, the all-students-equal subspace is not invariant "
                f"and there is no symmetric plateau")
    return None


def asymptotic_refusal(key, *, trained=False, schedule=None, moved=False) -> str | None:
    """None when the asymptotic linearisation may be looked for, else the reason.  ``moved``:
    weight decay, or label noise at order 2 (the fixed point leaves R = Q = T)."""
    if (why := _not_autonomous(trained, schedule)):
        return why
    if key.student == "linear" and key.K >= 2:
        return (f"linear students with K = {key.K} >= 2: the output depends on sum_i v_i J_i "
                f"only, the minima form a continuum and the Jacobian is singular there (no "
                f"isolated asymptotic state)")
    if key.student == "relu" and key.same_activation and key.K == key.M and not moved:
        return ("relu student and teacher: at perfect learning x_i = y_pi(i), a singular "
                "covariance where the ReLU integrals' derivatives diverge (~ 1/sqrt(1 - rho^2)); "
                "no linearisation (with label noise at order 2 or weight decay the fixed point "
                "moves off it and is supported)")
    return None


def perfect_learning_available(key, perm) -> str | None:
    """None when R = Q = T (students relabelled by ``perm``) can be a fixed point, else why not."""
    if not key.same_activation:
        return (f"student activation {key.student!r} != teacher {key.teacher_activation!r}: "
                f"no unit-by-unit copy of the teacher")
    if key.K != key.M:
        return f"K = {key.K} != M = {key.M}: no unit-by-unit copy of the teacher"
    if perm is None:
        return "the state has not specialised (no one-to-one student-teacher match)"
    v, u = _readout_numbers(key)
    inv = np.argsort(perm)                     # student i follows teacher inv[i]
    if any(sp.simplify(v[i] - u[int(inv[i])]) != 0 for i in range(key.K)):
        return ("the student readouts are not those of the teachers the students follow "
                "(v_i != u_pi(i))")
    return None


# -- teachers and states as exact numbers ------------------------------------------------------

def symmetric_teacher_modes(M, teacher):
    """(L, N_TEACHER) exact packed teacher modes of a :class:`SymmetricTeacher` (T_k on the
    diagonal, D_k/(M-1) off it; M = 1 has no off-diagonal entries)."""
    iu = np.triu_indices(M)
    rows = []
    for t, d in zip(teacher.T, teacher.D):
        m = np.full((M, M), Fraction(d) / (M - 1) if M > 1 else Fraction(0), dtype=object)
        np.fill_diagonal(m, Fraction(t))
        rows.append(m[iu])
    return np.array(rows, dtype=object)


def _setup(problem, T_packed, ctx, key=None):
    """The generated system of ``problem`` (or of ``key``, e.g. its equal-students reduction)
    at the teacher T_packed, in ctx."""
    return Setup.build(problem.key if key is None else key, problem.spectrum, T_packed,
                       problem.eta, problem.order, ctx, noise=problem.noise,
                       decay=problem.weight_decay, batch_size=problem.batch_size)


def _teacher_matrices(T_packed, M):
    iu = np.triu_indices(M)
    out = np.empty((len(T_packed), M, M), dtype=object)
    for k, row in enumerate(T_packed):
        for p, (i, j) in enumerate(zip(*iu)):
            out[k, i, j] = out[k, j, i] = Fraction(row[p])
    return out


# -- plateau -----------------------------------------------------------------------------------

def _equal_students_init(problem, T_packed):
    """The problem's initial condition with every student replaced by their mean (R mean over i,
    Q mean over all i, j: the Gram matrix of the mean student) and the given teacher modes."""
    K, M = problem.key.K, problem.key.M
    num = problem.numeric(Float64Context())
    R, Q = unpack_state(np.asarray(num.y_modes, dtype=float), K, M)
    L = problem.L
    Rm = R.mean(axis=1)                                        # (L, M)
    Qm = Q.reshape(L, -1).mean(axis=1)                         # (L,)
    Rn = np.array([[[Fraction(float(Rm[k, n])) for n in range(M)] for _ in range(K)]
                   for k in range(L)], dtype=object)
    Qn = np.array([[[Fraction(float(Qm[k]))] * K for _ in range(K)] for k in range(L)],
                  dtype=object)
    return explicit_init("modes", Rn, Qn, _teacher_matrices(T_packed, M))


def ode_starts(problem, T_packed, n_best: int = 3):
    """Float64 reduced starting points for the equal-students Newton: the ODE from the
    problem's initial condition made symmetric (:func:`_equal_students_init`), sampled at
    α = 2^j/η (j = 0..10), projected on the subspace, best first by the right-hand side there
    (a state that has left the subspace by round-off projects badly and comes last)."""
    from solvers.hierarchy.odes import integrate_problem
    p = problem
    sym = Problem(p.key, p.spectrum, p.eta, p.order, _equal_students_init(p, T_packed),
                  noise=p.noise, weight_decay=p.weight_decay, batch_size=p.batch_size)
    eta = float(p.eta)
    alphas = [0.0] + [2.0 ** j / eta for j in range(11)]
    while True:
        # a run that blows up late (e.g. the eta^2 term outgrowing the rest) still gives its
        # earlier states: drop the last point until the run succeeds
        try:
            traj = integrate_problem(sym, alphas, basis="modes", arithmetic="float64",
                                     rtol=1e-10)
            break
        except (ArithmeticError, ValueError, RuntimeError) as e:
            if len(alphas) <= 2:
                raise Refused(f"the ODE on the equal-students subspace fails from the start "
                              f"({' '.join(str(e).split())})") from None
            alphas = alphas[:-1]
    fsys = load(p.key, "numpy")
    fctx = Float64Context()
    num = sym.numeric(fctx)
    scored = []
    for y in traj.states[1:]:
        y = np.asarray(y, dtype=float)
        L, n = y.shape
        emb = equal_students(p.key.K, p.key.M, L, n)
        x = emb.reduce(y)
        yp = emb.state(x, 0.0).astype(float)
        f = fsys.rhs_modes(yp, np.asarray(num.T_modes, float), np.asarray(num.lam, float),
                           np.asarray(num.w, float), float(num.eta), float(num.e2), fctx,
                           noise=float(num.noise), decay=float(num.decay))
        score = float(np.max(np.abs(f))) / max(1e-300, float(np.max(np.abs(yp))))
        if np.isfinite(score):
            scored.append((score, x))
    scored.sort(key=lambda t: t[0])
    return [x for _, x in scored[:n_best]]


def plateau_numeric(problem, T_packed, dps: int = 30, digits: int = 20, starts=None) -> dict:
    """The equal-students plateau of ``problem``'s system with the teacher modes ``T_packed``
    (exact, packed), its ε_g and the spectrum of the full generated Jacobian there, verified by
    reruns at higher precision (:func:`verified`) to ``digits`` digits.

    Returns dict(y (L, N_STATE) mpf, eps, escape (largest real eigenvalue; exactly 0 when
    below the verified resolution), eigenvalues, radius (spectral radius), resolution,
    residual, digits (verified, per quantity; eigenvalues and the escape rate relative to the
    spectral radius, ε_g relative to ``eps_scale``, the ε_g of the zero student), eps_scale,
    dps)."""
    key = problem.key
    reason = plateau_refusal(key, schedule=problem.schedule)
    if reason:
        raise Refused(reason)
    if starts is None:
        starts = ode_starts(problem, T_packed)
    if not starts:
        raise Refused("the ODE on the equal-students subspace gave no finite state to start "
                      "Newton from")
    memo = {}

    def compute(d):
        with MpmathContext(d) as ctx:
            st = _setup(problem, T_packed, ctx, key)
            emb = equal_students(st.K, st.M, st.L, st.n)
            tries = [memo["x"]] if "x" in memo else starts
            err = None
            for x0 in tries:
                try:
                    x, res = newton(st, emb, x0)
                    break
                except NoFixedPoint as e:
                    err = e
            else:
                raise Refused(f"no equal-students fixed point found from the ODE's states "
                              f"({err})")
            memo["x"] = x
            y = emb.state(x, ctx.convert(0))
            scale = max(abs(v) for v in y.ravel())
            if res > mpmath.mpf(10) ** (-(d - 10)) * max(1, scale):
                raise Refused(f"the equal-students point is not a fixed point of the full "
                              f"system (residual {mpmath.nstr(res, 3)}): the subspace is not "
                              f"invariant")
            ev = eigenvalues(st.jac(y), d)
            radius = max(abs(z) for z in ev)
            eps_scale = st.eps_g(0 * y)
            memo["out"] = dict(y=y, eps=st.eps_g(y), residual=res, eigenvalues=ev,
                               eps_scale=eps_scale)
            # ε_g's digits relative to ε_g of the zero student (½ <ζ²>): it may vanish
            return {"fixed_point": (list(y.ravel()), scale),
                    "eps": ([st.eps_g(y)], eps_scale),
                    # relative to the spectral radius: the escape rate may be ~0
                    "escape": ([ev[0].real], radius),
                    "eigenvalues": (ev, radius, True)}

    vals, got, used = verified(compute, digits, dps)
    out = memo["out"]
    ev = out["eigenvalues"]
    radius = max(abs(z) for z in ev)
    escape = vals["escape"][0][0]
    # below the verified resolution (digits relative to the spectral radius) the escape rate
    # is zero: e.g. the zero modes of the rank-one next-level structure at order 1
    resolution = radius * mpmath.mpf(10) ** (-got["escape"])
    if abs(escape) <= resolution:
        escape = mpmath.mpf(0)
    eps = _snap(vals["eps"][0][0], out["eps_scale"], got["eps"])
    return dict(y=out["y"], eps=eps, escape=escape, eigenvalues=ev,
                radius=radius, resolution=resolution, residual=out["residual"], digits=got,
                eps_scale=out["eps_scale"], dps=used)


# -- asymptotic --------------------------------------------------------------------------------

def perfect_state_exact(T_packed, perm, K, M):
    """(L, N_STATE) exact R_k[perm[n], m] = T_k[n, m], Q_k[perm[n], perm[m]] = T_k[n, m]."""
    Tm = _teacher_matrices(T_packed, M)
    inv = np.argsort(perm)
    iu = np.triu_indices(K)
    rows = []
    for k in range(len(Tm)):
        R = Tm[k][inv, :]
        Q = Tm[k][np.ix_(inv, inv)]
        rows.append(list(R.ravel()) + list(Q[iu]))
    return np.array(rows, dtype=object)


def asymptotic_numeric(problem, y_ode, perm, dps: int = 30, digits: int = 20,
                       alpha_ode=None) -> dict:
    """The asymptotic fixed point of ``problem`` (its own teacher) and the spectrum of the full
    generated Jacobian there, verified by reruns to ``digits`` digits.

    Perfect learning (:func:`perfect_learning_available`) is the start, and is exact without
    weight decay and without label noise at order 2 (``exact`` in the result); otherwise Newton
    from it, or from the ODE state ``y_ode`` (float (L, N_STATE)) when there is no perfect
    learning.  Returns dict(y, eps (clean ε_g there: the noise floor), eigenvalues, residual,
    exact, start, eps_scale (ε_g of a student uncorrelated with the teacher: the scale of eps's
    digits), digits, dps)."""
    key = problem.key
    moved = problem.weight_decay != 0 or (problem.noise != 0 and problem.order == 2)
    reason = asymptotic_refusal(key, schedule=problem.schedule, moved=moved)
    if reason:
        raise Refused(reason)
    K, M = key.K, key.M
    if problem.init.basis == "modes":
        T_packed = np.array([list(np.asarray(Tk, dtype=object)[np.triu_indices(M)])
                             for Tk in problem.init.T], dtype=object)
    else:
        # teacher levels -> modes: the Vandermonde solve loses ~2L digits; 20 guard digits
        # beyond the working precision keep the teacher exact to more than the digits verified
        with MpmathContext(dps + 2 * problem.L + 20) as ctx0:
            T_packed = np.array([[exact_fraction(v) for v in row]
                                 for row in problem.numeric(ctx0).T_modes], dtype=object)
    why_not = perfect_learning_available(key, perm)
    exact = why_not is None and not moved
    if why_not is None and (exact or _regular_at(problem, T_packed,
                                                 perfect_state_exact(T_packed, perm, K, M))):
        start = perfect_state_exact(T_packed, perm, K, M)
        start_name = "perfect learning R = Q = T"
    else:
        start = np.array([[Fraction(float(v)) for v in row] for row in y_ode], dtype=object)
        start_name = ("the ODE state at alpha0" if alpha_ode is None
                      else f"the ODE state at alpha = {alpha_ode:g}")
    memo = {}

    def compute(d):
        with MpmathContext(d) as ctx:
            st = _setup(problem, T_packed, ctx, key)
            emb = full_state(st.L, st.n)
            y0 = np.array([[ctx.convert(v) for v in row] for row in start], dtype=object)
            try:
                if exact:
                    y = y0
                    res = max(abs(v) for v in st.rhs(y).ravel())
                    J = st.jac(y)
                else:
                    x0 = memo.get("x", emb.reduce(y0))
                    x, res = newton(st, emb, x0)
                    memo["x"] = x
                    y = emb.state(x, ctx.convert(0))
                    J = st.jac(y)
            except Refused:
                raise
            except NoFixedPoint as e:
                raise Refused(f"no fixed point found from {start_name}: {e}") from None
            except (ZeroDivisionError, ValueError) as e:    # ValueError: orthant quadrature
                why = (f"the fields' covariance is singular there and the ReLU integrals' "
                       f"derivatives diverge" if "relu" in (key.student, key.teacher_activation)
                       else " ".join(str(e).split()) or type(e).__name__)
                raise Refused(f"{key.description}: the generated right-hand side cannot be "
                              f"evaluated at {start_name} ({why}): no linearisation") from None
            scale = max(abs(v) for v in y.ravel())
            if res > mpmath.mpf(10) ** (-(d - 10)) * max(1, scale):
                raise Refused(f"{start_name} is not a fixed point (residual "
                              f"{mpmath.nstr(res, 3)})")
            ev = eigenvalues(J, d)
            radius = max(abs(z) for z in ev)
            small = min(abs(z) for z in ev)
            if small <= mpmath.mpf(10) ** (-(d // 2)) * radius:
                raise Refused("the Jacobian is singular at the fixed point (a continuum of "
                              "fixed points, e.g. linear students with K >= 2 where only "
                              "sum_i v_i J_i is determined): no isolated asymptotic state")
            if ev[0].real > 0:
                raise Refused(f"the fixed point near {start_name} is unstable (eigenvalue "
                              f"{mpmath.nstr(ev[0].real, 6)} > 0): the state at alpha0 is "
                              f"still near a plateau; integrate further (a larger alpha_max)")
            eps_scale = st.eps_g(_scale_state(T_packed, K, M, ctx))
            memo["out"] = dict(y=y, residual=res, eigenvalues=ev, J=J,
                               T=st.T_modes, lam=st.lam, eps_scale=eps_scale)
            # ε_g may vanish (perfect learning): its digits are relative to ε_g of the zero
            # student (½ <ζ²>)
            return {"fixed_point": (list(y.ravel()), scale),
                    "eps": ([st.eps_g(y)], eps_scale),
                    "eigenvalues": (ev, radius, True)}

    vals, got, used = verified(compute, digits, dps)
    out = memo["out"]
    eps = _snap(vals["eps"][0][0], out["eps_scale"], got["eps"])
    return dict(y=out["y"], eps=eps, eigenvalues=out["eigenvalues"],
                residual=out["residual"], exact=exact, start=start_name, J=out["J"],
                T_modes=out["T"], lam=out["lam"], eps_scale=out["eps_scale"], digits=got,
                dps=used)


def _scale_state(T_packed, K, M, ctx):
    """(L, N_STATE) modes state of a student uncorrelated with the teacher (R = 0) whose units
    have the teacher's mean norm per mode (Q_k = tr T_k / M · 1): ε_g there is of the order of
    ½ <ζ²>, the scale of ε_g's digits.  Not the zero student: ReLU's ε_g divides by √Q_ii."""
    Tm = _teacher_matrices(T_packed, M)
    iu = np.triu_indices(K)
    rows = []
    for Tk in Tm:
        q = ctx.convert(sum(Tk[n, n] for n in range(M))) / M
        Q = np.array([[q if i == j else ctx.convert(0) for j in range(K)] for i in range(K)],
                     dtype=object)
        rows.append([ctx.convert(0)] * (K * M) + list(Q[iu]))
    return np.array(rows, dtype=object)


def _snap(x, scale, digits):
    """0 when |x| is below the verified resolution scale·10^-digits, else x."""
    return mpmath.mpf(0) if abs(x) <= scale * mpmath.mpf(10) ** (-digits) else x


def _regular_at(problem, T_packed, y) -> bool:
    """Whether the generated right-hand side can be evaluated at the exact state y (ReLU
    integrals are singular where two fields coincide)."""
    with MpmathContext(20) as ctx:
        st = _setup(problem, T_packed, ctx)
        try:
            st.jac(np.array([[ctx.convert(v) for v in row] for row in y], dtype=object))
        except (ZeroDivisionError, ValueError):
            return False
    return True


class NumericLinearisation(FirstOrderEps):
    """float64 first-order ε_g around a fixed point of :func:`asymptotic_numeric`:
    ε* + ∇ε · expm(J (α - α0)) (y(α0) - y*) and the ε_g-visible decay rates (as
    :class:`solvers.theory.asymptotic.FullLinearisation`, at a numeric fixed point)."""

    def __init__(self, problem, fp: dict):
        self.mod = load(problem.key, "numpy")
        self.ctx = Float64Context()
        f = lambda a: np.array([[float(v) for v in row] for row in a])  # noqa: E731
        self.y_star = f(fp["y"])
        self.J = f(fp["J"])
        self.lam = np.array([float(v) for v in fp["lam"]])
        self.t1 = self.lam @ f(fp["T_modes"])
        self.eps_star = float(fp["eps"])
        self.mu_precise = fp["eigenvalues"]
        self.grad = eps_gradient(self.mod, self.lam, self.y_star, self.t1, self.ctx)

    def rates(self, rel=1e-6):
        """Decay rates -Re μ (from the verified eigenvalues) of the eigen-directions with a
        first-order ε_g weight (|∇ε·v| > rel |∇ε||v|, float64 eigenvectors), merged when
        closer than 1e-8 relative."""
        mu, V = np.linalg.eig(self.J)
        norm = np.linalg.norm(self.grad)
        if norm == 0:
            return []
        wt = np.abs(self.grad @ V) / (np.linalg.norm(V, axis=0) * norm)
        precise = [complex(z) for z in self.mu_precise]
        out = []
        for m, x in zip(mu, wt):
            if x > rel:
                z = min(precise, key=lambda p: abs(p - m))
                out.append(-z.real)
        out.sort()
        merged = []
        for r in out:
            if r > 0 and (not merged or abs(r - merged[-1]) > 1e-8 * abs(r)):
                merged.append(r)
        return merged
