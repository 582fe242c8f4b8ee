"""Benchmark datasets: the standard PyG/OGB loaders behind one call, plus EXP.

:func:`load_dataset` returns the train/val/test splits and what a model needs to know about the
data (task, metric, output width, feature vocabularies). It reads from ``root``: when the files
are there nothing is downloaded; when they are missing and the machine is offline, the error
names the files and where they go (see the offline copies' README).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch_geometric.data import Data, InMemoryDataset

TASKS = {"graph_regression", "graph_classification", "graph_multilabel"}


def read_exp(path: str | Path) -> list[Data]:
    """Read EXP (Abboud et al., 2021) from its text file ``GRAPHSAT.txt``.

    Format (the GIN repository's): the first line is the number of graphs; each graph is a line
    ``n label`` followed by ``n`` lines ``node_label num_neighbours nbr_1 ... nbr_k``. Node labels
    become one-hot ``x`` ``[n, 2]``, the graph label ``y`` ``[1]``.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(
            f"EXP file not found: {path}. Place GRAPHSAT.txt (1200 graphs, from the EXP "
            "repository) there; on the project machines it is ../shared/data/exp/EXP/GRAPHSAT.txt"
        )
    lines = iter(path.read_text().split("\n"))
    num_graphs = int(next(lines).strip())
    graphs = []
    for _ in range(num_graphs):
        n, label = (int(v) for v in next(lines).split())
        node_labels, rows, cols = [], [], []
        for i in range(n):
            values = [int(v) for v in next(lines).split()]
            node_labels.append(values[0])
            nbrs = values[2 : 2 + values[1]]
            rows += [i] * len(nbrs)
            cols += nbrs
        edge_index = torch.tensor([rows, cols], dtype=torch.long).reshape(2, -1)
        x = torch.nn.functional.one_hot(torch.tensor(node_labels), 2).float()
        graphs.append(Data(x=x, edge_index=edge_index, y=torch.tensor([label]), num_nodes=n))
    return graphs


class EXP(InMemoryDataset):
    """EXP as a PyG dataset: reads ``root/raw/GRAPHSAT.txt`` (or ``root/GRAPHSAT.txt``)."""

    def __init__(self, root: str | Path, transform=None, pre_transform=None) -> None:
        self._source = Path(root) / "GRAPHSAT.txt"
        super().__init__(str(root), transform, pre_transform)
        self.load(self.processed_paths[0])

    @property
    def raw_file_names(self) -> list[str]:
        return ["GRAPHSAT.txt"]

    @property
    def processed_file_names(self) -> list[str]:
        return ["exp.pt"]

    def download(self) -> None:
        if self._source.exists():
            Path(self.raw_dir).mkdir(parents=True, exist_ok=True)
            (Path(self.raw_dir) / "GRAPHSAT.txt").write_bytes(self._source.read_bytes())
            return
        read_exp(Path(self.raw_dir) / "GRAPHSAT.txt")  # raises with the expected location

    def process(self) -> None:
        graphs = read_exp(self.raw_paths[0])
        if self.pre_transform is not None:
            graphs = [self.pre_transform(g) for g in graphs]
        self.save(graphs, self.processed_paths[0])


@dataclass
class DatasetBundle:
    """Splits of a dataset and what a model needs to know about it."""

    name: str
    train: Any
    val: Any
    test: Any
    task: str  # graph_regression | graph_classification | graph_multilabel | node_classification
    metric: str  # mae | rmse | rocauc | accuracy
    out_dim: int
    node_vocab: int | list[int] | None = None
    node_dim: int | None = None
    edge_vocab: int | list[int] | None = None
    edge_dim: int | None = None
    evaluator: Any = None
    extra: dict = field(default_factory=dict)

    @property
    def higher_is_better(self) -> bool:
        return self.metric in ("rocauc", "accuracy")

    def model_kwargs(self) -> dict[str, Any]:
        """Arguments of :func:`graphpe.nn.build.build_model` fixed by the data."""
        task = "graph_classification" if self.task == "graph_multilabel" else self.task
        return {"out_dim": self.out_dim, "task": task, "node_vocab": self.node_vocab,
                "node_dim": self.node_dim, "edge_vocab": self.edge_vocab,
                "edge_dim": self.edge_dim}


def _require(name: str, paths: list[Path], expected: str, download: bool) -> None:
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


def _zinc(root: Path, pre_transform, download: bool = False, **_) -> DatasetBundle:
    from torch_geometric.datasets import ZINC

    folder = root / "ZINC"
    _require("ZINC", [folder / "raw" / "train.pickle", folder / "subset" / "processed"],
             f"{folder}/raw/{{train,val,test}}.{{pickle,index}}", download)
    splits = [ZINC(str(folder), subset=True, split=s, pre_transform=pre_transform)
              for s in ("train", "val", "test")]
    return DatasetBundle("ZINC", *splits, task="graph_regression", metric="mae", out_dim=1,
                         node_vocab=28, edge_vocab=4)


def _ogb(name: str, root: Path, pre_transform, download: bool = False, **_) -> DatasetBundle:
    folder = root / name.replace("-", "_")
    # without RELEASE_v1.txt OGB asks on stdin whether to download again
    _require(name, [folder / "RELEASE_v1.txt"],
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


def _tu(name: str, root: Path, pre_transform, seed: int = 0, fold: int = 0,
        download: bool = False, split: tuple[float, float, float] | None = None
        ) -> DatasetBundle:
    from torch_geometric.datasets import TUDataset

    folder = root / name
    _require(name, [folder / "raw" / f"{name}_A.txt", folder / "processed"],
             f"{folder}/raw/{name}_*.txt (a name graphpe does not know is read as a TU "
             "dataset)", download)
    # use_edge_attr: the edge labels/attributes (MUTAG's bond types) reach the model, so "gine"
    # is a GINE there and not a GIN
    ds = TUDataset(str(root), name, pre_transform=pre_transform, use_edge_attr=True)
    train, val, test = stratified_split(ds._data.y, fractions=split or (0.8, 0.1, 0.1),
                                        seed=seed, fold=fold)
    categorical = ds._data.x.dtype == torch.long
    edge_dim = ds.num_edge_features or None
    return DatasetBundle(name, ds[train], ds[val], ds[test], task="graph_classification",
                         metric="accuracy", out_dim=ds.num_classes,
                         node_dim=None if categorical else ds.num_node_features,
                         node_vocab=int(ds._data.x.max()) + 1 if categorical else None,
                         edge_dim=edge_dim, extra={"dataset": ds})


def _csl(root: Path, pre_transform, fold: int = 0, download: bool = False,
         **_) -> DatasetBundle:
    from torch_geometric.datasets import GNNBenchmarkDataset

    folder = root / "CSL"
    _require("CSL", [folder / "raw" / "graphs_Kary_Deterministic_Graphs.pkl",
                     folder / "processed"],
             f"{folder}/raw/graphs_Kary_Deterministic_Graphs.pkl and y_Kary_*.pt", download)
    ds = GNNBenchmarkDataset(str(root), "CSL", pre_transform=pre_transform)
    # 5 stratified folds of 30 graphs (3 per class): 90 train, 30 val, 30 test
    train, val, test = stratified_split(ds._data.y, fractions=(0.6, 0.2, 0.2), seed=0, fold=fold)
    return DatasetBundle("CSL", ds[train], ds[val], ds[test], task="graph_classification",
                         metric="accuracy", out_dim=10, node_vocab=1)


def _exp(root: Path, pre_transform, seed: int = 0, fold: int = 0) -> DatasetBundle:
    ds = EXP(root / "EXP", pre_transform=pre_transform)
    train, val, test = stratified_split(ds._data.y, seed=seed, fold=fold)
    return DatasetBundle("EXP", ds[train], ds[val], ds[test], task="graph_classification",
                         metric="accuracy", out_dim=2, node_dim=2)


def _planetoid(name: str, root: Path, pre_transform, download: bool = False, seed: int = 0,
               fold: int = 0, split: tuple[float, float, float] | None = None,
               **_) -> DatasetBundle:
    from torch_geometric.datasets import Planetoid

    folder = root / name
    _require(name, [folder / "raw" / f"ind.{name.lower()}.x", folder / "processed"],
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


OGB_NAMES = ("ogbg-molhiv", "ogbg-molesol", "ogbg-molfreesolv", "ogbg-molbace", "ogbg-molbbbp")
TU_NAMES = ("MUTAG", "PROTEINS", "NCI1", "IMDB-BINARY")
PLANETOID_NAMES = ("Cora", "CiteSeer")
DATASETS = ("ZINC", "CSL", "EXP", *OGB_NAMES, *TU_NAMES, *PLANETOID_NAMES)


def load_dataset(
    name: str,
    root: str | Path,
    pre_transform: Callable | None = None,
    seed: int = 0,
    fold: int = 0,
    download: bool = False,
    split: tuple[float, float, float] | None = None,
) -> DatasetBundle:
    """Load ``name`` from ``root`` with its standard splits (ZINC, OGB, the public Planetoid
    masks for node classification) or a seeded stratified split (CSL, EXP, TU: 80/10/10,
    ``fold`` choosing the test part). ``split=(train, val, test)`` fractions (each in (0, 1),
    summing to 1) choose other sizes: for TU datasets the seeded stratified split with those
    fractions (a k-fold with ``k = round(1 / test)``, so the test part is exact when ``1 / test``
    is an integer, e.g. ``(0.5, 0.25, 0.25)``), for Cora/CiteSeer random stratified node masks
    (seeded by ``seed``) in place of the public ones; other datasets keep their standard
    splits and refuse it. TU and Planetoid bundles carry the whole dataset in
    ``extra["dataset"]``, for callers that draw their own splits. ``name`` is one of
    :data:`DATASETS`, any OGB molecule set ``ogbg-mol*`` (official split and Evaluator), any
    other TU dataset by its name (node and edge features kept), or ``module:function`` for an
    own dataset: ``function(root, pre_transform=..., seed=..., fold=..., download=...)``
    returning a :class:`DatasetBundle` (see ``examples/own_dataset.py``). Graphs without node
    features (CSL, IMDB-BINARY) get a constant categorical ``x`` through ``pre_transform``.
    ``download`` lets the standard loaders fetch missing files."""
    root = Path(root)
    if not isinstance(name, str) or not name:
        raise ValueError(f"dataset must be a name, got {name!r}")
    if split is not None:
        split = check_split(split)
        if name in ("ZINC", "CSL", "EXP") or ":" in name or name.startswith("ogbg-"):
            raise ValueError(f"{name}: split applies to TU datasets and Cora/CiteSeer; "
                             f"{name} keeps its standard split")
    if ":" in name:
        return _own(name, root, pre_transform, seed=seed, fold=fold, download=download)
    if name.startswith("ogbg-") and not name.startswith("ogbg-mol"):
        raise ValueError(f"{name}: graphpe loads the OGB molecule sets (ogbg-mol*); for other "
                         "OGB data write a module:function entry point (examples/own_dataset.py)")
    if name == "ZINC":
        return _zinc(root, pre_transform, download=download)
    if name.startswith("ogbg-mol"):
        return _ogb(name, root, pre_transform, download=download)
    if name == "EXP":
        return _exp(root, pre_transform, seed=seed, fold=fold)
    if name in PLANETOID_NAMES:
        return _planetoid(name, root, pre_transform, download=download, seed=seed,
                          fold=fold, split=split)
    constant = _with_constant_x(pre_transform)
    if name == "CSL":
        return _csl(root, constant, fold=fold, download=download)
    return _tu(name, root, constant, seed=seed, fold=fold, download=download, split=split)


def _own(spec: str, root: Path, pre_transform, **kwargs) -> DatasetBundle:
    """``module:function`` -> the bundle the function returns."""
    import importlib

    module_name, _, func_name = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise ValueError(f"dataset {spec!r}: cannot import module {module_name!r} ({err}); "
                         "is it on PYTHONPATH?") from None
    build = getattr(module, func_name, None)
    if not callable(build):
        raise ValueError(f"dataset {spec!r}: module {module_name!r} has no function "
                         f"{func_name!r}")
    bundle = build(root, pre_transform=pre_transform, **kwargs)
    if not isinstance(bundle, DatasetBundle):
        raise ValueError(f"dataset {spec!r}: {func_name}() must return a "
                         f"graphpe.datasets.DatasetBundle, got {type(bundle).__name__}")
    return bundle


def _with_constant_x(pre_transform: Callable | None) -> Callable:
    def apply(data: Data) -> Data:
        if data.get("x") is None:
            data.x = torch.zeros(data.num_nodes, 1, dtype=torch.long)
        return pre_transform(data) if pre_transform is not None else data

    return apply
