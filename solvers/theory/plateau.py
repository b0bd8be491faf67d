"""Numerics of the symmetric plateau (K = M, erf): fixed point, Jacobian spectrum, escape.

The teacher is symmetrised per mode k: T_k = mean of the diagonal of T_k, D_k = mean over rows
of the off-diagonal row sum (paper §5.1.1, App. C.2).  The fixed point is built in the modes
basis (well conditioned), converted to levels (Vandermonde) at the working precision, and
checked as a zero of the generated right-hand side in both bases.

The escape rate is the largest real eigenvalue of the generated Jacobian (modes basis, float64
full spectrum).  The analytic eigenvalues are checked at high precision on invariant subspaces:
with E the basis of the specialisation subspace (or of the (r, s, q, c) subspace), J E = E B
holds to working precision and the eigenvalues of the small B are eigenvalues of J.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import mpmath
import numpy as np

from derive.keys import SystemKey

from solvers.core.numbers import MpmathContext, exact_fraction, to_mpf
from solvers.core.problem import spectrum_numbers
from solvers.core.registry import load


@dataclass(frozen=True)
class SymmetricTeacher:
    """Per-mode diagonal T_k and off-diagonal row sum D_k (exact numbers)."""

    T: tuple
    D: tuple

    @classmethod
    def from_modes(cls, Tm) -> "SymmetricTeacher":
        """Symmetrise mode matrices Tm (L, M, M) (a random realisation)."""
        Tm = np.asarray(Tm, dtype=object)
        M = Tm.shape[1]
        T = tuple(sum(Fraction(Tm[k, n, n]) for n in range(M)) / M for k in range(Tm.shape[0]))
        D = tuple((sum(Fraction(x) for x in Tm[k].ravel()) - M * T[k]) / M
                  for k in range(Tm.shape[0]))
        return cls(T, D)

    @classmethod
    def expected(cls, spectrum) -> "SymmetricTeacher":
        w = [Fraction(int(v.p), int(v.q)) for v in spectrum.weights]
        return cls(tuple(w), tuple(Fraction(0) for _ in w))

    def levels(self, lam, top):
        """(T_l, D_l) for l = 0..top as numbers of lam's type."""
        return ([sum(l_ ** l * t for l_, t in zip(lam, self.T)) for l in range(top + 1)],
                [sum(l_ ** l * d for l_, d in zip(lam, self.D)) for l in range(top + 1)])


def teacher_modes(M, teacher: SymmetricTeacher, ctx) -> np.ndarray:
    """(L, N_TEACHER) packed teacher modes of the symmetric teacher."""
    iu = np.triu_indices(M)
    rows = []
    for t, d in zip(teacher.T, teacher.D):
        m = np.full((M, M), ctx.convert(Fraction(d) / (M - 1)), dtype=object)
        np.fill_diagonal(m, ctx.convert(t))
        rows.append(m[iu])
    return np.array(rows, dtype=object)


@dataclass
class FixedPoint:
    M: int
    y_modes: np.ndarray      # (L, N_STATE) mpf
    y_levels: np.ndarray     # (L, N_STATE) mpf, levels 0..L-1
    T_modes: np.ndarray
    T_levels: np.ndarray     # levels 1..L
    R1: object               # level-1 plateau values (mpf)
    Q1: object
    residual_modes: object   # max |rhs_modes|
    residual_levels: object  # max |rhs_levels|
    lam: np.ndarray
    w: np.ndarray
    c: np.ndarray
    nu: np.ndarray
    eta: object
    e2: object
    dps: int = 50


def _symmetric_state(M, R_modes, Q_modes):
    """(L, N_STATE) with every R_in = R_k and every Q_ij = Q_k."""
    L = len(R_modes)
    n_q = M * (M + 1) // 2
    y = np.empty((L, M * M + n_q), dtype=object)
    for k in range(L):
        y[k, :M * M] = R_modes[k]
        y[k, M * M:] = Q_modes[k]
    return y


