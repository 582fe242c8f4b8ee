"""graphpe.encode's files of one graph's encodings (``graphpe encode``): written with their
settings and the graph's digest, read back equal to the transforms' own outputs, refused for
another graph; the command reads a graph file (npz, PyG Data) or a one-graph dataset."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from graphpe.encode import encode_graph, graph_digest, read_encodings
from graphpe.synthetic import social_like_graph
from graphpe.transforms import RWSE, LaplacianPE
from tests.test_cli import run_cli


def test_written_encodings_read_back_equal_to_the_transforms(tmp_path):
    graph = social_like_graph(300, mean_degree=5.0)
    written = encode_graph(graph, "lap:k=4,rwse:walk_length=6", tmp_path / "enc")
    assert sorted(written) == ["lap", "rwse"]
    record = json.loads((tmp_path / "enc" / "lap.json").read_text())
    assert record["encoding"] == {"name": "lap", "k": 4, "normalization": "sym",
                                  "sign": "canonical", "hidden": None}
    assert record["graph"] == {"digest": graph_digest(graph), "num_nodes": 300,
                               "num_edges": int(graph.edge_index.size(1))}
    assert record["attributes"] == ["lap_eigvals", "lap_mask", "lap_pe"]
    target = graph.clone()
    tensors = read_encodings(tmp_path / "enc", target)
    want = RWSE(walk_length=6)(LaplacianPE(k=4)(graph.clone()))
    for key in ("lap_pe", "lap_eigvals", "lap_mask", "rwse"):
        assert torch.equal(tensors[key], want[key]) and torch.equal(target[key], want[key])
    other = social_like_graph(300, mean_degree=5.0, seed=1)
    with pytest.raises(ValueError, match=r"encodings of another graph \(digest"):
        read_encodings(tmp_path / "enc", other)
    with pytest.raises(FileNotFoundError, match="no encodings"):
        read_encodings(tmp_path)


def test_the_encode_command_reads_graph_files_and_one_graph_datasets(tmp_path, capsys):
    n = 50
    i = np.arange(n)
    sp.save_npz(tmp_path / "ring.npz", sp.csr_matrix((np.ones(n), (i, (i + 1) % n)),
                                                     shape=(n, n)))
    code, out, err = run_cli(["encode", "--graph", str(tmp_path / "ring.npz"), "--pe",
                              "rwse:walk_length=4", "--out", str(tmp_path / "a")], capsys)
    assert code == 0, err
    assert json.loads(out)["rwse"]["attributes"] == ["rwse"]
    ring = torch.load(tmp_path / "a" / "rwse.pt")["rwse"]
    # a ring's walk returns after 2 steps with probability 1/2, never after 1 or 3
    assert torch.allclose(ring[:, :3], torch.tensor([0.0, 0.5, 0.0]).expand(n, 3))
    graph = social_like_graph(80, mean_degree=4.0)
    torch.save(graph, tmp_path / "g.pt")
    code, _, err = run_cli(["encode", "--graph", str(tmp_path / "g.pt"), "--pe", "lap:k=3",
                            "--out", str(tmp_path / "b")], capsys)
    assert code == 0, err
    assert read_encodings(tmp_path / "b", graph)["lap_pe"].shape == (80, 3)
    code, _, err = run_cli(["encode", "--dataset", "CSL", "--root", str(tmp_path), "--pe",
                            "rwse", "--out", str(tmp_path / "c")], capsys)
    assert code == 2 and "CSL is a dataset of many graphs: graphpe encode writes the " \
                         "encodings of one graph" in err
    code, _, err = run_cli(["encode", "--graph", str(tmp_path / "missing.npz"), "--pe",
                            "rwse", "--out", str(tmp_path / "d")], capsys)
    assert code == 2 and "--graph" in err and "missing.npz: not found" in err
