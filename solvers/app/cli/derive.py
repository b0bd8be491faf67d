"""``scaling-odes derive SPEC.toml``: the ODEs of the spec's model, as text, LaTeX or JSON.

The spec's ``[model]`` (activations, normalisation / readouts, K, M) names one system of the
committee-machine family.  Its level-generic hierarchy (derive/hierarchy.py) is printed, one
equation per per-level state variable (R_in, then Q_ij with i <= j)::

    dX^(l)/dα = Σ_Y a_XY(R, Q, T) · Y^(l+1)  +  e2 · ν_{l+1} · f_X(R, Q, T)
                [+ e2 · ν_{l+1} · noise · fn_X(R, Q)]      (label noise, [training] noise > 0)
                [- c · η · kappa · X^(l)]                  (weight decay, c = 1 for R, 2 for Q)

with Y over the next level's R, Q and teacher T, and ε_g(R, Q, T).  A trained readout
(``[model] readout = "trained"``) adds ``dv_i/dα = η_v <g_s(x_i) Δ> [- η_v κ_v v_i]`` (level 1
only; ``eta_v`` its learning rate, ``kappa_v`` its weight decay ``weight_decay_readout``), and the v_i appear in the coefficients, f and ε_g.  Names in the text form:
``R_i_n``, ``Q_i_j``, ``T_n_m`` are level 1 (they fix the pre-activation covariances),
``nR_i_n``, ``nQ_i_j``, ``nT_n_m`` level l + 1, ``lR_i_n``, ``lQ_i_j`` level l (weight
decay only), ``nu`` = ν_{l+1} = Tr Σ^(l+1)/N, ``eta`` the learning rate, ``e2`` = η²/B for
order 2 and 0 for order 1 (B the batch size), ``noise`` the label-noise variance and
``kappa`` the weight decay.  Every right-hand side in the text form is a SymPy expression
(``sympy.sympify`` reads it back).  Coefficients are simplified when the
system is small (at most MAX_SIMPLIFIED state variables per level; simplifying costs seconds).

Options: ``--latex`` prints LaTeX (an ``aligned`` block); ``--closed`` prints the closed system
at the spec's L in the spec's ``[solve] basis`` (levels: Cayley–Hamilton closure; modes), only
for at most MAX_CLOSED_EQUATIONS equations; ``--write`` prints the solver module into the cache
(``$SCALING_ODES_CACHE``) unless it is checked in, and reports its path; ``--json`` / ``-o
FILE`` write the JSON document

    {"model": description, "tag": module tag, "state": [per-level labels],
     "equations": [{"lhs", "rhs_text", "rhs_latex"}], "eps_g": {"text", "latex"},
     "module": path or null, "closed": null or {"basis", "L", "states", "equations"},
     "legend": [{"text", "latex", "meaning"}], "meta": {"version", "K", "M", "L", "order",
     "n_state", "wall_s"}}

The legend defines the symbols the equations use (LEGEND): the text form prints it as ``#``
lines under its title, the LaTeX form as the last rows of its ``aligned`` block.

The request is sized before any work with the estimate of :mod:`solvers.core.codegen_time`
(the derivation is the first phase of printing a module); SymPy is imported only here.
"""
from __future__ import annotations

import sys
import time

from solvers.app.cli.common import CliError

# refused above this estimate of deriving and printing the module (seconds on one core; erf
# K = M = 6 is ~23 s, K = M = 7 ~42 s): the printed equations would run to megabytes anyway
MAX_DERIVE_SECONDS = 30.0
# --closed: at most this many equations (L times the per-level state count)
MAX_CLOSED_EQUATIONS = 40
# coefficients are simplified up to this many state variables per level (K = 2, M = 1: 5)
MAX_SIMPLIFIED = 5


