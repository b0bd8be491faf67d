"""Symbolic layer: specs -> exact SymPy expressions (no floating point anywhere here)."""
