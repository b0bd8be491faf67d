"""The level and modes systems, assembled once from any generated module.

A generated module (``solvers/generated``, printed by ``derive/codegen/module_printer.py``)
holds what the derivation produces: the state layout, the index tables and the coefficient functions of the
split dX^(l)/dα = a(v1)·[X^(l+1), T^(l+1)] + e2·ν_{l+1}·f(v1).  :class:`System` puts the
systems together from them (numpy backend: float64 arrays or object arrays of mpf / arb):

* levels: rows l = 0..L-1, next level from the rows above and the Cayley–Hamilton closure
  X^(L) = -Σ_j c_j X^(j);
* modes: rows k, next level λ_k X_k, forcing w_k λ_k;
* the Jacobians of both by the flattened state.

Arguments (as in docs/theory/conventions.md): y (L, N_STATE); levels: T (L, N_TEACHER) teacher levels 1..L,
c = (c_0..c_(L-1)), nu = (ν_1..ν_L); modes: T the teacher modes, lam the eigenvalues, w the
direction fractions; e2 = η² for the order-2 system, 0 for order 1; ctx the number context
(unused by float64 modules).  The arb_mat backend of the same algebra is
:mod:`solvers.core.arb_rhs`.
"""
from __future__ import annotations

import numpy as np

_TABLES = ("ACTIVATION", "K", "M", "N_STATE", "N_TEACHER", "STATE", "TEACHER",
           "A_INDEX", "F_INDEX", "DA_INDEX", "DF_INDEX")


