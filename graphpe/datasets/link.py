"""Link prediction on one graph: the edges split into training, validation and test targets
with sampled non-edges beside the held-out ones, as PyG's ``RandomLinkSplit`` draws them and as
the graph autoencoder benchmarks split (Kipf & Welling, "Variational graph auto-encoders",
2016: 85 / 5 / 10 % of the edges, as many non-edges as held-out edges); or OGB's link sets
with their official split, negatives and ``Evaluator`` (``ogbl-collab``: Hits@50,
``ogbl-ddi``: Hits@20, ``ogbl-ppa``: Hits@100, ``ogbl-citation2``: the MRR of each held-out
edge against its own 1,000 negatives).

The graph is read as undirected. The training graph, which a model reads at every stage, holds
the training edges only; on Planetoid's splits the validation edges join it at test time
(``message_edges``), as PyG's split gives them; on OGB's sets the model reads the training
edges at test time too (OGB's examples' default). No held-out edge is in a graph a model reads
before it is scored on it.
"""

from __future__ import annotations

import os
import random
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import Data

from graphpe.datasets.metrics import link_metrics
from graphpe.datasets.nodes import ogb_folder, ogb_meta, require_ogb
from graphpe.datasets.planetoid import load_planetoid

#: the share of edges held out for validation and test (Kipf & Welling's split)
LINK_SPLIT = (0.05, 0.10)
#: OGB's link sets (``load_ogb_link``)
OGB_LINK_NAMES = ("ogbl-collab", "ogbl-ddi", "ogbl-ppa", "ogbl-citation2")
#: the Planetoid graphs ``load_link_dataset`` splits at random
PLANETOID_LINK_NAMES = ("Cora", "CiteSeer", "PubMed")
#: the graphs ``load_link_dataset`` reads
LINK_DATASETS = (*PLANETOID_LINK_NAMES, *OGB_LINK_NAMES)
#: the parts a LinkSplit scores
PARTS = ("train", "val", "test")


@dataclass
class LinkSplit:
    """One graph's link targets. ``graph`` holds the node features (``x``) and every node;
    each ``*_pos`` / ``*_neg`` is a ``[2, Q]`` tensor of pairs, each undirected edge once.
    ``train_neg`` is empty: training draws fresh non-edges each epoch.

    How it is scored: ``select_by`` is the validation metric that picks the epoch (a key of
    :meth:`metrics`); ``evaluator`` an OGB ``Evaluator`` whose metric joins them;
    ``negatives_per_positive`` says that the negatives come in groups, the ``i``-th group
    those of the ``i``-th held-out edge (ogbl-citation2's 1,000 each); ``test_reads_val``
    whether the validation edges join the graph a model reads at test time."""

    name: str
    graph: Data
    train_pos: Tensor
    val_pos: Tensor
    val_neg: Tensor
    test_pos: Tensor
    test_neg: Tensor
    seed: int
    select_by: str = "rocauc"
    evaluator: Any = None
    negatives_per_positive: int | None = None
    test_reads_val: bool = True

    @property
    def num_nodes(self) -> int:
        return int(self.graph.num_nodes)

    def message_edges(self, part: str) -> Tensor:
        """The ``edge_index`` (both directions) a model reads when scored on ``part``: the
        training edges, and for ``test`` the validation edges too."""
        if part not in PARTS:
            raise ValueError(f"part must be one of {PARTS}, got {part!r}")
        edges = (torch.cat([self.train_pos, self.val_pos], 1)
                 if part == "test" and self.test_reads_val else self.train_pos)
        return torch.cat([edges, edges.flip(0)], dim=1)

    def metrics(self, pos: np.ndarray, neg: np.ndarray) -> dict[str, float]:
        """The scores of a part's held-out edges ``pos`` against its non-edges ``neg``:
        :func:`~graphpe.datasets.metrics.link_metrics` over all of them, and the OGB
        ``Evaluator``'s metric where there is one (its ``mrr`` from each edge's own group of
        negatives)."""
        out = link_metrics(pos, neg)
        if self.evaluator is not None:
            y_neg = torch.as_tensor(np.asarray(neg, np.float32))
            if self.negatives_per_positive is not None:
                y_neg = y_neg.view(-1, self.negatives_per_positive)
            found = self.evaluator.eval({"y_pred_pos": torch.as_tensor(
                np.asarray(pos, np.float32)), "y_pred_neg": y_neg})
            out.update({key.removesuffix("_list"): float(torch.as_tensor(value).float().mean())
                        for key, value in found.items()})
        return out

    def targets(self, part: str) -> tuple[Tensor, Tensor]:
        """``(pairs, labels)`` of a held-out ``part``: its edges (1) then its non-edges (0)."""
        if part not in ("val", "test"):
            raise ValueError(f"held-out targets are 'val' or 'test', got {part!r}")
        pos, neg = getattr(self, f"{part}_pos"), getattr(self, f"{part}_neg")
        labels = torch.cat([torch.ones(pos.size(1)), torch.zeros(neg.size(1))])
        return torch.cat([pos, neg], dim=1), labels