# (names in the text form: a regular expression; text; LaTeX; its definition as text and as
# LaTeX; in words): what render_text prints with the equations for every symbol they use.
# Level-l overlaps (docs/theory/conventions.md): R^(l)_in = J_i Σ^l B_n / N, Q^(l)_ij =
# J_i Σ^l J_j / N, T^(l)_nm = B_n Σ^l B_m / N.
LEGEND = [
    (r"[RQT]_\d+_\d+", "R_i_n, Q_i_j, T_n_m", r"R^{(1)}_{in}, Q^{(1)}_{ij}, T^{(1)}_{nm}",
     "J_i Σ B_n/N, J_i Σ J_j/N, B_n Σ B_m/N", r"J_i \Sigma B_n/N,\ J_i \Sigma J_j/N,\ B_n \Sigma B_m/N",
     "level-1 overlaps of students i, j and teachers n, m: the covariances of the fields"),
    (r"n[RQT]_\d+_\d+", "nR_i_n, nQ_i_j, nT_n_m", r"R^{(l+1)}_{in}, Q^{(l+1)}_{ij}, T^{(l+1)}_{nm}",
     "J_i Σ^(l+1) B_n/N, ...", r"J_i \Sigma^{l+1} B_n/N, \ldots", "the overlaps at level l + 1"),
    (r"l[RQ]_\d+_\d+", "lR_i_n, lQ_i_j", r"R^{(l)}_{in}, Q^{(l)}_{ij}",
     "J_i Σ^l B_n/N, J_i Σ^l J_j/N", r"J_i \Sigma^l B_n/N,\ J_i \Sigma^l J_j/N", "the overlaps at level l"),
    (r"nu", "nu", r"\nu_{l+1}", "Tr Σ^(l+1)/N", r"\mathrm{Tr}\,\Sigma^{l+1}/N",
     "the (l+1)-th moment of the input spectrum"),
    (r"eta", "eta", r"\eta", "", "", "the learning rate of the first layer"),
    (r"e2", "e2", "e_2", "eta^2/B", r"\eta^2/B",
     "at order 2, with B the batch size; 0 at order 1"),
    (r"noise", "noise", "noise", "", "", "the variance of the label noise"),
    (r"kappa", "kappa", r"\kappa", "", "", "the weight decay of the first layer"),
    (r"v_\d+", "v_i", "v_{i}", "", "", "the trained readouts of the students"),
    (r"eta_v", "eta_v", r"\eta_v", "", "", "the learning rate of the readouts"),
    (r"kappa_v", "kappa_v", r"\kappa_v", "", "", "the weight decay of the readouts"),
]


def legend(doc: dict) -> list[dict]:
    """The LEGEND entries for the symbols the document's equations and ε_g use."""
    import re
    part = doc["closed"] or doc
    texts = [e["rhs_text"] for e in part["equations"]] + [part["eps_g"]["text"]]
    used = set(re.findall(r"[A-Za-z_]\w*", " ".join(texts)))
    out = []
    for pattern, text, latex, definition, latex_definition, words in LEGEND:
        if any(re.fullmatch(pattern, name) for name in used):
            out.append({"text": text + (f" = {definition}" if definition else ""),
                        "latex": latex + (f" = {latex_definition}" if latex_definition else ""),
                        "meaning": words})
    return out


def register(sub) -> None:
    p = sub.add_parser("derive", help="print the ODEs of the spec's model (text, LaTeX, JSON)")
    p.add_argument("spec", help="SPEC.toml")
    p.add_argument("--latex", action="store_true", help="print LaTeX instead of text")
    p.add_argument("--closed", action="store_true",
                   help="the closed system at the spec's L (small L*K*M only)")
    p.add_argument("--write", action="store_true",
                   help="print the solver module into the cache and report its path")
    p.add_argument("-o", "--output", help="write JSON here")
    p.add_argument("--json", action="store_true", help="write compact JSON to stdout")
    p.set_defaults(func=cmd_derive)


def load(path):
    """The spec of ``path`` (no ODE-solve sizing: this command does not solve)."""
    from solvers.app.spec import load_spec
    return load_spec(path, sizing=None)


