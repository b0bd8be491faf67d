"""The contract of a printed system, written down once: what a solver module and a Taylor-jets
module must define, whether checked in (``solvers/generated``) or printed on demand into the
cache (:mod:`solvers.core.registry`).  :class:`solvers.core.assembly.System` and the Taylor
integrator rely on nothing else; tests/test_generated_contract.py checks every checked-in
module and one printed on demand against it.

Numbers of a module are in the caller's number type: every function takes the number context
``ctx`` it runs in (solvers.core.numbers; System passes its own when a caller gives none); ``v1`` is the level-1 state in ``STATE`` order (then
v_1..v_K for a trained readout), ``t1`` the level-1 teacher in ``TEACHER`` order.
"""
from __future__ import annotations

import inspect
from typing import Protocol, runtime_checkable


@runtime_checkable
class SolverModule(Protocol):
    """``derive.codegen.module_printer.render(key)``: the level-1 coefficients of the hierarchy.

    At level l the right-hand side of state entry s is Σ_t a[s, t] X^(l+1)_t (+ f_s ν_{l+1} at
    order 2; t runs over the state then the teacher): ``coefficients`` returns the nonzero a
    entries in ``A_INDEX`` order ((s, t) pairs) then the f entries in ``F_INDEX`` order (state
    positions); ``coefficient_derivatives`` their
    derivatives by v1 (``DA_INDEX``, ``DF_INDEX``); ``noise_coefficients`` the label-noise term
    (``FN_INDEX``, then ``DFN_INDEX``); ``eps_g`` the generalisation error.  A trained module
    also sets ``TRAINED = True``, ``N_READOUT = K`` and defines ``readout_rates(v1, t1, ctx)``.
    """

    ACTIVATION: str
    K: int
    M: int
    STATE: tuple
    N_STATE: int
    TEACHER: tuple
    N_TEACHER: int
    A_INDEX: tuple
    F_INDEX: tuple
    DA_INDEX: tuple
    DF_INDEX: tuple
    FN_INDEX: tuple
    DFN_INDEX: tuple

    def coefficients(self, v1, t1, eta, ctx=None): ...

    def coefficient_derivatives(self, v1, t1, eta, ctx=None): ...

    def noise_coefficients(self, v1, t1, ctx=None): ...

    def eps_g(self, v1, t1, ctx=None): ...


@runtime_checkable
class JetsModule(Protocol):
    """``derive.codegen.jet_printer.render_jets(key)``: Taylor-series recurrences of the level-1
    coefficients along a path v1(α) = Σ_k v1_k α^k.  ``jets_start`` gives order 0 of all ``N_OUTPUTS``
    outputs and the jet state of its ``N_NODES`` nodes; ``jets_extend(state, v1k, k)`` appends
    order k and returns the outputs' coefficient k; ``jets_extend_a`` the same for the a outputs
    (and a trained readout's rates) only, the others returned as 0.  The outputs: the a
    entries, the f entries, the label-noise coefficients fn (as ``noise_coefficients``), then a
    trained readout's rates (as ``readout_rates``)."""

    ACTIVATION: str
    K: int
    M: int
    N_NODES: int
    N_OUTPUTS: int

    def jets_start(self, v1, t1, eta, ctx): ...

    def jets_extend(self, state, v1k, k): ...

    def jets_extend_a(self, state, v1k, k): ...


_TYPES = {"str": str, "int": int, "tuple": tuple}


def violations(module, protocol) -> list[str]:
    """What ``module`` lacks or gets wrong against ``protocol`` (empty when it conforms): each
    constant present with its annotated type, each function present with the protocol's
    parameters (names and order, ``self`` aside)."""
    out = []
    for name, kind in protocol.__annotations__.items():
        if not hasattr(module, name):
            out.append(f"missing {name}")
        elif not isinstance(getattr(module, name), _TYPES[kind]):
            out.append(f"{name} is {type(getattr(module, name)).__name__}, not {kind}")
    for name, want in vars(protocol).items():
        if name.startswith("_") or not inspect.isfunction(want):
            continue
        if not callable(getattr(module, name, None)):
            out.append(f"missing function {name}")
            continue
        expected = list(inspect.signature(want).parameters)[1:]
        got = list(inspect.signature(getattr(module, name)).parameters)
        if got != expected:
            out.append(f"{name}{tuple(got)} instead of {name}{tuple(expected)}")
    return out
