"""Training a link predictor on one graph (:class:`graphpe.datasets.link.LinkSplit`): node
encodings computed on the graph the model reads, pair features that never read the target
edge, fresh non-edges each epoch, the model of the best validation epoch scored on test.

Each epoch is one full-batch step: the node model embeds the training graph, the decoder scores
every training edge and as many non-edges drawn uniformly from the pairs that are not training
edges (PyG's ``negative_sampling``), and the loss is their binary cross-entropy. The training
graph is the message graph of the training edges themselves (as PyG's link example and the
graph autoencoders train); the pair features of a training edge are computed with that edge
set aside (:class:`graphpe.ops.link_features.PairFeatureSet`), so its features look like a
held-out edge's. Validation reads the training graph; test reads it with the validation edges added.
"""

from __future__ import annotations

import copy
import time
from typing import Any

import torch
import torch.nn.functional as F
from torch_geometric.data import Data
from torch_geometric.transforms import Compose
from tqdm.auto import tqdm

from graphpe.datasets.link import LinkSplit
from graphpe.encodings import pe_model_config, resolve_pe, transforms_of
from graphpe.nn.link import LinkPredictor, build_link_model
from graphpe.nn.seal import SEAL
from graphpe.ops.checks import check_positive_int
from graphpe.ops.labeling import enclosing_subgraphs
from graphpe.ops.link_features import PairFeatureSet
from graphpe.records import versions
from graphpe.train import make_optimizer, seed_everything
from graphpe.train_config import TrainConfig

#: held-out pairs scored at a time (their embeddings' products are [pairs, channels])
SCORE_CHUNK = 1 << 18


def encoded_graph(split: LinkSplit, part: str, transforms: list) -> Data:
    """The graph a model reads when scored on ``part``, with the node encodings of
    ``transforms`` computed on it."""
    graph = Data(x=split.graph.x, edge_index=split.message_edges(part),
                 num_nodes=split.num_nodes)
    return Compose(transforms)(graph) if transforms else graph


def held_out(split: LinkSplit, part: str, graph: Data,
             pair_features: PairFeatureSet) -> dict[str, Any]:
    """``part``'s pairs, labels and pair features (None where there are none) on ``graph``."""
    pairs, labels = split.targets(part)
    return {"pairs": pairs, "labels": labels,
            "features": pair_inputs(pair_features, graph, pairs)}


def scored(model: LinkPredictor, split: LinkSplit, graph: Data,
           part: dict[str, Any]) -> dict[str, float]:
    """``split``'s metrics of ``model`` on a held-out part: the nodes embedded once, the pairs
    scored :data:`SCORE_CHUNK` at a time."""
    model.eval()
    pairs, features = part["pairs"], part["features"]
    with torch.no_grad():
        h = model.embed(graph)
        logits = torch.cat([model.score(h, pairs[:, lo:lo + SCORE_CHUNK], None if features is
                                        None else features[lo:lo + SCORE_CHUNK])
                            for lo in range(0, pairs.size(1), SCORE_CHUNK)]).numpy()
    labels = part["labels"].numpy()
    return split.metrics(logits[labels == 1], logits[labels == 0])


class BestEpoch:
    """The epoch of the best validation metric ``select_by`` so far, its model state, and
    early stopping after ``patience`` epochs without a better one."""

    def __init__(self, patience: int, select_by: str) -> None:
        self.patience, self.waited, self.select_by = patience, 0, select_by
        self.epoch, self.val, self.state = 0, {select_by: -1.0}, None

    def update(self, epoch: int, val: dict[str, float], net: torch.nn.Module) -> bool:
        """Record ``epoch``'s validation metrics; True when training should stop."""
        if val[self.select_by] > self.val[self.select_by]:
            self.epoch, self.val, self.waited = epoch, val, 0
            self.state = copy.deepcopy(net.state_dict())
            return False
        self.waited += 1
        return self.waited >= self.patience


def config_record(config: TrainConfig) -> dict[str, Any]:
    """The settings of ``config`` a link run reads, for its record."""
    return {k: getattr(config, k) for k in ("epochs", "lr", "weight_decay", "optimizer",
                                            "patience", "seed")}


