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
        ei = torch.from_numpy(_inverse(order))[ei]
    touches = ((ei >= part.lo) & (ei < part.hi)).any(0)
    if not bool(touches.all()):
        ei = ei[:, touches]
        weight = None if weight is None else weight[touches]
    return local_rows(simple_csr(ei, graph.num_nodes, weight), part)


def _inverse(order: np.ndarray) -> np.ndarray:
    """The row of each node: ``inverse[order[i]] = i``."""
    inverse = np.empty_like(order)
    inverse[order] = np.arange(order.size, dtype=order.dtype)
    return inverse


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


def adjacency_file(path: Path) -> Path | None:
    """The ``scipy.sparse.save_npz`` adjacency of a graph file or GraphSAINT folder, or
    None for another format."""
    if path.is_dir() and (path / "adj_full.npz").exists():
        return path / "adj_full.npz"
    return path if path.suffix == ".npz" and path.is_file() else None


# entries of the column indices read at a time when a rank streams an adjacency file
READ_CHUNK = 1 << 20


def adjacency_rows(path: Path, world: int, rank: int, digest: bool = True,
                   chunk: int = READ_CHUNK, order: np.ndarray | None = None
                   ) -> tuple[LocalRows, dict[str, Any]]:
    """Rank ``rank``'s rows of the graph of the adjacency file ``path`` (as
    :func:`graph_rows` of :func:`graphpe.datasets.read_graph`'s graph, one edge per nonzero),
    read without forming the whole graph's edge list: the rank's rows of the matrix and the
    entries of its columns, and the record's graph fields: node and edge counts and, with
    ``digest``, the digest :func:`graphpe.encode.graph_digest` gives the read graph.
    ``order``: the rows' order (row ``i`` is node ``order[i]``), None for the file's own.

    A CSR file in canonical form (each row's columns strictly ascending, no stored zeros), as
    ``scipy.sparse.save_npz`` writes a canonical matrix, is streamed: the row pointers are read
    whole, the column indices and values ``chunk`` entries at a time, so a rank never holds
    the whole matrix (with ``order``, it holds the row of every node, ``n`` int64). Any other
    file (another format, duplicate or unsorted entries, stored zeros) is read whole and made
    canonical first, as ``read_graph`` reads it."""
    streamed = _streamed_csr(path, digest, chunk)
    if streamed is None:
        import scipy.sparse as sp

        adj = sp.csr_matrix(sp.load_npz(path))
        adj.sum_duplicates()
        adj.eliminate_zeros()
        streamed = _streamed_arrays(adj.indptr, lambda: iter([(adj.indices, adj.data)]),
                                    digest)
    n, indptr, chunks, meta = streamed
    part = row_partition(n, world, rank, order)
    row_of = None if order is None else _inverse(order)
    a, b = int(indptr[part.lo]), int(indptr[part.hi])
    # every entry touching the rank's rows, oriented so that its source is the rank's: the
    # rows' own entries and the others' entries into them, reversed (the undirected graph)
    sources, targets = [], []
    offset = 0
    for indices, hash_chunk in chunks():
        hi = offset + indices.size
        if hash_chunk is not None:
            hash_chunk(indices)
        if row_of is not None:
            entry_rows = np.searchsorted(indptr, np.arange(offset, hi), side="right") - 1
            r, c = row_of[entry_rows], row_of[indices]
            del entry_rows
            own = (r >= part.lo) & (r < part.hi)
            inward = (c >= part.lo) & (c < part.hi)
            sources += [r[own], c[inward]]
            targets += [c[own], r[inward]]
        else:
            if a < hi and offset < b:  # this rank's rows' entries
                first, last = max(a, offset), min(b, hi)
                sources.append(np.searchsorted(indptr, np.arange(first, last),
                                               side="right") - 1)
                targets.append(indices[first - offset : last - offset].astype(np.int64))
            inward = np.flatnonzero((indices >= part.lo) & (indices < part.hi))
            sources.append(indices[inward].astype(np.int64))
            targets.append(np.searchsorted(indptr, inward + offset, side="right") - 1)
        offset = hi
    meta = meta()
    del indptr, row_of
    sources, targets = np.concatenate(sources), np.concatenate(targets)
    rows = _unweighted_rows(sources, targets, n, part)
    del sources, targets
    release_freed_host_memory()  # the read's blocks, so that the encoding can have the pages
    return rows, meta


