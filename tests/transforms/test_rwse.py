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
    assert repr(RWSE(8)) == ("RWSE(walk_length=8, attr_name='rwse', self_loops=True, "
                             "dense_max_nodes=512)")
    with pytest.raises(ValueError, match="walk_length must be a positive int"):
        RWSE(0)
    with pytest.raises(ValueError, match="self_loops must be True or False, got 'yes'"):
        RWSE(4, self_loops="yes")


def test_attr_name_none_appends_to_x_as_pyg():
    import torch
    from torch_geometric.data import Data
    from torch_geometric.transforms import AddLaplacianEigenvectorPE, AddRandomWalkPE

    from graphpe.transforms import LaplacianPE, precompute

    ei = torch.tensor([[0, 1, 1, 2, 2, 3], [1, 0, 2, 1, 3, 2]])
    data = Data(edge_index=ei, num_nodes=4, x=torch.ones(4, 2))
    ours, pyg = RWSE(3, attr_name=None)(data.clone()), AddRandomWalkPE(3)(data.clone())
    assert "None" not in ours and ours.x.shape == (4, 5)
    torch.testing.assert_close(ours.x[:, 2:], pyg.random_walk_pe)
    listed = precompute([data.clone(), data.clone()], RWSE(3, attr_name=None), progress=False)
    torch.testing.assert_close(listed[1].x, ours.x)
    lap = LaplacianPE(2, attr_name=None)(data.clone())
    ref = AddLaplacianEigenvectorPE(2, attr_name=None)(data.clone())
    assert lap.x.shape == ref.x.shape == (4, 4)
    assert "pe" in LaplacianPE(2, attr_name="pe")(data.clone())
    categorical = Data(edge_index=ei, num_nodes=4, x=torch.zeros(4, 1, dtype=torch.long))
    with pytest.raises(ValueError, match="attr_name=None appends the encoding to x, but x is "
                                         "torch.int64"):
        RWSE(3, attr_name=None)(categorical)


def test_laplacian_cache_key_holds_every_setting():
    from graphpe.transforms import LaplacianPE

    keys = {repr(LaplacianPE(4)), repr(LaplacianPE(4, sparse_solver="arpack")),
            repr(LaplacianPE(4, eigh_backend="torch")), repr(LaplacianPE(4, dense_max_nodes=64))}
    assert len(keys) == 4
