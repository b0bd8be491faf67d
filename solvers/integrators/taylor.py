"""Adaptive high-order Taylor integration of the hierarchy on python-flint arb matrices.

The system (solvers/core/arb_rhs.py), with the state of all levels (or modes) as rows of Y:

    levels:  dY/dα = (C Y) A_s(v1)ᵀ + T A_t(v1)ᵀ + e2 ν f(v1)ᵀ
    modes:   dY/dα = D (Y A_s(v1)ᵀ + T A_t(v1)ᵀ) + e2 (D w) f(v1)ᵀ

is linear in Y except through the level-1 row v1.  With Y(α0 + τ) = Σ_k Y_k τ^k the Taylor
coefficients follow order by order:

    (k + 1) Y_{k+1} = Σ_{j=0..k} Z_j A_{s,k-j}ᵀ + T A_{t,k}ᵀ + e2 ν f_kᵀ,   Z_j = C Y_j

where A_{s,k}, A_{t,k}, f_k are coefficient k of the level-1 coefficient functions: their jets,
computed by the recurrences printed from the symbolic system (derive/codegen/jet_printer.py, module
``<tag>_taylor``) from v1's coefficients 0..k.  Only those few scalars need the nonlinear
recurrences (at the short precision of the row-independent scalars, see arb_rhs.coefficients);
everything of size L is arb_mat algebra at the working precision.

Order and step (after Jorba & Zou 2005 and heyoka): order p = ⌈-ln(tol)/2⌉ + 1; with ρ_k the
radius estimate (‖Y_0‖/‖Y_k‖)^(1/k) from the last two coefficients (each row measured relative
to itself, the smallest over rows: the level rows span hundreds of orders of magnitude),
h = ρ / e² · exp(-0.7/(p-1)), so that the first neglected term is ≈ tol relative to each row.
Output points inside a step are evaluated from the step's own series (dense output).

A power learning-rate schedule η(α) = η (1 + α/a0)^(-p) (``schedule=("power", a0, p)``): the a
coefficients carry exactly one factor η, f (the η² term) none, and e2 = η²/B multiplies it
(derive/hierarchy.py), so with s(α) = η(α)/η the right-hand side is s·[C Y A_s + T A_t]
+ s²·[e2 ν f] − s·[η κ decay Y], every bracket at the constant η.  The printed jets keep running
at the constant η; coefficient k of s·A_s, s·A_t and s²·f are Cauchy products of their jets
with the series of s and s² about the step's start (the binomial series of a power of a linear
function, exact coefficients: jet_ops.linear_power), on the N_STATE-sized coefficient matrices,
so the cost does not grow with L.  Weight decay takes the product with the state's own series.

A trained readout: v_1..v_K are row L of Y (solvers.core.arb_rhs, zero-padded), the jets take
v's coefficients as inputs after the level-1 state and return the readout rates after the other
outputs; the level algebra leaves row L at zero and it is set to
(k + 1) v_{k+1} = η_v · (rate_k − κ_v v_k) (η_v constant: the schedule's series multiplies a, f and the decay
only).  The step size measures that row like any other (relative to itself), and dense output
evaluates it with the same Horner sums.

From order FIXED_POINT_MIN_ORDER on (up to FIXED_POINT_MAX_ROWS levels), the level-basis series
runs on fmpz integers (solvers/integrators/fixed_series.py); its coefficients come back scaled
(Y_k = 2^(u_r - σk) Ỹ_k per row r), and the step is kept <= 2^σ so that the integers' unit
stays below the precision.
"""
from __future__ import annotations

import math
from fractions import Fraction

__all__ = ["taylor_order", "integrate_taylor", "TaylorSeries", "rate_series"]

_LN2 = math.log(2.0)

# From this order on, and up to this many level rows, the level-basis series runs in fixed point
# (fixed_series.py).  Measured on the bench_taylor.py system, α ≤ 300, order 76, interleaved runs
# (BENCHMARKS.md, Taylor section): fixed point 0.88x the arb_mat CPU time at L = 16, 0.95x at
# L = 32, 1.11x at L = 64; at order 21 1.04-1.10x (L = 16, 64) — the Python-level rescaling of
# each order's integers costs O(L p) per step, the products it saves O(L p²).
FIXED_POINT_MIN_ORDER = 50
FIXED_POINT_MAX_ROWS = 32


def taylor_order(tol: float) -> int:
    """heyoka's rule: the order at which the series' terms fall to ``tol`` at h = ρ/e²."""
    return int(math.ceil(-math.log(float(tol)) / 2.0)) + 1


