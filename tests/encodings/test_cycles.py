import networkx as nx
import pytest
import torch
from torch_geometric.data import Batch, Data

from graphpe import build_model
from graphpe.encodings import pe_spec
from graphpe.encodings.cycles import CycleCountEncoder, CycleCounts
from graphpe.transforms import OnTheFlyPE, precompute
from tests.ops.test_cycles import count_cycles, messy_graph

# ----------------------------------------------------------------------------- GPSE's target


@pytest.mark.parametrize("seed", range(6))
def test_the_transform_writes_gpses_graph_target_on_every_node(seed):
    # GPSE's target (as graph_cycle_counts) on every node of its graph, batched like a node
    # attribute
    graphs = [messy_graph(seed + k, loops=False) for k in range(3)]
    batch = CycleCounts(graph_attr_name="cycles_graph")(Batch.from_data_list(graphs))
    refs = torch.cat([count_cycles(list(range(2, 9)), g) for g in graphs])
    torch.testing.assert_close(batch.cycles_graph[batch.ptr[:-1]], refs, atol=0, rtol=0)
    torch.testing.assert_close(batch.cycles_graph, refs[batch.batch], atol=0, rtol=0)


# ----------------------------------------------------------------------------- batching


def test_a_batch_equals_each_graph_alone_through_every_path():
    graphs = [messy_graph(20 + k) for k in range(4)] + [Data(
        edge_index=torch.zeros(2, 0, dtype=torch.long), num_nodes=3)]
    t = CycleCounts(6, edge_attr_name="cycle_counts_edge", graph_attr_name="cycles_graph")
    alone = [t(g.clone()) for g in graphs]
    batch = t(Batch.from_data_list([g.clone() for g in graphs]))
    for name in ("cycle_counts", "cycle_counts_edge", "cycles_graph"):
        torch.testing.assert_close(batch[name], torch.cat([a[name] for a in alone]))
        assert batch[name].dtype == torch.float32
    listed = precompute([g.clone() for g in graphs], t, progress=False)
    for one, ref in zip(listed, alone, strict=True):
        for name in ("cycle_counts", "cycle_counts_edge", "cycles_graph"):
            torch.testing.assert_close(one[name], ref[name])
    fly = OnTheFlyPE([t])(Batch.from_data_list([g.clone() for g in graphs]))
    for name in ("cycle_counts", "cycle_counts_edge", "cycles_graph"):
        torch.testing.assert_close(fly[name], batch[name])


# ----------------------------------------------------------------------------- errors


def test_bad_settings_and_inputs_name_the_problem():
    with pytest.raises(ValueError, match="^max_length must be an int >= 3, got 2$"):
        CycleCounts(2)
    with pytest.raises(ValueError, match="^cycles: max_length must be an int >= 3, got True$"):
        pe_spec("cycles", max_length=True)
    with pytest.raises(ValueError, match="^max_paths must be a positive int, got 0$"):
        CycleCounts(max_paths=0)
    with pytest.raises(ValueError, match="^attr_name and edge_attr_name both name 'c': one "
                                         "output would overwrite the other$"):
        CycleCounts(attr_name="c", edge_attr_name="c")
    k12 = torch.tensor(list(nx.complete_graph(12).edges())).T
    graphs = [Data(edge_index=torch.tensor([[0], [1]]), num_nodes=2),
              Data(edge_index=k12, num_nodes=12)]
    with pytest.raises(ValueError, match=r"^cycle_counts: graph 1 \(12 nodes\) has more than "
                                         r"max_paths=1000 simple paths of up to 8 nodes to "
                                         r"enumerate; lower max_length or raise max_paths$"):
        CycleCounts(max_paths=1000)(Batch.from_data_list(graphs))
    assert repr(CycleCounts(5)) == ("CycleCounts(max_length=5, attr_name='cycle_counts', "
                                    "edge_attr_name=None, graph_attr_name=None)")
    assert repr(pe_spec("cycles")) == "CyclesSpec(max_length=8)"


# ----------------------------------------------------------------------------- model


def test_a_model_reads_the_counts_through_build_model():
    graphs = [messy_graph(40 + k) for k in range(3)]
    for g in graphs:
        g.x = torch.zeros(g.num_nodes, dtype=torch.long)
        g.edge_attr = torch.zeros(g.edge_index.size(1), dtype=torch.long)
    spec = pe_spec("cycles", max_length=6)
    batch = spec.transform()(Batch.from_data_list(graphs))
    assert batch.cycle_counts.shape == (batch.num_nodes, 4)
    model = build_model({"model": "gps", "channels": 8, "layers": 1, "heads": 2,
                         "node_vocab": 1, "edge_vocab": 1, "pe": {"cycles": spec.settings}})
    encoder = model.pe_encoders[0]
    assert isinstance(encoder, CycleCountEncoder) and encoder.in_dim == 4
    out = model(batch)
    assert out.shape == (3, 1) and torch.isfinite(out).all()
