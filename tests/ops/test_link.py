"""Features of query pairs (graphpe.ops.link) against networkx on random graphs, the removal
of the target edges (a leakage check that fails when they are left in), and bad pairs."""

import math

import networkx as nx
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from graphpe.ops.link import (
    NEIGHBOURHOOD_SCORES,
    link_pair_features,
    pair_distances,
    pair_neighbourhood_scores,
    without_pairs,
)
from tests.conftest import nx_to_data


def _graph_and_pairs(seed: int, n: int = 40, p: float = 0.08, q: int = 200):
    g = nx.gnp_random_graph(n, p, seed=seed)  # (may be disconnected: unreachable pairs)
    gen = torch.Generator().manual_seed(seed)
    pairs = torch.randint(0, n, (2, q), generator=gen)
    return g, nx_to_data(g), pairs


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), max_dist=st.integers(1, 6))
def test_distances_equal_networkx_capped(seed, max_dist):
    g, data, pairs = _graph_and_pairs(seed)
    got = pair_distances(data.edge_index, data.num_nodes, pairs, max_dist=max_dist)
    lengths = dict(nx.all_pairs_shortest_path_length(g))
    want = [min(lengths[u].get(v, max_dist + 1), max_dist + 1) for u, v in pairs.t().tolist()]
    assert got.tolist() == want


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), max_dist=st.integers(1, 5))
def test_distances_without_the_own_edge_equal_networkx_on_the_cut_graph(seed, max_dist):
    g, data, pairs = _graph_and_pairs(seed, p=0.12)
    edges = torch.tensor(list(g.edges)).t()[:, :60]  # pairs that are edges, and others
    pairs = torch.cat([edges, edges.flip(0), pairs], dim=1)
    got = pair_distances(data.edge_index, data.num_nodes, pairs, max_dist=max_dist,
                         without_own_edge=True)
    want = []
    for u, v in pairs.t().tolist():
        cut = g.copy()
        if cut.has_edge(u, v):
            cut.remove_edge(u, v)
        try:
            want.append(min(nx.shortest_path_length(cut, u, v), max_dist + 1))
        except nx.NetworkXNoPath:
            want.append(max_dist + 1)
    assert got.tolist() == want


def test_link_pair_features_do_not_tell_a_joined_pair_from_the_same_pair_unjoined():
    """The pair features of a target read neither its own edge nor its presence: on the graph
    with the edge u - v and on the graph without it, (u, v) gets the same features."""
    g, data, _ = _graph_and_pairs(11, p=0.15)
    pairs = torch.tensor(list(g.edges)).t()
    with_edges = link_pair_features(data.edge_index, data.num_nodes, pairs)
    for column in range(0, pairs.size(1), 7):
        alone = without_pairs(data.edge_index, pairs[:, column:column + 1], data.num_nodes)
        torch.testing.assert_close(
            link_pair_features(alone, data.num_nodes, pairs[:, column:column + 1]),
            with_edges[column:column + 1])
    assert with_edges.shape == (pairs.size(1), 3 + 2 + 3)
    assert with_edges[:, 1].sum() == 0  # no pair is at distance 1 once its edge is set aside
    torch.testing.assert_close(with_edges[:, :5].sum(1), torch.ones(pairs.size(1)))


