"""Molecules: ZINC (the 12k subset, PyG's loader) and the OGB molecule sets (``ogbg-mol*``,
OGB's loader, official split and Evaluator)."""

from __future__ import annotations

import os
from pathlib import Path

from graphpe.datasets.bundle import DatasetBundle, require_files


def load_zinc(root: Path, pre_transform, download: bool = False, **_) -> DatasetBundle:
    from torch_geometric.datasets import ZINC

    folder = root / "ZINC"
    require_files("ZINC", [folder / "raw" / "train.pickle", folder / "subset" / "processed"],
                  f"{folder}/raw/{{train,val,test}}.{{pickle,index}}", download)
    splits = [ZINC(str(folder), subset=True, split=s, pre_transform=pre_transform)
              for s in ("train", "val", "test")]
    return DatasetBundle("ZINC", *splits, task="graph_regression", metric="mae", out_dim=1,
                         node_vocab=28, edge_vocab=4)


def load_ogb_molecules(name: str, root: Path, pre_transform, download: bool = False,
                       **_) -> DatasetBundle:
    folder = root / name.replace("-", "_")
    # without RELEASE_v1.txt OGB asks on stdin whether to download again
    require_files(name, [folder / "RELEASE_v1.txt"],
                  f"{folder}/ (raw/, split/, mapping/ and RELEASE_v1.txt)", download)
    os.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")  # ogb 1.3.6 on torch >= 2.6
    try:
        from ogb.graphproppred import Evaluator, PygGraphPropPredDataset
        from ogb.utils.features import get_atom_feature_dims, get_bond_feature_dims
    except ImportError as err:
        raise ImportError(f"{name} needs the ogb package: pip install 'graphpe[ogb]'") from err
    ds = PygGraphPropPredDataset(name, root=str(root), pre_transform=pre_transform)
    split = ds.get_idx_split()
    evaluator = Evaluator(name)
    regression = ds.task_type == "regression"
    task = "graph_regression" if regression else "graph_multilabel"
    metric = "rmse" if evaluator.eval_metric == "rmse" else evaluator.eval_metric
    return DatasetBundle(name, ds[split["train"]], ds[split["valid"]], ds[split["test"]],
                         task=task, metric=metric, out_dim=ds.num_tasks,
                         node_vocab=list(get_atom_feature_dims()),
                         edge_vocab=list(get_bond_feature_dims()), evaluator=evaluator)
