"""A plain graph from files as a node dataset (graphpe/datasets/graph_files.py):
``load_dataset("graph:PATH", root)`` on an npz adjacency, an edge list and a GraphSAINT
folder, and on the real ogbn-arxiv graph of ../shared/data where it is."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from graphpe.datasets import load_dataset, read_graph
from tests.conftest import SHARED_DATA


def test_npz_adjacency(tmp_path):
    # A[i, j] is the edge i -> j; a duplicate entry counts once, a stored zero is no edge
    adj = sp.coo_matrix((np.array([1, 1, 1, 1, 0]), (np.array([0, 1, 2, 0, 3]),
                                                      np.array([1, 2, 0, 1, 0]))), shape=(5, 5))
    sp.save_npz(tmp_path / "adj.npz", adj)  # a COO file; CSR and others read the same
    bundle = load_dataset("graph:adj.npz", tmp_path)
    graph = bundle.train[0]
    assert graph.num_nodes == 5  # the matrix's size: nodes 3 and 4 are isolated
    assert graph.edge_index.tolist() == [[0, 1, 2], [1, 2, 0]]  # directed, as stored
    assert graph.x.dtype == torch.long and graph.x.shape == (5, 1) and bundle.node_vocab == 1
    assert graph.get("y") is None and graph.get("train_mask") is None
    assert bundle.name == "graph:adj.npz" and bundle.out_dim == 0
    with pytest.raises(ValueError, match="graph:adj.npz has no labels"):
        bundle.model_kwargs()
    # an absolute path ignores root
    same = load_dataset(f"graph:{tmp_path / 'adj.npz'}", "/nonexistent")
    assert torch.equal(same.train[0].edge_index, graph.edge_index)
    sp.save_npz(tmp_path / "wide.npz", sp.csr_matrix(np.ones((2, 3))))
    with pytest.raises(ValueError, match=r"an adjacency is square, this matrix is \(2, 3\)"):
        load_dataset("graph:wide.npz", tmp_path)


def test_edge_list(tmp_path):
    (tmp_path / "edges.txt").write_text(
        "# a triangle and a tail\n0 1\n1\t2   # tabs and spaces\n\n2 0 0.5\n2 5\n0 1\n")
    graph = load_dataset("graph:edges.txt", tmp_path).train[0]
    assert graph.num_nodes == 6  # the largest id plus one
    assert graph.edge_index.tolist() == [[0, 1, 2, 2], [1, 2, 0, 5]]  # duplicates once
    with gzip.open(tmp_path / "edges.csv.gz", "wt") as f:  # commas, compressed
        f.write("0,1\n1,2\n")
    assert load_dataset("graph:edges.csv.gz", tmp_path).train[0].edge_index.tolist() == [
        [0, 1], [1, 2]]
    assert load_dataset("graph:./edges.txt", tmp_path).train[0].num_nodes == 6
    (tmp_path / "bad.txt").write_text("0 1\n1 x\n")
    with pytest.raises(ValueError, match="bad.txt: not an edge list of two node ids a line"):
        load_dataset("graph:bad.txt", tmp_path)
    (tmp_path / "empty.txt").write_text("# nothing\n")
    with pytest.raises(ValueError, match="empty.txt: no edges"):
        load_dataset("graph:empty.txt", tmp_path)
    (tmp_path / "negative.txt").write_text("0 -1\n")
    with pytest.raises(ValueError, match="node ids start at 0, found -1"):
        load_dataset("graph:negative.txt", tmp_path)


def write_graphsaint(folder, n=40, roles=True, feats=False, labels=True):
    folder.mkdir()
    i = np.arange(n)
    adj = sp.csr_matrix((np.ones(2 * n, dtype=bool), (np.r_[i, i], np.r_[(i + 1) % n,
                                                                       (i + 5) % n])),
                        shape=(n, n))
    sp.save_npz(folder / "adj_full.npz", adj)
    if labels:
        (folder / "class_map.json").write_text(json.dumps({str(k): k % 4 for k in range(n)}))
    if roles:
        (folder / "role.json").write_text(json.dumps(
            {"tr": list(range(0, n, 2)), "va": list(range(1, n, 4)), "te": list(range(3, n, 4))}))
    if feats:
        np.save(folder / "feats.npy", np.ones((n, 3), dtype=np.float32))
    return folder


def test_graphsaint_folder(tmp_path):
    write_graphsaint(tmp_path / "saint")
    bundle = load_dataset("graph:saint/", tmp_path)
    graph = bundle.train[0]
    assert (bundle.task, bundle.metric, bundle.out_dim) == ("node_classification", "accuracy", 4)
    assert graph.num_nodes == 40 and graph.edge_index.size(1) == 80
    assert graph.y.tolist() == [k % 4 for k in range(40)]
    assert graph.train_mask.nonzero().view(-1).tolist() == list(range(0, 40, 2))
    assert graph.test_mask.nonzero().view(-1).tolist() == list(range(3, 40, 4))
    assert bundle.node_vocab == 1 and graph.x.eq(0).all()  # no feats.npy: a constant x
    # split fractions: a seeded stratified split in place of role.json's
    drawn = load_dataset("graph:saint", tmp_path, split=(0.5, 0.25, 0.25), seed=2).train[0]
    masks = [drawn[f"{s}_mask"] for s in ("train", "val", "test")]
    assert sum(m.int() for m in masks).eq(1).all()  # every node in one part
    assert abs(int(masks[0].sum()) - 20) <= 2 and abs(int(masks[2].sum()) - 10) <= 2
    assert not torch.equal(masks[0], graph.train_mask)
    # with features, no roles: the features as x and the seeded 60/20/20 split
    write_graphsaint(tmp_path / "plain", roles=False, feats=True)
    bundle = load_dataset("graph:plain", tmp_path)
    graph = bundle.train[0]
    assert bundle.node_dim == 3 and graph.x.dtype == torch.float32
    assert [int(graph[f"{s}_mask"].sum()) for s in ("train", "val", "test")] == [24, 8, 8]
    write_graphsaint(tmp_path / "bare", roles=False, labels=False)
    with pytest.raises(ValueError, match="split draws masks stratified by label"):
        load_dataset("graph:bare", tmp_path, split=(0.5, 0.25, 0.25))
    assert load_dataset("graph:bare", tmp_path).out_dim == 0


def test_graph_spec_errors(tmp_path):
    with pytest.raises(FileNotFoundError) as error:
        load_dataset("graph:nothing.npz", tmp_path)
    message = str(error.value)
    assert message.startswith(f"graph:nothing.npz: {tmp_path}/nothing.npz not found. Place")
    assert "graph files have no download" in message and "\n" not in message
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="a graph folder holds GraphSAINT's adj_full"):
        load_dataset("graph:empty/", tmp_path)
    # graph:NAME with a bare Python name and no such file stays module:function (an own
    # module named graph), and the error says there is no file of that name either
    with pytest.raises(ValueError, match=r"cannot import module 'graph' .*PYTHONPATH\? \(nor "
                                         rf"is there a graph file {tmp_path}/edges\)"):
        load_dataset("graph:edges", tmp_path)
    (tmp_path / "edges").write_text("0 1\n")
    assert load_dataset("graph:edges", tmp_path).train[0].num_nodes == 2


def test_multilabel_class_maps_are_refused(tmp_path):
    folder = write_graphsaint(tmp_path / "ppi", labels=False)
    (folder / "class_map.json").write_text(json.dumps({str(k): [0, 1] for k in range(40)}))
    with pytest.raises(ValueError, match="lists of labels .* are not read yet"):
        read_graph(folder)


def test_ogbn_arxiv_graph_from_shared_data():
    """The real ogbn-arxiv structure, labels and time split (GraphSAINT layout, no features),
    read in place: graph files are only read, never written."""
    folder = SHARED_DATA / "ogbn-arxiv-graph"
    if not (folder / "adj_full.npz").exists():
        pytest.skip(f"offline ogbn-arxiv graph (GraphSAINT layout) not found at {folder}")
    bundle = load_dataset("graph:ogbn-arxiv-graph", SHARED_DATA)
    graph = bundle.train[0]
    assert graph.num_nodes == 169_343 and graph.edge_index.size(1) == 1_166_243
    assert [int(graph[f"{s}_mask"].sum()) for s in ("train", "val", "test")] == [
        90_941, 29_799, 48_603]
    assert bundle.out_dim == 40 and int(graph.y.min()) == 0
    assert graph.x.shape == (169_343, 1) and bundle.node_vocab == 1
    assert not (graph.train_mask & graph.test_mask).any()
