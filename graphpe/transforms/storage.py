"""Where :func:`~graphpe.transforms.precompute` reads a dataset's graphs from and writes their
encodings to: an ``InMemoryDataset``'s collated storage (its ``_data`` and ``slices``, read
and written in a few whole-array operations, no ``Data`` per graph), or a list of ``Data``.

:class:`Structure` is what the batched kernels take, for the whole dataset at once;
:func:`stored_graphs` turns views and subsets of an ``InMemoryDataset`` into storage;
:func:`attach_to_storage` and :func:`attach_to_list` add the concatenated outputs back."""

from __future__ import annotations

import copy
import warnings
from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor
from torch.utils.data import Subset
from torch_geometric.data import Data, InMemoryDataset
from torch_geometric.transforms import BaseTransform, Compose

from graphpe.encodings.transform import concat_to_x, fields, node_count, set_fields
from graphpe.ops.graph import INDEX_DTYPES, validate_graph


class Structure:
    """The concatenated structure of a whole dataset: node offsets ``ptr`` ``[G + 1]``, edge
    offsets ``eptr`` ``[G + 1]``, ``edge_index`` with global node ids, optional weights."""

    def __init__(self, ptr: Tensor, eptr: Tensor, edge_index: Tensor, edge_weight: Tensor | None):
        self.ptr, self.eptr, self.edge_index, self.edge_weight = ptr, eptr, edge_index, edge_weight

    @property
    def num_graphs(self) -> int:
        return self.ptr.numel() - 1

    def chunk(self, lo: int, hi: int, device: torch.device | str | None):
        n0, n1 = int(self.ptr[lo]), int(self.ptr[hi])
        e0, e1 = int(self.eptr[lo]), int(self.eptr[hi])
        ei = (self.edge_index[:, e0:e1] - n0).to(device)
        ew = None if self.edge_weight is None else self.edge_weight[e0:e1].to(device)
        return ei, n1 - n0, (self.ptr[lo : hi + 1] - n0).to(device), ew

    def tensors(self) -> tuple[Tensor, Tensor, Tensor, Tensor | None]:
        """``(ptr, eptr, edge_index, edge_weight)``: what the cache's fingerprint reads."""
        return self.ptr, self.eptr, self.edge_index, self.edge_weight


def structure_of_in_memory(dataset: InMemoryDataset) -> Structure | None:
    """Read the structure straight from an ``InMemoryDataset``'s collated storage (no per-graph
    ``Data`` objects); None where the storage does not allow it."""
    if dataset.transform is not None or getattr(dataset, "_indices", None) is not None:
        return None  # (a view is first gathered by stored_graphs)
    data, slices = dataset._data, dataset.slices
    if slices is None or "edge_index" not in slices or "x" not in slices:
        return None
    if data.x.size(0) != int(slices["x"][-1]):
        return None
    if data.edge_index.dtype not in INDEX_DTYPES:
        # validate before any cast: a bool or float index must not be silently converted
        validate_graph(data.edge_index, int(slices["x"][-1]))
    ptr = slices["x"].long()
    eptr = slices["edge_index"].long()
    local = data.edge_index.long()
    edge_graph = torch.repeat_interleave(torch.arange(ptr.numel() - 1), eptr[1:] - eptr[:-1])
    _check_local_ids(local.numpy(), (ptr[1:] - ptr[:-1]).numpy(), eptr.numpy(),
                     edge_graph.numpy())
    edge_index = local + ptr[edge_graph].unsqueeze(0)
    weight = None
    if "edge_weight" in slices:
        if not torch.equal(slices["edge_weight"].long(), eptr):
            g = int(torch.nonzero(slices["edge_weight"].long() != eptr)[0]) - 1
            raise ValueError(f"graph {max(g, 0)}: edge_weight must have one entry per edge")
        weight = _host_weight(data.edge_weight)
    return Structure(ptr, eptr, edge_index, weight)


def stored_graphs(dataset: object) -> InMemoryDataset | None:
    """``dataset``'s graphs as one ``InMemoryDataset`` read from collated storage: a whole
    dataset as it is; a view of one (``dataset[idx]``, ``dataset[a:b]``, an OGB split) or a
    ``torch.utils.data.Subset`` of either as a copy holding just those graphs, in order, every
    stored attribute gathered in one pass per attribute (no per-graph ``Data``). None where the
    graphs are not read from storage as stored (a ``transform`` is set) or ``dataset`` is none
    of these."""
    picks: list[np.ndarray] = []
    while isinstance(dataset, Subset):
        pick = dataset.indices
        picks.append(pick.numpy().reshape(-1) if isinstance(pick, Tensor)
                     else np.fromiter(pick, dtype=np.int64, count=len(pick)))
        dataset = dataset.dataset
    if not isinstance(dataset, InMemoryDataset) or dataset.transform is not None:
        return None
    if getattr(dataset, "_indices", None) is None and not picks:
        return dataset
    view = getattr(dataset, "_indices", None)
    index = (np.arange(dataset.len()) if view is None
             else view.numpy() if isinstance(view, Tensor)
             else np.arange(dataset.len())[view] if isinstance(view, slice)
             else np.fromiter(view, dtype=np.int64, count=len(view)))
    for pick in reversed(picks):  # the innermost Subset picks first
        index = index[pick]  # negative and out-of-range picks behave as Subset's do
    return _gather_storage(dataset, torch.from_numpy(index))


