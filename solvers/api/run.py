"""The API's entry points: one function per subcommand computation, each taking a spec (dict,
TOML path or parsed Spec) and returning a result object or the subcommand's JSON dict.

Each goes through the same validation as the command line (``solvers.app.spec``,
``solvers.app.validate``, the subcommand's section) and the same engine, so ``to_dict()`` of a
result is the subcommand's JSON.
"""
from __future__ import annotations

import time

from solvers.api.inputs import SpecError, as_spec, user_errors
from solvers.api.results import CompareResult, DeriveResult, SimulateResult, SolveResult

__all__ = ["load_spec", "solve", "simulate", "compare", "linear", "plateau", "asymptotic",
           "bayes", "kernel", "plrf", "derive"]


def load_spec(spec, sections: str = "any"):
    """Validate a spec without running it: a dict (the TOML schema), a path or a Spec.

    Every optional section of the common schema is accepted (``[simulate]``, ``[linear]``,
    ``[plateau]``, ``[asymptotic]``, ``[sweep]``); the functions that run a spec check theirs.
    Raises :class:`SpecError` with the command line's one-line message.

    Examples
    --------
    >>> from solvers import load_spec, SpecError
    >>> s = load_spec({"data": {"L": 4, "beta": 1.0, "N": 64},
    ...                "training": {"eta": 0.5}, "solve": {"alpha_max": 10}})
    >>> s.data.L, s.training.eta
    (4, Fraction(1, 2))
    >>> try:
    ...     load_spec({"data": {"L": 4, "beta": 1.0, "N": 64},
    ...                "training": {"eta": -0.5}, "solve": {"alpha_max": 10}})
    ... except SpecError as e:
    ...     print(e)
    <spec>: [training] eta = -0.5 must be > 0
    """
    return as_spec(spec, sections)


def _float_progress(progress, total):
    """(callback for the integrator, closer): True -> a tqdm bar like the command line's;
    a callable gets α as a plain float."""
    if progress is None or progress is False:
        return None, lambda: None
    if progress is True:
        from solvers.app.cli.common import progress_bar
        bar, tick = progress_bar(total, "solve")
        return tick, bar.close
    if not callable(progress):
        raise TypeError(f"progress must be None, True or a callable(alpha), got {progress!r}")

    def tick(t):
        progress(float(t.mid()) if hasattr(t, "mid") else float(t))
    return tick, lambda: None


def solve(spec, *, progress=None) -> SolveResult:
    """Integrate the order-parameter ODEs of a spec (``scaling-odes solve``).

    Parameters
    ----------
    spec : dict, str or path, or Spec
        The TOML schema as a dict, a TOML file, or a parsed spec.  A ``[simulate]`` section
        is allowed (and not used).
    progress : None, True or callable
        True shows a progress bar; a callable is called with α (a float) as the
        integration advances.

    Returns
    -------
    SolveResult
        ``alpha``, ``eps_g`` (float64), ``R1``, ``Q1``, ``meta``, ``exact("eps_g")``,
        ``to_xarray()``, ``plot()``, ``to_dict()`` / ``to_json()`` (the CLI's JSON).
        The output grid is ``[solve]``'s; it need not start at 0 (the integration always
        starts at α = 0 from the initial condition, and the requested points are reported).

    Raises
    ------
    SpecError
        Bad input, with the command line's one-line message.
    PrecisionLost
        The requested digits could not be verified at the given ``dps``.

    Examples
    --------
    >>> from solvers import solve
    >>> r = solve({"model": {"K": 2, "M": 2},
    ...            "data": {"L": 4, "beta": 1.0, "N": 64},
    ...            "training": {"eta": 0.5, "sigma_J": 0.1, "seed": 3},
    ...            "solve": {"alphas": [1, 10], "basis": "modes",
    ...                      "dps": "float64", "digits": 8}})
    >>> r.alpha, r.eps_g.dtype, r.R1.shape
    (array([ 1., 10.]), dtype('float64'), (2, 2, 2))
    >>> bool(r.eps_g[-1] < r.eps_g[0])
    True
    """
    from solvers.app.solve import solve_spec
    spec = as_spec(spec, "solve")
    tick, close = _float_progress(progress, spec.solve.alpha_grid()[-1])
    try:
        with user_errors():
            return SolveResult(solve_spec(spec, progress=tick))
    finally:
        close()


def simulate(spec, *, progress: bool = False) -> SimulateResult:
    """Finite-N online SGD of a spec (``scaling-odes simulate``) on the ``[solve]`` grid.

    ``training.init`` must be "random"; the optional ``[simulate]`` section chooses seeds,
    threads (``n_jobs``), the input generator, trainable directions and held-out estimates.
    ``progress=True`` shows the simulator's progress bar.  The recorded α are steps / N with
    steps = round(α N).

    Examples
    --------
    >>> from solvers import simulate
    >>> r = simulate({"data": {"L": 4, "beta": 1.0, "N": 64},
    ...               "training": {"eta": 0.5, "sigma_J": 0.1, "seed": 3},
    ...               "solve": {"alpha_max": 10, "n_points": 3, "spacing": "linear"},
    ...               "simulate": {"seeds": [3, 4], "n_jobs": 1}})
    >>> r.alpha, r.seeds, r.eps_g_runs.shape
    (array([ 0.,  5., 10.]), [3, 4], (2, 3))
    """
    from solvers.app.cli.simulate import simulate_spec
    spec = as_spec(spec, "simulate")
    with user_errors():
        return SimulateResult(simulate_spec(spec, progress=bool(progress)))


