"""The one check of a whole-number argument that ``qkv`` uses everywhere (sizes, counts, positions).

Ints and integer-like objects (NumPy integers) pass and come back as a Python ``int``; a bool or a float is a
``TypeError``, a number out of range a ``ValueError``, each naming the argument. D2L checks no arguments; we check
each once, here, so that the modules students read keep to their equations.
"""

from __future__ import annotations

import operator

__all__ = ["positive_int", "int_in"]


def int_in(value, name: str, low: int, high: int | None = None) -> int:
    """``value`` as an int with ``low <= value`` (and ``value <= high`` when ``high`` is given)."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, got a bool ({value!r})")
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}") from None
    if value < low or (high is not None and value > high):
        bound = f"at least {low}" if high is None else f"between {low} and {high}"
        raise ValueError(f"{name} must be {bound}, got {value}")
    return value


def positive_int(value, name: str) -> int:
    """``value`` as an int >= 1 (a size, a count): ``int_in(value, name, 1)``."""
    return int_in(value, name, 1)
