"""Benchmark datasets: the standard PyG/OGB loaders behind one call, plus EXP and CSL, node
property prediction on large graphs (OGB's ``ogbn-*``, PyG's node sets) and plain graph files.

:func:`load_dataset` returns the train/val/test splits and what a model needs to know about the
data (task, metric, output width, feature vocabularies). It reads from ``root``: when the files
are there nothing is downloaded; when they are missing, the error names the files and where
they go, and ``download=True`` fetches them (one line saying so when the machine is offline).
CSL needs no files: without PyG's copy under ``root`` it is generated in code.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from urllib.error import URLError

from graphpe.datasets.benchmarking import BENCHMARK_NAMES, load_gnn_benchmark, load_malnet_tiny
from graphpe.datasets.bundle import (
    DatasetBundle,
    check_split,
    node_split_masks,
    require_files,
    stratified_split,
    with_constant_x,
)
from graphpe.datasets.exp import EXP, load_exp, read_exp
from graphpe.datasets.graph_files import is_graph_spec, load_graph_files, read_graph
from graphpe.datasets.heterophilous import HETEROPHILOUS_NAMES, load_heterophilous
from graphpe.datasets.lrgb import load_peptides_func, load_peptides_struct
from graphpe.datasets.lrgb_pyg import LRGB_PYG_NAMES, load_lrgb_pyg
from graphpe.datasets.metrics import (
    AveragePrecision,
    BinaryROCAUC,
    FilteredMRR,
    MacroF1,
    WeightedAccuracy,
)
from graphpe.datasets.molecules import load_ogb_molecules, load_zinc
from graphpe.datasets.nodes import OGBN_NAMES, PYG_NODE_NAMES, load_ogb_nodes, load_pyg_nodes
from graphpe.datasets.ogb_graphs import OGBG_OTHER_NAMES, load_ogb_graphs, load_pcqm4mv2
from graphpe.datasets.planetoid import load_planetoid
from graphpe.datasets.tu import load_csl, load_tu

__all__ = ["DATASETS", "EXP", "AveragePrecision", "BinaryROCAUC", "DatasetBundle",
           "FilteredMRR", "MacroF1",
           "WeightedAccuracy", "check_split", "load_dataset", "node_split_masks", "read_exp",
           "read_graph", "require_files", "stratified_split"]

OGB_NAMES = ("ogbg-molhiv", "ogbg-molesol", "ogbg-molfreesolv", "ogbg-molbace", "ogbg-molbbbp")
TU_NAMES = ("MUTAG", "PROTEINS", "NCI1", "IMDB-BINARY")
PLANETOID_NAMES = ("Cora", "CiteSeer", "PubMed")
#: the graph-transformer benchmarks with their own loaders (LRGB, benchmarking-gnns, ...)
BENCHMARKS = ("Peptides-func", "Peptides-struct", *LRGB_PYG_NAMES, *BENCHMARK_NAMES,
              "MalNet-Tiny", "PCQM4Mv2", *OGBG_OTHER_NAMES)
DATASETS = ("ZINC", "CSL", "EXP", *BENCHMARKS, *OGB_NAMES, *TU_NAMES, *PLANETOID_NAMES,
            *OGBN_NAMES, *PYG_NODE_NAMES, *HETEROPHILOUS_NAMES)


# the names load_dataset takes, as ``graphpe train --help`` lists them
DATASET_HELP = (
    "ZINC, CSL (needs no files: generated in code where PyG's copy is not under --root), EXP, "
    "LRGB: Peptides-func, Peptides-struct, PascalVOC-SP, COCO-SP, PCQM-Contact (loads; "
    "not trainable yet); benchmarking-gnns: MNIST, CIFAR10, PATTERN, CLUSTER; MalNet-Tiny, "
    "PCQM4Mv2, ogbg-ppa, ogbg-code2 (loads; not trainable yet), any OGB molecule set "
    "(ogbg-molhiv, ogbg-mollipo, ...), any TU dataset by name (MUTAG, PTC_MR, ...); nodes "
    "of one graph: Cora, CiteSeer, PubMed, "
    "ogbn-arxiv, ogbn-products, ogbn-proteins, ogbn-papers100M, Flickr, Reddit, WikiCS, "
    "Amazon-Computers, Amazon-Photo, Coauthor-CS, Coauthor-Physics; the heterophilous sets "
    "of Platonov et al. (ten fixed splits, --splits): Roman-empire, Amazon-ratings, "
    "Minesweeper, Tolokers, Questions; graph:PATH (a graph under --root: an .npz "
    "adjacency or split archive, an edge list or a GraphSAINT folder); or module:function for "
    "an own dataset (see examples/own_dataset.py)")


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
    is an integer, e.g. ``(0.5, 0.25, 0.25)``), for the node sets outside OGB (Cora, CiteSeer,
    PubMed, PyG's node sets, labelled ``graph:`` files) random stratified node masks (seeded by
    ``seed``) in place of the standard ones; other datasets keep their standard splits and
    refuse it. TU and the PyG node bundles carry the whole dataset in ``extra["dataset"]``, for
    callers that draw their own splits. ``name`` is one of :data:`DATASETS`, any OGB molecule
    set ``ogbg-mol*`` (official split and Evaluator), any other TU dataset by its name (node and
    edge features kept), or ``module:function`` for an own dataset: ``function(root,
    pre_transform=..., seed=..., fold=..., download=...)`` returning a :class:`DatasetBundle`
    (see ``examples/own_dataset.py``).

    Node property prediction on one graph (train/val/test the same graph, its
    ``train_mask`` / ``val_mask`` / ``test_mask`` the split): Cora, CiteSeer, PubMed; the
    heterophilous sets of Platonov et al. (Roman-empire, Amazon-ratings, Minesweeper,
    Tolokers, Questions: ten fixed splits, ``fold`` picking one, ROC-AUC for the binary ones;
    :mod:`graphpe.datasets.heterophilous`); OGB's
    ``ogbn-arxiv``, ``ogbn-products``, ``ogbn-proteins`` (``node_multilabel``: 112 binary
    tasks, ROC-AUC) and ``ogbn-papers100M`` with the official split and ``Evaluator``
    (:mod:`graphpe.datasets.nodes`); PyG's Flickr, Reddit, WikiCS (their split; WikiCS's
    ``fold``-th of 20) and Amazon-Computers, Amazon-Photo, Coauthor-CS, Coauthor-Physics
    (seeded stratified 60/20/20, ``fold`` choosing the test part); and ``graph:PATH``, a plain
    graph from files under ``root`` (an ``.npz`` adjacency, an edge list, or a GraphSAINT
    folder: :mod:`graphpe.datasets.graph_files`; ``graph:NAME`` with a bare Python name is
    a file where ``root`` holds one, else a module ``graph``'s function, as before).

    The graph-transformer benchmarks (:data:`BENCHMARKS`), each with its standard split and
    metric: LRGB's Peptides-func (AP), Peptides-struct (MAE), PascalVOC-SP and COCO-SP (node
    classification over many graphs, macro F1) and PCQM-Contact (filtered MRR; loaded, not
    trainable yet); benchmarking-gnns' MNIST, CIFAR10 (accuracy), PATTERN, CLUSTER (node
    classification over many graphs, weighted accuracy); MalNet-Tiny (accuracy), PCQM4Mv2
    (MAE; OGB's valid split as test), ogbg-ppa (accuracy) and ogbg-code2 (sub-token F1;
    loaded, not trainable yet). See :mod:`graphpe.datasets.lrgb`,
    :mod:`~graphpe.datasets.lrgb_pyg`, :mod:`~graphpe.datasets.benchmarking` and
    :mod:`~graphpe.datasets.ogb_graphs`.

    Graphs without node features (CSL, IMDB-BINARY, ogbn-proteins, ogbg-ppa, graph files without
    ``feats.npy``) get a constant categorical ``x`` through ``pre_transform``. ``download``
    lets the standard loaders fetch missing files."""
    root = Path(root)
    loader = _loader(name, split, root)
    options = {"seed": seed, "fold": fold, "download": download}
    if loader is None:
        return _own(name, root, pre_transform, **options)
    # graphs without node features (CSL, IMDB-BINARY, ogbn-proteins, ...): a constant x
    if name in ("CSL", "ogbn-proteins", "ogbg-ppa") or getattr(loader, "func", None) in (
            load_tu, load_graph_files):
        pre_transform = with_constant_x(pre_transform)
    try:
        return loader(root, pre_transform, **options)
    except (URLError, OSError) as error:
        if not download or isinstance(error, FileNotFoundError):
            raise
        raise ConnectionError(f"{name}: the download failed ({_reason(error)}); on a machine "
                              f"without network place the dataset's files under {root} "
                              "instead") from None


