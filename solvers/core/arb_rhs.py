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
        if basis == "levels":
            C = arb_mat(L, L)
            for i in range(L - 1):
                C[i, i + 1] = 1
            for j in range(L):
                C[L - 1, j] = -num.c[j]
            self.C = C
            self.teacher = to_arb_mat(num.T_levels)
            self.forcing = to_arb_mat(num.nu)                      # ν_1..ν_L
            self.t1 = list(num.T_levels[0])
        elif basis == "modes":
            D = arb_mat(L, L)
            for i in range(L):
                D[i, i] = num.lam[i]
            self.D = D
            self.lam_row = to_arb_mat(num.lam).transpose()
            self.teacher = to_arb_mat(num.T_modes)
            self.forcing = to_arb_mat(num.w * num.lam)
            self.t1 = list(num.lam @ num.T_modes)
        else:
            raise ValueError(f"basis must be 'levels' or 'modes', got {basis!r}")

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
        """Level-1 state (list of arb) of the arb_mat state Y."""
        if self.basis == "levels":
            if self.L >= 2:
                return [Y[1, j] for j in range(self.n)]
            top = self.C * Y
            return [top[0, j] for j in range(self.n)]
        v = self.lam_row * Y
        return [v[0, j] for j in range(self.n)]

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
        return out
