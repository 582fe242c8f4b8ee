import pytest
import torch
from torch_geometric.data import Batch, Data

from graphpe.encodings import pe_spec
from graphpe.encodings.svd import SVDPE
from tests.ops.eigen.test_svd import random_digraph


def test_a_batch_equals_each_graph_alone_and_small_graphs_are_padded():
    graphs = []
    for i, (n, p) in enumerate([(9, 0.3), (3, 0.6), (1, 0.0), (14, 0.2), (5, 0.0)]):
        _, edge_index, _ = random_digraph(n, p, 10 + i)
        graphs.append(Data(edge_index=edge_index, num_nodes=n))
    t = SVDPE(k=4)
    batch = t(Batch.from_data_list([g.clone() for g in graphs]))
    alone = torch.cat([t(g.clone()).svd_pe for g in graphs])
    torch.testing.assert_close(batch.svd_pe, alone, atol=1e-6, rtol=0)
    three = alone[9:12]  # a 3-node graph: columns 3 and 7 are padding
    assert batch.svd_pe.shape == (32, 8)
    assert not three[:, 3].any() and not three[:, 7].any()
    assert not alone[12:13].any() and not alone[-5:].any()  # no edges: no singular values


def test_random_signs_flip_each_pair_and_follow_the_seed():
    _, edge_index, _ = random_digraph(10, 0.3, 4)
    data = Data(edge_index=edge_index, num_nodes=10)
    canonical = SVDPE(3)(data.clone()).svd_pe
    a = SVDPE(3, sign="random", seed=7)(data.clone()).svd_pe
    b = SVDPE(3, sign="random", seed=7)(data.clone()).svd_pe
    torch.testing.assert_close(a, b)
    flips = torch.sign((a * canonical).sum(0))
    assert torch.equal(flips[:3], flips[3:])  # u_j and v_j flip together
    torch.testing.assert_close(a, canonical * flips, atol=1e-6, rtol=0)


def test_bad_settings_and_inputs_name_the_problem():
    with pytest.raises(ValueError, match="^k must be a positive int, got 0$"):
        SVDPE(0)
    with pytest.raises(ValueError, match=r"^sign must be one of \('canonical', 'random', "
                                         r"'none'\), got 'flip'$"):
        SVDPE(sign="flip")
    with pytest.raises(ValueError, match="above max_nodes=4"):
        SVDPE(2, max_nodes=4)(Data(edge_index=torch.tensor([[0], [1]]), num_nodes=5))
    assert repr(SVDPE(3)) == "SVDPE(k=3, sign='canonical', seed=None, attr_name='svd_pe')"
    assert repr(pe_spec("svd", k=3)) == "SVDSpec(k=3, sign='canonical')"
