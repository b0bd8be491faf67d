"""Linear activation, K = M = 1: exact learning curves at any learning rate and their asymptotics.

ε_g(α) = ((1+σ_J²)/2) [exp(ηα A4) T]_level1 (derive/linear.py), computed three ways:

* ``route="modes"``: in the eigen-components the matrix is -2Λ + e p∘λ λᵀ (diagonal plus rank
  one, symmetric after scaling by √p).  Its eigenvalues μ_i = -2λ_i + δ_i interlace -2λ_k; the
  offsets δ_i solve the secular equation 1 = e Σ_k p_k λ_k² /(δ_i + 2(λ_k - λ_i)) and are found
  without cancellation (bisection in float64, Newton at any precision).  The amplitudes follow in
  closed form (eigenvector entries p_k^½ λ_k/(μ_i + 2λ_k)):
      ω_i = [Σ_k p_k λ_k/(μ_i+2λ_k)] / (e Σ_k p_k λ_k²/(μ_i+2λ_k)²),  D^(1)(α) = Σ_i ω_i e^{ημ_iα}.
  Well conditioned: float64 is good to ~13 digits, arbitrary precision needs only guard digits.
* ``route="companion"``: the paper's Eqs. (54)-(57): roots of the shifted characteristic
  polynomial det(μ - A4), the triangular similarity S and Lagrange rows instead of a Vandermonde
  inverse.  Needs ≈ 2.05 L log10 L extra digits (docs/guide/precision.md).
* ``route="levels"``: the matrix exponential of the level system itself (balanced by
  diag(λ_1^l); flint's rigorous Taylor for the scaled-down matrix, then repeated squaring of
  row/column-scaled integer matrices).  Each squaring rounds products of size ‖exp(tÂ)‖², which
  in the level basis reaches 10^200 at L = 64, so it needs the most digits (≈ 3.4 L log10 L);
  it shares nothing with the other two routes but the spectrum.

Every arbitrary-precision route is run at two precisions and must agree to the requested digits
(``PrecisionLost`` otherwise, after raising the precision a few times).

Also here: the η → 0 form (Eq. 8), the Euler-Maclaurin / incomplete-gamma forms (Eqs. 50, 52,
53) with error bounds, the power-law window and the local exponent.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import mpmath
import numpy as np

from derive import linear as dl
from derive.spectra import Spectrum

from solvers.hierarchy.precision import PrecisionLost  # noqa: F401
from solvers.hierarchy.runner import settle

ROUTES = ("modes", "companion", "levels")


# ---- inputs at a precision ------------------------------------------------------------------

def _exact_number(x):
    if isinstance(x, Fraction):
        return mpmath.mpf(x.numerator) / x.denominator
    if hasattr(x, "p") and hasattr(x, "q"):
        return mpmath.mpf(int(x.p)) / int(x.q)
    if hasattr(x, "evalf"):
        return mpmath.mpf(x.evalf(mpmath.mp.dps + 10))
    return mpmath.mpf(x)


def _spectrum_mp(spectrum: Spectrum):
    """λ_k, p_k as mpf at the current precision (sympy numbers evaluated with guard digits)."""
    lam = [_exact_number(v) for v in spectrum.eigenvalues]
    w = [_exact_number(v) for v in spectrum.weights]
    return lam, w


def _charpoly_from(lam):
    """c_0..c_{L-1} from the eigenvalues: products of positive numbers with alternating signs,
    accurate to the working precision coefficient by coefficient."""
    c = [mpmath.mpf(1)]
    for x in lam:
        c = [(c[j - 1] if j > 0 else 0) - x * (c[j] if j < len(c) else 0) for j in range(len(c) + 1)]
    return c[:len(lam)]


def _e2(eta, order):
    return eta if order == 2 else 0 * eta


# ---- route (iii): modes, secular equation --------------------------------------------------

def _secular_float64(lam, w, e):
    """Offsets δ_i (μ_i = -2λ_i + δ_i) by bisection in float64; λ descending."""
    lam = np.asarray(lam, float)
    w = np.asarray(w, float)
    L = len(lam)
    if e == 0:
        return np.zeros(L)
    g2 = w * lam ** 2
    diff = 2 * (lam[None, :] - lam[:, None])            # 2(λ_k - λ_i), row i
    lo = np.zeros(L)
    hi = np.empty(L)
    hi[:-1] = 2 * (lam[:-1] - lam[1:])
    hi[-1] = e * g2.sum() * (1 + 1e-12) + 1e-300
    for _ in range(110):
        mid = 0.5 * (lo + hi)
        with np.errstate(divide="ignore", invalid="ignore"):
            f = 1 - e * (g2[None, :] / (mid[:, None] + diff)).sum(axis=1)
        neg = f < 0
        lo = np.where(neg, mid, lo)
        hi = np.where(neg, hi, mid)
    return 0.5 * (lo + hi)


def _safeguarded(new, x, lo, hi, tol):
    """A Newton iterate kept inside the bracket (bisection otherwise), and whether it has
    converged relative to the previous iterate x: the step both mpmath polishers share."""
    if not (lo < new < hi):
        new = (lo + hi) / 2
    return new, abs(new - x) <= tol * abs(x)


def _polish_secular(lam, w, e, delta0, i):
    """Newton at the current mpmath precision for the i-th offset, bracket-safeguarded."""
    L = len(lam)
    lo = mpmath.mpf(0)
    hi = 2 * (lam[i] - lam[i + 1]) if i + 1 < L else e * sum(p * x * x for p, x in zip(w, lam)) * 2
    d = mpmath.mpf(delta0) if 0 < delta0 else hi / 2
    diff = [2 * (lam[k] - lam[i]) for k in range(L)]
    g2 = [w[k] * lam[k] ** 2 for k in range(L)]
    tol = mpmath.mpf(2) ** (-mpmath.mp.prec + 8)
    for _ in range(200):
        s0 = s1 = mpmath.mpf(0)
        for k in range(L):
            t = g2[k] / (d + diff[k])
            s0 += t
            s1 += t / (d + diff[k])
        f = 1 - e * s0
        if f < 0:
            lo = d
        else:
            hi = d
        new, done = _safeguarded(d - f / (e * s1), d, lo, hi, tol)
        if done:
            return new
        d = new
    return d


@dataclass
class Modes:
    """Eigenvalues μ_i of the (scaled) modes matrix and amplitudes: D^(1)(α) = Σ ω_i e^{ημ_iα}."""
    mu: list
    omega: list
    eta: object
    prefactor: object          # (1+σ_J²)/2
    dps: int | None
    info: dict = field(default_factory=dict)

    def eps_g(self, alpha):
        if self.dps is None:
            mu, om = np.asarray(self.mu, float), np.asarray(self.omega, float)
            return float(self.prefactor) * float(np.sum(om * np.exp(float(self.eta) * mu * float(alpha))))
        with mpmath.workdps(self.dps):
            a = _exact_number(alpha if isinstance(alpha, (Fraction, mpmath.mpf))
                              else Fraction(alpha))
            return self.prefactor * mpmath.fsum(o * mpmath.exp(self.eta * m * a)
                                                for m, o in zip(self.mu, self.omega))


def modes_solution(spectrum: Spectrum, eta, *, order=2, sigma_J=0, dps=None) -> Modes:
    """Route (iii).  ``dps=None``: float64 (numpy); otherwise mpmath at ``dps`` digits."""
    eta_f = Fraction(eta)
    if dps is None:
        lam = np.array([float(v) for v in spectrum.eigenvalues])
        w = np.array([float(v) for v in spectrum.weights])
        e = float(eta_f) if order == 2 else 0.0
        delta = _secular_float64(lam, w, e)
        mu = delta - 2 * lam
        if e == 0:
            omega = w * lam
        else:
            den = delta[:, None] + 2 * (lam[None, :] - lam[:, None])
            omega = (w * lam / den).sum(1) / (e * (w * lam ** 2 / den ** 2).sum(1))
        pre = (1 + float(Fraction(sigma_J)) ** 2) / 2
        return Modes(list(mu), list(omega), float(eta_f), pre, None)
    with mpmath.workdps(dps + 10):
        lam, w = _spectrum_mp(spectrum)
        eta_m = _exact_number(eta_f)
        e = _e2(eta_m, order)
        L = len(lam)
        delta0 = _secular_float64([float(x) for x in lam], [float(x) for x in w], float(e))
        mu, omega = [], []
        for i in range(L):
            if e == 0:
                mu.append(-2 * lam[i])
                omega.append(w[i] * lam[i])
                continue
            d = _polish_secular(lam, w, e, delta0[i], i)
            m = d - 2 * lam[i]
            den = [d + 2 * (lam[k] - lam[i]) for k in range(L)]
            num = mpmath.fsum(w[k] * lam[k] / den[k] for k in range(L))
            nrm = mpmath.fsum(w[k] * lam[k] ** 2 / den[k] ** 2 for k in range(L))
            mu.append(m)
            omega.append(num / (e * nrm))
        s = _exact_number(Fraction(sigma_J))
        return Modes(mu, omega, eta_m, (1 + s * s) / 2, dps + 10)


# ---- route (ii): companion / Eq. (57) ---------------------------------------------------------

def _horner(q, x):
    p = dp = mpmath.mpf(0)
    for coef in reversed(q):
        dp = dp * x + p
        p = p * x + coef
    return p, dp


def _polish_root(q, x0, lo, hi):
    x = mpmath.mpf(x0)
    if not (lo < x < hi):
        x = (lo + hi) / 2
    sign_lo = mpmath.sign(_horner(q, lo)[0])
    tol = mpmath.mpf(2) ** (-mpmath.mp.prec + 8)
    for _ in range(300):
        p, dp = _horner(q, x)
        if p == 0:
            return x
        if mpmath.sign(p) == sign_lo:
            lo = x
        else:
            hi = x
        new, done = _safeguarded(x - p / dp if dp != 0 else (lo + hi) / 2, x, lo, hi, tol)
        if done:
            return new
        x = new
    return x


def companion_solution(spectrum: Spectrum, eta, *, order=2, sigma_J=0, dps: int) -> Modes:
    """Route (ii): eigenvalues as roots of det(μ - A4) (Eqs. 54-55, monic), amplitudes from
    S and Lagrange rows (Eq. 57), all at ``dps`` digits.  Float64 start values for the roots
    come from route (iii); each root is then pinned down by Newton/bisection on q(μ) inside
    its interlacing bracket (-2λ_i, -2λ_{i+1}), so the result depends on q only."""
    eta_f = Fraction(eta)
    guess = modes_solution(spectrum, eta_f, order=order, sigma_J=sigma_J, dps=None)
    with mpmath.workdps(dps):
        lam, w = _spectrum_mp(spectrum)
        L = len(lam)
        eta_m = _exact_number(eta_f)
        e = _e2(eta_m, order)
        c = _charpoly_from(lam)
        nu = [mpmath.fsum(p * x ** l for p, x in zip(w, lam)) for l in range(L + 1)]
        a = mpmath.mpf(2)
        gam = dl.shifted_charpoly(c, nu[1:], a, e)
        q = dl.mu_charpoly(gam)
        roots = []
        for i in range(L):
            lo = -2 * lam[i]
            hi = -2 * lam[i + 1] if i + 1 < L else (e * mpmath.fsum(p * x * x for p, x in zip(w, lam))
                                                    - 2 * lam[i])
            if e == 0:
                roots.append(lo)
                continue
            roots.append(_polish_root(q, guess.mu[i], lo, hi))
        if e == 0:
            # b_k = p_k, v_1 = λ_k: A4 = 2A1 has the plain Vandermonde eigenvectors.
            omega = [p * x for p, x in zip(w, lam)]
            b = list(w)
        else:
            S = dl.similarity_S(nu[1:], a, e, L)
            b, omega = dl.error_amplitudes(q, roots, S, nu[:L], nu[1:], a, e)
        s = _exact_number(Fraction(sigma_J))
        return Modes(roots, omega, eta_m, (1 + s * s) / 2, dps, {"b": b})


# ---- route (i): matrix exponential of the level system ------------------------------------

# The scaled matrix exp(hÂ/2^q) gets norm ≤ 2^-_EXP_NORM_BITS before flint's rigorous exponential:
# arb_mat.exp is much cheaper for a small norm (fewer Taylor terms, and the powers of a sparse
# matrix of tiny norm multiply cheaply in arb's block algorithm), while each extra squaring costs
# one dense product.  Measured at L = 128, 967 digits: norm 1/10 → 58 s, 1e-4 → 18 s (+10 squarings
# at ~2 s each), 1e-13 → 6 s (+40 squarings).
_EXP_NORM_BITS = 10


class _ScaledMat:
    """A dense matrix held exactly as integers with a power-of-two scale per row and per column:
    value_ij = M[i][j] · 2^(r_i + c_j), |M_ij| < 2^bits.

    Why: the level exponential exp(tÂ) has entries spanning hundreds of binary orders of
    magnitude (at L = 64, β = 1.5, ηα = 1024: rows ~2^657 throughout, columns from 2^0 to 2^643);
    a diagonal scaling on each side makes the integer matrix dense in magnitude, and flint's
    multimodular ``fmpz_mat`` product is then ~3x faster than ``arb_mat`` on the same midpoints.
    """

    __slots__ = ("M", "r", "c")

    def __init__(self, M, r, c):
        self.M, self.r, self.c = M, r, c


def _round_shift(m: int, k: int) -> int:
    """round(m · 2^k) for an integer m."""
    if k >= 0:
        return m << k
    return (m + (1 << (-k - 1))) >> (-k)


def _scaled_normalise(P, r, c, bits):
    """Exact integer rows P with value 2^(r_i + c_j) P_ij → _ScaledMat with |M_ij| < 2^bits.
    Row shifts a_i bring each row's largest entry to ``bits`` bits; the column shifts b_j ≤ 0 then
    keep the low bits of columns whose entries are all small, so every entry is rounded to an
    absolute 2^(r_i + c_j) no coarser than its row and column demand."""
    bl = [[x.bit_length() for x in row] for row in P]
    a = [max(row) - bits for row in bl]
    n = len(P[0])
    b = [max(bl[i][j] - a[i] for i in range(len(P))) - bits for j in range(n)]
    from flint import fmpz_mat
    rows = [[_round_shift(int(x), -(ai + bj)) for x, bj in zip(row, b)] for row, ai in zip(P, a)]
    return _ScaledMat(fmpz_mat(rows), [ri + ai for ri, ai in zip(r, a)],
                      [cj + bj for cj, bj in zip(c, b)])


def _scaled_from_arb(E, bits):
    """arb_mat (midpoints) → _ScaledMat, each entry rounded to ``bits`` bits of its row's scale."""
    P, e = [], []
    for i in range(E.nrows()):
        me = [E[i, j].mid().man_exp() for j in range(E.ncols())]
        lo = min(int(x[1]) for x in me)
        P.append([int(m) << (int(x) - lo) for m, x in me])
        e.append(lo)
    return _scaled_normalise(P, e, [0] * E.ncols(), bits)


