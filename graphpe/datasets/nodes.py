"""Node property prediction on one large graph: OGB's node sets (``ogbn-arxiv``,
``ogbn-products``, ``ogbn-proteins``, ``ogbn-papers100M``: OGB's loader, official split and
``Evaluator``) and PyG's (Flickr, Reddit, Amazon-Computers/-Photo, Coauthor-CS/-Physics,
WikiCS). As for Cora, a bundle's three splits are the one graph, whose ``train_mask``,
``val_mask`` and ``test_mask`` say which nodes each split scores."""

from __future__ import annotations

import os
from pathlib import Path

import torch

from graphpe.datasets.bundle import (
    RANDOM_NODE_SPLIT,
    DatasetBundle,
    feature_widths,
    node_split_masks,
    require_files,
    with_masks,
)

OGBN_NAMES = ("ogbn-arxiv", "ogbn-products", "ogbn-proteins", "ogbn-papers100M")
#: name -> (its folder under root, PyG's class, the class's name argument, the raw files read)
PYG_NODE_SETS = {
    "Flickr": ("Flickr", "Flickr", None,
               ("adj_full.npz", "feats.npy", "class_map.json", "role.json")),
    "Reddit": ("Reddit", "Reddit", None, ("reddit_data.npz", "reddit_graph.npz")),
    "Amazon-Computers": ("Computers", "Amazon", "Computers",
                         ("amazon_electronics_computers.npz",)),
    "Amazon-Photo": ("Photo", "Amazon", "Photo", ("amazon_electronics_photo.npz",)),
    "Coauthor-CS": ("CS", "Coauthor", "CS", ("ms_academic_cs.npz",)),
    "Coauthor-Physics": ("Physics", "Coauthor", "Physics", ("ms_academic_phy.npz",)),
    "WikiCS": ("WikiCS", "WikiCS", None, ("data.json",)),
}
PYG_NODE_NAMES = tuple(PYG_NODE_SETS)
#: the sets without a standard split: a seeded stratified one (RANDOM_NODE_SPLIT)
UNSPLIT = ("Amazon-Computers", "Amazon-Photo", "Coauthor-CS", "Coauthor-Physics")
WIKICS_SPLITS = 20  # WikiCS's train/val masks: 20 columns, fold picks one


#: OGB's packages by the prefix of a dataset's name: node or link property prediction
OGB_TASKS = {"ogbn": "nodeproppred", "ogbl": "linkproppred"}


def ogb_meta(name: str) -> dict[str, str]:
    """OGB's description of the node or link set ``name`` (its row of ogb's ``master.csv``)."""
    import importlib

    import pandas as pd

    package = importlib.import_module(f"ogb.{OGB_TASKS[name.split('-')[0]]}")
    master = pd.read_csv(Path(package.__file__).parent / "master.csv", index_col=0,
                         keep_default_na=False)
    return dict(master[name])


def ogb_files(meta: dict[str, str], processed: bool = False, link: bool = False) -> list[str]:
    """The files of OGB's folder of a node set (or with ``link`` a link set) that its loader
    reads, relative to the folder: the release note, the split (a node set's index files, a
    link set's ``.pt`` dictionaries of edges) and the raw files PyG looks for, and until the
    graph is processed (``processed/geometric_data_processed.pt``) the raw files processing
    reads."""
    folder = f"split/{meta['split']}"
    split = [f"{folder}/{part}.{'pt' if link else 'csv.gz'}"
             for part in ("train", "valid", "test")]
    if meta["binary"] == "True":  # ogbn-papers100M: numpy archives
        raw, processing = ["raw/data.npz"], ["raw/node-label.npz"]
    else:
        raw = ["raw/edge.csv.gz"]
        raw += ["raw/node-feat.csv.gz"] if meta["has_node_attr"] == "True" else []
        raw += ["raw/edge-feat.csv.gz"] if meta["has_edge_attr"] == "True" else []
        extra = [f for key in ("additional node files", "additional edge files")
                 for f in meta[key].split(",") if meta[key] != "None"]
        processing = [f"raw/{f}.csv.gz" for f in ("num-node-list", "num-edge-list",
                                                    *([] if link else ["node-label"]), *extra)]
    return [f"RELEASE_v{meta['version']}.txt", *raw, *([] if processed else processing),
            *split]


def require_ogb(name: str, folder: Path, meta: dict[str, str], download: bool,
                link: bool = False) -> None:
    """A one-line FileNotFoundError naming the files OGB's loader would miss under ``folder``
    (without RELEASE_v1.txt OGB asks on stdin whether to download again; without a raw file
    PyG downloads the whole set)."""
    processed = (folder / "processed" / "geometric_data_processed.pt").exists()
    files = ogb_files(meta, processed, link)
    if (folder / f"split/{meta['split']}/split_dict.pt").exists():  # OGB reads it first
        files = [f for f in files if not f.startswith("split/")]
    missing = [f for f in files if not (folder / f).exists()]
    expected = f"OGB's files under {folder}/: {', '.join(files)}"
    if len(missing) < len(files):
        expected += f" ({len(missing)} missing: {', '.join(missing)})"
    require_files(name, [folder / f for f in files], expected, download, every=True)


