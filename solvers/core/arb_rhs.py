"""The generated right-hand sides as python-flint ``arb_mat`` algebra.

The hierarchy is linear in the next level (docs/theory/conventions.md): with the state of all levels (or
modes) as the rows of an L × N_STATE matrix Y,

    levels:  dY/dα = (C Y) A_sᵀ + T_lev A_tᵀ + e2 ν fᵀ,     C the companion matrix (closure)
    modes:   dY/dα = Λ (Y A_sᵀ + T_mod A_tᵀ) + e2 (Λ w) fᵀ,  Λ = diag(λ)

where A = [A_s | A_t] (state and teacher columns) and f are the generated module's
``coefficients`` of the level-1 state.  Only those ~N_STATE² scalars are computed in Python;
everything of size L is a handful of ``arb_mat`` products, each one call into C.  The generated
system's numpy assembly (``solvers.core.assembly``) does the same on object arrays, where every
one of the L · N_STATE · (N_STATE + N_TEACHER) products is a Python-level call; it remains the
reference (``tests/test_arb_rhs.py`` checks the two agree to the working precision).

A trained readout (the module's ``TRAINED``): the student's v_1..v_K are one more row of Y,
row L, padded with zeros to N_STATE columns (N_STATE = KM + K(K+1)/2 >= K), so that every
integrator keeps one arb_mat state.  C (or Λ), the teacher and the forcing get a zero row and
column there, so the level algebra leaves that row at zero, and it is then set to
dv_i/dα = η_v <g_s(x_i) Δ> (``readout_rates`` of the level-1 state and v; η_v constant, not
scaled by a learning-rate schedule).  v enters the coefficients as arguments after the
level-1 state (``level_one`` returns both).
"""
from __future__ import annotations

import numpy as np


def _arb_mat():
    from flint import arb_mat
    return arb_mat


def to_arb_mat(arr: np.ndarray):
    """(rows, cols) object array of arb -> arb_mat (a 1-d array becomes a column)."""
    arr = np.asarray(arr, dtype=object)
    if arr.ndim == 1:
        arr = arr[:, None]
    return _arb_mat()([list(r) for r in arr])


def from_arb_mat(m) -> np.ndarray:
    """arb_mat -> (rows, cols) object array of arb."""
    out = np.empty((m.nrows(), m.ncols()), dtype=object)
    for i, row in enumerate(m.tolist()):
        out[i, :] = row
    return out


