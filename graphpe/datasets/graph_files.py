"""A plain graph from files as a node dataset: ``load_dataset("graph:PATH", root)``.

``PATH`` (under ``root``, or absolute) is one of

- an ``.npz`` sparse adjacency as ``scipy.sparse.save_npz`` writes it (any format; ``A[i, j]``
  nonzero is the edge ``i -> j``; the matrix is square, its size the node count);
- an ``.npz`` archive in Platonov et al.'s layout (``node_features``, ``node_labels``,
  ``edges``, ``train_masks``, ``val_masks``, ``test_masks``: the heterophilous sets, their
  edges made undirected, ``fold`` picking one of the splits;
  :mod:`graphpe.datasets.heterophilous`);
- an edge list, any other file (``.gz`` read compressed): two node ids (integers from 0) a
  line, separated by spaces, tabs or a comma, further columns ignored, ``#`` starting a
  comment; the node count is the largest id plus one, duplicates count once;
- a folder in GraphSAINT's layout (as PyG's Flickr reads it): ``adj_full.npz`` (the
  adjacency, as above), and where present ``feats.npy`` (node features), ``class_map.json``
  (node id -> label) and ``role.json`` (``tr`` / ``va`` / ``te``: the split's node ids).

The edges stay as the file holds them, directed where it is (ogbn-arxiv's citations):
``pre_transform=torch_geometric.transforms.ToUndirected()`` adds the reverse ones. Graphs
without node features get no ``x`` here: ``load_dataset`` gives them a constant categorical one
(one category), as it does CSL's graphs, since the models read ``x``; then the structure and
the PEs are all a model sees. A graph without labels has no masks and ``out_dim`` 0 (for
``graphpe precompute`` and structure-only work; building a model for it is refused); labels
without ``role.json`` get the seeded stratified 60/20/20 split, and ``split`` fractions a
seeded stratified split of those sizes in place of either.
"""

from __future__ import annotations

import gzip
import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch_geometric.data import Data
from torch_geometric.utils import coalesce

from graphpe.datasets.bundle import (
    RANDOM_NODE_SPLIT,
    DatasetBundle,
    feature_widths,
    node_split_masks,
)
from graphpe.datasets.heterophilous import is_split_archive, read_split_archive, split_bundle
from graphpe.ops.distributed import LocalRows, row_partition
from graphpe.ops.memory import release_freed_host_memory

PREFIX = "graph:"
ROLES = {"tr": "train_mask", "va": "val_mask", "te": "test_mask"}


def is_graph_spec(name: str, root: Path) -> bool:
    """Whether ``name`` is ``graph:PATH`` and not an own ``module:function``: a bare Python
    name after ``graph:`` (``graph:build``) is a file only where ``root`` holds one of that
    name (else a module ``graph``'s function); any other ``PATH`` is a file."""
    if not name.startswith(PREFIX):
        return False
    path = name[len(PREFIX):]
    return not path.isidentifier() or (root / path).exists()


def read_adjacency(path: Path) -> tuple[torch.Tensor, int]:
    """``(edge_index, num_nodes)`` of a ``scipy.sparse.save_npz`` file: one edge ``i -> j`` per
    nonzero ``A[i, j]``, in row order."""
    import zipfile

    import scipy.sparse as sp

    try:
        adj = sp.load_npz(path)
    except (ValueError, KeyError, OSError, EOFError, zipfile.BadZipFile) as err:
        raise ValueError(f"{path}: not a sparse matrix written by scipy.sparse.save_npz "
                         f"({err})") from None
    if adj.shape[0] != adj.shape[1]:
        raise ValueError(f"{path}: an adjacency is square, this matrix is {adj.shape}")
    adj = sp.csr_matrix(adj)
    adj.sum_duplicates()
    adj.eliminate_zeros()
    coo = adj.tocoo()
    edge_index = torch.from_numpy(np.vstack([coo.row, coo.col]).astype(np.int64))
    return edge_index, int(adj.shape[0])


def _first_data_line(path: Path) -> str:
    with (gzip.open(path, "rt") if path.suffix == ".gz" else open(path)) as lines:
        return next((line for line in lines if line.split("#")[0].strip()), "")


def read_edge_list(path: Path) -> Data:
    """The graph of an edge list (see the module's description)."""
    delimiter = "," if "," in _first_data_line(path).split("#")[0] else None
    try:
        with warnings.catch_warnings():  # (an empty file: "input contained no data")
            warnings.simplefilter("ignore", UserWarning)
            pairs = np.loadtxt(path, dtype=np.int64, comments="#", delimiter=delimiter,
                               ndmin=2, usecols=(0, 1))
    except ValueError as err:
        raise ValueError(f"{path}: not an edge list of two node ids a line ({err})") from None
    if pairs.size == 0:
        raise ValueError(f"{path}: no edges (an edge list holds two node ids a line)")
    if pairs.min() < 0:
        raise ValueError(f"{path}: node ids start at 0, found {int(pairs.min())}")
    num_nodes = int(pairs.max()) + 1
    edge_index = coalesce(torch.from_numpy(np.ascontiguousarray(pairs.T)), num_nodes=num_nodes)
    return Data(edge_index=edge_index, num_nodes=num_nodes)