def ogb_folder(name: str, root: Path) -> Path:
    """Where OGB keeps ``name`` under ``root`` (``ogbn_arxiv``, or ``ogbn_arxiv_pyg`` where
    that exists: OGB prefers it)."""
    folder = root / name.replace("-", "_")
    return folder.with_name(folder.name + "_pyg") if folder.with_name(
        folder.name + "_pyg").exists() else folder


def index_mask(index: torch.Tensor, num_nodes: int) -> torch.Tensor:
    """The boolean mask of the nodes ``index`` among ``num_nodes``."""
    mask = torch.zeros(num_nodes, dtype=torch.bool)
    mask[index] = True
    return mask


def load_ogb_nodes(name: str, root: Path, pre_transform, download: bool = False,
                   **_) -> DatasetBundle:
    """An OGB node set with its official split (``get_idx_split()``'s node ids as the graph's
    masks, the ids themselves in ``extra["split_idx"]``) and OGB's ``Evaluator``: accuracy
    for arxiv, products and papers100M (``node_classification``), the mean ROC-AUC of 112
    binary tasks for proteins (``node_multilabel``; its 8 edge features kept, and no node
    features: ``load_dataset`` gives it a constant ``x``)."""
    try:
        from ogb.nodeproppred import Evaluator, PygNodePropPredDataset
    except ImportError as err:
        raise ImportError(f"{name} needs the ogb package: pip install 'graphpe[ogb]'") from err
    meta = ogb_meta(name)
    folder = ogb_folder(name, root)
    require_ogb(name, folder, meta, download)
    os.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")  # ogb 1.3.6 on torch >= 2.6
    ds = PygNodePropPredDataset(name, root=str(root), pre_transform=pre_transform)
    split = ds.get_idx_split()
    data = ds._data
    masks = [index_mask(split[part], data.num_nodes) for part in ("train", "valid", "test")]
    graph = with_masks(ds, masks)
    evaluator = Evaluator(name)
    multilabel = ds.num_tasks > 1
    edge_attr = data.get("edge_attr")
    return DatasetBundle(
        name, graph, graph, graph, task="node_multilabel" if multilabel else "node_classification",
        metric="accuracy" if evaluator.eval_metric == "acc" else evaluator.eval_metric,
        out_dim=ds.num_tasks if multilabel else ds.num_classes, **feature_widths(data.x),
        edge_dim=None if edge_attr is None else edge_attr.size(-1), evaluator=evaluator,
        extra={"dataset": ds, "split_idx": split})


def load_pyg_nodes(name: str, root: Path, pre_transform, seed: int = 0, fold: int = 0,
                   download: bool = False, split: tuple[float, float, float] | None = None,
                   **_) -> DatasetBundle:
    """A node set of PyG by graphpe's name (:data:`PYG_NODE_SETS`), read from
    ``root/<folder>/raw`` in PyG's layout. Its standard split where it has one (Flickr's and
    Reddit's masks; WikiCS's test mask with its ``fold``-th of 20 train/val masks), a seeded
    stratified 60/20/20 one otherwise (Amazon, Coauthor; ``fold`` rotates the test part);
    ``split`` fractions give a seeded stratified split of those sizes in place of either."""
    import torch_geometric.datasets as pyg

    folder, class_name, argument, raw = PYG_NODE_SETS[name]
    raw_dir = root / folder / "raw"
    listed = raw[0] if len(raw) == 1 else "{" + ",".join(raw) + "}"
    require_files(name, [raw_dir / f for f in raw], f"{raw_dir}/{listed}", download,
                  every=True)
    make = getattr(pyg, class_name)
    if argument is not None:  # Amazon, Coauthor: root/<argument>/raw
        ds = make(str(root), argument, pre_transform=pre_transform)
    elif class_name == "WikiCS":
        ds = make(str(root / folder), pre_transform=pre_transform, is_undirected=True)
    else:
        ds = make(str(root / folder), pre_transform=pre_transform)
    data = ds._data
    if split is not None or name in UNSPLIT:
        masks = node_split_masks(data.y, split or RANDOM_NODE_SPLIT, seed=seed, fold=fold)
    elif name == "WikiCS":
        column = fold % WIKICS_SPLITS
        masks = (data.train_mask[:, column], data.val_mask[:, column], data.test_mask)
    else:
        masks = (data.train_mask, data.val_mask, data.test_mask)
    graph = with_masks(ds, masks)
    splits = {"splits": WIKICS_SPLITS} if name == "WikiCS" and split is None else {}
    return DatasetBundle(name, graph, graph, graph, task="node_classification",
                         metric="accuracy", out_dim=int(data.y.max()) + 1,
                         **feature_widths(data.x), extra={"dataset": ds, **splits})
