"""Numeric layer: integrators, exact solutions, simulators and the command line."""

__version__ = "0.1.0"
