"""The encodings of one graph partitioned by rows over the processes of a
``torch.distributed`` group (``torchrun ... -m graphpe encode``): each rank computes its rows
with the kernels of :mod:`graphpe.ops.distributed` and writes them to
``NAME.rank<r>of<R>.pt``; rank 0 writes ``NAME.json`` (the single process's record plus the
partition and the communication measured), in the format of :mod:`graphpe.encoding_files`,
whose :func:`~graphpe.encoding_files.read_encodings` assembles the ranks' rows into the whole
graph's attributes.

Each encoding owns its distributed path: its transform's ``distributed_path`` (what it
computes, in words), ``distributed_form`` (the transform the ranks compute, e.g. RWSE's
random-walk estimate for ``estimate="auto"``; a ``ValueError`` for a setting without a path)
and ``compute_rows`` (this rank's rows, by the kernels of :mod:`graphpe.ops.distributed`):
LapPE and the other encodings of Laplacian eigenpairs (distributed Lanczos), RFP (distributed
propagation and CholeskyQR2, the single process's draws), RWSE's random-walk estimate (walks
handed from rank to rank, the single process's ``RWSE(estimate="sampled")`` for the same seed)
and LCP's node profile (each rank its edges' curvatures, from the rows of its 1- or 2-hop ball
fetched from their owners). This module is the runner: it knows no encoding by name. Exact
RWSE, LCP's per-edge attribute and every other encoding stay single-process (``ValueError``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from torch_geometric.data import Data

from graphpe.datasets.graph_files import adjacency_file, adjacency_rows, inverse_order
from graphpe.encoding_files import (
    encoding_record,
    graph_digest,
    nodes_name,
    shard_name,
    write_record,
)
from graphpe.encodings import encodings, resolve_pe
from graphpe.ops.checks import check_choice
from graphpe.ops.distributed import (
    LocalRows,
    halo_exchange,
    local_rows,
    row_partition,
)
from graphpe.ops.distributed.partition import REORDERINGS, bandwidth_order, global_rank
from graphpe.ops.host import simple_csr
from graphpe.ops.memory import release_freed_host_memory
from graphpe.transforms import PETransform


def distributed_encodings() -> str:
    """The encodings with a distributed path, grouped by the transform that computes them,
    each with what its path computes (its transform's ``distributed_path``)."""
    groups: dict[type, list[str]] = {}
    for name, spec in encodings().items():
        transform = spec.transform_class
        if transform is not None and transform.distributed_path is not None:
            groups.setdefault(transform, []).append(name)
    return "; ".join(f"{', '.join(names)}: {transform.distributed_path}"
                     for transform, names in groups.items())


def distributed_transform(name: str, transform: PETransform | None) -> PETransform:
    """The transform the distributed path computes for encoding ``name``
    (:meth:`~graphpe.encodings.transform.PETransform.distributed_form`: for RWSE its
    random-walk estimate); a ``ValueError`` naming ``name`` where there is none."""
    if transform is None:
        raise ValueError(f"{name} is learned inside the model: it has nothing to compute ahead")
    if transform.distributed_path is None:
        raise ValueError(f"{name} ({type(transform).__name__}) has no distributed path; the "
                         f"distributed encodings are {distributed_encodings()}")
    return transform.distributed_form(name)


def graph_rows(graph: Data, world: int, rank: int,
               order: np.ndarray | None = None) -> LocalRows:
    """Rank ``rank``'s rows of ``graph``'s undirected simple graph: the CSR of the edges with
    an end among the rank's nodes only (both directions of each, duplicates and self loops
    merged as the whole graph's CSR merges them), then its rows kept. ``order``: the rows'
    order (row ``i`` is node ``order[i]``, :func:`graph_order`), None for the graph's own."""
    part = row_partition(graph.num_nodes, world, rank, order)
    ei, weight = graph.edge_index, graph.get("edge_weight")
    if order is not None:
        ei = torch.from_numpy(inverse_order(order))[ei]
    touches = ((ei >= part.lo) & (ei < part.hi)).any(0)
    if not bool(touches.all()):
        ei = ei[:, touches]
        weight = None if weight is None else weight[touches]
    return local_rows(simple_csr(ei, graph.num_nodes, weight), part)


def _broadcast_order(compute: Callable[[], np.ndarray], num_nodes: int,
                     group: dist.ProcessGroup | None) -> np.ndarray:
    """The order ``compute()`` gives on rank 0, on every rank (one broadcast of ``n`` int64:
    only rank 0 holds the whole graph to order it)."""
    order = (torch.from_numpy(compute()) if dist.get_rank(group) == 0
             else torch.empty(num_nodes, dtype=torch.int64))
    dist.broadcast(order, global_rank(0, group),
                   group=group)
    return order.numpy()


def shared_graph_order(graph: Data, reorder: str,
                       group: dist.ProcessGroup | None = None) -> np.ndarray | None:
    """:func:`graph_order` computed on rank 0, on every rank (collective)."""
    if check_choice("reorder", reorder, REORDERINGS) == "none":
        return None
    return _broadcast_order(lambda: graph_order(graph, reorder), graph.num_nodes, group)


def shared_file_order(path: Path, reorder: str,
                      group: dist.ProcessGroup | None = None) -> np.ndarray | None:
    """:func:`file_order` of the adjacency file ``path``, read whole by rank 0 only, on every
    rank (collective)."""
    if check_choice("reorder", reorder, REORDERINGS) == "none":
        return None
    with np.load(path) as npz:
        num_nodes = int(npz["shape"][0])
    order = _broadcast_order(lambda: file_order(path, reorder), num_nodes, group)
    release_freed_host_memory()  # rank 0's whole matrix
    return order


def graph_order(graph: Data, reorder: str) -> np.ndarray | None:
    """The rows' order of ``graph`` for ``reorder`` (``none``: None, the graph's own;
    ``rcm``: :func:`~graphpe.ops.distributed.partition.bandwidth_order` of its pattern)."""
    if check_choice("reorder", reorder, REORDERINGS) == "none":
        return None
    import scipy.sparse as sp

    n = graph.num_nodes
    ei = graph.edge_index.numpy()
    pattern = sp.csr_matrix((np.ones(ei.shape[1], dtype=np.int8), (ei[0], ei[1])),
                            shape=(n, n))
    return bandwidth_order(pattern.indptr, pattern.indices, n)


def file_order(path: Path, reorder: str) -> np.ndarray | None:
    """:func:`graph_order` of the adjacency file ``path`` (read whole, its stored zeros no
    edges, as :func:`graphpe.datasets.read_graph` reads it)."""
    if check_choice("reorder", reorder, REORDERINGS) == "none":
        return None
    import scipy.sparse as sp

    adj = sp.csr_matrix(sp.load_npz(path))
    adj.eliminate_zeros()
    return bandwidth_order(adj.indptr, adj.indices, adj.shape[0])


def encode_file_distributed(path: Path, pe: Any, out_dir: str | os.PathLike,
                            group: dist.ProcessGroup | None = None,
                            reorder: str = "none") -> dict[str, Path]:
    """:func:`encode_graph_distributed` of the graph file ``path``: an adjacency (``.npz``,
    a GraphSAINT folder) is read by :func:`adjacency_rows` (each rank its rows; rank 0 the
    digest, and with ``reorder`` the whole file once to order it), any other format whole by
    :func:`graphpe.datasets.read_graph`."""
    check_choice("reorder", reorder, REORDERINGS)
    adjacency = adjacency_file(path)
    if adjacency is None:
        from graphpe.datasets import read_graph

        return encode_graph_distributed(read_graph(path), pe, out_dir, group, reorder=reorder)
    rank, world = dist.get_rank(group), dist.get_world_size(group)
    specs = resolve_pe(pe)
    transforms = [distributed_transform(spec.name, spec.transform()) for spec in specs]
    order = shared_file_order(adjacency, reorder, group)
    rows, meta = adjacency_rows(adjacency, world, rank, digest=rank == 0, order=order)
    del order
    return encode_rows(rows, specs, transforms, out_dir, meta, group, reorder)


def encode_graph_distributed(graph: Data, pe: Any, out_dir: str | os.PathLike,
                             group: dist.ProcessGroup | None = None,
                             digest: str | None = None,
                             reorder: str = "none") -> dict[str, Path]:
    """Inside an initialized process group (every rank calls it with the same graph and
    ``pe``): compute each encoding of ``pe`` (anything :func:`~graphpe.encodings.resolve_pe`
    takes) on this rank's rows of ``graph`` and write them to
    ``out_dir/NAME.rank<r>of<R>.pt``; rank 0 writes ``out_dir/NAME.json``. Returns
    ``{name: this rank's file}``. ``ValueError`` where an encoding has no distributed path or
    the graph has fewer nodes than the group has ranks. ``digest``: the graph's
    (:func:`graphpe.encode.graph_digest`), computed here where None.

    ``reorder``: the rows' order before they are partitioned: ``none`` (the graph's), or
    ``rcm`` (reverse Cuthill-McKee, computed on rank 0 and broadcast): contiguous blocks of
    a banded order have smaller halos, so less is sent per product. The rows written are then
    those of the input's nodes ``NAME.rank<r>of<R>.nodes.pt`` names, which
    :func:`graphpe.encode.read_encodings` puts back in the input's order. LapPE and RFP are
    the same with and without a reordering; RWSE's walks are the reordered graph's (the same
    estimate in distribution, another sample: its walks draw by row number)."""
    check_choice("reorder", reorder, REORDERINGS)
    rank, world = dist.get_rank(group), dist.get_world_size(group)
    specs = resolve_pe(pe)
    transforms = [distributed_transform(spec.name, spec.transform()) for spec in specs]
    order = shared_graph_order(graph, reorder, group)
    rows = graph_rows(graph, world, rank, order)
    digest = graph_digest(graph) if digest is None else digest
    meta = {"digest": digest, "num_nodes": graph.num_nodes,
            "num_edges": int(graph.edge_index.size(1))}
    return encode_rows(rows, specs, transforms, out_dir, meta, group, reorder)


def encode_rows(rows: LocalRows, specs: list, transforms: list[PETransform],
                out_dir: str | os.PathLike, graph_meta: dict[str, Any],
                group: dist.ProcessGroup | None = None,
                reorder: str = "none") -> dict[str, Path]:
    """:func:`encode_graph_distributed` from this rank's rows (``graph_meta``: the whole
    graph's digest, node and edge counts, for the record; ``reorder``: the name of the
    rows' order, for the record)."""
    part = rows.partition
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    exchange = halo_exchange(rows, group)
    written = {}
    for spec, transform in zip(specs, transforms, strict=True):
        exchange.reset_counts()
        start = time.perf_counter()
        tensors, stats = transform.compute_rows(rows, exchange)
        seconds = time.perf_counter() - start
        path = out / shard_name(spec.name, part.rank, part.world)
        torch.save(tensors, path)
        if part.nodes is not None:
            torch.save(torch.from_numpy(part.nodes),
                       out / nodes_name(spec.name, part.rank, part.world))
        stats.update(seconds=seconds, rows=part.rows, halo=exchange.size,
                     halo_sent_rows=exchange.send_size(), exchanges=exchange.calls,
                     values_sent=exchange.values_sent, bytes_sent=exchange.bytes_sent)
        every: list = [None] * part.world
        dist.all_gather_object(every, stats, group=group)
        if part.rank == 0:
            write_record(out, spec.name, encoding_record(
                spec, transform, tensors, graph_meta, max(s["seconds"] for s in every),
                partition={"world": part.world, "bounds": list(part.bounds),
                           "reordering": None if part.nodes is None else reorder,
                           "files": [shard_name(spec.name, r, part.world)
                                     for r in range(part.world)],
                           "node_files": None if part.nodes is None else [
                               nodes_name(spec.name, r, part.world) for r in range(part.world)],
                           "ranks": every}))
        written[spec.name] = path
    dist.barrier(group=group)
    return written