def read_graphsaint(folder: Path) -> Data:
    """The graph of a folder in GraphSAINT's layout (see the module's description), with its
    features, labels (-1 for a node the class map leaves out) and split masks where the
    folder has them."""
    edge_index, num_nodes = read_adjacency(folder / "adj_full.npz")
    data = Data(edge_index=edge_index, num_nodes=num_nodes)
    if (folder / "feats.npy").exists():
        data.x = torch.from_numpy(np.load(folder / "feats.npy")).float()
    if (folder / "class_map.json").exists():
        class_map = json.loads((folder / "class_map.json").read_text())
        if any(isinstance(label, list) for label in class_map.values()):
            raise ValueError(f"{folder / 'class_map.json'}: lists of labels (multi-label, as "
                             "PPI's or Yelp's) are not read yet; one label per node is")
        y = torch.full((num_nodes,), -1, dtype=torch.long)
        y[torch.tensor([int(node) for node in class_map])] = torch.tensor(
            list(class_map.values()), dtype=torch.long)
        data.y = y
    if (folder / "role.json").exists():
        role = json.loads((folder / "role.json").read_text())
        for key, name in ROLES.items():
            mask = torch.zeros(num_nodes, dtype=torch.bool)
            mask[torch.tensor(role.get(key, []), dtype=torch.long)] = True
            data[name] = mask
    return data


def read_graph(path: Path) -> Data:
    """The graph at ``path``: a GraphSAINT folder, an ``.npz`` adjacency, a PyG ``Data``
    saved with ``torch.save`` (``.pt``; unpickled: a file of your own) or an edge list."""
    if path.suffix == ".pt" and path.is_file():
        data = torch.load(path, weights_only=False)
        if not isinstance(data, Data):
            raise ValueError(f"{path}: expected a torch_geometric Data, found "
                             f"{type(data).__name__}")
        return data
    if path.is_dir():
        if not (path / "adj_full.npz").exists():
            raise FileNotFoundError(f"{path}: a graph folder holds GraphSAINT's adj_full.npz "
                                    "(and optionally feats.npy, class_map.json, role.json)")
        return read_graphsaint(path)
    if path.suffix == ".npz":
        edge_index, num_nodes = read_adjacency(path)
        return Data(edge_index=edge_index, num_nodes=num_nodes)
    return read_edge_list(path)


def load_graph_files(spec: str, root: Path, pre_transform, seed: int = 0, fold: int = 0,
                     download: bool = False, split: tuple[float, float, float] | None = None,
                     **_) -> DatasetBundle:
    """The bundle of ``graph:PATH`` (``spec``): its three splits the one graph, with the
    split's masks where it has labels (see the module's description)."""
    path = root / spec[len(PREFIX):]
    if not path.exists():
        raise FileNotFoundError(
            f"{spec}: {path} not found. Place there an .npz adjacency (scipy.sparse.save_npz), "
            "an edge list (two node ids a line, # comments) or a GraphSAINT folder "
            "(adj_full.npz, class_map.json, role.json); graph files have no download")
    if path.suffix == ".npz" and path.is_file() and is_split_archive(path):
        if split is not None:
            raise ValueError(f"{spec}: the archive has its own fixed splits (pick one with "
                             "fold / --splits); split fractions do not apply")
        return split_bundle(spec, read_split_archive(path), fold, pre_transform,
                            extra={"path": str(path)})
    data = read_graph(path)
    labelled = data.get("y") is not None
    if split is not None and not labelled:
        raise ValueError(f"{spec}: split draws masks stratified by label; the graph has none")
    if labelled and (split is not None or data.get("train_mask") is None):
        known = data.y >= 0  # the nodes the class map labels
        for name, part in zip(ROLES.values(), node_split_masks(
                data.y[known], split or RANDOM_NODE_SPLIT, seed=seed, fold=fold), strict=True):
            data[name] = torch.zeros_like(known).masked_scatter(known, part)
    if pre_transform is not None:
        data = pre_transform(data)
    widths = feature_widths(data.x) if data.get("x") is not None else {}
    graphs = [data]  # the three splits one object: encoded once (graphpe.encode)
    return DatasetBundle(spec, graphs, graphs, graphs, task="node_classification",
                         metric="accuracy", out_dim=int(data.y.max()) + 1 if labelled else 0,
                         **widths, extra={"path": str(path)})


def inverse_order(order: np.ndarray) -> np.ndarray:
    """The row of each node: ``inverse[order[i]] = i``."""
    inverse = np.empty_like(order)
    inverse[order] = np.arange(order.size, dtype=order.dtype)
    return inverse


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
    streamed = streamed_csr(path, digest, chunk)
    if streamed is None:
        import scipy.sparse as sp

        adj = sp.csr_matrix(sp.load_npz(path))
        adj.sum_duplicates()
        adj.eliminate_zeros()
        streamed = _streamed_arrays(adj.indptr, lambda: iter([(adj.indices, adj.data)]),
                                    digest)
    n, indptr, chunks, meta = streamed
    part = row_partition(n, world, rank, order)
    row_of = None if order is None else inverse_order(order)
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


def streamed_csr(path: Path, digest: bool, chunk: int):
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
