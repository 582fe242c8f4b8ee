"""The OGB graph sets graph transformers report beyond the molecule sets, with their official
splits and metrics:

- PCQM4Mv2 (OGB-LSC, Hu et al. 2021): 3.7M molecules, the DFT HOMO-LUMO gap, mean absolute
  error; through PyG's ``PCQM4Mv2`` with OGB's atom and bond features (``smiles2graph``, as
  ogbg-mol* and GraphGPS's encoders read them; needs rdkit). Its test sets have no public
  labels, so as GraphGPS: OGB's ``valid`` split is the test split, and 150,000 graphs drawn
  from ``train`` (a permutation seeded 42) the validation split (for a training part under
  1.5M graphs, a cut-down copy, a tenth of it).
- ogbg-ppa: protein association neighbourhoods, 37 classes, OGB's ``Evaluator``
  (accuracy); no node features (a constant ``x``, GraphGPS's ``PPANode``), 7 edge features.
- ogbg-code2: Python ASTs, predict the sub-tokens of the method name, OGB's ``Evaluator``
  (F1 over sub-tokens). A sequence task: graphpe loads it (``y`` each graph's list of
  sub-tokens) and OGB's Evaluator scores sequences, but the training loop has no sequence
  task yet, so ``graphpe train`` refuses it with that reason.

Files: ``root/PCQM4Mv2/raw/pcqm4m-v2/raw/data.csv.gz`` and
``root/PCQM4Mv2/raw/pcqm4m-v2/split_dict.pt`` (OGB-LSC's pcqm4m-v2.zip unpacked into
``root/PCQM4Mv2/raw``); ``root/ogbg_ppa/`` and ``root/ogbg_code2/`` as OGB's zips unpack
(``RELEASE_v1.txt``, ``raw/*.csv.gz``, ``split/<split>/{train,valid,test}.csv.gz``).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import torch
from torch_geometric.data import Data

from graphpe.datasets.bundle import DatasetBundle, feature_widths, require_files

OGBG_OTHER_NAMES = ("ogbg-ppa", "ogbg-code2")
PCQM_FOLDER = "PCQM4Mv2"
PCQM_VAL_SIZE = 150_000  # GraphGPS's validation graphs held out of train
PCQM_VAL_SEED = 42
CODE2_VOCAB, CODE2_MAX_SEQ_LEN = 5000, 5  # OGB's and GraphGPS's settings of ogbg-code2


def ogb_from_smiles(smiles: str) -> Data:
    """One molecule as PyG's ``PCQM4Mv2`` stores it, with OGB's features: ``x [n, 9]``,
    ``edge_attr [e, 3]`` (integers), ``edge_index`` and ``smiles``."""
    try:
        from ogb.utils import smiles2graph
    except ImportError as err:
        raise ImportError("PCQM4Mv2 needs ogb and rdkit: pip install 'graphpe[lrgb]'") \
            from err
    graph = smiles2graph(smiles)
    return Data(x=torch.from_numpy(graph["node_feat"]).long(),
                edge_index=torch.from_numpy(graph["edge_index"]).long(),
                edge_attr=torch.from_numpy(graph["edge_feat"]).long(), smiles=smiles,
                num_nodes=int(graph["num_nodes"]))


def pcqm_split(train_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """GraphGPS's split of PCQM4Mv2's ``train`` part (positions within it): ``(train, val)``,
    ``val`` the first 150,000 of a permutation seeded 42 (a tenth for parts under 1.5M)."""
    perm = torch.from_numpy(np.random.default_rng(PCQM_VAL_SEED).permutation(train_size))
    held = PCQM_VAL_SIZE if train_size >= 10 * PCQM_VAL_SIZE else train_size // 10
    return perm[held:], perm[:held]


def load_pcqm4mv2(root: Path, pre_transform, download: bool = False, **_) -> DatasetBundle:
    """PCQM4Mv2 with GraphGPS's splits and the mean absolute error (see the module docstring).
    PyG's on-disk dataset takes no ``pre_transform``: one given is applied as a transform
    (on every access)."""
    from ogb.utils.features import get_atom_feature_dims, get_bond_feature_dims
    from torch_geometric.datasets import PCQM4Mv2

    folder = root / PCQM_FOLDER
    files = [folder / "raw" / "pcqm4m-v2" / "raw" / "data.csv.gz",
             folder / "raw" / "pcqm4m-v2" / "split_dict.pt"]
    require_files("PCQM4Mv2", files, f"{files[0]} and {files[1]} (OGB-LSC's pcqm4m-v2.zip "
                  f"unpacked into {folder / 'raw'}, PyG's PCQM4Mv2 layout)", download,
                  every=True)
    train = PCQM4Mv2(str(folder), split="train", transform=pre_transform,
                     from_smiles=ogb_from_smiles)
    test = PCQM4Mv2(str(folder), split="val", transform=pre_transform,
                    from_smiles=ogb_from_smiles)
    train_part, val_part = pcqm_split(len(train))
    return DatasetBundle("PCQM4Mv2", train[train_part], train[val_part], test,
                         task="graph_regression", metric="mae", out_dim=1,
                         node_vocab=list(get_atom_feature_dims()),
                         edge_vocab=list(get_bond_feature_dims()))


def ogbg_files(meta: dict[str, str]) -> list[str]:
    """The files of OGB's folder of a graph set that its loader reads, relative to the
    folder: the release note, the raw files and the split."""
    raw = ["edge", "num-node-list", "num-edge-list", "graph-label"]
    raw += ["node-feat"] if meta["has_node_attr"] == "True" else []
    raw += ["edge-feat"] if meta["has_edge_attr"] == "True" else []
    raw += [f for key in ("additional node files", "additional edge files")
            for f in meta[key].split(",") if meta[key] != "None"]
    split = [f"split/{meta['split']}/{part}.csv.gz" for part in ("train", "valid", "test")]
    return [f"RELEASE_v{meta['version']}.txt", *(f"raw/{f}.csv.gz" for f in raw), *split]


def load_ogb_graphs(name: str, root: Path, pre_transform, download: bool = False,
                    **_) -> DatasetBundle:
    """ogbg-ppa or ogbg-code2 through OGB's ``PygGraphPropPredDataset``: the official split
    and OGB's ``Evaluator`` (see the module docstring)."""
    import pandas as pd
    from ogb import graphproppred
    from ogb.graphproppred import Evaluator, PygGraphPropPredDataset

    master = pd.read_csv(Path(graphproppred.__file__).parent / "master.csv", index_col=0,
                         keep_default_na=False)
    folder = root / name.replace("-", "_")
    meta = dict(master[name])
    files = ogbg_files(meta)
    if (folder / "processed" / "geometric_data_processed.pt").exists():
        files = [f for f in files if not f.startswith("raw/")]
    require_files(name, [folder / f for f in files],
                  f"OGB's files under {folder}/: {', '.join(files)}", download, every=True)
    os.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")  # ogb 1.3.6 on torch >= 2.6
    ds = PygGraphPropPredDataset(name, root=str(root), pre_transform=pre_transform)
    split = ds.get_idx_split()
    parts = [ds[split[part]] for part in ("train", "valid", "test")]
    data = ds._data
    evaluator = Evaluator(name)
    if name == "ogbg-code2":
        return DatasetBundle(name, *parts, task="graph_sequence", metric="f1", out_dim=0,
                             **feature_widths(data.x), evaluator=evaluator,
                             extra={"num_vocab": CODE2_VOCAB,
                                    "max_seq_len": CODE2_MAX_SEQ_LEN})
    edge_attr = data.get("edge_attr")
    return DatasetBundle(name, *parts, task="graph_classification", metric="accuracy",
                         out_dim=int(meta["num classes"]), **feature_widths(data.x),
                         edge_dim=None if edge_attr is None else edge_attr.size(-1),
                         evaluator=evaluator)
