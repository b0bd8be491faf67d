"""The order-parameter hierarchy of online SGD (docs/theory/conventions.md), for general K, M.

Level l of the hierarchy couples the level-1 order parameters (R1, Q1, T1; they fix the
covariances of the pre-activations) to the level-(l+1) ones (they enter through the
"generalised" field x^(l), y^(l)).  Because I3 is linear in the two covariances that involve
the generalised field, every equation has the form

    dX^(l)/dα = Σ_Y  a_XY(v1) · Y^(l+1)  +  e2 · ν_{l+1} · f_X(v1)          (*)

with X over the per-level state (R_in, Q_ij with i <= j), Y over the per-level state plus the
teacher entries T_nm (n <= m), v1 = (R1, Q1, T1), e2 = η² for order 2 and 0 for order 1.
:class:`Hierarchy` derives the right-hand side once, for a generic level, with the next-level
quantities and ν_{l+1} as symbols, and splits it into the coefficients a and f of (*).  The
closure (Cayley–Hamilton) and the modes basis are built from that split in
:mod:`derive.systems`; code generation prints it in :mod:`derive.codegen.module_printer`.

State ordering within a level (documented contract): first R_in for i = 1..K, n = 1..M
(row-major), then Q_ij for 1 <= i <= j <= K (row-major upper triangle).  Teacher entries:
T_nm for 1 <= n <= m <= M.
"""
from __future__ import annotations

from functools import cached_property
from itertools import product

import sympy as sp

from . import integrals
from .codegen.derivatives import diff
from .codegen.substitute import xreplace
from .keys import SystemKey  # noqa: F401  (re-exported: the name every caller uses)


def state_labels(K: int, M: int) -> list[str]:
    """Names of the per-level state in order: R_in then Q_ij (i <= j), 1-based."""
    return ([f"R_{i}{n}" for i in range(1, K + 1) for n in range(1, M + 1)]
            + [f"Q_{i}{j}" for i in range(1, K + 1) for j in range(i, K + 1)])


def teacher_labels(M: int) -> list[str]:
    """Names of the teacher entries in order: T_nm (n <= m), 1-based."""
    return [f"T_{n}{m}" for n in range(1, M + 1) for m in range(n, M + 1)]


class _Block:
    """Symbols of one level: R (K x M), Q (K x K symmetric), T (M x M symmetric)."""

    def __init__(self, prefix: str, K: int, M: int):
        def sym(name):
            return sp.Symbol(f"{prefix}{name}", real=True)
        self.R = sp.Matrix(K, M, lambda i, n: sym(f"R_{i + 1}_{n + 1}"))
        self.Q = sp.Matrix(K, K, lambda i, j: sym(f"Q_{min(i, j) + 1}_{max(i, j) + 1}"))
        self.T = sp.Matrix(M, M, lambda n, m: sym(f"T_{min(n, m) + 1}_{max(n, m) + 1}"))
        self.state = ([self.R[i, n] for i in range(K) for n in range(M)]
                      + [self.Q[i, j] for i in range(K) for j in range(i, K)])
        self.teacher = [self.T[n, m] for n in range(M) for m in range(n, M)]