def _log_mag(x) -> float:
    """Natural log of |midpoint| of an arb (-inf for 0), without overflow."""
    m = x.mid()
    if m == 0:
        return -math.inf
    if not m.is_finite():
        # the series overflowed: the precision was too small for the closure's cancellation
        from solvers.integrators.rk78 import IntegrationError
        raise IntegrationError("Taylor integration: a series coefficient became non-finite")
    man, exp = m.man_exp()
    man = abs(int(man))
    bits = man.bit_length()
    lead = man >> max(bits - 53, 0)
    return (math.log(lead) + (max(bits - 53, 0) + int(exp)) * _LN2)


def _row_log_norms(Y, probe):
    """Per row, the log of a magnitude estimate (-inf for a zero row): the larger of two random
    combinations of the row's entries (``probe``: n x 2), one small product instead of a
    Python pass over every entry; both combinations cancelling is improbable (measure zero)."""
    entries = (Y * probe).entries()
    return [max(_log_mag(entries[2 * r]), _log_mag(entries[2 * r + 1]))
            for r in range(Y.nrows())]


class TaylorSeries:
    """Builds the Taylor coefficients of one step from a state (see the module docstring).

    ``rhs`` is a :class:`solvers.core.arb_rhs.ArbMatRHS` (it holds C or D, the teacher, the
    forcing and the index maps); ``jets`` the generated module ``<tag>_taylor``.
    """

    def __init__(self, rhs, jets, jet_dps: int, schedule=None):
        self.rhs, self.jets, self.jet_dps = rhs, jets, jet_dps
        self.extend = jets.jets_extend if rhs.has_e2 else jets.jets_extend_a
        self.levels = rhs.basis == "levels"
        self.schedule = _checked_schedule(schedule)

    def rate_series(self, t, n: int):
        """Series of s(α) = η(α)/η and s² about α = ``t`` (exact), coefficients 0 .. n-1, at
        the jets' short precision (like η inside them: a rounding shared by every row); None
        without a schedule.  s(t + τ) = (1 + t/a0)^(-p) (1 + τ/(a0 + t))^(-p)."""
        if self.schedule is None:
            return None
        with self.rhs.ctx.workdps(self.jet_dps):
            s, q = rate_series(self.schedule, t, n, self.rhs.ctx, squared=self.rhs.has_e2)
            return [x.mid() for x in s], (None if q is None else [x.mid() for x in q])

    def _scaled(self, raw, rate, k):
        """Coefficient k of (s A_s, s A_t, s² f): Cauchy products of the schedule's series with
        the jets of the constant-η coefficients (``raw``), on the small N_STATE-sized
        matrices (independent of L), at the jets' short precision."""
        s, q = rate
        with self.rhs.ctx.workdps(self.jet_dps):
            out = []
            for m, w in enumerate((s, s, q)):
                if w is None:                       # order 1: f is never used
                    out.append(raw[k][m])
                    continue
                acc = raw[k][m] * w[0]
                for i in range(1, k + 1):
                    acc += raw[k - i][m] * w[i]
                out.append(acc.mid())
        return tuple(out)

    def _short(self, fn, *args):
        # the jets are row-independent scalars: short precision, scoped by the number context
        with self.rhs.ctx.workdps(self.jet_dps):
            out = fn(*args)
            return [x.mid() if hasattr(x, "mid") else x for x in out]

    def _v1(self, Y):
        return self.rhs.level_one(Y)

    def coefficients(self, Y0, order: int, t=0):
        """[Y_0, ..., Y_order] for the state Y0 at α = ``t`` (exact; used by a schedule only)."""
        rhs = self.rhs
        v1 = self._v1(Y0)
        from solvers.integrators.fixed_series import start_jets
        co, state = start_jets(self.jets, rhs, v1, self._short)
        mats = [rhs._matrices(co)]
        nr = getattr(rhs, "n_readout", 0)
        # a trained readout: the jets' last N_READOUT outputs are the rates (module docstring)
        rates = [co[len(co) - nr:]] if nr else None
        # a power schedule: the jets run at the constant base η (rhs.eta), and each order's
        # coefficients are the Cauchy products with η(α)/η (a), (η(α)/η)² (f); ``raw`` keeps
        # the constant-η ones.  Without a schedule nothing below changes.
        rate = self.rate_series(t, order)
        if rate is not None:
            raw = mats
            mats = [self._scaled(raw, rate, 0)]
        Ys = [Y0]
        Zs = [rhs.C * Y0] if self.levels else [Y0]
        for k in range(order):
            S = Zs[0] * mats[k][0]
            for j in range(1, k + 1):
                S += Zs[j] * mats[k - j][0]
            S += rhs.teacher * mats[k][1]
            if not self.levels:
                S = rhs.D * S
            if rhs.has_e2:
                S += rhs.forcing * (mats[k][2] * rhs.e2)
            if rhs.has_decay:                  # weight decay: linear in the state itself
                if rate is None:
                    S -= Ys[k] * rhs.Dd
                else:                          # -η(α) κ y: coefficient k of s·Y
                    sY = Ys[k] * rate[0][0]
                    for i in range(1, k + 1):
                        sY += Ys[k - i] * rate[0][i]
                    S -= sY * rhs.Dd
            if nr:
                rhs.set_readout_row(S, rates[k], Ys[k])
            Y = S / (k + 1)
            Ys.append(Y)
            if k + 1 < order:
                Zs.append(rhs.C * Y if self.levels else Y)
                v1k = self._v1(Y)
                co = self._short(self.extend, state, [+x for x in v1k], k + 1)
                new = rhs._matrices(co)
                if nr:
                    rates.append(co[len(co) - nr:])
                if rate is None:
                    mats.append(new)
                else:
                    raw.append(new)
                    mats.append(self._scaled(raw, rate, k + 1))
        return Ys


