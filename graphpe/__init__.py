"""graphpe: positional and structural encodings for graph neural networks."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from graphpe import encodings, nn, ops, transforms
    from graphpe.nn.build import build_model, load_model

__version__ = "0.1.0"

__all__ = ["build_model", "encodings", "load_model", "nn", "ops", "transforms", "__version__"]

# Imported on first use (PEP 562): ``import graphpe.transforms`` then loads the transforms
# and their kernels only, not the models (torch.nn modules) and every encoding's encoder.
_SUBMODULES = {"encodings", "nn", "ops", "transforms"}
_FROM_BUILD = {"build_model", "load_model"}


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"graphpe.{name}")
    if name in _FROM_BUILD:
        return getattr(importlib.import_module("graphpe.nn.build"), name)
    raise AttributeError(f"module 'graphpe' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _SUBMODULES | _FROM_BUILD)
