"""Random-walk landing probabilities of query pairs (graphpe.ops.pair_walk) against dense matrix
powers, with and without each pair's own edge, on graphs with leaves, isolated nodes and
several components; threads; bad input."""

import networkx as nx
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from graphpe.ops.link import without_pairs
from graphpe.ops.pair_walk import (
    MAX_PAIR_WALK_STEPS,
    pair_heat,
    pair_walks,
    reference_pair_walks,
)
from tests.conftest import nx_to_data


def _pairs(g: nx.Graph, n: int, seed: int) -> torch.Tensor:
    """Every edge, random pairs (some far apart or across components) and u = u."""
    gen = torch.Generator().manual_seed(seed)
    edges = torch.tensor(list(g.edges), dtype=torch.long).t().reshape(2, -1)
    return torch.cat([edges, torch.randint(0, n, (2, 40), generator=gen),
                      torch.tensor([[0], [0]])], 1)


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10_000), steps=st.integers(1, MAX_PAIR_WALK_STEPS),
       cut=st.booleans())
def test_the_walks_equal_dense_matrix_powers(seed, steps, cut):
    n = 30
    g = nx.gnp_random_graph(n, 0.12, seed=seed)  # leaves, isolated nodes, components
    data = nx_to_data(g)
    pairs = _pairs(g, n, seed)
    got = pair_walks(data.edge_index, n, pairs, steps, without_own_edge=cut)
    want = reference_pair_walks(data.edge_index, n, pairs, steps, without_own_edge=cut)
    assert got.shape == (pairs.size(1), 2 * steps) and got.dtype == torch.float64
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-15)


def test_a_pair_s_own_edge_is_never_read():
    """``without_own_edge``: a joined pair's walks equal those on the graph without its edge;
    without it the one-step probability of an edge is its 1 / d(u), and the leakage shows."""
    g = nx.karate_club_graph()
    data = nx_to_data(g)
    pairs = torch.tensor(list(g.edges)).t()[:, ::7]
    cut = pair_walks(data.edge_index, 34, pairs, 4, without_own_edge=True)
    kept = pair_walks(data.edge_index, 34, pairs, 4)
    assert (cut[:, 0] == 0).all() and (kept[:, 0] > 0).all()
    for q in range(pairs.size(1)):
        one = pairs[:, q:q + 1]
        alone = without_pairs(data.edge_index, one, 34)
        torch.testing.assert_close(pair_walks(alone, 34, one, 4), cut[q:q + 1])


def test_a_leaf_whose_only_edge_is_the_pair_s_walks_nowhere():
    """Set aside, a leaf's only edge leaves it no step: every probability from it is 0 (the
    zero row of D^-1 A), the reverse direction too."""
    data = nx_to_data(nx.path_graph(4))  # 0 - 1 - 2 - 3
    out = pair_walks(data.edge_index, 4, torch.tensor([[0], [1]]), 3, without_own_edge=True)
    assert torch.equal(out, torch.zeros(1, 6, dtype=torch.float64))
    # joined: 0 -> 1 in one step for sure; in three, 0-1-0-1 (1/2) or 0-1-2-1 (1/4)
    out = pair_walks(data.edge_index, 4, torch.tensor([[0], [1]]), 3)
    torch.testing.assert_close(out[0, :3], torch.tensor([1.0, 0.0, 0.75], dtype=torch.float64))


def test_the_result_does_not_depend_on_threads():
    g = nx.barabasi_albert_graph(400, 3, seed=1)
    data = nx_to_data(g)
    pairs = torch.randint(0, 400, (2, 5000), generator=torch.Generator().manual_seed(0))
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = pair_walks(data.edge_index, 400, pairs, 4, without_own_edge=True)
        torch.set_num_threads(2)
        two = pair_walks(data.edge_index, 400, pairs, 4, without_own_edge=True)
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(one, two)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"steps": 0}, "^steps must be a positive int, got 0$"),
    ({"steps": 9}, r"^steps must be at most 8 \(balls of half that radius around both ends of "
                   r"every pair\), got 9$"),
    ({"pairs": torch.zeros(2, 0, dtype=torch.long)},
     r"^pairs is empty: give at least one \(u, v\) column$"),
    ({"pairs": torch.tensor([[0], [5]])}, "^pairs name node 5, outside the graph's 5 nodes$"),
    ({"without_own_edge": 1}, "^without_own_edge must be True or False, got 1$"),
])
def test_bad_input_is_one_clear_error(kwargs, message):
    data = nx_to_data(nx.path_graph(5))
    call = {"pairs": torch.tensor([[0], [1]]), **kwargs}
    with pytest.raises(ValueError, match=message):
        pair_walks(data.edge_index, 5, **call)


@pytest.mark.parametrize("cut", [False, True])
def test_the_heat_kernel_at_pairs_equals_the_matrix_exponential(cut):
    """``pair_heat`` against scipy's ``expm(-t (I - D^-1 A))`` of each pair's graph (its own
    edge removed with ``cut``): within the series' truncation bound, 1.1e-6 at t = 1."""
    import numpy as np
    from scipy.linalg import expm

    n = 30
    g = nx.gnp_random_graph(n, 0.12, seed=3)
    data = nx_to_data(g)
    pairs = _pairs(g, n, 3)
    times = (0.25, 1.0)
    got = pair_heat(data.edge_index, n, pairs, times, without_own_edge=cut)
    assert got.shape == (pairs.size(1), 4) and got.dtype == torch.float64
    adjacency = nx.to_numpy_array(g, nodelist=range(n))
    for q, (u, v) in enumerate(pairs.t().tolist()):
        adj = adjacency.copy()
        if cut:
            adj[u, v] = adj[v, u] = 0.0
        degree = adj.sum(1)
        walk = np.divide(adj, degree[:, None], out=np.zeros_like(adj),
                         where=degree[:, None] > 0)
        for i, t in enumerate(times):
            heat = expm(-t * (np.eye(n) - walk))
            assert abs(got[q, i] - heat[u, v]) < 1.1e-6
            assert abs(got[q, 2 + i] - heat[v, u]) < 1.1e-6


@pytest.mark.parametrize("times", [(), (0.0,), (1.5,), (True,), ("1",)])
def test_heat_times_out_of_range_are_one_clear_error(times):
    data = nx_to_data(nx.path_graph(5))
    with pytest.raises(ValueError, match=r"^times must be numbers in \(0, 1\], got "):
        pair_heat(data.edge_index, 5, torch.tensor([[0], [1]]), times)
