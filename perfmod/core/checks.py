"""Argument checks shared by every layer (clear ``ValueError`` messages naming the argument).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "positive_int",
]


def positive_int(name: str, value: Any) -> int:
    """``value`` as an int; ``ValueError`` naming ``name`` unless it is an integer >= 1."""
    try:
        ok = not isinstance(value, bool) and int(value) == value and value >= 1
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)
