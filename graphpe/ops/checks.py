"""Argument checks shared by every layer: each returns the value (normalized where that is
part of the contract) or raises the ``ValueError`` that names the argument and what it takes.

A bool is refused wherever an int is asked for (``True`` is an ``int`` to Python, never a
size or a count to a user).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Collection


class GraphRefusedError(ValueError):
    """An encoding cannot take a graph at its settings: the graph passes a size or cost limit
    (a dense kernel's ``max_nodes``, exact curvature's transport budget). The message names
    the limit and what to change. A grid (``graphpe compare``) records the cell as refused
    and goes on; any other error stops it."""


def _is_int(value: object) -> bool:
    return not isinstance(value, bool) and isinstance(value, numbers.Integral)


def check_positive_int(name: str, value: object) -> int:
    """``value`` as an int if it is an int >= 1."""
    if not _is_int(value) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return int(value)


def check_non_negative_int(name: str, value: object) -> int:
    """``value`` as an int if it is an int >= 0."""
    if not _is_int(value) or value < 0:
        raise ValueError(f"{name} must be a non-negative int, got {value!r}")
    return int(value)


def check_optional_positive_int(name: str, value: object) -> int | None:
    """None, or ``value`` as an int if it is an int >= 1."""
    if value is not None and (not _is_int(value) or value < 1):
        raise ValueError(f"{name} must be a positive int or None, got {value!r}")
    return None if value is None else int(value)


def check_size_limit(name: str, value: object) -> int:
    """A node-count threshold (``dense_max_nodes``, ``max_nodes``): an int >= 0."""
    if not _is_int(value) or value < 0:
        raise ValueError(f"{name} must be an int >= 0, got {value!r}")
    return int(value)


def check_flag(name: str, value: object) -> bool:
    """``value`` if it is True or False (a string such as ``"False"`` from a command line must
    not read as true)."""
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return value


def check_seed(seed: object, name: str = "seed") -> int | None:
    """``seed`` if it is an int (or None)."""
    if seed is not None and not _is_int(seed):
        raise ValueError(f"{name} must be an int or None, got {seed!r}")
    return None if seed is None else int(seed)


def check_choice(name: str, value: object, choices: Collection[object]) -> object:
    """``value`` if it is one of ``choices``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {tuple(choices)}, got {value!r}")
    return value


def check_number(name: str, value: object, low: float | None = None) -> float:
    """``value`` as a float if it is a finite real number (>= ``low`` where given)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(
            value) or (low is not None and value < low):
        bound = "" if low is None else f" >= {low:g}"
        raise ValueError(f"{name} must be a finite number{bound}, got {value!r}")
    return float(value)


def checked_fields(obj: object) -> dict[str, object]:
    """The fields of the dataclass instance ``obj``, each passed through the check its field
    declares (``metadata["check"]``, called as ``check(name, value)``): how the settings of
    transforms and encodings validate and normalize their values."""
    values = {}
    for f in dataclasses.fields(obj):
        check = f.metadata.get("check")
        if check is not None:
            values[f.name] = check(f.name, getattr(obj, f.name))
    return values
