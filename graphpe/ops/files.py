"""Reading the files graphpe writes with ``torch.save`` (checkpoints, training states,
encodings): a missing, damaged or foreign file is one error naming it and what was expected."""

from __future__ import annotations

import pickle
import zipfile
from pathlib import Path
from typing import Any

import torch


def load_torch_file(path: str | Path, what: str, map_location: Any = "cpu") -> Any:
    """``torch.load(path, weights_only=True)``. A missing file is a FileNotFoundError, a file
    torch cannot read (truncated, another format, objects beyond tensors and plain
    containers) a ValueError; both name ``path`` and ``what`` it should hold (e.g. ``"a
    graphpe checkpoint (train --checkpoint)"``)."""
    if not Path(path).is_file():
        raise FileNotFoundError(f"{path}: no such file (expected {what})")
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except (RuntimeError, pickle.UnpicklingError, EOFError, zipfile.BadZipFile,
            UnicodeDecodeError, OSError) as err:
        if isinstance(err, pickle.UnpicklingError):  # torch's message is a page of advice
            reason = "not a torch.save file of tensors and plain containers"
        else:
            reason = " ".join(str(err).split())
            reason = reason if len(reason) <= 120 else reason[:117] + "..."
        raise ValueError(f"{path}: not readable as {what} ({reason})") from None
