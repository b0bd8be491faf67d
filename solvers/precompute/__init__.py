"""Generators of numeric constants: fits made once at high precision (mpmath) and printed as
float constants into ``solvers/generated/`` by ``scaling-odes regenerate`` (``--check`` compares
them with what the fits give now).  Nothing here runs when a computation runs; the numbers
belong to the numeric layer, not to the symbolic derivations of ``derive/``."""