def _unweighted_rows(sources, targets, n: int, part) -> LocalRows:
    """The rows of ``part`` of the undirected simple graph whose edges touching them are
    ``sources[e] - targets[e]`` (every source among the rows), one edge per pair: as
    :func:`graphpe.ops.host.simple_csr` and :func:`local_rows` give them, without building
    the other rows."""
    loop = sources == targets
    loops = np.zeros(part.rows)
    loops[sources[loop] - part.lo] = 1.0
    keys = np.unique((sources[~loop] - part.lo) * n + targets[~loop])
    del loop
    counts = np.bincount(keys // n, minlength=part.rows)
    indptr = np.zeros(part.rows + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return LocalRows(part, indptr, keys % n, np.ones(keys.size), loops)


def _streamed_arrays(indptr, chunks, digest: bool):
    """``(n, indptr, chunks, meta)`` for :func:`adjacency_rows`: ``chunks()`` yields each
    block of column indices with the digest's update for it (None without ``digest``), in
    order; ``meta()``, called after the last block, the record's graph fields. The digest is
    sha256 of (int64 ``[n]``, int64 edge_index ``[2, E]``) as ``fingerprint_of`` hashes them."""
    import hashlib

    n = indptr.size - 1
    h = hashlib.sha256() if digest else None
    if h is not None:
        h.update(b"torch.int64")
        h.update(np.array([n], dtype=np.int64).tobytes())
        h.update(b"torch.int64")
        block = 1 << 20
        for lo in range(0, n, block):  # the sources, a block of rows at a time
            hi = min(n, lo + block)
            h.update(np.repeat(np.arange(lo, hi, dtype=np.int64),
                               np.diff(indptr[lo : hi + 1])).tobytes())

    def update(indices):
        h.update(indices.astype(np.int64).tobytes())

    def blocks():
        for indices, _ in chunks():
            yield indices, update if h is not None else None

    def meta():
        fields = {"num_nodes": n, "num_edges": int(indptr[-1])}
        if h is not None:
            fields["digest"] = h.hexdigest()
        return fields

    return n, indptr, blocks, meta


def _streamed_csr(path: Path, digest: bool, chunk: int):
    """:func:`_streamed_arrays` of a canonical CSR ``save_npz`` file, its column indices and
    values read ``chunk`` entries at a time; None for any other file (checked in a first
    pass over the values and indices, streamed the same way)."""
    import zipfile

    with zipfile.ZipFile(path) as zf:
        names = set(zf.namelist())
        if not {"format.npy", "indptr.npy", "indices.npy", "data.npy"} <= names:
            return None
        with zf.open("format.npy") as f:
            if np.lib.format.read_array(f).item() not in ("csr", b"csr"):
                return None
        with zf.open("indptr.npy") as f:
            indptr = np.lib.format.read_array(f)

    def chunks():
        with zipfile.ZipFile(path) as zf, zf.open("indices.npy") as fi, \
                zf.open("data.npy") as fd:
            readers = [_npy_reader(fi, chunk), _npy_reader(fd, chunk)]
            yield from zip(*readers, strict=True)

    # first pass: every row's columns strictly ascending and no stored zero
    pos, last_col = 0, -1
    for indices, data in chunks():
        if not data.all():
            return None
        positions = np.arange(pos, pos + indices.size)
        opens = indptr[np.searchsorted(indptr, positions, side="right") - 1] == positions
        if bool(((np.diff(indices, prepend=last_col) <= 0) & ~opens).any()):
            return None
        pos += indices.size
        last_col = int(indices[-1]) if indices.size else last_col
    return _streamed_arrays(indptr, chunks, digest)


def _npy_reader(f, chunk: int):
    """The array of the ``.npy`` stream ``f``, ``chunk`` entries at a time."""
    version = np.lib.format.read_magic(f)
    read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                   else np.lib.format.read_array_header_2_0)
    shape, _, dtype = read_header(f)
    total = int(np.prod(shape))
    done = 0
    while done < total:
        count = min(chunk, total - done)
        buffer = f.read(count * dtype.itemsize)
        yield np.frombuffer(buffer, dtype=dtype)
        done += count


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
