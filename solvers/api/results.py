"""Result objects of the Python API: NumPy arrays for computing, the command line's JSON for
keeping.

Every result holds the dict the matching subcommand writes as JSON (``to_dict()``, a deep
copy; ``to_json()`` the same text as ``--json``) and exposes its curves as float64 arrays.
ε_g is a float64 array even when the run carried more digits; the decimal strings are kept and
returned by ``exact("eps_g")`` (``eps_g_exact``).
"""
from __future__ import annotations

import copy
import json

import numpy as np

__all__ = ["Result", "SolveResult", "SimulateResult", "CompareResult", "DeriveResult"]


def _floats(values) -> np.ndarray:
    """float64 array of JSON numbers or decimal strings (float() rounds a string correctly)."""
    return np.array([float(v) for v in values], dtype=np.float64)


class Result:
    """A computed result: ``to_dict()`` / ``to_json()`` as on the command line, ``meta``."""

    def __init__(self, data: dict):
        self._data = data

    def to_dict(self) -> dict:
        """The command line's JSON object (a deep copy)."""
        return copy.deepcopy(self._data)

    def to_json(self, indent: int | None = None) -> str:
        """The JSON text: ``indent=None`` is what ``--json`` prints, ``indent=1`` what ``-o``
        writes (without the final newline)."""
        return json.dumps(self._data, indent=indent)

    @property
    def meta(self) -> dict:
        """Run metadata (version, precision, timing, …): a copy."""
        return copy.deepcopy(self._data.get("meta", {}))

    def keys(self):
        return self._data.keys()

    def __getitem__(self, key):
        return copy.deepcopy(self._data[key])

    def __repr__(self) -> str:
        keys = ", ".join(k for k in self._data if k != "meta")
        return f"<{type(self).__name__}: {keys}>"


class _Curve(Result):
    """Shared by solve and simulate: α, ε_g, R1, Q1 and a log-log plot."""

    _label = "eps_g"

    @property
    def alpha(self) -> np.ndarray:
        return _floats(self._data["alpha"])

    @property
    def eps_g(self) -> np.ndarray:
        """ε_g at each α, float64."""
        return _floats(self._data["eps_g"])

    @property
    def R1(self) -> np.ndarray:
        """Level-1 student-teacher overlaps, shape (n_alpha, K, M)."""
        return np.asarray(self._data["R1"], dtype=np.float64)

    @property
    def Q1(self) -> np.ndarray:
        """Level-1 student-student overlaps, shape (n_alpha, K, K)."""
        return np.asarray(self._data["Q1"], dtype=np.float64)

    @property
    def v(self) -> np.ndarray | None:
        """The learned student readouts, shape (n_alpha, K), with ``[model] readout =
        "trained"``; None for fixed readouts."""
        return np.asarray(self._data["v"], dtype=np.float64) if "v" in self._data else None

    def to_xarray(self):
        """An ``xarray.Dataset``: ``eps_g`` over ``alpha``, ``R1`` over (alpha, i, n), ``Q1``
        over (alpha, i, j); ``meta`` in the attributes (nested values as JSON text)."""
        import xarray as xr
        data = {"eps_g": ("alpha", self.eps_g), "R1": (("alpha", "i", "n"), self.R1),
                "Q1": (("alpha", "i", "j"), self.Q1)}
        ds = xr.Dataset(data, coords={"alpha": self.alpha})
        ds.attrs.update(_attrs(self._data.get("meta", {})))
        return ds

    def plot(self, ax=None, **style):
        """ε_g against α on log-log axes (α > 0); returns the Axes."""
        ax = _axes(ax)
        a, e = self.alpha, self.eps_g
        pos = a > 0
        ax.loglog(a[pos], e[pos], **{"label": self._label, **style})
        ax.set_xlabel(r"$\alpha$")
        ax.set_ylabel(r"$\epsilon_g$")
        return ax


class SolveResult(_Curve):
    """The ODE solution of a spec (``scaling-odes solve``).

    Attributes: ``alpha``, ``eps_g`` (float64), ``R1`` (n, K, M), ``Q1`` (n, K, K), ``meta``
    (basis, arithmetic, dps, verified ``agreement_digits``, wall time, …); ``exact("eps_g")``
    / ``eps_g_exact``: ε_g as decimal strings with the ``digits`` the run verified.
    """

    _label = "ODE theory"

    def exact(self, name: str = "eps_g") -> list[str]:
        """Decimal strings of ``name`` with every digit the run verified (``[solve] digits``).

        Only ε_g carries more than float64's digits (R1, Q1 are float64 in the JSON).  With
        ``digits > 15`` these are the JSON's strings; otherwise the float64 values printed
        with ``digits`` significant digits.
        """
        if name != "eps_g":
            raise ValueError(f"exact values exist for 'eps_g' only (the JSON holds {name!r} "
                             f"as float64)")
        values = self._data["eps_g"]
        if values and isinstance(values[0], str):
            return list(values)
        import mpmath
        digits = int(self._data["meta"]["digits"])
        with mpmath.workdps(max(digits, 17) + 5):
            return [mpmath.nstr(mpmath.mpf(v), digits, strip_zeros=False) for v in values]

    @property
    def eps_g_exact(self) -> list[str]:
        """``exact("eps_g")``."""
        return self.exact("eps_g")


