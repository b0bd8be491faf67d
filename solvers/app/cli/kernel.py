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
[solve], [simulate]) may be present and are not used here.  Without a target, c_k² = λ_k.
``kernel`` accepts (and checks) a ``[mc]`` section too, so one file serves both subcommands.
At ridge 0 the equivalent-kernel readings have κ_S = 0 (``ek``; ``rg_ek`` when its cut
decimates no mode) and would give ε_g = 0 below the number of modes: those entries are null,
and ``meta.null_entries`` says which.

JSON: ``P``, ``kappa``, ``kappa_S``, ``gamma``, ``eps_g`` (each method -> list over P; eps_g is
the excess test error, label noise not included), optional ``learnability``, ``mc`` {``mean``,
``sem``} for kernel-mc, ``meta``.
"""
from __future__ import annotations

import math
import time
from fractions import Fraction

from solvers.app.spec import (REQUIRED, check, check_sections, convert, parse_section,
                              read_document, section_error)

from solvers.app.validate import RANGE_TEXT, in_range

_METHODS = ("eig", "ek", "rg_ek", "rg_gda")
_NUM = "list of numbers or decimal strings"
_RANGE = check.rule(in_range, RANGE_TEXT)
# the kernel theory runs in mpmath where float64 ends (a ridge of 1e-500, eigenvalues below
# 1e-308): its numbers need only fit float() from above and stay within mpmath's reach below
_KMIN, _KMAX = Fraction(1, 10 ** 1000), Fraction(10 ** 300)
_KRANGE = check.rule(lambda v: v == 0 or _KMIN <= abs(v) <= _KMAX,
                     "is out of range: nonzero numbers must lie within 1e-1000 .. 1e300 in "
                     "magnitude")
_EXPONENT = check.rule(lambda v: abs(v) <= 1000, "must lie within -1000 .. 1000")
MAX_P = 10 ** 15              # sample counts: float64 keeps them exact
MAX_LIST = 10 ** 5            # entries of P, and of explicit eigenvalue / target lists (x M)
MAX_EIGENVALUES = 10 ** 6
MAX_TRIALS = 10 ** 6
MAX_LEARNABILITY = 10 ** 7


def _short(limit, what="entries"):
    return check.rule(lambda v: len(v) <= limit, f"must have at most {limit} {what}")


KERNEL_SCHEMA = {
    "a": (convert.exact, None, check.all(check.gt(0), _KRANGE, _EXPONENT)),
    "M": (convert.int, None, check.rule(lambda v: 1 <= v <= 50_000_000,
                                         "must be between 1 and 50000000")),
    "eigenvalues": (convert.list_of(convert.exact, _NUM), None,
                    check.all(check.each(check.gt(0)), check.each(_KRANGE),
                              _short(MAX_EIGENVALUES))),
    "target_b": (convert.exact, None, check.all(_KRANGE, _EXPONENT)),
    "target": (convert.list_of(convert.exact, _NUM), None,
               check.all(check.each(check.ge(0)), check.each(_KRANGE),
                         _short(MAX_EIGENVALUES))),
    "ridge": (convert.exact, Fraction(0), check.all(check.ge(0), _KRANGE)),
    "noise": (convert.exact, Fraction(0), check.all(check.ge(0), _KRANGE)),
    "P": (convert.list_of(convert.int, "list of integers"), REQUIRED,
          check.all(check.each(check.ge(1)), check.each(check.rule(
              lambda v: v <= MAX_P, f"must be <= {MAX_P:.0e}")), _short(MAX_LIST))),
    "methods": (convert.list_of(convert.str, "list of strings"), _METHODS,
                check.all(check.each(check.one_of(*_METHODS)), check.distinct)),
    "rg_cut": (convert.exact, Fraction(1, 100),
               check.all(check.rule(lambda v: 0 < v < 1, "must be in (0, 1) (a learnability)"),
                         _KRANGE)),
    "learnability": (convert.bool, False, None),
}
MC_SCHEMA = {
    "trials": (convert.int, 32, check.all(check.ge(2), check.rule(
        lambda v: v <= MAX_TRIALS, f"must be <= {MAX_TRIALS}"))),
    "seed": (convert.int, 0, check.ge(0)),
}
DATA_SCHEMA = {
    "L": (convert.int, None, check.all(check.ge(1), check.rule(lambda v: v <= 100_000,
                                                                "must be <= 100000"))),
    "beta": (convert.exact, None, check.all(check.gt(-1), _RANGE)),
    "eigenvalues": (convert.list_of(convert.exact, _NUM), None,
                    check.all(check.each(check.gt(0)), check.each(_RANGE),
                              _short(100_000))),
    "N": (convert.int, None, check.all(check.ge(1), check.rule(
        lambda v: v <= 2 ** 40, "must be <= 2^40"))),
    "rotate": (convert.bool, False, None),
}
_SECTIONS = ("kernel", "mc", "data", "model", "training", "solve", "init", "simulate")


def _levels_spectrum(L: int, beta: Fraction, N: int):
    """The toolkit's L-level power law as the linear kernel x·x'/N (`spectrum.levels`) without
    SymPy: λ_l/N = (L/N) l^-(1+β) / Σ_j j^-(1+β), evaluated by mpmath at whatever precision is
    asked (40 digits for the float64 arrays, the caller's dps + 10 for the mpmath route).  The
    exact SymPy spectrum costs 48 s at L = 4096 and hours at L = 10^5 (β = 1; far more for a
    non-integer β); these numbers are the same ones to the precision used."""
    import mpmath
    import numpy as np
    from solvers.theory.kernel import spectrum as S

    def values(dps):
        with mpmath.workdps(dps):
            e = -(1 + mpmath.mpf(beta.numerator) / beta.denominator)
            raw = [mpmath.mpf(l) ** e for l in range(1, L + 1)]
            scale = mpmath.mpf(L) / (N * mpmath.fsum(raw))
            return [scale * r for r in raw]

    def floats():
        arr = np.array([float(v) for v in values(40)])
        return arr, arr.copy()

    def mp():
        lam = values(mpmath.mp.dps + 10)
        return [+v for v in lam], [+v for v in lam]

    with mpmath.workdps(20):
        logs = [float(mpmath.log10(v)) for v in values(20)]
    return S._finish("levels", {"L": L, "beta": beta, "N": N}, [N // L] * L, logs, logs,
                     floats, mp)


def load(path, with_mc: bool):
    """(spectrum, kernel section, mc section) from a spec file; SpecError on bad input.

    A ``[mc]`` section is accepted (and checked) by ``kernel`` too, so that one file serves both
    subcommands; only ``kernel-mc`` runs it.
    """
    return load_document(read_document(path), str(path), with_mc)


def load_document(doc: dict, name: str, with_mc: bool):
    """`load` of an already-read TOML document (a dict); ``name`` starts the messages."""
    from solvers.theory.kernel import spectrum as S
    check_sections(doc, _SECTIONS, "kernel", name=name)
    k = parse_section(doc, "kernel", KERNEL_SCHEMA, name=name)
    mc = parse_section(doc, "mc", MC_SCHEMA, name=name)
    if not with_mc:
        mc = None
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
            _check_size(name, _Shape(N, L), k, mc)
            spec = S.explicit(vals, vals, multiplicities=[N // L] * L)
        else:
            for key in ("L", "beta"):
                if d[key] is None:
                    raise section_error(name, "data", f"missing required key '{key}' (or "
                                        f"give eigenvalues)")
            if d["N"] % d["L"]:
                raise section_error(name, "data", f"L = {d['L']} does not divide N = {d['N']}")
            decades = (1 + d["beta"]) * math.log10(d["L"]) if d["L"] > 1 else 0
            if decades > 150:
                raise section_error(name, "data", f"beta = {float(d['beta']):.6g} with L = "
                                    f"{d['L']}: the eigenvalues would span 10^{float(decades):.0f}"
                                    f" (at most 10^150)")
            _check_size(name, _Shape(d["N"], d["L"]), k, mc)
            spec = _levels_spectrum(d["L"], d["beta"], d["N"])
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
            M = 2000 if k["M"] is None else k["M"]
            _check_size(name, _Shape(M, M), k, mc)
            spec = S.power_law(k["a"], M, k["target_b"])
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
            _check_size(name, _Shape(len(eig), len(eig)), k, mc)
            spec = S.explicit(eig, target)
    if k["ridge"] == 0 and k["noise"] > 0 and spec.modes in k["P"]:
        raise section_error(name, "kernel", f"ridgeless noisy regression at P = {spec.modes} "
                            f"= rank of the kernel has infinite test error (give ridge > 0 or "
                            f"leave out that P)")
    return spec, k, mc


# measured on this machine class (one core): eigenlearning ~1.4 s for 2e6 modes x 100 P
# (block moments), i.e. ~1e-8 s per mode and P, but at least ~1e-6 s per group and P for
# spectra with many distinct groups (explicit lists)
_SECONDS_PER_MODE_P = 1e-8
# one BLAS thread, dense products and Cholesky, as CPU time of whole kernel-mc runs: 200
# trials of P = 16, 64, 256 over 500 modes took 0.9 s beyond the start-up where 1e9 flop/s
# gave 8.3 s (BENCHMARKS.md, the sizing check across subcommands)
_FLOPS = 8e9


def mc_seconds(spec, Ps, trials) -> float:
    """Monte-Carlo time: per trial a P_max x M Gaussian design, its kernel (P_max^2 M) and a
    Cholesky (or least squares) per P."""
    M, Pmax = spec.modes, max(Ps)
    per = 2e-8 * Pmax * M + (Pmax * Pmax * M + sum(p ** 3 / 3 + 2 * p * M + (
        p * M * M if p >= M else 0) for p in Ps)) / _FLOPS
    return trials * per


def _Shape(modes, groups):
    """The sizes of a spectrum before it is built (building 5e7 modes takes seconds)."""
    from types import SimpleNamespace
    return SimpleNamespace(modes=int(modes), groups=int(groups))


def _check_size(name, spec, k, mc):
    from solvers.app.validate import _gib, _hours, memory_limit, time_limit
    Ps = k["P"]
    est = len(Ps) * (spec.modes * _SECONDS_PER_MODE_P + spec.groups * 1e-6)
    k["_seconds"] = est, 0.0          # announced by the command (the refusals' estimate)
    if est > time_limit():
        raise section_error(name, "kernel", f"{len(Ps)} values of P with {spec.modes} modes "
                            f"({spec.groups} groups): about {_hours(est)} (limit "
                            f"{_hours(time_limit())}, SCALING_ODES_MAX_HOURS)")
    if k["learnability"] and spec.groups * len(Ps) > MAX_LEARNABILITY:
        # every entry is a JSON number (~20 characters): 10^7 of them are ~200 MB of text
        raise section_error(name, "kernel", f"learnability = true: {spec.groups} groups x "
                            f"{len(Ps)} P = {spec.groups * len(Ps)} numbers in the JSON (at "
                            f"most {MAX_LEARNABILITY}, about {MAX_LEARNABILITY * 20 / 1e6:.0f} MB)")
    if mc is None:
        return
    from solvers.theory.kernel.montecarlo import MAX_ENTRIES, MAX_MODES, MAX_P as MC_MAX_P
    if spec.modes > MAX_MODES:
        raise section_error(name, "kernel", f"the Monte Carlo expands every mode: {spec.modes} "
                            f"modes (at most {MAX_MODES})")
    Pmax = max(Ps)
    if Pmax > MC_MAX_P:
        raise section_error(name, "kernel", f"P = {Pmax} is too large for the Monte Carlo (at "
                            f"most {MC_MAX_P})")
    if Pmax * (Pmax + spec.modes) > MAX_ENTRIES:
        raise section_error(name, "kernel", f"P = {Pmax} with {spec.modes} modes is too large "
                            f"for the Monte Carlo (P (P + M) > {MAX_ENTRIES:.0e} matrix entries)")
    est = mc_seconds(spec, Ps, mc["trials"])
    k["_seconds"] = k["_seconds"][0], est
    if est > time_limit():
        raise section_error(name, "mc", f"trials = {mc['trials']} with P up to {Pmax} and "
                            f"{spec.modes} modes: about {_hours(est)} of Monte Carlo (limit "
                            f"{_hours(time_limit())}, SCALING_ODES_MAX_HOURS)")


def kernel_result(spec, k) -> dict:
    from solvers import __version__
    from solvers.theory.kernel import learning_curves
    res = learning_curves(spec, k["P"], ridge=k["ridge"], noise=k["noise"],
                          methods=tuple(k["methods"]), rg_cut=k["rg_cut"],
                          learnability=k["learnability"])
    res["meta"]["version"] = __version__
    # an equivalent-kernel reading with a zero effective ridge (ek at ridge 0; rg_ek when the
    # cut decimates no mode) has kappa_S = 0 and learns every mode: eps_g = 0 below the number of modes is no
    # approximation of anything, so those entries are null, with a note
    blank = []
    for m in ("ek", "rg_ek"):
        for i, P in enumerate(res["P"]):
            if m in res["kappa"] and res["kappa"][m][i] == 0 and P < spec.modes:
                for key in ("kappa", "kappa_S", "gamma", "eps_g"):
                    res[key][m][i] = None
                blank.append(f"{m} at P = {P}")
    if blank:
        res["meta"]["null_entries"] = (f"{', '.join(blank)}: zero effective ridge (ridge 0, "
                                       f"and for rg_ek no mode decimated), which would give "
                                       f"eps_g = 0 below the {spec.modes} modes")
    return res


def _announce(command, spec, k, mc):
    """The estimate line (solvers.app.sizing) from the numbers ``_check_size`` refuses by."""
    from solvers.app.sizing import announce, work_estimate
    theory, trials = k["_seconds"]
    route = f"{len(k['P'])} P x {spec.modes} modes" + (
        f", Monte Carlo {mc['trials']} trial(s)" if mc else "")
    announce(work_estimate(command, route, "float64", theory + trials))


def cmd_kernel(args) -> int:
    from solvers.app.cli.common import emit
    spec, k, _ = load(args.spec, with_mc=False)
    _announce("kernel", spec, k, None)
    emit(kernel_result(spec, k), args)
    return 0


def cmd_kernel_mc(args) -> int:
    from tqdm import tqdm
    from solvers.app.cli.common import emit
    from solvers.theory.kernel import kernel_mc
    spec, k, mc = load(args.spec, with_mc=True)
    _announce("kernel-mc", spec, k, mc)
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