def fit_link(split: LinkSplit, pe: Any = (), model: str = "gcn", channels: int = 64,
             layers: int = 2, pair_features: PairFeatureSet | None = None,
             decoder: str = "mlp", config: TrainConfig | None = None,
             **model_kwargs: Any) -> dict[str, Any]:
    """Train a :class:`~graphpe.nn.link.LinkPredictor` (``model``'s node model with the
    encodings ``pe``, ``channels`` wide, ``layers`` deep; the decoder reads the
    ``pair_features`` (default: the capped distance and the common-neighbour scores;
    ``PairFeatureSet(())``: none); ``decoder`` one of :data:`graphpe.nn.link.DECODERS`) for
    ``config.epochs`` full-batch epochs (stopping after ``config.patience`` without a better
    validation metric, ``split.select_by``: ROC-AUC, or the OGB set's own). Of ``config`` it
    reads ``epochs``, ``lr``, ``weight_decay``, ``optimizer``, ``patience``, ``seed`` and
    ``progress``. Returns the record: the validation
    and test metrics at the best validation epoch, the settings, the seconds."""
    config = config or TrainConfig()
    pair_features = PairFeatureSet() if pair_features is None else pair_features
    specs = resolve_pe(pe)
    transforms = transforms_of(specs)
    start = time.perf_counter()
    graphs = {part: encoded_graph(split, part, transforms) for part in ("train", "test")}
    graphs["val"] = graphs["train"]
    parts = {part: held_out(split, part, graphs[part], pair_features)
             for part in ("val", "test")}
    train_features = pair_inputs(pair_features, graphs["train"], split.train_pos)
    pe_seconds = time.perf_counter() - start
    seed_everything(config.seed)
    model_config = {"model": model, "channels": channels, "layers": layers,
                    "pe": pe_model_config(specs), "node_dim": split.graph.x.size(1),
                    **model_kwargs}
    net = build_link_model(model_config, pair_features.width, decoder)
    opt = make_optimizer(net, config.lr, config.weight_decay, config.optimizer)
    best = BestEpoch(config.patience, split.select_by)
    start = time.perf_counter()
    bar = tqdm(range(1, config.epochs + 1), desc=f"{split.name} links", unit="epoch",
               disable=not config.progress)
    for epoch in bar:
        loss = train_epoch(net, opt, split, graphs["train"], train_features, pair_features)
        val = scored(net, split, graphs["val"], parts["val"])
        bar.set_postfix(loss=f"{loss:.4f}", val=f"{val[split.select_by]:.4f}")
        if best.update(epoch, val, net):
            break
    seconds = time.perf_counter() - start
    net.load_state_dict(best.state)
    return {"dataset": split.name, "split_seed": split.seed, "model": model,
            "pe": [s.to_dict() for s in specs], "pair_features": list(pair_features.names),
            "max_dist": pair_features.max_dist, "decoder": decoder, "best_epoch": best.epoch,
            "epochs_run": epoch,
            "val": best.val, "test": scored(net, split, graphs["test"], parts["test"]),
            "select_by": split.select_by,
            "train_seconds": seconds, "seconds_per_epoch": seconds / epoch,
            "pe_seconds": pe_seconds, "params": sum(p.numel() for p in net.parameters()),
            "model_config": {**model_config, "pair_dim": pair_features.width},
            "config": config_record(config),
            "versions": versions()}


def pair_inputs(pair_features: PairFeatureSet, graph: Data,
                      pairs: torch.Tensor) -> torch.Tensor | None:
    """The features of ``pairs`` on ``graph`` (None where the decoder reads none)."""
    return (pair_features.compute(graph.edge_index, graph.num_nodes, pairs)
            if pair_features.names else None)


def train_epoch(net: LinkPredictor, opt: torch.optim.Optimizer, split: LinkSplit, graph: Data,
                train_features: torch.Tensor | None, pair_features: PairFeatureSet) -> float:
    """One full-batch step on every training edge and as many fresh non-edges."""
    from torch_geometric.utils import negative_sampling

    net.train()
    negatives = negative_sampling(graph.edge_index, split.num_nodes,
                                  num_neg_samples=split.train_pos.size(1))
    pairs = torch.cat([split.train_pos, negatives], dim=1)
    features = None
    if train_features is not None:
        features = torch.cat([train_features,
                              pair_inputs(pair_features, graph, negatives)])
    labels = torch.cat([torch.ones(split.train_pos.size(1)), torch.zeros(negatives.size(1))])
    opt.zero_grad()
    loss = F.binary_cross_entropy_with_logits(net(graph, pairs, features), labels)
    loss.backward()
    opt.step()
    return loss.item()


