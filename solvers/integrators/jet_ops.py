"""Coefficient-k recurrences shared by every printed Taylor jet module.

``derive/codegen/jet_printer.py`` prints one ``solvers/generated/*_taylor.py`` module per
system; each of them needs the same handful of Cauchy-product recurrences.  They used to be printed into every
module from a template; they live here once instead, and the printed modules import them under
their old private names (``from solvers.integrators.jet_ops import mul as _mul, ...``) so the
printed bodies are unchanged.

Interface of a printed jet module (``scaling-odes regenerate`` writes one per system):
``jets_start(v1, t1, eta, ctx)`` -> (state, order-0 outputs); ``jets_extend(state, v1k, k)``
appends coefficient k (>= 1) of every node (v1k: coefficient k of the level-1 state) and returns
coefficient k of the outputs: the nonzero a entries (A_INDEX order of the system's module,
``derive.codegen.module_printer.module_name``), the f entries (F_INDEX order), then the label-noise
coefficients (FN_INDEX order), N_OUTPUTS in all;
``jets_extend_a`` does the same for the a outputs only (f returned as 0), for order-1 runs.
A trained readout's module (``TRAINED, N_READOUT = True, K``) takes v1 = (level-1 state,
v_1..v_K) and v1k likewise, and appends the K readout rates <g_s(x_i) Δ> to the outputs
(``jets_extend_a`` returns them too).

All functions here take lists of Taylor coefficients (any number type supporting ``+ * /``) and return
coefficient ``k`` of the result, given coefficients ``0 .. k-1`` of the result where needed;
``linear_power`` (the learning-rate schedule's series, used by solvers/integrators/taylor.py,
not by the printed modules) returns a whole list of exact coefficients instead.
"""

from fractions import Fraction
from operator import mul as _m

__all__ = ["mul", "sqr", "inv", "pow", "asin", "orthant", "linear_power"]


def mul(u, v, k):
    """Coefficient k of u*v."""
    return sum(map(_m, u[:k + 1], v[k::-1]))


def sqr(u, k):
    """Coefficient k of u**2."""
    # half the products of mul(u, u, k): the convolution is symmetric
    h = (k + 1)//2
    s = 2*sum(map(_m, u[:h], u[k:k - h:-1]))
    # u*u, not u**2: python-flint's arb ** 2 is NaN for a ball that contains 0
    return s + u[k//2]*u[k//2] if k % 2 == 0 else s


def inv(u, w, k):
    """Coefficient k of w = 1/u (w holds coefficients 0..k-1)."""
    return -sum(map(_m, u[1:k + 1], w[k - 1::-1]))/u[0]


def pow(u, w, k, p, q):  # noqa: A001 - public name mirrors the node kind "pow"
    """Coefficient k of w = u**(p/q) (w holds coefficients 0..k-1)."""
    # q*k*u0*w_k = sum_j (p*j - q*(k - j)) u_j w_(k-j), exponent p/q
    weights = [(p + q)*j - q*k for j in range(1, k + 1)]
    return sum(map(_m, weights, map(_m, u[1:k + 1], w[k - 1::-1])))/(q*k*u[0])


def asin(u, w, s, k):
    """Coefficient k of w = asin(u), given s = sqrt(1 - u**2) (w holds 0..k-1)."""
    return (k*u[k] - sum(map(_m, range(1, k), map(_m, w[1:k], s[k - 1:0:-1]))))/(k*s[0])


def orthant(pairs, k):
    """Coefficient k (>= 1) of w = P4(r) from w' = Σ_ab g_ab r_ab' (the four-field orthant
    probability; g_ab = dP4/dr_ab): ``pairs`` holds (jet of r_ab, jet of g_ab or a constant)."""
    total = 0
    for u, g in pairs:
        if isinstance(g, list):
            total = total + sum(map(_m, range(1, k + 1), map(_m, u[1:k + 1], g[k - 1::-1])))
        else:
            total = total + k*u[k]*g
    return total/k


def linear_power(e, r, n):
    """Coefficients 0 .. n-1 of (1 + r τ)^e, exact: C(e, k) r^k (binomial series).

    ``e``, ``r``: exact rationals (Fraction or int).  The same numbers as the ``pow`` recurrence
    k u_0 w_k = Σ_j (e j - (k - j)) u_j w_(k-j) for the linear u = 1 + r τ (only j = 1 is
    nonzero): w_k = w_(k-1) (e - k + 1) r / k.  The power learning-rate schedule
    η(α0 + τ) = η (1 + α0/a0)^(-p) (1 + τ/(a0 + α0))^(-p) is this with e = -p, r = 1/(a0 + α0).

    Examples
    --------
    >>> [str(c) for c in linear_power(-1, 2, 4)]
    ['1', '-2', '4', '-8']
    """
    e, r = Fraction(e), Fraction(r)
    out = [Fraction(1)]
    for k in range(1, n):
        out.append(out[-1] * (e - k + 1) * r / k)
    return out
