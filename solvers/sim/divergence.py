"""When a finite-N SGD run has diverged, and which knob to blame.

A run has diverged when its order parameters are not finite, or when a student field has grown
far beyond every scale the problem sets:

    max_i Q_ii  >  GROWTH * scale,   scale = max(1, max_n T_nn) * max(1, r^2),

with T and Q the level-1 overlaps (the variances of the teacher's and the student's fields) and
r = sum_n |u_n| / sum_i |v_i| the ratio of the readouts (a homogeneous student with small
readouts needs proportionally larger fields to match its teacher).  GROWTH = 1e6: fields a
thousand times the teacher's.  A start already past the bound (a huge sigma_J) is refused
before the first step.  No run that learns gets there: it moves Q towards T (or
towards r^2 T).  What does get there is the instability of SGD at a too large step, which grows
Q geometrically (or by the eta^2 kicks of the label noise): an erf student is then saturated --
g'(x) = exp(-x^2/2) is exactly zero in float64 for |x| > 38.6, so its weights are frozen and its
eps_g sits at the saturation value, a sane-looking number that means nothing -- and a
polynomial or linear one has eps_g growing like a power of Q.  (Above its stability bound an
erf student's Q grows slowly, like a power of alpha, as the ODEs say; such a run is reported
as long as it stays below the bound.)  The check runs at the record
points (and the kernels stop at the first non-finite weight), never inside the step loop.

The message names the knobs that apply: ``[training] eta`` always (a smaller step always
cures the instability), ``noise`` when the label-noise variance is at least the initial clean
error (it then dominates the eta^2 kicks), ``sigma_J`` when the initial student's fields
already exceed the teacher's scale a hundredfold; and the alpha where it was seen.
"""
from __future__ import annotations

import numpy as np

GROWTH = 1e6
# sigma_J is named when the start's fields are this far above the teacher's scale
LARGE_START = 100.0


class SimulationDiverged(FloatingPointError):
    """A diverged run (one line naming the knobs and the alpha)."""


class DivergenceCheck:
    """The bound of one run, set from its initial overlaps; :meth:`check` raises
    :class:`SimulationDiverged` at a record point past it."""

    def __init__(self, *, T1, Q1_0, eta, sigma_J, v, u, noise=0.0, eps0=None):
        t = float(np.max(np.diagonal(T1))) if np.size(T1) else 0.0
        q0 = float(np.max(np.diagonal(Q1_0)))
        v, u = np.abs(np.asarray(v, dtype=float)), np.abs(np.asarray(u, dtype=float))
        ratio = float(u.sum() / v.sum()) if v.sum() > 0 else 1.0
        self.scale = max(1.0, t) * max(1.0, ratio ** 2)
        self.bound = GROWTH * self.scale
        self.t, self.q0 = max(t, 1e-300), q0
        self.eta, self.sigma_J, self.noise = eta, sigma_J, float(noise)
        self.eps0 = eps0

    def check_start(self, N: int) -> None:
        """Refuse a start whose fields are already past the bound (sigma_J)."""
        if not (np.isfinite(self.q0) and self.q0 <= self.bound):
            raise SimulationDiverged(
                f"the initial student is beyond the divergence bound: max Q_ii(0) = "
                f"{self.q0:.3g} > {GROWTH:.0e} times the problem's scale {self.scale:.3g}; "
                f"reduce [training] sigma_J = {self.sigma_J:g}")

    def check(self, step: int, N: int, Q1, R1=None, v=None) -> None:
        """Raise SimulationDiverged if the overlaps at ``step`` are non-finite or past the bound."""
        arrays = [Q1] + [a for a in (R1, v) if a is not None]
        finite = all(np.all(np.isfinite(a)) for a in arrays)
        q = float(np.max(np.diagonal(Q1))) if finite else float("nan")
        if finite and q <= self.bound:
            return
        raise self.error(step, N, q)

    @staticmethod
    def non_finite(st, step: int) -> SimulationDiverged:
        """The error of the reference loop (``naive_simulate``), which checks its fields."""
        return SimulationDiverged(f"the simulation diverged: the weights became non-finite at "
                                  f"alpha = {step / st.N:g} (step {step}); reduce [training] "
                                  f"eta = {st.eta:g}")

    def error(self, step: int, N: int, q: float = float("nan")) -> SimulationDiverged:
        at = f"at alpha = {step / N:g} (step {step})"
        what = (f"the weights became non-finite {at}" if not np.isfinite(q) else
                f"max Q_ii = {q:.3g} grew past {GROWTH:.0e} times the problem's scale "
                f"{self.scale:.3g} {at}")
        knobs = [f"[training] eta = {self.eta:g}"]
        eps0 = self.eps0() if callable(self.eps0) else self.eps0
        if self.noise > 0 and (eps0 is None or not np.isfinite(eps0) or self.noise >= eps0):
            knobs.append(f"noise = {self.noise:g}")
        if np.isfinite(self.q0) and self.q0 > LARGE_START * self.t:
            knobs.append(f"sigma_J = {self.sigma_J:g}")
        return SimulationDiverged(
            f"the simulation diverged: {what}; reduce "
            + (" or ".join(knobs) if len(knobs) < 3 else ", ".join(knobs[:-1]) + " or "
               + knobs[-1]))
