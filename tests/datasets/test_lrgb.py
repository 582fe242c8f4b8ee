"""Peptides-func and Peptides-struct from LRGB's own layout: files the tests write, the
offline copy of the real Peptides-func files (cut to its first graphs), LRGB's average
precision and Peptides-struct's MAE, and a training run end to end."""

from __future__ import annotations

import gzip
import pickle
import shutil

import numpy as np
import pytest
import torch

from graphpe.datasets import load_dataset
from graphpe.datasets.lrgb import (
    FOLDER,
    RAW_FILE,
    RAW_MD5,
    SPLIT_FILE,
    STRUCT,
    STRUCT_TARGETS,
    AveragePrecision,
)
from tests.conftest import SHARED_DATA

pytest.importorskip("rdkit", reason="Peptides-func needs rdkit (pip install 'graphpe[lrgb]')")
SHARED = SHARED_DATA / "lrgb" / FOLDER

SMILES = ["CCO", "c1ccccc1O", "CC(=O)NC(C)C(=O)O", "N[C@@H](C)C(=O)O", "CCN(CC)CC",
          "O=C(O)c1ccccc1", "CC(C)CC(N)C(=O)O", "NCCCCC(N)C(=O)O"]


def write_layout(root, rows, split):
    """LRGB's layout under ``root``: the csv (gzip) of ``rows`` (smiles, labels) and the
    split pickle."""
    folder = root / FOLDER
    (folder / "raw").mkdir(parents=True)
    lines = ["smiles,labels"] + [f'{s},"{labels}"' for s, labels in rows]
    with gzip.open(folder / "raw" / RAW_FILE, "wt") as f:
        f.write("\n".join(lines) + "\n")
    with open(folder / SPLIT_FILE, "wb") as f:
        pickle.dump({k: np.asarray(v) for k, v in split.items()}, f)


def test_average_precision_is_lrgbs():
    from sklearn.metrics import average_precision_score

    y_true = np.array([[1, 0, 0], [0, 0, 1], [1, 0, np.nan], [0, 0, 1]], dtype=float)
    y_pred = np.array([[0.9, 0.1, 0.2], [0.3, 0.2, 0.8], [0.6, 0.5, 0.9], [0.7, 0.3, 0.1]])
    # class 1 has no positive graph: left out; class 2's unlabelled graph: left out
    want = np.mean([average_precision_score(y_true[:, 0], y_pred[:, 0]),
                    average_precision_score([0, 1, 1], [0.2, 0.8, 0.1])])
    assert AveragePrecision().eval({"y_true": y_true, "y_pred": y_pred}) == {"ap": want}
    with pytest.raises(ValueError, match="must both be"):
        AveragePrecision().eval({"y_true": y_true, "y_pred": y_pred[:, :2]})


def test_loads_the_layout_it_is_given(tmp_path):
    labels = [[int(i == j % 10 or i == (j + 3) % 10) for i in range(10)] for j in range(8)]
    write_layout(tmp_path, list(zip(SMILES, labels, strict=True)),
                 {"train": [0, 1, 2, 3, 4], "val": [5, 6], "test": [7]})
    bundle = load_dataset("Peptides-func", tmp_path)
    assert (len(bundle.train), len(bundle.val), len(bundle.test)) == (5, 2, 1)
    assert (bundle.task, bundle.metric, bundle.out_dim) == ("graph_multilabel", "ap", 10)
    assert bundle.higher_is_better and len(bundle.node_vocab) == 9
    ethanol = bundle.train[0]
    assert ethanol.num_nodes == 3 and ethanol.x.shape == (3, 9)
    assert ethanol.edge_index.shape == (2, 4) and ethanol.edge_attr.shape == (4, 3)
    assert torch.equal(ethanol.y, torch.tensor([labels[0]], dtype=torch.float32))
    assert torch.equal(bundle.test[0].y, torch.tensor([labels[7]], dtype=torch.float32))


def test_missing_files_name_lrgbs_layout(tmp_path):
    with pytest.raises(FileNotFoundError) as error:
        load_dataset("Peptides-func", tmp_path)
    message = str(error.value)
    assert message.startswith("Peptides-func: files not found under the given root.")
    assert RAW_FILE in message and SPLIT_FILE in message and "\n" not in message


