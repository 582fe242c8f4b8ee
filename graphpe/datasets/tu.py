"""TU datasets by name (PyG's ``TUDataset``) and CSL (Murphy et al., ICML 2019): PyG's files
where they are, else generated in code."""

from __future__ import annotations

import difflib
import logging
from pathlib import Path

import torch

from graphpe.datasets.bundle import DatasetBundle, require_files, stratified_split
from graphpe.synthetic import csl_graphs

log = logging.getLogger(__name__)


# The TU collection's better-known sets (Morris et al., TUDataset, 2020): a name here whose files
# are missing is told where they go; any other name is read as a TU dataset too, but a missing
# one is first suggested the closest names graphpe knows.
TU_COLLECTION = (
    "AIDS", "BZR", "BZR_MD", "COX2", "COX2_MD", "DHFR", "DHFR_MD", "ER_MD", "FRANKENSTEIN",
    "MCF-7", "MOLT-4", "MUTAG", "Mutagenicity", "NCI1", "NCI109", "NCI-H23", "OVCAR-8", "P388",
    "PC-3", "PTC_FM", "PTC_FR", "PTC_MM", "PTC_MR", "SF-295", "SN12C", "SW-620", "UACC257",
    "Yeast", "DD", "ENZYMES", "KKI", "OHSU", "Peking_1", "PROTEINS", "PROTEINS_full",
    "COIL-DEL", "COIL-RAG", "Cuneiform", "Fingerprint", "FIRSTMM_DB", "Letter-high",
    "Letter-low", "Letter-med", "MSRC_9", "MSRC_21", "MSRC_21C", "COLLAB", "IMDB-BINARY",
    "IMDB-MULTI", "REDDIT-BINARY", "REDDIT-MULTI-5K", "REDDIT-MULTI-12K", "reddit_threads",
    "twitch_egos", "github_stargazers", "deezer_ego_nets", "COLORS-3", "SYNTHETIC",
    "SYNTHETICnew", "Synthie", "TRIANGLES")


def close_names(name: str, candidates: tuple[str, ...], n: int = 3) -> list[str]:
    """Up to ``n`` of ``candidates`` closest to ``name``, ignoring case (difflib's ratio)."""
    by_lower = {c.lower(): c for c in candidates}
    return [by_lower[c] for c in difflib.get_close_matches(name.lower(), by_lower, n=n)]


def load_tu(name: str, root: Path, pre_transform, seed: int = 0, fold: int = 0,
            download: bool = False, split: tuple[float, float, float] | None = None,
            known_names: tuple[str, ...] = ()) -> DatasetBundle:
    """The TU dataset ``name`` from PyG's files under ``root``; ``known_names`` are the names
    suggested when an unknown name's files are missing."""
    from torch_geometric.datasets import TUDataset

    folder = root / name
    if name in TU_COLLECTION:
        expected = f"{folder}/raw/{name}_*.txt (a TU dataset)"
    else:
        close = close_names(name, (*known_names, *TU_COLLECTION))
        hint = f"did you mean {' or '.join(close)}? " if close else ""
        expected = (f"{folder}/raw/{name}_*.txt if it is a TU dataset ({hint}graphpe reads a "
                    "name it does not know as one)")
    require_files(name, [folder / "raw" / f"{name}_A.txt", folder / "processed"], expected,
                  download)
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


def load_csl(root: Path, pre_transform, fold: int = 0, download: bool = False,
             **_) -> DatasetBundle:
    """CSL: 150 graphs of 41 nodes in 10 classes (the skip of their chords), 5 stratified folds
    of 30 graphs (90 train, 30 val, 30 test; ``fold`` picks the test part). PyG's copy
    (``GNNBenchmarkDataset``) where its files are under ``root/CSL`` (or ``download``), else
    the same construction generated in code (:func:`graphpe.synthetic.csl_graphs`: the same
    graphs up to each graph's random node order)."""
    folder = root / "CSL"
    files = [folder / "raw" / "graphs_Kary_Deterministic_Graphs.pkl", folder / "processed"]
    if download or any(path.exists() for path in files):
        from torch_geometric.datasets import GNNBenchmarkDataset

        graphs = GNNBenchmarkDataset(str(root), "CSL", pre_transform=pre_transform)
        labels, name = graphs._data.y, "CSL"
    else:
        log.info("CSL: no files under %s, generated in code (150 graphs)", folder)
        graphs = csl_graphs(seed=0)
        if pre_transform is not None:
            graphs = [pre_transform(g) for g in graphs]
        labels, name = torch.cat([g.y for g in graphs]), "CSL (generated in code)"
    train, val, test = stratified_split(labels, fractions=(0.6, 0.2, 0.2), seed=0, fold=fold)
    pick = (lambda idx: graphs[idx]) if name == "CSL" else (
        lambda idx: [graphs[i] for i in idx.tolist()])
    return DatasetBundle(name, pick(train), pick(val), pick(test), task="graph_classification",
                         metric="accuracy", out_dim=10, node_vocab=1)
