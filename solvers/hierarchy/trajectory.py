"""The result of one run of the order-parameter ODEs: what the runs return and the verifier
reads (``Trajectory``), in a module of its own so that reading a result is neither running
(:mod:`solvers.hierarchy.odes`) nor checking (:mod:`solvers.hierarchy.verify`)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Trajectory:
    alpha: list
    eps_g: list            # numbers of the run's type (mpf / arb midpoints / float)
    R1: np.ndarray         # (n_alpha, K, M), float64 for output
    Q1: np.ndarray         # (n_alpha, K, K)
    basis: str
    arithmetic: str
    dps: int
    stats: dict = field(default_factory=dict)
    states: list = field(default_factory=list)   # (L, N_STATE) arrays in the run's basis
    # a trained readout: v_1..v_K at every point (numbers of the run's type), else empty
    readouts: list = field(default_factory=list)

    @property
    def v(self) -> np.ndarray | None:
        """(n_alpha, K) float64 readouts of a trained-readout run, else None."""
        if not self.readouts:
            return None
        return np.array([[float(midpoint(x)) for x in r] for r in self.readouts])

    def eps_float(self) -> np.ndarray:
        return np.array([float(midpoint(e)) for e in self.eps_g])

    def drop_first(self, n: int) -> "Trajectory":
        """The trajectory without its first ``n`` points (an α = 0 added for the start)."""
        if n == 0:
            return self
        return Trajectory(self.alpha[n:], self.eps_g[n:], self.R1[n:], self.Q1[n:], self.basis,
                          self.arithmetic, self.dps, self.stats,
                          self.states[n:] if self.states else self.states,
                          self.readouts[n:] if self.readouts else self.readouts)


def midpoint(x):
    """The midpoint of an arb ball; any other number as it is."""
    return x.mid() if hasattr(x, "mid") else x