def size(spec, closed: bool = False) -> None:
    """Refuse (ValueError, one line with the estimate) a derivation too large to print."""
    from solvers.core.codegen_time import describe, estimate_seconds, n_state
    m = spec.model
    key = m.system_key()
    seconds = estimate_seconds(key.activation, m.K, m.M, teacher=key.teacher)
    if seconds > MAX_DERIVE_SECONDS:
        raise ValueError(f"{spec.path}: [model] K = {m.K}, M = {m.M}: deriving the "
                         f"{key.description} equations takes about {describe(seconds)} "
                         f"(limit {describe(MAX_DERIVE_SECONDS)}) and prints {n_state(m.K, m.M)} "
                         f"long equations per level: lower K or M")
    if closed:
        count = spec.data.L * n_state(m.K, m.M)
        if count > MAX_CLOSED_EQUATIONS:
            raise ValueError(f"{spec.path}: --closed at L = {spec.data.L}, K = {m.K}, "
                             f"M = {m.M} gives {count} equations (limit "
                             f"{MAX_CLOSED_EQUATIONS}): lower [data] L, K or M, or drop "
                             f"--closed for the level-generic form")


def derive_result(spec, closed: bool = False, write: bool = False) -> dict:
    """The JSON document of ``scaling-odes derive`` for a parsed spec (sized first)."""
    started = time.perf_counter()
    size(spec, closed)
    import sympy as sp

    from derive.hierarchy import Hierarchy, state_labels
    m, tr = spec.model, spec.training
    key = m.system_key()
    h = Hierarchy(key)
    names = _latex_names(h)
    small = h.n_state <= MAX_SIMPLIFIED
    tidy = sp.simplify if small else (lambda e: e)
    noise = sp.Symbol("noise", nonnegative=True)
    kappa = sp.Symbol("kappa", nonnegative=True)
    nxt = h.nxt.state + h.nxt.teacher
    labels = state_labels(m.K, m.M)
    equations = []
    for s, label in enumerate(labels):
        terms = [tidy(h.a[s, t]) * y for t, y in enumerate(nxt) if h.a[s, t] != 0]
        rhs = sp.Add(*terms) + h.e2 * h.nu * tidy(h.f[s])
        if tr.noise != 0 and h.fn[s] != 0:
            rhs += h.e2 * h.nu * noise * tidy(h.fn[s])
        if tr.weight_decay != 0:
            rhs -= (1 if s < m.K * m.M else 2) * h.eta * kappa * _level_l(h, s)
        equations.append({"lhs": f"d{label[0]}^(l){label[1:]}/dalpha",
                          "rhs_text": sp.sstr(rhs),
                          "rhs_latex": sp.latex(rhs, symbol_names=names)})
    if key.trained:
        # the learned readout: level 1 only, dv_i/dα = η_v <g_s(x_i) Δ>
        eta_v = sp.Symbol("eta_v", positive=True)
        names[eta_v] = r"\eta_v"
        kappa_v = sp.Symbol("kappa_v", nonnegative=True)
        names[kappa_v] = r"\kappa_v"
        for i, rate in enumerate(h.readout_rates):
            rhs = eta_v * tidy(rate)
            if tr.weight_decay_readout != 0:
                rhs -= eta_v * kappa_v * h.v[i]
            labels.append(f"v_{i + 1}")
            equations.append({"lhs": f"dv_{i + 1}/dalpha", "rhs_text": sp.sstr(rhs),
                              "rhs_latex": sp.latex(rhs, symbol_names=names)})
    eps = tidy(h.eps_g)
    out = {"model": key.description, "tag": key.tag, "state": labels, "equations": equations,
           "eps_g": {"text": sp.sstr(eps), "latex": sp.latex(eps, symbol_names=names)},
           "module": None, "closed": _closed(spec, key) if closed else None}
    if write:
        out["module"] = _write(key)
    out["legend"] = legend(out)
    out["meta"] = {"version": _version(), "K": m.K, "M": m.M, "L": spec.data.L,
                   "order": tr.order, "n_state": h.n_state,
                   "wall_s": time.perf_counter() - started}
    return out


def _level_l(h, s):
    """The level-l state variable X^(l) of index s, as a display symbol."""
    import sympy as sp
    return sp.Symbol(f"l{h.v1.state[s].name}", real=True)


