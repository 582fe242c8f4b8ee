"""Features of query pairs (graphpe.ops.link) against networkx on random graphs and the
compiled kernels against the scipy reference, personalized PageRank by push against a dense
solve within the push's error bound, the removal of the target edges (a leakage check that
fails when they are left in), and bad arguments."""

import math

import networkx as nx
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from graphpe.ops.link import (
    NEIGHBOURHOOD_SCORES,
    adjacency,
    pair_distances,
    pair_neighbourhood_scores,
    pair_ppr,
    reference_neighbourhood_scores,
    reference_pair_distances,
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


def test_the_reference_in_chunks_equals_one_chunk(monkeypatch):
    import graphpe.ops.link as link

    _, data, pairs = _graph_and_pairs(3, q=500)
    whole = reference_pair_distances(data.edge_index, data.num_nodes, pairs, max_dist=5)
    monkeypatch.setattr(link, "PAIR_CHUNK", 7)
    assert torch.equal(reference_pair_distances(data.edge_index, data.num_nodes, pairs,
                                                max_dist=5), whole)


def test_threads_and_their_share_of_pairs_change_nothing(monkeypatch):
    """Pairs shared out over two threads, a few each, give the one thread's results exactly."""
    import graphpe.ops.link as link

    g, data, pairs = _graph_and_pairs(3, q=500, p=0.12)
    edges = torch.tensor(list(g.edges)).t()
    pairs = torch.cat([pairs, edges], 1)
    calls = (lambda: pair_distances(data.edge_index, data.num_nodes, pairs, 4, True),
             lambda: pair_neighbourhood_scores(data.edge_index, data.num_nodes, pairs),
             lambda: pair_ppr(data.edge_index, data.num_nodes, pairs, without_own_edge=True))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        alone = [call() for call in calls]
        monkeypatch.setattr(link, "PAIRS_PER_THREAD", 7)
        torch.set_num_threads(2)
        for call, want in zip(calls, alone, strict=True):
            assert torch.equal(call(), want)
    finally:
        torch.set_num_threads(threads)


def _hub_graphs(seed: int) -> list[nx.Graph]:
    """A sparse random graph and a preferential-attachment one, whose hubs' rows are many
    times longer than the leaves' (the common neighbours' binary-search path)."""
    return [nx.gnp_random_graph(40, 0.12, seed=seed), nx.barabasi_albert_graph(150, 2, seed=seed)]


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), max_dist=st.integers(1, 6), cut=st.booleans())
def test_compiled_kernels_equal_the_scipy_reference_exactly(seed, max_dist, cut):
    for g in _hub_graphs(seed):
        data, n = nx_to_data(g), g.number_of_nodes()
        gen = torch.Generator().manual_seed(seed)
        edges = torch.tensor(list(g.edges)).t()[:, :80]
        pairs = torch.cat([torch.randint(0, n, (2, 200), generator=gen), edges, edges.flip(0),
                           torch.arange(5).repeat(2, 1)], 1)  # with u = v
        assert torch.equal(
            pair_distances(data.edge_index, n, pairs, max_dist, without_own_edge=cut),
            reference_pair_distances(data.edge_index, n, pairs, max_dist, without_own_edge=cut))
        assert torch.equal(pair_neighbourhood_scores(data.edge_index, n, pairs),
                           reference_neighbourhood_scores(data.edge_index, n, pairs))


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
    clean = torch.tensor([[0, 1, 1, 2, 2, 3, 3, 1], [1, 0, 2, 1, 3, 2, 1, 3]])
    assert torch.equal(pair_ppr(ei, 4, pairs), pair_ppr(clean, 4, pairs))


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


def _exact_ppr(edge_index: torch.Tensor, n: int, alpha: float) -> np.ndarray:
    """``Pi[:, s] = alpha (I - (1 - alpha) P^T)^-1 e_s``, ``P = D^-1 A`` (a zero row at an
    isolated node), by a dense solve."""
    a = adjacency(edge_index, n).toarray()
    degree = a.sum(1)
    walk = np.divide(a, degree[:, None], out=np.zeros_like(a), where=degree[:, None] > 0)
    return alpha * np.linalg.solve(np.eye(n) - (1 - alpha) * walk.T, np.eye(n))


def _assert_within_push_bound(got, exact, pairs, degree, eps):
    """``0 <= pi_u(v) - p <= eps d(v)`` (column 0) and ``0 <= pi_v(u) - p <= eps d(u)``."""
    u, v = pairs.numpy()
    for column, (s, t) in enumerate(((u, v), (v, u))):
        error = exact[t, s] - got[:, column].numpy()
        assert (error >= -1e-12).all()
        assert (error <= eps * degree[t] + 1e-12).all()


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), alpha=st.sampled_from([0.1, 0.15, 0.5, 0.9]),
       eps=st.sampled_from([1e-2, 1e-3, 1e-5]))
def test_ppr_is_within_the_push_bound_of_the_dense_solve(seed, alpha, eps):
    """Random graphs with isolated nodes and leaves, pairs with u = v among them."""
    g, data, pairs = _graph_and_pairs(seed, n=30, p=0.1, q=150)
    got = pair_ppr(data.edge_index, 30, pairs, alpha=alpha, eps=eps)
    assert got.shape == (150, 2) and got.dtype == torch.float64
    degree = adjacency(data.edge_index, 30).sum(1).A1
    _assert_within_push_bound(got, _exact_ppr(data.edge_index, 30, alpha), pairs, degree, eps)