def random_link_split(name: str, graph: Data, seed: int = 0,
                      held_out: tuple[float, float] = LINK_SPLIT) -> LinkSplit:
    """Split ``graph``'s undirected edges by PyG's ``RandomLinkSplit`` (``num_val``,
    ``num_test`` = ``held_out``, ``is_undirected=True``, one sampled non-edge per held-out
    edge), drawn from ``seed``. A directed graph is read with each edge in both directions,
    and a warning says so: the targets, the pair features and SEAL's labels are undirected."""
    from torch_geometric.transforms import RandomLinkSplit
    from torch_geometric.utils import is_undirected, to_undirected

    val, test = held_out
    if not (0 < val < 1 and 0 < test < 1 and val + test < 1):
        raise ValueError(f"held_out must be two shares in (0, 1) that sum below 1, got "
                         f"{held_out}")
    if not is_undirected(graph.edge_index, num_nodes=graph.num_nodes):
        warnings.warn(f"{name} is a directed graph: link prediction here reads it as "
                      "undirected (each edge in both directions; a target is an unordered "
                      "pair)", UserWarning, stacklevel=2)
    base = Data(x=graph.x, edge_index=to_undirected(graph.edge_index, num_nodes=graph.num_nodes),
                num_nodes=graph.num_nodes)
    split = RandomLinkSplit(num_val=val, num_test=test, is_undirected=True,
                            add_negative_train_samples=False, split_labels=True)
    # the edges' permutation draws from torch, the non-edges from Python's and numpy's
    # generators: all three seeded here and given back as they were
    states = random.getstate(), np.random.get_state()
    try:
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            random.seed(seed)
            np.random.seed(seed)
            train, valid, tested = split(base)
    finally:
        random.setstate(states[0])
        np.random.set_state(states[1])
    return LinkSplit(name, Data(x=graph.x, num_nodes=graph.num_nodes),
                     train.pos_edge_label_index, valid.pos_edge_label_index,
                     valid.neg_edge_label_index, tested.pos_edge_label_index,
                     tested.neg_edge_label_index, seed)


def load_link_dataset(name: str, root: Path, seed: int = 0, download: bool = False) -> LinkSplit:
    """``name`` (one of :data:`LINK_DATASETS`, PyG's Planetoid layout under ``root``; its
    files fetched where ``download``) split for link prediction by :func:`random_link_split`
    from ``seed``."""
    if name not in LINK_DATASETS:
        raise ValueError(f"link prediction reads {', '.join(LINK_DATASETS)}, got {name!r}")
    if name in OGB_LINK_NAMES:
        return load_ogb_link(name, Path(root), download)
    bundle = load_planetoid(name, Path(root), pre_transform=None, download=download)
    return random_link_split(name, bundle.train[0], seed)


def _ogb_part(part: dict[str, Tensor]) -> tuple[Tensor, Tensor]:
    """``(pos, neg)`` ``[2, Q]`` pairs of a part of OGB's edge split: ``edge`` and
    ``edge_neg``, or ogbl-citation2's ``source_node``, ``target_node`` and
    ``target_node_neg`` ``[Q, 1000]`` (the negatives grouped by edge, in its order)."""
    if "edge" in part:
        neg = part.get("edge_neg")
        return part["edge"].t().long(), (torch.zeros(2, 0, dtype=torch.long) if neg is None
                                         else neg.t().long())
    source, target = part["source_node"].long(), part["target_node"].long()
    pos = torch.stack([source, target])
    negatives = part.get("target_node_neg")
    if negatives is None:
        return pos, torch.zeros(2, 0, dtype=torch.long)
    per = negatives.size(1)
    return pos, torch.stack([source.repeat_interleave(per), negatives.reshape(-1).long()])


def load_ogb_link(name: str, root: Path, download: bool = False) -> LinkSplit:
    """One of :data:`OGB_LINK_NAMES` from ``root`` in OGB's layout, with its official split
    and negatives, its ``Evaluator`` and its metric choosing the epoch. A set without node
    features (ogbl-ddi) gets a constant ``x`` (the encodings give its nodes their identity).
    A missing file is a one-line ``FileNotFoundError`` naming it."""
    try:
        from ogb.linkproppred import Evaluator, PygLinkPropPredDataset
    except ImportError as err:
        raise ImportError(f"{name} needs the ogb package: pip install 'graphpe[ogb]'") from err
    meta = ogb_meta(name)
    require_ogb(name, ogb_folder(name, root), meta, download, link=True)
    os.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")  # ogb 1.3.6 on torch >= 2.6
    dataset = PygLinkPropPredDataset(name, root=str(root))
    data, split = dataset[0], dataset.get_edge_split()
    x = data.x.float() if data.x is not None else torch.ones(data.num_nodes, 1)
    train_pos, _ = _ogb_part(split["train"])
    (val_pos, val_neg), (test_pos, test_neg) = _ogb_part(split["valid"]), _ogb_part(
        split["test"])
    evaluator = Evaluator(name)
    citation = "target_node_neg" in split["valid"]
    return LinkSplit(name, Data(x=x, num_nodes=data.num_nodes), train_pos, val_pos, val_neg,
                     test_pos, test_neg, seed=0, select_by=evaluator.eval_metric,
                     evaluator=evaluator,
                     negatives_per_positive=(split["valid"]["target_node_neg"].size(1)
                                             if citation else None),
                     test_reads_val=False)
