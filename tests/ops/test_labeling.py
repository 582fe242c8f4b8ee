"""SEAL's enclosing subgraphs and node labels (graphpe.ops.labeling) against PyG's SEAL example
(per pair ``k_hop_subgraph``, the target edge masked out, ``drnl_node_labeling`` with scipy's
shortest paths) and scipy's shortest paths for DE, on random graphs with several components
and isolated nodes; the target edge never in its own subgraph; the per-hop cap; relabelling
the graph; the arguments' errors."""

import networkx as nx
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse.csgraph import shortest_path
from torch_geometric.data import Data
from torch_geometric.utils import k_hop_subgraph, to_scipy_sparse_matrix

from graphpe.ops import labeling
from graphpe.ops.labeling import enclosing_subgraphs
from tests.conftest import nx_to_data


# --- the reference: PyG's examples/seal_link_pred.py (SEALDataset.extract_enclosing_subgraphs
# and drnl_node_labeling), https://github.com/pyg-team/pytorch_geometric, MIT licence,
# Copyright (c) 2023 PyG Team; made functions of their arguments, and k_hop_subgraph given
# num_nodes (isolated nodes of the largest ids), the rest unchanged.
def drnl_node_labeling(edge_index, src, dst, num_nodes=None):
    # Double-radius node labeling (DRNL).
    src, dst = (dst, src) if src > dst else (src, dst)
    adj = to_scipy_sparse_matrix(edge_index, num_nodes=num_nodes).tocsr()

    idx = list(range(src)) + list(range(src + 1, adj.shape[0]))
    adj_wo_src = adj[idx, :][:, idx]

    idx = list(range(dst)) + list(range(dst + 1, adj.shape[0]))
    adj_wo_dst = adj[idx, :][:, idx]

    dist2src = shortest_path(adj_wo_dst, directed=False, unweighted=True, indices=src)
    dist2src = np.insert(dist2src, dst, 0, axis=0)
    dist2src = torch.from_numpy(dist2src)

    dist2dst = shortest_path(adj_wo_src, directed=False, unweighted=True, indices=dst - 1)
    dist2dst = np.insert(dist2dst, src, 0, axis=0)
    dist2dst = torch.from_numpy(dist2dst)

    dist = dist2src + dist2dst
    dist_over_2, dist_mod_2 = dist // 2, dist % 2

    z = 1 + torch.min(dist2src, dist2dst)
    z += dist_over_2 * (dist_over_2 + dist_mod_2 - 1)
    z[src] = 1.
    z[dst] = 1.
    z[torch.isnan(z)] = 0.

    return z.to(torch.long)


def extract_enclosing_subgraph(edge_index, src, dst, num_hops, num_nodes):
    sub_nodes, sub_edge_index, mapping, _ = k_hop_subgraph(
        [src, dst], num_hops, edge_index, relabel_nodes=True, num_nodes=num_nodes)
    src, dst = mapping.tolist()

    # Remove target link from the subgraph.
    mask1 = (sub_edge_index[0] != src) | (sub_edge_index[1] != dst)
    mask2 = (sub_edge_index[0] != dst) | (sub_edge_index[1] != src)
    sub_edge_index = sub_edge_index[:, mask1 & mask2]
    return sub_nodes, sub_edge_index, src, dst
# --- end of the reference


def de_labels(sub_edge_index, src, dst, num_nodes, cap, masked):
    """DE (Li et al. 2020) on a subgraph: distances to src and dst capped at ``cap``
    (unreachable: ``cap``); ``masked`` (DE+) measures each with the other target removed and
    sets the other target's distance to 0."""
    adj = to_scipy_sparse_matrix(sub_edge_index, num_nodes=num_nodes).tocsr()
    columns = []
    for source, other in ((src, dst), (dst, src)):
        a = adj.tolil()
        if masked:
            a[other, :] = 0
            a[:, other] = 0
        dist = shortest_path(a.tocsr(), directed=False, unweighted=True, indices=source)
        if masked:
            dist[other] = 0
        columns.append(np.minimum(dist, cap))
    return torch.from_numpy(np.stack(columns, 1)).long()


