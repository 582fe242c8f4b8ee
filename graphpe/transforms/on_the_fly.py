"""Positional encodings computed inside the training step."""

from __future__ import annotations

import copy
from collections.abc import Sequence

import torch
from torch import nn
from torch_geometric.data import Data

from graphpe.transforms.base import PETransform, graph_structure, set_fields


class OnTheFlyPE(nn.Module):
    """Computes the given PEs for every ``Batch`` inside ``forward``, on the batch's device, so
    training needs no precompute pass. In ``train()`` mode random encodings (RFP draws, random
    LapPE signs) are drawn anew at every call; in ``eval()`` mode every call draws them from a
    generator seeded afresh (the transform's ``seed``, or 0 without one), so evaluating the same
    batch twice gives the same features, and the training stream is left where it was. Put it
    in front of a model::

        model = torch.nn.Sequential(OnTheFlyPE([RWSE(16), RFP(16, 8)]), gps)

    The encodings are inputs, not learned: they are computed without gradient. Returns the
    batch (a shallow copy) with the attributes added.
    """

    def __init__(self, transforms: Sequence[PETransform]) -> None:
        super().__init__()
        if transforms is None or isinstance(transforms, (str, bytes, PETransform)):
            raise ValueError("OnTheFlyPE takes a list of graphpe transforms, got "
                             f"{transforms!r}")
        self.transforms = list(transforms)
        for t in self.transforms:
            if not isinstance(t, PETransform):
                raise ValueError(f"OnTheFlyPE takes graphpe transforms, got {type(t).__name__}")

    @torch.no_grad()
    def forward(self, batch: Data) -> Data:
        batch = copy.copy(batch)  # the caller's batch keeps its attributes
        edge_index, num_nodes, ptr, edge_weight = graph_structure(batch)
        for t in self.transforms:
            if self.training or getattr(t, "_generator", None) is None:
                out = t.compute(edge_index, num_nodes, ptr, edge_weight)
            else:
                with t.fixed_draws():
                    out = t.compute(edge_index, num_nodes, ptr, edge_weight)
            set_fields(batch, out)
        return batch

    def extra_repr(self) -> str:
        return ", ".join(repr(t) for t in self.transforms)
