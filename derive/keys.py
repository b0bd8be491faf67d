"""What names a derived system, without SymPy: the activation and the widths K, M.

Kept apart from :mod:`derive.hierarchy` so that the numeric layer can name systems (and lay out
their states) without importing the symbolic machinery.
"""
from __future__ import annotations

from dataclasses import dataclass

ACTIVATIONS = ("erf", "linear")


def check_activation(activation: str) -> str:
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {ACTIVATIONS}, got {activation!r}")
    return activation


@dataclass(frozen=True)
class SystemKey:
    """What a derived system depends on besides the spectrum."""

    activation: str
    K: int
    M: int

    def __post_init__(self):
        check_activation(self.activation)
        for name in ("K", "M"):
            v = getattr(self, name)
            if int(v) != v or v < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {v!r}")

    @property
    def tag(self) -> str:
        return f"{self.activation}_K{self.K}_M{self.M}"
