"""Pieces every encoder and layer of :mod:`graphpe.nn` uses: a plain MLP and the read of a
precomputed encoding from a batch."""

from __future__ import annotations

from torch import Tensor, nn


def mlp(sizes: list[int], dropout: float = 0.0) -> nn.Sequential:
    """``Linear(sizes[0], sizes[1]) -> ReLU [-> Dropout] -> ... -> Linear(sizes[-2],
    sizes[-1])``: ReLU (and dropout where ``dropout > 0``) between the linear maps, none after
    the last."""
    layers: list[nn.Module] = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
            if dropout:
                layers.append(nn.Dropout(dropout))
    return nn.Sequential(*layers)


def read_attribute(batch, name: str, producer: str) -> Tensor:
    """``batch[name]``, or a ValueError saying which transform writes it."""
    value = batch.get(name) if hasattr(batch, "get") else None
    if value is None:
        raise ValueError(f"the batch has no attribute {name!r}: compute it first with "
                         f"graphpe.transforms.{producer} (as a pre_transform, through "
                         "precompute, or inside the model with OnTheFlyPE)")
    return value