def test_ppr_of_isolated_nodes_and_of_a_pair_alone_or_reversed():
    ei = torch.tensor([[0, 1, 1, 2], [1, 2, 3, 3]])  # node 4 isolated
    pairs = torch.tensor([[4, 4, 0, 0, 3, 1], [4, 0, 4, 3, 0, 1]])
    got = pair_ppr(ei, 5, pairs, alpha=0.2, eps=1e-6)
    assert got[0].tolist() == [0.2, 0.2]  # an isolated node keeps alpha of its own walk
    assert got[1].tolist() == [0.0, 0.0] and got[2].tolist() == [0.0, 0.0]
    assert torch.equal(got[3], got[4].flip(0))  # (v, u): the columns swapped
    alone = torch.cat([pair_ppr(ei, 5, pairs[:, i:i + 1], 0.2, 1e-6) for i in range(6)])
    assert torch.equal(alone, got)  # each pair's value does not depend on the others


def test_ppr_renumbering_for_locality_changes_nothing(monkeypatch):
    """The pushes run in the graph's reverse Cuthill-McKee numbering, reading each node's
    neighbours in their given order: the same numbers, bit for bit, as in the given one."""
    import graphpe.ops.link as link

    g, data, pairs = _graph_and_pairs(5, n=60, p=0.08, q=300)
    edges = torch.tensor(list(g.edges)).t()
    pairs = torch.cat([pairs, edges], 1)
    renumbered = pair_ppr(data.edge_index, 60, pairs, without_own_edge=True)
    monkeypatch.setattr(link, "_local_graph",
                        lambda csr: (csr.indptr, csr.indices, np.arange(60)))
    assert torch.equal(pair_ppr(data.edge_index, 60, pairs, without_own_edge=True), renumbered)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_ppr_without_own_edge_never_reads_the_pairs_edge(seed):
    """With ``without_own_edge`` a pair that is an edge gets the PageRank of the graph without
    that edge: the same numbers as on that graph, within the push's bound of its dense solve,
    and not those of the graph with it (which reads the edge); other pairs are unchanged."""
    g, data, others = _graph_and_pairs(seed, n=25, p=0.15, q=30)
    edges = torch.tensor(list(g.edges)).t()[:, :20]
    pairs = torch.cat([edges, edges.flip(0), others], 1)
    eps = 1e-4
    cut = pair_ppr(data.edge_index, 25, pairs, eps=eps, without_own_edge=True)
    leaky = pair_ppr(data.edge_index, 25, pairs, eps=eps)
    joined = adjacency(data.edge_index, 25).toarray()[pairs[0].numpy(), pairs[1].numpy()] > 0
    assert torch.equal(cut[~joined], leaky[~joined])
    assert (cut[joined] < leaky[joined]).all()  # the edge's own walk step is gone
    for column in np.flatnonzero(joined):
        pair = pairs[:, column:column + 1]
        alone = without_pairs(data.edge_index, pair, 25)
        assert torch.equal(pair_ppr(alone, 25, pair, eps=eps), cut[column:column + 1])
        degree = adjacency(alone, 25).sum(1).A1
        _assert_within_push_bound(cut[column:column + 1], _exact_ppr(alone, 25, 0.15), pair,
                                  degree, eps)


@pytest.mark.parametrize(("options", "message"), [
    ({"alpha": 0.0}, r"^alpha must be a number in \(0, 1\), got 0.0$"),
    ({"alpha": 1}, r"^alpha must be a number in \(0, 1\), got 1$"),
    ({"alpha": True}, r"^alpha must be a number in \(0, 1\), got True$"),
    ({"alpha": "0.1"}, r"^alpha must be a number in \(0, 1\), got '0.1'$"),
    ({"eps": 0.0}, r"^eps must be a positive finite number, got 0.0$"),
    ({"eps": float("nan")}, r"^eps must be a positive finite number, got nan$"),
    ({"eps": float("inf")}, r"^eps must be a positive finite number, got inf$"),
    ({"without_own_edge": "yes"}, r"^without_own_edge must be True or False, got 'yes'$"),
])
def test_bad_ppr_settings_are_one_clear_error(options, message):
    with pytest.raises(ValueError, match=message):
        pair_ppr(torch.tensor([[0], [1]]), 2, torch.tensor([[0], [1]]), **options)


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
                 lambda: pair_ppr(ei, 4, pairs),
                 lambda: reference_pair_distances(ei, 4, pairs),
                 lambda: reference_neighbourhood_scores(ei, 4, pairs),
                 lambda: without_pairs(ei, pairs, 4)):
        with pytest.raises(ValueError, match=message):
            call()


def test_a_hop_cap_of_zero_is_refused():
    with pytest.raises(ValueError, match=r"^max_dist must be a positive int, got 0$"):
        pair_distances(torch.tensor([[0], [1]]), 2, torch.tensor([[0], [1]]), max_dist=0)
