"""What every loader returns (:class:`DatasetBundle`), the seeded splits, and the check that
a dataset's files are there before a loader runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch


@dataclass
class DatasetBundle:
    """Splits of a dataset and what a model needs to know about it."""

    name: str
    train: Any
    val: Any
    test: Any
    task: str  # graph_regression | graph_classification | graph_multilabel | node_classification
    metric: str  # mae | rmse | rocauc | accuracy | ap
    out_dim: int
    node_vocab: int | list[int] | None = None
    node_dim: int | None = None
    edge_vocab: int | list[int] | None = None
    edge_dim: int | None = None
    evaluator: Any = None
    extra: dict = field(default_factory=dict)

    @property
    def higher_is_better(self) -> bool:
        return self.metric in ("rocauc", "accuracy", "ap")

    def model_kwargs(self) -> dict[str, Any]:
        """Arguments of :func:`graphpe.nn.build.build_model` fixed by the data."""
        task = "graph_classification" if self.task == "graph_multilabel" else self.task
        return {"out_dim": self.out_dim, "task": task, "node_vocab": self.node_vocab,
                "node_dim": self.node_dim, "edge_vocab": self.edge_vocab,
                "edge_dim": self.edge_dim}


def require_files(name: str, paths: list[Path], expected: str, download: bool) -> None:
    """Raise unless the files are there (or ``download`` allows the loader to fetch them)."""
    if download or any(p.exists() for p in paths):
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
