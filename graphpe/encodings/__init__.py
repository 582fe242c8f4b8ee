"""Every encoding declared once (see :mod:`graphpe.encodings.registry`): one module per
family of encodings, each declaration a frozen dataclass of settings from which come its
transform, its encoder, its command-line spelling, records and warm-up."""

from graphpe.encodings import curvature, laplacian, learned, pairwise, rfp, spectral, walk
from graphpe.encodings.registry import (
    GATE,
    NODE,
    PAIR,
    Encoding,
    PairEncoding,
    cli_help,
    encoding,
    encodings,
    from_model_config,
    pair_model_config,
    parse_pe,
    pe_model_config,
    pe_spec,
    register,
    resolve_pe,
    setting,
    transforms_of,
)

__all__ = [
    "GATE", "NODE", "PAIR", "Encoding", "PairEncoding", "cli_help", "curvature", "encoding",
    "encodings", "from_model_config", "laplacian", "learned", "pair_model_config", "pairwise",
    "parse_pe", "pe_model_config", "pe_spec", "register", "resolve_pe", "rfp", "setting",
    "spectral", "transforms_of", "walk",
]
