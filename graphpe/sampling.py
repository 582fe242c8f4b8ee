"""Mini-batches of one large graph: PyG's ``NeighborLoader`` with a compiled sampler.

:func:`neighbor_loader` gives PyG's ``NeighborLoader`` (its subgraph cutting, attribute
copying and worker processes unchanged) with :class:`CompiledNeighborSampler`, graphpe's
neighbour sampler (:mod:`graphpe.ops.neighbors`), so mini-batch training needs neither
pyg-lib nor torch-sparse. Every node attribute of the graph travels with the batch's nodes,
encodings included: an encoding computed once on the whole graph arrives as
``batch.rwse == data.rwse[batch.n_id]``. The first ``batch.batch_size`` nodes of a batch are
its seed nodes, the ones a loss or a metric scores.
"""

from __future__ import annotations

import copy
import threading
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import Data
from torch_geometric.loader import NeighborLoader
from torch_geometric.sampler import NeighborSampler, SamplerOutput
from torch_geometric.sampler.base import DataType, SubgraphType

from graphpe.ops.neighbors import sample_neighbors

_MASK64 = (1 << 64) - 1


def _mixed(*values: int) -> int:
    """A 63-bit seed from ``values`` (SplitMix64's finalizer over their sum in turn)."""
    state = 0
    for value in values:
        state = (state + 0x9E3779B97F4A7C15 + (int(value) & _MASK64)) & _MASK64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
        state = z ^ (z >> 31)
    return state >> 1


