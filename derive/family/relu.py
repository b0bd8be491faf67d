"""Closed forms written out by hand for ReLU and its pairs with linear and erf.

Notation: z ~ N(0, C); relu(x) = max(0, x), relu' = θ (the step), erf-activation g(x) = erf(x/√2).
Two facts do most of the work:

* Stein's lemma, E[z_a F(z)] = Σ_b C_ab E[∂_b F(z)], with ∂θ = δ;
* relu(x) = x/2 + |x|/2 and θ(x) = 1/2 + sign(x)/2: against an odd function of the fields (erf,
  linear) only the linear half of relu (the constant half of θ) survives.

I2 (⟨g1(z1) g2(z2)⟩)

* relu–relu (arc-cosine kernel of order 1):
  C12/4 + [C12 asin(C12/√(C11 C22)) + √(C11 C22 - C12²)] / (2π)
* relu–linear: C12/2
* relu–erf: C12 / (√(2π) √(1 + C22))       (= ½ ⟨z1 erf(z2/√2)⟩)
* erf–linear: √2 C12 / (√π √(1 + C11))

I3 (⟨g1'(z1) z2 g3(z3)⟩; Stein on z2: C12 ⟨g1''(z1) g3(z3)⟩ + C23 ⟨g1'(z1) g3'(z3)⟩)

* relu–relu: C12 ⟨δ(z1) relu(z3)⟩ + C23 ⟨θ(z1) θ(z3)⟩
  = C12 √(C11 C33 - C13²) / (2π C11) + C23 [1/4 + asin(C13/√(C11 C33)) / (2π)]
* relu–linear, linear–relu: C23/2
* relu–erf: C23 / (√(2π) √(1 + C33))     (⟨δ(z1) erf(z3/√2)⟩ = 0 by parity)
* erf–relu: (C23 (1 + C11) - C12 C13) / (√(2π) (1 + C11)^(3/2))
* erf–linear: twice erf–relu;  linear–erf: √2 C23 / (√π √(1 + C33))

I4 (⟨θ(z1) θ(z2) relu(z3) relu(z4)⟩, relu–relu in all slots).  Stein on the z3 of relu(z3) = z3 θ(z3):

    I4 = Σ_{x=1,2,3} C3x ⟨δ(z_x) Π_{y∈{1,2,3}\\x} θ(z_y) relu(z4)⟩ + C34 P4(C)

with P4 the four-field orthant probability (:class:`derive.family.orthant.Orthant4`).  Each
δ term conditions on z_x = 0: with N = C_xx · (conditional covariance of the other three),
N_ij = C_ij C_xx - C_ix C_jx, the term is C3x / (√(2π) C_xx) · J(N), where for three fields
(u, v, c) with covariance N, J(N) = ⟨θ(u) θ(v) relu(c)⟩ = Σ_w N_cw (2π N_ww)^(-1/2) P2(ρ_{pq·w}),
P2(r) = 1/4 + asin(r)/(2π) and ρ_{pq·w} the partial correlation of the two slots other than w.
"""
from __future__ import annotations

import sympy as sp

from .orthant import PAIRS, Orthant4

SQRT2PI = sp.sqrt(2) * sp.sqrt(sp.pi)


def _p2(r):
    return sp.Rational(1, 4) + sp.asin(r) / (2 * sp.pi)


def _partial(N, p, q, w):
    """Correlation of p, q given slot w, from the (unnormalised) covariance N."""
    return ((N[p, q] * N[w, w] - N[p, w] * N[q, w])
            / (sp.sqrt(N[p, p] * N[w, w] - N[p, w] ** 2) * sp.sqrt(N[q, q] * N[w, w] - N[q, w] ** 2)))


def _theta_theta_relu(N, u, v, c):
    """⟨θ(z_u) θ(z_v) relu(z_c)⟩ for z ~ N(0, N)."""
    out = sp.Integer(0)
    for w in (u, v, c):
        p, q = [s for s in (u, v, c) if s != w]
        out += N[c, w] / (SQRT2PI * sp.sqrt(N[w, w])) * _p2(_partial(N, p, q, w))
    return out


def _corr(C, a, b):
    return C[a, b] / (sp.sqrt(C[a, a]) * sp.sqrt(C[b, b]))


def I2_relu_relu(C):
    c11, c12, c22 = C[0, 0], C[0, 1], C[1, 1]
    return c12 / 4 + (c12 * sp.asin(_corr(C, 0, 1)) + sp.sqrt(c11 * c22 - c12**2)) / (2 * sp.pi)


def I3_relu_relu(C):
    c11, c12, c13, c23, c33 = C[0, 0], C[0, 1], C[0, 2], C[1, 2], C[2, 2]
    return c12 * sp.sqrt(c11 * c33 - c13**2) / (2 * sp.pi * c11) + c23 * _p2(_corr(C, 0, 2))


def I4_relu_relu(C):
    out = C[2, 3] * Orthant4(*[_corr(C, a, b) for a, b in PAIRS])
    for x in (0, 1, 2):
        if C[2, x] == 0:
            continue
        rest = [y for y in (0, 1, 2, 3) if y != x]          # two θ slots then slot 4 (relu)
        N = sp.Matrix(3, 3, lambda i, j: sp.expand(C[rest[i], rest[j]] * C[x, x]
                                                   - C[rest[i], x] * C[rest[j], x]))
        out += C[2, x] / (SQRT2PI * C[x, x]) * _theta_theta_relu(N, 0, 1, 2)
    return out


def _erf_linear_I3(C):
    c11, c12, c13, c23 = C[0, 0], C[0, 1], C[0, 2], C[1, 2]
    return (c23 * (1 + c11) - c12 * c13) / (SQRT2PI * (1 + c11) ** sp.Rational(3, 2))


# (slot-1 activation, other activation) -> closed form; the generic engine covers the rest
I2_FORMS = {
    ("relu", "relu"): I2_relu_relu,
    ("relu", "linear"): lambda C: C[0, 1] / 2,
    ("linear", "relu"): lambda C: C[0, 1] / 2,
    ("relu", "erf"): lambda C: C[0, 1] / (SQRT2PI * sp.sqrt(1 + C[1, 1])),
    ("erf", "relu"): lambda C: C[0, 1] / (SQRT2PI * sp.sqrt(1 + C[0, 0])),
    ("erf", "linear"): lambda C: sp.sqrt(2) * C[0, 1] / (sp.sqrt(sp.pi) * sp.sqrt(1 + C[0, 0])),
    ("linear", "erf"): lambda C: sp.sqrt(2) * C[0, 1] / (sp.sqrt(sp.pi) * sp.sqrt(1 + C[1, 1])),
}
I3_FORMS = {
    ("relu", "relu"): I3_relu_relu,
    ("relu", "linear"): lambda C: C[1, 2] / 2,
    ("linear", "relu"): lambda C: C[1, 2] / 2,
    ("relu", "erf"): lambda C: C[1, 2] / (SQRT2PI * sp.sqrt(1 + C[2, 2])),
    ("erf", "relu"): _erf_linear_I3,
    ("erf", "linear"): lambda C: 2 * _erf_linear_I3(C),
    ("linear", "erf"): lambda C: sp.sqrt(2) * C[1, 2] / (sp.sqrt(sp.pi) * sp.sqrt(1 + C[2, 2])),
}
I4_FORMS = {("relu", "relu", "relu", "relu"): I4_relu_relu}
