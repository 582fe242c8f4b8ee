"""Pieces every encoder and layer of :mod:`graphpe.nn` uses: a plain MLP, the read of a
precomputed encoding from a batch, and the declaration of the function a module computes
(which the fast paths read)."""

from __future__ import annotations

from typing import ClassVar

from torch import Tensor, nn


class DeclaredForm:
    """A module that names the function its ``forward`` computes (``form``), so a fast path
    that computes the same function in its place (:mod:`graphpe.layers.fused`,
    :class:`graphpe.nn.static.StaticGPS`) chooses by what the module declares, not by its
    class. A subclass that overrides ``forward`` computes another function: its ``form`` is
    None (no fast path covers it) unless it declares one itself; a subclass that keeps the
    forward keeps the form."""

    form: ClassVar[str | None] = None

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "forward" in vars(cls) and "form" not in vars(cls):
            cls.form = None


def form_of(module: object) -> str | None:
    """The function ``module`` declares it computes (:class:`DeclaredForm`), or None."""
    return getattr(module, "form", None) if isinstance(module, DeclaredForm) else None


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