def plateau_fixed_point(M: int, spectrum, teacher: SymmetricTeacher, eta, order: int = 1,
                        dps: int = 50) -> FixedPoint:
    """The symmetric plateau of the generated system at ``dps`` digits.

    Order 1: closed form (R*_k, Q*_k) = (R*, Q*) S_k / S_1 in the modes basis.  Order 2: Newton
    (mpmath.findroot) on the 2L symmetric unknowns of the generated right-hand side, started
    from the order-1 point; the Jacobian is the generated one projected on the subspace.
    """
    key = SystemKey("erf", M, M)
    mod = load(key, "mpmath")
    L = spectrum.L
    guard = dps + 2 * L + 10        # the levels conversion (Vandermonde) eats ~2L digits
    with MpmathContext(guard) as ctx:
        lam, w, c, nu = spectrum_numbers(spectrum, ctx)
        T_modes = teacher_modes(M, teacher, ctx)
        Tl, Dl = teacher.levels(lam, 1)
        T1, D1 = Tl[1], Dl[1]
        S = [ctx.convert(t) + ctx.convert(d) for t, d in zip(teacher.T, teacher.D)]
        S1 = T1 + D1
        R1 = S1 / mpmath.sqrt(M * ((M - 1) * T1 - D1 + M))
        Q1 = S1 / (M * (1 + T1) - S1)
        Rk, Qk = [R1 * x / S1 for x in S], [Q1 * x / S1 for x in S]
        etan = ctx.convert(Fraction(eta))
        e2 = etan ** 2 if order == 2 else ctx.convert(0)
        y = _symmetric_state(M, Rk, Qk)
        if order == 2:
            y = _newton_symmetric(mod, M, y, T_modes, lam, w, etan, e2, ctx)
        f_modes = mod.rhs_modes(y, T_modes, lam, w, etan, e2, ctx)
        V = np.array([[x ** l for x in lam] for l in range(L + 1)], dtype=object)
        y_levels = V[:L] @ y
        T_levels = V[1:] @ T_modes
        f_levels = mod.rhs_levels(y_levels, T_levels, c, nu, etan, e2, ctx)
        v1 = lam @ y
        return FixedPoint(M, y, y_levels, T_modes, T_levels, v1[0], v1[M * M],
                          max(abs(x) for x in f_modes.ravel()),
                          max(abs(x) for x in f_levels.ravel()), lam, w, c, nu, etan, e2,
                          guard)


def _symmetric_basis(M, L):
    """Columns embedding (R_k, Q_k) per mode into the full (L*N_STATE) state."""
    n = M * M + M * (M + 1) // 2
    E = np.zeros((L * n, 2 * L), dtype=object)
    for k in range(L):
        E[k * n:k * n + M * M, 2 * k] = 1
        E[k * n + M * M:(k + 1) * n, 2 * k + 1] = 1
    return E


def _newton_symmetric(mod, M, y0, T_modes, lam, w, eta, e2, ctx):
    L, n = y0.shape
    E = _symmetric_basis(M, L)
    pick = []
    for k in range(L):
        pick += [k * n, k * n + M * M]           # R_11 and Q_11 rows of mode k

    def state(x):
        return _symmetric_state(M, [x[2 * k] for k in range(L)], [x[2 * k + 1] for k in range(L)])

    def F(*x):
        f = mod.rhs_modes(state(x), T_modes, lam, w, eta, e2, ctx).ravel()
        return [f[p] for p in pick]

    def Jf(*x):
        J = mod.jac_modes(state(x), T_modes, lam, w, eta, e2, ctx)
        Jr = (J[pick] @ E)
        return mpmath.matrix(Jr.tolist())

    x0 = [y0[k, 0] if j == 0 else y0[k, M * M] for k in range(L) for j in (0, 1)]
    sol = mpmath.findroot(F, x0, J=Jf, tol=mpmath.mpf(10) ** (-(ctx.dps - 5)), maxsteps=50)
    sol = [sol[i] for i in range(2 * L)]
    return state(sol)


# -- invariant subspaces ----------------------------------------------------------------------

def specialisation_basis(M, L):
    """Columns: per mode k the direction δR_in = δ_in - (1-δ_in)/(M-1), δQ = 0."""
    n = M * M + M * (M + 1) // 2
    E = np.zeros((L * n, L), dtype=object)
    for k in range(L):
        for i in range(M):
            for m in range(M):
                E[k * n + i * M + m, k] = Fraction(1) if i == m else Fraction(-1, M - 1)
    return E


def ansatz_basis(M, L):
    """Columns r_k, s_k, q_k, c_k (variable-major) of the diagonal-S_M invariant subspace."""
    n = M * M + M * (M + 1) // 2
    E = np.zeros((L * n, 4 * L), dtype=object)
    iq = [(i, j) for i in range(M) for j in range(i, M)]
    for k in range(L):
        for i in range(M):
            for m in range(M):
                E[k * n + i * M + m, (0 if i == m else 1) * L + k] = 1
        for p, (i, j) in enumerate(iq):
            E[k * n + M * M + p, (2 if i == j else 3) * L + k] = 1
    return E


