"""The link predictor (graphpe.nn.link): scores symmetric in the pair, any node model, the
decoder's pair features checked."""

import pytest
import torch
from torch_geometric.data import Data

from graphpe.nn.link import build_link_model


def _graph(n: int = 30) -> Data:
    gen = torch.Generator().manual_seed(0)
    edge_index = torch.randint(0, n, (2, 90), generator=gen)
    return Data(x=torch.randn(n, 5, generator=gen), edge_index=edge_index, num_nodes=n)


@pytest.mark.parametrize("model", ["gcn", "sage", "gin", "gps"])
def test_a_pair_scores_the_same_both_ways(model):
    torch.manual_seed(0)
    net = build_link_model({"model": model, "channels": 16, "layers": 2, "node_dim": 5},
                           pair_dim=3).eval()
    graph, pairs = _graph(), torch.tensor([[0, 4, 7], [9, 2, 7]])
    features = torch.rand(3, 3)
    ahead, back = net(graph, pairs, features), net(graph, pairs.flip(0), features)
    assert ahead.shape == (3,)
    torch.testing.assert_close(ahead, back)


def test_the_decoder_names_the_pair_features_it_reads():
    net = build_link_model({"model": "gcn", "channels": 8, "layers": 1, "node_dim": 5},
                           pair_dim=4)
    pairs = torch.tensor([[0], [1]])
    with pytest.raises(ValueError, match="the decoder reads 4 pair features per pair, got 2"):
        net(_graph(), pairs, torch.zeros(1, 2))
    with pytest.raises(ValueError, match="the decoder reads 4 pair features per pair, got None"):
        net(_graph(), pairs)
