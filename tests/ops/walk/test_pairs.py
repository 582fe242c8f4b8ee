"""Pairwise encodings against networkx and numpy references."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch_geometric.data import Batch, Data

from graphpe.ops import random_walk_landing_probs
from graphpe.ops.plan import ExecPlan
from graphpe.ops.walk import (
    all_pairs,
    pair_row_edges,
    relative_random_walk_probs,
    resistance_distances,
    shortest_path_distances,
    shortest_path_edges,
    shortest_paths,
)
from tests.conftest import graph_families, nx_to_data


@st.composite
def raw_graph(draw, max_nodes: int = 12) -> Data:
    n = draw(st.integers(1, max_nodes))
    edges = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)),
                          max_size=3 * n))
    ei = torch.tensor(edges, dtype=torch.long).reshape(-1, 2).t().contiguous()
    return Data(edge_index=ei, num_nodes=n)


def simple_nx(data: Data, loops: bool = False) -> nx.Graph:
    g = nx.Graph()
    g.add_nodes_from(range(data.num_nodes))
    g.add_edges_from((int(u), int(v)) for u, v in data.edge_index.t() if loops or u != v)
    return g


@settings(max_examples=60, deadline=None)
@given(graphs=st.lists(raw_graph(), min_size=1, max_size=4), max_dist=st.integers(1, 5),
       kernel=st.sampled_from(["compiled", "tensor"]))
def test_shortest_paths_equal_networkx_and_batch_equals_per_graph(graphs, max_dist, kernel):
    batch = Batch.from_data_list(graphs)
    got = shortest_path_distances(batch.edge_index, batch.num_nodes, max_dist, ptr=batch.ptr,
        plan=ExecPlan(kernel=kernel))
    assert torch.equal(got.pair_ptr, all_pairs(batch.ptr)[1])
    assert got.pair_index.shape == (2, sum(g.num_nodes ** 2 for g in graphs))
    for k, data in enumerate(graphs):
        lo, hi = int(got.pair_ptr[k]), int(got.pair_ptr[k + 1])
        n = data.num_nodes
        want = np.full((n, n), max_dist + 1)
        for i, lengths in nx.all_pairs_shortest_path_length(simple_nx(data), cutoff=max_dist):
            for j, d in lengths.items():
                want[i, j] = d
        assert got.values[lo:hi].view(n, n).tolist() == want.tolist()
        alone = shortest_path_distances(data.edge_index, n, max_dist, plan=ExecPlan(kernel=kernel))
        assert torch.equal(alone.values, got.values[lo:hi])
        assert torch.equal(alone.pair_index + int(batch.ptr[k]), got.pair_index[:, lo:hi])


@pytest.mark.parametrize("name", ["path7", "cycle9", "petersen", "grid3x4", "tree", "er23",
                                  "two_triangles", "with_isolated"])
def test_resistance_equals_networkx(name):
    g = nx.convert_node_labels_to_integers(graph_families()[name])  # as nx_to_data numbers them
    data = nx_to_data(g)
    n = data.num_nodes
    got = resistance_distances(data.edge_index, n, dtype=torch.float64).values.view(n, n)
    comp = {v: c for c, nodes in enumerate(nx.connected_components(g)) for v in nodes}
    for i in range(n):
        for j in range(n):
            if i == j:
                assert got[i, j] == 0
            elif comp[i] != comp[j]:
                assert got[i, j] == float("inf")
            else:
                sub = g.subgraph([v for v in g if comp[v] == comp[i]])
                want = nx.resistance_distance(sub, i, j)
                assert abs(float(got[i, j]) - want) < 1e-6, (i, j)


@settings(max_examples=60, deadline=None)
@given(data=raw_graph(), steps=st.integers(1, 6))
def test_rrwp_equals_numpy_powers_and_its_diagonal_is_rwse(data, steps):
    n = data.num_nodes
    got = relative_random_walk_probs(data.edge_index, n, steps, dtype=torch.float64)
    a = np.zeros((n, n))
    for u, v in data.edge_index.t().tolist():
        a[u, v] = a[v, u] = 1.0  # self loops kept, as RWSE keeps them
    deg = a.sum(1, keepdims=True)
    m = np.divide(a, deg, out=np.zeros_like(a), where=deg > 0)
    power = np.eye(n)
    for k in range(steps):
        np.testing.assert_allclose(got.values[:, k].view(n, n).numpy(), power, atol=1e-12)
        power = power @ m
    if steps > 1:
        rwse = random_walk_landing_probs(data.edge_index, n, steps - 1, dtype=torch.float64)
        diag = got.values.view(n, n, steps).diagonal(dim1=0, dim2=1)[1:].t()
        torch.testing.assert_close(diag, rwse, atol=1e-12, rtol=0)


def test_pair_layout_and_bad_inputs():
    ptr = torch.tensor([0, 2, 2, 5])
    index, pair_ptr = all_pairs(ptr)
    assert pair_ptr.tolist() == [0, 4, 4, 13]
    assert index[:, :4].tolist() == [[0, 0, 1, 1], [0, 1, 0, 1]]
    assert index[:, 4:7].tolist() == [[2, 2, 2], [2, 3, 4]]
    ei = torch.tensor([[0, 1], [1, 0]])
    with pytest.raises(ValueError, match="num_steps must be a positive int, got 0"):
        relative_random_walk_probs(ei, 2, 0)
    with pytest.raises(ValueError, match="max_dist must be a positive int, got 0"):
        shortest_path_distances(ei, 2, 0)
    with pytest.raises(ValueError, match=r"a graph has 2000 nodes: all-pairs encodings "
                                         r"allocate n\^2 values per graph, and max_nodes=1024"):
        shortest_path_distances(ei, 2000, 3)


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_rrwp_compiled_kernel_equals_tensor_kernel(data):
    """The compiled CPU loop (sparse products per graph) and the batched dense products give
    the same pairs and values, with duplicates, self loops, weights and empty graphs."""
    graphs = data.draw(st.lists(raw_graph(max_nodes=9), min_size=1, max_size=4))
    if data.draw(st.booleans()):
        graphs.insert(1, Data(edge_index=torch.zeros(2, 0, dtype=torch.long), num_nodes=0))
    batch = Batch.from_data_list(graphs)
    weight = None
    if data.draw(st.booleans()):  # weights with zeros (no edge) and a huge scale
        weight = torch.tensor(data.draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 3.0]),
                                                 min_size=batch.num_edges,
                                                 max_size=batch.num_edges)),
                              dtype=torch.float64) * data.draw(st.sampled_from([1.0, 1e300]))
    args = (batch.edge_index, batch.num_nodes, 5)
    fast = relative_random_walk_probs(*args, ptr=batch.ptr, edge_weight=weight,
        plan=ExecPlan(kernel="compiled"))
    slow = relative_random_walk_probs(*args, ptr=batch.ptr, edge_weight=weight,
        plan=ExecPlan(kernel="tensor"))
    assert torch.equal(fast.pair_index, slow.pair_index)
    assert torch.equal(fast.pair_ptr, slow.pair_ptr)
    assert torch.allclose(fast.values, slow.values, atol=1e-6)
    with pytest.raises(ValueError, match="kernel must be one of"):
        relative_random_walk_probs(*args, ptr=batch.ptr, plan=ExecPlan(kernel="numba"))


@settings(max_examples=60, deadline=None)
@given(graphs=st.lists(raw_graph(), min_size=1, max_size=4), hops=st.integers(0, 4),
       steps=st.integers(1, 6))
def test_local_pairs_are_the_all_pairs_within_hops_with_the_same_values(graphs, hops, steps):
    """hops=r lists exactly the pairs within r hops (as all-pairs SPD, in the same order) with
    all-pairs RRWP's values; with r >= K - 1 the pairs left out are exactly the all-zero ones."""
    from graphpe.ops.walk import local_pairs

    batch = Batch.from_data_list(graphs)
    args = (batch.edge_index, batch.num_nodes)
    full_spd = shortest_path_distances(*args, 5, ptr=batch.ptr)
    near = full_spd.values <= hops
    local = local_pairs(*args, hops, ptr=batch.ptr)
    assert torch.equal(local.pair_index, full_spd.pair_index[:, near])
    assert torch.equal(local.values, full_spd.values[near])
    graph_of_pair = batch.batch[local.pair_index[0]]
    assert torch.equal(local.pair_ptr, torch.searchsorted(graph_of_pair, torch.arange(
        batch.num_graphs + 1)))
    full = relative_random_walk_probs(*args, steps, ptr=batch.ptr, dtype=torch.float64)
    mine = relative_random_walk_probs(*args, steps, ptr=batch.ptr, dtype=torch.float64,
                                      hops=hops)
    assert torch.equal(mine.pair_index, local.pair_index)
    torch.testing.assert_close(mine.values, full.values[near], atol=1e-12, rtol=0)
    if hops >= steps - 1:
        assert not full.values[~near].any()
    if 1 <= hops <= 5:
        spd = shortest_path_distances(*args, hops, ptr=batch.ptr, local=True)
        assert torch.equal(spd.values, local.values)


