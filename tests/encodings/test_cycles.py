from math import comb, factorial

import networkx as nx
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch_geometric.data import Batch, Data

from graphpe import build_model
from graphpe.encodings import pe_spec
from graphpe.encodings.cycles import (
    CycleCountEncoder,
    CycleCounts,
    cycle_counts,
    graph_cycle_counts,
)
from graphpe.transforms import OnTheFlyPE, precompute

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
    # the transform writes it on every node of its graph, batched like a node attribute
    graphs = [messy_graph(seed + k, loops=False) for k in range(3)]
    batch = CycleCounts(graph_attr_name="cycles_graph")(Batch.from_data_list(graphs))
    refs = torch.cat([count_cycles(list(range(2, 9)), g) for g in graphs])
    torch.testing.assert_close(batch.cycles_graph[batch.ptr[:-1]], refs, atol=0, rtol=0)
    torch.testing.assert_close(batch.cycles_graph, refs[batch.batch], atol=0, rtol=0)


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


# ----------------------------------------------------------------------------- batching


def test_a_batch_equals_each_graph_alone_through_every_path():
    graphs = [messy_graph(20 + k) for k in range(4)] + [Data(
        edge_index=torch.zeros(2, 0, dtype=torch.long), num_nodes=3)]
    t = CycleCounts(6, edge_attr_name="cycle_counts_edge", graph_attr_name="cycles_graph")
    alone = [t(g.clone()) for g in graphs]
    batch = t(Batch.from_data_list([g.clone() for g in graphs]))
    for name in ("cycle_counts", "cycle_counts_edge", "cycles_graph"):
        torch.testing.assert_close(batch[name], torch.cat([a[name] for a in alone]))
        assert batch[name].dtype == torch.float32
    listed = precompute([g.clone() for g in graphs], t, progress=False)
    for one, ref in zip(listed, alone, strict=True):
        for name in ("cycle_counts", "cycle_counts_edge", "cycles_graph"):
            torch.testing.assert_close(one[name], ref[name])
    fly = OnTheFlyPE([t])(Batch.from_data_list([g.clone() for g in graphs]))
    for name in ("cycle_counts", "cycle_counts_edge", "cycles_graph"):
        torch.testing.assert_close(fly[name], batch[name])


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


def test_bad_settings_and_inputs_name_the_problem():
    with pytest.raises(ValueError, match="^max_length must be an int >= 3, got 2$"):
        CycleCounts(2)
    with pytest.raises(ValueError, match="^max_length must be an int >= 3, got True$"):
        pe_spec("cycles", max_length=True)
    with pytest.raises(ValueError, match="^max_paths must be a positive int, got 0$"):
        CycleCounts(max_paths=0)
    with pytest.raises(ValueError, match="^attr_name and edge_attr_name both name 'c': one "
                                         "output would overwrite the other$"):
        CycleCounts(attr_name="c", edge_attr_name="c")
    with pytest.raises(ValueError, match="^num_nodes must be non-negative, got -1$"):
        cycle_counts(torch.zeros(2, 0, dtype=torch.long), -1)
    with pytest.raises(ValueError, match="^edge_index contains node index 5, out of range "
                                         r"for num_nodes=3$"):
        cycle_counts(torch.tensor([[0], [5]]), 3)
    k12 = torch.tensor(list(nx.complete_graph(12).edges())).T
    graphs = [Data(edge_index=torch.tensor([[0], [1]]), num_nodes=2),
              Data(edge_index=k12, num_nodes=12)]
    with pytest.raises(ValueError, match=r"^cycle_counts: graph 1 \(12 nodes\) has more than "
                                         r"max_paths=1000 simple paths of up to 8 nodes to "
                                         r"enumerate; lower max_length or raise max_paths$"):
        CycleCounts(max_paths=1000)(Batch.from_data_list(graphs))
    assert repr(CycleCounts(5)) == ("CycleCounts(max_length=5, attr_name='cycle_counts', "
                                    "edge_attr_name=None, graph_attr_name=None)")
    assert repr(pe_spec("cycles")) == "CyclesSpec(max_length=8)"


# ----------------------------------------------------------------------------- model


def test_a_model_reads_the_counts_through_build_model():
    graphs = [messy_graph(40 + k) for k in range(3)]
    for g in graphs:
        g.x = torch.zeros(g.num_nodes, dtype=torch.long)
        g.edge_attr = torch.zeros(g.edge_index.size(1), dtype=torch.long)
    spec = pe_spec("cycles", max_length=6)
    batch = spec.transform()(Batch.from_data_list(graphs))
    assert batch.cycle_counts.shape == (batch.num_nodes, 4)
    model = build_model({"model": "gps", "channels": 8, "layers": 1, "heads": 2,
                         "node_vocab": 1, "edge_vocab": 1, "pe": {"cycles": spec.settings}})
    encoder = model.pe_encoders[0]
    assert isinstance(encoder, CycleCountEncoder) and encoder.in_dim == 4
    out = model(batch)
    assert out.shape == (3, 1) and torch.isfinite(out).all()
