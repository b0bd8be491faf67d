"""The rms relative deviation of a curve from its reference: the one measure by which
``compare`` and the gallery judge a simulation against theory."""
from __future__ import annotations

import numpy as np


def rms_relative(x, ref, axis=None):
    """sqrt(mean(((x - ref) / ref)^2)) over ``axis`` (all by default); a float, or an array when
    an axis is kept.  NaN for an empty selection (nothing was compared)."""
    x, ref = np.asarray(x, dtype=float), np.asarray(ref, dtype=float)
    if x.size == 0:
        return float("nan")
    out = np.sqrt(np.mean(((x - ref) / ref) ** 2, axis=axis))
    return float(out) if np.ndim(out) == 0 else out
