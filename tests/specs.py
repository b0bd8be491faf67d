"""Spec texts shared by the tests and the benchmark scripts (bench/ imports this module too, so
it needs nothing but the standard library).

``toml_spec(model={...}, data={...}, ...)`` writes one TOML section per keyword, in the order
given (``toml_doc`` does the same from one dict): a dict gives ``key = value`` lines (strings
quoted, lists as arrays, dicts as inline tables), a string is copied as it is (keys a test
varies as text, such as an activation with its coefficients), a list mixes both.  The presets
below (``erf_K2``, ``erf_spec``) insert their values as given instead, so a format field such
as ``"{N}"`` passes through them.
"""
import json
import math


def toml_value(v) -> str:
    """A value as a TOML literal: (nested) lists and tuples as arrays, dicts as inline tables,
    nan and ±inf as TOML spells them, the rest as JSON does (which TOML reads the same for
    strings, finite numbers and booleans)."""
    if isinstance(v, (list, tuple)):
        return toml_list(v)
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k} = {toml_value(x)}" for k, x in v.items()) + "}"
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return json.dumps(v)


def toml_list(x) -> str:
    """A (nested) list or tuple as a TOML array literal."""
    return "[" + ", ".join(toml_value(v) for v in x) + "]"


def toml_spec(**sections) -> str:
    """Spec text from sections given as dicts, raw text or lists of both (module doc)."""
    out = []
    for name, body in sections.items():
        out.append(f"[{name}]\n")
        for part in body if isinstance(body, list) else [body]:
            if isinstance(part, dict):
                out += [f"{key} = {toml_value(v)}\n" for key, v in part.items()]
            elif part:
                out.append(part if part.endswith("\n") else part + "\n")
    return "".join(out)


def toml_doc(doc: dict) -> str:
    """A whole document from a dict, as the fuzzers draw them: its plain keys first (a section
    replaced by a value stays a top-level key), then one section per table."""
    top = "".join(f"{k} = {toml_value(v)}\n" for k, v in doc.items() if not isinstance(v, dict))
    return top + toml_spec(**{k: v for k, v in doc.items() if isinstance(v, dict)})


def erf_K2(L, N) -> str:
    """[model] and [data] of an erf K = M = 2 teacher-student spec, beta = 1 (values inserted as
    given, so a format field such as ``"{N}"`` may be passed through)."""
    return (f"\n[model]\nactivation = \"erf\"\nK = 2\nM = 2\n"
            f"[data]\nL = {L}\nbeta = 1.0\nN = {N}\n")


def erf_spec(eta, sigma_J, seed, alpha_max, basis, dps, digits) -> str:
    """A small erf K = M = 2, L = 4 spec on a 5-point linear grid (values inserted as given)."""
    return ERF_K2_L4 + (f"[training]\neta = {eta}\nsigma_J = {sigma_J}\nseed = {seed}\n"
                        f"[solve]\nalpha_max = {alpha_max}\nn_points = 5\nspacing = \"linear\"\n"
                        f"basis = {basis}\ndps = {dps}\ndigits = {digits}\n")


def erf_modes(K, L, amax, *, N=1024, eta=0.5, digits=9, points="") -> str:
    """erf K = M, beta = 0.5 on the modes basis (the modes route's digit tests and benchmark);
    ``points`` is raw text for the grid's keys beside alpha_max."""
    return toml_spec(model=dict(activation="erf", K=K, M=K), data=dict(L=L, beta=0.5, N=N),
                     training=dict(eta=eta),
                     solve=[dict(alpha_max=amax), points, dict(basis="modes", digits=digits)])


def linear_K1(L, beta=1.0) -> str:
    """[model] and [data] of the linear K = M = 1 teacher-student spec."""
    return toml_spec(model=dict(activation="linear", K=1, M=1), data=dict(L=L, beta=beta))


# [model] and [data] of the small specs several test modules start from
ERF_K2_L4 = erf_K2(4, 64)
LINEAR_L16 = linear_K1(16)

# the [kernel] section of the kernel guide's example, without its optional keys
KERNEL = toml_spec(kernel=dict(a=2.0, M=2000, target_b=2.0, ridge=1e-2, noise=1e-2, P=[16, 32, 64],
                               methods=["eig", "ek", "rg_ek", "rg_gda"], rg_cut=0.01))
