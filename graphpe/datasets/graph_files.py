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
