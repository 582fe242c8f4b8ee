"""Cycle counts (graphpe.ops.cycles): per node and per edge against networkx, per graph
against GPSE's own enumeration, closed forms, and by their symmetries."""

from math import comb, factorial

import networkx as nx
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch_geometric.data import Data

from graphpe.ops.cycles import cycle_counts, graph_cycle_counts

# ----------------------------------------------------------------------------- GPSE's target
# HamiltonianCycle, get_all_k_hamcycles, dfs_k_hamcycles and count_cycles below are copied from
# GPSE (G-Taxonomy-Workgroup/GPSE, graphgym/transform/cycle_counts.py, commit 554a11d; MIT
# License, Copyright (c) 2023 G-Taxonomy-Workgroup), the target GPSE's configs name CycleGE
# (`graphenc_CycleGE.kernel.times_func: range(2, 9)`). Trimmed: type checks, logging and
# docstrings dropped; the logic is unchanged.


class HamiltonianCycle:
    def __init__(self, path):
        if len(set(path)) != len(path):
            raise ValueError(f"path must contain unique elements, got {path}")
        if len(path) < 2:
            raise ValueError(f"path must be at least of size two, got {path}")
        self._data = path
        self._reduced_repr = self._get_reduced_repr(path)

    @staticmethod
    def _get_reduced_repr(path):
        min_val = min(path)
        min_val_idx = path.index(min_val)
        path = path[min_val_idx:] + path[:min_val_idx]
        if path[-1] < path[1]:
            path = path[:1] + path[-1:0:-1]
        return tuple(path)

    def __len__(self):
        return len(self._reduced_repr)

    def __hash__(self):
        return hash(self._reduced_repr)

    def __eq__(self, other):
        return self._reduced_repr == other._reduced_repr


def get_all_k_hamcycles(edge_index, num_nodes, k, exact=True):
    g = nx.Graph()
    g.add_nodes_from(range(num_nodes))
    g.add_edges_from(edge_index.detach().clone().cpu().T.numpy())
    all_k_hamcycles = set()
    for vi in range(num_nodes):
        all_k_hamcycles.update(dfs_k_hamcycles(g, k, vi, exact=exact))
    return all_k_hamcycles


def dfs_k_hamcycles(g, k, seed, *, exact=True, _cur_depth=0, _cur_path=None, _paths=None):
    _cur_path = _cur_path if _cur_path is not None else []
    _paths = _paths if _paths is not None else set()
    if _cur_path and (seed == _cur_path[0]):
        if (_cur_depth == k) or (not exact):
            _paths.add(HamiltonianCycle(_cur_path))
    elif (_cur_depth < k) and (seed not in _cur_path):
        next_depth = _cur_depth + 1
        next_path = _cur_path + [seed]
        for next_seed in g[seed]:
            dfs_k_hamcycles(g, k, next_seed, exact=exact, _cur_depth=next_depth,
                            _cur_path=next_path, _paths=_paths)
    return _paths


def count_cycles(k_list, data):
    hamcycles = get_all_k_hamcycles(data.edge_index, data.num_nodes, max(k_list), False)
    count_dict = {k: 0 for k in k_list}
    for hc in hamcycles:
        if (size := len(hc)) in count_dict:
            count_dict[size] += 1
    cycle_counts = [count_dict[k] for k in k_list]
    return torch.FloatTensor(cycle_counts).unsqueeze(0)


# ----------------------------------------------------------------------------- helpers


def networkx_counts(num_nodes, edge_index, max_length):
    """Per node and per undirected edge, the simple cycles of length 3..max_length of
    ``nx.simple_cycles`` on the undirected simple graph (self loops, length 1, left out)."""
    g = nx.Graph()
    g.add_nodes_from(range(num_nodes))
    g.add_edges_from((a, b) for a, b in edge_index.T.tolist() if a != b)
    node = np.zeros((num_nodes, max_length - 2), dtype=np.int64)
    edge = {}
    for cycle in nx.simple_cycles(g, length_bound=max_length):
        length = len(cycle)
        if length < 3:
            continue
        for v in cycle:
            node[v, length - 3] += 1
        for a, b in zip(cycle, cycle[1:] + cycle[:1], strict=True):
            edge.setdefault(frozenset((a, b)), np.zeros(max_length - 2, np.int64))
            edge[frozenset((a, b))][length - 3] += 1
    per_input = np.stack([edge.get(frozenset((a, b)), np.zeros(max_length - 2, np.int64))
                          if a != b else np.zeros(max_length - 2, np.int64)
                          for a, b in edge_index.T.tolist()]) if edge_index.size(1) else \
        np.zeros((0, max_length - 2), np.int64)
    return node, per_input


def messy_graph(seed, n=None, p=None, loops=True):
    """A random graph listed the messy ways inputs come: some edges in one direction only,
    some in both, some twice, self loops, a second component and isolated nodes."""
    rng = np.random.default_rng(seed)
    n = n or int(rng.integers(6, 14))
    p = p or float(rng.uniform(0.2, 0.5))
    parts = [nx.gnp_random_graph(n, p, seed=seed), nx.cycle_graph(int(rng.integers(3, 7))),
             nx.empty_graph(2)]
    g = nx.disjoint_union_all(parts)
    pairs = []
    for a, b in g.edges():
        r = rng.random()
        pairs += [(a, b)] if r < 0.3 else [(b, a)] if r < 0.5 else [(a, b), (b, a)]
        if rng.random() < 0.15:
            pairs.append((a, b))  # a duplicate
    if loops:
        pairs += [(v, v) for v in rng.choice(g.number_of_nodes(), 3, replace=False).tolist()]
    order = rng.permutation(len(pairs))
    edge_index = torch.tensor([pairs[i] for i in order], dtype=torch.long).T
    return Data(edge_index=edge_index, num_nodes=g.number_of_nodes())


