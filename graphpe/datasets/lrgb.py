"""Peptides-func and Peptides-struct of the Long Range Graph Benchmark (Dwivedi et al., "Long
Range Graph Benchmark", NeurIPS 2022 Datasets and Benchmarks): 15,535 peptides as molecular
graphs with the official stratified split. Peptides-func: 10 binary functional classes
(multi-label), scored by average precision as LRGB scores it. Peptides-struct: 11 structural
properties (regression; LRGB's normalized file, each target of zero mean and unit variance),
scored by the mean absolute error over the 11 targets.

Read from LRGB's own layout, as its loaders write it: ``root/peptides-functional/raw/
peptide_multi_class_dataset.csv.gz`` (SMILES and labels) with ``root/peptides-functional/
splits_random_stratified_peptide.pickle``, and ``root/peptides-structural/raw/
peptide_structure_normalized_dataset.csv.gz`` (SMILES and the 11 targets) with
``root/peptides-structural/splits_random_stratified_peptide_structure.pickle`` (train/val/test
indices). Each SMILES becomes a graph with OGB's ``smiles2graph`` (9 categorical atom
features, 3 bond features, as LRGB and ogbg-mol* use them; needs rdkit), once, into
``processed/``.
"""

from __future__ import annotations

import ast
import hashlib
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch_geometric.data import Data, InMemoryDataset
from tqdm.auto import tqdm

from graphpe.datasets.bundle import DatasetBundle, require_files
from graphpe.datasets.metrics import AveragePrecision

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["AveragePrecision", "PeptidesFunctional", "PeptidesStructural",
           "load_peptides_func", "load_peptides_struct", "smiles_to_data"]


@dataclass(frozen=True)
class PeptidesFiles:
    """One Peptides set in LRGB's layout: its folder, files, sources and md5 sums (LRGB's
    peptides_functional.py / peptides_structural.py)."""

    name: str
    folder: str
    raw_file: str
    raw_url: str
    raw_md5: str
    split_file: str
    split_url: str
    split_md5: str
    processed: str


FUNC = PeptidesFiles(
    "Peptides-func", "peptides-functional", "peptide_multi_class_dataset.csv.gz",
    "https://www.dropbox.com/s/ol2v01usvaxbsr8/peptide_multi_class_dataset.csv.gz?dl=1",
    "701eb743e899f4d793f0e13c8fa5a1b4", "splits_random_stratified_peptide.pickle",
    "https://www.dropbox.com/s/j4zcnx2eipuo0xz/splits_random_stratified_peptide.pickle?dl=1",
    "5a0114bdadc80b94fc7ae974f13ef061", "graphpe_peptides_func.pt")
STRUCT = PeptidesFiles(
    "Peptides-struct", "peptides-structural", "peptide_structure_normalized_dataset.csv.gz",
    "https://www.dropbox.com/s/0d4aalmq4b4e2nh/peptide_structure_normalized_dataset.csv.gz"
    "?dl=1", "c240c1c15466b5c907c63e180fa8aa89",
    "splits_random_stratified_peptide_structure.pickle",
    "https://www.dropbox.com/s/9dfifzft1hqgow6/"
    "splits_random_stratified_peptide_structure.pickle?dl=1",
    "5a0114bdadc80b94fc7ae974f13ef061", "graphpe_peptides_struct.pt")
# (Peptides-func's names, as earlier code and tests import them)
FOLDER, RAW_FILE, SPLIT_FILE = FUNC.folder, FUNC.raw_file, FUNC.split_file
RAW_URL, RAW_MD5, SPLIT_URL, SPLIT_MD5 = FUNC.raw_url, FUNC.raw_md5, FUNC.split_url, \
    FUNC.split_md5
NUM_CLASSES = 10
#: Peptides-struct's 11 regression targets, the columns of its csv in this order
STRUCT_TARGETS = ("Inertia_mass_a", "Inertia_mass_b", "Inertia_mass_c", "Inertia_valence_a",
                  "Inertia_valence_b", "Inertia_valence_c", "length_a", "length_b",
                  "length_c", "Spherocity", "Plane_best_fit")


def smiles_to_data(smiles: str, labels: list[float], dtype=torch.float32) -> Data:
    """One peptide as a ``Data``: OGB's ``smiles2graph`` features as integer ``x [n, 9]`` and
    ``edge_attr [e, 3]`` (both directions of every bond), ``y [1, len(labels)]``."""
    try:
        from ogb.utils import smiles2graph
    except ImportError as err:  # ogb imports rdkit inside smiles2graph's module
        raise ImportError("the Peptides sets need ogb and rdkit: pip install 'graphpe[lrgb]'") \
            from err
    graph = smiles2graph(smiles)
    return Data(x=torch.from_numpy(graph["node_feat"]).long(),
                edge_index=torch.from_numpy(graph["edge_index"]).long(),
                edge_attr=torch.from_numpy(graph["edge_feat"]).long(),
                y=torch.tensor([labels], dtype=dtype),
                num_nodes=int(graph["num_nodes"]))


def _md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