def restrict(J, E):
    """B with J E = E B (least squares through the normal equations) and max |J E - E B|."""
    Em = mpmath.matrix([[mpmath.mpf(x.numerator) / x.denominator if isinstance(x, Fraction)
                         else mpmath.mpf(x) for x in row] for row in E.tolist()])
    Jm = mpmath.matrix([[to_mpf(x) for x in row] for row in J.tolist()])
    JE = Jm * Em
    B = mpmath.inverse(Em.T * Em) * (Em.T * JE)
    defect = mpmath.mnorm(JE - Em * B, 1)
    return B, defect


def jacobian_modes(fp: FixedPoint, ctx):
    mod = load(SystemKey("erf", fp.M, fp.M), "mpmath")
    return mod.jac_modes(fp.y_modes, fp.T_modes, fp.lam, fp.w, fp.eta, fp.e2, ctx)


def escape_rate(fp: FixedPoint) -> float:
    """Largest real part among the eigenvalues of the generated Jacobian (modes, float64)."""
    mod = load(SystemKey("erf", fp.M, fp.M), "numpy")
    f = lambda a: np.array([[float(x) for x in row] for row in np.atleast_2d(a)])  # noqa: E731
    J = mod.jac_modes(f(fp.y_modes), f(fp.T_modes), f(fp.lam)[0], f(fp.w)[0], float(fp.eta),
                      float(fp.e2), None)
    return float(np.max(np.linalg.eigvals(J).real))


def analytic_escape(fp: FixedPoint, teacher: SymmetricTeacher):
    """λ_esc = η g_r (T_2 - D_2/(M-1)) at the fixed point's precision (mpf)."""
    with mpmath.workdps(fp.dps):
        return _analytic_escape(fp, teacher)


def _analytic_escape(fp, teacher):
    Tl, Dl = teacher.levels(fp.lam, 2)
    M = fp.M
    T1, D1, T2, D2 = Tl[1], Dl[1], Tl[2], Dl[2]
    g = 2 * (T1 + D1) / (mpmath.pi * mpmath.sqrt((M - 1) * T1 - D1 + M)
                         * (D1 + (M + 1) * T1 + M) ** mpmath.mpf(1.5))
    return fp.eta * g * (T2 - D2 / (M - 1))


def plateau_height(fp: FixedPoint):
    mod = load(SystemKey("erf", fp.M, fp.M), "mpmath")
    with MpmathContext(fp.dps) as ctx:
        return mod.eps_g(fp.lam @ fp.y_modes, fp.lam @ fp.T_modes, ctx)


def to_float(x) -> float:
    return float(to_mpf(x))


# -- escape measured from the ODE trajectory --------------------------------------------------

def perturbed_problem(fp: FixedPoint, spectrum, eta, order: int, direction: str,
                      amplitude: float, seed: int = 0):
    """A :class:`solvers.core.problem.Problem` started at the plateau plus a small perturbation.

    ``direction = "specialisation"``: δR_k,in = amplitude · w_k (δ_in - (1-δ_in)/(M-1)), δQ = 0
    (the invariant escape subspace).  ``direction = "generic"``: every R_k,in and Q_k,ij of every
    mode gets an independent N(0, amplitude² w_k²) shift (seeded), Q kept symmetric.
    """
    from solvers.core.problem import Problem, explicit_init
    M, L = fp.M, spectrum.L
    n_r = M * M
    iq = [(i, j) for i in range(M) for j in range(i, M)]
    rng = np.random.default_rng(seed)
    R = np.empty((L, M, M), dtype=object)
    Q = np.empty((L, M, M), dtype=object)
    T = np.empty((L, M, M), dtype=object)
    for k in range(L):
        wk = float(fp.w[k])
        for i in range(M):
            for m in range(M):
                base = exact_fraction(fp.y_modes[k, i * M + m])
                if direction == "specialisation":
                    d = 1.0 if i == m else -1.0 / (M - 1)
                    shift = amplitude * wk * d
                elif direction == "generic":
                    shift = amplitude * wk * rng.standard_normal()
                else:
                    raise ValueError(f"direction must be 'specialisation' or 'generic', "
                                     f"got {direction!r}")
                R[k, i, m] = base + Fraction(shift)
        for p, (i, j) in enumerate(iq):
            shift = amplitude * wk * rng.standard_normal() if direction == "generic" else 0.0
            Q[k, i, j] = Q[k, j, i] = exact_fraction(fp.y_modes[k, n_r + p]) + Fraction(shift)
        for p, (n, m) in enumerate(iq):
            T[k, n, m] = T[k, m, n] = exact_fraction(fp.T_modes[k, p])
    return Problem(SystemKey("erf", M, M), spectrum, Fraction(eta), order,
                   explicit_init("modes", R, Q, T))


