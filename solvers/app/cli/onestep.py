"""``scaling-odes onestep SPEC.toml`` and ``scaling-odes onestep-sim SPEC.toml``: one large
gradient step on the first layer, then ridge on the readout (the spiked random features).

    [onestep] student_activation = "tanh"   # odd: linear, erf (= erf(z/√2)), tanh, sin, sin2, he3, cubic
              target_activation = "tanh"    # the same list
              alpha0 = 0.5      # n0/d, samples of the step (0: no step, plain random features)
              eta = 1.0         # step on the rows: the network's rate on (1/2n0)Σ(y−f)² is p·eta
                                # (the paper's η̃ — its companion code scales by p at every width)
              width = 1.0       # beta = p/d
              ridge = 0.01      # lambda > 0 in Σ(y − w·σ(Wx)/√p)² + lambda‖w‖²
              noise = 0.0       # label-noise variance
              alpha = [0.2, 0.5, 1, 2, 3]   # n/d of the ridge
    [sim]     d = 1000; seeds = 4           # onestep-sim only; seeds 0..seeds-1
              kinds = ["protocol", "srf"]   # "protocol" (real step) | "srf" | "gaussian"
              n_test = 4000                 # held-out samples (default max(2000, 2d))

JSON: ``alpha``, ``eps_g`` (test error against the noiseless target), ``train_error``,
``overlaps`` (m, t, psi, q1, q2, V1, V2 and conjugates, each a list over alpha), ``srf``
{gamma, r, c}, ``bounds`` {upper (26), lower (27) — both at alpha0 → ∞ —, lambda_inf and
lower_here at the given alpha0}, ``linear_baseline`` (E σ⋆² − μ1⋆²), ``meta``; onestep-sim adds
``sim`` {kind: {eps_g, eps_g_sem, train_error, train_error_sem, d, p, seeds}} and
``measured_srf`` (γ, r, c read off the real step, mean and standard error over seeds); the
standard errors (``*_sem``) only with two seeds or more.
"""
from __future__ import annotations

from solvers.app.cli.common import CliError, json_command, spec_command
from solvers.app.spec import SpecError, check, check_sections, convert, parse_section, read_document

_ACTS = ("linear", "erf", "tanh", "sin", "sin2", "he3", "cubic")
MAX_ALPHA_POINTS = 20_000          # the vectorised solve holds ~(points × 600) float64 arrays
MAX_SIM_BYTES = 3 * 2 ** 30

ONESTEP_SCHEMA = {
    "student_activation": (convert.str, "tanh", None),
    "target_activation": (convert.str, "tanh", None),
    "alpha0": (convert.float, 0.5, check.ge(0)),
    "eta": (convert.float, 1.0, check.ge(0)),
    "width": (convert.float, 1.0, check.gt(0)),
    "ridge": (convert.float, 0.01, check.gt(0)),
    "noise": (convert.float, 0.0, check.ge(0)),
    "alpha": (convert.list_of(convert.float, "list of numbers"), None,
              check.all(check.each(check.gt(0)), check.rule(
                  lambda v: len(v) <= MAX_ALPHA_POINTS, f"has more than {MAX_ALPHA_POINTS} "
                  f"points"))),
}
SIM_SCHEMA = {
    "d": (convert.int, 1000, check.ge(2)),
    "seeds": (convert.int, 4, check.ge(1)),
    "kinds": (convert.list_of(convert.str, "list of strings"), ("protocol",),
              check.all(check.each(check.one_of("protocol", "srf", "gaussian")), check.distinct)),
    "n_test": (convert.int, None, check.ge(1)),
}


def _setup(sec, name):
    from solvers.theory.onestep import ActivationError, Setup
    if sec["alpha"] is None:
        raise SpecError(f"{name}: [onestep] missing required key 'alpha' (list of n/d > 0)")
    for key in ("student_activation", "target_activation"):
        try:
            from solvers.theory.onestep import resolve
            resolve(sec[key])
        except ActivationError as exc:
            raise SpecError(f"{name}: [onestep] {key}: {exc}") from None
    return Setup(student=sec["student_activation"], target=sec["target_activation"],
                 alpha0=sec["alpha0"], eta=sec["eta"], beta=sec["width"], ridge=sec["ridge"],
                 noise=sec["noise"])


