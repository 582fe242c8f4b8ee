"""Every encoding declared once (see :mod:`graphpe.encodings.registry`): one module per
family of encodings, each declaration a frozen dataclass of settings from which come its
transform, its encoder, its command-line spelling, records and warm-up.

Every module of this package is imported here, so a new module's declarations register
themselves: adding an encoding edits no list.
"""

import importlib
import pkgutil

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
    setting_of,
    transforms_of,
)

for _module in pkgutil.iter_modules(__path__):
    if not _module.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_module.name}")

__all__ = [
    "GATE", "NODE", "PAIR", "Encoding", "PairEncoding", "cli_help", "encoding", "encodings",
    "from_model_config", "pair_model_config", "parse_pe", "pe_model_config", "pe_spec",
    "register", "resolve_pe", "setting", "setting_of", "transforms_of",
]
