"""Solver modules printed by derive/codegen.py.  Do not edit; run `scaling-odes regenerate`."""
