"""Scoring a model on a split: its outputs on the split's graphs or nodes
(:func:`predictions`), the dataset's metric of them (:func:`score`: the bundle's evaluator,
OGB's or graphpe's, or MAE / accuracy), both at once (:func:`evaluate`), and how often each
class is predicted (:func:`predicted_classes`: a constant predictor shows)."""

from __future__ import annotations

import torch
from torch import nn
from torch_geometric.loader import DataLoader

from graphpe.datasets import DatasetBundle
from graphpe.run_log import batch_bar
from graphpe.runtime import autocast


def node_mask(batch, bundle: DatasetBundle, split: str) -> torch.Tensor | slice | None:
    """For node-level tasks on one graph shared by the splits: the nodes of ``split`` (its
    ``{split}_mask``; a sampled batch's seed nodes, which come first); None (every node
    scored) for graph-level tasks and for node tasks over many graphs (PATTERN,
    PascalVOC-SP: each split its own graphs, without masks)."""
    if not bundle.task.startswith("node_"):
        return None
    if "input_id" in batch:  # a NeighborLoader batch: its seeds are the split's nodes
        return slice(0, batch.batch_size)
    return batch.get(f"{split}_mask")


@torch.no_grad()
def predictions(model: nn.Module, loader: DataLoader, bundle: DatasetBundle, device: str,
                split: str = "val", gather: bool = False, precision: str = "fp32",
                progress: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """``(outputs, targets)`` of ``model`` on ``loader`` (the split's nodes only, for a node
    task on one graph), on the CPU in float32. With ``gather`` (one shard per process under
    torchrun) those of all processes, concatenated. ``progress``: a bar of the batches
    (:func:`graphpe.run_log.batch_bar`)."""
    model.eval()
    preds, targets = [], []
    for batch in batch_bar(loader, split, progress):
        batch = batch.to(device)
        with autocast(device, precision):
            out = model(batch)
        out, y = out.float(), batch.y
        mask = node_mask(batch, bundle, split)
        if mask is not None:
            out, y = out[mask], y[mask]
        preds.append(out.cpu())
        targets.append(y.cpu())
    if gather:
        import torch.distributed as dist

        shards = [None] * dist.get_world_size()
        dist.all_gather_object(shards, (preds, targets))
        preds = [p for shard_preds, _ in shards for p in shard_preds]
        targets = [t for _, shard_targets in shards for t in shard_targets]
    return torch.cat(preds), torch.cat(targets)


def score(bundle: DatasetBundle, pred: torch.Tensor, y: torch.Tensor) -> float:
    """``bundle``'s metric of the outputs ``pred`` against the targets ``y``."""
    if bundle.evaluator is not None:
        # OGB's acc Evaluators and graphpe's takes_labels ones (F1, ...) score class labels
        if bundle.evaluator.eval_metric == "acc" or getattr(bundle.evaluator, "takes_labels",
                                                            False):
            pred = pred.argmax(-1, keepdim=True)
        y = y.view(pred.shape)
        result = bundle.evaluator.eval({"y_true": y.numpy(), "y_pred": pred.numpy()})
        return float(result[bundle.evaluator.eval_metric])
    if bundle.metric == "mae":
        return float((pred.view(-1) - y.view(-1).float()).abs().mean())
    if bundle.metric == "accuracy":
        return float((pred.argmax(-1) == y.view(-1)).float().mean())
    raise ValueError(f"no evaluation for metric {bundle.metric!r}")


def predicted_classes(bundle: DatasetBundle, pred: torch.Tensor) -> list[int] | None:
    """How often each class is predicted (multi-class tasks: the arg-max's histogram; None
    for other tasks): a constant predictor shows as one non-zero count."""
    if not bundle.task.endswith("_classification") or pred.dim() != 2 or pred.size(1) < 2:
        return None
    return torch.bincount(pred.argmax(-1), minlength=pred.size(1)).tolist()


def evaluate(model: nn.Module, loader: DataLoader, bundle: DatasetBundle, device: str,
             split: str = "val", gather: bool = False, precision: str = "fp32",
             progress: bool = False) -> float:
    """The metric of ``model`` on ``loader``. With ``gather`` (one shard per process under
    torchrun) the predictions of all processes are concatenated first, so every process gets
    the metric of the whole split, exactly. ``precision`` as :class:`TrainConfig`'s (the
    predictions are scored in float32); ``progress`` as :func:`predictions`'."""
    return score(bundle, *predictions(model, loader, bundle, device, split, gather, precision,
                                      progress))