class ArbMatRHS:
    """``fun(t, Y)`` of the generated system for ``solvers.integrators.rk78`` on arb_mat states.

    Build it inside the flint context whose precision the run uses; ``y0`` is the initial
    state as an arb_mat.  ``num`` is the NumericProblem at that context.
    """

    def __init__(self, mod, num, ctx, basis: str, coef_dps: int | None = None):
        arb_mat = _arb_mat()
        self.mod, self.ctx, self.basis = mod, ctx, basis
        self.coef_dps = coef_dps
        self.n, self.nt = mod.N_STATE, mod.N_TEACHER
        self.eta, self.e2 = num.eta, num.e2
        self.has_e2 = not (num.e2 == 0)
        L = len(num.lam)
        self.L = L
        # a trained readout: v is row L of the state (module docstring); R rows in all
        self.trained = bool(getattr(mod, "TRAINED", False))
        self.n_readout = mod.K if self.trained else 0
        R = L + 1 if self.trained else L
        self.eta_v = num.eta_v if self.trained else None
        # the readout's weight decay κ_v: dv/dα gains -η_v κ_v v
        self.decay_v = num.decay_v if self.trained and not (num.decay_v == 0) else None
        a_index = list(mod.A_INDEX)
        self._state_entries = [(k, s, t) for k, (s, t) in enumerate(a_index) if t < self.n]
        self._teacher_entries = [(k, s, t - self.n) for k, (s, t) in enumerate(a_index)
                                 if t >= self.n]
        self._f_entries = [(len(a_index) + k, s) for k, s in enumerate(mod.F_INDEX)]
        # label noise (e2·ν·noise·fn on Q) and weight decay (-η κ R, -2 η κ Q): conventions.md
        self.noise, self.decay = num.noise, num.decay
        self.has_noise = self.has_e2 and not (num.noise == 0)
        self.has_decay = not (num.decay == 0)
        n_af = len(a_index) + len(mod.F_INDEX)
        self._fn_entries = [(n_af + k, s) for k, s in enumerate(mod.FN_INDEX)]
        self._kdiag = [1 if s < mod.K * mod.M else 2 for s in range(self.n)]
        self.set_rates(num.eta, num.e2)
        pad = self._padded
        if basis == "levels":
            C = arb_mat(R, R)
            for i in range(L - 1):
                C[i, i + 1] = 1
            for j in range(L):
                C[L - 1, j] = -num.c[j]
            self.C = C
            self.teacher = pad(num.T_levels)
            self.forcing = pad(num.nu)                             # ν_1..ν_L
            self.t1 = list(num.T_levels[0])
        elif basis == "modes":
            D = arb_mat(R, R)
            for i in range(L):
                D[i, i] = num.lam[i]
            self.D = D
            self.lam_row = pad(num.lam).transpose()
            self.teacher = pad(num.T_modes)
            self.forcing = pad(num.w * num.lam)
            self.t1 = list(num.lam @ num.T_modes)
        else:
            raise ValueError(f"basis must be 'levels' or 'modes', got {basis!r}")

    def _padded(self, arr):
        """to_arb_mat of an L-row array, with a zero row L for a trained readout's v."""
        M = to_arb_mat(arr)
        if not self.trained:
            return M
        out = _arb_mat()(M.nrows() + 1, M.ncols())
        for i in range(M.nrows()):
            for j in range(M.ncols()):
                out[i, j] = M[i, j]
        return out

    def state(self, y, readout=None):
        """The arb_mat state of an (L, N_STATE) object array ``y`` (and, trained, the v
        ``readout`` as row L)."""
        if not self.trained:
            return to_arb_mat(y)
        if readout is None or len(readout) != self.n_readout:
            raise ValueError(f"a trained readout's state needs readout = v ({self.n_readout} "
                             f"numbers)")
        rows = [list(r) for r in np.asarray(y, dtype=object)]
        rows.append(list(readout) + [0] * (self.n - self.n_readout))
        return _arb_mat()(rows)

    def split(self, Y):
        """(L, N_STATE) object array of the levels / modes, and v ((K,) object array; empty
        untrained)."""
        arr = from_arb_mat(Y)
        if not self.trained:
            return arr, arr[:0, 0]
        return arr[:self.L], arr[self.L, :self.n_readout].copy()

    def set_rates(self, eta, e2):
        """Use the learning rate ``eta`` and η² term ``e2`` (numbers of the context) from the
        next call on: a learning-rate schedule changes them between pieces or calls."""
        self.eta, self.e2 = eta, e2
        if self.has_decay:
            Dd = _arb_mat()(self.n, self.n)
            for s in range(self.n):
                Dd[s, s] = eta * self.decay * self._kdiag[s]
            self.Dd = Dd

    def level_one(self, Y):
        """Level-1 state (list of arb) of the arb_mat state Y, then v when trained (the
        coefficients' v1 argument)."""
        v = [Y[self.L, i] for i in range(self.n_readout)]
        if self.basis == "levels":
            if self.L >= 2:
                return [Y[1, j] for j in range(self.n)] + v
            top = self.C * Y
            return [top[0, j] for j in range(self.n)] + v
        x = self.lam_row * Y
        return [x[0, j] for j in range(self.n)] + v

    def readout_rates(self, v1):
        """<g_s(x_i) Δ>, i = 1..K, at ``v1`` = level_one(Y) (at ``coef_dps`` when set: an
        error there moves v as a rounded η_v would, shared by every row)."""
        if self.coef_dps is None:
            return list(self.mod.readout_rates(v1, self.t1, self.ctx))
        with self.ctx.workdps(self.coef_dps):
            out = self.mod.readout_rates([+x for x in v1], self.t1, self.ctx)
            return [x.mid() if hasattr(x, "mid") else x for x in out]

    def set_readout_row(self, out, rates, Y):
        """Row L of ``out`` := η_v · (rates − κ_v v) (then zeros), v = row L of ``Y``: dv/dα
        (Y the state), or its Taylor coefficient before the division by k + 1 (Y the state's
        coefficient of the same order: the decay is linear in v).  In place; returns ``out``."""
        for i in range(self.n):
            if i >= self.n_readout:
                out[self.L, i] = 0
            elif self.decay_v is None:
                out[self.L, i] = self.eta_v * rates[i]
            else:
                out[self.L, i] = self.eta_v * (rates[i] - self.decay_v * Y[self.L, i])
        return out

    def coefficients(self, v1):
        """The generated coefficients a, f of v1; at ``coef_dps`` digits when set.

        Why a lower precision is enough: an error in a or f is the same for every level row,
        so the perturbed step is still an exact step of a (slightly different) consistent
        hierarchy — it moves ε_g by about that relative error but is not amplified by the
        closure.  What the closure amplifies is rounding that differs between rows, i.e. the
        products and sums with the L-row state, and those stay at the full precision.
        Short mantissas make those products several times cheaper.
        """
        if self.coef_dps is None:
            return self._with_noise(v1, self.mod.coefficients(v1, self.t1, self.eta, self.ctx))
        with self.ctx.workdps(self.coef_dps):
            v1 = [+x for x in v1]
            co = self._with_noise(v1, self.mod.coefficients(v1, self.t1, self.eta, self.ctx))
            return [x.mid() if hasattr(x, "mid") else x for x in co]   # a constant can be an int

    def _with_noise(self, v1, co):
        """a, f and (with label noise) the noise coefficients fn, in the jets' output order."""
        if not self.has_noise:
            return co
        fn = self.mod.noise_coefficients(v1, self.t1, self.ctx)[:len(self._fn_entries)]
        return list(co) + list(fn)

    def _matrices(self, co):
        arb_mat = _arb_mat()
        As = arb_mat(self.n, self.n)        # transposed: As[t, s] = a_st
        for k, s, t in self._state_entries:
            As[t, s] = co[k]
        At = arb_mat(self.nt, self.n)
        for k, s, t in self._teacher_entries:
            At[t, s] = co[k]
        f = arb_mat(1, self.n)
        for k, s in self._f_entries:
            f[0, s] = co[k]
        if self.has_noise:
            for k, s in self._fn_entries:
                f[0, s] += self.noise * co[k]
        return As, At, f

    def __call__(self, t, Y):
        v1 = self.level_one(Y)
        As, At, f = self._matrices(self.coefficients(v1))
        if self.basis == "levels":
            out = (self.C * Y) * As + self.teacher * At
        else:
            out = self.D * (Y * As + self.teacher * At)
        if self.has_e2:
            out = out + self.forcing * (f * self.e2)
        if self.has_decay:
            out = out - Y * self.Dd
        if self.trained:
            # the zero row L of C / Λ, teacher and forcing left v's row at 0 (decay: v·κη,
            # overwritten); dv/dα there
            self.set_readout_row(out, self.readout_rates(v1), Y)
        return out
