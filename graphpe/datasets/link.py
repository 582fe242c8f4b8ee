"""Link prediction on one graph: the edges split into training, validation and test targets
with sampled non-edges beside the held-out ones, as PyG's ``RandomLinkSplit`` draws them and as
the graph autoencoder benchmarks split (Kipf & Welling, "Variational graph auto-encoders",
2016: 85 / 5 / 10 % of the edges, as many non-edges as held-out edges).

The graph is read as undirected. The training graph, which a model reads at every stage, holds
the training edges only; at test time the validation edges join it (``message_edges``), as
PyG's split gives them. No held-out edge is in a graph a model reads before it is scored on it.
"""

from __future__ import annotations

import random
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import Data

from graphpe.datasets.planetoid import load_planetoid

#: the share of edges held out for validation and test (Kipf & Welling's split)
LINK_SPLIT = (0.05, 0.10)
#: the graphs ``load_link_dataset`` reads
LINK_DATASETS = ("Cora", "CiteSeer", "PubMed")
#: the parts a LinkSplit scores
PARTS = ("train", "val", "test")


@dataclass
class LinkSplit:
    """One graph's link targets. ``graph`` holds the node features (``x``) and every node;
    each ``*_pos`` / ``*_neg`` is a ``[2, Q]`` tensor of pairs, each undirected edge once.
    ``train_neg`` is empty: training draws fresh non-edges each epoch."""

    name: str
    graph: Data
    train_pos: Tensor
    val_pos: Tensor
    val_neg: Tensor
    test_pos: Tensor
    test_neg: Tensor
    seed: int

    @property
    def num_nodes(self) -> int:
        return int(self.graph.num_nodes)

    def message_edges(self, part: str) -> Tensor:
        """The ``edge_index`` (both directions) a model reads when scored on ``part``: the
        training edges, and for ``test`` the validation edges too."""
        if part not in PARTS:
            raise ValueError(f"part must be one of {PARTS}, got {part!r}")
        edges = self.train_pos if part != "test" else torch.cat([self.train_pos, self.val_pos], 1)
        return torch.cat([edges, edges.flip(0)], dim=1)

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
    bundle = load_planetoid(name, Path(root), pre_transform=None, download=download)
    return random_link_split(name, bundle.train[0], seed)