class CompiledNeighborSampler(NeighborSampler):
    """PyG's ``NeighborSampler`` for a homogeneous graph, sampling with
    :func:`graphpe.ops.neighbors.sample_neighbors`: directional sampling of ``num_neighbors[h]``
    in-edges per node in hop ``h`` (``-1``: all), without replacement unless ``replace``;
    the same output layout as pyg-lib's (seeds first, each hop's new nodes in the order met,
    edges as CSC positions).

    Args:
        data: the graph.
        num_neighbors: in-edges drawn per node in each hop.
        replace: draw with replacement.
        seed: ``None`` (default): each batch's random numbers are drawn from torch's global
            generator, so ``torch.manual_seed`` fixes a run's batches. An int: each batch's
            sample is a function of ``seed`` and its seed nodes alone, the same at every pass
            (for evaluation that does not change between epochs).
        **kwargs: PyG ``NeighborSampler``'s other arguments (``is_sorted``,
            ``share_memory``); disjoint, temporal and weighted sampling are not covered.
    """

    def __init__(self, data: Data, num_neighbors: Sequence[int], *, replace: bool = False,
                 seed: int | None = None, **kwargs: Any) -> None:
        for name in ("disjoint", "time_attr", "weight_attr"):
            if kwargs.get(name):
                raise ValueError(f"CompiledNeighborSampler does not cover {name}: use "
                                 "PyG's NeighborSampler (with pyg-lib)")
        if kwargs.get("subgraph_type", "directional") not in ("directional",
                                                              SubgraphType.directional):
            raise ValueError("CompiledNeighborSampler samples directional subgraphs only")
        if kwargs.get("sample_direction", "forward") != "forward":
            raise ValueError("CompiledNeighborSampler samples forward (in-edges) only")
        if not isinstance(data, Data):
            raise TypeError(f"CompiledNeighborSampler samples a homogeneous Data, got "
                            f"{type(data).__name__}")
        with warnings.catch_warnings():  # (PyG's warning that pyg-lib is missing: not used)
            warnings.filterwarnings("ignore", message=r".*without a 'pyg-lib' installation")
            super().__init__(data, list(num_neighbors), replace=replace, **kwargs)
        assert self.data_type == DataType.homogeneous
        self.seed = seed
        self._colptr = self.colptr.numpy().astype(np.int64, copy=False)
        self._row = self.row.numpy().astype(np.int64, copy=False)
        self._local: np.ndarray | None = None  # scratch of the kernel, made on first use
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:  # (worker processes make their own lock)
        state = dict(self.__dict__)
        state["_lock"] = None
        state["_local"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def _sample(self, seed: Tensor, seed_time: Tensor | None = None, **kwargs: Any
                ) -> SamplerOutput:
        if isinstance(seed, dict) or seed_time is not None:
            raise ValueError("CompiledNeighborSampler samples homogeneous graphs without time")
        seeds = seed.numpy().astype(np.int64, copy=False)
        if self.seed is None:
            draw = int(torch.randint(0, 2**62, (), dtype=torch.int64))
        else:
            draw = _mixed(self.seed, seeds.size, int(seeds[0]) if seeds.size else 0)
        fanouts = np.asarray(self.num_neighbors.get_mapped_values(), dtype=np.int64)
        with self._lock:
            if self._local is None:
                self._local = np.full(self.num_nodes, -1, dtype=np.int64)
            nodes, rows, cols, edges, hop_nodes, hop_edges = sample_neighbors(
                self._colptr, self._row, seeds, fanouts, replace=self.replace, seed=draw,
                local=self._local)
        return SamplerOutput(node=torch.from_numpy(nodes), row=torch.from_numpy(rows),
                             col=torch.from_numpy(cols), edge=torch.from_numpy(edges),
                             batch=None, num_sampled_nodes=hop_nodes.tolist(),
                             num_sampled_edges=hop_edges.tolist())


def constant_rows(data: Data) -> dict[str, Tensor]:
    """The node attributes of ``data`` whose rows are all equal, each as its first row
    ``[1, ...]``."""
    n = data.num_nodes
    found = {}
    for key, value in data.items():
        if (isinstance(value, Tensor) and value.dim() >= 1 and n and value.size(0) == n
                and data.is_node_attr(key) and bool((value == value[:1]).all())):
            found[key] = value[:1].clone()
    return found


class _ExpandRows:
    """A batch's shared rows (:func:`constant_rows`) expanded to its nodes, then the user's
    transform."""

    def __init__(self, rows: dict[str, Tensor], transform: Any = None) -> None:
        self.rows, self.transform = rows, transform

    def __call__(self, batch: Data) -> Data:
        count = batch.n_id.numel()
        for key, row in self.rows.items():
            batch[key] = row.expand(count, *row.shape[1:])
        return batch if self.transform is None else self.transform(batch)


def neighbor_loader(data: Data, num_neighbors: Sequence[int], *,
                    input_nodes: Tensor | None = None, batch_size: int = 1024,
                    shuffle: bool = False, seed: int | None = None, replace: bool = False,
                    num_workers: int = 0, share_constant_rows: bool = True,
                    **kwargs: Any) -> NeighborLoader:
    """PyG's ``NeighborLoader`` over ``input_nodes`` (a mask or ids; all nodes when ``None``)
    with :class:`CompiledNeighborSampler` (``num_neighbors``, ``replace``, ``seed`` as
    there): batches of ``batch_size`` seed nodes and their sampled ``len(num_neighbors)``-hop
    in-neighbourhoods, every node attribute (encodings included) cut to the batch's nodes;
    with ``share_constant_rows`` an attribute whose rows are all equal is expanded from its
    one row rather than copied (see the module docstring). ``kwargs`` go to the loader
    (``pin_memory``, ``persistent_workers``, ``transform``, ...)."""
    sampler = CompiledNeighborSampler(data, num_neighbors, replace=replace, seed=seed)
    shared = constant_rows(data) if share_constant_rows else {}
    if shared:
        num_nodes = data.num_nodes
        data = copy.copy(data)
        for key in shared:
            del data[key]
        data.num_nodes = num_nodes
        kwargs["transform"] = _ExpandRows(shared, kwargs.get("transform"))
    return NeighborLoader(data, num_neighbors=list(num_neighbors), input_nodes=input_nodes,
                          batch_size=batch_size, shuffle=shuffle, num_workers=num_workers,
                          neighbor_sampler=sampler, **kwargs)
