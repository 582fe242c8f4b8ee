"""graphpe.nn.seal: SEAL scores a pair from its labeled enclosing subgraph."""

import pytest
import torch

from graphpe.nn.build import build_model
from graphpe.nn.seal import SEAL
from graphpe.ops.labeling import enclosing_subgraphs
from tests.nn.test_link import _graph


@pytest.mark.parametrize("labels", ["drnl", "de"])
def test_seal_scores_a_pair_the_same_both_ways(labels):
    torch.manual_seed(0)
    graph, pairs = _graph(), torch.tensor([[0, 4, 7], [9, 2, 8]])
    net = SEAL(8, 2, node_dim=5, label_columns=1 if labels == "drnl" else 2).eval()

    def logits(p):
        sub = enclosing_subgraphs(graph.edge_index, graph.num_nodes, p, 2, labels=labels)
        return net(graph.x, sub.nodes, sub.edge_index, sub.batch, sub.labels, sub.target_index)

    ahead = logits(pairs)
    assert ahead.shape == (3,)
    torch.testing.assert_close(ahead, logits(pairs.flip(0)))


def test_seal_names_the_node_features_it_was_built_for():
    graph = _graph()
    sub = enclosing_subgraphs(graph.edge_index, graph.num_nodes, torch.tensor([[0], [1]]))
    net = SEAL(8, 1, node_dim=3)
    with pytest.raises(ValueError, match="SEAL was built for 3 node features, got 5"):
        net(graph.x, sub.nodes, sub.edge_index, sub.batch, sub.labels, sub.target_index)


def test_seal_is_a_declared_model_that_only_link_prediction_builds():
    from graphpe.nn.build import MODELS

    assert MODELS["seal"].link_only and MODELS["seal"].build is SEAL
    with pytest.raises(ValueError, match=r"^seal scores node pairs through their enclosing "
                                         r"subgraphs: train it with graphpe train --task link "
                                         r"--model seal \(graphpe.link.fit_seal\)$"):
        build_model({"model": "seal", "channels": 8})