def reference(data, pairs, hops, labels="drnl", cap=3):
    """Per pair: (node ids, edge set of node ids, {node id: label}) by PyG's path."""
    out = []
    for u, v in pairs.t().tolist():
        sub_nodes, sub_edges, src, dst = extract_enclosing_subgraph(data.edge_index, u, v, hops,
                                                                    data.num_nodes)
        if labels == "drnl":
            z = drnl_node_labeling(sub_edges, src, dst, num_nodes=sub_nodes.numel())
        else:
            z = de_labels(sub_edges, src, dst, sub_nodes.numel(), cap, labels == "de+")
        out.append(canonical(sub_nodes, sub_edges, z))
    return out


def canonical(nodes, local_edges, labels):
    """A subgraph as comparable sets: node ids, edges as node-id pairs, node id -> label."""
    ids = nodes.tolist()
    edges = sorted((ids[a], ids[b]) for a, b in local_edges.t().tolist())
    return sorted(ids), edges, {g: tuple(np.atleast_1d(z).tolist()) for g, z in
                                zip(ids, labels.numpy(), strict=True)}


def ours(result):
    """graphpe's subgraphs in :func:`canonical`'s form, checking the layout on the way."""
    out = []
    for i in range(result.num_subgraphs):
        nodes, edges, labels = result.subgraph(i)
        assert nodes.unique().numel() == nodes.numel()
        assert edges.numel() == 0 or (edges.min() >= 0 and edges.max() < nodes.numel())
        out.append(canonical(nodes, edges, labels))
    return out


def graph_and_pairs(seed, n=30, p=0.1, isolated=3, q=24):
    """A random graph with ``isolated`` extra nodes of degree 0 (several components), and
    pairs: edges, non-edges, pairs two hops apart and pairs with an isolated node."""
    g = nx.gnp_random_graph(n, p, seed=seed)
    g.add_nodes_from(range(n, n + isolated))
    rng = np.random.default_rng(seed)
    edges = list(g.edges())
    non_edges = list(nx.non_edges(g))
    two_hop = [(a, c) for a in g for b in g[a] for c in g[b] if c != a and not g.has_edge(a, c)]
    chosen = []
    for pool, k in ((edges, q // 3), (non_edges, q // 3), (two_hop, q // 6)):
        if pool:
            chosen += [pool[i] for i in rng.choice(len(pool), min(k, len(pool)), replace=False)]
    if isolated >= 3:
        chosen += [(n, int(rng.integers(n))), (n + 1, n + 2)]
    pairs = torch.tensor(chosen).t()
    flip = torch.from_numpy(rng.random(pairs.size(1)) < 0.5)  # (either order)
    pairs[:, flip] = pairs.flip(0)[:, flip]
    return g, nx_to_data(g), pairs


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), hops=st.integers(1, 3), p=st.sampled_from([0.05, 0.1, 0.2]))
def test_drnl_equals_pygs_seal_example(seed, hops, p):
    _, data, pairs = graph_and_pairs(seed, p=p)
    got = enclosing_subgraphs(data.edge_index, data.num_nodes, pairs, hops)
    assert got.labels.shape == (got.nodes.numel(),)
    assert ours(got) == reference(data, pairs, hops)
    assert torch.equal(got.nodes[got.target_index], pairs)  # u, v first


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), hops=st.integers(1, 3), cap=st.integers(1, 4),
       kind=st.sampled_from(["de", "de+"]))
def test_de_equals_capped_shortest_paths(seed, hops, cap, kind):
    _, data, pairs = graph_and_pairs(seed)
    got = enclosing_subgraphs(data.edge_index, data.num_nodes, pairs, hops, labels=kind,
                              max_distance=cap)
    assert got.labels.shape == (got.nodes.numel(), 2)
    assert ours(got) == reference(data, pairs, hops, kind, cap)


def test_a_path_by_hand():
    # 5 - 0 - 1 - 2 - 3 - 4, pair (0, 1): the edge is removed, so 5 and 2 reach one target only
    ei = torch.tensor([[5, 0, 1, 2, 3], [0, 1, 2, 3, 4]])
    ei = torch.cat([ei, ei.flip(0)], 1)
    got = enclosing_subgraphs(ei, 6, torch.tensor([[0, 2], [1, 4]]), 2)
    nodes, edges, z = got.subgraph(0)
    assert nodes.tolist() == [0, 1, 5, 2, 3]
    assert sorted(map(tuple, edges.t().tolist())) == [(0, 2), (1, 3), (2, 0), (3, 1), (3, 4),
                                                      (4, 3)]
    assert z.tolist() == [1, 1, 0, 0, 0]
    nodes, _, z = got.subgraph(1)  # 3 is one hop from each (label 2); 1 and 0 reach 2 only
    assert dict(zip(nodes.tolist(), z.tolist(), strict=True)) == {2: 1, 4: 1, 3: 2, 1: 0, 0: 0}
    de = enclosing_subgraphs(ei, 6, torch.tensor([[0], [1]]), 2, labels="de").labels
    assert de.tolist() == [[0, 3], [3, 0], [1, 3], [3, 1], [3, 2]]  # 3: the cap, unreached