def test_local_pairs_on_a_graph_too_large_for_all_pairs():
    """A 30,000-node graph: all pairs refuse (n^2 values), hops=2 lists its ~0.4M near pairs."""
    gen = torch.Generator().manual_seed(0)
    n = 30_000
    ei = torch.randint(0, n, (2, 3 * n), generator=gen)
    ei = torch.cat([ei, ei.flip(0)], 1)
    with pytest.raises(ValueError, match="a graph has 30000 nodes: all-pairs encodings "
                                         "allocate n\\^2 values per graph, and max_nodes=1024"):
        relative_random_walk_probs(ei, n, 3)
    enc = relative_random_walk_probs(ei, n, 3, hops=2)
    deg = torch.bincount(ei[0], minlength=n)
    assert n < enc.pair_index.size(1) < n * (1 + 6 * 7) and enc.values.shape[1] == 3
    # every row of M sums to 1 (a node with an edge) and lies within 1 hop: the listed step-1
    # values add up to the number of such nodes
    assert torch.allclose(enc.values[:, 1].sum(), torch.tensor(float((deg > 0).sum())), rtol=1e-4)
    with pytest.raises(ValueError, match="hops must be None or a non-negative int, got -1"):
        relative_random_walk_probs(ei, n, 3, hops=-1)