def compare(spec, *, progress: bool = False) -> CompareResult:
    """ODE theory against simulation for one spec (``scaling-odes compare``).

    The simulation runs on the ``[solve]`` grid (seeds from ``[simulate]``, default
    ``training.seed``); the ODEs are solved once per simulated seed, for that seed's own
    realisation (the same teacher and initial student as the simulator draws), at the α the
    simulator recorded.
    ``rms_deviation`` is the RMS over seeds and α of (ε_sim − ε_theory)/ε_theory, compared
    with ``finite_size_scale`` = 3/√N (``within``); see :mod:`solvers.app.compare` for why
    a relative measure and that scale.

    Examples
    --------
    >>> from solvers import compare
    >>> c = compare({"data": {"L": 4, "beta": 1.0, "N": 256},
    ...              "training": {"eta": 0.5, "sigma_J": 0.1, "seed": 0},
    ...              "solve": {"alpha_max": 10, "n_points": 21, "spacing": "linear",
    ...                        "basis": "modes", "dps": "float64", "digits": 8}})
    >>> c.finite_size_scale, c.within
    (0.1875, True)
    >>> c.theory.eps_g.shape == c.simulation.eps_g.shape == (21,)
    True
    """
    from solvers.app.compare import compare_spec
    spec = as_spec(spec, "compare")
    with user_errors():
        return CompareResult(compare_spec(spec, progress=bool(progress)))


# -- thin wrappers: the other subcommands' JSON as a dict --------------------------------------

def linear(spec, what: str = "curve") -> dict:
    """``scaling-odes linear curve|window|feature-scaling`` (linear activation, K = M = 1):
    the subcommand's JSON as a dict.

    Examples
    --------
    >>> from solvers import linear
    >>> out = linear({"model": {"activation": "linear", "K": 1, "M": 1},
    ...               "data": {"L": 4, "beta": 1.0}, "training": {"eta": 0.1,
    ...               "init": "expected"}, "solve": {"alphas": [0, 10], "digits": 10}})
    >>> out["alpha"], round(out["eps_g"][0], 6)
    ([0.0, 10.0], 0.50005)
    """
    from solvers.app.cli import linear as cli
    spec = as_spec(spec, "linear")
    with user_errors():
        if what not in ("curve", "window", "feature-scaling"):
            raise ValueError(f"what = {what!r} must be 'curve', 'window' or 'feature-scaling'")
        options = cli.checked_options(spec, what)
        if what == "curve":
            return cli.curve_result(spec, options["route"])
        if what == "window":
            return cli.window_result_of(spec)
        if what == "feature-scaling":
            from solvers.theory.feature_scaling import feature_scaling_result
            return feature_scaling_result(spec, options=options)
    raise ValueError(f"what = {what!r} must be 'curve', 'window' or 'feature-scaling'")


def plateau(spec) -> dict:
    """``scaling-odes plateau`` (erf, K = M): the symmetric plateau's JSON as a dict
    (optional ``[plateau]`` section: dps, alpha0, escape_fraction)."""
    return _plateau_family(spec, "plateau")


def asymptotic(spec) -> dict:
    """``scaling-odes asymptotic`` (erf, K = M): the linearisation at perfect learning."""
    return _plateau_family(spec, "asymptotic")


def floor(spec) -> dict:
    """``scaling-odes floor``: the long-time ε_g of a variant with label noise or weight decay
    (the fixed point of its ODEs), its slowest relaxation rate, and the linear-response
    estimate where it applies."""
    return _plateau_family(spec, "floor")


def _plateau_family(spec, which):
    from solvers.app.cli import plateau as cli
    from solvers.app.validate import check_plateau
    spec = as_spec(spec, which)
    started = time.perf_counter()
    try:
        check_plateau(spec, which, cli.plateau_section(spec, which))
    except ValueError as e:          # worded as the command line words it
        raise SpecError(" ".join(f"{spec.path}: {e}".split())) from None
    with user_errors():
        out = {"plateau": cli.plateau_result, "asymptotic": cli.asymptotic_result,
               "floor": cli.floor_result}[which](spec)
        out["meta"] = cli._meta(spec, started)
        cli._check_finite(out)
    return out