def _horner(Ys, tau):
    P = Ys[-1]
    for Yk in reversed(Ys[:-1]):
        P = P * tau + Yk
    return P


def _mid_mat(Y):
    return Y.mid()


def integrate_taylor(rhs, jets, t_points, Y0, *, tol, jet_dps: int, order: int | None = None,
                     max_steps: int = 10_000_000, progress=None, stats=None, monitor=None,
                     schedule=None):
    """States (arb_mat) at ``t_points`` (exact Fractions, increasing, the first = start).

    schedule: None (constant η) or ``("power", a0, p)`` (exact; ``Problem.schedule``'s form):
    η(α) = η (1 + α/a0)^(-p) with η = ``rhs.eta``, the α of ``t_points``; carried in the series
    (module docstring).

    progress: ``progress(t)`` after every step; monitor: ``monitor(t, Y)`` after every step
    (it may raise to stop the run; EndOfLearning holds Y at every remaining t_point).

    A breakdown (the step size collapsing: the signature of digits lost to cancellation, e.g.
    at too low a dps) raises IntegrationError, which the CLI reports in one line.
    """
    from flint import arb

    from solvers.integrators.rk78 import EndOfLearning, IntegrationError

    p = order or taylor_order(tol)
    series = TaylorSeries(rhs, jets, jet_dps, schedule)
    fixed = None
    # the fixed-point series has the original model's terms only (no noise, no weight decay,
    # constant η, fixed readout)
    if (rhs.basis == "levels" and p >= FIXED_POINT_MIN_ORDER and Y0.nrows() <= FIXED_POINT_MAX_ROWS
            and not rhs.has_noise and not rhs.has_decay and series.schedule is None
            and not getattr(rhs, "trained", False)):
        from solvers.integrators.fixed_series import FixedPointSeries
        fixed = FixedPointSeries(rhs, jets, series._short, series.extend, jet_dps)
    safety = math.exp(-2.0) * math.exp(-0.7 / (p - 1))
    rows, cols = Y0.nrows(), Y0.ncols()
    probe = _probe(cols)
    pts = [Fraction(t) for t in t_points]
    t = pts[0]
    Y = Y0
    out = [Y0]
    i_next = 1
    n_steps = 0
    log_tol = math.log(float(tol))
    sigma = 0          # time unit 2^sigma of the fixed-point series; the step stays <= 2^sigma
    while i_next < len(pts):
        if n_steps >= max_steps:
            raise IntegrationError(f"Taylor integration: more than {max_steps} steps")
        if fixed is not None:
            Ys, units = fixed.coefficients(Y, p, sigma)
            scale, s_unit = _diag_pow2(units), Fraction(2) ** -sigma
            h = _step_size(Ys, probe, p, safety, log_tol, sigma * _LN2)
            # the integers' unit is exact relative to |Y_0| (h/2^sigma)^k only for h <= 2^sigma
            if h > 2.0 ** sigma:
                h, sigma = 2.0 ** sigma, sigma + 1
            elif h > 0:
                sigma = math.ceil(math.log2(h))
        else:
            Ys = series.coefficients(Y, p, t)
            scale = None
            h = _step_size(Ys, probe, p, safety, log_tol, 0.0)
        t_end = pts[-1]
        h_frac = Fraction(h).limit_denominator(1 << 40) if h < float(t_end - t) else t_end - t
        if h_frac <= 0:
            raise IntegrationError(f"Taylor integration: step size underflow at t = {float(t)}")
        t_new = t + h_frac

        def at(tau):
            if scale is None:
                return _mid_mat(_horner(Ys, arb(tau.numerator) / tau.denominator))
            x = tau * s_unit
            return _mid_mat(scale * _horner(Ys, arb(x.numerator) / x.denominator))
        while i_next < len(pts) and pts[i_next] <= t_new:
            out.append(at(pts[i_next] - t))
            i_next += 1
        Y = at(h_frac)
        t = t_new
        n_steps += 1
        if monitor is not None:
            try:
                monitor(t, Y)
            except EndOfLearning:           # a fixed point to the run's precision: held
                out += [Y] * (len(pts) - len(out))
                if stats is not None:
                    stats["held_from"] = float(t)
                break
        if progress is not None:
            progress(float(t))
    if stats is not None:
        stats.update(n_steps=n_steps, order=p, n_fevals=n_steps * p)
    return out


