"""graphpe.ops.neighbors (the compiled neighbour sampler) and graphpe.sampling (PyG's
NeighborLoader with it): where the sample is determined (all in-edges), equal to a plain-Python
reference of PyG's directional sampling; where it is random, every property that defines it
(each node's draw a subset of its in-edges of the right size, distinct without replacement,
seeds first, nodes in the order met) and uniform draws (chi-square)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats
from torch_geometric.data import Data, HeteroData
from torch_geometric.utils import to_torch_csc_tensor

from graphpe.ops.neighbors import sample_neighbors
from graphpe.sampling import CompiledNeighborSampler, neighbor_loader


def csc(edge_index: torch.Tensor, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(colptr, row)`` of the graph's CSC form (in-edges of each node, sources sorted)."""
    adj = to_torch_csc_tensor(edge_index, size=(n, n))
    return adj.ccol_indices().numpy().astype(np.int64), adj.row_indices().numpy().astype(
        np.int64)


def reference_sample(colptr, row, seeds, num_neighbors):
    """PyG's directional sampling taking every in-edge (``num_neighbors`` all ``-1``), in plain
    Python: for each node of the last hop in order, its in-edges in CSC order, each source new
    to the sample appended."""
    nodes = [int(s) for s in seeds]
    local = {n: i for i, n in enumerate(nodes)}
    rows, cols, edges, hop_nodes, hop_edges = [], [], [], [len(nodes)], []
    begin = 0
    for _ in num_neighbors:
        end, count = len(nodes), 0
        for i in range(begin, end):
            v = nodes[i]
            for e in range(colptr[v], colptr[v + 1]):
                u = int(row[e])
                if u not in local:
                    local[u] = len(nodes)
                    nodes.append(u)
                rows.append(local[u])
                cols.append(i)
                edges.append(e)
                count += 1
        hop_nodes.append(len(nodes) - end)
        hop_edges.append(count)
        begin = end
    return nodes, rows, cols, edges, hop_nodes, hop_edges


def random_graph(n: int = 300, e: int = 2400, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, n, (2, e), generator=g)


@pytest.mark.parametrize("fanout", [-1, 10_000])
def test_taking_every_in_edge_equals_the_reference(fanout):
    n = 300
    colptr, row = csc(random_graph(n), n)
    seeds = np.array([5, 17, 3, 250], dtype=np.int64)
    got = sample_neighbors(colptr, row, seeds, np.array([fanout, fanout]), seed=1)
    want = reference_sample(colptr, row, seeds, [-1, -1])
    for a, b in zip(got, want, strict=True):
        assert np.asarray(a).tolist() == list(b)


@pytest.mark.parametrize("replace", [False, True])
def test_a_sample_is_made_of_in_edges_of_the_right_count(replace):
    n, fanouts = 300, np.array([4, 3, 2])
    edge_index = random_graph(n)
    colptr, row = csc(edge_index, n)
    degree = np.diff(colptr)
    seeds = np.arange(0, n, 7, dtype=np.int64)
    local = np.full(n, -1, dtype=np.int64)
    nodes, rows, cols, edges, hop_nodes, hop_edges = sample_neighbors(
        colptr, row, seeds, fanouts, replace=replace, seed=3, local=local)
    assert (local == -1).all()  # the scratch is left as given
    assert nodes[: seeds.size].tolist() == seeds.tolist()
    assert len(set(nodes.tolist())) == nodes.size == hop_nodes.sum()
    assert edges.size == hop_edges.sum()
    # every sampled edge is an in-edge of the node that drew it
    assert (row[edges] == nodes[rows]).all()
    assert ((colptr[nodes[cols]] <= edges) & (edges < colptr[nodes[cols] + 1])).all()
    # hop h draws from the nodes first met in hop h - 1, min(k, degree) each (k with
    # replacement where the node has in-edges), distinct positions without replacement
    first = np.concatenate([[0], np.cumsum(hop_nodes)])
    start = 0
    for hop, k in enumerate(fanouts):
        drawn = np.arange(start, start + hop_edges[hop])
        targets = cols[drawn]
        assert ((first[hop] <= targets) & (targets < first[hop + 1])).all()
        for i in range(first[hop], first[hop + 1]):
            mine = edges[drawn[targets == i]]
            d = degree[nodes[i]]
            assert mine.size == (k if replace and d else min(k, d))
            if not replace:
                assert np.unique(mine).size == mine.size
        start += hop_edges[hop]
    # the nodes of a hop in the order their first edge was met
    order = [int(r) for r in rows if r >= seeds.size]
    assert list(dict.fromkeys(order)) == list(range(seeds.size, nodes.size))