def bayes(spec, what: str = "curve") -> dict:
    """``scaling-odes bayes [transitions|limit]``: the Bayes-optimal baseline's JSON.

    ``spec``: a dict with a ``[bayes]`` table or a TOML path (see :mod:`solvers.app.cli.bayes`).

    Examples
    --------
    >>> from solvers import bayes
    >>> out = bayes({"bayes": {"activation": "cubic", "d": 50, "n_over_d": [1, 100]}})
    >>> len(out["eps_bo"]), bool(out["eps_bo"][1] < out["eps_bo"][0])
    (2, True)
    """
    from solvers.app.cli import bayes as cli
    doc, name = _document(spec)
    with user_errors():
        st, sec = cli.load_document(doc, name)
        if what == "curve":
            cli._need_points(sec, name)
            from solvers.theory.bayes import curve
            return curve(st, n_over_d=sec["n_over_d"], alpha=sec["alpha"],
                         selection=sec["selection"])
        if what == "transitions":
            from solvers.theory.bayes import transitions
            return transitions(st, sec["features"])
        if what == "limit":
            cli._need_points(sec, name)
            from solvers.theory.bayes import limit
            return limit(st, alpha=sec["alpha"], n_over_d=sec["n_over_d"],
                         completion=sec["completion"])
    raise ValueError(f"what = {what!r} must be 'curve', 'transitions' or 'limit'")


def kernel(spec, mc: bool = False) -> dict:
    """``scaling-odes kernel`` (``mc=True``: ``kernel-mc``): kernel / GP learning curves.

    ``spec``: a dict with a ``[kernel]`` table (and ``[mc]``) or a TOML path
    (see :mod:`solvers.app.cli.kernel`).

    Examples
    --------
    >>> from solvers import kernel
    >>> out = kernel({"kernel": {"a": 2.0, "M": 200, "ridge": 0.01, "noise": 0.01,
    ...                          "P": [16, 64], "methods": ["eig"]}})
    >>> out["P"], bool(out["eps_g"]["eig"][1] < out["eps_g"]["eig"][0])
    ([16, 64], True)
    """
    from solvers.app.cli import kernel as cli
    doc, name = _document(spec)
    with user_errors():
        kspec, k, mcsec = cli.load_document(doc, name, with_mc=mc)
        res = cli.kernel_result(kspec, k)
        if mc:
            from solvers.theory.kernel import kernel_mc
            out = kernel_mc(kspec, k["P"], ridge=k["ridge"], noise=k["noise"],
                            trials=mcsec["trials"], seed=mcsec["seed"])
            res["mc"] = {"mean": out["mean"], "sem": out["sem"]}
        return res


def plrf(spec, what: str = "curve") -> dict:
    """``scaling-odes plrf curve|frontier|simulate``: power-law random features under one-pass
    SGD (a dict with a ``[plrf]`` table, or a TOML path; see :mod:`solvers.app.cli.plrf`).

    Examples
    --------
    >>> from solvers import plrf
    >>> out = plrf({"plrf": {"alpha": 1.0, "beta": 0.7, "v": 200, "d": 50, "gamma": 0.3,
    ...                      "steps": [0, 10, 1000]}})
    >>> out["r"], out["loss"][2] < out["loss"][1] < out["loss"][0]
    ([0, 10, 1000], True)
    """
    from solvers.app.cli import plrf as cli
    if what not in cli.VERBS:
        raise ValueError(f"what = {what!r} must be one of {', '.join(cli.VERBS)}")
    doc, name = _document(spec)
    with user_errors():
        kw = cli.load_document(doc, name, what)
        try:
            return cli.run(kw, what)
        except cli.CliError as exc:
            raise SpecError(str(exc)) from None


def derive(spec, *, closed: bool = False, write: bool = False) -> DeriveResult:
    """``scaling-odes derive``: the ODEs of the spec's model, level-generic (or ``closed`` at
    the spec's L, small systems only); ``write`` also prints the solver module into the cache.

    Sized before any work (a large K, M or, with ``closed``, L·K·M raises SpecError).  SymPy
    is imported here, not by ``import solvers``.

    Examples
    --------
    >>> from solvers import derive
    >>> d = derive({"model": {"activation": "erf", "K": 1, "M": 1},
    ...             "data": {"L": 2, "beta": 1.0}, "training": {"eta": 0.5},
    ...             "solve": {"alpha_max": 10}})
    >>> d["state"], d["tag"]
    (['R_11', 'Q_11'], 'erf_K1_M1')
    >>> print(d.text().splitlines()[0])
    # erf K=1 M=1 (erf_K1_M1)
    >>> "aligned" in d.latex()
    True
    """
    from solvers.app.cli import derive as cli
    spec = as_spec(spec, "derive")
    with user_errors():
        return DeriveResult(cli.derive_result(spec, closed=closed, write=write))


def _document(spec):
    """(TOML document, name for messages) of a dict or a path (sections of other theories)."""
    import os

    from solvers.api.inputs import DICT_NAME, _plain
    from solvers.app.spec import read_document
    if isinstance(spec, dict):
        return _plain(spec), DICT_NAME
    if isinstance(spec, (str, os.PathLike)):
        return read_document(spec), str(spec)
    raise TypeError(f"a spec here is a dict or a path to a TOML file, got {type(spec).__name__}")