def test_rrwp_compiled_kernel_on_both_sides_of_the_stacked_size():
    """Graphs up to RRWP_STACK_MAX_NODES keep all powers and write pair by pair, larger ones
    power by power: one batch mixing both (and an empty graph) equals the tensor kernel."""
    from graphpe.ops.walk.compiled import RRWP_STACK_MAX_NODES

    graphs = [nx_to_data(nx.cycle_graph(7)),
              nx_to_data(nx.random_labeled_tree(RRWP_STACK_MAX_NODES + 20, seed=1)),
              Data(edge_index=torch.zeros(2, 0, dtype=torch.long), num_nodes=0),
              nx_to_data(nx.grid_2d_graph(10, 10)),  # 100 nodes
              nx_to_data(nx.path_graph(RRWP_STACK_MAX_NODES))]
    batch = Batch.from_data_list(graphs)
    args = (batch.edge_index, batch.num_nodes, 6)
    fast = relative_random_walk_probs(*args, ptr=batch.ptr, plan=ExecPlan(kernel="compiled"))
    slow = relative_random_walk_probs(*args, ptr=batch.ptr, plan=ExecPlan(kernel="tensor"))
    assert torch.equal(fast.pair_index, slow.pair_index)
    assert torch.allclose(fast.values, slow.values, atol=1e-6)