def test_draws_are_uniform_and_set_by_the_seed():
    """One node with 12 in-edges, 4 drawn, 6,000 times: every edge drawn a third of the time
    (chi-square), and every 4-subset met (Floyd's algorithm's subsets are uniform)."""
    sources = torch.arange(1, 13)
    edge_index = torch.stack([sources, torch.zeros(12, dtype=torch.long)])
    colptr, row = csc(edge_index, 13)
    counts = np.zeros(12)
    subsets = set()
    for draw in range(6000):
        _, _, _, edges, _, _ = sample_neighbors(colptr, row, np.array([0]), np.array([4]),
                                                seed=draw)
        counts[edges - colptr[0]] += 1
        subsets.add(tuple(sorted(edges.tolist())))
    assert stats.chisquare(counts).pvalue > 1e-3
    assert len(subsets) == 495  # C(12, 4)
    a = sample_neighbors(colptr, row, np.array([0]), np.array([4]), seed=7)
    b = sample_neighbors(colptr, row, np.array([0]), np.array([4]), seed=7)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


def test_the_loader_cuts_batches_with_the_nodes_rows():
    n = 200
    edge_index = random_graph(n, 1600)
    g = torch.Generator().manual_seed(0)
    data = Data(edge_index=edge_index, num_nodes=n, x=torch.randn(n, 3, generator=g),
                pe=torch.randn(n, 5, generator=g), train_mask=torch.arange(n) % 3 == 0)
    seen = []
    torch.manual_seed(0)
    for batch in neighbor_loader(data, [5, 3], input_nodes=data.train_mask, batch_size=16,
                                 shuffle=True):
        assert torch.equal(batch.pe, data.pe[batch.n_id])
        assert torch.equal(data.edge_index[:, batch.e_id], batch.n_id[batch.edge_index])
        seen.append(batch.n_id[: batch.batch_size])
    assert torch.equal(torch.cat(seen).sort().values, data.train_mask.nonzero().view(-1))
    # seed=...: the same sample at every pass, in this process or in workers
    passes = [[b.n_id for b in neighbor_loader(data, [5, 3], batch_size=50, seed=4,
                                               num_workers=workers)]
              for workers in (0, 0, 2)]
    for other in passes[1:]:
        assert all(torch.equal(a, b) for a, b in zip(passes[0], other, strict=True))


def test_what_the_sampler_does_not_cover_is_refused():
    data = Data(edge_index=random_graph(20, 40), num_nodes=20)
    with pytest.raises(ValueError, match="does not cover disjoint"):
        CompiledNeighborSampler(data, [2], disjoint=True)
    with pytest.raises(ValueError, match="directional subgraphs only"):
        CompiledNeighborSampler(data, [2], subgraph_type="induced")
    with pytest.raises(TypeError, match="samples a homogeneous Data, got HeteroData"):
        CompiledNeighborSampler(HeteroData(), [2])


def test_rows_all_equal_are_shared_not_copied():
    """A node attribute whose rows are all equal (LapPE's eigenvalues of one graph) reaches
    each batch as its one row expanded (stride 0), equal to the rows it stands for; the graph
    keeps it; a user's transform still runs; share_constant_rows=False copies it."""
    n = 120
    data = Data(edge_index=random_graph(n, 600), num_nodes=n, pe=torch.randn(n, 4),
                eigvals=torch.arange(4.0).expand(n, 4).clone(),
                valid=torch.ones(n, 4, dtype=torch.bool))
    marked = []

    def mark(batch):
        marked.append(1)
        return batch

    for workers in (0, 2):
        loader = neighbor_loader(data, [4, 2], batch_size=30, seed=0, num_workers=workers,
                                 transform=mark)
        for batch in loader:
            for key in ("pe", "eigvals", "valid"):
                assert torch.equal(batch[key], data[key][batch.n_id]), key
            assert batch.eigvals.stride(0) == 0 and batch.valid.stride(0) == 0
            assert batch.pe.stride(0) == 4
    assert marked and "eigvals" in data and data.eigvals.stride(0) == 4
    batch = next(iter(neighbor_loader(data, [4, 2], batch_size=30, share_constant_rows=False)))
    assert batch.eigvals.stride(0) == 4
