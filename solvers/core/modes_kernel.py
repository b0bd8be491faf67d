"""Index-vectorised right-hand side of the modes basis (erf and linear), for any K, M.

No printed module is needed: for any K, M the order-parameter ODEs in the modes basis are a
Lyapunov-type linear system per mode whose K x K and K x M coefficient matrices depend on the
level-1 overlaps only.

Derivation (docs/theory/conventions.md, g(x) = erf(x/√2)).  For jointly Gaussian (a, z, c),
Stein's lemma gives I3(a, z, c) = ⟨g'(a) z g(c)⟩ = C_za ⟨g''(a) g(c)⟩ + C_zc ⟨g'(a) g'(c)⟩ (also
when c = a, where both terms add up to C_za ⟨(g'g)'(a)⟩).  With z the generalised field of
level l, the covariances C_za, C_zc are level-(l+1) overlaps; in the modes basis they are
λ_k times the mode-k overlaps.  Summing over the third field as in the hierarchy,

    dR_k/dα = λ_k (P R_k + S T_k),
    dQ_k/dα = λ_k (P Q_k + Q_k P + S R_kᵀ + R_k Sᵀ) + e2 λ_k w_k F,

i.e. dΩ_k/dα = λ_k (G Ω_k + Ω_k Gᵀ) (+ e2 λ_k w_k F in the student block) for
Ω_k = [[Q_k, R_k], [R_kᵀ, T_k]] and G = [[P, S], [0, 0]], with (level-1 overlaps Q, R, T)

    P_ij = (η/K) [ δ_ij ( Σ_m ⟨g''(x_i) g(y_m)⟩ − (M/K) Σ_l ⟨g''(x_i) g(x_l)⟩ )
                   − (M/K) ⟨g'(x_i) g'(x_j)⟩ ]                      (symmetric),
    S_im = (η/K) ⟨g'(x_i) g'(y_m)⟩,
    ⟨g'(a) g'(b)⟩ = ∂I2/∂C_ab,   ⟨g''(a) g(c)⟩ = 2 ∂I2/∂C_aa   (Price's theorem),

and F_ij = K⁻² Σ_ab c_a c_b I4(x_i, x_j, u_a, u_b) over the fields u = (x_1..x_K, y_1..y_M) with
weights c = (−M/K, …, −M/K, 1, …, 1) (the η² bracket of the hierarchy).  Everything is checked
against the generated modules in tests/test_modes_fast.py.

The Gaussian expectations (I2, I4, ⟨g'g'⟩, ⟨g''g⟩ and the gradients of the last two) are the
ones derive/ prints into ``solvers/generated/gaussian_erf_numpy.py``; nothing here re-derives them.

For g(x) = x (``activation="linear"``) the same formulas hold with ⟨g'g'⟩ = 1, ⟨g''g⟩ = 0
(constant P, S), I4 = C34 and I2 = C12.

All functions accept float64 arrays and complex ones (complex-step derivatives are exact).
Shapes: R (L, K, M), Q (L, K, K), T (L, M, M); level-1 R1 (K, M), Q1 (K, K), T1 (M, M).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from derive.keys import ACTIVATIONS, check_activation  # noqa: F401
from solvers.core.layout import pack_state as pack, pack_teacher, triu  # noqa: F401
from solvers.core.layout import unpack_state as unpack  # (..., N_STATE) -> R, Q  # noqa: F401
from solvers.generated import gaussian_erf_numpy as gauss


def level_one(lam, R, Q, T=None):
    """Level-1 overlaps Σ_k λ_k X_k."""
    out = (np.tensordot(lam, R, axes=1), np.tensordot(lam, Q, axes=1))
    if T is not None:
        out += (np.tensordot(lam, T, axes=1),)
    return out


def coefficients(R1, Q1, T1, eta, activation="erf"):
    """(P, S): the K x K (symmetric) and K x M matrices of dΩ_k/dα = λ_k (G Ω_k + Ω_k Gᵀ).

    Leading batch axes are allowed (R1 (..., K, M), Q1 (..., K, K), T1 (..., M, M)); complex
    inputs give complex outputs (complex-step derivatives).
    """
    K, M = R1.shape[-2:]
    scale = eta / K
    if activation == "linear":   # g' = 1, g'' = 0: constant coefficients
        shape = np.broadcast_shapes(R1.shape[:-2], Q1.shape[:-2], T1.shape[:-2])
        dtype = np.result_type(R1, Q1, T1, float)
        P = np.full(shape + (K, K), -scale * M / K, dtype=dtype)
        S = np.full(shape + (K, M), scale, dtype=dtype)
        return P, S
    check_activation(activation)
    dq = np.diagonal(Q1, axis1=-2, axis2=-1)[..., :, None]          # Q_ii
    dqj = np.diagonal(Q1, axis1=-2, axis2=-1)[..., None, :]         # Q_jj
    dt = np.diagonal(T1, axis1=-2, axis2=-1)[..., None, :]          # T_mm
    # Σ_c <g''(x_i) g(c)> over the teacher fields and over the student fields
    d2_y = gauss.gpp_g(dq, R1, dt).sum(axis=-1)
    d2_x = gauss.gpp_g(dq, Q1, dqj).sum(axis=-1)
    P = -(scale * M / K) * gauss.gp_gp(dq, Q1, dqj)           # -(M/K) <g'(x_i) g'(x_j)>
    idx = np.arange(K)
    P[..., idx, idx] += scale * (d2_y - (M / K) * d2_x)
    S = scale * gauss.gp_gp(dq, R1, dt)                       # <g'(x_i) g'(y_m)>
    return P, S


class CoefficientDerivative:
    """Directional derivatives (dP, dS) of ``coefficients`` at a fixed level-1 point.

    The base-point quantities are computed once; each call costs a few elementwise operations
    on (b, K, K) and (b, K, M) arrays (real arithmetic; the complex-step derivative of
    ``coefficients`` is the test reference).
    """

    def __init__(self, R1, Q1, T1, eta, activation="erf"):
        check_activation(activation)
        self.linear = activation == "linear"
        K, M = R1.shape
        self.K, self.M, self.scale = K, M, eta / K
        if self.linear:
            return
        dq = np.diagonal(Q1)[:, None]
        dqj = np.diagonal(Q1)[None, :]
        dt = np.diagonal(T1)[None, :]
        # gradients by (C11, C12, C22) of the four kernels the coefficients use
        self.gg_xx = gauss.gp_gp_grad(dq, Q1, dqj)
        self.gg_xy = gauss.gp_gp_grad(dq, R1, dt)
        self.g2_xx = gauss.gpp_g_grad(dq, Q1, dqj)
        self.g2_xy = gauss.gpp_g_grad(dq, R1, dt)

    def __call__(self, dR, dQ):
        """dR (b, K, M), dQ (b, K, K) symmetric -> dP (b, K, K), dS (b, K, M)."""
        K, M, s = self.K, self.M, self.scale
        if self.linear:
            return np.zeros(dQ.shape), np.zeros(dR.shape)
        dd = np.diagonal(dQ, axis1=1, axis2=2)
        dqi, dqj = dd[:, :, None], dd[:, None, :]          # d Q_ii, d Q_jj; d T = 0

        def along(grad, d11, d12, d22=None):
            out = grad[0] * d11 + grad[1] * d12
            return out if d22 is None else out + grad[2] * d22

        dd2_y = along(self.g2_xy, dqi, dR).sum(axis=2)
        dd2_x = along(self.g2_xx, dqi, dQ, dqj).sum(axis=2)
        dP = -(s * M / K) * along(self.gg_xx, dqi, dQ, dqj)
        idx = np.arange(K)
        dP[:, idx, idx] += s * (dd2_y - (M / K) * dd2_x)
        return dP, s * along(self.gg_xy, dqi, dR)


@lru_cache(maxsize=None)
def _order2_layout(K: int, M: int):
    """The (i <= j) pairs and the weights c_a c_b of ``order2_term`` (read-only, made once)."""
    cw = np.concatenate([np.full(K, -M / K), np.ones(M)])
    W = cw[:, None] * cw[None, :]
    W.setflags(write=False)
    return triu(K), W


def order2_term(R1, Q1, T1, activation="erf", max_block: int = 2_000_000):
    """F (K x K, symmetric): the η² bracket / K², so dQ_k/dα gets e2 λ_k w_k F.

    Cost K(K+1)/2 · (K+M)² I4 evaluations (10⁷ at K = M = 40): vectorised over (a, b) and as
    many (i, j) pairs per block as fit in ``max_block`` elements.  Leading batch axes of R1, Q1
    broadcast (T1 (M, M)): the modes route takes the complex-step derivatives along several
    directions in one call.
    """
    K, M = R1.shape[-2:]
    n = K + M
    batch = np.broadcast_shapes(R1.shape[:-2], Q1.shape[:-2])
    C = np.empty(batch + (n, n), dtype=np.result_type(R1, Q1, T1))
    C[..., :K, :K] = Q1
    C[..., :K, K:] = R1
    C[..., K:, :K] = np.swapaxes(R1, -1, -2)
    C[..., K:, K:] = T1
    (iu, ju), W = _order2_layout(K, M)
    if activation == "linear":   # I4 = C34: the same number for every (i, j)
        val = (W * C).sum(axis=(-2, -1)) / K ** 2
        return np.broadcast_to(val[..., None, None], batch + (K, K)).copy()
    check_activation(activation)
    diag = np.diagonal(C, axis1=-2, axis2=-1)
    F = np.empty(batch + (K, K), dtype=C.dtype)
    per = max(1, max_block // (n * n * max(1, int(np.prod(batch)))))
    for s in range(0, len(iu), per):
        i, j = iu[s:s + per], ju[s:s + per]
        Ci, Cj = C[..., i, :], C[..., j, :]             # (..., p, n)
        c11 = diag[..., i][..., :, None, None]
        c22 = diag[..., j][..., :, None, None]
        c12 = C[..., i, j][..., :, None, None]
        c13 = Ci[..., :, :, None]      # (..., p, a, 1)
        c14 = Ci[..., :, None, :]      # (..., p, 1, b)
        c23 = Cj[..., :, :, None]
        c24 = Cj[..., :, None, :]
        c33 = diag[..., None, :, None]
        c44 = diag[..., None, None, :]
        c34 = C[..., None, :, :]
        val = (gauss.I4(c11, c12, c13, c14, c22, c23, c24, c33, c34, c44) * W).sum(axis=(-2, -1))
        F[..., i, j] = val
        F[..., j, i] = val
    return F / K ** 2


def rhs(R, Q, T, lam, w, eta, e2=0.0, activation="erf"):
    """(dR, dQ) in the modes basis; R (L, K, M), Q (L, K, K), T (L, M, M)."""
    R1, Q1, T1 = level_one(lam, R, Q, T)
    P, S = coefficients(R1, Q1, T1, eta, activation)
    lam3 = lam[:, None, None]
    dR = lam3 * (P @ R + S @ T)
    X = P @ Q + S @ np.swapaxes(R, 1, 2)
    dQ = lam3 * (X + np.swapaxes(X, 1, 2))
    if e2:
        dQ += e2 * (lam * w)[:, None, None] * order2_term(R1, Q1, T1, activation)[None]
    return dR, dQ


def eps_g_of_I2(I2_tt, I2_ss, I2_st, R1, Q1, T1, v=None, u=None):
    """ε_g = ½ ⟨(ζ − σ)²⟩ from level-1 overlaps, given the I2 of each pair of activations as
    float64 functions f(C11, C12, C22) (teacher–teacher, student–student, student–teacher):

        ε_g = ½ [ uᵀ I2_tt(T) u + vᵀ I2_ss(Q) v − 2 vᵀ I2_st(Q_ii, R_in, T_nn) u ].

    The one ε_g of the project: the ODE routes (erf, linear: :func:`eps_g`) and the simulator's
    family (any pair, any readouts: solvers.sim.family.eps_g) both call it.  v, u = None are the
    paper's readouts √M/K and 1/√M, applied to the sums (uᵀ I u = Σ I / M, ...).  Leading batch
    axes of R1, Q1 (and of v, e.g. a trained readout per α) broadcast; T1 is (M, M).
    """
    dq = np.diagonal(Q1, axis1=-2, axis2=-1)
    dt = np.diagonal(T1, axis1=-2, axis2=-1)
    Itt = I2_tt(dt[..., :, None], T1, dt[..., None, :])
    Iss = I2_ss(dq[..., :, None], Q1, dq[..., None, :])
    Ist = I2_st(dq[..., :, None], R1, dt[..., None, :])
    if v is None and u is None:
        K, M = R1.shape[-2:]
        tt, ss, st = (I.sum(axis=(-2, -1)) for I in (Itt, Iss, Ist))
        return 0.5 * (tt / M + ss * M / K ** 2 - 2.0 * st / K)
    tt = np.einsum("...n,...nm,...m->...", u, Itt, u)
    ss = np.einsum("...i,...ij,...j->...", v, Iss, v)
    st = np.einsum("...i,...in,...n->...", v, Ist, u)
    return 0.5 * (tt + ss - 2.0 * st)


def _linear_I2(c11, c12, c22):
    return c12


def eps_g(R1, Q1, T1, activation="erf"):
    """ε_g from level-1 overlaps at the paper's readouts (erf: the printed I2; linear: I2 = C12);
    leading batch axes of R1/Q1 broadcast (T1 (M, M))."""
    I2 = _linear_I2 if activation == "linear" else gauss.I2
    if activation != "linear":
        check_activation(activation)
    return eps_g_of_I2(I2, I2, I2, R1, Q1, T1)


# -- the generated modules' packed layout (for comparisons) ------------------------------------

def unpack_teacher(t, M):
    t = np.asarray(t)
    T = np.empty(t.shape[:-1] + (M, M), dtype=t.dtype)
    iu = triu(M)
    T[..., iu[0], iu[1]] = t
    T[..., iu[1], iu[0]] = t
    return T
