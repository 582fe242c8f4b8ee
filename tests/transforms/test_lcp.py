import pytest
import torch
from torch_geometric.data import Batch, Data

from graphpe.ops.curvature import curvature_bounds, node_profile, ollivier_ricci
from graphpe.transforms import LCP, precompute


@pytest.mark.parametrize("curvature", ["orc", "orc_bounds", "forman", "afrc"])
def test_data_and_batch_agree(families, curvature):
    graphs = list(families.values())
    t = LCP(curvature=curvature, edge_attr_name="curv")
    batched = t(Batch.from_data_list(graphs))
    single = Batch.from_data_list([t(g) for g in graphs])
    assert batched.lcp.shape == (batched.num_nodes, 5)
    assert torch.allclose(batched.lcp, single.lcp, atol=1e-6)
    assert torch.allclose(batched.curv, single.curv, atol=1e-6)
    assert torch.isfinite(batched.lcp).all()


def test_values_match_ops(families):
    data = families["er23"]
    out = LCP(alpha=0.5, stats=("mean", "min"), edge_attr_name="kappa")(data)
    kappa = ollivier_ricci(data.edge_index, data.num_nodes, 0.5)
    assert torch.allclose(out.kappa, kappa)
    assert torch.allclose(out.lcp, node_profile(data.edge_index, data.num_nodes, kappa,
                                                ("mean", "min")))
    bounds = LCP(curvature="orc_bounds", edge_attr_name="b")(data)
    lo, up = curvature_bounds(data.edge_index, data.num_nodes)
    assert torch.equal(bounds.b, torch.stack([lo, up], 1))


def test_isolated_nodes_get_zeros():
    data = Data(edge_index=torch.tensor([[0, 1], [1, 0]]), num_nodes=4)
    out = LCP()(data)
    assert torch.equal(out.lcp[2:], torch.zeros(2, 5))


def test_precompute_with_edge_attribute(families):
    graphs = list(families.values())
    out = precompute(graphs, LCP(edge_attr_name="curv"), batch_size=7, progress=False)
    for g, o in zip(graphs, out, strict=True):
        ref = LCP(edge_attr_name="curv")(g)
        assert torch.allclose(o.lcp, ref.lcp) and torch.allclose(o.curv, ref.curv)
        assert o.curv.shape == (g.edge_index.size(1),)


def test_bad_arguments_and_repr():
    with pytest.raises(ValueError, match="curvature must be one of"):
        LCP(curvature="ricci")
    with pytest.raises(ValueError, match="alpha must be a number in"):
        LCP(alpha=1.5)
    with pytest.raises(ValueError, match="unknown statistic"):
        LCP(stats=("max", "range"))
    with pytest.raises(ValueError, match="alpha applies to Ollivier-Ricci"):
        LCP(curvature="forman", alpha=0.5)
    assert repr(LCP()) == (
        "LCP(curvature='orc', alpha=0.0, stats=('min', 'max', 'mean', 'std', 'median'), "
        "attr_name='lcp', edge_attr_name=None)"
    )


def test_precompute_in_memory_dataset_with_edge_attribute(families):
    from tests.transforms.test_precompute import TinyDataset, with_x

    graphs = with_x([g for g in families.values() if g.num_nodes > 0])
    ds = TinyDataset(graphs)
    out = precompute(ds, LCP(curvature="afrc", edge_attr_name="curv"), batch_size=5,
                     progress=False)
    for i, g in enumerate(graphs):
        ref = LCP(curvature="afrc", edge_attr_name="curv")(g)
        assert torch.equal(out[i].curv, ref.curv) and torch.allclose(out[i].lcp, ref.lcp)
    batch = Batch.from_data_list([out[i] for i in range(len(out))])
    assert batch.curv.shape == (batch.edge_index.size(1),)