# ----------------------------------------------------------------------------- references


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("max_length", [3, 5, 8])
def test_node_counts_equal_networkx(seed, max_length):
    data = messy_graph(seed)
    node, edge = cycle_counts(data.edge_index, data.num_nodes, max_length, edges=True)
    ref_node, ref_edge = networkx_counts(data.num_nodes, data.edge_index, max_length)
    np.testing.assert_array_equal(node.numpy(), ref_node)
    np.testing.assert_array_equal(edge.numpy(), ref_edge)
    assert node.dtype == edge.dtype == torch.int64
    # a cycle of length L passes L nodes and L edges
    lengths = np.arange(3, max_length + 1)
    assert (ref_node.sum(0) % lengths == 0).all()


@pytest.mark.parametrize("n", [4, 6, 7])
def test_closed_forms_of_complete_and_cycle_graphs(n):
    # K_n: through a node, C(n-1, L-1) choices of the others times (L-1)!/2 cyclic orders
    data = Data(edge_index=torch.tensor(list(nx.complete_graph(n).edges())).T, num_nodes=n)
    node, edge = cycle_counts(data.edge_index, n, 8, edges=True)
    expected = [comb(n - 1, L - 1) * factorial(L - 1) // 2 if L <= n else 0
                for L in range(3, 9)]
    assert (node == torch.tensor(expected)).all()
    # through an edge: C(n-2, L-2) choices of the others times (L-2)! orders of them
    expected_edge = [comb(n - 2, L - 2) * factorial(L - 2) if L <= n else 0 for L in range(3, 9)]
    assert (edge == torch.tensor(expected_edge)).all()
    ring = torch.tensor(list(nx.cycle_graph(n + 2).edges())).T
    counts, _ = cycle_counts(ring, n + 2, n + 2)
    assert (counts[:, -1] == 1).all() and not counts[:, :-1].any()


@pytest.mark.parametrize("seed", range(6))
def test_graph_counts_equal_gpse_cycle_target(seed):
    data = messy_graph(seed, loops=False)  # GPSE's enumeration raises on a self loop
    ours = graph_cycle_counts(data.edge_index, data.num_nodes, 8)
    ref = count_cycles(list(range(2, 9)), data)
    assert ours.dtype == torch.int64 and ours.shape == (1, 7)
    torch.testing.assert_close(ours.float(), ref, atol=0, rtol=0)


def test_self_loops_and_duplicates_do_not_change_the_counts():
    clean = torch.tensor([[0, 1, 2, 2, 3], [1, 2, 0, 3, 0]])  # two triangles sharing 0-2
    messy = torch.cat([clean, clean.flip(0), clean[:, :2], torch.tensor([[1, 3], [1, 3]])], 1)
    for edges in (clean, messy):
        node, edge = cycle_counts(edges, 4, 4, edges=True)
        assert node.tolist() == [[2, 1], [1, 1], [2, 1], [1, 1]]
        is_loop = edges[0] == edges[1]
        assert not edge[is_loop].any()
        chord = ((edges[0] - edges[1]).abs() == 2) & ~is_loop  # the shared edge 0-2
        assert (edge[chord] == torch.tensor([2, 0])).all()
        assert (edge[~chord & ~is_loop] == torch.tensor([1, 1])).all()


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), max_length=st.integers(3, 7))
def test_relabelling_the_nodes_permutes_the_rows(seed, max_length):
    data = messy_graph(seed)
    perm = torch.randperm(data.num_nodes, generator=torch.Generator().manual_seed(seed))
    inverse = torch.argsort(perm)  # node i is called inverse[i] after relabelling
    node, edge = cycle_counts(data.edge_index, data.num_nodes, max_length, edges=True)
    node_p, edge_p = cycle_counts(inverse[data.edge_index], data.num_nodes, max_length,
                                  edges=True)
    assert torch.equal(node_p, node[perm])
    assert torch.equal(edge_p, edge)  # the same edges, in the same order


# ----------------------------------------------------------------------------- errors


def test_bad_inputs_name_the_problem():
    with pytest.raises(ValueError, match="^max_length must be an int >= 3, got 2$"):
        cycle_counts(torch.zeros(2, 0, dtype=torch.long), 2, 2)
    with pytest.raises(ValueError, match="^num_nodes must be non-negative, got -1$"):
        cycle_counts(torch.zeros(2, 0, dtype=torch.long), -1)
    with pytest.raises(ValueError, match="^edge_index contains node index 5, out of range "
                                         r"for num_nodes=3$"):
        cycle_counts(torch.tensor([[0], [5]]), 3)
    k12 = torch.tensor(list(nx.complete_graph(12).edges())).T
    ei = torch.cat([torch.tensor([[0], [1]]), k12 + 2], 1)
    ptr = torch.tensor([0, 2, 14])
    with pytest.raises(ValueError, match=r"^cycle_counts: graph 1 \(12 nodes\) has more than "
                                         r"max_paths=1000 simple paths of up to 8 nodes to "
                                         r"enumerate; lower max_length or raise max_paths$"):
        cycle_counts(ei, 14, 8, ptr=ptr, max_paths=1000)
