"""The graph-transformer benchmarks of benchmarking-gnns (Dwivedi et al., "Benchmarking Graph
Neural Networks", JMLR 2023) through PyG's ``GNNBenchmarkDataset``, and MalNet-Tiny through
PyG's ``MalNetTiny``, each with its standard split and metric as GraphGPS (Rampasek et al.,
NeurIPS 2022) reports it:

- MNIST, CIFAR10: superpixel graphs of images, 10 classes, accuracy. As GraphGPS feeds them:
  ``x`` the pixel intensity (MNIST 1, CIFAR10 3 channels) followed by the superpixel's
  position (``pos``, 2), ``edge_attr [e, 1]`` the edge weight.
- PATTERN (2 classes), CLUSTER (6): node classification in stochastic block model graphs,
  every node of a split's graphs scored, by benchmarking-gnns' weighted accuracy
  (:class:`~graphpe.datasets.metrics.WeightedAccuracy`). Their stored edge features carry
  nothing (GraphGPS reads none): dropped.
- MalNet-Tiny: 5,000 function call graphs of Android apps, 5 classes, accuracy, MalNet's
  official split (70/10/20). The graphs have no features: ``x`` is PyG's
  ``LocalDegreeProfile`` (5 statistics of a node's and its neighbours' degrees), GraphGPS's
  MalNet-Tiny features.

Files, in PyG's layouts: ``root/NAME/raw/NAME_v2.pt`` (NAME one of MNIST, CIFAR10, PATTERN,
CLUSTER: PyG's benchmarking-gnns zips) and ``root/MalNetTiny/raw/malnet-graphs-tiny/`` (the
``.edgelist`` files) with ``root/MalNetTiny/raw/split_info_tiny/type/{train,val,test}.txt``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import torch
from torch_geometric.data import Data

from graphpe.datasets.bundle import DatasetBundle, feature_widths, require_files
from graphpe.datasets.metrics import WeightedAccuracy

#: name -> (task, metric, classes)
BENCHMARK_SETS = {
    "MNIST": ("graph_classification", "accuracy", 10),
    "CIFAR10": ("graph_classification", "accuracy", 10),
    "PATTERN": ("node_classification", "weighted_accuracy", 2),
    "CLUSTER": ("node_classification", "weighted_accuracy", 6),
}
BENCHMARK_NAMES = tuple(BENCHMARK_SETS)
MALNET_CLASSES = 5


def benchmark_features(name: str, pre_transform: Callable | None) -> Callable:
    """``pre_transform`` preceded by GraphGPS's features of ``name`` (see the module
    docstring): MNIST/CIFAR10 ``x`` and ``pos`` side by side, edge weights as a column;
    PATTERN/CLUSTER without their edge features."""
    def apply(data: Data) -> Data:
        if name in ("MNIST", "CIFAR10"):
            x = data.x.view(data.num_nodes, -1).float()
            data.x = torch.cat([x, data.pos.view(data.num_nodes, -1).float()], dim=-1)
            if data.get("edge_attr") is not None:
                data.edge_attr = data.edge_attr.view(data.edge_index.size(1), -1).float()
        else:
            data.edge_attr = None
            data.x = data.x.float() if data.x.dtype.is_floating_point else data.x
        return pre_transform(data) if pre_transform is not None else data

    return apply


def load_gnn_benchmark(name: str, root: Path, pre_transform, download: bool = False,
                       **_) -> DatasetBundle:
    """MNIST, CIFAR10, PATTERN or CLUSTER through PyG's ``GNNBenchmarkDataset`` with its
    standard train/val/test split (see the module docstring)."""
    from torch_geometric.datasets import GNNBenchmarkDataset

    raw = root / name / "raw" / f"{name}_v2.pt"
    require_files(name, [raw], f"{raw} (PyG's GNNBenchmarkDataset layout: the file of "
                  f"{GNNBenchmarkDataset.urls[name]})", download)
    transform = benchmark_features(name, pre_transform)
    splits = [GNNBenchmarkDataset(str(root), name, split=split, pre_transform=transform)
              for split in ("train", "val", "test")]
    task, metric, classes = BENCHMARK_SETS[name]
    data = splits[0]._data
    edge_attr = data.get("edge_attr")
    return DatasetBundle(name, *splits, task=task, metric=metric, out_dim=classes,
                         **feature_widths(data.x),
                         edge_dim=None if edge_attr is None else edge_attr.size(-1),
                         evaluator=WeightedAccuracy() if metric == "weighted_accuracy"
                         else None)


def load_malnet_tiny(root: Path, pre_transform, download: bool = False,
                     **_) -> DatasetBundle:
    """MalNet-Tiny through PyG's ``MalNetTiny``: its official split, accuracy over 5
    classes, ``LocalDegreeProfile`` node features (see the module docstring)."""
    from torch_geometric.datasets import MalNetTiny
    from torch_geometric.transforms import Compose, LocalDegreeProfile

    raw = root / "MalNetTiny" / "raw"
    require_files("MalNet-Tiny", [raw / "malnet-graphs-tiny", raw / "split_info_tiny" / "type"],
                  f"{raw}/malnet-graphs-tiny/ (the .edgelist files) and "
                  f"{raw}/split_info_tiny/type/{{train,val,test}}.txt (PyG's MalNetTiny "
                  "layout)", download, every=True)
    transform = Compose([LocalDegreeProfile(), *([pre_transform] if pre_transform else [])])
    splits = [MalNetTiny(str(root / "MalNetTiny"), split=split, pre_transform=transform)
              for split in ("train", "val", "test")]
    return DatasetBundle("MalNet-Tiny", *splits, task="graph_classification",
                         metric="accuracy", out_dim=MALNET_CLASSES, node_vocab=None,
                         node_dim=splits[0]._data.x.size(-1))
