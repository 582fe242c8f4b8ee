"""The pair features of a link decoder (graphpe.ops.link_features): none reads the pair's own
edge (a pair gets the same features on the graph with its edge and without it), each column
against its kernel and networkx, the set's width and order, and bad settings."""

import networkx as nx
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from graphpe.ops.link import pair_neighbourhood_scores, pair_ppr, without_pairs
from graphpe.ops.link_features import (
    DEFAULT_PAIR_FEATURES,
    PAIR_FEATURES,
    PAIR_HEAT_TIMES,
    PairFeatureSet,
    link_pair_features,
)
from graphpe.ops.pair_walk import pair_heat, reference_pair_walks
from tests.conftest import nx_to_data

ALL = tuple(PAIR_FEATURES)


def _graph(seed: int, n: int = 30, p: float = 0.15):
    g = nx.gnp_random_graph(n, p, seed=seed)  # (may be disconnected, may have bridges)
    return g, nx_to_data(g)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_a_joined_pair_is_described_as_the_same_pair_unjoined(seed):
    """Every feature of a target edge equals its value on the graph without that edge: the
    leakage test. With the edge read (``without_own_edge`` off in the kernels), the distance
    column would say 1 and the test fails."""
    g, data = _graph(seed)
    if g.number_of_edges() == 0:
        return
    pairs = torch.tensor(list(g.edges)).t()
    with_edges = link_pair_features(data.edge_index, data.num_nodes, pairs, features=ALL)
    spd_width = PAIR_FEATURES["spd"].width(3)
    ppr = slice(spd_width + 3, spd_width + 5)
    exact = [i for i in range(with_edges.size(1)) if not ppr.start <= i < ppr.stop]
    for column in range(0, pairs.size(1), 5):
        one = pairs[:, column:column + 1]
        alone = without_pairs(data.edge_index, one, data.num_nodes)
        got = link_pair_features(alone, data.num_nodes, one, features=ALL)
        torch.testing.assert_close(got[:, exact], with_edges[column:column + 1, exact],
                                   rtol=1e-6, atol=1e-6)
        # PageRank by push: within the push's bound (eps d(t) <= 1e-4 n), through log(1 + n x)
        torch.testing.assert_close(got[:, ppr], with_edges[column:column + 1, ppr], rtol=0,
                                   atol=data.num_nodes ** 2 * 1e-4)
    assert with_edges[:, 1].sum() == 0  # no pair is at distance 1 once its edge is set aside


def test_each_column_is_its_kernel_or_its_definition():
    g, data = _graph(3, n=40, p=0.1)
    gen = torch.Generator().manual_seed(0)
    pairs = torch.cat([torch.randint(0, 40, (2, 50), generator=gen),
                       torch.tensor(list(g.edges)).t()[:, :10], torch.tensor([[4], [4]])], 1)
    features = PairFeatureSet(ALL, max_dist=2)
    out = features.compute(data.edge_index, 40, pairs)
    assert out.dtype == torch.float32 and out.shape == (pairs.size(1), 4 + 3 + 2 + 1 + 8 + 4)
    assert features.width == 22
    torch.testing.assert_close(out[:, :4].sum(1), torch.ones(pairs.size(1)))
    scores = pair_neighbourhood_scores(data.edge_index, 40, pairs)
    torch.testing.assert_close(out[:, 4], torch.log1p(scores[:, 0]).float())
    torch.testing.assert_close(out[:, 5:7], scores[:, 1:].float())
    ppr = pair_ppr(data.edge_index, 40, pairs, without_own_edge=True)
    torch.testing.assert_close(out[:, 7:9], torch.log1p(40 * ppr).float())
    # resistance: 1 / (1 + R) against the pseudo-inverse of the graph without the pair's edge
    for q in range(pairs.size(1)):
        u, v = pairs[:, q].tolist()
        cut = g.copy()
        if cut.has_edge(u, v):
            cut.remove_edge(u, v)
        if u == v:
            want = 1.0
        elif not nx.has_path(cut, u, v):
            want = 0.0
        else:
            lap = nx.laplacian_matrix(cut, nodelist=range(40)).toarray().astype(float)
            e = np.zeros(40)
            e[u], e[v] = 1.0, -1.0
            want = 1.0 / (1.0 + e @ np.linalg.pinv(lap) @ e)
        assert out[q, 9].item() == pytest.approx(want, rel=1e-5, abs=1e-6), (u, v)
    walks = reference_pair_walks(data.edge_index, 40, pairs, 4, without_own_edge=True)
    torch.testing.assert_close(out[:, 10:18], torch.log1p(40 * walks).float())
    heat = pair_heat(data.edge_index, 40, pairs, PAIR_HEAT_TIMES, without_own_edge=True)
    torch.testing.assert_close(out[:, 18:22], torch.log1p(40 * heat).float())


def test_the_set_keeps_its_order_and_the_default_is_distance_and_neighbourhood():
    g, data = _graph(1)
    pairs = torch.tensor([[0, 1, 2], [5, 6, 7]])
    both = PairFeatureSet(("cn", "spd"), 3).compute(data.edge_index, 30, pairs)
    assert torch.equal(both, torch.cat([
        PairFeatureSet(("cn",)).compute(data.edge_index, 30, pairs),
        PairFeatureSet(("spd",)).compute(data.edge_index, 30, pairs)], 1))
    assert PairFeatureSet().names == DEFAULT_PAIR_FEATURES == ("spd", "cn")
    assert PairFeatureSet().width == 3 + 2 + 3
    assert PairFeatureSet(()).compute(data.edge_index, 30, pairs).shape == (3, 0)
    assert PairFeatureSet.parse("none").names == () and PairFeatureSet.parse("").width == 0
    assert PairFeatureSet.parse("spd, ppr", 5).names == ("spd", "ppr")


@pytest.mark.parametrize("make, message", [
    (lambda: PairFeatureSet(("spd", "cnn")),
     r"^unknown pair feature 'cnn'; known: spd, cn, ppr, resistance, rrwp, heat \(or none\)$"),
    (lambda: PairFeatureSet(("cn", "cn")), r"^pair features named twice: cn,cn$"),
    (lambda: PairFeatureSet(max_dist=0), r"^max_dist must be a positive int, got 0$"),
    (lambda: PairFeatureSet.parse("spd,,cn"), r"^unknown pair feature ''"),
])
def test_bad_settings_are_one_clear_error(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_bad_pairs_are_refused_before_any_feature():
    with pytest.raises(ValueError, match=r"^pairs name node 9, outside the graph's 4 nodes$"):
        link_pair_features(torch.tensor([[0, 1, 2], [1, 2, 3]]), 4, torch.tensor([[0], [9]]),
                           features=ALL)