def _scaled_square(F: _ScaledMat, bits) -> _ScaledMat:
    """F·F.  With g_k = r_k + c_k the inner scale, F·F = 2^(r_i+c_j) Σ_k M_ik 2^g_k M_kj; the rows of
    the right factor are shifted to the largest g (truncating rows whose scale is smaller), so
    one integer product gives the result.  Rounding error of entry (i, j) ≤ L·2^(r_i+c_j+g_max)·
    2^bits, i.e. 2^-bits·L relative to the largest possible term of the sum: the error of a
    floating-point product with the same diagonal scaling."""
    from flint import fmpz_mat
    g = [ri + ci for ri, ci in zip(F.r, F.c)]
    gmax = max(g)
    right = fmpz_mat([[_round_shift(int(x), gk - gmax) for x in row]
                      for row, gk in zip(F.M.tolist(), g)])
    P = (F.M * right).tolist()
    return _scaled_normalise(P, [ri + gmax for ri in F.r], F.c, bits)


def _scaled_apply(F: _ScaledMat, v, e):
    """Exact F·v for v = (integers, common exponent e): returns (integers, common exponent)."""
    cmin = min(F.c)
    vv = [x << (cj - cmin) for x, cj in zip(v, F.c)]
    rmin = min(F.r)
    out = []
    for row, ri in zip(F.M.tolist(), F.r):
        out.append(sum(int(m) * x for m, x in zip(row, vv) if m != 0) << (ri - rmin))
    return out, e + cmin + rmin


