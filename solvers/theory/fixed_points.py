"""Fixed points of any generated system at arbitrary precision, and the spectrum there.

The general route behind ``scaling-odes plateau`` / ``asymptotic`` for every variant of the
committee-machine family (activations, readouts, label noise, weight decay, batch size): the
fixed point is found by Newton's method on the generated right-hand side (modes basis,
:class:`solvers.core.assembly.System`, its generated Jacobian), restricted to an invariant
subspace when one is asked for; the linearisation's eigenvalues are those of the generated
Jacobian of the full system at that point (python-flint, approximate eigenvalues at the working
precision).  Precision is scoped (:class:`solvers.core.numbers.MpmathContext`) and every result
is verified by rerunning at higher precision until it agrees (:func:`verified`).

>>> from derive import spectra
>>> from derive.keys import SystemKey
>>> from solvers.theory.fixed_points import Setup, full_state, newton
>>> # erf K = M = 1 on the expected teacher (L = 2, T_k = 1/2): perfect learning R = Q = T
>>> sp_ = spectra.power_law(2, 1)
>>> import numpy as np
>>> from fractions import Fraction
>>> T = np.array([[w] for w in sp_.weights], dtype=object)
>>> with Setup.context(30) as ctx:
...     st = Setup.build(SystemKey("erf", 1, 1), sp_, T, Fraction(1, 2), 1, ctx=ctx)
...     x, res = newton(st, full_state(st.L, st.n), [0.3, 0.2, 0.3, 0.2])
...     print(mpmath.nstr(x[0], 12), mpmath.nstr(x[1], 12))
0.5 0.5
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import mpmath
import numpy as np

from solvers.core.numbers import MpmathContext
from solvers.core.problem import spectrum_numbers
from solvers.core.registry import load


@dataclass
class Setup:
    """The numbers of one system at one precision: everything rhs_modes / jac_modes take."""

    system: object
    T_modes: np.ndarray          # (L, N_TEACHER) packed teacher modes
    lam: np.ndarray
    w: np.ndarray
    eta: object
    e2: object                   # eta^2 / batch_size at order 2, 0 at order 1
    noise: object
    decay: object
    ctx: object
    K: int
    M: int

    @staticmethod
    def context(dps: int):
        """The scoped mpmath context the Setup's numbers live in."""
        return MpmathContext(dps)

    @classmethod
    def build(cls, key, spectrum, T_modes, eta, order, ctx, noise=0, decay=0, batch_size=1):
        """Numbers of ``ctx`` for the system ``key`` on ``spectrum`` with the exact packed teacher
        modes ``T_modes`` (L, N_TEACHER) and exact training constants."""
        system = load(key, "mpmath")
        lam, w, _, _ = spectrum_numbers(spectrum, ctx)
        conv = ctx.convert
        T = np.array([[conv(Fraction(x)) for x in row] for row in T_modes], dtype=object)
        etan = conv(Fraction(eta))
        e2 = etan ** 2 / batch_size if order == 2 else conv(0)
        return cls(system, T, lam, w, etan, e2, conv(Fraction(noise)), conv(Fraction(decay)),
                   ctx, key.K, key.M)

    @property
    def L(self):
        return len(self.lam)

    @property
    def n(self):
        return self.system.N_STATE

    def rhs(self, y):
        return self.system.rhs_modes(y, self.T_modes, self.lam, self.w, self.eta, self.e2,
                                     self.ctx, noise=self.noise, decay=self.decay)

    def jac(self, y):
        return self.system.jac_modes(y, self.T_modes, self.lam, self.w, self.eta, self.e2,
                                     self.ctx, noise=self.noise, decay=self.decay)

    def eps_g(self, y):
        """ε_g (clean, label noise excluded) of the mode state y."""
        return self.system.eps_g(self.lam @ y, self.lam @ self.T_modes, self.ctx)


