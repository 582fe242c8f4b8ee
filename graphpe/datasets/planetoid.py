"""Node classification on one graph: Cora and CiteSeer (PyG's ``Planetoid``)."""

from __future__ import annotations

import copy
from pathlib import Path

from graphpe.datasets.bundle import DatasetBundle, node_split_masks, require_files


def load_planetoid(name: str, root: Path, pre_transform, download: bool = False, seed: int = 0,
               fold: int = 0, split: tuple[float, float, float] | None = None,
               **_) -> DatasetBundle:
    from torch_geometric.datasets import Planetoid

    folder = root / name
    require_files(name, [folder / "raw" / f"ind.{name.lower()}.x", folder / "processed"],
                  f"{folder}/raw/ind.{name.lower()}.*", download)
    ds = Planetoid(str(root), name, pre_transform=pre_transform)
    # one graph; the standard public split lives in its train/val/test masks, a random one
    # (split given) replaces them in a copy of the storage
    if split is not None:
        data = copy.copy(ds._data)
        data.train_mask, data.val_mask, data.test_mask = node_split_masks(
            data.y, split, seed=seed, fold=fold)
        ds = copy.copy(ds)
        ds._data, ds._data_list = data, None
    return DatasetBundle(name, ds, ds, ds, task="node_classification", metric="accuracy",
                         out_dim=ds.num_classes, node_dim=ds.num_node_features,
                         extra={"dataset": ds})
