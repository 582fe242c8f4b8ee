import pytest
import torch
from torch_geometric.data import Data

from graphpe.datasets import DatasetBundle
from graphpe.datasets.bundle import graph_summary, undirected_bundle
from graphpe.train import TrainConfig, run


def _directed_bundle(n=12):
    gen = torch.Generator().manual_seed(0)
    src = torch.arange(n)
    edge_index = torch.stack([src, (src + 1) % n])  # a directed ring
    edge_index = torch.cat([edge_index, torch.tensor([[0], [1]]).flip(0)], 1)  # 1 -> 0 too
    masks = torch.zeros(3, n, dtype=torch.bool)
    masks[torch.arange(n) % 3, torch.arange(n)] = True
    graph = Data(x=torch.randn(n, 4, generator=gen), edge_index=edge_index,
                 y=torch.arange(n) % 2, train_mask=masks[0], val_mask=masks[1],
                 test_mask=masks[2])
    graphs = [graph]
    return DatasetBundle("ring", graphs, graphs, graphs, task="node_classification",
                         metric="accuracy", out_dim=2, node_dim=4)


def test_undirected_adds_each_reverse_edge_once():
    bundle = _directed_bundle()
    assert graph_summary(bundle, False) == {"num_nodes": 12, "num_edges": 13,
                                            "undirected": False, "made_undirected": False}
    both = undirected_bundle(bundle)
    assert graph_summary(both, True) == {"num_nodes": 12, "num_edges": 24,
                                         "undirected": True, "made_undirected": True}
    assert both.train is both.val is both.test
    assert bundle.train[0].edge_index.size(1) == 13  # the loaded graph is left as it was
    assert torch.equal(both.train[0].train_mask, bundle.train[0].train_mask)


def test_undirected_refuses_a_dataset_of_many_graphs():
    graphs = [Data(edge_index=torch.tensor([[0], [1]]), num_nodes=2, y=torch.tensor([0]))] * 3
    bundle = DatasetBundle("many", graphs, graphs[:1], graphs[:1],
                           task="graph_classification", metric="accuracy", out_dim=2)
    assert graph_summary(bundle, False) is None
    with pytest.raises(ValueError, match=r"^many: undirected adds the reverse edges of a "
                                         r"node-level dataset's one graph; this dataset has "
                                         r"several graphs"):
        undirected_bundle(bundle)


@pytest.mark.parametrize("undirected", [False, True])
def test_the_record_names_the_graph_the_model_saw(undirected):
    record = run(_directed_bundle(), "rwse:walk_length=3", model="gcn", channels=8, layers=1,
                 config=TrainConfig(epochs=1, progress=False, undirected=undirected))
    assert record["graph"] == {"num_nodes": 12, "num_edges": 24 if undirected else 13,
                               "undirected": undirected, "made_undirected": undirected}
    assert record["config"]["undirected"] is undirected