def specialisation_component(R1, M):
    """ρ = ⟨R^(1), E⟩ / ⟨E, E⟩ with E_in = δ_in - (1-δ_in)/(M-1) (the std⊗std projection)."""
    E = np.full((M, M), -1.0 / (M - 1))
    np.fill_diagonal(E, 1.0)
    R1 = np.asarray(R1, dtype=float)
    return np.tensordot(R1, E, axes=([-2, -1], [0, 1])) / np.sum(E * E)


def exponential_rate(alpha, values, lo, hi):
    """Least-squares slope of log|values| over the last contiguous run of points with
    lo <= |values| <= hi and the sign of the last point (so that an early transient of the
    other sign, or one passing through the window before the growth, is not fitted)."""
    alpha = np.asarray(alpha, dtype=float)
    v = np.asarray(values, dtype=float)
    v = v * np.sign(v[-1])
    inside = (v >= lo) & (v <= hi)
    idx = np.flatnonzero(inside)
    if idx.size == 0:
        raise ValueError(f"no points between {lo:g} and {hi:g}: widen the α grid")
    end = idx[-1]
    start = end
    while start > 0 and inside[start - 1]:
        start -= 1
    if end - start + 1 < 3:
        raise ValueError(f"only {end - start + 1} points between {lo:g} and {hi:g}: "
                         "refine the α grid")
    slope, _ = np.polyfit(alpha[start:end + 1], np.log(v[start:end + 1]), 1)
    return float(slope)


def measured_escape(fp: FixedPoint, spectrum, eta, order: int = 1, *,
                    direction: str = "specialisation", amplitude: float = 1e-8,
                    alpha_max: float | None = None, n_points: int = 200, seed: int = 0,
                    arithmetic: str = "float64", dps: int | None = None,
                    window=(1e-6, 1e-3), eps_window=(1e-10, 1e-6)):
    """Integrate the generated ODEs (modes basis) from the perturbed plateau and fit the
    growth rates of the specialisation component ρ (→ λ_esc) and of ε_g* - ε_g (→ 2 λ_esc).

    The fit window for ρ is ``window`` relative to the level-1 plateau overlap R* (small enough
    that the linearisation holds, large enough to be past the transients of a generic
    perturbation).  For ε_g* - ε_g it is ``eps_window`` relative to ε_g*: ε_g is stationary
    along the specialisation direction, so ε_g* - ε_g ~ ρ², while a generic perturbation adds
    a first-order offset that decays with the slowest stable rate (~0.03 per α at K = M = 2,
    η = 1/2); the lower edge 1e-10 ε_g* keeps it out of the fit.
    Returns dict(alpha, rho, eps, eps_star, rate_rho, rate_eps).
    """
    from solvers.hierarchy.odes import integrate_problem
    if alpha_max is None:
        rate = escape_rate(fp)
        alpha_max = np.log(window[1] / amplitude * 10) / rate
    prob = perturbed_problem(fp, spectrum, eta, order, direction, amplitude, seed)
    alphas = list(np.linspace(0.0, alpha_max, n_points))
    traj = integrate_problem(prob, alphas, basis="modes", arithmetic=arithmetic, dps=dps,
                             rtol=1e-13 if arithmetic == "float64" else 1e-20)
    rho = specialisation_component(traj.R1, fp.M)
    eps_star = to_float(plateau_height(fp))
    eps = traj.eps_float()
    R1 = to_float(fp.R1)
    rate_rho = exponential_rate(alphas, rho, window[0] * R1, window[1] * R1)
    rate_eps = exponential_rate(alphas, eps_star - eps, eps_window[0] * eps_star,
                                eps_window[1] * eps_star)
    return dict(alpha=np.array(alphas), rho=rho, eps=eps, eps_star=eps_star,
                rate_rho=rate_rho, rate_eps=rate_eps)


# -- random teacher: per-row plateau heights (paper §5.1.1, App. C.2, Eqs. 95–96) -------------

