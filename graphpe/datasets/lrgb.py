"""Peptides-func of the Long Range Graph Benchmark (Dwivedi et al., "Long Range Graph
Benchmark", NeurIPS 2022 Datasets and Benchmarks): 15,535 peptides as molecular graphs, 10
binary functional classes (multi-label), the official stratified split, scored by average
precision as LRGB scores it.

Read from LRGB's own layout under ``root/peptides-functional``: ``raw/
peptide_multi_class_dataset.csv.gz`` (SMILES and labels) and
``splits_random_stratified_peptide.pickle`` (train/val/test indices). Each SMILES becomes a
graph with OGB's ``smiles2graph`` (9 categorical atom features, 3 bond features, as LRGB and
ogbg-mol* use them; needs rdkit), once, into ``processed/``.
"""

from __future__ import annotations

import ast
import hashlib
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch_geometric.data import Data, InMemoryDataset
from tqdm.auto import tqdm

from graphpe.datasets.bundle import DatasetBundle, require_files

FOLDER = "peptides-functional"
RAW_FILE = "peptide_multi_class_dataset.csv.gz"
SPLIT_FILE = "splits_random_stratified_peptide.pickle"
# LRGB's sources and checksums (its peptides_functional.py)
RAW_URL = "https://www.dropbox.com/s/ol2v01usvaxbsr8/peptide_multi_class_dataset.csv.gz?dl=1"
RAW_MD5 = "701eb743e899f4d793f0e13c8fa5a1b4"
SPLIT_URL = ("https://www.dropbox.com/s/j4zcnx2eipuo0xz/"
             "splits_random_stratified_peptide.pickle?dl=1")
SPLIT_MD5 = "5a0114bdadc80b94fc7ae974f13ef061"
NUM_CLASSES = 10


def smiles_to_data(smiles: str, labels: list[int]) -> Data:
    """One peptide as a ``Data``: OGB's ``smiles2graph`` features as integer ``x [n, 9]`` and
    ``edge_attr [e, 3]`` (both directions of every bond), ``y [1, 10]`` float."""
    try:
        from ogb.utils import smiles2graph
    except ImportError as err:  # ogb imports rdkit inside smiles2graph's module
        raise ImportError("Peptides-func needs ogb and rdkit: pip install 'graphpe[lrgb]'") \
            from err
    graph = smiles2graph(smiles)
    return Data(x=torch.from_numpy(graph["node_feat"]).long(),
                edge_index=torch.from_numpy(graph["edge_index"]).long(),
                edge_attr=torch.from_numpy(graph["edge_feat"]).long(),
                y=torch.tensor([labels], dtype=torch.float32),
                num_nodes=int(graph["num_nodes"]))


def _md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


class PeptidesFunctional(InMemoryDataset):
    """Peptides-func as a PyG dataset over LRGB's raw layout (see the module docstring);
    :meth:`split` gives the official indices. ``download`` fetches the two files from LRGB's
    sources and checks their md5 sums."""

    def __init__(self, root: str | Path, transform=None, pre_transform=None,
                 download: bool = False) -> None:
        self._may_download = download
        super().__init__(str(Path(root) / FOLDER), transform, pre_transform)
        self.load(self.processed_paths[0])

    @property
    def raw_file_names(self) -> list[str]:
        return [RAW_FILE]

    @property
    def processed_file_names(self) -> list[str]:
        return ["graphpe_peptides_func.pt"]

    def download(self) -> None:
        if not self._may_download:  # require_files said what is missing before we got here
            raise FileNotFoundError(f"Peptides-func: {Path(self.raw_dir) / RAW_FILE} not found")
        from torch_geometric.data import download_url

        for url, name, folder, md5 in ((RAW_URL, RAW_FILE, self.raw_dir, RAW_MD5),
                                       (SPLIT_URL, SPLIT_FILE, self.root, SPLIT_MD5)):
            path = Path(download_url(url, folder, log=False, filename=name))
            if _md5(path) != md5:
                raise ValueError(f"Peptides-func: {path} has md5 {_md5(path)}, LRGB's is {md5}")

    def process(self) -> None:
        import pandas as pd

        table = pd.read_csv(self.raw_paths[0])
        graphs = []
        for smiles, labels in tqdm(zip(table["smiles"], table["labels"], strict=True),
                                   total=len(table), desc="Peptides-func: SMILES to graphs",
                                   leave=False):
            data = smiles_to_data(smiles, ast.literal_eval(labels))
            graphs.append(self.pre_transform(data) if self.pre_transform else data)
        self.save(graphs, self.processed_paths[0])

    def split(self) -> dict[str, torch.Tensor]:
        """LRGB's stratified split: ``{"train", "val", "test"}`` index tensors."""
        with open(Path(self.root) / SPLIT_FILE, "rb") as f:
            split = pickle.load(f)
        return {name: torch.as_tensor(np.asarray(split[name]), dtype=torch.long)
                for name in ("train", "val", "test")}


class AveragePrecision:
    """LRGB's metric for Peptides-func (its ``eval_ap``): the average precision of each class
    over the labelled graphs, averaged over the classes that have both positives and
    negatives. The interface of OGB's ``Evaluator`` (``eval_metric``, ``eval``)."""

    eval_metric = "ap"

    def eval(self, input_dict: dict[str, Any]) -> dict[str, float]:
        from sklearn.metrics import average_precision_score

        y_true = np.asarray(input_dict["y_true"], dtype=np.float64)
        y_pred = np.asarray(input_dict["y_pred"], dtype=np.float64)
        if y_true.shape != y_pred.shape or y_true.ndim != 2:
            raise ValueError(f"y_true and y_pred must both be [graphs, classes], got "
                             f"{y_true.shape} and {y_pred.shape}")
        scores = []
        for c in range(y_true.shape[1]):
            labelled = ~np.isnan(y_true[:, c])
            truth = y_true[labelled, c]
            if (truth == 1).any() and (truth == 0).any():
                scores.append(average_precision_score(truth, y_pred[labelled, c]))
        if not scores:
            raise ValueError("average precision needs a class with both positive and negative "
                             "graphs")
        return {"ap": float(np.mean(scores))}


def load_peptides_func(root: Path, pre_transform, download: bool = False,
                       **_) -> DatasetBundle:
    """Peptides-func's official split with LRGB's average precision (see the module
    docstring); ``root/peptides-functional`` holds LRGB's files."""
    folder = root / FOLDER
    expected = f"{folder}/raw/{RAW_FILE} and {folder}/{SPLIT_FILE} (LRGB's layout)"
    for path in (folder / "raw" / RAW_FILE, folder / SPLIT_FILE):
        require_files("Peptides-func", [path], expected, download)
    from ogb.utils.features import get_atom_feature_dims, get_bond_feature_dims

    dataset = PeptidesFunctional(root, pre_transform=pre_transform, download=download)
    split = dataset.split()
    return DatasetBundle("Peptides-func", dataset[split["train"]], dataset[split["val"]],
                         dataset[split["test"]], task="graph_multilabel", metric="ap",
                         out_dim=NUM_CLASSES, node_vocab=list(get_atom_feature_dims()),
                         edge_vocab=list(get_bond_feature_dims()),
                         evaluator=AveragePrecision())
