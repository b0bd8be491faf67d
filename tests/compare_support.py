"""The family's theory-against-simulation runs shared by the ODE-vs-SGD tests: one spec of a
variant (K = M = 2, L = 4, α ≤ 10 on 21 points, float64 modes) and one memo of ``compare``
per spec, so that the tests of one module run each comparison once."""
import json

import solvers


def variant_spec(model: dict, training: dict, N: int, seeds) -> dict:
    return {"model": {"K": 2, "M": 2, **model},
            "data": {"L": 4, "beta": 1.0, "N": N},
            "training": {"eta": 0.5, "sigma_J": 0.1, "seed": seeds[0], **training},
            "solve": {"alpha_max": 10, "n_points": 21, "spacing": "linear",
                      "dps": "float64", "digits": 8},
            "simulate": {"seeds": list(seeds), "n_jobs": 1}}


_compared = {}


def compared(spec: dict):
    """``solvers.compare(spec)``, run once per distinct spec."""
    key = json.dumps(spec, sort_keys=True)
    if key not in _compared:
        _compared[key] = solvers.compare(spec)
    return _compared[key]
