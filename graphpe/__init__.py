"""graphpe: positional and structural encodings for graph neural networks."""

from graphpe import encodings, nn, ops, transforms
from graphpe.build import build_model, load_model

__version__ = "0.1.0"

__all__ = ["build_model", "encodings", "load_model", "nn", "ops", "transforms", "__version__"]