def test_a_node_reaching_one_target_only_is_labelled_0_at_any_distance():
    # 0 - 1 - 2 - ... - 7: pair (0, 1), hops 6: with u masked, 1 reaches 2..7 at 1..6 hops,
    # and with v masked u reaches nothing
    ei = torch.stack([torch.arange(7), torch.arange(1, 8)])
    ei = torch.cat([ei, ei.flip(0)], 1)
    got = enclosing_subgraphs(ei, 8, torch.tensor([[0], [1]]), 6)
    assert got.nodes.tolist() == list(range(8))
    assert got.labels.tolist() == [1, 1, 0, 0, 0, 0, 0, 0]
    assert ours(got) == reference(Data(edge_index=ei, num_nodes=8), torch.tensor([[0], [1]]), 6)


def test_the_target_edge_is_never_in_its_subgraph():
    g, data, _ = graph_and_pairs(7, p=0.2)
    positives = torch.tensor(list(g.edges())).t()
    got = enclosing_subgraphs(data.edge_index, data.num_nodes, positives, 2, labels="de")
    for i in range(got.num_subgraphs):
        _, edges, _ = got.subgraph(i)
        local = set(map(tuple, edges.t().tolist()))
        assert (0, 1) not in local and (1, 0) not in local
    # the labels read the graph without it: u is not one hop from v
    assert (got.labels[got.target_index[1], 0] >= 2).all()
    assert (got.labels[got.target_index[0], 1] >= 2).all()
    # every other edge between the subgraph's nodes is there (the graph has the target edge)
    kept = sum(len(g.subgraph(got.subgraph(i)[0].tolist()).edges()) for i in range(
        got.num_subgraphs))
    assert got.edge_index.size(1) == 2 * (kept - positives.size(1))


def _hop_layers(nodes, edges):
    """Each node's distance from {u, v} (local 0 and 1) within the subgraph."""
    g = nx.Graph()
    g.add_nodes_from(range(nodes.numel()))
    g.add_edges_from(edges.t().tolist())
    return nx.multi_source_dijkstra_path_length(g, {0, 1})


def test_the_cap_per_hop_layer_is_respected_and_seeded():
    _, data, pairs = graph_and_pairs(3, n=60, p=0.15, q=40)
    hops, cap = 2, 3
    full = enclosing_subgraphs(data.edge_index, data.num_nodes, pairs, hops)
    got = enclosing_subgraphs(data.edge_index, data.num_nodes, pairs, hops,
                              max_nodes_per_hop=cap, seed=5)
    sizes = got.ptr.diff()
    assert (sizes <= 2 + hops * cap).all() and (sizes < full.ptr.diff()).any()
    for i in range(got.num_subgraphs):
        nodes, edges, _ = got.subgraph(i)
        layers = np.bincount(list(_hop_layers(nodes, edges).values()))
        assert len(layers) <= hops + 1 and (layers[1:] <= cap).all()
        assert set(nodes.tolist()) <= set(full.subgraph(i)[0].tolist())
    again = enclosing_subgraphs(data.edge_index, data.num_nodes, pairs, hops,
                                max_nodes_per_hop=cap, seed=5)
    other = enclosing_subgraphs(data.edge_index, data.num_nodes, pairs, hops,
                                max_nodes_per_hop=cap, seed=6)
    assert all(torch.equal(a, b) for a, b in zip(got, again, strict=True))
    assert [set(a[0]) for a in ours(got)] != [set(b[0]) for b in ours(other)]
    # a pair's sample depends on the seed and the pair only: alone, it is the same
    alone = enclosing_subgraphs(data.edge_index, data.num_nodes, pairs[:, 5:6], hops,
                                max_nodes_per_hop=cap, seed=5)
    assert all(torch.equal(a, b) for a, b in zip(alone.subgraph(0), got.subgraph(5), strict=True))