class SimulateResult(_Curve):
    """Finite-N online SGD of a spec (``scaling-odes simulate``).

    Attributes (first seed): ``alpha`` (the α recorded: steps / N), ``eps_g``, ``R1``, ``Q1``,
    ``eps_g_holdout`` (or None), ``init`` (mode overlaps at α = 0, float64 arrays: "R", "Q",
    "T"); over seeds: ``seeds``, ``eps_g_runs`` (n_seeds, n_alpha), ``eps_g_mean``,
    ``eps_g_std``, ``runs`` (one SimulateResult per seed).
    """

    @property
    def _label(self):
        return f"simulation (seed {self._data['meta']['seed']})"

    @property
    def eps_g_holdout(self):
        h = self._data.get("eps_g_holdout")
        return None if h is None else _floats(h)

    @property
    def init(self) -> dict:
        """Mode overlaps at α = 0 ("R": (L, K, M), "Q", "T") as float64 (the JSON holds them
        as the exact decimal strings of these float64 values)."""
        return {k: np.vectorize(float, otypes=[np.float64])(np.array(v, dtype=object))
                for k, v in self._data["init"]["modes"].items()}

    @property
    def runs(self) -> list["SimulateResult"]:
        ens = self._data.get("ensemble")
        return [SimulateResult(r) for r in ens["runs"]] if ens else [self]

    @property
    def seeds(self) -> list[int]:
        return [r._data["meta"]["seed"] for r in self.runs]

    @property
    def eps_g_runs(self) -> np.ndarray:
        return np.array([r.eps_g for r in self.runs])

    @property
    def eps_g_mean(self) -> np.ndarray:
        return self.eps_g_runs.mean(axis=0)

    @property
    def eps_g_std(self) -> np.ndarray:
        """Standard deviation over seeds (ddof = 1); zeros for one seed."""
        e = self.eps_g_runs
        return e.std(axis=0, ddof=1) if len(e) > 1 else np.zeros(e.shape[1])

    def to_xarray(self):
        """As :meth:`SolveResult.to_xarray` for the first seed, plus ``eps_g_runs`` over
        (seed, alpha)."""
        ds = super().to_xarray()
        ds["eps_g_runs"] = (("seed", "alpha"), self.eps_g_runs)
        ds = ds.assign_coords(seed=self.seeds)
        if self.eps_g_holdout is not None:
            ds["eps_g_holdout"] = ("alpha", self.eps_g_holdout)
        return ds

    def plot(self, ax=None, **style):
        """Points of the first seed, or mean points and a ±1 std band over several seeds."""
        if len(self.runs) == 1:
            return super().plot(ax, **{"marker": "o", "ls": "", "ms": 3, **style})
        ax = _axes(ax)
        a, m, s = self.alpha, self.eps_g_mean, self.eps_g_std
        pos = a > 0
        ax.fill_between(a[pos], np.maximum(m - s, m * 1e-3)[pos], (m + s)[pos], alpha=0.3,
                        lw=0, label=f"±1 std ({len(self.runs)} seeds)")
        ax.loglog(a[pos], m[pos], **{"marker": "o", "ls": "", "ms": 3,
                                     "label": "simulation mean", **style})
        ax.set_xlabel(r"$\alpha$")
        ax.set_ylabel(r"$\epsilon_g$")
        return ax


