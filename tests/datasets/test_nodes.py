"""Node property prediction on one graph (graphpe/datasets/nodes.py): OGB's node sets read from
tiny files the tests write in OGB's raw layout, PyG's node sets from tiny files in PyG's
layouts, and the one-line error when the files are missing."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import torch

pytest.importorskip("ogb")

from graphpe.datasets import load_dataset  # noqa: E402
from graphpe.datasets.nodes import OGBN_NAMES, PYG_NODE_NAMES, ogb_files, ogb_meta  # noqa: E402

N = 30  # nodes of the tiny graphs


def _csv(path: Path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(np.asarray(rows)).to_csv(path, header=False, index=False, compression="gzip")


def _ring_edges(n: int) -> np.ndarray:
    """A ring and its chords (i, i + 1) and (i, i + 3): ``[E, 2]``."""
    i = np.arange(n)
    return np.concatenate([np.stack([i, (i + 1) % n], 1), np.stack([i, (i + 3) % n], 1)])


def write_ogbn(root: Path, name: str, seed: int = 0) -> dict[str, np.ndarray]:
    """OGB's raw layout of ``name`` (a non-binary node set) under ``root``, as the official zip
    unpacks: ``RELEASE_v1.txt``, ``raw/*.csv.gz`` (no header, no index) and
    ``split/<split>/{train,valid,test}.csv.gz``. Returns what was written."""
    meta = ogb_meta(name)
    rng = np.random.default_rng(seed)
    folder = root / name.replace("-", "_")
    edges = _ring_edges(N)
    tasks, classes = int(meta["num tasks"]), int(meta["num classes"])
    labels = (rng.integers(0, 2, (N, tasks)) if tasks > 1
              else (np.arange(N) % classes)[:, None])
    written = {"edges": edges, "labels": labels}
    _csv(folder / "raw" / "edge.csv.gz", edges)
    _csv(folder / "raw" / "num-node-list.csv.gz", [[N]])
    _csv(folder / "raw" / "num-edge-list.csv.gz", [[len(edges)]])
    _csv(folder / "raw" / "node-label.csv.gz", labels)
    if meta["has_node_attr"] == "True":
        written["x"] = rng.standard_normal((N, 5)).astype(np.float32)
        _csv(folder / "raw" / "node-feat.csv.gz", written["x"])
    if meta["has_edge_attr"] == "True":  # proteins: 8 association scores per edge
        written["edge_attr"] = rng.random((len(edges), 8)).astype(np.float32)
        _csv(folder / "raw" / "edge-feat.csv.gz", written["edge_attr"])
    for extra in meta["additional node files"].split(","):  # node_year, node_species
        if extra != "None":
            _csv(folder / "raw" / f"{extra}.csv.gz", rng.integers(2000, 2020, (N, 1)))
    order = rng.permutation(N)
    written["split"] = {"train": np.sort(order[:15]), "valid": np.sort(order[15:22]),
                        "test": np.sort(order[22:])}
    for part, ids in written["split"].items():
        _csv(folder / "split" / meta["split"] / f"{part}.csv.gz", ids[:, None])
    (folder / "RELEASE_v1.txt").write_text("tiny copy written by the test\n")
    return written


def test_the_written_layout_is_what_the_loader_reads(tmp_path):
    write_ogbn(tmp_path, "ogbn-arxiv")
    folder = tmp_path / "ogbn_arxiv"
    written = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    assert written == sorted(ogb_files(ogb_meta("ogbn-arxiv")))
    assert sorted(ogb_files(ogb_meta("ogbn-proteins"))) == sorted([
        "RELEASE_v1.txt", "raw/edge.csv.gz", "raw/edge-feat.csv.gz", "raw/num-node-list.csv.gz",
        "raw/num-edge-list.csv.gz", "raw/node-label.csv.gz", "raw/node_species.csv.gz",
        *(f"split/species/{p}.csv.gz" for p in ("train", "valid", "test"))])
    # ogbn-papers100M ships numpy archives; once processed, OGB reads no more raw labels
    assert ogb_files(ogb_meta("ogbn-papers100M"), processed=True) == [
        "RELEASE_v1.txt", "raw/data.npz",
        *(f"split/time/{p}.csv.gz" for p in ("train", "valid", "test"))]


def _perfect_model(bundle):
    """A model whose output scores every node's true label(s) highest."""

    class Oracle(torch.nn.Module):
        def forward(self, batch):
            if bundle.task == "node_multilabel":
                return batch.y.float() * 2 - 1
            return torch.nn.functional.one_hot(batch.y.view(-1), bundle.out_dim).float()

    return Oracle()


def test_ogbn_arxiv_from_its_raw_layout(tmp_path):
    from torch_geometric.loader import DataLoader

    from graphpe.train import evaluate

    written = write_ogbn(tmp_path, "ogbn-arxiv")
    bundle = load_dataset("ogbn-arxiv", tmp_path)
    assert (bundle.task, bundle.metric, bundle.out_dim) == ("node_classification", "accuracy", 40)
    assert bundle.model_kwargs()["node_dim"] == 5 and bundle.node_vocab is None
    graph = bundle.train[0]
    assert graph.num_nodes == N and graph.edge_index.t().tolist() == written["edges"].tolist()
    assert torch.allclose(graph.x, torch.from_numpy(written["x"]))
    assert graph.y.view(-1).tolist() == written["labels"].ravel().tolist()
    assert graph.node_year.shape == (N, 1)
    for mask, part in (("train_mask", "train"), ("val_mask", "valid"), ("test_mask", "test")):
        assert graph[mask].nonzero().view(-1).tolist() == written["split"][part].tolist()
        assert bundle.extra["split_idx"][part].tolist() == written["split"][part].tolist()
    # OGB's Evaluator through the training loop's evaluate: accuracy of class labels
    assert bundle.evaluator.name == "ogbn-arxiv" and bundle.evaluator.eval_metric == "acc"
    loader = DataLoader(bundle.test, batch_size=1)
    assert evaluate(_perfect_model(bundle), loader, bundle, "cpu", "test") == 1.0
    # the loaded dataset keeps no masks: they live in the bundle's copy of the storage
    assert bundle.extra["dataset"][0].get("train_mask") is None
    # a second load reads the processed file
    assert (tmp_path / "ogbn_arxiv" / "processed" / "geometric_data_processed.pt").exists()
    again = load_dataset("ogbn-arxiv", tmp_path)
    assert torch.equal(again.test[0].test_mask, graph.test_mask)


def test_ogbn_proteins_is_multilabel_with_roc_auc(tmp_path):
    from torch_geometric.loader import DataLoader

    from graphpe.train import TrainConfig, evaluate, run

    written = write_ogbn(tmp_path, "ogbn-proteins")
    bundle = load_dataset("ogbn-proteins", tmp_path)
    assert (bundle.task, bundle.metric, bundle.out_dim) == ("node_multilabel", "rocauc", 112)
    assert bundle.model_kwargs()["task"] == "node_classification"
    assert (bundle.node_vocab, bundle.edge_dim) == (1, 8)
    graph = bundle.train[0]
    # OGB adds each edge's reverse (add_inverse_edge), with its features
    assert graph.edge_index.size(1) == 2 * len(written["edges"])
    assert graph.edge_attr.shape == (2 * len(written["edges"]), 8)
    assert graph.x.dtype == torch.long and graph.x.eq(0).all()  # the constant x: no features
    assert graph.y.shape == (N, 112) and int(graph.train_mask.sum()) == 15
    loader = DataLoader(bundle.test, batch_size=1)
    assert evaluate(_perfect_model(bundle), loader, bundle, "cpu", "test") == 1.0
    record = run(bundle, ["rwse"], model="gine", channels=8, layers=1,
                 config=TrainConfig(epochs=2, batch_size=1, progress=False))
    assert record["epochs_run"] == 2 and 0.0 <= record["test"] <= 1.0


def test_ogbn_missing_files_fail_in_one_line(tmp_path):
    with pytest.raises(FileNotFoundError) as error:
        load_dataset("ogbn-arxiv", tmp_path)
    message = str(error.value)
    assert "\n" not in message and message.startswith("ogbn-arxiv: files not found")
    assert f"{tmp_path}/ogbn_arxiv/: RELEASE_v1.txt, raw/edge.csv.gz, raw/node-feat.csv.gz" \
        in message and "split/time/test.csv.gz" in message and "--download" in message
    write_ogbn(tmp_path, "ogbn-arxiv")  # one file missing: the error names it
    (tmp_path / "ogbn_arxiv" / "raw" / "node_year.csv.gz").unlink()
    with pytest.raises(FileNotFoundError, match=r"\(1 missing: raw/node_year.csv.gz\)"):
        load_dataset("ogbn-arxiv", tmp_path)
    with pytest.raises(ValueError, match="ogbn-mag: graphpe loads OGB's homogeneous node sets"):
        load_dataset("ogbn-mag", tmp_path)
    with pytest.raises(ValueError, match="ogbn-arxiv keeps its standard split"):
        load_dataset("ogbn-arxiv", tmp_path, split=(0.5, 0.25, 0.25))
    assert len(OGBN_NAMES) == 4


def write_flickr(folder: Path) -> None:
    """PyG's Flickr layout (GraphSAINT's files) under ``folder/raw``."""
    raw = folder / "raw"
    raw.mkdir(parents=True)
    edges = _ring_edges(N)
    sp.save_npz(raw / "adj_full.npz", sp.csr_matrix(
        (np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(N, N)))
    np.save(raw / "feats.npy", np.eye(N, 6, dtype=np.float32))
    (raw / "class_map.json").write_text(json.dumps({str(i): i % 7 for i in range(N)}))
    (raw / "role.json").write_text(json.dumps({"tr": list(range(20)), "va": [20, 21, 22],
                                                "te": list(range(23, N))}))


def test_flickr_from_its_raw_layout(tmp_path):
    write_flickr(tmp_path / "Flickr")
    bundle = load_dataset("Flickr", tmp_path)
    graph = bundle.train[0]
    assert (bundle.task, bundle.out_dim, bundle.node_dim) == ("node_classification", 7, 6)
    assert [int(graph[f"{s}_mask"].sum()) for s in ("train", "val", "test")] == [20, 3, 7]
    assert graph.edge_index.size(1) == 2 * N
    other = load_dataset("Flickr", tmp_path, split=(0.5, 0.25, 0.25), seed=1)
    counts = [int(other.train[0][f"{s}_mask"].sum()) for s in ("train", "val", "test")]
    assert sum(counts) == N and counts != [20, 3, 7]
    assert int(load_dataset("Flickr", tmp_path).train[0].train_mask.sum()) == 20


def write_amazon(folder: Path, name: str) -> None:
    """PyG's Amazon layout (Shchur et al.'s npz) under ``folder/raw``."""
    raw = folder / "raw"
    raw.mkdir(parents=True)
    edges = _ring_edges(60)
    adj = sp.csr_matrix((np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(60, 60))
    attr = sp.csr_matrix(np.eye(60, 4))
    np.savez(raw / f"amazon_electronics_{name}.npz", adj_data=adj.data,
             adj_indices=adj.indices, adj_indptr=adj.indptr, adj_shape=adj.shape,
             attr_data=attr.data, attr_indices=attr.indices, attr_indptr=attr.indptr,
             attr_shape=attr.shape, labels=np.arange(60) % 3)


def test_amazon_gets_a_seeded_stratified_split(tmp_path):
    write_amazon(tmp_path / "Photo", "photo")
    bundle = load_dataset("Amazon-Photo", tmp_path)
    graph = bundle.train[0]
    masks = [graph[f"{s}_mask"] for s in ("train", "val", "test")]
    assert (masks[0].int() + masks[1].int() + masks[2].int()).eq(1).all()
    for c in range(3):  # 60/20/20 of each class's 20 nodes
        assert [int(m[graph.y == c].sum()) for m in masks] == [12, 4, 4]
    assert graph.edge_index.size(1) == 4 * 60  # PyG makes it undirected
    fold = load_dataset("Amazon-Photo", tmp_path, fold=1).train[0]
    assert not torch.equal(fold.test_mask, graph.test_mask)
    same = load_dataset("Amazon-Photo", tmp_path).train[0]
    assert torch.equal(same.test_mask, graph.test_mask)


def test_wikics_fold_picks_one_of_its_20_splits(tmp_path):
    raw = tmp_path / "WikiCS" / "raw"
    raw.mkdir(parents=True)
    rng = np.random.default_rng(0)
    links = [[(i + 1) % N, (i + 2) % N] for i in range(N)]
    train = rng.random((20, N)) < 0.5
    (raw / "data.json").write_text(json.dumps({
        "features": np.eye(N, 3).tolist(), "labels": (np.arange(N) % 2).tolist(),
        "links": links, "train_masks": train.tolist(), "val_masks": (~train).tolist(),
        "stopping_masks": train.tolist(), "test_mask": [True] * N}))
    for fold in (0, 5):
        graph = load_dataset("WikiCS", tmp_path, fold=fold).train[0]
        assert graph.train_mask.tolist() == train[fold].tolist()
        assert graph.val_mask.tolist() == (~train[fold]).tolist() and graph.test_mask.all()


@pytest.mark.parametrize("name", [*PYG_NODE_NAMES, "PubMed"])
def test_pyg_node_sets_without_files_fail_in_one_line(name, tmp_path):
    with pytest.raises(FileNotFoundError) as error:
        load_dataset(name, tmp_path)
    message = str(error.value)
    assert message.startswith(f"{name}: files not found") and "\n" not in message
    assert str(tmp_path) in message and "/raw/" in message and "--download" in message