def levels_eps(spectrum: Spectrum, eta, alphas, *, order=2, sigma_J=0, dps: int):
    """Route (i): ε_g(α) = ((1+σ_J²)/2)[exp(ηαA4) T]_1 at ``dps`` digits.

    A4 is balanced by diag(s^l), s = λ_1; exp(hÂ/2^q) (norm ≤ 2^-10) comes from flint's rigorous
    Taylor (arb_mat.exp), then q squarings carried as scaled integer matrices (_ScaledMat) at the
    working precision.  Increasing α that are power-of-two multiples of the previous one continue
    the chain of squarings; for the last α the last squaring is replaced by two exact
    matrix-vector products (E(E y)).  The row-1 products with T are exact.
    """
    from flint import arb, arb_mat
    from solvers.core.numbers import FlintContext
    eta_f = Fraction(eta)
    alphas = list(alphas)
    out = []
    with FlintContext(dps):
        bits = FlintContext.bits()
        conv = FlintContext.convert
        lam = [conv(v) for v in spectrum.eigenvalues]
        w = [conv(v) for v in spectrum.weights]
        L = len(lam)
        c = [arb(1)]
        for x in lam:
            c = [(c[j - 1] if j > 0 else 0) - x * (c[j] if j < len(c) else 0) for j in range(len(c) + 1)]
        c = c[:L]
        nu = [sum((p * x ** l for p, x in zip(w, lam)), arb(0)) for l in range(L + 1)]
        eta_a = arb(eta_f.numerator) / eta_f.denominator
        e = eta_a if order == 2 else arb(0)
        s = lam[0]
        A = arb_mat(L, L)
        B = dl.b_matrix(c, nu[1:], 2, e)
        spow = [s ** l for l in range(L)]
        for i in range(L):
            for j in range(L):
                if B[i][j] != 0:
                    A[i, j] = B[i][j] * spow[j] / spow[i]
        A = A.mid()
        # y = balanced T^(l) as exact integers with one common exponent
        ye = [(nu[l] / spow[l]).mid().man_exp() for l in range(L)]
        y_exp = min(int(x[1]) for x in ye)
        y = [int(m) << (int(x) - y_exp) for m, x in ye]
        norm = max(sum(abs(float(A[i, j].mid())) for j in range(L)) for i in range(L))
        sig = Fraction(sigma_J)
        pre = (1 + arb(sig.numerator) ** 2 / sig.denominator ** 2) / 2

        def level1(F, v, ve):
            """s · [F v]_1 as arb (exact integer arithmetic, rounded once)."""
            row = F.M.tolist()[1]
            cmin = min(F.c)
            tot = sum(int(m) * (x << (cj - cmin)) for m, x, cj in zip(row, v, F.c) if m != 0)
            return arb(tot) * arb(2) ** (ve + F.r[1] + cmin) * s

        E, prev = None, None
        for n, alpha in enumerate(alphas):
            fa = Fraction(alpha)
            if fa == 0:
                out.append(_to_mpf((pre * nu[1]).mid()))
                continue
            ratio = fa / prev if prev else None
            m = None
            if ratio is not None and ratio.denominator == 1 and ratio.numerator & (ratio.numerator - 1) == 0:
                m = ratio.numerator.bit_length() - 1
            last = n == len(alphas) - 1
            if E is None or m is None:
                h = eta_a * arb(fa.numerator) / fa.denominator
                q = max(0, math.ceil(math.log2(max(float(h.mid()) * norm, 2.0 ** -60))
                                     + _EXP_NORM_BITS))
                E = _scaled_from_arb((A * (h / 2 ** q)).exp(), bits)
                m = q
            prev = fa
            if last and m > 0:
                # exp(tÂ) y = E (E y) with E = exp(tÂ/2): saves the last dense product
                for _ in range(m - 1):
                    E = _scaled_square(E, bits)
                v, ve = _scaled_apply(E, y, y_exp)
                D1 = level1(E, v, ve)
            else:
                for _ in range(m):
                    E = _scaled_square(E, bits)
                D1 = level1(E, y, y_exp)
            out.append(_to_mpf((pre * D1).mid()))
    return out


