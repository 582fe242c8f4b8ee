"""The heterophilous sets (Platonov et al., ICLR 2023): the archive reader on files the tests
write, both layouts (PyG's folder under a name, graph:PATH), split selection and its checks,
ROC-AUC against scikit-learn, and the staged Minesweeper / Tolokers against PyG's loader."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import torch

from graphpe.datasets import BinaryROCAUC, load_dataset
from graphpe.datasets.heterophilous import archive_path, read_split_archive
from tests.conftest import SHARED_DATA

HETEROPHILOUS = SHARED_DATA / "heterophilous"


def write_archive(path, num_nodes=30, splits=3, classes=2, seed=0, **override):
    """An archive in the authors' layout: a ring with chords, random features and labels,
    ``splits`` disjoint 50/25/25 splits."""
    rng = np.random.default_rng(seed)
    ring = np.stack([np.arange(num_nodes), (np.arange(num_nodes) + 1) % num_nodes], 1)
    starts = np.arange(0, num_nodes, 3)
    chords = np.stack([starts, (starts + 7) % num_nodes], 1)
    labels = np.arange(num_nodes) % classes
    rng.shuffle(labels)
    masks = {key: np.zeros((splits, num_nodes), dtype=bool)
             for key in ("train_masks", "val_masks", "test_masks")}
    for s in range(splits):
        order = rng.permutation(num_nodes)
        half, quarter = num_nodes // 2, num_nodes // 4
        masks["train_masks"][s, order[:half]] = True
        masks["val_masks"][s, order[half:half + quarter]] = True
        masks["test_masks"][s, order[half + quarter:]] = True
    arrays = {"node_features": rng.normal(size=(num_nodes, 4)).astype(np.float32),
              "node_labels": labels, "edges": np.concatenate([ring, chords]), **masks}
    arrays.update(override)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, **arrays)
    return arrays


def test_archive_edges_become_undirected_and_masks_columns(tmp_path):
    arrays = write_archive(tmp_path / "g.npz")
    data = read_split_archive(tmp_path / "g.npz")
    pairs = {tuple(e) for e in data.edge_index.t().tolist()}
    for u, v in arrays["edges"]:
        assert (int(u), int(v)) in pairs and (int(v), int(u)) in pairs
    assert data.edge_index.size(1) == 2 * len({frozenset(e) for e in arrays["edges"].tolist()})
    assert data.train_mask.shape == (30, 3)
    assert torch.equal(data.train_mask[:, 1], torch.from_numpy(arrays["train_masks"][1]))
    assert data.x.dtype == torch.float32 and data.y.dtype == torch.long


@pytest.mark.parametrize("classes, task, metric, out_dim", [
    (2, "node_multilabel", "rocauc", 1), (5, "node_classification", "accuracy", 5)])
def test_both_layouts_load_a_split(tmp_path, classes, task, metric, out_dim):
    write_archive(archive_path("Minesweeper", tmp_path), classes=classes)
    write_archive(tmp_path / "own.npz", classes=classes)
    for name in ("Minesweeper", "graph:own.npz"):
        bundle = load_dataset(name, tmp_path, fold=2)
        graph = bundle.train[0]
        assert (bundle.task, bundle.metric, bundle.out_dim) == (task, metric, out_dim)
        assert bundle.extra["splits"] == 3 and bundle.extra["split"] == 2
        assert graph.train_mask.dim() == 1 and graph.train_mask.sum() == 15
        assert bundle.model_kwargs()["node_dim"] == 4
        assert (bundle.evaluator is not None) == (classes == 2)


def test_split_index_out_of_range_is_one_line(tmp_path):
    write_archive(archive_path("Tolokers", tmp_path))
    with pytest.raises(ValueError, match=r"^Tolokers: split 3 is out of range; it has 3 "
                                         r"splits \(0-2\)$"):
        load_dataset("Tolokers", tmp_path, fold=3)


def test_overlapping_masks_and_no_training_node_are_refused(tmp_path):
    arrays = write_archive(tmp_path / "a.npz")
    val = arrays["val_masks"].copy()
    val[0] |= arrays["train_masks"][0]
    write_archive(tmp_path / "overlap.npz", val_masks=val)
    with pytest.raises(ValueError, match=r"^graph:overlap.npz: split 0's train and val masks "
                                         r"overlap \(15 nodes in both\)$"):
        load_dataset("graph:overlap.npz", tmp_path)
    write_archive(tmp_path / "empty.npz", train_masks=np.zeros((3, 30), dtype=bool))
    with pytest.raises(ValueError, match=r"^graph:empty.npz: split 1 has no training node$"):
        load_dataset("graph:empty.npz", tmp_path, fold=1)


def test_labels_of_one_class_are_refused(tmp_path):
    write_archive(tmp_path / "one.npz", node_labels=np.zeros(30, dtype=np.int64))
    with pytest.raises(ValueError, match=r"^graph:one.npz: every node has label 0; a "
                                         r"classification task needs two classes at least$"):
        load_dataset("graph:one.npz", tmp_path)
    arrays = write_archive(tmp_path / "a.npz")
    labels = arrays["node_labels"].copy()
    labels[arrays["val_masks"][0]] = 1  # split 0's validation nodes: one class
    write_archive(tmp_path / "val.npz", node_labels=labels)
    with pytest.raises(ValueError, match=r"^graph:val.npz: split 0's val nodes all have label "
                                         r"\[1\]: ROC-AUC needs both classes in every part$"):
        load_dataset("graph:val.npz", tmp_path)


def test_missing_archive_names_the_file_and_where_it_goes(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"Roman-empire: files not found under the "
                                                r"given root\. Place the authors' "
                                                r"roman_empire.npz at .*roman_empire/raw/"
                                                r"roman_empire.npz"):
        load_dataset("Roman-empire", tmp_path)


def test_truncated_and_malformed_archives_are_one_line(tmp_path):
    write_archive(tmp_path / "g.npz")
    data = (tmp_path / "g.npz").read_bytes()
    (tmp_path / "cut.npz").write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="not a sparse matrix written by scipy"):
        load_dataset("graph:cut.npz", tmp_path)
    write_archive(tmp_path / "bad.npz", edges=np.array([[0, 99]]))
    with pytest.raises(ValueError, match=r"edges name nodes outside 0\.\.29"):
        load_dataset("graph:bad.npz", tmp_path)
    write_archive(tmp_path / "g2.npz")
    with pytest.raises(ValueError, match="has its own fixed splits"):
        load_dataset("graph:g2.npz", tmp_path, split=(0.5, 0.25, 0.25))


def test_rocauc_equals_scikit_learn_with_ties():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(0)
    for trial in range(20):
        n = int(rng.integers(2, 200))
        y = rng.integers(0, 2, n)
        y[0], y[-1] = 0, 1
        scores = np.round(rng.normal(size=n), 1 if trial % 2 else 6)  # ties on odd trials
        got = BinaryROCAUC().eval({"y_true": y[:, None], "y_pred": scores[:, None]})["rocauc"]
        assert got == pytest.approx(roc_auc_score(y, scores), abs=1e-12)


def test_rocauc_refuses_one_class_and_non_binary_labels():
    with pytest.raises(ValueError, match=r"^ROC-AUC needs both classes among the labels, got "
                                         r"3 labels all 1$"):
        BinaryROCAUC().eval({"y_true": np.ones(3), "y_pred": np.arange(3.0)})
    with pytest.raises(ValueError, match="y_true must be 0 or 1"):
        BinaryROCAUC().eval({"y_true": np.array([0, 2]), "y_pred": np.arange(2.0)})
    with pytest.raises(ValueError, match="one score per label"):
        BinaryROCAUC().eval({"y_true": np.array([0, 1]), "y_pred": np.ones((2, 2))})


@pytest.mark.skipif(not HETEROPHILOUS.exists(),
                    reason=f"the staged heterophilous sets are not at {HETEROPHILOUS}")
@pytest.mark.parametrize("name, nodes, edges", [("Minesweeper", 10_000, 78_804),
                                                ("Tolokers", 11_758, 1_038_000)])
def test_staged_sets_equal_pygs_loader(tmp_path, name, nodes, edges):
    from torch_geometric.datasets import HeterophilousGraphDataset

    folder = name.lower()
    shutil.copytree(HETEROPHILOUS / folder, tmp_path / folder)
    bundle = load_dataset(name, tmp_path, fold=7)
    graph = bundle.train[0]
    shutil.copytree(HETEROPHILOUS / folder, tmp_path / "pyg" / folder)
    pyg = HeterophilousGraphDataset(str(tmp_path / "pyg"), name)[0]
    assert graph.num_nodes == nodes and graph.edge_index.size(1) == edges
    assert torch.equal(graph.edge_index, pyg.edge_index)
    assert torch.equal(graph.x, pyg.x.float()) and torch.equal(graph.y, pyg.y)
    for mask in ("train_mask", "val_mask", "test_mask"):
        assert torch.equal(graph[mask], pyg[mask][:, 7])
    assert bundle.metric == "rocauc" and bundle.extra["splits"] == 10