def _latex_names(h) -> dict:
    """Display names: level 1 as R^{(1)}_{in}, next level as R^{(l+1)}_{in}, l-level X^{(l)}."""
    import sympy as sp
    names = {h.nu: r"\nu_{l+1}", h.e2: "e_2"}
    names.update({v: f"v_{{{i + 1}}}" for i, v in enumerate(h.v)})
    for block, level in ((h.v1, "1"), (h.nxt, "l+1")):
        for sym in block.state + block.teacher:
            letter, *idx = sym.name.lstrip("n").split("_")
            names[sym] = f"{letter}^{{({level})}}_{{{''.join(idx)}}}"
    for sym in h.v1.state:
        letter, *idx = sym.name.split("_")
        names[sp.Symbol(f"l{sym.name}", real=True)] = f"{letter}^{{(l)}}_{{{''.join(idx)}}}"
    return names


def _closed(spec, key) -> dict:
    """The closed system at the spec's L in its [solve] basis (derive/systems.py)."""
    import sympy as sp

    from derive.systems import level_system, mode_system
    from solvers.app.spectrum import spectrum_of
    basis = spec.solve.basis
    build = level_system if basis == "levels" else mode_system
    system = build(key, spectrum_of(spec), spec.training.order)
    return {"basis": basis, "L": spec.data.L,
            "states": [s.name for s in system.states],
            "equations": [{"lhs": f"d{s.name}/dalpha", "rhs_text": sp.sstr(r),
                           "rhs_latex": sp.latex(r)}
                          for s, r in zip(system.states, system.rhs)],
            "eps_g": {"text": sp.sstr(system.eps_g), "latex": sp.latex(system.eps_g)}}


def _write(key) -> str:
    """Path of the solver module of ``key``: checked in, or printed into the cache now (the
    registry announces the printing and its estimate on stderr)."""
    from derive.codegen.module_printer import module_name
    from solvers.core.registry import CHECKED_IN, GENERATED_DIR, cached_module
    if key in CHECKED_IN:
        return str(GENERATED_DIR / f"{module_name(key)}.py")
    return str(cached_module(key, "mpmath"))


def _version() -> str:
    from solvers import __version__
    return __version__


def render_text(doc: dict, latex: bool = False) -> str:
    """The equations of a derive document as plain text or a LaTeX ``aligned`` block."""
    part = doc["closed"] or doc
    kind = "latex" if latex else "text"
    if latex:
        rows = [f"\\frac{{d {_lhs_latex(e['lhs'])}}}{{d\\alpha}} &= {e['rhs_latex']}"
                for e in part["equations"]]
        rows.append(f"\\varepsilon_g &= {part['eps_g']['latex']}")
        rows += [f"& {e['latex']}\\ \\text{{({e['meaning']})}}" for e in doc.get("legend", [])]
        return "\\begin{aligned}\n" + " \\\\\n".join(rows) + "\n\\end{aligned}"
    head = f"# {doc['model']} ({doc['tag']})"
    if doc["closed"]:
        head += f", closed at L = {part['L']} ({part['basis']} basis)"
    rows = [head] + [f"#   {e['text']}: {e['meaning']}" for e in doc.get("legend", [])]
    rows += [f"{e['lhs']} = {e['rhs_text']}" for e in part["equations"]]
    rows.append(f"eps_g = {part['eps_g'][kind]}")
    return "\n".join(rows)


def _lhs_latex(lhs: str) -> str:
    """``dR^(l)_1_1/dalpha`` -> ``R^{(l)}_{11}``; a closed system's names stay as they are."""
    name = lhs[1:-len("/dalpha")]
    if "^(l)" not in name:
        return name.replace("_", r"\_")
    letter, rest = name.split("^(l)")
    return f"{letter}^{{(l)}}_{{{rest.replace('_', '')}}}"


def cmd_derive(args) -> int:
    from solvers.app.cli.common import emit
    spec = load(args.spec)
    try:
        doc = derive_result(spec, closed=args.closed, write=args.write)
    except ValueError as e:
        raise CliError(" ".join(str(e).split())) from None
    if args.json or args.output:
        emit(doc, args)
    else:
        sys.stdout.write(render_text(doc, latex=args.latex) + "\n")
    if doc["module"]:
        print(f"scaling-odes: solver module: {doc['module']}", file=sys.stderr)
    return 0
