"""The spectrum a spec describes (``[data]``: a power law or explicit eigenvalues), exact.

Its own module so that validation (``solvers.app.validate``) and the solve pipeline
(``solvers.app.solve``) can both use it without importing each other.
"""
from __future__ import annotations

from derive import spectra


def spectrum_of(spec) -> spectra.Spectrum:
    if spec.data.eigenvalues is not None:
        return spectra.explicit(spec.data.eigenvalues)
    return spectra.power_law(spec.data.L, spec.data.beta)