class Hierarchy:
    """Level-generic right-hand side of the hierarchy for one system key (student and teacher
    activations, K, M, readouts).  Student fields x carry g_s, teacher fields y carry g_t;
    erf / linear with teacher = student use derive/integrals.py, every other pair derive/family.

    Attributes (all plain ordered objects):
      ``v1``: level-1 block (``v1.state`` then ``v1.teacher`` are the coefficient arguments),
      ``nxt``: level-(l+1) block, ``eta``, ``nu`` (ν_{l+1}), ``e2`` (η² or 0: the order switch),
      ``rhs``: list of dX^(l)/dα in state order (η² term written as e2·ν·(...)),
      ``a``: Matrix (n_state x (n_state + n_teacher)) of coefficients of the next level,
      ``f``: list of η²-term coefficients, ``eps_g``: generalisation error of v1.
    """

    def __init__(self, key: SystemKey):
        self.key = key
        K, M = key.K, key.M
        self.v1 = _Block("", K, M)
        self.nxt = _Block("n", K, M)
        self.eta = sp.Symbol("eta", positive=True)
        self.nu = sp.Symbol("nu", positive=True)
        self.e2 = sp.Symbol("e2", nonnegative=True)
        self.n_state = len(self.v1.state)
        self.n_teacher = len(self.v1.teacher)
        # a trained readout: the student's v_i are state (level-independent, like T), so the
        # coefficients a, f and ε_g are functions of (v1, v); empty for fixed readouts
        self.v = [sp.Symbol(f"v_{i + 1}", real=True) for i in range(K)] if key.trained else []

    # -- the Gaussian fields ---------------------------------------------------------------
    def _cov3(self, first, second, third):
        """3x3 covariance of (x_i, generalised field, third field).

        Fields are tagged ("x", i), ("y", n); the generalised one is the level-l field whose
        covariances with level-1 fields are level-(l+1) order parameters.
        """
        c = sp.zeros(3, 3)
        c[0, 0] = self._c1(first, first)
        c[0, 1] = c[1, 0] = self._cn(first, second)
        c[0, 2] = c[2, 0] = self._c1(first, third)
        c[1, 2] = c[2, 1] = self._cn(third, second)
        c[2, 2] = self._c1(third, third)
        return c  # c[1, 1] is never used by I3

    def _c1(self, u, w):
        return self._entry(self.v1, u, w)

    def _cn(self, u, w):
        return self._entry(self.nxt, u, w)

    @staticmethod
    def _entry(block, u, w):
        (tu, iu), (tw, iw) = u, w
        if tu == "x" and tw == "x":
            return block.Q[iu, iw]
        if tu == "x" and tw == "y":
            return block.R[iu, iw]
        if tu == "y" and tw == "x":
            return block.R[iw, iu]
        return block.T[iu, iw]

    def _cov4(self, fields):
        return sp.Matrix(4, 4, lambda a, b: self._c1(fields[a], fields[b]))

    # -- the equations ---------------------------------------------------------------------
    # -- the Gaussian integrals, each slot with its field's activation ---------------------
    def _act(self, field):
        return self.key.activation if field[0] == "x" else self.key.teacher_activation

    def _I3(self, *f):
        if self._plain:
            return integrals.I3(self.key.activation, self._cov3(*f))
        return self._generic(("I3", self._act(f[0]), self._act(f[2])), 3)(self._cov3(*f))

    def _I4(self, *f):
        if self._plain:
            return integrals.I4(self.key.activation, self._cov4(f))
        acts = tuple(self._act(x) for x in f)
        # a ReLU field in two slots (i = j, x_k = x_i, y_n = y_m): the four-field forms divide
        # by its vanishing conditional variance, so coincident step-function fields are merged
        # into one slot carrying the product of their factors (theta^2 = theta)
        if "relu" in acts and len(set(f)) < 4:
            return self._merged_I4(f)
        return self._generic(("I4",) + acts, 4)(self._cov4(f))

    def _I2(self, u, w):
        c = sp.Matrix([[self._c1(u, u), self._c1(u, w)], [self._c1(w, u), self._c1(w, w)]])
        if self._plain:
            return integrals.I2(self.key.activation, c)
        return self._generic(("I2", self._act(u), self._act(w)), 2)(c)

    @cached_property
    def _plain(self):
        # erf / linear with teacher = student: the hand-written forms of derive/integrals.py
        # substituted directly, as always (the checked-in modules stay byte-identical)
        return self.key.same_activation and self.key.activation in integrals.ACTIVATIONS

    def _generic(self, which, n):
        """The integral ``which`` = (name, activations...) derived once in covariance symbols;
        returns a function substituting a covariance matrix (exact, by xreplace)."""
        memo = self.__dict__.setdefault("_generic_memo", {})
        if which not in memo:
            from . import family
            C = integrals.covariance_symbols(n)
            expr = getattr(family, which[0])(*which[1:], C)
            syms = [(C[a, b], (a, b)) for a in range(n) for b in range(a, n)]
            memo[which] = (expr, syms)
        expr, syms = memo[which]
        return lambda cov: xreplace(expr, {s: cov[a, b] for s, (a, b) in syms})

    def _merged_fields(self, f):
        """(fields, factors): the distinct fields of I4's four slots with coincident ReLU
        (step-function) or polynomial slots merged into one slot carrying the product of their
        factors (theta² = theta); other coincident fields (erf: erf² is not erf) stay apart."""
        from .family.activations import ONE, THETA, activation
        fields, factors = [], []
        for slot, x in enumerate(f):
            coeffs, kind = activation(self._act(x)).factor(derivative=slot < 2)
            k = next((k for k, y in enumerate(fields) if y == x and kind in (ONE, THETA)
                      and factors[k][1] in (ONE, THETA)), None)
            if k is None:
                fields.append(x)
                factors.append((coeffs, kind))
                continue
            c0, k0 = factors[k]
            prod = [sp.Integer(0)] * (len(c0) + len(coeffs) - 1)
            for p, a in enumerate(c0):
                for q, b in enumerate(coeffs):
                    prod[p + q] += a * b
            factors[k] = (tuple(prod), THETA if THETA in (k0, kind) else ONE)
        return fields, factors

    def _merged_I4(self, f):
        """<g'(f1) g'(f2) g(f3) g(f4)> over the merged fields of :meth:`_merged_fields`; the
        covariance of fields left apart may be singular (the erf and polynomial reductions
        allow it)."""
        from .family.integrals import _expand
        fields, factors = self._merged_fields(f)
        # derived once per pattern in covariance symbols, then substituted: the merged fields
        # are distinct, so their covariance entries are distinct symbols (a renaming)
        n = len(fields)
        memo = self.__dict__.setdefault("_merged_memo", {})
        pattern = (n, tuple(factors))
        if pattern not in memo:
            memo[pattern] = _expand(integrals.covariance_symbols(n), factors)
        C = integrals.covariance_symbols(n)
        out = xreplace(memo[pattern], {C[a, b]: self._c1(fields[a], fields[b])
                                       for a in range(n) for b in range(a, n)})
        if out.has(sp.nan, sp.zoo, sp.oo):
            raise AssertionError(f"I4 of {f}: the reduction divided by zero")
        return out

    # -- the readouts ----------------------------------------------------------------------
    @cached_property
    def readouts(self):
        """(v, u): the student and teacher second-layer weights as exact SymPy numbers (v as
        the symbols ``self.v`` when the readout is trained)."""
        vals = [sp.sympify(x, rational=True) for x in self.key.readouts]
        v = list(self.v) if self.key.trained else vals[:self.key.K]
        return v, vals[self.key.K:]

    @property
    def _general_readouts(self) -> bool:
        # the paper's fixed readouts keep the forms the checked-in modules were printed from
        return self.key.readout is not None or self.key.trained

    # -- the equations ---------------------------------------------------------------------
    @cached_property
    def _parts(self):
        """Per equation: (linear part, η² bracket) with rhs = lin + e2·ν·quad."""
        if self._general_readouts:
            return self._parts_readouts()
        K, M = self.key.K, self.key.M
        I3, I4 = self._I3, self._I4
        xs = [("x", i) for i in range(K)]
        ys = [("y", n) for n in range(M)]
        k_, m_ = sp.Integer(K), sp.Integer(M)
        parts = []
        for i, n in product(range(K), range(M)):
            drive = sp.Add(*[I3(xs[i], ys[n], y_m) for y_m in ys])
            back = sp.Add(*[I3(xs[i], ys[n], x_j) for x_j in xs])
            parts.append((self.eta / k_ * (drive - m_ / k_ * back), sp.Integer(0)))
        for i in range(K):
            for j in range(i, K):
                lin = 0
                for a, b in ((i, j), (j, i)):
                    drive = sp.Add(*[I3(xs[a], xs[b], y_m) for y_m in ys])
                    back = sp.Add(*[I3(xs[a], xs[b], x_k) for x_k in xs])
                    lin += drive - m_ / k_ * back
                quad = (sp.Add(*[I4(xs[i], xs[j], y_n, y_m) for y_n in ys for y_m in ys])
                        - 2 * m_ / k_ * sp.Add(*[I4(xs[i], xs[j], x_k, y_n)
                                                 for x_k in xs for y_n in ys])
                        + m_**2 / k_**2 * sp.Add(*[I4(xs[i], xs[j], x_k, x_l)
                                                   for x_k in xs for x_l in xs]))
                parts.append((self.eta / k_ * lin, quad / k_**2))
        return parts

    def _parts_readouts(self):
        """_parts for general readouts v, u (conventions: <.. Delta> = Σ u_m I(.., y_m) -
        Σ v_j I(.., x_j)); the paper's v = sqrt(M)/K, u = 1/sqrt(M) give the same equations."""
        K, M = self.key.K, self.key.M
        I3, I4 = self._I3, self._I4
        v, u = self.readouts
        xs = [("x", i) for i in range(K)]
        ys = [("y", n) for n in range(M)]

        def delta3(a, b):
            return (sp.Add(*[u[m] * I3(a, b, ys[m]) for m in range(M)])
                    - sp.Add(*[v[k] * I3(a, b, xs[k]) for k in range(K)]))
        parts = []
        for i, n in product(range(K), range(M)):
            parts.append((self.eta * v[i] * delta3(xs[i], ys[n]), sp.Integer(0)))
        for i in range(K):
            for j in range(i, K):
                lin = v[i] * delta3(xs[i], xs[j]) + v[j] * delta3(xs[j], xs[i])
                quad = (sp.Add(*[u[n] * u[m] * I4(xs[i], xs[j], ys[n], ys[m])
                                 for n in range(M) for m in range(M)])
                        - 2 * sp.Add(*[v[k] * u[n] * I4(xs[i], xs[j], xs[k], ys[n])
                                       for k in range(K) for n in range(M)])
                        + sp.Add(*[v[k] * v[l] * I4(xs[i], xs[j], xs[k], xs[l])
                                   for k in range(K) for l in range(K)]))
                parts.append((self.eta * lin, v[i] * v[j] * quad))
        return parts

    @cached_property
    def rhs(self) -> list:
        return [lin + self.e2 * self.nu * quad for lin, quad in self._parts]

    @cached_property
    def _split(self):
        # The linear part is homogeneous-linear in the next level: its gradient there is free
        # of next-level symbols and it vanishes when they do.  Both are checked, which proves
        # lin == a · next exactly (no expansion of the erf expressions needed).
        nxt_syms = self.nxt.state + self.nxt.teacher
        zero = {y: 0 for y in nxt_syms}
        a = sp.zeros(self.n_state, len(nxt_syms))
        free, memo, nxt_set = {}, {}, set(nxt_syms)
        for s, (lin, _) in enumerate(self._parts):
            for t, y in enumerate(nxt_syms):
                coeff = diff(lin, y, free, memo)     # = sp.diff(lin, y), faster
                if coeff.free_symbols & nxt_set:
                    raise AssertionError(f"equation {s} is not linear in {y}")
                a[s, t] = coeff
            rest = lin.xreplace(zero)          # (subs would try to rewrite each subtree)
            if rest != 0 and sp.simplify(rest) != 0:
                raise AssertionError(f"equation {s} has a part independent of the next level")
        f = [quad for _, quad in self._parts]
        if any(set(q.free_symbols) & set(nxt_syms) for q in f):
            raise AssertionError("the eta^2 term depends on the next level")
        return a, f

    @property
    def a(self) -> sp.Matrix:
        return self._split[0]

    @property
    def f(self) -> list:
        return self._split[1]

    @cached_property
    def fn(self) -> list:
        """Label-noise coefficients: the η² term gains e2·ν·noise·fn (conventions.md),
        fn = v_i v_j <g_s'(x_i) g_s'(x_j)> for Q_ij and 0 for R_in; state order."""
        K, M = self.key.K, self.key.M
        v, _ = self.readouts
        out = [sp.Integer(0)] * (K * M)
        for i in range(K):
            for j in range(i, K):
                out.append(sp.expand(v[i] * v[j]) * self._gp_gp(("x", i), ("x", j)))
        return out

    def _gp_gp(self, a, b):
        """<g_s'(a) g_s'(b)> for two student fields (coincident ReLU fields merged)."""
        c = sp.Matrix([[self._c1(a, a), self._c1(a, b)], [self._c1(b, a), self._c1(b, b)]])
        if self._plain:
            return integrals.gp_gp(self.key.activation, c)
        from .family.activations import THETA, activation
        from .family.integrals import _expand
        factor = activation(self.key.activation).derivative_factor()
        if a == b and factor[1] == THETA:
            return _expand(sp.Matrix([[c[0, 0]]]), [factor])      # theta² = theta
        return _expand(c, [factor, factor])

    @cached_property
    def eps_g(self) -> sp.Expr:
        K, M = self.key.K, self.key.M
        I2 = self._I2
        xs = [("x", i) for i in range(K)]
        ys = [("y", n) for n in range(M)]
        if self._general_readouts:
            v, u = self.readouts
            tt = sp.Add(*[u[n] * u[m] * I2(ys[n], ys[m]) for n in range(M) for m in range(M)])
            ss = sp.Add(*[v[i] * v[j] * I2(xs[i], xs[j]) for i in range(K) for j in range(K)])
            st = sp.Add(*[v[i] * u[n] * I2(xs[i], ys[n]) for i in range(K) for n in range(M)])
            return sp.Rational(1, 2) * (tt + ss - 2 * st)
        tt = sp.Add(*[I2(u, w) for u in ys for w in ys])
        ss = sp.Add(*[I2(u, w) for u in xs for w in xs])
        st = sp.Add(*[I2(u, w) for u in xs for w in ys])
        return sp.Rational(1, 2) * (tt / M + sp.Integer(M) / K**2 * ss - sp.Integer(2) / K * st)

    @cached_property
    def readout_rates(self) -> list:
        """<g_s(x_i) Δ> for i = 1..K: dv_i/dα = η_v · readout_rates[i] for a trained readout
        (conventions.md; level 1 only: v multiplies the unit's output, not a generalised
        field); Δ is the clean error, the label noise averaging out at first order."""
        K, M = self.key.K, self.key.M
        v, u = self.readouts
        xs = [("x", i) for i in range(K)]
        ys = [("y", n) for n in range(M)]
        return [sp.Add(*[u[m] * self._I2(xs[i], ys[m]) for m in range(M)])
                - sp.Add(*[v[k] * self._I2(xs[i], xs[k]) for k in range(K)]) for i in range(K)]

    def labels(self) -> list[str]:
        return state_labels(self.key.K, self.key.M)
