"""graphpe: positional and structural encodings for graph neural networks."""

from graphpe import ops, transforms

__version__ = "0.1.0"

__all__ = ["ops", "transforms", "__version__"]
