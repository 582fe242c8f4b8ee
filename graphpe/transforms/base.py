"""The common shape of graphpe's transforms.

A :class:`PETransform` is a PyG ``BaseTransform`` whose work is done by :meth:`compute`, which
takes the structure of a whole batch (``edge_index``, ``num_nodes``, ``ptr``, ``edge_weight``)
and returns node-level tensors. ``forward`` calls it on a ``Data`` (one graph) or a ``Batch``
(all graphs at once); :func:`graphpe.transforms.precompute` calls it on chunks of a dataset
without building ``Batch`` objects at all.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor
from torch_geometric.data import Data
from torch_geometric.transforms import BaseTransform


def graph_structure(data: Data) -> tuple[Tensor, int, Tensor | None, Tensor | None]:
    """``(edge_index, num_nodes, ptr, edge_weight)`` of a ``Data`` or ``Batch``; ``ptr`` is
    None for a single graph (the kernels then skip all batch bookkeeping)."""
    store = data._store  # one dict lookup per attribute: this runs once per graph
    num_nodes = data.num_nodes
    if num_nodes is None:
        raise ValueError("data has no nodes: set data.num_nodes or data.x")
    edge_index = store.get("edge_index")
    if edge_index is None:
        x = store.get("x")
        device = x.device if isinstance(x, Tensor) else "cpu"
        edge_index = torch.zeros(2, 0, dtype=torch.long, device=device)
    ptr = store.get("ptr")
    if ptr is None:
        batch = store.get("batch")
        if isinstance(batch, Tensor) and batch.numel() == num_nodes and num_nodes > 0:
            counts = torch.bincount(batch, minlength=int(batch.max()) + 1)
            ptr = torch.cat([counts.new_zeros(1), counts.cumsum(0)])
    if ptr is not None and ptr.device != edge_index.device:
        ptr = ptr.to(edge_index.device)
    return edge_index, int(num_nodes), ptr, store.get("edge_weight")


class PETransform(BaseTransform):
    """Base class: subclasses implement :meth:`compute` and :meth:`settings`.

    Transforms that draw random numbers keep a ``seed`` and one CPU generator: successive calls
    draw successive numbers, :meth:`reset_generator` restarts the stream (precompute does, so a
    dataset precompute is reproducible), and a draw never depends on the device.
    """

    seed: int | None = None

    def reset_generator(self) -> None:
        """Restart the stream of random draws from ``seed`` (a fresh random one if None)."""
        self._generator = torch.Generator()
        if self.seed is not None:
            self._generator.manual_seed(self.seed)
        else:
            self._generator.seed()

    def compute(
        self,
        edge_index: Tensor,
        num_nodes: int,
        ptr: Tensor | None,
        edge_weight: Tensor | None = None,
    ) -> dict[str, Tensor]:
        """Outputs ``{attribute name: [num_nodes, ...]}`` for a batch of graphs (or
        ``[num_edges, ...]`` for the names in :meth:`edge_attributes`); ``ptr`` ``[G + 1]``
        marks where each graph's nodes start, None meaning one graph."""
        raise NotImplementedError

    def edge_attributes(self) -> set[str]:
        """Names among :meth:`compute`'s outputs that are per edge (aligned with
        ``edge_index``) rather than per node."""
        return set()

    def settings(self) -> dict[str, Any]:
        """Every argument that changes the output; shown by ``repr`` and hashed into cache keys."""
        raise NotImplementedError

    def forward(self, data: Data) -> Data:
        edge_index, num_nodes, ptr, edge_weight = graph_structure(data)
        for name, value in self.compute(edge_index, num_nodes, ptr, edge_weight).items():
            data[name] = value
        return data

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.settings().items())
        return f"{type(self).__name__}({args})"