class Embedding:
    """A linear subspace of the mode state given per mode by groups of state entries that are
    equal: reduced coordinate j of mode k sets every entry of ``groups[j]`` in row k.

    ``pick`` are the rows of the right-hand side that determine it (the first entry of each
    group); ``defect`` measures how far a right-hand side is from the subspace (zero when the
    subspace is invariant)."""

    def __init__(self, L, n, groups):
        self.L, self.n, self.groups = L, n, [list(g) for g in groups]
        m = len(self.groups)
        self.m = m
        self.pick = [k * n + g[0] for k in range(L) for g in self.groups]
        self.E = np.zeros((L * n, L * m), dtype=object)
        for k in range(L):
            for j, g in enumerate(self.groups):
                for s in g:
                    self.E[k * n + s, k * m + j] = 1

    def state(self, x, zero):
        y = np.full((self.L, self.n), zero, dtype=object)
        for k in range(self.L):
            for j, g in enumerate(self.groups):
                for s in g:
                    y[k, s] = x[k * self.m + j]
        return y

    def reduce(self, y):
        """Reduced coordinates of a state: the mean of each group (a projection)."""
        return [sum(y[k, s] for s in g) / len(g) for k in range(self.L) for g in self.groups]

    def defect(self, f):
        """max over groups of the spread of a right-hand side f (L, n) inside the group."""
        return max((abs(f[k, s] - f[k, g[0]]) for k in range(self.L) for g in self.groups
                    for s in g), default=0)


def full_state(L, n) -> Embedding:
    """The whole state (no restriction)."""
    return Embedding(L, n, [[s] for s in range(n)])


def equal_students(K, M, L, n) -> Embedding:
    """All students equal: R_in = r_n for every i, Q_ij = q for every i <= j (M + 1 numbers per
    mode).  Invariant when the student readouts are uniform (the right-hand side commutes with
    permutations of the students; the subspace is the set they fix)."""
    groups = [[i * M + m for i in range(K)] for m in range(M)]
    groups.append(list(range(K * M, n)))
    return Embedding(L, n, groups)


class NoFixedPoint(ValueError):
    """Newton's method did not converge (the message says from where and how far it got)."""


def newton(st: Setup, emb: Embedding, x0, maxsteps: int = 80):
    """Newton's method on the right-hand side restricted to ``emb`` at the context's precision,
    from the reduced point ``x0`` (numbers or floats); backtracking halves a step that does not
    lower max|f|.  Returns (x, max|f| of the full right-hand side at x).  Converged when a step
    is below 10^-(dps-5) of the point's scale; NoFixedPoint otherwise."""
    ctx = st.ctx
    zero = ctx.convert(0)
    x = [ctx.convert(v) if not isinstance(v, mpmath.mpf) else +v for v in x0]
    tol = mpmath.mpf(10) ** (-(ctx.dps - 5))

    def F(x):
        f = st.rhs(emb.state(x, zero)).ravel()
        return [f[p] for p in emb.pick]

    f = F(x)
    norm = max(abs(v) for v in f)
    for _ in range(maxsteps):
        J = st.jac(emb.state(x, zero))
        Jr = mpmath.matrix((J[emb.pick] @ emb.E).tolist())
        try:
            dx = mpmath.lu_solve(Jr, mpmath.matrix(f))
        except ZeroDivisionError:
            raise NoFixedPoint("the Jacobian is singular on the way (no isolated fixed "
                               "point there)") from None
        t = mpmath.mpf(1)
        while True:
            xn = [a - t * d for a, d in zip(x, dx)]
            try:
                fn = F(xn)
                nn = max(abs(v) for v in fn)
            except (ZeroDivisionError, ValueError):     # left the domain (a singular covariance)
                nn = mpmath.inf
            if nn < norm or t < mpmath.mpf(2) ** -20 or norm == 0:
                break
            t /= 2
        if not mpmath.isfinite(nn):
            raise NoFixedPoint("Newton left the domain of the integrals")
        step = t * max(abs(d) for d in dx)
        x, f, norm = xn, fn, nn
        scale = max(1, max(abs(v) for v in x))
        # converged: a step at the precision's level, or a right-hand side at the round-off
        # floor (an ill-conditioned Jacobian keeps the steps there from shrinking further;
        # the verifying rerun at higher precision shows how many digits the point has)
        if step <= tol * scale or norm <= tol * mpmath.mpf(10) ** -3 * scale:
            full = st.rhs(emb.state(x, zero))
            return x, max(abs(v) for v in full.ravel())
    raise NoFixedPoint(f"Newton did not converge in {maxsteps} steps (max|f| = "
                       f"{mpmath.nstr(norm, 3)})")


