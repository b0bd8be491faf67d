"""Asymptotic phase (K = M erf, expected teacher T_k δ): linearised ε_g from a reference point.

The Jacobian of the generated system at perfect learning commutes with simultaneous
permutations of students and teachers, and the first-order ε_g is a symmetric functional, so
first-order ε_g only sees the (r, s, q, c) component of a perturbation (means of the diagonal /
off-diagonal entries of R_k - T_k δ and Q_k - T_k δ, per mode k).  The 4L restricted matrix is
taken from the generated Jacobian (modes basis) and its eigen-decomposition gives Eq. (122):
    ε_g(α) ≈ Σ_j (∇ε · v_j) g_j exp(μ_j (α - α_0)),   g = V⁻¹ x(α_0).
This first-order formula converges to the ODE only from states without an "in-span" component
(see the comment above :class:`SecondOrder`); :class:`SecondOrder` adds the second-order terms
and converges from generic states, with an error cubic in the perturbation.
"""
from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np

from derive.keys import SystemKey

from solvers.core.numbers import MpmathContext, to_mpf
from solvers.hierarchy.odes import integrate_problem
from solvers.core.problem import spectrum_numbers
from solvers.theory.plateau import ansatz_basis, restrict
from solvers.core.registry import load


def perfect_point(M, w, ctx):
    """(y_modes, T_modes) with R_k = Q_k = T_k = w_k δ."""
    iu = np.triu_indices(M)
    y, T = [], []
    for wk in w:
        m = np.eye(M, dtype=object) * wk
        m[m == 0] = ctx.convert(0)
        y.append(np.concatenate([m.ravel(), m[iu]]))
        T.append(m[iu])
    return np.array(y, dtype=object), np.array(T, dtype=object)


def project(y_modes, w, M):
    """x = (r_k, s_k, q_k, c_k) variable-major: deviation from perfect learning, averaged."""
    L = len(w)
    x = [[None] * L for _ in range(4)]
    # the students may have specialised in any order: relabel them (a symmetry of the
    # expected teacher) so that student n follows teacher n
    R1 = sum(np.array(y_modes[k][:M * M], dtype=object).reshape(M, M) for k in range(L))
    perm = [int(np.argmax([float(R1[i, n]) for i in range(M)])) for n in range(M)]
    if sorted(perm) != list(range(M)):
        raise ValueError("the state has not specialised: no one-to-one student-teacher match")
    iq = [(i, j) for i in range(M) for j in range(i, M)]
    for k in range(L):
        R = np.array(y_modes[k][:M * M], dtype=object).reshape(M, M)[perm, :]
        Qf = np.empty((M, M), dtype=object)
        for v, (i, j) in zip(y_modes[k][M * M:], iq):
            Qf[i, j] = Qf[j, i] = v
        Qf = Qf[perm][:, perm]
        qs = [Qf[i, j] for i, j in iq]
        x[0][k] = sum(R[i, i] for i in range(M)) / M - w[k]
        x[1][k] = (sum(R.ravel()) - sum(R[i, i] for i in range(M))) / (M * (M - 1))
        x[2][k] = sum(v for v, (i, j) in zip(qs, iq) if i == j) / M - w[k]
        x[3][k] = sum(v for v, (i, j) in zip(qs, iq) if i != j) / (M * (M - 1) / 2)
    return [v for row in x for v in row]