class CompareResult(Result):
    """ODE theory against simulation (``scaling-odes compare``).

    Attributes: ``alpha`` (the α the simulator recorded), ``theory`` (SolveResult at those α,
    realisation of the first seed), ``eps_g_theory_runs`` (the theory of every seed's
    realisation), ``simulation`` (SimulateResult), ``seeds``, ``rms_deviation`` (relative,
    each seed against its own realisation's theory, pooled),
    ``rms_deviation_per_seed``, ``rms_absolute``, ``finite_size_scale`` (3/√N), ``within``,
    ``judged_alpha_max`` (the last α these cover: the theory's end of learning, ε_g = 0, ends
    the relative comparison).  With ``[compare] restart_alpha``: ``restart_alpha`` (α0 as recorded), ``restart_alpha_grid``
    (the α ≥ α0) and ``eps_g_restart_runs`` (the ODE restarted from each seed's simulated state
    at α0); ``rms_deviation`` and ``within`` are then those of the restarted curves over α > α0
    (``self["restart"]["from_start"]``: the ODE from the initial weights over the same α).
    """

    @property
    def restart_alpha(self) -> float | None:
        r = self._data.get("restart")
        return None if r is None else float(r["alpha0"])

    @property
    def restart_alpha_grid(self) -> np.ndarray | None:
        r = self._data.get("restart")
        return None if r is None else _floats(r["alpha"])

    @property
    def eps_g_restart_runs(self) -> np.ndarray | None:
        """The restarted theory of each seed, (n_seeds, n_alpha >= alpha0) float64, or None."""
        r = self._data.get("restart")
        return None if r is None else np.array([_floats(e) for e in r["eps_g_runs"]])

    @property
    def alpha(self) -> np.ndarray:
        return _floats(self._data["alpha"])

    @property
    def theory(self) -> SolveResult:
        return SolveResult(self._data["theory"])

    @property
    def simulation(self) -> SimulateResult:
        return SimulateResult(self._data["simulation"])

    @property
    def seeds(self) -> list[int]:
        return list(self._data["meta"]["seeds"])

    @property
    def eps_g_theory_runs(self) -> np.ndarray:
        """The theory of each simulated seed's realisation, (n_seeds, n_alpha) float64."""
        ens = self._data.get("theory_ensemble")
        return np.array([_floats(r) for r in ens["eps_g_runs"]]) if ens else \
            self.theory.eps_g[None, :]

    rms_deviation = property(lambda self: float(self._data["rms_deviation"]))
    rms_absolute = property(lambda self: float(self._data["rms_absolute"]))
    # a trained readout: RMS of v_sim - v_theory over seeds, α and units (None otherwise)
    v_rms_absolute = property(lambda self: self._data.get("v_rms_absolute"))
    finite_size_scale = property(lambda self: float(self._data["finite_size_scale"]))
    within = property(lambda self: bool(self._data["within"]))
    judged_alpha_max = property(lambda self: float(self._data["judged_alpha_max"]))

    @property
    def rms_deviation_per_seed(self) -> np.ndarray:
        return np.asarray(self._data["rms_deviation_per_seed"], dtype=np.float64)

    def to_xarray(self):
        """``eps_g_theory`` and ``eps_g_sim`` over (seed, alpha); the deviation
        numbers and meta in the attributes."""
        import xarray as xr
        sim = self.simulation
        ds = xr.Dataset({"eps_g_theory": (("seed", "alpha"), self.eps_g_theory_runs),
                         "eps_g_sim": (("seed", "alpha"), sim.eps_g_runs)},
                        coords={"alpha": self.alpha, "seed": sim.seeds})
        ds.attrs.update(_attrs({k: self._data[k] for k in (
            "rms_deviation", "rms_absolute", "finite_size_scale", "within")}))
        ds.attrs.update(_attrs(self._data.get("meta", {})))
        return ds

    def plot(self, ax=None):
        """Theory line, simulation points (or mean and ±1 std band); returns the Axes."""
        from solvers.app.compare import plot_compare
        return plot_compare(self._data, _axes(ax))


class DeriveResult(Result):
    """The equations of a spec's model (``scaling-odes derive``).

    ``text()`` and ``latex()`` are what the command prints (plain text, a LaTeX ``aligned``
    block); a notebook shows the LaTeX (``_repr_latex_``).  Keys: ``model``, ``tag``,
    ``state``, ``equations`` (``lhs``, ``rhs_text``, ``rhs_latex``), ``eps_g``, ``module``,
    ``closed``, ``meta``.
    """

    def text(self) -> str:
        """The equations as text; each right-hand side is SymPy syntax."""
        from solvers.app.cli.derive import render_text
        return render_text(self._data)

    def latex(self) -> str:
        """The equations as one LaTeX ``aligned`` block."""
        from solvers.app.cli.derive import render_text
        return render_text(self._data, latex=True)

    def _repr_latex_(self) -> str:
        return "$$" + self.latex() + "$$"

    @property
    def module(self) -> str | None:
        """Path of the solver module (with ``write=True``), else None."""
        return self._data["module"]


def _axes(ax):
    if ax is None:
        import matplotlib.pyplot as plt
        _, ax = plt.subplots(figsize=(5.5, 4))
    return ax


def _attrs(meta: dict) -> dict:
    """netCDF-safe attributes: numbers and strings as they are, the rest as JSON text."""
    out = {}
    for k, v in meta.items():
        if isinstance(v, bool):
            out[k] = int(v)
        elif isinstance(v, (int, float, str)):
            out[k] = v
        elif v is None:
            out[k] = "null"
        else:
            out[k] = json.dumps(v)
    return out
