"""PCQM4Mv2 (PyG's PCQM4Mv2 with OGB's features), ogbg-ppa and ogbg-code2 (OGB's loader and
Evaluator) from tiny files the tests write in their raw layouts: split sizes (PCQM4Mv2's valid
split as test, GraphGPS's held-out validation), shapes, metrics against hand computations,
the missing-file errors, and the clear refusal to train ogbg-code2."""

from __future__ import annotations

import gzip

import pytest
import torch

from graphpe.datasets import load_dataset
from graphpe.datasets.ogb_graphs import pcqm_split

pytest.importorskip("ogb", reason="these sets need the ogb package")

SMILES = ["CCO", "c1ccccc1O", "CC(=O)O", "CCN", "O=C=O", "CC(C)O", "CCCC", "C1CC1",
          "CC=O", "NCC(=O)O", "COC", "CC#N"]


def write_pcqm(root, gaps):
    """OGB-LSC's pcqm4m-v2.zip as PyG's PCQM4Mv2 expects it unpacked: the csv (idx, smiles,
    homolumogap) and split_dict.pt."""
    folder = root / "PCQM4Mv2" / "raw" / "pcqm4m-v2"
    (folder / "raw").mkdir(parents=True)
    lines = ["idx,smiles,homolumogap"] + [f"{i},{s},{g}" for i, (s, g)
                                          in enumerate(zip(SMILES, gaps, strict=True))]
    with gzip.open(folder / "raw" / "data.csv.gz", "wt") as f:
        f.write("\n".join(lines) + "\n")
    torch.save({"train": torch.arange(10), "valid": torch.tensor([10, 11]),
                "test-dev": torch.tensor([], dtype=torch.long),
                "test-challenge": torch.tensor([], dtype=torch.long)},
               folder / "split_dict.pt")


def test_pcqm4mv2_tests_on_valid_and_holds_out_validation(tmp_path):
    pytest.importorskip("rdkit")
    gaps = [float(i) / 4 for i in range(12)]
    write_pcqm(tmp_path, gaps)
    bundle = load_dataset("PCQM4Mv2", tmp_path)
    assert (len(bundle.train), len(bundle.val), len(bundle.test)) == (9, 1, 2)
    assert (bundle.task, bundle.metric, bundle.out_dim) == ("graph_regression", "mae", 1)
    train, val = pcqm_split(10)
    assert [float(g.y) for g in bundle.val] == [gaps[int(i)] for i in val]
    assert sorted(float(g.y) for g in bundle.train) == sorted(gaps[int(i)] for i in train)
    assert [float(g.y) for g in bundle.test] == gaps[10:]
    ethanol = next(g for g in [*bundle.train, *bundle.val] if g.smiles == "CCO")
    assert ethanol.x.shape == (3, 9) and ethanol.edge_attr.shape == (4, 3)
    assert len(bundle.node_vocab) == 9
    full_train, full_val = pcqm_split(3_378_606)  # the real train part: GraphGPS's 150,000
    assert len(full_val) == 150_000 and len(full_train) == 3_228_606


def write_ogbg(root, name, split_name, graphs, labels, split, node_feat=None, extra=None,
               edge_feat=None):
    """OGB's folder of a graph set as its zip unpacks: RELEASE_v1.txt, raw/*.csv.gz (one
    row a line, no header), split/<split_name>/{train,valid,test}.csv.gz."""
    folder = root / name.replace("-", "_")
    (folder / "raw").mkdir(parents=True)
    (folder / "split" / split_name).mkdir(parents=True)
    (folder / "RELEASE_v1.txt").write_text("v1\n")

    def write(path, rows):
        with gzip.open(path, "wt") as f:
            f.write("".join(",".join(str(v) for v in row) + "\n" for row in rows))

    write(folder / "raw" / "edge.csv.gz", [e for g in graphs for e in g["edges"]])
    write(folder / "raw" / "num-node-list.csv.gz", [[g["n"]] for g in graphs])
    write(folder / "raw" / "num-edge-list.csv.gz", [[len(g["edges"])] for g in graphs])
    write(folder / "raw" / "graph-label.csv.gz", [[label] for label in labels])
    for file, rows in {"node-feat": node_feat, "edge-feat": edge_feat, **(extra or {})}.items():
        if rows is not None:
            write(folder / "raw" / f"{file}.csv.gz", rows)
    for part, index in split.items():
        write(folder / "split" / split_name / f"{part}.csv.gz", [[i] for i in index])


