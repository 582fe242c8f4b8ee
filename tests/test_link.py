"""Training a link predictor (graphpe.link.fit_link) on a graph with communities: it learns,
its record says what ran, the decoder reads as many pair features as the set has."""

import networkx as nx
import pytest
import torch
from torch_geometric.data import Data

from graphpe.datasets.link import random_link_split
from graphpe.link import fit_link
from graphpe.ops.link_features import PairFeatureSet
from graphpe.train_config import TrainConfig


def _communities() -> Data:
    g = nx.stochastic_block_model([40, 40, 40], [[0.25, 0.01, 0.01], [0.01, 0.25, 0.01],
                                                 [0.01, 0.01, 0.25]], seed=1)
    edges = torch.tensor(list(g.edges)).t()
    return Data(x=torch.randn(120, 6, generator=torch.Generator().manual_seed(0)),
                edge_index=torch.cat([edges, edges.flip(0)], 1), num_nodes=120)


@pytest.mark.parametrize("pair_features", [PairFeatureSet(()), PairFeatureSet(max_dist=2)])
def test_a_link_predictor_learns_the_communities(pair_features):
    split = random_link_split("sbm", _communities(), seed=0)
    record = fit_link(split, ("rwse",), "gcn", channels=16, layers=2,
                      pair_features=pair_features,
                      config=TrainConfig(epochs=150, lr=0.01, weight_decay=0.0, patience=150,
                                         progress=False, optimizer="adam"))
    # a held-out edge mostly joins two nodes of one community, a random pair mostly not
    assert record["test"]["rocauc"] > 0.78
    assert set(record["test"]) == {"rocauc", "ap", "hits@20", "hits@50", "hits@100"}
    assert record["model_config"]["pair_dim"] == pair_features.width
    assert record["pe"][0]["name"] == "rwse" and 1 <= record["best_epoch"] <= 150
    assert record["pair_features"] == list(pair_features.names)


def test_seal_learns_the_communities_from_labeled_subgraphs():
    from graphpe.link import fit_seal

    split = random_link_split("sbm", _communities(), seed=0)
    record = fit_seal(split, hops=1, channels=16, layers=2, batch_pairs=64,
                      config=TrainConfig(epochs=15, lr=0.01, weight_decay=0.0, patience=15,
                                         progress=False, optimizer="adam"))
    assert record["test"]["rocauc"] > 0.75
    assert record["model"] == "seal" and record["labels"] == "drnl" and record["hops"] == 1
