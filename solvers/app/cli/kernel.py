"""``scaling-odes kernel SPEC.toml`` and ``scaling-odes kernel-mc SPEC.toml``: GP / kernel curves.

    [kernel]  a = 2.0;  M = 2000          # lambda_k = k^-a (k = 1..M, not normalised), or eigenvalues = [...]
              target_b = 2.0              # c_k^2 = k^-b, or target = [...] (c_k^2 per mode)
              ridge = 1e-2;  noise = 1e-2;  P = [16, 32, 64]   # noise = label-noise variance
              methods = ["eig", "ek", "rg_ek", "rg_gda"];  rg_cut = 0.01
              learnability = false        # true: eigenlearning L_k per mode and P in the JSON
    [mc]      trials = 32;  seed = 0      # kernel-mc only

Instead of ``a`` / ``eigenvalues`` the common ``[data]`` block (L, beta, N, or eigenvalues and N)
gives the toolkit's L-level spectrum as the linear kernel x·x'/N (multiplicity N/L, eigenvalue
λ_l/N) with the linear teacher's target c² = λ_l/N; the other sections of a toolkit spec ([model], [training],
[solve]) may be present and are not used here.  Without a target, c_k² = λ_k.

JSON: ``P``, ``kappa``, ``kappa_S``, ``gamma``, ``eps_g`` (each method -> list over P; eps_g is
the excess test error, label noise not included), optional ``learnability``, ``mc`` {``mean``,
``sem``} for kernel-mc, ``meta``.
"""
from __future__ import annotations

import time
from fractions import Fraction

from solvers.app.spec import (REQUIRED, SpecError, check, convert, parse_section,
                              read_document, section_error)

_METHODS = ("eig", "ek", "rg_ek", "rg_gda")
_NUM = "list of numbers or decimal strings"

KERNEL_SCHEMA = {
    "a": (convert.exact, None, check.gt(0)),
    "M": (convert.int, None, check.rule(lambda v: 1 <= v <= 50_000_000,
                                         "must be between 1 and 50000000")),
    "eigenvalues": (convert.list_of(convert.exact, _NUM), None, check.each(check.gt(0))),
    "target_b": (convert.exact, None, None),
    "target": (convert.list_of(convert.exact, _NUM), None, check.each(check.ge(0))),
    "ridge": (convert.exact, Fraction(0), check.ge(0)),
    "noise": (convert.exact, Fraction(0), check.ge(0)),
    "P": (convert.list_of(convert.int, "list of integers"), REQUIRED, check.each(check.ge(1))),
    "methods": (convert.list_of(convert.str, "list of strings"), _METHODS,
                check.each(check.one_of(*_METHODS))),
    "rg_cut": (convert.exact, Fraction(1, 100),
               check.rule(lambda v: 0 < v < 1, "must be in (0, 1) (a learnability)")),
    "learnability": (convert.bool, False, None),
}
MC_SCHEMA = {
    "trials": (convert.int, 32, check.ge(2)),
    "seed": (convert.int, 0, check.ge(0)),
}
DATA_SCHEMA = {
    "L": (convert.int, None, check.ge(1)),
    "beta": (convert.exact, None, check.gt(-1)),
    "eigenvalues": (convert.list_of(convert.exact, _NUM), None, check.each(check.gt(0))),
    "N": (convert.int, None, check.ge(1)),
    "rotate": (convert.bool, False, None),
}
_SECTIONS = ("kernel", "mc", "data", "model", "training", "solve", "init")


def load(path, with_mc: bool):
    """(spectrum, kernel section, mc section) from a spec file; SpecError on bad input."""
    return load_document(read_document(path), str(path), with_mc)


