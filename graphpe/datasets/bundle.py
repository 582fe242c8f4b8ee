"""What every loader returns (:class:`DatasetBundle`), the seeded splits, the check that a
dataset's files are there before a loader runs, and what the node-level loaders share (a
split's masks on the one graph, a constant ``x`` where a graph has no features)."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch_geometric.data import Data

#: the seeded stratified node split (train, val, test) of node sets without a standard one
#: (Amazon, Coauthor, labelled graph files without a split): 60/20/20, the random split of
#: NAGphormer (Chen et al., ICLR 2023) and the graph transformers compared with it
RANDOM_NODE_SPLIT = (0.6, 0.2, 0.2)


#: the metrics where more is better (the others, mae and rmse, are errors)
HIGHER_IS_BETTER = ("rocauc", "accuracy", "ap", "f1", "weighted_accuracy", "mrr")
#: the tasks graphpe loads and scores but does not train yet, each with what it would need
UNTRAINABLE = {
    "link_ranking": "a link-ranking task (scores of node pairs within each graph, ranked "
                    "against the other pairs of their row)",
    "graph_sequence": "a sequence-prediction task (a sequence of sub-tokens per graph from a "
                      "vocabulary built on the training split)",
}


@dataclass
class DatasetBundle:
    """Splits of a dataset and what a model needs to know about it."""

    name: str
    train: Any
    val: Any
    test: Any
    # graph_regression | graph_classification | graph_multilabel | node_classification (one
    # graph split by masks, or many graphs whose every node is scored) | node_multilabel (one
    # binary target per column, ogbn-proteins); loaded, not yet trained (see UNTRAINABLE):
    # link_ranking (PCQM-Contact) | graph_sequence (ogbg-code2)
    task: str
    # mae | rmse | rocauc | accuracy | ap | f1 (macro F1, or OGB's sub-token F1 of ogbg-code2)
    # | weighted_accuracy (PATTERN, CLUSTER) | mrr
    metric: str
    out_dim: int
    node_vocab: int | list[int] | None = None
    node_dim: int | None = None
    edge_vocab: int | list[int] | None = None
    edge_dim: int | None = None
    evaluator: Any = None
    extra: dict = field(default_factory=dict)

    @property
    def higher_is_better(self) -> bool:
        return self.metric in HIGHER_IS_BETTER

    def model_kwargs(self) -> dict[str, Any]:
        """Arguments of :func:`graphpe.nn.build.build_model` fixed by the data (a multi-label
        task is the model's classification task with one output per label)."""
        if self.task in UNTRAINABLE:
            raise ValueError(f"{self.name}: {UNTRAINABLE[self.task]}; graphpe loads it "
                             f"(load_dataset) and scores predictions with its evaluator "
                             f"({type(self.evaluator).__name__}), but its training loop "
                             f"and models have no {self.task} task yet")
        if self.out_dim < 1:
            raise ValueError(f"{self.name} has no labels: nothing for a model to predict (a "
                             "graph without labels serves precompute and structure-only work)")
        task = self.task.replace("_multilabel", "_classification")
        return {"out_dim": self.out_dim, "task": task, "node_vocab": self.node_vocab,
                "node_dim": self.node_dim, "edge_vocab": self.edge_vocab,
                "edge_dim": self.edge_dim}


def require_files(name: str, paths: list[Path], expected: str, download: bool,
                  every: bool = False) -> None:
    """Raise unless the files are there (one of ``paths``, or with ``every`` all of them), or
    ``download`` allows the loader to fetch them."""
    if download or (all if every else any)(p.exists() for p in paths):
        return
    raise FileNotFoundError(
        f"{name}: files not found under the given root. Place {expected}, or let the loader "
        "download them (download=True in Python, --download on the command line)."
    )


def stratified_split(labels: torch.Tensor, fractions=(0.8, 0.1, 0.1), seed: int = 0,
                     fold: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Train/val/test indices, stratified by label; ``fold`` rotates which part of each class
    goes to test (a k-fold with ``k = round(1 / fractions[2])``)."""
    rng = np.random.default_rng(seed)
    labels = labels.view(-1).numpy()
    parts: list[list[int]] = [[], [], []]
    folds = max(1, round(1 / fractions[2]))
    for c in np.unique(labels):
        idx = rng.permutation(np.nonzero(labels == c)[0])
        chunks = np.array_split(idx, folds)
        test = chunks[fold % folds]
        rest = np.concatenate([chunks[i] for i in range(folds) if i != fold % folds])
        n_val = int(round(len(idx) * fractions[1]))
        parts[2] += test.tolist()
        parts[1] += rest[:n_val].tolist()
        parts[0] += rest[n_val:].tolist()
    return tuple(torch.tensor(sorted(p), dtype=torch.long) for p in parts)


def check_split(split) -> tuple[float, float, float]:
    """``split`` as three floats ``(train, val, test)``: each in (0, 1), summing to 1 (to 1e-6);
    otherwise a ValueError naming the problem."""
    try:
        fractions = tuple(float(f) for f in split)
    except (TypeError, ValueError):
        raise ValueError(f"split must be three fractions (train, val, test), got {split!r}") \
            from None
    if len(fractions) != 3 or isinstance(split, (str, bytes)):
        raise ValueError(f"split must be three fractions (train, val, test), got {split!r}")
    if not all(0.0 < f < 1.0 for f in fractions):
        raise ValueError(f"split fractions must each be in (0, 1), got {split!r}")
    if abs(sum(fractions) - 1.0) > 1e-6:
        raise ValueError(f"split fractions must sum to 1, got {split!r} (sum "
                         f"{sum(fractions):.6g})")
    return fractions


def node_split_masks(labels: torch.Tensor, fractions=(0.5, 0.25, 0.25), seed: int = 0,
                     fold: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Boolean train/val/test node masks of a random split stratified by label, the node
    version of :func:`stratified_split` (same ``fractions``, ``seed`` and ``fold``)."""
    labels = labels.view(-1)
    masks = []
    for part in stratified_split(labels.cpu(), check_split(fractions), seed=seed, fold=fold):
        mask = torch.zeros(labels.numel(), dtype=torch.bool)
        mask[part] = True
        masks.append(mask)
    return tuple(masks)


def one_graph(bundle: DatasetBundle) -> Data | None:
    """The graph of a node-level bundle on one graph (train, val and test the same one-graph
    split, told apart by masks), else None."""
    split = bundle.train
    if bundle.task.startswith("node_") and split is bundle.val is bundle.test and \
            len(split) == 1:
        return split[0]
    return None


def undirected_bundle(bundle: DatasetBundle) -> DatasetBundle:
    """``bundle`` whose one graph has each edge's reverse added (PyG's ``ToUndirected``: a
    pair given both ways stays one pair each way, edge features of merged duplicates summed),
    as OGB's baselines train on ogbn-arxiv. Only a node-level dataset on one graph: a
    ValueError otherwise."""
    from torch_geometric.transforms import ToUndirected

    graph = one_graph(bundle)
    if graph is None:
        raise ValueError(f"{bundle.name}: undirected adds the reverse edges of a node-level "
                         "dataset's one graph; this dataset has several graphs (give them "
                         "symmetric edges in its pre_transform, e.g. PyG's ToUndirected)")
    graphs = [ToUndirected()(copy.copy(graph))]
    return dataclasses.replace(bundle, train=graphs, val=graphs, test=graphs)


def graph_summary(bundle: DatasetBundle, made_undirected: bool) -> dict[str, Any] | None:
    """What a record says of the graph a node-level model saw: its nodes, directed edges,
    whether every edge has its reverse, and whether graphpe added them; None for datasets
    of many graphs."""
    from torch_geometric.utils import is_undirected

    graph = one_graph(bundle)
    if graph is None:
        return None
    return {"num_nodes": int(graph.num_nodes), "num_edges": int(graph.edge_index.size(1)),
            "undirected": bool(is_undirected(graph.edge_index, num_nodes=graph.num_nodes)),
            "made_undirected": made_undirected}


def with_masks(dataset, masks: Sequence[torch.Tensor],
               names: Sequence[str] = ("train_mask", "val_mask", "test_mask")):
    """A shallow copy of the one-graph ``InMemoryDataset`` ``dataset`` whose graph carries
    ``masks`` as ``names`` (a node split); ``dataset`` itself keeps its graph unchanged."""
    data = copy.copy(dataset._data)
    slices = None if dataset.slices is None else dict(dataset.slices)
    for name, mask in zip(names, masks, strict=True):
        data[name] = mask
        if slices is not None:
            slices[name] = torch.tensor([0, mask.size(0)])
    out = copy.copy(dataset)
    out._data, out.slices, out._data_list = data, slices, None
    return out


def with_constant_x(pre_transform: Callable | None) -> Callable:
    """``pre_transform`` preceded by a constant categorical ``x`` (one category, ``[N, 1]``
    zeros) on graphs without node features: the models read ``x``, and a constant one tells
    them nothing, so the structure (and the PEs) is all they see."""
    def apply(data: Data) -> Data:
        if data.get("x") is None:
            data.x = torch.zeros(data.num_nodes, 1, dtype=torch.long)
        return pre_transform(data) if pre_transform is not None else data

    return apply


def feature_widths(x: torch.Tensor) -> dict[str, int | None]:
    """``node_vocab`` / ``node_dim`` of :class:`DatasetBundle` for node features ``x``:
    categorical (integer) ones count their categories, continuous ones their width."""
    if x.dtype.is_floating_point:
        return {"node_vocab": None, "node_dim": x.size(-1) if x.dim() > 1 else 1}
    if x.dim() > 1 and x.size(1) > 1:  # one vocabulary per column
        return {"node_vocab": (x.amax(0) + 1).tolist() if x.numel() else [1] * x.size(1),
                "node_dim": None}
    return {"node_vocab": int(x.max()) + 1 if x.numel() else 1, "node_dim": None}