def _to_mpf(x):
    man, exp = x.man_exp()
    return mpmath.mp.make_mpf(mpmath.libmp.from_man_exp(int(man), int(exp)))


# ---- precision policy ---------------------------------------------------------------------

def route_dps(route: str, L: int, digits: int) -> int:
    """Starting precision: modes need guard digits only; the companion route the measured
    2.05 L log10 L (docs/guide/precision.md); the level exponential 3.4 L log10 L.

    Level route, measured (digits lost at ηα ≤ 1024 against the modes route, power law,
    η ∈ {0.1, 0.5, 1}): the loss grows with β and η and is largest at β = 1.5, η = 1, where it is
    3.3 L log10 L at L = 16, 32, 64 and 3.0 L log10 L at L = 128 (β = 0.3: 1.8-2.2).  It is about
    twice log10 ‖exp(ηαÂ)‖ (each squaring rounds products of that size), so it keeps growing
    with α until the slowest mode has decayed; exact_curve's second run catches a shortfall.
    """
    logL = math.log10(max(L, 2))
    if route == "modes":
        return digits + 10
    if route == "companion":
        return digits + 10 + int(math.ceil(2.05 * L * logL))
    return digits + 20 + int(math.ceil(3.4 * L * logL))


def exact_curve(spectrum: Spectrum, eta, alphas, *, order=2, sigma_J=0, route="modes",
                digits=15, dps=None, max_rounds=4):
    """ε_g at ``alphas`` (mpf) by one route, verified by a second run at higher precision.

    Returns (values, meta) with meta = {"route", "dps", "agreement_digits"}.
    """
    if route not in ROUTES:
        raise ValueError(f"route must be one of {', '.join(ROUTES)}, got {route!r}")

    def run(d):
        if route == "levels":
            return levels_eps(spectrum, eta, alphas, order=order, sigma_J=sigma_J, dps=d)
        sol = (modes_solution(spectrum, eta, order=order, sigma_J=sigma_J, dps=d) if route == "modes"
               else companion_solution(spectrum, eta, order=order, sigma_J=sigma_J, dps=d))
        return [sol.eps_g(a) for a in alphas]

    d = int(dps) if dps is not None else route_dps(route, spectrum.L, digits)
    try:
        second, d2, d1, agree = settle(lambda dd, tighter: run(dd), lambda v: v, digits=digits,
                                       dps=d, max_rounds=max_rounds, fixed=dps is not None)
    except PrecisionLost as exc:
        raise PrecisionLost(f"linear {route} route: {exc}") from None
    with mpmath.workdps(digits + 5):
        vals = [+v for v in second]
    return vals, {"route": route, "dps": d2, "checked_against_dps": d1,
                  "agreement_digits": min(agree, 1e9)}