def _loader(name: str, split, root: Path) -> Callable[..., DatasetBundle] | None:
    """The loader of ``name`` (called ``loader(root, pre_transform, seed=, fold=,
    download=)``), ``split`` bound where it applies (checked here); None for an own
    ``module:function``."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"dataset must be a name, got {name!r}")
    graph_file = is_graph_spec(name, root)
    if split is not None:
        split = check_split(split)
        if name in LOADERS or name in BENCHMARKS or name in HETEROPHILOUS_NAMES or \
                name.startswith(("ogbg-", "ogbn-")) or (
                ":" in name and not graph_file):
            raise ValueError(f"{name}: split applies to TU datasets and the node sets outside "
                             f"OGB (Cora, Amazon-Photo, graph:PATH, ...); {name} keeps its "
                             "standard split")
    if name.startswith("ogbg-") and not name.startswith("ogbg-mol") and \
            name not in OGBG_OTHER_NAMES:
        raise ValueError(f"{name}: graphpe loads the OGB molecule sets (ogbg-mol*), ogbg-ppa "
                         "and ogbg-code2; for other OGB data write a module:function entry "
                         "point (examples/own_dataset.py)")
    if name.startswith("ogbn-") and name not in OGBN_NAMES:
        raise ValueError(f"{name}: graphpe loads OGB's homogeneous node sets "
                         f"({', '.join(OGBN_NAMES)}); for other OGB data write a "
                         "module:function entry point (examples/own_dataset.py)")
    if graph_file:
        return functools.partial(load_graph_files, name, split=split)
    if ":" in name:
        return None
    if name.startswith("ogbg-mol"):
        return functools.partial(load_ogb_molecules, name)
    if name in OGBG_OTHER_NAMES:
        return functools.partial(load_ogb_graphs, name)
    if name in LRGB_PYG_NAMES:
        return functools.partial(load_lrgb_pyg, name)
    if name in BENCHMARK_NAMES:
        return functools.partial(load_gnn_benchmark, name)
    if name in OGBN_NAMES:
        return functools.partial(load_ogb_nodes, name)
    if name in PLANETOID_NAMES:
        return functools.partial(load_planetoid, name, split=split)
    if name in PYG_NODE_NAMES:
        return functools.partial(load_pyg_nodes, name, split=split)
    if name in HETEROPHILOUS_NAMES:
        return functools.partial(load_heterophilous, name)
    if name in LOADERS:
        return LOADERS[name]
    known = (*DATASETS, *LOADERS, *HETEROPHILOUS_NAMES, *OGBN_NAMES, *OGBG_OTHER_NAMES)
    return functools.partial(load_tu, name, split=split,  # any other name is a TU dataset
                             known_names=known)


LOADERS: dict[str, Callable[..., DatasetBundle]] = {
    "ZINC": load_zinc, "CSL": load_csl, "EXP": load_exp, "Peptides-func": load_peptides_func,
    "Peptides-struct": load_peptides_struct, "MalNet-Tiny": load_malnet_tiny,
    "MalNetTiny": load_malnet_tiny, "PCQM4Mv2": load_pcqm4mv2}


def _reason(error: BaseException) -> str:
    reason = getattr(error, "reason", None) or error
    return " ".join(str(reason).split())


def _own(spec: str, root: Path, pre_transform, **kwargs) -> DatasetBundle:
    """``module:function`` -> the bundle the function returns."""
    import importlib

    module_name, _, func_name = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        hint = (f" (nor is there a graph file {root / func_name})"
                if module_name == "graph" else "")
        raise ValueError(f"dataset {spec!r}: cannot import module {module_name!r} ({err}); "
                         f"is it on PYTHONPATH?{hint}") from None
    build = getattr(module, func_name, None)
    if not callable(build):
        raise ValueError(f"dataset {spec!r}: module {module_name!r} has no function "
                         f"{func_name!r}")
    bundle = build(root, pre_transform=pre_transform, **kwargs)
    if not isinstance(bundle, DatasetBundle):
        raise ValueError(f"dataset {spec!r}: {func_name}() must return a "
                         f"graphpe.datasets.DatasetBundle, got {type(bundle).__name__}")
    return bundle
