import pytest
import torch
from torch_geometric.data import Batch
from torch_geometric.transforms import AddRandomWalkPE

from graphpe.transforms import RWSE


def test_data_and_batch_equal_pyg(families):
    graphs = list(families.values())
    ref = torch.cat([AddRandomWalkPE(12)(g.clone()).random_walk_pe for g in graphs])
    batched = RWSE(12)(Batch.from_data_list(graphs)).rwse
    assert torch.allclose(batched, ref, atol=1e-6)
    for g in graphs:
        single = RWSE(12)(g).rwse
        assert torch.allclose(single, AddRandomWalkPE(12)(g.clone()).random_walk_pe, atol=1e-6)


def test_repr_and_bad_arguments():
    assert repr(RWSE(8)) == "RWSE(walk_length=8, attr_name='rwse', self_loops=True)"
    with pytest.raises(ValueError, match="walk_length must be a positive int"):
        RWSE(0)
    with pytest.raises(ValueError, match="self_loops must be True or False, got 'yes'"):
        RWSE(4, self_loops="yes")