class System:
    """A generated module's coefficients with the level / modes assembly around them."""

    def __init__(self, module, ctx=None):
        self.module, self.ctx = module, ctx        # ctx: used when a call passes none
        for name in _TABLES:
            setattr(self, name, getattr(module, name))
        n = self.N_STATE
        f_pos = {s: len(self.A_INDEX) + j for j, s in enumerate(self.F_INDEX)}
        # per output component s: the a entries (k, t) of its row, and the position of f_s
        self._rows = [([(k, t) for k, (ss, t) in enumerate(self.A_INDEX) if ss == s],
                       f_pos.get(s)) for s in range(n)]
        # float64 rows: a as a dense (N_STATE, N_STATE + N_TEACHER) matrix and one product
        # (the loop over the entries costs ~40 µs a call in NumPy overhead, a third of a small
        # system's right-hand side); only where each (s, t) pair appears once
        a_st = np.array(self.A_INDEX, dtype=np.intp).reshape(-1, 2)
        self._dense_a = (len(set(map(tuple, self.A_INDEX))) == len(self.A_INDEX)
                         and len(set(self.F_INDEX)) == len(self.F_INDEX)
                         and (a_st.size == 0 or a_st[:, 1].max() < n + self.N_TEACHER))
        self._a_s, self._a_t = a_st[:, 0], a_st[:, 1]
        self._f_s = np.array(self.F_INDEX, dtype=np.intp)
        # a trained readout: v_1..v_K follow the level-1 state in every v1 argument
        self.TRAINED = getattr(module, "TRAINED", False)
        self.N_READOUT = getattr(module, "N_READOUT", 0)
        self.FN_INDEX = getattr(module, "FN_INDEX", ())
        self.DFN_INDEX = getattr(module, "DFN_INDEX", ())
        # weight decay: -η κ R_in, -2 η κ Q_ij (conventions.md), per state column
        self._decay_factor = np.array([1] * (self.K * self.M) + [2] * (n - self.K * self.M))

    def __repr__(self):
        return f"System({self.module.__name__}, {getattr(self.ctx, 'name', None)})"

    def coefficients(self, v1, t1, eta, ctx=None):
        """Nonzero a entries (A_INDEX order) then f entries (F_INDEX order)."""
        return self.module.coefficients(v1, t1, eta, self.ctx if ctx is None else ctx)

    def coefficient_derivatives(self, v1, t1, eta, ctx=None):
        """d a / d v1 (DA_INDEX order) then d f / d v1 (DF_INDEX order)."""
        return self.module.coefficient_derivatives(v1, t1, eta, self.ctx if ctx is None else ctx)

    def eps_g(self, v1, t1, ctx=None):
        """ε_g of the level-1 state and teacher (vectorises over arrays in float64)."""
        return self.module.eps_g(v1, t1, self.ctx if ctx is None else ctx)

    def noise_coefficients(self, v1, t1, ctx=None):
        """fn (FN_INDEX order) then d fn / d v1 (DFN_INDEX order): the label-noise term."""
        return self.module.noise_coefficients(v1, t1, self.ctx if ctx is None else ctx)

    def _noise(self, v1, t1, ctx):
        """(fn, d fn / d v1) of the label-noise term (FN_INDEX, DFN_INDEX order)."""
        out = self.module.noise_coefficients(v1, t1, self.ctx if ctx is None else ctx)
        return out[:len(self.FN_INDEX)], out[len(self.FN_INDEX):]

    def _extras(self, out, y, v1, t1, nuv, eta, e2, noise, decay, ctx):
        """Add the label-noise and weight-decay terms to ``out`` (rows over levels/modes)."""
        if noise is not None and not (noise == 0) and not (e2 == 0):
            fn, _ = self._noise(v1, t1, ctx)
            for k, s in enumerate(self.FN_INDEX):
                out[:, s] = out[:, s] + (e2 * noise * fn[k]) * nuv
        if decay is not None and not (decay == 0):
            out -= (eta * decay) * (y * self._decay_factor)
        return out

    def _jac_extras(self, G, J, y, v1, t1, nuv, eta, e2, noise, decay, ctx):
        """The noise term's dependence on v1 (into G) and weight decay's diagonal (into J)."""
        if noise is not None and not (noise == 0) and not (e2 == 0):
            _, dfn = self._noise(v1, t1, ctx)
            for k, (kf, u) in enumerate(self.DFN_INDEX):
                G[:, self.FN_INDEX[kf], u] += (e2 * noise * dfn[k]) * nuv
        if decay is not None and not (decay == 0):
            L, n = y.shape
            d = np.tile(self._decay_factor, L)
            for r in range(L * n):
                J[r, r] -= eta * decay * d[r]
        return J

    def readout_rates(self, v1, t1, ctx=None):
        """<g_s(x_i) Δ>, i = 1..K, of a trained readout (v1 = level-1 state then v)."""
        return self.module.readout_rates(v1, t1, self.ctx if ctx is None else ctx)

    def _with_readout(self, v1, readout):
        """The v1 argument of the coefficients: the level-1 state, then v when trained."""
        if self.TRAINED != (readout is not None):
            raise ValueError("a trained readout's system needs readout = v (and only it)")
        return v1 if readout is None else np.concatenate([v1, readout])

    def _no_readout_jacobian(self):
        if self.TRAINED:
            raise ValueError("the Jacobian of a trained readout's system is not derived (v is "
                             "state): no implicit integrator or linearisation runs it")

    # -- building blocks ----------------------------------------------------------------------

    @staticmethod
    def closure(y, c):
        """Levels 1..L of the state; level L from Cayley–Hamilton, X^(L) = -Σ_j c_j X^(j)."""
        top = -(c @ y)
        return np.concatenate([y[1:], top[None, :]], axis=0)

    def combine(self, co, nxt, nuv, e2, out):
        """out[:, s] = Σ_t a_st nxt[:, t] + e2 f_s nuv over the rows (levels or modes)."""
        if self._dense_a and out.dtype == np.float64 and nxt.dtype == np.float64:
            return self._combine_float64(co, nxt, nuv, e2, out)
        for s, (terms, kf) in enumerate(self._rows):
            acc = None
            for k, t in terms:
                term = co[k] * nxt[:, t]
                acc = term if acc is None else acc + term
            if kf is not None:
                term = e2 * co[kf] * nuv
                acc = term if acc is None else acc + term
            out[:, s] = acc if acc is not None else 0 * nuv
        return out

    def _combine_float64(self, co, nxt, nuv, e2, out):
        """``combine`` for float64 rows: out = nxt aᵀ + e2 nuv fᵀ."""
        co = np.asarray(co, dtype=np.float64)
        na = len(self._a_s)
        a = np.zeros((self.N_STATE, nxt.shape[1]))
        a[self._a_s, self._a_t] = co[:na]
        np.matmul(nxt, a.T, out=out)
        if len(self._f_s):
            out[:, self._f_s] += np.multiply.outer(np.asarray(nuv, dtype=np.float64),
                                                   e2 * co[na:na + len(self._f_s)])
        return out

    def a_state(self, co, dtype):
        """a restricted to the state columns, as an (N_STATE, N_STATE) array."""
        A = np.zeros((self.N_STATE, self.N_STATE), dtype=dtype)
        for k, (s, t) in enumerate(self.A_INDEX):
            if t < self.N_STATE:
                A[s, t] = co[k]
        return A

    def _g(self, dco, nxt, nuv, e2, dtype):
        """G[r, s, u] = d(out[r, s]) / d(v1[u]) at fixed next level: rows r over levels/modes."""
        n = self.N_STATE
        G = np.zeros((nxt.shape[0], n, n), dtype=dtype)
        for k, (ka, u) in enumerate(self.DA_INDEX):
            s, t = self.A_INDEX[ka]
            G[:, s, u] += dco[k] * nxt[:, t]
        nf = len(self.DA_INDEX)
        for k, (kf, u) in enumerate(self.DF_INDEX):
            G[:, self.F_INDEX[kf], u] += e2 * dco[nf + k] * nuv
        return G

    # -- the two bases ------------------------------------------------------------------------

    def rhs_levels(self, y, T, c, nu, eta, e2, ctx=None, noise=None, decay=None,
                   readout=None):
        """d y / d alpha in the level basis; y (L, N_STATE), T (L, N_TEACHER), c (L,), nu (L,).
        ``noise``, ``decay``: label-noise variance and weight decay κ (None or 0: none);
        ``readout``: the current v (K,) of a trained readout (its rate: ``readout_rates``)."""
        nx = self.closure(y, c)
        v1 = self._with_readout(nx[0], readout)
        co = self.coefficients(v1, T[0], eta, ctx)
        nxt = np.concatenate([nx, T], axis=1)
        out = self.combine(co, nxt, nu, e2, np.empty_like(y))
        return self._extras(out, y, v1, T[0], nu, eta, e2, noise, decay, ctx)

    def jac_levels(self, y, T, c, nu, eta, e2, ctx=None, noise=None, decay=None):
        """Jacobian of rhs_levels by y (flattened level-major), shape (L*N_STATE, L*N_STATE)."""
        self._no_readout_jacobian()
        L, n = y.shape
        nx = self.closure(y, c)
        co = self.coefficients(nx[0], T[0], eta, ctx)
        dco = self.coefficient_derivatives(nx[0], T[0], eta, ctx)
        nxt = np.concatenate([nx, T], axis=1)
        A = self.a_state(co, y.dtype)
        G = self._g(dco, nxt, nu, e2, y.dtype)
        J = np.zeros((L * n, L * n), dtype=y.dtype)
        self._jac_extras(G, J, y, nx[0], T[0], nu, eta, e2, noise, decay, ctx)
        for l in range(L):
            rows = slice(l * n, (l + 1) * n)
            if l + 1 < L:
                J[rows, (l + 1) * n:(l + 2) * n] += A
            else:
                for j in range(L):
                    J[rows, j * n:(j + 1) * n] -= c[j] * A
            if L >= 2:
                J[rows, n:2 * n] += G[l]
            else:
                J[rows, 0:n] -= c[0] * G[l]
        return J

    def rhs_modes(self, y, T, lam, w, eta, e2, ctx=None, noise=None, decay=None,
                  readout=None):
        """d y / d alpha in the modes basis; y (L, N_STATE), T (L, N_TEACHER), lam, w (L,)."""
        v1, t1 = self._with_readout(lam @ y, readout), lam @ T
        co = self.coefficients(v1, t1, eta, ctx)
        nxt = lam[:, None] * np.concatenate([y, T], axis=1)
        out = self.combine(co, nxt, w * lam, e2, np.empty_like(y))
        return self._extras(out, y, v1, t1, w * lam, eta, e2, noise, decay, ctx)

    def jac_modes(self, y, T, lam, w, eta, e2, ctx=None, noise=None, decay=None):
        """Jacobian of rhs_modes by y (flattened mode-major), shape (L*N_STATE, L*N_STATE)."""
        self._no_readout_jacobian()
        L, n = y.shape
        v1, t1 = lam @ y, lam @ T
        co = self.coefficients(v1, t1, eta, ctx)
        dco = self.coefficient_derivatives(v1, t1, eta, ctx)
        nxt = lam[:, None] * np.concatenate([y, T], axis=1)
        A = self.a_state(co, y.dtype)
        G = self._g(dco, nxt, w * lam, e2, y.dtype)
        J = np.zeros((L * n, L * n), dtype=y.dtype)
        self._jac_extras(G, J, y, v1, t1, w * lam, eta, e2, noise, decay, ctx)
        for k in range(L):
            rows = slice(k * n, (k + 1) * n)
            J[rows, k * n:(k + 1) * n] += lam[k] * A
            for j in range(L):
                J[rows, j * n:(j + 1) * n] += lam[j] * G[k]
        return J