@pytest.fixture
def real_cut(tmp_path):
    """The offline copy of LRGB's files, cut to their first 96 graphs (split: 64/16/16)."""
    if not (SHARED / "raw" / RAW_FILE).exists():
        pytest.skip(f"the offline Peptides-func copy is not at {SHARED}")
    with gzip.open(SHARED / "raw" / RAW_FILE, "rt") as f:
        lines = f.read().splitlines()
    folder = tmp_path / FOLDER
    (folder / "raw").mkdir(parents=True)
    with gzip.open(folder / "raw" / RAW_FILE, "wt") as f:
        f.write("\n".join(lines[:97]) + "\n")
    with open(folder / SPLIT_FILE, "wb") as f:
        pickle.dump({"train": np.arange(64), "val": np.arange(64, 80),
                     "test": np.arange(80, 96)}, f)
    return tmp_path


def test_the_offline_copy_is_lrgbs_file():
    if not (SHARED / "raw" / RAW_FILE).exists():
        pytest.skip(f"the offline Peptides-func copy is not at {SHARED}")
    import hashlib

    assert hashlib.md5((SHARED / "raw" / RAW_FILE).read_bytes()).hexdigest() == RAW_MD5
    with open(SHARED / SPLIT_FILE, "rb") as f:
        split = pickle.load(f)
    assert {k: len(v) for k, v in split.items()} == {"train": 10873, "val": 2331, "test": 2331}


def test_trains_end_to_end_with_gps_and_lappe(real_cut):
    from graphpe.train import TrainConfig, run

    bundle = load_dataset("Peptides-func", real_cut)
    graph = bundle.train[0]
    assert graph.x.shape[1] == 9 and graph.y.shape == (1, 10) and graph.num_nodes > 50
    record = run(bundle, "lap:k=4", model="gps", channels=16, layers=2,
                 config=TrainConfig(epochs=2, batch_size=16, progress=False))
    assert 0.0 < record["test"] <= 1.0 and record["metric"] == "ap"
    shutil.rmtree(real_cut / FOLDER / "processed")


def write_struct_layout(root, smiles, targets, split):
    """LRGB's Peptides-struct layout under ``root``: the csv (gzip) of smiles and the 11
    target columns, and the split pickle."""
    folder = root / STRUCT.folder
    (folder / "raw").mkdir(parents=True)
    lines = [",".join(("smiles", *STRUCT_TARGETS))]
    lines += [",".join((s, *(repr(float(v)) for v in row)))
              for s, row in zip(smiles, targets, strict=True)]
    with gzip.open(folder / "raw" / STRUCT.raw_file, "wt") as f:
        f.write("\n".join(lines) + "\n")
    with open(folder / STRUCT.split_file, "wb") as f:
        pickle.dump({k: np.asarray(v) for k, v in split.items()}, f)


def test_peptides_struct_loads_its_layout_and_scores_mae(tmp_path):
    targets = np.random.default_rng(0).normal(size=(8, 11))
    write_struct_layout(tmp_path, SMILES, targets,
                        {"train": [0, 1, 2, 3], "val": [4, 5], "test": [6, 7]})
    bundle = load_dataset("Peptides-struct", tmp_path)
    assert (len(bundle.train), len(bundle.val), len(bundle.test)) == (4, 2, 2)
    assert (bundle.task, bundle.metric, bundle.out_dim) == ("graph_regression", "mae", 11)
    assert not bundle.higher_is_better and len(bundle.edge_vocab) == 3
    ethanol = bundle.train[0]
    assert ethanol.x.shape == (3, 9) and ethanol.y.shape == (1, 11)
    assert torch.allclose(ethanol.y, torch.tensor(targets[:1], dtype=torch.float32))
    assert torch.allclose(bundle.test[1].y, torch.tensor(targets[7:], dtype=torch.float32))
    # the training loop's MAE: the mean over all 11 targets of all graphs (LRGB's sklearn
    # mean_absolute_error, uniform over the targets)
    from sklearn.metrics import mean_absolute_error
    from torch_geometric.loader import DataLoader

    from graphpe.train import evaluate

    class Zero(torch.nn.Module):
        def forward(self, batch):
            return torch.zeros(batch.num_graphs, 11)

    got = evaluate(Zero(), DataLoader(bundle.test, batch_size=1), bundle, "cpu", "test")
    assert got == pytest.approx(mean_absolute_error(targets[6:], np.zeros((2, 11))), rel=1e-6)


def test_peptides_struct_missing_files_name_lrgbs_layout(tmp_path):
    with pytest.raises(FileNotFoundError) as error:
        load_dataset("Peptides-struct", tmp_path)
    message = str(error.value)
    assert message.startswith("Peptides-struct: files not found under the given root.")
    assert f"{tmp_path}/peptides-structural/raw/{STRUCT.raw_file}" in message
    assert STRUCT.split_file in message and "--download" in message