# ---- small η (Eq. 8) and its Euler-Maclaurin forms --------------------------------------------

def small_eta(lam, w, eta, alphas, sigma_J=0.0):
    """Eq. (8): ((1+σ_J²)/2) Σ_k p_k λ_k exp(-2ηλ_kα), float64 (λ, p arrays)."""
    lam, w = np.asarray(lam, float), np.asarray(w, float)
    a = np.asarray(alphas, float)
    return (1 + sigma_J ** 2) / 2 * np.exp(-2 * eta * np.outer(a, lam)) @ (w * lam)


def power_law_lambda_plus(L, beta):
    """λ_+ with mean_l λ_+ l^-(1+β) = 1."""
    k = np.arange(1, L + 1, dtype=float)
    return L / np.sum(k ** (-(1.0 + beta)))


def local_exponent(L, beta, alpha, eta=1.0):
    """-d ln ε_g/d ln α of Eq. (8) for the power law: 2ηα <λ² e>/<λ e> (e = exp(-2ηλα))."""
    k = np.arange(1, L + 1, dtype=float)
    lp = power_law_lambda_plus(L, beta)
    lam = lp * k ** (-(1.0 + beta))
    x = 2 * eta * lam * alpha
    # weights λ e^{-x}: shift the exponent by its minimum to stay in range
    wgt = lam * np.exp(-(x - x.min()))
    return float(np.sum(wgt * x) / np.sum(wgt))