def test_pair_ids_of_edges():
    from graphpe.ops.walk import pair_ids_of_edges

    pair_index = torch.tensor([[2, 0, 1, 0, 1], [2, 1, 0, 0, 2]])
    edge_index = torch.tensor([[0, 1, 1], [1, 0, 2]])
    ids = pair_ids_of_edges(pair_index, edge_index, 3)
    assert torch.equal(pair_index[:, ids], edge_index)
    assert pair_ids_of_edges(pair_index, edge_index[:, :0], 3).numel() == 0
    with pytest.raises(ValueError, match="an edge of edge_index is not among the pairs"):
        pair_ids_of_edges(pair_index, torch.tensor([[2], [0]]), 3)
    with pytest.raises(ValueError, match="an edge of edge_index is not among the pairs"):
        pair_ids_of_edges(pair_index[:, :0], edge_index, 3)
    with pytest.raises(ValueError, match="pair_index lists a pair more than once"):
        pair_ids_of_edges(torch.cat([pair_index, pair_index[:, :1]], 1), edge_index, 3)


@settings(max_examples=40, deadline=None)
@given(graphs=st.lists(raw_graph(max_nodes=7), min_size=1, max_size=4))
def test_pair_row_edges_copy_each_graph_onto_every_column(graphs):
    """Edge ``u -> v`` of a graph of ``n`` nodes becomes ``(u, j) -> (v, j)`` for ``j < n``,
    between rows in all_pairs' order, edge by edge; directed edges and self loops kept."""
    batch = Batch.from_data_list(graphs)
    pairs, pair_ptr = all_pairs(batch.ptr)
    got = pair_row_edges(batch.edge_index, batch.ptr, pair_ptr, batch.batch)
    row = {(int(i), int(j)): r for r, (i, j) in enumerate(pairs.t().tolist())}
    want = []
    for g, data in enumerate(graphs):
        first, n = int(batch.ptr[g]), data.num_nodes
        for u, v in data.edge_index.t().tolist():
            want += [(row[first + u, first + j], row[first + v, first + j]) for j in range(n)]
    assert got.dtype == torch.long
    assert got.t().tolist() == [list(e) for e in want]


def reference_path_edges(data: Data, max_hops: int) -> list[list[int]]:
    """The rule of shortest_path_edges written out pair by pair: networkx distances, each
    node's predecessor its smallest neighbour one hop closer to i, a hop u -> v the smallest
    id of an input edge u -> v, else of one v -> u."""
    g = simple_nx(data)
    ei = data.edge_index.tolist()
    ids: dict[tuple[int, int], int] = {}
    for e, (u, v) in enumerate(zip(*ei, strict=True)):
        ids.setdefault((u, v), e)
    rows = []
    n = data.num_nodes
    for i in range(n):
        dist = nx.single_source_shortest_path_length(g, i)
        for j in range(n):
            row = [-1] * max_hops
            if j in dist:
                w = j
                while dist[w] > 0:
                    u = min(x for x in g.neighbors(w) if dist.get(x) == dist[w] - 1)
                    if dist[u] < max_hops:
                        row[dist[u]] = ids.get((u, w), ids.get((w, u)))
                    w = u
            rows.append(row)
    return rows


@settings(max_examples=60, deadline=None)
@given(graphs=st.lists(raw_graph(), min_size=1, max_size=4), max_hops=st.integers(1, 5))
def test_shortest_path_edges_follow_their_rule_and_batch_equals_per_graph(graphs, max_hops):
    batch = Batch.from_data_list(graphs)
    pairs = shortest_path_distances(batch.edge_index, batch.num_nodes, 30, ptr=batch.ptr)
    got = shortest_path_edges(batch.edge_index, batch.num_nodes, pairs.pair_index, max_hops,
                              ptr=batch.ptr)
    assert got.shape == (pairs.pair_index.size(1), max_hops) and got.dtype == torch.long
    for k, data in enumerate(graphs):
        lo, hi = int(pairs.pair_ptr[k]), int(pairs.pair_ptr[k + 1])
        assert got[lo:hi].tolist() == reference_path_edges(data, max_hops)
        # a path: its first min(d, max_hops) hops are edges, chained from i towards j
        ei, dist = data.edge_index, pairs.values[lo:hi]
        for p, (i, j) in enumerate(pairs.pair_index[:, lo:hi].t().tolist()):
            i, j = i - int(batch.ptr[k]), j - int(batch.ptr[k])
            hops = got[lo + p]
            d = int(dist[p])
            length = 0 if d > 30 else min(d, max_hops)
            assert (hops[:length] >= 0).all() and (hops[length:] == -1).all()
            at = i
            for e in hops[:length].tolist():
                u, v = ei[:, e].tolist()
                assert at in (u, v) and u != v
                at = v if at == u else u
            if length == d:
                assert at == j


