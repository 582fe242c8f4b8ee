"""Link splits (graphpe.datasets.link): shares, disjoint parts, held-out edges absent from the
graphs a model reads, non-edges that are non-edges, seeds; the link metrics against
scikit-learn and a hand count of Hits@K; bad input."""

import warnings

import networkx as nx
import numpy as np
import pytest
import torch
from torch_geometric.data import Data

from graphpe.datasets.link import random_link_split
from graphpe.datasets.metrics import link_metrics


def _graph(n: int = 120, seed: int = 0) -> Data:
    g = nx.gnp_random_graph(n, 0.08, seed=seed)
    edges = torch.tensor(list(g.edges)).t()
    return Data(x=torch.randn(n, 4), edge_index=torch.cat([edges, edges.flip(0)], 1),
                num_nodes=n)


def _keys(pairs: torch.Tensor, n: int) -> set[int]:
    low, high = pairs.min(0).values, pairs.max(0).values
    return set((low * n + high).tolist())


def test_the_split_holds_out_edges_the_model_never_reads():
    graph = _graph()
    n, total = graph.num_nodes, graph.edge_index.size(1) // 2
    split = random_link_split("g", graph, seed=3)
    train, val, test = (_keys(p, n) for p in (split.train_pos, split.val_pos, split.test_pos))
    assert len(train) + len(val) + len(test) == total
    assert not (train & val or train & test or val & test)
    assert len(val) == int(0.05 * total) and len(test) == int(0.10 * total)
    edges = _keys(graph.edge_index, n)
    for part in ("val", "test"):
        negatives = _keys(getattr(split, f"{part}_neg"), n)
        assert len(negatives) == len(getattr(split, f"{part}_pos").t()) and not negatives & edges
    assert _keys(split.message_edges("train"), n) == train
    assert _keys(split.message_edges("val"), n) == train
    assert _keys(split.message_edges("test"), n) == train | val
    pairs, labels = split.targets("test")
    assert labels.tolist() == [1.0] * len(test) + [0.0] * len(test)
    assert _keys(pairs[:, labels == 1], n) == test


def test_a_seed_draws_the_same_split_and_another_seed_another():
    graph = _graph()
    a, b, c = (random_link_split("g", graph, seed=s) for s in (1, 1, 2))
    assert torch.equal(a.test_pos, b.test_pos) and torch.equal(a.val_neg, b.val_neg)
    assert not torch.equal(a.test_pos, c.test_pos)


def test_a_directed_graph_is_read_as_undirected_and_says_so():
    """One direction of each edge: the warning names the graph, and the split is the one of
    the same graph with both directions."""
    graph = _graph()
    one_way = Data(x=graph.x, edge_index=graph.edge_index[:, graph.edge_index[0] <
                                                           graph.edge_index[1]],
                   num_nodes=graph.num_nodes)
    with pytest.warns(UserWarning, match=r"^d is a directed graph: link prediction here reads "
                                         r"it as undirected \(each edge in both directions"):
        directed = random_link_split("d", one_way, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an undirected graph: no warning
        both = random_link_split("d", graph, seed=1)
    assert torch.equal(directed.test_pos, both.test_pos)
    assert torch.equal(directed.train_pos, both.train_pos)


@pytest.mark.parametrize("held_out", [(0.0, 0.1), (0.5, 0.5), (0.1, 1.2)])
def test_held_out_shares_outside_the_unit_interval_are_refused(held_out):
    with pytest.raises(ValueError, match=r"^held_out must be two shares in \(0, 1\) that sum "
                                         r"below 1, got"):
        random_link_split("g", _graph(), held_out=held_out)


def test_parts_are_named():
    split = random_link_split("g", _graph())
    with pytest.raises(ValueError, match="part must be one of"):
        split.message_edges("training")
    with pytest.raises(ValueError, match="held-out targets are 'val' or 'test'"):
        split.targets("train")


def test_link_metrics_equal_scikit_learn_and_count_hits_as_ogb():
    from sklearn.metrics import average_precision_score, roc_auc_score

    rng = np.random.default_rng(0)
    pos, neg = rng.normal(1.0, 1.0, 300), rng.normal(0.0, 1.0, 500)
    got = link_metrics(pos, neg)
    labels = np.r_[np.ones(300), np.zeros(500)]
    assert got["rocauc"] == pytest.approx(roc_auc_score(labels, np.r_[pos, neg]))
    assert got["ap"] == pytest.approx(average_precision_score(labels, np.r_[pos, neg]))
    for k in (20, 50, 100):
        threshold = sorted(neg, reverse=True)[k - 1]
        assert got[f"hits@{k}"] == pytest.approx(np.mean(pos > threshold))
    assert link_metrics(pos, neg[:10])["hits@20"] == 1.0  # fewer non-edges than K
    with pytest.raises(ValueError, match="link metrics need edges and non-edges, got 3 and 0"):
        link_metrics(pos[:3], neg[:0])
