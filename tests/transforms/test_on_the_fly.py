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


def test_compute_on_validation_and_repr():
    with pytest.raises(ValueError, match=r"compute_on must be one of \('auto', 'device', "
                                         r"'host'\), got 'gpu'"):
        OnTheFlyPE([RWSE(4)], compute_on="gpu")
    for bad in (-1, 2.5, True, None):
        with pytest.raises(ValueError, match="host_max_nodes must be a non-negative int"):
            OnTheFlyPE([RWSE(4)], host_max_nodes=bad)
    assert repr(OnTheFlyPE([RWSE(4)])) == (
        "OnTheFlyPE(RWSE(walk_length=4, attr_name='rwse', self_loops=True, "
        "dense_max_nodes=512))")
    assert repr(OnTheFlyPE([RWSE(4)], compute_on="device")).endswith(
        "self_loops=True, dense_max_nodes=512), compute_on='device', host_max_nodes=64)")


def test_host_rule_for_accelerator_batches():
    """``auto`` sends a batch to the host when its largest graph has at most
    ``host_max_nodes`` nodes; ``host`` and ``device`` decide alone."""
    ptr = torch.tensor([0, 10, 40, 52])  # graphs of 10, 30 and 12 nodes
    assert OnTheFlyPE([RWSE(4)], host_max_nodes=30)._on_host(52, ptr)
    assert not OnTheFlyPE([RWSE(4)], host_max_nodes=29)._on_host(52, ptr)
    assert OnTheFlyPE([RWSE(4)], host_max_nodes=0)._on_host(0, torch.tensor([0]))
    assert OnTheFlyPE([RWSE(4)])._on_host(64, None)  # one graph: its node count
    assert not OnTheFlyPE([RWSE(4)])._on_host(65, None)
    assert OnTheFlyPE([RWSE(4)], compute_on="host", host_max_nodes=0)._on_host(52, ptr)
    assert not OnTheFlyPE([RWSE(4)], compute_on="device")._on_host(52, ptr)


def test_cpu_batches_are_computed_where_they_are(families):
    batch = Batch.from_data_list([g for g in families.values() if g.num_nodes > 0])
    outs = [OnTheFlyPE([RWSE(6), LaplacianPE(3), RFP(4, 2, seed=1)], compute_on=where)(batch)
            for where in ("auto", "host", "device")]
    for name in ("rwse", "lap_pe", "lap_eigvals", "lap_mask", "rfp"):
        assert all(torch.equal(outs[0][name], o[name]) for o in outs[1:])
        assert outs[0][name].device.type == "cpu"


def test_collate_in_dataloader_workers(families):
    """``collate`` as a DataLoader's ``collate_fn``: batches with the encodings, computed in the
    worker processes; deterministic encodings equal the precomputed ones (that each worker
    draws its own random stream is tested in test_rfp.py)."""
    graphs = [g for g in families.values() if g.num_nodes > 0]
    fly = OnTheFlyPE([RWSE(6), LaplacianPE(3), RFP(4, 2, seed=2)])
    loader = torch.utils.data.DataLoader(graphs, batch_size=3, collate_fn=fly.collate,
                                         num_workers=2)
    batches = list(loader)
    assert sum(b.num_graphs for b in batches) == len(graphs)
    ref = OnTheFlyPE([RWSE(6), LaplacianPE(3)])(Batch.from_data_list(graphs))
    for name in ("rwse", "lap_pe", "lap_eigvals", "lap_mask"):
        assert torch.equal(torch.cat([b[name] for b in batches]), ref[name])
    assert all(b.rfp.shape == (b.num_nodes, 4, 12) and bool(b.rfp.isfinite().all())
               for b in batches)