class _Peptides(InMemoryDataset):
    """A Peptides set as a PyG dataset over LRGB's raw layout (see the module docstring);
    :meth:`split` gives the official indices. ``download`` fetches the two files from LRGB's
    sources and checks their md5 sums."""

    files: PeptidesFiles

    def __init__(self, root: str | Path, transform=None, pre_transform=None,
                 download: bool = False) -> None:
        self._may_download = download
        super().__init__(str(Path(root) / self.files.folder), transform, pre_transform)
        self.load(self.processed_paths[0])

    @property
    def raw_file_names(self) -> list[str]:
        return [self.files.raw_file]

    @property
    def processed_file_names(self) -> list[str]:
        return [self.files.processed]

    def download(self) -> None:
        f = self.files
        if not self._may_download:  # require_files said what is missing before we got here
            raise FileNotFoundError(f"{f.name}: {Path(self.raw_dir) / f.raw_file} not found")
        from torch_geometric.data import download_url

        for url, name, folder, md5 in ((f.raw_url, f.raw_file, self.raw_dir, f.raw_md5),
                                       (f.split_url, f.split_file, self.root, f.split_md5)):
            path = Path(download_url(url, folder, log=False, filename=name))
            if _md5(path) != md5:
                raise ValueError(f"{f.name}: {path} has md5 {_md5(path)}, LRGB's is {md5}")

    def rows(self, table: pd.DataFrame):
        """``(smiles, labels)`` of each row of the csv."""
        raise NotImplementedError

    def process(self) -> None:
        import pandas as pd

        table = pd.read_csv(self.raw_paths[0])
        graphs = []
        for smiles, labels in tqdm(self.rows(table), total=len(table), leave=False,
                                   desc=f"{self.files.name}: SMILES to graphs"):
            data = smiles_to_data(smiles, labels)
            graphs.append(self.pre_transform(data) if self.pre_transform else data)
        self.save(graphs, self.processed_paths[0])

    def split(self) -> dict[str, torch.Tensor]:
        """LRGB's stratified split: ``{"train", "val", "test"}`` index tensors."""
        with open(Path(self.root) / self.files.split_file, "rb") as f:
            split = pickle.load(f)
        return {name: torch.as_tensor(np.asarray(split[name]), dtype=torch.long)
                for name in ("train", "val", "test")}


class PeptidesFunctional(_Peptides):
    """Peptides-func: ``y [1, 10]`` binary labels (the csv's ``labels`` column, a list)."""

    files = FUNC

    def rows(self, table: pd.DataFrame):
        return ((s, ast.literal_eval(labels))
                for s, labels in zip(table["smiles"], table["labels"], strict=True))


class PeptidesStructural(_Peptides):
    """Peptides-struct: ``y [1, 11]`` the normalized targets (:data:`STRUCT_TARGETS`)."""

    files = STRUCT

    def rows(self, table: pd.DataFrame):
        missing = [c for c in ("smiles", *STRUCT_TARGETS) if c not in table.columns]
        if missing:
            raise ValueError(f"Peptides-struct: {self.raw_paths[0]} lacks the columns "
                             f"{missing}")
        targets = table[list(STRUCT_TARGETS)].to_numpy(dtype=np.float64)
        return zip(table["smiles"], targets.tolist(), strict=True)


def _require(files: PeptidesFiles, root: Path, download: bool) -> None:
    folder = root / files.folder
    expected = (f"{folder}/raw/{files.raw_file} and {folder}/{files.split_file} (LRGB's "
                "layout)")
    for path in (folder / "raw" / files.raw_file, folder / files.split_file):
        require_files(files.name, [path], expected, download)


def _bundle(dataset: _Peptides, **kwargs) -> DatasetBundle:
    from ogb.utils.features import get_atom_feature_dims, get_bond_feature_dims

    split = dataset.split()
    return DatasetBundle(dataset.files.name, dataset[split["train"]], dataset[split["val"]],
                         dataset[split["test"]], node_vocab=list(get_atom_feature_dims()),
                         edge_vocab=list(get_bond_feature_dims()), **kwargs)


def load_peptides_func(root: Path, pre_transform, download: bool = False,
                       **_) -> DatasetBundle:
    """Peptides-func's official split with LRGB's average precision (see the module
    docstring); ``root/peptides-functional`` holds LRGB's files."""
    _require(FUNC, root, download)
    dataset = PeptidesFunctional(root, pre_transform=pre_transform, download=download)
    return _bundle(dataset, task="graph_multilabel", metric="ap", out_dim=NUM_CLASSES,
                   evaluator=AveragePrecision())


def load_peptides_struct(root: Path, pre_transform, download: bool = False,
                         **_) -> DatasetBundle:
    """Peptides-struct's official split, 11 regression targets, the mean absolute error over
    all of them (LRGB's ``mae``, each target weighing alike); ``root/peptides-structural``
    holds LRGB's files."""
    _require(STRUCT, root, download)
    dataset = PeptidesStructural(root, pre_transform=pre_transform, download=download)
    return _bundle(dataset, task="graph_regression", metric="mae",
                   out_dim=len(STRUCT_TARGETS))
