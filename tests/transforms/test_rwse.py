import pytest
import torch
from torch_geometric.data import Batch, Data
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


def _large_road():
    from graphpe.synthetic import road_like_graph

    return road_like_graph(150, seed=5)  # above dense_max_nodes=512 once subdivided


def test_the_estimate_keeps_the_defaults_key_and_is_keyed_where_set():
    assert RWSE().settings() == {"walk_length": 16, "attr_name": "rwse", "self_loops": True,
                                 "dense_max_nodes": 512}
    sampled = RWSE(8, estimate="sampled", walks=64, walk_seed=3)
    assert repr(sampled) == ("RWSE(walk_length=8, attr_name='rwse', self_loops=True, "
                             "dense_max_nodes=512, estimate='sampled', walks=64, walk_seed=3)")
    keys = {repr(RWSE(8)), repr(RWSE(8, estimate="exact")), repr(sampled),
            repr(RWSE(8, max_exact_seconds=60)), repr(RWSE(8, estimator="transition")),
            repr(RWSE(8, stderr_name="se"))}
    assert len(keys) == 6


def test_sampled_writes_the_estimate_and_its_standard_error():
    from graphpe.transforms import precompute

    g = _large_road()
    assert g.num_nodes > 512
    exact = RWSE(8)(g.clone()).rwse
    t = RWSE(8, estimate="sampled", walks=128)
    out = t(g.clone())
    assert out.rwse.shape == out.rwse_stderr.shape == (g.num_nodes, 8)
    assert out.rwse.dtype == out.rwse_stderr.dtype == torch.float32
    assert torch.equal(t(g.clone()).rwse, out.rwse)  # a fixed function of graph and seed
    assert not torch.equal(RWSE(8, estimate="sampled", walks=128, walk_seed=1)(g.clone()).rwse,
                           out.rwse)
    inside = (out.rwse - exact).abs() <= 4 * out.rwse_stderr + 1e-6
    assert inside.float().mean() >= 0.98
    # per graph == Batch == precompute, with a small graph beside
    small = Data(edge_index=torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]]), num_nodes=3)
    graphs = [small, Data(edge_index=g.edge_index, num_nodes=g.num_nodes)]
    batched = t(Batch.from_data_list([d.clone() for d in graphs]))
    torch.testing.assert_close(batched.rwse[3:], out.rwse, rtol=0, atol=0)
    torch.testing.assert_close(batched.rwse_stderr[3:], out.rwse_stderr, rtol=0, atol=0)
    listed = precompute([d.clone() for d in graphs], t, progress=False)
    assert torch.equal(listed[1].rwse, out.rwse) and torch.equal(listed[0].rwse,
                                                                 batched.rwse[:3])
    assert torch.equal(listed[1].rwse_stderr, out.rwse_stderr)


def test_auto_estimates_only_past_the_budget_and_names_its_stderr_where_asked(caplog):
    import logging

    g = _large_road()
    small = Data(edge_index=torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]]), num_nodes=3)
    default = RWSE(8)(g.clone())
    assert "rwse_stderr" not in default
    assert torch.equal(RWSE(8, stderr_name="se", max_exact_seconds=1e6)(g.clone()).rwse,
                       default.rwse)
    with caplog.at_level(logging.WARNING, logger="graphpe"):
        out = RWSE(8, stderr_name="se", max_exact_seconds=1e-9)(
            Batch.from_data_list([small.clone(), g.clone()]))
    assert any("estimated from 256 random walks" in r.getMessage() for r in caplog.records)
    sampled = RWSE(8, estimate="sampled")(g.clone())
    assert torch.equal(out.rwse[3:], sampled.rwse) and torch.equal(out.se[3:],
                                                                   sampled.rwse_stderr)
    assert torch.equal(out.rwse[:3], RWSE(8)(small.clone()).rwse) and (out.se[:3] == 0).all()
    # a graph of exact values only still gets the attribute (zeros): every call writes it
    assert torch.equal(RWSE(8, stderr_name="se")(small.clone()).se, torch.zeros(3, 8))


def test_bad_estimate_arguments_raise_value_errors_naming_them():
    for kwargs, name in (({"estimate": "maybe"}, "estimate"), ({"walks": 2}, "walks"),
                         ({"walk_seed": None}, "walk_seed"), ({"walk_seed": 1.5}, "walk_seed"),
                         ({"estimator": "mean"}, "estimator"),
                         ({"max_exact_seconds": -1}, "max_exact_seconds"),
                         ({"estimate": "exact", "stderr_name": "se"}, "stderr_name"),
                         ({"stderr_name": "rwse"}, "stderr_name"),
                         ({"stderr_name": ""}, "stderr_name")):
        with pytest.raises(ValueError, match=name):
            RWSE(8, **kwargs)