class Linearisation:
    """Eigen-decomposition of the 4L restricted Jacobian and the first-order ε_g functional."""

    def __init__(self, M: int, spectrum, eta, order: int = 1, dps: int = 40):
        self.M, self.L, self.dps = M, spectrum.L, dps
        mod = load(SystemKey("erf", M, M), "mpmath")
        with MpmathContext(dps) as ctx:
            lam, w, _, _ = spectrum_numbers(spectrum, ctx)
            etan = ctx.convert(Fraction(eta))
            e2 = etan ** 2 if order == 2 else ctx.convert(0)
            y, T = perfect_point(M, w, ctx)
            self.residual = max(abs(v) for v in mod.rhs_modes(y, T, lam, w, etan, e2, ctx).ravel())
            J = mod.jac_modes(y, T, lam, w, etan, e2, ctx)
            self.B, self.defect = restrict(J, ansatz_basis(M, self.L))
            self.mu, self.V = mpmath.eig(self.B)
            self.Vinv = mpmath.inverse(self.V)
            # ∇ε_g by the level-1 (r, s, q, c): central differences of the generated ε_g on
            # the symmetric subspace (step 10^-(dps/3): error ~ step², far below the terms kept)
            self.lam, self.w = lam, w
            h = mpmath.mpf(10) ** (-(dps // 3))
            t1 = lam @ T
            grad = []
            for a in range(4):
                pts = []
                for sgn in (1, -1):
                    x = [mpmath.mpf(0)] * (4 * self.L)
                    x[a * self.L] = sgn * h / lam[0]            # a level-1 shift via mode 0
                    pts.append(mod.eps_g(lam @ self._state(x, ctx), t1, ctx))
                grad.append((pts[0] - pts[1]) / (2 * h))
            self.grad = grad
            # weight of eigenvector j in first-order ε_g
            self.weights = [sum(grad[a] * sum(lam[k] * self.V[a * self.L + k, j]
                                              for k in range(self.L)) for a in range(4))
                            for j in range(4 * self.L)]

    def _state(self, x, ctx):
        M, L = self.M, self.L
        y, _ = perfect_point(M, self.w, ctx)
        y = y.copy()
        iq = [(i, j) for i in range(M) for j in range(i, M)]
        for k in range(L):
            for i in range(M):
                for m in range(M):
                    y[k, i * M + m] += x[(0 if i == m else 1) * L + k]
            for p, (i, j) in enumerate(iq):
                y[k, M * M + p] += x[(2 if i == j else 3) * L + k]
        return y

    def rates(self, rel=mpmath.mpf(10) ** -20):
        """Decay rates -μ_j of eigen-directions with a first-order ε_g weight (sorted)."""
        scale = max(abs(v) for v in self.weights)
        return sorted(float(-mpmath.re(m)) for m, wt in zip(self.mu, self.weights)
                      if abs(wt) > rel * scale)

    def eps_g(self, y_modes_ref, alpha0, alphas):
        """First-order ε_g(α) from the ODE state at α_0 (Eq. 122 with the derived matrix)."""
        with mpmath.workdps(self.dps):
            x0 = project([[to_mpf(v) for v in row] for row in y_modes_ref], self.w, self.M)
            g = self.Vinv * mpmath.matrix(x0)
            out = []
            for a in alphas:
                t = mpmath.mpf(a) - mpmath.mpf(alpha0)
                out.append(mpmath.re(sum(self.weights[j] * g[j] * mpmath.exp(self.mu[j] * t)
                                         for j in range(4 * self.L))))
            return out


def mode_states(problem, alphas, rtol=1e-13, atol=1e-16):
    """float64 mode states (one (L, N_STATE) array per α) and ε_g of ``problem`` (modes basis)."""
    traj = integrate_problem(problem, alphas, basis="modes", arithmetic="float64",
                             rtol=rtol, atol=atol)
    return traj.states, traj.eps_float()


# -- the full linearisation at the teacher actually used (random / explicit / expected) -------

def matched_permutation(R1, M):
    """perm[n] = the student that has specialised on teacher n (level-1 R), or ValueError."""
    R1 = np.asarray(R1, dtype=float)
    perm = [int(np.argmax(R1[:, n])) for n in range(M)]
    if sorted(perm) != list(range(M)):
        raise ValueError("the state at alpha0 has not specialised: no one-to-one "
                         "student-teacher match (choose a later [asymptotic] alpha0)")
    return perm


def perfect_state(T_modes_mat, perm):
    """(L, N_STATE) float64 with R_k[perm[n], m] = T_k[n, m], Q_k[perm[n], perm[m]] = T_k[n, m]."""
    L, M, _ = T_modes_mat.shape
    iu = np.triu_indices(M)
    inv = np.argsort(perm)                  # student i follows teacher inv[i]
    out = []
    for k in range(L):
        R = T_modes_mat[k][inv, :]
        Q = T_modes_mat[k][np.ix_(inv, inv)]
        out.append(np.concatenate([R.ravel(), Q[iu]]))
    return np.array(out, dtype=float)


def eps_gradient(mod, lam, y_star, t1, ctx, h=1e-6):
    """∇ε_g by the mode states of a float64 module ``mod`` at ``y_star`` (L x N_STATE): ε
    depends on v1 = Σ_k λ_k y_k only; central differences with step 1e-6 (error ~ step² ·
    |ε'''| ≈ 1e-12, rounding ~ 1e-16/1e-6 = 1e-10), flattened like the state."""
    v1 = lam @ y_star
    g1 = np.empty(v1.size)
    for s in range(v1.size):
        e = np.zeros(v1.size)
        e[s] = h
        g1[s] = (mod.eps_g(v1 + e, t1, ctx) - mod.eps_g(v1 - e, t1, ctx)) / (2 * h)
    return np.outer(lam, g1).ravel()


class FirstOrderEps:
    """The first-order ε_g of a linearisation with ``eps_star``, ``grad``, ``J``, ``y_star``."""

    def eps_g(self, y_ref, alpha0, alphas):
        """First-order ε_g(α) = ε* + ∇ε · expm(J (α - α_0)) (y(α_0) - y*)."""
        from scipy.linalg import expm
        x0 = (np.asarray(y_ref, dtype=float) - self.y_star).ravel()
        return [self.eps_star + float(self.grad @ (expm(self.J * (float(a) - alpha0)) @ x0))
                for a in alphas]


class FullLinearisation(FirstOrderEps):
    """Linearisation of the generated modes system (float64) at perfect learning R = Q = T.

    Unlike :class:`Linearisation` it needs no symmetric teacher: the whole L·N_STATE Jacobian
    is used, and the first-order ε_g is ∇ε_g · expm(J (α-α_0)) x_0 (no eigen-decomposition, so
    degenerate groups are harmless).  ``perm`` relabels the students (see
    :func:`matched_permutation`).
    """

    def __init__(self, problem, perm):
        from scipy.linalg import expm  # noqa: F401  (fail early if SciPy is missing)
        from solvers.core.numbers import Float64Context
        K, M = problem.key.K, problem.key.M
        if K != M:
            raise ValueError(f"perfect learning needs K = M, got K = {K}, M = {M}")
        self.mod = load(problem.key, "numpy")
        self.mod_key = problem.key
        ctx = Float64Context()
        num = problem.numeric(ctx)
        self.num, self.ctx, self.M, self.L = num, ctx, M, problem.L
        Tm = np.empty((self.L, M, M))
        iu = np.triu_indices(M)
        for k in range(self.L):
            Tm[k][iu] = num.T_modes[k]
            Tm[k].T[iu] = num.T_modes[k]
        self.y_star = perfect_state(Tm, perm)
        args = (num.T_modes, num.lam, num.w, num.eta, num.e2, ctx)
        self.residual = float(np.max(np.abs(self.mod.rhs_modes(self.y_star, *args))))
        self.J = self.mod.jac_modes(self.y_star, *args)
        self.t1 = num.lam @ num.T_modes
        self.eps_star = float(self.mod.eps_g(num.lam @ self.y_star, self.t1, ctx))
        self.grad = eps_gradient(self.mod, num.lam, self.y_star, self.t1, ctx)

    def rates(self, rel=1e-6):
        """Positive decay rates -Re μ of eigen-directions with a first-order ε_g weight.

        An eigenvector v contributes when |∇ε·v| > rel·|∇ε|·|v|; rates closer than 1e-8
        (relative) are merged (degenerate groups).
        """
        mu, V = np.linalg.eig(self.J)
        wt = np.abs(self.grad @ V) / (np.linalg.norm(V, axis=0) * np.linalg.norm(self.grad))
        out = []
        for r in sorted(float(-m.real) for m, x in zip(mu, wt) if x > rel and -m.real > 0):
            if not out or abs(r - out[-1]) > 1e-8 * max(abs(r), 1e-300):
                out.append(r)
        return out

    def first_order(self, y):
        """ε* + ∇ε·(y - y*) of a given state: Eq. (121) applied to the exact state."""
        return self.eps_star + float(self.grad @ (np.asarray(y, dtype=float) - self.y_star).ravel())

    def second_order(self, y, h=1e-4):
        """first_order(y) + ½ δv1ᵀ H δv1 with H the Hessian of ε_g by the level-1 state
        (central differences, step 1e-4: error ~ h² |ε''''| ≈ 1e-8 relative to H)."""
        num, ctx = self.num, self.ctx
        v1s = num.lam @ self.y_star
        dv = num.lam @ (np.asarray(y, dtype=float) - self.y_star)
        n = v1s.size
        H = np.empty((n, n))
        f = lambda v: float(self.mod.eps_g(v, self.t1, ctx))  # noqa: E731
        for a in range(n):
            for b in range(n):
                ea, eb = np.eye(n)[a] * h, np.eye(n)[b] * h
                H[a, b] = (f(v1s + ea + eb) - f(v1s + ea - eb) - f(v1s - ea + eb)
                           + f(v1s - ea - eb)) / (4 * h * h)
        return self.first_order(y) + 0.5 * float(dv @ H @ dv)


# -- exact groups of the full Jacobian (derive.asymptotic.exact_groups) ------------------------

def perfect_jacobian_float(M, spectrum, eta):
    """float64 (J, λ, residual): Jacobian of the generated modes system (order 1) at perfect
    learning R_k = Q_k = T_k = w_k δ of the expected teacher (T_1 = Σ w_k λ_k)."""
    mod = load(SystemKey("erf", M, M), "numpy")
    from solvers.core.numbers import Float64Context
    ctx = Float64Context()
    lam = np.array([float(x) for x in spectrum.eigenvalues])
    w = np.array([float(x) for x in spectrum.weights])
    iu = np.triu_indices(M)
    y = np.array([np.concatenate([(np.eye(M) * wk).ravel(), (np.eye(M) * wk)[iu]]) for wk in w])
    T = np.array([(np.eye(M) * wk)[iu] for wk in w])
    args = (T, lam, w, float(Fraction(eta)), 0.0, ctx)
    residual = float(np.max(np.abs(mod.rhs_modes(y, *args))))
    return np.asarray(mod.jac_modes(y, *args), dtype=float), lam, residual


def group_misses(M, spectrum, eta, groups=None):
    """For every exact group g (multiplicity m; default :func:`derive.asymptotic.exact_groups`,
    or the dict ``groups``) and mode k: the distance from -a g λ_k to the
    m-th closest eigenvalue of the float64 Jacobian, and the Jacobian's scale max|μ|.

    Returns (rows, scale, residual) with rows = [(g, m, k, miss)] and a = 2η/(√3 π M); the
    constants are derived at T_1 = Σ w_k λ_k = 1 (the power-law normalisation)."""
    import sympy as sp
    from derive.asymptotic import exact_groups
    J, lam, residual = perfect_jacobian_float(M, spectrum, eta)
    mu = np.linalg.eigvals(J)
    T1 = float(sum(lam * np.array([float(x) for x in spectrum.weights])))
    if abs(T1 - 1) > 1e-12:
        raise ValueError(f"the group constants are derived at T_1 = 1, got T_1 = {T1}")
    a = 2 * float(Fraction(eta)) / (np.sqrt(3) * np.pi * M)
    rows = []
    for g, m in (exact_groups(M) if groups is None else groups).items():
        gf = float(sp.N(g, 20))
        for k, lk in enumerate(lam):
            d = np.sort(np.abs(mu + a * gf * lk))
            rows.append((g, m, k, float(d[m - 1])))
    return rows, float(np.max(np.abs(mu))), residual


def group_counts(M, spectrum, eta, rel_tol):
    """[(target, expected, found)] for every distinct target -a g λ_k of the exact groups:
    ``expected`` sums the multiplicities of all (g, k) landing on that target (power laws make
    e.g. (2-√3)λ_{2k} = (1-√3/2)λ_k), ``found`` counts Jacobian eigenvalues within
    rel_tol·max|μ| of it.  found > expected would mean a moved group sits on an exact one."""
    import sympy as sp
    from derive.asymptotic import exact_groups
    J, lam, _ = perfect_jacobian_float(M, spectrum, eta)
    mu = np.linalg.eigvals(J)
    tol = rel_tol * float(np.max(np.abs(mu)))
    a = 2 * float(Fraction(eta)) / (np.sqrt(3) * np.pi * M)
    targets = [(-a * float(sp.N(g, 20)) * lk, m) for g, m in exact_groups(M).items() for lk in lam]
    out, seen = [], []
    for t, _ in targets:
        if any(abs(t - s) < tol for s in seen):
            continue
        seen.append(t)
        expected = sum(m for s, m in targets if abs(s - t) < tol)
        out.append((t, expected, int(np.sum(np.abs(mu - t) < tol))))
    return out


# -- second order around perfect learning (generic starts) ------------------------------------
#
# With x = y - y*, the generated system reads x' = J x + ½ B(x, x) + O(x³) and
# ε_g = ε* + ∇ε·x + ½ xᵀ H x + O(x³).  Expanding x = x1 + x2 + O(x0³) with
#     x1 = e^{Jt} x0,     x2' = J x2 + ½ B(x1, x1),  x2(0) = 0      (t = α - α_0)
# gives the second-order prediction ε* + ∇ε·(x1 + x2) + ½ x1ᵀ H x1, wrong by O(|x0|³).
# Why first order is not enough from a generic start: in-span deformations of the students,
# J = (1 + D) B, move the level-1 order parameters by (r, s, q, c) = (d, e, 2d, 2e), which ∇ε
# annihilates exactly (ε_g changes only at second order).  J's slowest such directions decay at
# μ_i ≈ a (1 - √3/2) λ_L, just below half the slowest visible rate μ_v = a (2 - √3) λ_L; their
# square enters ε through H and, through B, forces the visible directions at 2μ_i ≈ μ_v (near
# resonance).  Both contributions decay like the first-order term, so the first-order error
# levels off at a fixed share of ε_g however late α_0.  The in-span directions include
# permutation-symmetric ones: they live in the reduced (r, s, q, c) system of Eq. (118) too.
#
# In the eigenbasis J = V diag(μ) V⁻¹, g = V⁻¹ x0, the solution is closed:
#     (V⁻¹ x2)_j = ½ Σ_pq b_jpq g_p g_q E(μ_p + μ_q, μ_j, t),   b_jpq = [V⁻¹ B(V_p, V_q)]_j,
#     E(a, b, t) = ∫_0^t e^{b(t-s)} e^{a s} ds = t e^{bt} φ(t (a - b)),  φ(z) = (e^z - 1)/z,
# which stays exact through (near-)resonances a ≈ b (the α e^{μα} terms: φ → 1).

def _phi1(z):
    """(e^z - 1)/z elementwise (complex): expm1 (no cancellation) away from 0, the series
    1 + z/2 + z²/6 below |z| = 1e-4 (truncation z³/24 < 1e-13 relative) so that z = 0 is fine."""
    z = np.asarray(z, dtype=complex)
    small = np.abs(z) < 1e-4
    zs = np.where(small, 1.0, z)
    return np.where(small, 1 + z / 2 + z * z / 6, np.expm1(zs) / zs)


def _E(a, b, t):
    """∫_0^t e^{b(t-s)} e^{a s} ds = (e^{at} - e^{bt})/(a - b) for complex arrays a, b
    (broadcast) and a float t >= 0, factored on the slower exponential c (larger real part) so
    that φ only sees arguments with Re <= 0 (no overflow, no cancellation)."""
    a, b = np.broadcast_arrays(np.asarray(a, complex), np.asarray(b, complex))
    first = a.real >= b.real
    c = np.where(first, a, b)
    d = np.where(first, b, a)
    return t * np.exp(c * t) * _phi1(t * (d - c))


def symmetric_projection(y_modes, perm):
    """Average of the mode state over simultaneous permutations of students and teachers
    (students first relabelled by ``perm``, see :func:`matched_permutation`).

    For a permutation-symmetric teacher (e.g. the expected one, T_k ∝ δ) this is the projection
    on the invariant subspace of the reduced (r, s, q, c) system of Eq. (118): the dynamics
    keeps it, and Eq. (122) describes it."""
    from itertools import permutations
    from solvers.core.problem import unpack_state, pack_state
    y = np.asarray(y_modes, dtype=float)
    L = y.shape[0]
    M = len(perm)
    R, Q = unpack_state(y, M, M)
    inv = list(np.argsort(perm))
    R, Q = R[:, inv, :], Q[:, inv][:, :, inv]
    Rs, Qs = np.zeros_like(R), np.zeros_like(Q)
    perms = list(permutations(range(M)))
    for s in perms:
        s = list(s)
        Rs += R[:, s][:, :, s]
        Qs += Q[:, s][:, :, s]
    return pack_state(Rs / len(perms), Qs / len(perms)).reshape(L, -1)


def _eps_derivatives(lin, num, dps=40):
    """(ε*, ∇ε by v1, Hessian by v1) of the generated ε_g at the level-1 perfect state, in
    mpmath at ``dps`` digits, returned as float64 (steps: see :class:`SecondOrder`)."""
    mod = load(lin.mod_key, "mpmath")
    with MpmathContext(dps) as ctx:
        v1s = [mpmath.mpf(float(x)) for x in np.asarray(num.lam, float) @ lin.y_star]
        t1 = np.array([mpmath.mpf(float(x)) for x in lin.t1], dtype=object)
        m = len(v1s)

        def f(shift):
            return mod.eps_g(np.array([a + b for a, b in zip(v1s, shift)], dtype=object), t1, ctx)
        zero = [mpmath.mpf(0)] * m

        def e(i, h):
            out = list(zero)
            out[i] = h
            return out
        eps0 = f(zero)
        h = mpmath.mpf(10) ** -13
        grad = [(f(e(i, h)) - f(e(i, -h))) / (2 * h) for i in range(m)]
        h = mpmath.mpf(10) ** -10
        H = np.empty((m, m))
        for a in range(m):
            for c in range(a, m):
                pp = [x + y for x, y in zip(e(a, h), e(c, h))]
                pm = [x + y for x, y in zip(e(a, h), e(c, -h))]
                mp_ = [x + y for x, y in zip(e(a, -h), e(c, h))]
                mm = [x + y for x, y in zip(e(a, -h), e(c, -h))]
                H[a, c] = H[c, a] = float((f(pp) - f(pm) - f(mp_) + f(mm)) / (4 * h * h))
        return float(eps0), np.array([float(g) for g in grad]), H


class SecondOrder:
    """Second-order asymptotic ε_g around perfect learning, closed form in J's eigenbasis.

    Built on a :class:`FullLinearisation` ``lin`` (perfect-learning point, J, ∇ε, ε*).  B is the
    second derivative of the generated ``rhs_modes`` at y*, H the Hessian of the generated ε_g
    (it depends on the level-1 state v1 = Σ_k λ_k y_k only: H = (λ⊗1) H1 (λ⊗1)ᵀ).

    B by central differences of the generated Jacobian, step h_B = 1e-5 (float64): truncation
    h²/6·|∂³f| ~ 2e-11 and rounding ~ 1e-16·|J|/h ~ 1e-11 relative to |B| = O(1); the mismatch
    of the two independent quotients for ∂²f_i/∂y_a∂y_b and ∂²f_i/∂y_b∂y_a (``B_asymmetry``)
    measures it (~1e-10).  B only enters through x2, itself O(|x0|) of ε_g, so this error stays
    below 1e-10 of ε_g."""

    def __init__(self, lin: FullLinearisation, h_B: float = 1e-5):
        self.lin = lin
        num, ctx, mod = lin.num, lin.ctx, lin.mod
        args = (num.T_modes, num.lam, num.w, num.eta, num.e2, ctx)
        shape = lin.y_star.shape
        n = lin.y_star.size
        B = np.empty((n, n, n))
        for b in range(n):
            e = np.zeros(n)
            e[b] = h_B
            Jp = mod.jac_modes(lin.y_star + e.reshape(shape), *args)
            Jm = mod.jac_modes(lin.y_star - e.reshape(shape), *args)
            B[:, :, b] = (np.asarray(Jp, float) - np.asarray(Jm, float)) / (2 * h_B)
        # the two quotients for ∂²f_i/∂y_a∂y_b and ∂²f_i/∂y_b∂y_a are independent: their
        # mismatch measures the step error; keep their mean
        self.B_asymmetry = float(np.max(np.abs(B - B.transpose(0, 2, 1))) / np.max(np.abs(B)))
        self.B = 0.5 * (B + B.transpose(0, 2, 1))
        # ε*, ∇ε and the Hessian of ε_g by v1 at 40 digits (the generated mpmath ε_g at the
        # float64 y*, taken as exact).  Precision matters here: directions invisible to first
        # order carry |x_inv| ~ sqrt(ε_g), so a gradient error δ adds δ/sqrt(ε) to the relative
        # error; float64 differences (δ ~ 1e-10) would cost 1e-5 at ε = 1e-10.  Steps: 1e-13
        # for ∇ε (truncation h² ~ 1e-26, rounding 1e-40/h ~ 1e-27), 1e-10 for H (truncation
        # h² ~ 1e-20, rounding 1e-40/h² ~ 1e-20); both far below float64.
        self.eps_star, grad1, self.H1 = _eps_derivatives(lin, num)
        self.grad = np.outer(np.asarray(num.lam, float), grad1).ravel()
        m = grad1.size
        P = np.kron(np.asarray(num.lam, float)[:, None], np.eye(m))      # v1 = Pᵀ y
        self.H = P @ self.H1 @ P.T
        mu, V = np.linalg.eig(lin.J)
        self.mu, self.V = mu, V
        self.Vinv = np.linalg.inv(V)
        self.cond_V = float(np.linalg.cond(V))
        # the closed form needs a diagonalisable J; round-off grows like cond(V)·1e-16
        # (measured cond(V) = 213 at L = 3, 33 at L = 9, K = M = 2)
        if not self.cond_V < 1e8:
            raise ValueError(f"J is (nearly) defective, cond(V) = {self.cond_V:.1e}: the "
                             "eigenbasis closed form of x2 would lose too many digits")
        self.wv = self.grad @ V                                   # ∇ε along eigenvector j
        # ½ Σ_j wv_j b_jpq: the ε weight of the pair (p, q) through x2, per target j
        bt = np.einsum("ji,iab,ap,bq->jpq", self.Vinv, self.B, V, V, optimize=True)
        self.C = 0.5 * self.wv[:, None, None] * bt
        self.Hv = V.T @ self.H @ V

    def quadratic_rhs(self, x):
        """½ B(x, x) for a flat deviation x."""
        return 0.5 * np.einsum("iab,a,b->i", self.B, x, x)

    def parts(self, y_ref, alpha0, alphas):
        """(first order, ∇ε·x2, ½ x1ᵀ H x1) at every α, from the state ``y_ref`` at α_0."""
        lin = self.lin
        x0 = (np.asarray(y_ref, dtype=float) - lin.y_star).ravel()
        g = self.Vinv @ x0
        mu = self.mu
        gg = np.outer(g, g)
        sums = mu[:, None] + mu[None, :]
        out = []
        for a in alphas:
            t = float(a) - float(alpha0)
            lin1 = self.eps_star + float(np.real(np.sum(self.wv * g * np.exp(mu * t))))
            x2 = np.real(np.einsum("jpq,jpq->", self.C * gg[None],
                                   _E(sums[None, :, :], mu[:, None, None], t)))
            e1 = g * np.exp(mu * t)
            hterm = 0.5 * float(np.real(e1 @ self.Hv @ e1))
            out.append((lin1, float(x2), hterm))
        return np.array(out)

    def eps_g(self, y_ref, alpha0, alphas):
        """Second-order ε_g(α): ε* + ∇ε·(x1 + x2) + ½ x1ᵀ H x1."""
        return self.parts(y_ref, alpha0, alphas).sum(axis=1)