@settings(max_examples=30, deadline=None)
@given(graphs=st.lists(raw_graph(), min_size=1, max_size=4), max_dist=st.integers(1, 4),
       hops=st.integers(0, 3))
def test_shortest_paths_give_the_same_on_either_kernel(graphs, max_dist, hops):
    """shortest_paths (what SPD(path_hops=) calls): the distances of either kernel with the
    path edges of shortest_path_edges, and none without path_hops."""
    batch = Batch.from_data_list(graphs)
    args = (batch.edge_index, batch.num_nodes, max_dist, hops)
    compiled, path = shortest_paths(*args, ptr=batch.ptr)
    tensor, path_t = shortest_paths(*args, ptr=batch.ptr, plan=ExecPlan(kernel="tensor"))
    assert all(torch.equal(a, b) for a, b in zip(compiled, tensor, strict=True))
    if not hops:
        assert path is None and path_t is None
        return
    want = shortest_path_edges(batch.edge_index, batch.num_nodes, compiled.pair_index, hops,
                               ptr=batch.ptr)
    assert torch.equal(path, want) and torch.equal(path_t, want)


def test_shortest_path_edges_of_local_pairs_equal_those_of_all_pairs():
    data = nx_to_data(nx.grid_2d_graph(5, 6))
    everything = shortest_path_distances(data.edge_index, data.num_nodes, 20)
    local = shortest_path_distances(data.edge_index, data.num_nodes, 3, local=True)
    full = shortest_path_edges(data.edge_index, data.num_nodes, everything.pair_index, 3)
    near = shortest_path_edges(data.edge_index, data.num_nodes, local.pair_index, 3)
    key = everything.pair_index[0] * data.num_nodes + everything.pair_index[1]
    rows = torch.searchsorted(key, local.pair_index[0] * data.num_nodes + local.pair_index[1])
    assert torch.equal(near, full[rows])


def test_shortest_path_edges_bad_inputs():
    ei = torch.tensor([[0, 1], [1, 2]])
    pairs = torch.tensor([[0], [2]])
    assert shortest_path_edges(ei, 3, pairs, 2).tolist() == [[0, 1]]
    with pytest.raises(ValueError, match=r"max_hops must be a positive int, got 0"):
        shortest_path_edges(ei, 3, pairs, 0)
    with pytest.raises(ValueError, match=r"path_hops must be a non-negative int, got None"):
        shortest_paths(ei, 3, 2, None)
    with pytest.raises(ValueError, match=r"pair_index holds node ids outside \[0, 3\)"):
        shortest_path_edges(ei, 3, torch.tensor([[0], [3]]), 2)
    with pytest.raises(ValueError, match=r"pair_index must be an integer tensor of shape"):
        shortest_path_edges(ei, 3, torch.tensor([0, 2]), 2)
    ptr = torch.tensor([0, 2, 4])
    two = torch.tensor([[0, 2], [1, 3]])
    with pytest.raises(ValueError, match=r"pair_index holds a pair of nodes from different "
                                         r"graphs"):
        shortest_path_edges(two, 4, torch.tensor([[0], [2]]), 2, ptr=ptr)
    with pytest.raises(ValueError, match=r"edge_index must list its edges graph by graph"):
        shortest_path_edges(two.flip(1), 4, torch.tensor([[0], [1]]), 2, ptr=ptr)