def seal_logits(model: SEAL, x: torch.Tensor, edge_index: torch.Tensor, num_nodes: int,
                pairs: torch.Tensor, settings: dict[str, Any], seed: int = 0) -> torch.Tensor:
    """``model``'s logits of ``pairs`` on the graph ``edge_index``, ``settings["batch_pairs"]``
    enclosing subgraphs (:func:`graphpe.ops.labeling.enclosing_subgraphs`) at a time."""
    out = []
    for start in range(0, pairs.size(1), settings["batch_pairs"]):
        chunk = pairs[:, start:start + settings["batch_pairs"]]
        sub = enclosing_subgraphs(edge_index, num_nodes, chunk, settings["hops"],
                                  labels=settings["labels"],
                                  max_nodes_per_hop=settings["max_nodes_per_hop"],
                                  seed=seed + start)
        out.append(model(x, sub.nodes, sub.edge_index, sub.batch, sub.labels,
                         sub.target_index))
    return torch.cat(out)


def fit_seal(split: LinkSplit, hops: int = 2, labels: str = "drnl", channels: int = 32,
             layers: int = 3, batch_pairs: int = 128, max_nodes_per_hop: int | None = None,
             dropout: float = 0.5, config: TrainConfig | None = None) -> dict[str, Any]:
    """Train :class:`~graphpe.nn.seal.SEAL` on ``split``: each epoch every training edge and
    as many fresh non-edges, in shuffled batches of ``batch_pairs`` pairs, each pair read
    through its ``hops``-hop enclosing subgraph with ``labels`` (``"drnl"``, ``"de"`` or
    ``"de+"``) and the node features, its own edge removed from it; validation and test as
    :func:`fit_link`'s. Of ``config`` it reads what :func:`fit_link` reads."""
    config = config or TrainConfig()
    check_positive_int("batch_pairs", batch_pairs)
    settings = {"hops": hops, "labels": labels, "batch_pairs": batch_pairs,
                "max_nodes_per_hop": max_nodes_per_hop}
    seed_everything(config.seed)
    x = split.graph.x
    net = SEAL(channels, layers, x.size(1), 1 if labels == "drnl" else 2, dropout)
    opt = make_optimizer(net, config.lr, config.weight_decay, config.optimizer)
    graphs = {part: split.message_edges(part) for part in ("train", "test")}
    graphs["val"] = graphs["train"]
    n = split.num_nodes

    def evaluate(part: str) -> dict[str, float]:
        pairs, truth = split.targets(part)
        net.eval()
        with torch.no_grad():
            logits = seal_logits(net, x, graphs[part], n, pairs, settings).numpy()
        return split.metrics(logits[truth.numpy() == 1], logits[truth.numpy() == 0])

    best = BestEpoch(config.patience, split.select_by)
    start = time.perf_counter()
    bar = tqdm(range(1, config.epochs + 1), desc=f"{split.name} SEAL", unit="epoch",
               disable=not config.progress)
    for epoch in bar:
        from torch_geometric.utils import negative_sampling

        net.train()
        negatives = negative_sampling(graphs["train"], n, num_neg_samples=split.train_pos.size(1))
        pairs = torch.cat([split.train_pos, negatives], dim=1)
        truth = torch.cat([torch.ones(split.train_pos.size(1)), torch.zeros(negatives.size(1))])
        order = torch.randperm(pairs.size(1))
        for lo in range(0, order.numel(), batch_pairs):
            take = order[lo:lo + batch_pairs]
            opt.zero_grad()
            logits = seal_logits(net, x, graphs["train"], n, pairs[:, take], settings,
                                 seed=epoch * pairs.size(1) + lo)
            F.binary_cross_entropy_with_logits(logits, truth[take]).backward()
            opt.step()
        val = evaluate("val")
        bar.set_postfix(val=f"{val[split.select_by]:.4f}")
        if best.update(epoch, val, net):
            break
    seconds = time.perf_counter() - start
    net.load_state_dict(best.state)
    return {"dataset": split.name, "split_seed": split.seed, "model": "seal", "pe": [],
            "labels": labels, "hops": hops, "pair_features": False, "best_epoch": best.epoch,
            "epochs_run": epoch, "val": best.val, "test": evaluate("test"),
            "train_seconds": seconds, "seconds_per_epoch": seconds / epoch, "pe_seconds": 0.0,
            "params": sum(p.numel() for p in net.parameters()),
            "model_config": {"model": "seal", "channels": channels, "layers": layers,
                             "dropout": dropout, **settings},
            "config": config_record(config),
            "versions": versions()}
