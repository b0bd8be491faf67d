"""Closed systems for a given spectrum: the level basis (Cayley–Hamilton) and the modes basis.

These are explicit SymPy equations, one per state variable, meant for display (LaTeX in the
notebooks) and as an independent check of the printed solver modules at small L.  Numerics
never go through them: the generated modules evaluate the same split (a, f) level by level.

Level basis: state symbols ``R{l}_i_n``, ``Q{l}_i_j`` for l = 0..L-1; teacher parameters
``T{l}_n_m`` for l = 1..L.  X^(L) = -Σ_j c_j X^(j) replaces the missing top level.
Modes basis: state ``R[k]_i_n``... written ``Rm{k}_i_n``, teacher ``Tm{k}_n_m``; the level-1
fields are Σ_k λ_k X_k, and the next level of mode k is λ_k X_k.
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from .hierarchy import Hierarchy, SystemKey
from .spectra import Spectrum


@dataclass
class ClosedSystem:
    """Plain ordered objects crossing into numerics: states, equations, parameters."""

    states: list          # state symbols, in solver order (level/mode-major)
    rhs: list             # d state / d alpha, same order
    parameters: list      # symbols that remain free (eta, and T's or λ's when symbolic)
    eps_g: sp.Expr        # generalisation error in terms of the states and parameters

    def equations(self) -> list:
        alpha = sp.Symbol("alpha")
        return [sp.Eq(sp.Derivative(sp.Function(str(s))(alpha), alpha), r)
                for s, r in zip(self.states, self.rhs)]

    def latex(self) -> str:
        return "\\begin{aligned}" + "\\\\ ".join(
            f"\\frac{{d {sp.latex(s)}}}{{d\\alpha}} &= {sp.latex(r)}"
            for s, r in zip(self.states, self.rhs)) + "\\end{aligned}"


def _level_block(h: Hierarchy, tag: str):
    """Symbols of one level/mode, matching the order of h.v1.state / h.v1.teacher."""
    def rename(sym):
        return sp.Symbol(f"{sym.name[0]}{tag}{sym.name[1:]}", real=True)
    return [rename(s) for s in h.v1.state], [rename(s) for s in h.v1.teacher]


def level_system(key: SystemKey, spectrum: Spectrum, order: int = 2) -> ClosedSystem:
    h = Hierarchy(key)
    L = spectrum.L
    c = spectrum.charpoly
    states = [_level_block(h, str(l))[0] for l in range(L)]
    teachers = [_level_block(h, str(l))[1] for l in range(1, L + 1)]
    top = [-sp.Add(*[c[j] * states[j][s] for j in range(L)]) for s in range(h.n_state)]
    levels = states + [top]                      # X^(0) .. X^(L)
    v1 = dict(zip(h.v1.state, levels[1])) | dict(zip(h.v1.teacher, teacher_level(teachers, 1)))
    e2 = h.eta**2 if order == 2 else 0
    rhs = []
    for l in range(L):
        sub = dict(v1)
        sub.update(zip(h.nxt.state, levels[l + 1]))
        sub.update(zip(h.nxt.teacher, teacher_level(teachers, l + 1)))
        sub[h.nu] = spectrum.nu(l + 1)
        sub[h.e2] = e2
        rhs += [sp.sympify(r).xreplace(sub) for r in h.rhs]
    flat_states = [s for block in states for s in block]
    params = [h.eta] + [t for block in teachers for t in block]
    return _with_readout(h, ClosedSystem(flat_states, rhs, params, h.eps_g.xreplace(v1)), v1)


ETA_V = sp.Symbol("eta_v", positive=True)


def _with_readout(h: Hierarchy, system: ClosedSystem, v1: dict) -> ClosedSystem:
    """A trained readout's v_1..v_K appended to the closed system: dv_i/dα = η_v <g_s(x_i) Δ>
    of the level-1 fields (the v_i are state, ``eta_v`` a parameter)."""
    if not h.v:
        return system
    rates = [ETA_V * sp.sympify(r).xreplace(v1) for r in h.readout_rates]
    return ClosedSystem(system.states + list(h.v), system.rhs + rates,
                        system.parameters + [ETA_V], system.eps_g)


def teacher_level(teachers, l):
    """Teacher symbols of level l (1-based list stored from level 1)."""
    return teachers[l - 1]


def mode_system(key: SystemKey, spectrum: Spectrum, order: int = 2) -> ClosedSystem:
    h = Hierarchy(key)
    L = spectrum.L
    lam, w = spectrum.eigenvalues, spectrum.weights
    blocks = [_level_block(h, f"m{k}") for k in range(L)]
    v1 = {sym: sp.Add(*[lam[k] * blocks[k][0][s] for k in range(L)])
          for s, sym in enumerate(h.v1.state)}
    v1 |= {sym: sp.Add(*[lam[k] * blocks[k][1][s] for k in range(L)])
           for s, sym in enumerate(h.v1.teacher)}
    e2 = h.eta**2 if order == 2 else 0
    rhs = []
    for k in range(L):
        sub = dict(v1)
        sub.update({y: lam[k] * x for y, x in zip(h.nxt.state, blocks[k][0])})
        sub.update({y: lam[k] * x for y, x in zip(h.nxt.teacher, blocks[k][1])})
        sub[h.nu] = w[k] * lam[k]
        sub[h.e2] = e2
        rhs += [sp.sympify(r).xreplace(sub) for r in h.rhs]
    states = [s for b in blocks for s in b[0]]
    params = [h.eta] + [t for b in blocks for t in b[1]]
    return _with_readout(h, ClosedSystem(states, rhs, params, h.eps_g.xreplace(v1)), v1)