def _gather_storage(dataset: InMemoryDataset, index: Tensor) -> InMemoryDataset | None:
    """A shallow copy of ``dataset`` whose storage holds only its stored graphs ``index``, in
    that order (no view left); None where an attribute is neither a tensor nor a per-graph
    list (the per-graph path handles it). A run of consecutive graphs is a view of the
    storage, not a copy."""
    data, slices = dataset._data, dataset.slices
    if not isinstance(data, Data) or slices is None:
        return None
    index_np = index.numpy()
    if index_np.size == 0:
        return None
    consecutive = bool((np.diff(index_np) == 1).all())
    gathered, new_slices = Data(), {}
    rows: list[tuple[Tensor, tuple]] = []  # per distinct slices: (first, rows, new offsets)
    for key, value in data.items():
        if key == "num_nodes":  # kept per graph beside the storage (below)
            continue
        if key not in slices:
            return None
        bounds = slices[key].long()
        known = next((r for r in rows if r[0] is bounds or torch.equal(r[0], bounds)), None)
        if known is None:
            b = bounds.numpy()
            starts = b[:-1][index_np]
            counts = b[1:][index_np] - starts
            picked = None if consecutive else _ranges(starts, counts)
            offsets = np.zeros(counts.size + 1, dtype=np.int64)
            np.cumsum(counts, out=offsets[1:])
            known = (bounds, (int(starts[0]) if consecutive else 0, picked,
                              torch.from_numpy(offsets)))
            rows.append(known)
        first, picked, offsets = known[1]
        if isinstance(value, Tensor):
            dim = data.__cat_dim__(key, value)
            dim = dim + value.dim() if dim < 0 else dim
            if picked is None:
                gathered[key] = value.narrow(dim, first, int(offsets[-1]))
            elif value.device.type == "cpu" and value.dtype in _NUMPY_DTYPES:
                gathered[key] = torch.from_numpy(np.take(value.numpy(), picked, axis=dim))
            else:
                gathered[key] = value.index_select(dim, torch.from_numpy(picked).to(value.device))
        elif isinstance(value, list) and len(value) == bounds.numel() - 1:
            gathered[key] = [value[i] for i in index_np.tolist()]
        else:
            return None
        new_slices[key] = offsets.clone()
    counts_per_graph = getattr(data._store, "_num_nodes", None)
    if counts_per_graph is not None:
        gathered._store._num_nodes = [counts_per_graph[i] for i in index_np.tolist()]
        gathered.num_nodes = sum(gathered._store._num_nodes)
    out = copy.copy(dataset)
    out._indices = None
    out._data, out.slices, out._data_list = gathered, new_slices, None
    return out


_NUMPY_DTYPES = (torch.float16, torch.float32, torch.float64, torch.int8, torch.int16,
                 torch.int32, torch.int64, torch.uint8, torch.bool)


