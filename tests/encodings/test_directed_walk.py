import pytest
import torch
from torch_geometric.data import Batch, Data

from graphpe import build_model
from graphpe.encodings import pe_spec
from graphpe.encodings.directed_walk import DirectedRWSE, DirectedRWSEEncoder
from graphpe.transforms import RWSE, OnTheFlyPE, precompute
from tests.ops.walk.test_directed import random_digraph


def test_an_undirected_graph_gives_rwse(families):
    # both directions of every edge: the walk of RWSE, whose isolated nodes get 0 (vanish)
    graphs = list(families.values())
    batch = Batch.from_data_list(graphs)
    ours = DirectedRWSE(12, sink="vanish")(batch.clone()).drwse
    torch.testing.assert_close(ours, RWSE(12)(batch.clone()).rwse, atol=1e-6, rtol=0)


def test_a_batch_equals_each_graph_alone_through_every_path():
    graphs = [random_digraph(10 + k, weighted=True) for k in range(4)]
    graphs.append(Data(edge_index=torch.zeros(2, 0, dtype=torch.long),
                       edge_weight=torch.zeros(0, dtype=torch.float64), num_nodes=2))
    t = DirectedRWSE(7, sink="teleport")
    alone = torch.cat([t(g.clone()).drwse for g in graphs])
    batch = t(Batch.from_data_list([g.clone() for g in graphs]))
    torch.testing.assert_close(batch.drwse, alone, atol=0, rtol=0)
    listed = precompute([g.clone() for g in graphs], t, progress=False)
    torch.testing.assert_close(torch.cat([g.drwse for g in listed]), alone, atol=0, rtol=0)
    fly = OnTheFlyPE([t])(Batch.from_data_list([g.clone() for g in graphs]))
    torch.testing.assert_close(fly.drwse, alone, atol=0, rtol=0)
    # teleport stays within the graph: a sink of the empty graph returns with 1/2
    assert alone[-2:].tolist() == [[0.5] * 7, [0.5] * 7]


def test_bad_settings_and_inputs_name_the_problem():
    with pytest.raises(ValueError, match="^walk_length must be a positive int, got 0$"):
        DirectedRWSE(0)
    with pytest.raises(ValueError, match=r"^sink must be one of \('stay', 'teleport', "
                                         r"'vanish'\), got 'restart'$"):
        DirectedRWSE(sink="restart")
    with pytest.raises(ValueError, match=r"^drwse: sink must be one of \('stay', 'teleport', "
                                         r"'vanish'\), got 'loop'$"):
        pe_spec("drwse", sink="loop")
    with pytest.raises(ValueError, match="^directed_landing_probs densifies each graph: a graph "
                                         "of 5 nodes is above max_nodes=4$"):
        DirectedRWSE(3, max_nodes=4)(Data(edge_index=torch.tensor([[0], [1]]), num_nodes=5))
    assert repr(DirectedRWSE(3)) == "DirectedRWSE(walk_length=3, sink='stay', attr_name='drwse')"
    assert repr(pe_spec("drwse")) == "DRWSESpec(walk_length=16, sink='stay')"


def test_a_model_reads_it_through_build_model():
    graphs = [random_digraph(30 + k) for k in range(3)]
    for g in graphs:
        g.x = torch.zeros(g.num_nodes, dtype=torch.long)
        g.edge_attr = torch.zeros(g.edge_index.size(1), dtype=torch.long)
        del g.edge_weight
    spec = pe_spec("drwse", walk_length=5, sink="teleport")
    batch = spec.transform()(Batch.from_data_list(graphs))
    model = build_model({"model": "gps", "channels": 8, "layers": 1, "heads": 2,
                         "node_vocab": 1, "edge_vocab": 1, "pe": {"drwse": spec.settings}})
    encoder = model.pe_encoders[0]
    assert isinstance(encoder, DirectedRWSEEncoder) and encoder.in_dim == 5
    out = model(batch)
    assert out.shape == (3, 1) and torch.isfinite(out).all()
