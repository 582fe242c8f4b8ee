import pytest
import torch

from graphpe.datasets import EXP, read_exp
from tests.conftest import copy_shared


def test_read_exp_format(tmp_path):
    path = tmp_path / "GRAPHSAT.txt"
    path.write_text("2\n3 1\n0 1 1\n1 2 0 2\n0 1 1\n2 0\n1 1 1\n1 1 0\n")
    graphs = read_exp(path)
    assert [g.num_nodes for g in graphs] == [3, 2]
    assert graphs[0].y.tolist() == [1] and graphs[1].y.tolist() == [0]
    assert graphs[0].edge_index.tolist() == [[0, 1, 1, 2], [1, 0, 2, 1]]
    assert torch.equal(graphs[0].x, torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]]))


def test_missing_file_names_location(tmp_path):
    with pytest.raises(FileNotFoundError, match="GRAPHSAT.txt"):
        read_exp(tmp_path / "GRAPHSAT.txt")
    with pytest.raises(FileNotFoundError, match="GRAPHSAT.txt"):
        EXP(tmp_path / "nothing")


def test_offline_exp(tmp_path):
    root = copy_shared("exp/EXP", tmp_path / "EXP")
    ds = EXP(root)
    assert len(ds) == 1200
    assert set(ds._data.y.tolist()) == {0, 1}