def window(L, beta, eta, lam_plus=None):
    """Power-law window: 1/(2ηλ_+) < α < Γ((2β+1)/(1+β))^((1+β)/β) L^(1+β)/(2ηλ_+)."""
    beta = float(beta)
    if beta <= 0:
        raise ValueError(f"the power-law window needs beta > 0, got {beta}")
    lp = power_law_lambda_plus(L, beta) if lam_plus is None else lam_plus
    lo = 1.0 / (2 * eta * lp)
    s = beta / (1 + beta)
    hi = math.gamma(1 + s) ** (1 / s) * L ** (1 + beta) * lo
    return lo, hi


def window_result(L, beta, eta):
    lo, hi = window(L, beta, eta)
    centre = math.sqrt(lo * hi)
    return {"alpha_lower": lo, "alpha_upper": hi, "alpha_centre": centre,
            "exponent": local_exponent(L, beta, centre, eta),
            "exponent_theory": float(beta) / (1 + float(beta))}


class EulerMaclaurin:
    """Eqs. (50), (52), (53) for λ_k = λ_+ k^-(1+β), p_k = 1/L, and their error bounds.

    With F(x) = ((1+σ²)/(2L)) λ_+ x^-(1+β) exp(-z x^-(1+β)), z = 2ηλ_+α, Eq. (8) is Σ_{k=1}^L F(k)
    and Eq. (50) is ∫_1^L F = C z^-s [Γ(s, z/L^(1+β)) - Γ(s, z)], s = β/(1+β),
    C = (1+σ²)λ_+/(2L(1+β)).
    """

    def __init__(self, L, beta, eta, sigma_J=0.0, dps=30):
        self.L, self.beta, self.eta, self.sigma_J, self.dps = L, float(beta), float(eta), float(sigma_J), dps
        self.lam_plus = power_law_lambda_plus(L, beta)
        self.s = self.beta / (1 + self.beta)
        self.C = (1 + self.sigma_J ** 2) * self.lam_plus / (2 * L * (1 + self.beta))

    def F(self, x, alpha):
        z = 2 * self.eta * self.lam_plus * alpha
        u = x ** (-(1 + self.beta))
        return (1 + self.sigma_J ** 2) / (2 * self.L) * self.lam_plus * u * math.exp(-z * u)

    def exact_sum(self, alpha):
        k = np.arange(1, self.L + 1, dtype=float)
        lam = self.lam_plus * k ** (-(1 + self.beta))
        return float(small_eta(lam, np.full(self.L, 1.0 / self.L), self.eta, [alpha], self.sigma_J)[0])

    def eq50(self, alpha):
        with mpmath.workdps(self.dps):
            z = 2 * self.eta * self.lam_plus * mpmath.mpf(alpha)
            if z == 0:
                return float(self.C * (1 + self.beta) * (1 - mpmath.mpf(self.L) ** -self.beta) / self.beta)
            zl = z / mpmath.mpf(self.L) ** (1 + self.beta)
            return float(self.C * z ** -self.s * mpmath.gammainc(self.s, zl, z))

    def eq52(self, alpha):
        with mpmath.workdps(self.dps):
            z = 2 * self.eta * self.lam_plus * mpmath.mpf(alpha)
            zl = z / mpmath.mpf(self.L) ** (1 + self.beta)
            return float(self.C * z ** -self.s * mpmath.gammainc(self.s, zl))

    def eq53(self, alpha):
        z = 2 * self.eta * self.lam_plus * alpha
        return self.C * z ** -self.s * math.gamma(self.s)

    # -- bounds --------------------------------------------------------------------------
    def bound_sum_integral(self, alpha):
        """|Eq.8 - Eq.50| ≤ max_{[1,L]} F (rigorous: F is unimodal, so the P_1 remainder of
        Euler-Maclaurin is at most half the total variation).  Max at x* = z^(1/(1+β))."""
        z = 2 * self.eta * self.lam_plus * alpha
        xs = min(max(z ** (1 / (1 + self.beta)) if z > 0 else 1.0, 1.0), float(self.L))
        return self.F(xs, alpha)

    def bound_eq49(self, alpha):
        """The paper's Eq. (49): ((1+σ²)λ_+/(2L)) exp(-2ηλ_+α) (= F(1))."""
        return self.F(1.0, alpha)

    def bound_worst_case(self):
        """App. B.2 worst case: ((1+σ²)λ_+/(2L)) [L^-(1+β) + ζ(1+β) - 1/β]."""
        b = self.beta
        return (1 + self.sigma_J ** 2) * self.lam_plus / (2 * self.L) * (
            self.L ** (-(1 + b)) + float(mpmath.zeta(1 + b)) - 1 / b)

    def bound_eq52(self, alpha):
        """|Eq.50 - Eq.52| = C z^-s Γ(s, z) ≤ C e^-z / z (Γ(s,z) ≤ z^(s-1) e^-z for s < 1)."""
        z = 2 * self.eta * self.lam_plus * alpha
        return self.C * math.exp(-z) / z

    def bound_eq53(self, alpha):
        """|Eq.52 - Eq.53| = C z^-s γ(s, z/L^(1+β)) ≤ C L^-β / s (γ(s,x) ≤ x^s/s); relative to
        Eq. (53) this is (z/L^(1+β))^s / Γ(1+s), < 1 exactly inside the window."""
        return self.C * self.L ** (-self.beta) / self.s


# ---- B spectrum and amplitudes (Figs. 10-12) ------------------------------------------------

def b_spectrum(spectrum: Spectrum, eta, *, dps=None):
    """(|μ_k|, L·ω_k, λ_k) for A4 = B(a=2, ε=η): ω_k = b_k μ_k/(η ν_1 - 2) is the amplitude of
    exp(ημ_kα) in D^(1) (→ λ_k/L as η → 0, so L·ω_k is compared with λ_k)."""
    sol = modes_solution(spectrum, eta, dps=dps)
    L = spectrum.L
    mu = np.array([float(m) for m in sol.mu])
    om = np.array([float(o) for o in sol.omega])
    lam = np.array([float(v) for v in spectrum.eigenvalues])
    return np.abs(mu), L * om, lam
