"""What several ``graphpe`` commands share: the dataset and PE flags, the configuration files
of ``train`` and ``pretrain-gpse`` (TOML or JSON, keys spelled as the flags) checked as the
flags are, and the device check."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from graphpe.train_config import add_config_flags

PE_HELP = ("comma-separated encodings, each a name with optional settings, e.g. "
           "'rwse:walk_length=20,lap:k=4', lists with '/': 'hkdiag:times=1/2/4'; 'none' for "
           "no PE; `graphpe encodings` lists the encodings with their settings")


def add_data_arguments(p: argparse.ArgumentParser, pe_help: str | None = None) -> None:
    """The dataset, its folder, the PEs and precompute's cache (``precompute``, ``train``)."""
    from graphpe.datasets import DATASET_HELP
    p.add_argument("--dataset", required=True, help=DATASET_HELP)
    p.add_argument("--root", required=True, help="folder holding (or receiving) the "
                                                 "dataset's files")
    p.add_argument("--pe", default="none", help=pe_help or PE_HELP)
    p.add_argument("--download", action=argparse.BooleanOptionalAction, default=False,
                   help="let the dataset's loader download missing files")
    add_config_flags(p, shared=True)  # --cache-dir


def widths(value: str | list[int] | tuple[int, ...]) -> tuple[int, ...]:
    """``--head-hidden``: ``"32,16"`` (or a config file's list ``[32, 16]``) as a tuple of
    positive ints."""
    parts = value.split(",") if isinstance(value, str) else list(value)
    try:
        if any(isinstance(p, (bool, float)) for p in parts):
            raise ValueError
        sizes = tuple(int(p) for p in parts)
        if any(size < 1 for size in sizes):
            raise ValueError
        return sizes
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected positive ints like 32,16 (layer widths), got {value!r}") from None


def load_config(path: str) -> dict:
    """A TOML (or JSON) file of ``train`` options, keys spelled as the flags
    (``batch-size`` or ``batch_size``)."""
    text = Path(path).read_text()
    if path.endswith(".json"):
        values = json.loads(text)
    else:
        try:
            import tomllib
        except ModuleNotFoundError:  # Python 3.10: the same parser as the tomli package
            import tomli as tomllib

        values = tomllib.loads(text)
    if not isinstance(values, dict):
        raise ValueError(f"expected a table of options (a JSON object), got a "
                         f"{type(values).__name__}")
    return {k.replace("-", "_"): v for k, v in values.items()}


def typed_config(values: dict, actions: dict[str, argparse.Action]) -> dict:
    """The file's values checked as the command line checks its flags: through each option's
    ``type`` and ``choices`` (a file's ``epochs = 1.5`` must not reach the training loop);
    switches take true or false."""
    typed = {}
    for key, value in values.items():
        action = actions[key]
        if action.nargs == 0 or isinstance(action, argparse.BooleanOptionalAction):
            if not isinstance(value, bool):
                raise ValueError(f"{key} takes true or false, got {value!r}")
        elif value is not None and action.type is not None:
            if isinstance(value, bool) or (action.type is int and isinstance(value, float)):
                raise ValueError(f"{key}: invalid {action.type.__name__} value {value!r}")
            try:
                value = action.type(value)
            except (TypeError, ValueError, argparse.ArgumentTypeError):
                raise ValueError(f"{key}: invalid {action.type.__name__} value "
                                 f"{value!r}") from None
        if action.choices is not None and value not in action.choices:
            raise ValueError(f"{key}: {value!r} is not one of {list(action.choices)}")
        typed[key] = value
    return typed

def check_device(device: str) -> None:
    import torch

    if str(device).startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"--device {device}, but this PyTorch sees no CUDA device "
                         f"(torch {torch.__version__})")