def test_capped_labels_are_drnl_of_the_sampled_subgraph_and_a_large_cap_is_none():
    _, data, pairs = graph_and_pairs(4, n=50, p=0.15)
    got = enclosing_subgraphs(data.edge_index, data.num_nodes, pairs, 2, max_nodes_per_hop=4)
    for i in range(got.num_subgraphs):
        nodes, edges, z = got.subgraph(i)
        want = drnl_node_labeling(edges, 0, 1, num_nodes=nodes.numel())
        assert torch.equal(z, want)
    full = enclosing_subgraphs(data.edge_index, data.num_nodes, pairs, 2)
    large = enclosing_subgraphs(data.edge_index, data.num_nodes, pairs, 2,
                                max_nodes_per_hop=data.num_nodes)
    assert all(torch.equal(a, b) for a, b in zip(full, large, strict=True))


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), kind=st.sampled_from(["drnl", "de", "de+"]))
def test_relabelling_the_graph_relabels_the_subgraphs(seed, kind):
    _, data, pairs = graph_and_pairs(seed)
    perm = torch.from_numpy(np.random.default_rng(seed).permutation(data.num_nodes))
    got = enclosing_subgraphs(data.edge_index, data.num_nodes, pairs, 2, labels=kind)
    moved = enclosing_subgraphs(perm[data.edge_index], data.num_nodes, perm[pairs], 2,
                                labels=kind)
    for (nodes, edges, z), (m_nodes, m_edges, m_z) in zip(ours(got), ours(moved), strict=True):
        back = {int(perm[g]): g for g in nodes}
        assert sorted(back[g] for g in m_nodes) == nodes
        assert sorted((back[a], back[b]) for a, b in m_edges) == edges
        assert {back[g]: label for g, label in m_z.items()} == z


def test_threads_give_the_one_thread_result(monkeypatch):
    _, data, pairs = graph_and_pairs(9, q=60)
    one = enclosing_subgraphs(data.edge_index, data.num_nodes, pairs, 2, max_nodes_per_hop=2)
    monkeypatch.setattr(labeling, "PAIRS_PER_THREAD", 4)
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        split = enclosing_subgraphs(data.edge_index, data.num_nodes, pairs, 2,
                                    max_nodes_per_hop=2)
    finally:
        torch.set_num_threads(threads)
    assert all(torch.equal(a, b) for a, b in zip(one, split, strict=True))


def test_the_batch_is_pygs_layout():
    _, data, pairs = graph_and_pairs(2)
    got = enclosing_subgraphs(data.edge_index, data.num_nodes, pairs, 2, labels=None)
    assert got.labels is None
    assert got.batch.tolist() == torch.repeat_interleave(
        torch.arange(pairs.size(1)), got.ptr.diff()).tolist()
    within = got.batch[got.edge_index[0]] == got.batch[got.edge_index[1]]
    assert within.all()  # no edge joins two subgraphs
    assert got.edge_ptr[-1] == got.edge_index.size(1)
    assert torch.equal(torch.bincount(got.batch[got.edge_index[0]],
                                      minlength=pairs.size(1)), got.edge_ptr.diff())


ERRORS = [
    (dict(pairs=torch.tensor([[0, 1], [1, 9]])),
     r"^pairs name node 9, outside the graph's 4 nodes$"),
    (dict(pairs=torch.zeros(2, 0, dtype=torch.long)),
     r"^pairs is empty: give at least one \(u, v\) column$"),
    (dict(pairs=torch.tensor([[0, 2], [1, 2]])),
     r"^pairs\[:, 1\] is \(2, 2\): a target link joins two different nodes$"),
    (dict(hops=0), r"^hops must be a positive int, got 0$"),
    (dict(max_nodes_per_hop=0), r"^max_nodes_per_hop must be a positive int or None, got 0$"),
    (dict(labels="zo"), r"^labels must be one of \('drnl', 'de', 'de\+', None\), got 'zo'$"),
    (dict(max_distance=0), r"^max_distance must be a positive int, got 0$"),
    (dict(seed=None), r"^seed must be an int, got None$"),
    (dict(seed=1.5), r"^seed must be an int, got 1.5$"),
]


@pytest.mark.parametrize(("change", "message"), ERRORS)
def test_bad_arguments_are_one_clear_error(change, message):
    args = dict(pairs=torch.tensor([[0], [1]]), hops=2)
    ei = torch.tensor([[0, 1, 2], [1, 2, 3]])
    with pytest.raises(ValueError, match=message):
        enclosing_subgraphs(ei, 4, **(args | change))