def _ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The concatenation of ``arange(s, s + c)`` for each start ``s`` and count ``c``."""
    offsets = np.cumsum(counts) - counts
    return np.repeat(starts - offsets, counts) + np.arange(int(counts.sum()))


def _check_local_ids(local: np.ndarray, sizes: np.ndarray, eptr: np.ndarray,
                     edge_graph: np.ndarray) -> None:
    """Every graph's edges within its own nodes ``[0, sizes[g])``, checked before the graphs'
    offsets are added: after them an edge past its graph's last node would silently land in
    the next graph."""
    if local.shape[1] == 0:
        return
    bound = sizes[edge_graph]
    bad = ((local < 0) | (local >= bound)).any(0)
    if bad.any():  # the message a call on that graph alone gives
        g = int(edge_graph[int(np.argmax(bad))])
        try:
            validate_graph(torch.from_numpy(np.ascontiguousarray(local[:, eptr[g]:eptr[g + 1]])),
                           int(sizes[g]))
        except ValueError as err:
            raise ValueError(f"graph {g}: {err}") from None


def _host_weight(weight: Tensor) -> Tensor:
    """Edge weights on the host in a dtype numpy holds (bfloat16 widened exactly)."""
    weight = weight.detach().cpu()
    return weight.float() if weight.dtype == torch.bfloat16 else weight


def structure_of_list(graphs: Sequence[Data]) -> Structure:
    """The structure of a list of graphs: one pass reading each graph's ``num_nodes``,
    ``edge_index`` and ``edge_weight`` as numpy views, then a few whole-array operations
    (no per-graph tensor work)."""
    count = len(graphs)
    sizes = np.empty(count, dtype=np.int64)
    esizes = np.empty(count, dtype=np.int64)
    edges: list[np.ndarray] = []
    weights: list[np.ndarray | None] = []
    for i, data in enumerate(graphs):
        if not isinstance(data, Data):
            raise ValueError(f"graph {i} is a {type(data).__name__}, not a torch_geometric Data")
        store = fields(data)
        n = node_count(data, store)
        if n is None:
            raise ValueError(f"graph {i} has no nodes: set num_nodes or x")
        ei = store.get("edge_index")
        if ei is None:
            ei_np = np.zeros((2, 0), dtype=np.int64)
        else:
            if not isinstance(ei, Tensor) or ei.dtype not in INDEX_DTYPES \
                    or ei.dim() != 2 or ei.size(0) != 2:
                # validate_graph names the problem (it only sees the concatenated edges)
                try:
                    validate_graph(ei, int(n))
                except ValueError as err:
                    raise ValueError(f"graph {i}: {err}") from None
            ei_np = ei.detach().cpu().numpy()
        w = store.get("edge_weight")
        if w is not None and not isinstance(w, Tensor):
            raise ValueError(f"graph {i}: edge_weight must be a torch.Tensor [num_edges], got a "
                             f"{type(w).__name__}")
        if w is not None and tuple(w.shape) != (ei_np.shape[1],):
            # (checked per graph: concatenated, a surplus here would fill a gap further on)
            raise ValueError(f"graph {i}: edge_weight must have shape [{ei_np.shape[1]}] (one "
                             f"per edge), got {list(w.shape)}")
        sizes[i] = n
        esizes[i] = ei_np.shape[1]
        edges.append(ei_np)
        weights.append(None if w is None else _host_weight(w).numpy())
    ptr = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(sizes, out=ptr[1:])
    eptr = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(esizes, out=eptr[1:])
    edge_index = (np.concatenate(edges, axis=1).astype(np.int64, copy=False) if edges
                  else np.zeros((2, 0), dtype=np.int64))
    edge_graph = np.repeat(np.arange(count), esizes)
    _check_local_ids(edge_index, sizes, eptr, edge_graph)
    edge_index = edge_index + ptr[:-1][edge_graph]  # local -> global node ids
    has_weight = [w is not None for w in weights]
    if any(has_weight) and not all(has_weight):
        raise ValueError("some graphs have edge_weight and others do not")
    weight = (torch.from_numpy(np.concatenate(weights)) if weights and all(has_weight)
              else None)
    return Structure(torch.from_numpy(ptr), torch.from_numpy(eptr),
                      torch.from_numpy(edge_index), weight)


def attach_to_storage(
    dataset: InMemoryDataset,
    structure: Structure,
    outputs: dict[str, Tensor],
    edge_level: set[str],
    others: list[BaseTransform],
    pair_level: dict[str, Tensor] | None = None,
) -> InMemoryDataset:
    """A shallow copy of ``dataset`` with ``outputs`` (concatenated over its graphs) added to
    its storage: sliced per graph by ``structure.ptr``, ``structure.eptr`` for the names of
    ``edge_level``, or ``pair_level``'s offsets; ``others`` become its ``transform`` (with a
    warning)."""
    out = copy.copy(dataset)
    data = copy.copy(dataset._data)
    slices = dict(dataset.slices)
    for name, value in outputs.items():
        if name is None:  # attr_name=None: extra columns of x (rows already sliced by ptr)
            data.x = concat_to_x(data.x if "x" in data else None, value)
            slices.setdefault("x", structure.ptr.clone())
            continue
        data[name] = value
        if pair_level and name in pair_level:
            slices[name] = pair_level[name].clone()
        else:
            slices[name] = (structure.eptr if name in edge_level else structure.ptr).clone()
    out._data, out.slices = data, slices
    out._data_list = None
    if others:
        out.transform = Compose([*(out.transform and [out.transform] or []), *others])
        warnings.warn(
            "non-graphpe transforms were attached as the dataset's transform (applied on access)",
            stacklevel=3,  # (precompute)
        )
    return out


def attach_to_list(
    graphs: list[Data],
    structure: Structure,
    outputs: dict[str, Tensor],
    edge_level: set[str],
    others: list[BaseTransform],
    pair_level: dict[str, Tensor] | None = None,
) -> list[Data]:
    """Shallow copies of ``graphs``, each given its slices of ``outputs`` (as
    :func:`attach_to_storage` cuts them), then passed through ``others`` in order."""
    # Each graph gets views of the concatenated outputs (as InMemoryDataset.get gives), cut
    # by numpy slicing: torch.split costs ~20 us per piece, numpy ~1.
    ptr, eptr = structure.ptr.tolist(), structure.eptr.tolist()
    pair_level = pair_level or {}
    arrays = [(name, value.numpy() if name not in pair_level or not name.endswith("_index")
               else value.numpy().T,  # [P, 2] rows, sliced like the others, turned back below
               pair_level[name].tolist() if name in pair_level
               else eptr if name in edge_level else ptr)
              for name, value in outputs.items()]
    turned = {name for name in pair_level if name.endswith("_index")}
    result = []
    for i, data in enumerate(graphs):
        data = copy.copy(data)
        set_fields(data, {name: (torch.from_numpy(array[offsets[i] : offsets[i + 1]]).T
                                 if name in turned
                                 else torch.from_numpy(array[offsets[i] : offsets[i + 1]]))
                          for name, array, offsets in arrays})
        for t in others:
            data = t(data)
        result.append(data)
    return result