def path_graph(n: int) -> dict:
    return {"n": n, "edges": [(i, i + 1) for i in range(n - 1)]}


def test_ogbg_ppa_constant_x_and_accuracy(tmp_path):
    graphs = [path_graph(3 + k % 2) for k in range(6)]
    edges = sum(len(g["edges"]) for g in graphs)
    write_ogbg(tmp_path, "ogbg-ppa", "species", graphs, [k % 37 for k in range(6)],
               {"train": [0, 1, 2], "valid": [3], "test": [4, 5]},
               edge_feat=[[0.1 * j for j in range(7)]] * edges)
    bundle = load_dataset("ogbg-ppa", tmp_path)
    assert (len(bundle.train), len(bundle.val), len(bundle.test)) == (3, 1, 2)
    assert (bundle.task, bundle.metric, bundle.out_dim) == ("graph_classification",
                                                            "accuracy", 37)
    assert (bundle.node_vocab, bundle.edge_dim) == (1, 7)
    graph = bundle.test[0]
    assert graph.x.shape == (3, 1) and graph.edge_attr.shape == (4, 7)  # inverse edges added
    from torch_geometric.loader import DataLoader

    from graphpe.train import evaluate

    class Four(torch.nn.Module):  # always class 4: right on graph 4, wrong on graph 5
        def forward(self, batch):
            return torch.nn.functional.one_hot(torch.full((batch.num_graphs,), 4), 37).float()

    got = evaluate(Four(), DataLoader(bundle.test, batch_size=2), bundle, "cpu", "test")
    assert got == pytest.approx(0.5)


def test_ogbg_code2_loads_with_its_evaluator_and_refuses_to_train(tmp_path, capsys):
    graphs = [path_graph(3) for _ in range(4)]
    nodes = sum(g["n"] for g in graphs)
    write_ogbg(tmp_path, "ogbg-code2", "project", graphs,
               ["get data", "set value", "run", "to string"],
               {"train": [0, 1], "valid": [2], "test": [3]},
               node_feat=[[j % 3, j % 5] for j in range(nodes)],
               extra={"node_is_attributed": [[1]] * nodes,
                      "node_dfs_order": [[j % 3] for j in range(nodes)],
                      "node_depth": [[j % 3] for j in range(nodes)]})
    bundle = load_dataset("ogbg-code2", tmp_path)
    assert (len(bundle.train), len(bundle.val), len(bundle.test)) == (2, 1, 1)
    assert (bundle.task, bundle.metric) == ("graph_sequence", "f1") and bundle.higher_is_better
    assert bundle.train[0].y == ["get", "data"] and bundle.test[0].y == ["to", "string"]
    assert bundle.train[0].x.shape == (3, 2) and bundle.extra["max_seq_len"] == 5
    # OGB's sub-token F1: precision 1/2, recall 1 on the first graph, 0 on the second
    got = bundle.evaluator.eval({"seq_ref": [["get", "data"], ["run"]],
                                 "seq_pred": [["get", "data", "x", "y"], ["stop"]]})
    assert got["F1"] == pytest.approx((2 * 0.5 * 1 / 1.5 + 0) / 2)
    with pytest.raises(ValueError, match="sequence-prediction task"):
        bundle.model_kwargs()
    from tests.test_cli import run_cli

    code, _, err = run_cli(["train", "--dataset", "ogbg-code2", "--root", str(tmp_path)],
                           capsys)
    assert code == 2 and "no graph_sequence task yet" in err


def test_missing_ogb_files_are_named(tmp_path):
    with pytest.raises(FileNotFoundError) as error:
        load_dataset("ogbg-ppa", tmp_path)
    message = str(error.value)
    assert message.startswith("ogbg-ppa: files not found under the given root.")
    assert "raw/edge-feat.csv.gz" in message and "split/species/train.csv.gz" in message
    assert f"{tmp_path}/ogbg_ppa/" in message and "--download" in message
    with pytest.raises(FileNotFoundError, match=r"PCQM4Mv2/raw/pcqm4m-v2/split_dict\.pt"):
        load_dataset("PCQM4Mv2", tmp_path)