def eigenvalues(J, dps: int):
    """Eigenvalues (mpmath mpc, sorted by decreasing real part) of an object matrix of mpf at
    ``dps`` digits: python-flint's acb_mat.eig (approximate: no error bounds, which
    :func:`verified` supplies by rerunning), its precision scoped."""
    import flint
    from solvers.core.numbers import FlintContext
    with FlintContext(dps) as fctx:
        A = flint.acb_mat([[fctx.convert(x) for x in row] for row in J.tolist()])
        ev = A.eig(algorithm="approx")
        out = [mpmath.mpc(mpmath.mpf(e.real.mid().str(dps + 5, radius=False)),
                          mpmath.mpf(e.imag.mid().str(dps + 5, radius=False))) for e in ev]
    return sorted(out, key=lambda z: (-z.real, -z.imag))


def agreement(a, b, scale=None) -> float:
    """Decimal digits to which a and b agree, relative to ``scale`` (default max(|a|, |b|))."""
    d = abs(mpmath.mpmathify(a) - mpmath.mpmathify(b))
    s = scale if scale is not None else max(abs(mpmath.mpmathify(a)), abs(mpmath.mpmathify(b)))
    if d == 0:
        return math.inf
    if s == 0:
        return -math.inf
    return float(-mpmath.log10(d / s))


class NotVerified(ValueError):
    """The reruns never agreed to the digits asked for."""


def verified(compute, digits: int, dps: int, max_dps: int = 400):
    """Run ``compute(dps)`` -> dict name -> (list of mpf/mpc, scale or None[, as_set]) and rerun at higher
    precision (dps + max(10, dps/2)) until every entry agrees to ``digits`` digits with the run
    before; returns (the higher-precision result, {name: verified digits}, dps used).

    The digits of an entry are relative to its list's scale (e.g. the spectral radius for
    eigenvalues, max|entry| for a fixed point), or to the entry itself when the scale is None;
    with ``as_set`` true (eigenvalues) each entry is compared with the nearest one of the other
    run, so that the order of (near-)degenerate eigenvalues does not matter.
    """
    a = compute(dps)
    while True:
        dps2 = dps + max(10, dps // 2)
        if dps2 > max_dps:
            raise NotVerified(f"the results did not agree to {digits} digits up to dps = "
                              f"{dps} (limit {max_dps})")
        b = compute(dps2)
        got = {}
        for name, entry in b.items():
            vals, scale = entry[0], entry[1]
            as_set = len(entry) > 2 and entry[2]
            prev = a[name][0]
            if len(prev) != len(vals):
                got[name] = -math.inf
                continue
            with mpmath.workdps(dps2):
                if as_set:      # eigenvalues: each against the nearest of the other run
                    pairs = [(min(prev, key=lambda x: abs(x - y)), y) for y in vals]
                else:
                    pairs = list(zip(prev, vals))
                got[name] = min((agreement(x, y, scale) for x, y in pairs), default=math.inf)
        if all(g >= digits for g in got.values()):
            return b, {k: dps if v == math.inf else min(dps, int(math.floor(v)))
                       for k, v in got.items()}, dps2
        a, dps = b, dps2
