import pytest
import torch
from torch_geometric.data import Batch

from graphpe.transforms import RFP, precompute


def test_shape_and_determinism(families):
    data = families["er23"]
    out = RFP(dim=4, steps=3, num_draws=2, seed=0)(data)
    assert out.rfp.shape == (23, 2, 16)
    again = RFP(dim=4, steps=3, num_draws=2, seed=0)(data)
    assert torch.equal(out.rfp, again.rfp)
    t = RFP(dim=4, steps=3, seed=0)
    first, second = t(data).rfp, t(data).rfp
    assert not torch.equal(first, second)  # successive calls draw new features


def test_works_on_batch_and_small_graphs(families):
    batch = Batch.from_data_list(list(families.values()))
    out = RFP(dim=16, steps=4, seed=1)(batch)  # many graphs have fewer than 16 nodes
    assert out.rfp.shape == (batch.num_nodes, 1, 80)
    assert torch.isfinite(out.rfp).all()


def test_precompute_reproducible(families):
    graphs = list(families.values())
    t = RFP(dim=4, steps=2, seed=3, normalization="l2")
    a = precompute(graphs, t, progress=False)
    b = precompute(graphs, t, progress=False)
    assert all(torch.equal(x.rfp, y.rfp) for x, y in zip(a, b, strict=True))


def test_bad_arguments_and_repr():
    with pytest.raises(ValueError, match="dim must be an int >= 1"):
        RFP(dim=0)
    with pytest.raises(ValueError, match="steps must be an int >= 0"):
        RFP(steps=-1)
    with pytest.raises(ValueError, match="operator must be one of"):
        RFP(operator="laplacian")
    with pytest.raises(ValueError, match="normalization must be one of"):
        RFP(normalization="row")
    assert repr(RFP()) == ("RFP(dim=16, steps=8, num_draws=1, operator='gcn', "
                           "normalization='qr', seed=None, attr_name='rfp')")
