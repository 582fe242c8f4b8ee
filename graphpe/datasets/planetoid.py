"""Node classification on one graph: Cora, CiteSeer and PubMed (PyG's ``Planetoid``)."""

from __future__ import annotations

from pathlib import Path

from graphpe.datasets.bundle import DatasetBundle, node_split_masks, require_files, with_masks


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
        ds = with_masks(ds, node_split_masks(ds._data.y, split, seed=seed, fold=fold))
    return DatasetBundle(name, ds, ds, ds, task="node_classification", metric="accuracy",
                         out_dim=ds.num_classes, node_dim=ds.num_node_features,
                         extra={"dataset": ds})
