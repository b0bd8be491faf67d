"""Code generation: printing derived expressions into importable Python modules.

The models of the symbolic layer (``derive/``) produce exact SymPy expressions; this subpackage
turns them into source text: the module printer (one module per system, printed against a
number context), the Taylor-jet printer, and the tools they share (common subexpressions, term
order, exact derivatives, substitution, long sums).  Nothing is imported here, so that a model
importing one tool (the hierarchy uses the fast derivatives) does not load the printers.
"""
