"""The heterophilous node benchmarks of Platonov et al. ("A critical look at the evaluation of
GNNs under heterophily: are we really making progress?", ICLR 2023): Roman-empire,
Amazon-ratings, Minesweeper, Tolokers and Questions, each one graph with node features and ten
fixed train/val/test splits.

The files are the authors' ``.npz`` archives, read from ``root/<name>/raw/<name>.npz`` (PyG's
``HeterophilousGraphDataset`` layout, ``<name>`` lower case with ``_`` for ``-``) with the
keys ``node_features`` ``[N, F]``, ``node_labels`` ``[N]``, ``edges`` ``[E, 2]`` (each
undirected edge once: both directions are added, as PyG's loader and the authors' DGL code
do) and ``train_masks`` / ``val_masks`` / ``test_masks`` ``[S, N]`` (the ``S`` splits). The
same layout read through ``graph:PATH`` serves the other sets shipped in it (the filtered
Chameleon and Squirrel of the same paper).

A binary target (Minesweeper, Tolokers, Questions) is one output scored by ROC-AUC and
trained with binary cross-entropy, as in the paper (``task="node_multilabel"`` with one
label column, :class:`~graphpe.datasets.metrics.BinaryROCAUC`); more classes are
``node_classification`` scored by accuracy. ``fold`` picks the split; the bundle's
``extra["splits"]`` says how many there are (``graphpe train --splits all`` trains each).
"""

from __future__ import annotations

import copy
import zipfile
from pathlib import Path

import numpy as np
import torch
from torch_geometric.data import Data
from torch_geometric.utils import to_undirected

from graphpe.datasets.bundle import DatasetBundle, feature_widths, require_files
from graphpe.datasets.metrics import BinaryROCAUC

HETEROPHILOUS_NAMES = ("Roman-empire", "Amazon-ratings", "Minesweeper", "Tolokers", "Questions")
#: the archive's keys (Platonov et al.'s layout)
KEYS = ("node_features", "node_labels", "edges", "train_masks", "val_masks", "test_masks")
MASKS = ("train_mask", "val_mask", "test_mask")


def is_split_archive(path: Path) -> bool:
    """Whether the ``.npz`` at ``path`` is an archive in Platonov et al.'s key layout (not a
    scipy sparse matrix)."""
    try:
        with np.load(path) as archive:
            return set(KEYS) <= set(archive.files)
    except (ValueError, OSError, zipfile.BadZipFile, EOFError):
        return False


def read_split_archive(path: Path) -> Data:
    """The graph of an archive in Platonov et al.'s layout (see the module docstring): ``x``
    (float), ``y``, the edges in both directions, and the masks ``[N, S]`` (one column per
    split, PyG's orientation)."""
    try:
        with np.load(path) as archive:
            missing = [key for key in KEYS if key not in archive.files]
            if missing:
                raise ValueError(f"{path}: a split archive holds {', '.join(KEYS)}; missing "
                                 f"{', '.join(missing)}")
            arrays = {key: archive[key] for key in KEYS}
    except (zipfile.BadZipFile, EOFError, OSError) as err:
        raise ValueError(f"{path}: not a readable .npz archive ({err}); the file may be "
                         "truncated") from None
    x = torch.from_numpy(np.asarray(arrays["node_features"], dtype=np.float32))
    num_nodes = x.size(0)
    y = torch.from_numpy(np.asarray(arrays["node_labels"], dtype=np.int64))
    edges = np.asarray(arrays["edges"], dtype=np.int64)
    if y.shape != (num_nodes,):
        raise ValueError(f"{path}: node_labels must hold one label per node ({num_nodes}), "
                         f"got shape {tuple(y.shape)}")
    if edges.ndim != 2 or edges.shape[1] != 2:
        raise ValueError(f"{path}: edges must be [E, 2] node pairs, got shape {edges.shape}")
    if edges.size and (edges.min() < 0 or edges.max() >= num_nodes):
        raise ValueError(f"{path}: edges name nodes outside 0..{num_nodes - 1}")
    edge_index = to_undirected(torch.from_numpy(np.ascontiguousarray(edges.T)),
                               num_nodes=num_nodes)
    data = Data(x=x, y=y, edge_index=edge_index, num_nodes=num_nodes)
    for name, key in zip(MASKS, KEYS[3:], strict=True):
        mask = np.asarray(arrays[key])
        if mask.ndim == 1:
            mask = mask[None]
        if mask.ndim != 2 or mask.shape[1] != num_nodes:
            raise ValueError(f"{path}: {key} must be [splits, {num_nodes}], got {mask.shape}")
        data[name] = torch.from_numpy(mask.astype(bool)).t().contiguous()
    return data