def rate_series(schedule, t, n: int, ctx, *, squared: bool = True):
    """Taylor coefficients 0 .. n-1 about α = ``t`` of s(α) = η(α)/η = (1 + α/a0)^(-p) and
    (``squared``; else None) of s², for ``schedule = ("power", a0, p)``, as numbers of ``ctx``
    at its current precision.

    s(t + τ) = (1 + t/a0)^(-p) (1 + τ/(a0 + t))^(-p): the value at ``t`` times the binomial
    series of a power of a linear function, whose coefficients are exact
    (:func:`solvers.integrators.jet_ops.linear_power`), so each coefficient is rounded once.

    Examples
    --------
    >>> from fractions import Fraction
    >>> from solvers.core.numbers import context
    >>> ctx = context("flint", 30)
    >>> with ctx:
    ...     s, q = rate_series(("power", Fraction(1), Fraction(1)), Fraction(1), 3, ctx)
    >>> [x.mid().str(5, radius=False) for x in s]      # 1/(1 + α) at α = 1: 1/2, -1/4, 1/8
    ['0.50000', '-0.25000', '0.12500']
    """
    from solvers.integrators.jet_ops import linear_power
    _, a0, p = _checked_schedule(schedule)
    t = Fraction(t)
    r = 1 / (a0 + t)
    s0 = ctx.convert(1 + t / a0) ** ctx.convert(-p)
    s = [s0 * ctx.convert(c) for c in linear_power(-p, r, n)]
    q = [s0 * s0 * ctx.convert(c) for c in linear_power(-2 * p, r, n)] if squared else None
    return s, q


def _checked_schedule(schedule):
    """None or ("power", a0, p) with exact a0 > 0, p >= 0 (ValueError otherwise): a "steps"
    schedule is run piece by piece at constant η by the caller, never through here."""
    if schedule is None:
        return None
    if schedule[0] != "power" or len(schedule) != 3:
        raise ValueError(f"the Taylor series carries a power schedule ('power', a0, p) only, "
                         f"got {schedule!r}")
    _, a0, p = schedule
    a0, p = Fraction(a0), Fraction(p)
    if not (a0 > 0 and p >= 0):
        raise ValueError(f"power schedule a0 = {a0} must be > 0 and p = {p} >= 0")
    return ("power", a0, p)


def _probe(cols):
    """n x 2 matrix of fixed pseudo-random weights in [1/2, 1] with random signs (exact)."""
    from flint import arb_mat
    import random
    rng = random.Random(12345)
    return arb_mat(cols, 2, [rng.choice((-1, 1)) * (rng.randrange(2**20, 2**21) / 2**21)
                             for _ in range(2 * cols)])


def _step_size(Ys, probe, p, safety, log_tol, ln_s):
    """h = ρ/e² · exp(-0.7/(p-1)), ρ the smallest per-row radius from orders p-1 and p.
    ``ln_s``: ln of the time unit of scaled coefficients (Y_k = s^k Ỹ_k per row; 0 if unscaled)."""
    base = _row_log_norms(Ys[0], probe)
    rho = math.inf
    for k in (p - 1, p):
        lk = _row_log_norms(Ys[k], probe)
        for b, l in zip(base, lk):
            if l == -math.inf or b == -math.inf:
                continue
            rho = min(rho, math.exp((b - l) / k + ln_s))
    if rho == math.inf:          # a polynomial solution (all high coefficients vanish)
        rho = 1.0 / math.exp(log_tol / p)
    return rho * safety


def _diag_pow2(units):
    """diag(2^u_r) as an arb_mat (exact)."""
    from flint import arb, arb_mat
    D = arb_mat(len(units), len(units))
    two = arb(2)
    for r, u in enumerate(units):
        D[r, r] = two ** u
    return D
