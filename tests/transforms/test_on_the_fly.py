import pytest
import torch
from torch_geometric.data import Batch

from graphpe.nn import build_model
from graphpe.transforms import LCP, RFP, RWSE, LaplacianPE, OnTheFlyPE


def test_matches_precomputed_and_draws_anew(families):
    graphs = [g for g in families.values() if g.num_nodes > 0]
    batch = Batch.from_data_list(graphs)
    batch.x = torch.zeros(batch.num_nodes, 1, dtype=torch.long)
    pe = OnTheFlyPE([RWSE(8), LCP(), LaplacianPE(4), RFP(dim=4, steps=2, seed=0)])
    a, b = pe(batch), pe(batch)
    assert "rwse" not in batch  # the input batch is untouched
    ref = RWSE(8)(LCP()(LaplacianPE(4)(batch)))
    for name in ("rwse", "lcp", "lap_pe", "lap_eigvals"):
        assert torch.equal(a[name], ref[name]) and torch.equal(a[name], b[name])
    assert not torch.equal(a.rfp, b.rfp)  # fresh draws every call
    model = torch.nn.Sequential(pe, build_model({"channels": 8, "layers": 1, "node_vocab": 1,
                                                 "pe": {"rwse": {"walk_length": 8}, "lcp": {},
                                                        "rfp": {"dim": 4, "steps": 2}}}))
    out = model(batch)
    out.sum().backward()
    assert out.shape == (batch.num_graphs, 1)


def test_rejects_other_transforms():
    from torch_geometric.transforms import Constant

    with pytest.raises(ValueError, match="OnTheFlyPE takes graphpe transforms"):
        OnTheFlyPE([Constant()])


def test_eval_draws_are_fixed_and_training_draws_fresh():
    """Two evaluation calls on one batch give the same RFP features (issue 14); training
    calls draw anew, and evaluating does not disturb the training stream."""
    import torch
    from torch_geometric.data import Batch, Data

    from graphpe.transforms import RFP, OnTheFlyPE

    path = Data(edge_index=torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]]), num_nodes=3)
    batch = Batch.from_data_list([path, path])
    fly = OnTheFlyPE([RFP(4, 2, seed=5)])
    reference = OnTheFlyPE([RFP(4, 2, seed=5)])
    first_train = fly(batch).rfp
    fly.eval()
    a, b = fly(batch).rfp, fly(batch).rfp
    assert torch.equal(a, b)
    fly.train()
    reference(batch)
    assert torch.equal(fly(batch).rfp, reference(batch).rfp)  # the stream went on as if
    assert not torch.equal(first_train, fly(batch).rfp)