def split_count(data: Data) -> int:
    """The splits a graph's masks hold: their columns (``[N, S]``), 1 for ``[N]`` masks."""
    mask = data.get("train_mask")
    return 1 if mask is None or mask.dim() == 1 else int(mask.size(1))


def select_split(data: Data, fold: int, name: str) -> Data:
    """A shallow copy of ``data`` whose masks are split ``fold``'s column, checked: the index
    within the splits, no node in two parts, at least one training node. Each problem is a
    one-line ``ValueError`` naming ``name``."""
    splits = split_count(data)
    if isinstance(fold, bool) or not isinstance(fold, int) or not 0 <= fold < splits:
        raise ValueError(f"{name}: split {fold!r} is out of range; it has {splits} split"
                         f"{'s' if splits > 1 else ''} (0-{splits - 1})")
    out = copy.copy(data)  # (PyG's Data copies its storage: the masks below are its own)
    masks = []
    for mask_name in MASKS:
        mask = data[mask_name]
        mask = mask[:, fold] if mask.dim() == 2 else mask
        out[mask_name] = mask.contiguous()
        masks.append(mask)
    train, val, test = masks
    for (a, b), (first, second) in zip(((train, val), (train, test), (val, test)),
                                       (("train", "val"), ("train", "test"), ("val", "test")),
                                       strict=True):
        shared = int((a & b).sum())
        if shared:
            raise ValueError(f"{name}: split {fold}'s {first} and {second} masks overlap "
                             f"({shared} nodes in both)")
    if not bool(train.any()):
        raise ValueError(f"{name}: split {fold} has no training node")
    return out


def split_bundle(name: str, data: Data, fold: int, pre_transform,
                 extra: dict | None = None) -> DatasetBundle:
    """The bundle of the one graph ``data`` with split ``fold`` (checked by
    :func:`select_split`), scored as the paper does: ROC-AUC of one output for two classes,
    accuracy otherwise."""
    splits = split_count(data)
    data = select_split(data, fold, name)
    if pre_transform is not None:
        data = pre_transform(data)
    classes = int(data.y.max()) + 1
    if classes < 2:
        raise ValueError(f"{name}: every node has label {int(data.y.max())}; a classification "
                         "task needs two classes at least")
    binary = classes == 2
    for part in ("train", "val", "test") if binary else ():
        seen = data.y[data[f"{part}_mask"]].unique().tolist()
        if len(seen) < 2:
            raise ValueError(f"{name}: split {fold}'s {part} nodes all have label {seen}: "
                             "ROC-AUC needs both classes in every part")
    graphs = [data]  # the three splits one object: encoded once (graphpe.encode)
    return DatasetBundle(
        name, graphs, graphs, graphs, task="node_multilabel" if binary else "node_classification",
        metric="rocauc" if binary else "accuracy", out_dim=1 if binary else classes,
        **feature_widths(data.x), evaluator=BinaryROCAUC() if binary else None,
        extra={"splits": splits, "split": fold, **(extra or {})})


def archive_path(name: str, root: Path) -> Path:
    """Where the archive of ``name`` lies under ``root`` (PyG's layout)."""
    folder = name.lower().replace("-", "_")
    return root / folder / "raw" / f"{folder}.npz"


def load_heterophilous(name: str, root: Path, pre_transform, fold: int = 0,
                       download: bool = False, **_) -> DatasetBundle:
    """One of :data:`HETEROPHILOUS_NAMES` from ``root`` in PyG's layout, split ``fold`` of its
    ten (see the module docstring); ``download`` fetches the archive with PyG's
    ``HeterophilousGraphDataset`` first."""
    path = archive_path(name, root)
    if not path.exists() and download:
        from torch_geometric.datasets import HeterophilousGraphDataset

        HeterophilousGraphDataset(str(root), name)  # downloads raw/<name>.npz
    require_files(name, [path], f"the authors' {path.name} at {path}", download)
    return split_bundle(name, read_split_archive(path), fold, pre_transform,
                        extra={"path": str(path)})