def load_document(doc: dict, name: str, with_mc: bool):
    """`load` of an already-read TOML document (a dict); ``name`` starts the messages."""
    from solvers.theory.kernel import spectrum as S
    allowed = _SECTIONS if with_mc else tuple(s for s in _SECTIONS if s != "mc")
    for sec in doc:
        if sec not in allowed:
            raise SpecError(f"{name}: unknown section [{sec}] (allowed: {', '.join(allowed)})")
    if "kernel" not in doc:
        raise SpecError(f"{name}: missing section [kernel]")
    k = parse_section(doc, "kernel", KERNEL_SCHEMA, name=name)
    mc = parse_section(doc, "mc", MC_SCHEMA, name=name) if with_mc else None
    given = [key for key in ("a", "eigenvalues") if k[key] is not None]
    if "data" in doc:
        if given:
            raise section_error(name, "kernel", f"give the spectrum either in [data] or as "
                                f"[kernel] {given[0]}, not both")
        for key in ("M", "target_b", "target"):
            if k[key] is not None:
                raise section_error(name, "kernel", f"{key} does not go with a [data] spectrum "
                                    f"(its target is the linear teacher)")
        d = parse_section(doc, "data", DATA_SCHEMA, name=name)
        if d["N"] is None:
            raise section_error(name, "data", "missing required key 'N' (the kernel spectrum "
                                "has L levels of multiplicity N/L)")
        if d["eigenvalues"] is not None:
            if d["L"] is not None or d["beta"] is not None:
                raise section_error(name, "data", "give either L and beta or eigenvalues, "
                                    "not both")
            L, N = len(d["eigenvalues"]), d["N"]
            if N % L:
                raise section_error(name, "data", f"{L} eigenvalues do not divide N = {N}")
            vals = [v / N for v in d["eigenvalues"]]
            spec = S.explicit(vals, vals, multiplicities=[N // L] * L)
        else:
            for key in ("L", "beta"):
                if d[key] is None:
                    raise section_error(name, "data", f"missing required key '{key}' (or "
                                        f"give eigenvalues)")
            if d["N"] % d["L"]:
                raise section_error(name, "data", f"L = {d['L']} does not divide N = {d['N']}")
            spec = S.levels(d["L"], d["beta"], d["N"])
    else:
        if len(given) != 1:
            raise section_error(name, "kernel", "give exactly one of a (power law, with M) or "
                                "eigenvalues (or a [data] block)" +
                                (" (both given)" if given else " (neither given)"))
        if k["target_b"] is not None and k["target"] is not None:
            raise section_error(name, "kernel", "give either target_b or target, not both")
        if k["a"] is not None:
            if k["target"] is not None:
                raise section_error(name, "kernel", "target = [...] goes with eigenvalues = "
                                    "[...]; with a power law use target_b")
            spec = S.power_law(k["a"], 2000 if k["M"] is None else k["M"], k["target_b"])
        else:
            if k["M"] is not None:
                raise section_error(name, "kernel", "M goes with a (the number of power-law "
                                    "modes), not with eigenvalues")
            eig = k["eigenvalues"]
            if k["target"] is not None and len(k["target"]) != len(eig):
                raise section_error(name, "kernel", f"target has {len(k['target'])} entries "
                                    f"but eigenvalues has {len(eig)}")
            target = k["target"]
            if k["target_b"] is not None:
                # c_k² = k^-b by rank of the eigenvalue (1 = largest)
                order = sorted(range(len(eig)), key=lambda i: eig[i], reverse=True)
                rank = {i: r + 1 for r, i in enumerate(order)}
                b = float(k["target_b"])
                target = [repr(rank[i] ** (-b)) for i in range(len(eig))]
            spec = S.explicit(eig, target)
    if k["ridge"] == 0 and k["noise"] > 0 and spec.modes in k["P"]:
        raise section_error(name, "kernel", f"ridgeless noisy regression at P = {spec.modes} "
                            f"= rank of the kernel has infinite test error (give ridge > 0 or "
                            f"leave out that P)")
    return spec, k, mc


def kernel_result(spec, k) -> dict:
    from solvers import __version__
    from solvers.theory.kernel import learning_curves
    res = learning_curves(spec, k["P"], ridge=k["ridge"], noise=k["noise"],
                          methods=tuple(k["methods"]), rg_cut=k["rg_cut"],
                          learnability=k["learnability"])
    res["meta"]["version"] = __version__
    return res


def cmd_kernel(args) -> int:
    from solvers.app.cli.common import emit
    spec, k, _ = load(args.spec, with_mc=False)
    emit(kernel_result(spec, k), args)
    return 0


def cmd_kernel_mc(args) -> int:
    from tqdm import tqdm
    from solvers.app.cli.common import emit
    from solvers.theory.kernel import kernel_mc
    spec, k, mc = load(args.spec, with_mc=True)
    res = kernel_result(spec, k)
    started = time.perf_counter()
    bar = tqdm(total=len(k["P"]) * mc["trials"], desc="kernel-mc", unit="design",
               disable=None, leave=False)
    try:
        out = kernel_mc(spec, k["P"], ridge=k["ridge"], noise=k["noise"], trials=mc["trials"],
                        seed=mc["seed"], progress=bar.update)
    finally:
        bar.close()
    res["mc"] = {"mean": out["mean"], "sem": out["sem"]}
    res["meta"]["mc"] = {"trials": mc["trials"], "seed": mc["seed"],
                         "design": "Gaussian features z_k ~ N(0,1), exact E_g = sum (c - c_hat)^2",
                         "wall_time": time.perf_counter() - started}
    emit(res, args)
    return 0


def register(subparsers) -> None:
    for name, func, text in (
            ("kernel", cmd_kernel, "kernel / GP learning curves: eigenlearning, EK, RG"),
            ("kernel-mc", cmd_kernel_mc, "the same plus the Gaussian-design Monte Carlo")):
        s = subparsers.add_parser(name, help=text)
        s.add_argument("spec", help="SPEC.toml")
        s.add_argument("-o", "--output", help="write JSON here")
        s.add_argument("--json", action="store_true", help="write compact JSON to stdout")
        s.set_defaults(func=func)
