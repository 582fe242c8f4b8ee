"""graphpe: positional and structural encodings for graph neural networks."""

from graphpe import nn, ops, transforms

__version__ = "0.1.0"

__all__ = ["nn", "ops", "transforms", "__version__"]