def test_distances_in_chunks_equal_one_chunk(monkeypatch):
    import graphpe.ops.link as link

    _, data, pairs = _graph_and_pairs(3, q=500)
    whole = pair_distances(data.edge_index, data.num_nodes, pairs, max_dist=5)
    monkeypatch.setattr(link, "PAIR_CHUNK", 7)
    assert torch.equal(pair_distances(data.edge_index, data.num_nodes, pairs, max_dist=5), whole)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_neighbourhood_scores_equal_networkx(seed):
    g, data, pairs = _graph_and_pairs(seed, p=0.15)
    pairs = pairs[:, pairs[0] != pairs[1]]  # networkx's indices take distinct nodes
    got = pair_neighbourhood_scores(data.edge_index, data.num_nodes, pairs)
    ebunch = [tuple(p) for p in pairs.t().tolist()]
    common = [len(list(nx.common_neighbors(g, u, v))) for u, v in ebunch]
    adamic = [s for _, _, s in nx.adamic_adar_index(g, ebunch)]
    resource = [s for _, _, s in nx.resource_allocation_index(g, ebunch)]
    assert NEIGHBOURHOOD_SCORES == ("common_neighbours", "adamic_adar", "resource_allocation")
    assert got[:, 0].tolist() == common
    torch.testing.assert_close(got[:, 1], torch.tensor(adamic, dtype=torch.float64))
    torch.testing.assert_close(got[:, 2], torch.tensor(resource, dtype=torch.float64))


def test_direction_duplicates_loops_and_weights_are_ignored():
    ei = torch.tensor([[0, 1, 1, 2, 2, 3], [1, 2, 2, 3, 2, 1]])  # one direction, a duplicate,
    pairs = torch.tensor([[0, 0, 3], [2, 3, 0]])  # a self loop at 2
    assert pair_distances(ei, 4, pairs).tolist() == [2, 2, 2]
    scores = pair_neighbourhood_scores(ei, 4, pairs)
    assert scores[:, 0].tolist() == [1.0, 1.0, 1.0]  # 0-2 and 0-3 share node 1
    assert scores[0, 1].item() == pytest.approx(1 / math.log(3))  # d(1) = 3: 0, 2, 3


def test_target_edges_are_removed_and_leave_nothing_to_read():
    g, data, _ = _graph_and_pairs(11, p=0.12)
    positives = data.edge_index[:, data.edge_index[0] < data.edge_index[1]][:, :15]
    negatives = torch.tensor([[u, v] for u, v in nx.non_edges(g)][:15]).t()
    targets = torch.cat([positives, negatives], 1)
    leaky = pair_distances(data.edge_index, data.num_nodes, positives)
    assert (leaky == 1).all()  # left in, a positive target reads its own edge
    kept = without_pairs(data.edge_index, targets, data.num_nodes)
    assert kept.size(1) == data.edge_index.size(1) - 2 * positives.size(1)
    safe = pair_distances(kept, data.num_nodes, positives)
    assert (safe >= 2).all()  # removed: as a held-out pair, at least two hops
    # every other edge stays, in its order; the negatives took nothing
    rest = set(map(tuple, kept.t().tolist()))
    assert not rest & {(u, v) for u, v in positives.t().tolist()}
    assert not rest & {(v, u) for u, v in positives.t().tolist()}


@pytest.mark.parametrize(("pairs", "message"), [
    (torch.tensor([[0, 1], [1, 9]]), r"^pairs name node 9, outside the graph's 4 nodes$"),
    (torch.tensor([[0, -1], [1, 2]]), r"^pairs name node -1, outside the graph's 4 nodes$"),
    (torch.zeros(2, 0, dtype=torch.long), r"^pairs is empty: give at least one \(u, v\) column$"),
    (torch.tensor([0, 1]), r"^pairs must be a \[2, Q\] tensor of node ids, got \[2\]$"),
    (torch.tensor([[0.0], [1.0]]), r"^pairs must hold integer node ids, got torch.float32$"),
])
def test_bad_pairs_are_one_clear_error(pairs, message):
    ei = torch.tensor([[0, 1, 2], [1, 2, 3]])
    for call in (lambda: pair_distances(ei, 4, pairs),
                 lambda: pair_neighbourhood_scores(ei, 4, pairs),
                 lambda: without_pairs(ei, pairs, 4)):
        with pytest.raises(ValueError, match=message):
            call()


def test_a_hop_cap_of_zero_is_refused():
    with pytest.raises(ValueError, match=r"^max_dist must be a positive int, got 0$"):
        pair_distances(torch.tensor([[0], [1]]), 2, torch.tensor([[0], [1]]), max_dist=0)