def per_row_plateau(Tm, lam):
    """Approximate plateau of a non-symmetric teacher, row by row (Eqs. 95–96, corrected).

    Row n of the mode-k teacher enters through T^(l)_nn and d^(l)_n = Σ_{m≠n} T^(l)_nm; each
    row is given the symmetric-teacher plateau of (T, D) = (T^(1)_nn, d^(1)_n):
        R*^(1)_n = S_n / sqrt(M((M-1) T_nn - d_n + M)),   S_n = T^(1)_nn + d^(1)_n,
        Q*^(1)   = (1/M) Σ_n S_n / (M(1 + T_nn) - S_n),
    and per mode R*_{k,n} = R*^(1)_n S_{k,n}/S^(1)_n (S_k,n the mode-k row sum), the row-wise
    version of the corrected Eq. (98) (the paper's Eq. 96 has T^(l)_nn in place of S^(l)_n).
    Q per mode: Q*_k = Σ_n Q_n S_{k,n}/S^(1)_n / M.  Returns (R1 (M,), Q1, R_modes (L, M),
    Q_modes (L,)) as floats.
    """
    Tm = np.asarray(Tm, dtype=float)
    lam = np.asarray(lam, dtype=float)
    L, M, _ = Tm.shape
    Sk = Tm.sum(axis=2)                          # (L, M) row sums per mode
    Tk = np.array([np.diag(t) for t in Tm])      # (L, M)
    S1, T1 = lam @ Sk, lam @ Tk
    d1 = S1 - T1
    R1 = S1 / np.sqrt(M * ((M - 1) * T1 - d1 + M))
    Qn = S1 / (M * (1 + T1) - S1)
    return R1, Qn.mean(), R1 * Sk / S1, (Qn * Sk / S1).mean(axis=1)


def equal_students_plateau(M, spectrum, Tm, eta, order: int = 1, dps: int = 30, start=None):
    """The plateau of the generated system for any teacher: all students equal.

    Identical students stay identical (the right-hand side commutes with student
    permutations), so R_k,in = r_{k,n}, Q_k,ij = q_k is an invariant subspace; Newton
    (mpmath.findroot, generated Jacobian projected on it) from the per-row approximation.
    Returns (R_modes (L, M) mpf, Q_modes (L,) mpf, residual max|rhs_modes|, lam).
    """
    key = SystemKey("erf", M, M)
    mod = load(key, "mpmath")
    L = spectrum.L
    n_q = M * (M + 1) // 2
    n = M * M + n_q
    with MpmathContext(dps) as ctx:
        lam, w, _, _ = spectrum_numbers(spectrum, ctx)
        iu = np.triu_indices(M)
        T_modes = np.array([[ctx.convert(Fraction(x) if not isinstance(x, mpmath.mpf) else x)
                             for x in np.asarray(Tm[k], dtype=object)[iu]] for k in range(L)],
                           dtype=object)
        etan = ctx.convert(Fraction(eta))
        e2 = etan ** 2 if order == 2 else ctx.convert(0)
        if start is None:
            _, _, Rk0, Qk0 = per_row_plateau(np.array(Tm, dtype=float),
                                             [float(x) for x in lam])
        else:
            Rk0, Qk0 = start
        x0 = [mpmath.mpf(float(v)) for k in range(L) for v in list(Rk0[k]) + [Qk0[k]]]

        def state(x):
            y = np.empty((L, n), dtype=object)
            for k in range(L):
                r = x[k * (M + 1):k * (M + 1) + M]
                for i in range(M):
                    y[k, i * M:(i + 1) * M] = r
                y[k, M * M:] = x[k * (M + 1) + M]
            return y

        E = np.zeros((L * n, L * (M + 1)), dtype=object)
        pick = []
        for k in range(L):
            for i in range(M):
                for m in range(M):
                    E[k * n + i * M + m, k * (M + 1) + m] = 1
            E[k * n + M * M:(k + 1) * n, k * (M + 1) + M] = 1
            pick += [k * n + m for m in range(M)] + [k * n + M * M]

        def F(*x):
            f = mod.rhs_modes(state(x), T_modes, lam, w, etan, e2, ctx).ravel()
            return [f[p] for p in pick]

        def Jf(*x):
            J = mod.jac_modes(state(x), T_modes, lam, w, etan, e2, ctx)
            return mpmath.matrix((J[pick] @ E).tolist())

        sol = mpmath.findroot(F, x0, J=Jf, tol=mpmath.mpf(10) ** (-(dps - 5)), maxsteps=50)
        x = [sol[i] for i in range(L * (M + 1))]
        y = state(x)
        res = max(abs(v) for v in mod.rhs_modes(y, T_modes, lam, w, etan, e2, ctx).ravel())
        R = np.array([[x[k * (M + 1) + m] for m in range(M)] for k in range(L)], dtype=object)
        Q = np.array([x[k * (M + 1) + M] for k in range(L)], dtype=object)
        return R, Q, res, lam