def _load(path, with_sim: bool):
    name = str(path)
    doc = read_document(path)
    check_sections(doc, ("onestep", "sim"), "onestep", name=name)   # one spec, both commands
    sec = parse_section(doc, "onestep", ONESTEP_SCHEMA, name=name)
    st = _setup(sec, name)
    sim = parse_section(doc, "sim", SIM_SCHEMA, name=name) if with_sim else None
    if with_sim:
        need = sim_bytes(st, sec["alpha"], sim)
        if need > MAX_SIM_BYTES:
            raise SpecError(f"{name}: [sim] d = {sim['d']} needs about {need / 2 ** 30:.1f} GiB "
                            f"(limit {MAX_SIM_BYTES / 2 ** 30:.0f} GiB): lower d or the largest "
                            f"alpha")
    return st, sec, sim


def sim_bytes(st, alpha, sim) -> float:
    """Peak memory of one simulated run (float64): inputs, features, the step's n0 × p
    pre-activations (twice), the Gram matrix, the rows."""
    d = sim["d"]
    p = max(1, round(st.beta * d))
    n = max(1, round(max(alpha) * d))
    n0 = max(1, round(st.alpha0 * d)) if "protocol" in sim["kinds"] else 0
    nt = sim["n_test"] or max(2000, 2 * d)
    gauss = 1 if "gaussian" in sim["kinds"] else 0
    return 8.0 * (n * (d + (2 + gauss) * p) + nt * (d + (1 + gauss) * p) + n0 * (d + 3 * p)
                  + min(n, p) ** 2 + 2 * p * d)


def _theory(st, sec):
    from solvers.theory.onestep import FixedPointError, curve
    try:
        return curve(st, list(sec["alpha"]))
    except FixedPointError as exc:
        raise CliError(str(exc)) from None
    except ArithmeticError as exc:       # overflow of extreme inputs (eta = 1e300, ...)
        raise CliError(f"the theory overflows float64 for these parameters ({exc}); "
                       f"alpha0 = {st.alpha0}, eta = {st.eta}, width = {st.beta}, "
                       f"ridge = {st.ridge}, noise = {st.noise}") from None


@json_command(lambda path: _load(path, False)[:2])
def cmd_theory(args, st, sec) -> dict:
    return _theory(st, sec)


@json_command(lambda path: _load(path, True))
def cmd_sim(args, st, sec, sim) -> dict:
    import time

    import numpy as np

    from solvers.app.sizing import onestep_sim_estimate, sized
    from solvers.theory.onestep.simulate import measure_step, repeat
    try:                                # seeds x kinds x alpha, announced and capped
        alphas = list(sec["alpha"])
        sized(onestep_sim_estimate(st, alphas, sim, sim_bytes(st, alphas, sim)),
              f"{args.spec}: [sim]")
    except ValueError as e:
        raise CliError(str(e)) from None
    out = _theory(st, sec)
    t0 = time.perf_counter()
    seeds = list(range(sim["seeds"]))
    common = dict(d=sim["d"], beta=st.beta, alpha=list(sec["alpha"]), student=st.student_act,
                  target=st.target_act, lam=st.ridge, noise=st.noise, n_test=sim["n_test"])
    out["sim"] = {}
    for kind in sim["kinds"]:
        extra = ({"alpha0": st.alpha0, "eta": st.eta} if kind == "protocol"
                 else {"srf": out["srf"]})
        out["sim"][kind] = repeat(kind, seeds, **common, **extra)
    if "protocol" in sim["kinds"] and st.alpha0 > 0:
        p = max(1, round(st.beta * sim["d"]))
        ms = [measure_step(sim["d"], p, st.alpha0, st.eta, st.student_act, st.target_act,
                           st.noise, seed=s) for s in seeds]
        out["measured_srf"] = {}
        for key in ("gamma", "r", "c"):
            a = np.array([m[key] for m in ms])
            out["measured_srf"][key] = float(a.mean())
            if len(a) > 1:          # one seed: no standard error (never null)
                out["measured_srf"][key + "_sem"] = float(a.std(ddof=1) / np.sqrt(len(a)))
    out["meta"]["sim_wall_s"] = time.perf_counter() - t0
    return out


def register(sub) -> None:
    spec_command(sub, "onestep", cmd_theory,
                 "one large step + ridge: the spiked random-features theory ([onestep])")
    spec_command(sub, "onestep-sim", cmd_sim,
                 "one large step + ridge: theory and seeded simulations ([onestep], [sim])")
