import networkx as nx
import numpy as np
import pytest
import torch

from graphpe.ops.graph import (
    batch_from_ptr,
    bucket_node_index,
    components_per_graph,
    connected_components,
    dense_adjacency,
    laplacian,
    size_buckets,
    undirected_simple,
    validate_graph,
)
from graphpe.ops.plan import ExecPlan


def test_validate_accepts_good_input():
    ei = torch.tensor([[0, 1], [1, 2]])
    validate_graph(ei, 3, torch.tensor([1.0, 0.0]), torch.tensor([0, 3]))
    validate_graph(torch.zeros(2, 0, dtype=torch.long), 0)


@pytest.mark.parametrize(
    "ei, n, w, ptr, message",
    [
        ([[0, 1], [1, 2]], 3, None, None, "edge_index must be a torch.Tensor"),
        (torch.tensor([[0.0, 1.0], [1.0, 0.0]]), 2, None, None, "integer dtype"),
        (torch.tensor([0, 1, 1]), 2, None, None, "shape [2, num_edges]"),
        (torch.tensor([[0, 1, 2]] * 3), 3, None, None, "shape [2, num_edges]"),
        (torch.tensor([[0, 3], [1, 0]]), 3, None, None, "node index 3, out of range"),
        (torch.tensor([[0, -1], [1, 0]]), 3, None, None, "node index -1, out of range"),
        (torch.tensor([[0], [1]]), -1, None, None, "num_nodes must be non-negative"),
        (torch.tensor([[0], [1]]), 2.0, None, None, "num_nodes must be an int"),
        (torch.tensor([[0], [1]]), 2, torch.tensor([float("nan")]), None, "NaN or infinite"),
        (torch.tensor([[0], [1]]), 2, torch.tensor([float("inf")]), None, "NaN or infinite"),
        (torch.tensor([[0], [1]]), 2, torch.tensor([-1.0]), None, "negative values"),
        (torch.tensor([[0], [1]]), 2, torch.tensor([1.0, 2.0]), None, "must have shape [1]"),
        (torch.tensor([[0], [1]]), 2, torch.tensor([1]), None, "floating dtype"),
        (torch.tensor([[0], [1]]), 2, None, torch.tensor([0, 1]), "end at num_nodes=2"),
        (torch.tensor([[0], [1]]), 2, None, torch.tensor([0, 2, 1, 2]), "non-decreasing"),
        (torch.tensor([[0], [1]]), 2, None, torch.tensor([0, 1, 2]), "between different graphs"),
    ],
)
def test_validate_rejects_bad_input(ei, n, w, ptr, message):
    with pytest.raises(ValueError) as err:
        validate_graph(ei, n, w, ptr)
    assert message in str(err.value)


def test_undirected_simple_symmetrizes_merges_and_drops_loops():
    ei = torch.tensor([[0, 0, 1, 2, 2, 3], [1, 1, 0, 2, 3, 3]])
    w = torch.tensor([1.0, 5.0, 2.0, 7.0, 3.0, 1.0])
    g = undirected_simple(ei, 4, w)
    dense = torch.zeros(4, 4)
    dense[g.edge_index[0], g.edge_index[1]] = g.edge_weight
    expected = torch.zeros(4, 4)
    expected[0, 1] = expected[1, 0] = 5.0  # max over duplicates and both directions
    expected[2, 3] = expected[3, 2] = 3.0
    assert torch.equal(dense, expected)
    assert g.edge_index.size(1) == 4
    unweighted = undirected_simple(torch.tensor([[0, 1, 1], [1, 0, 2]]), 3)
    assert unweighted.edge_weight is None
    assert unweighted.edge_index.tolist() == [[0, 1, 1, 2], [1, 0, 2, 1]]


def test_laplacian_matches_networkx():
    g = nx.gnp_random_graph(12, 0.4, seed=3)
    ei = torch.tensor(list(g.edges())).T
    ref = nx.normalized_laplacian_matrix(g, nodelist=range(12)).toarray()
    ours = laplacian(ei, 12, normalization="sym", dtype=torch.float64).to_dense().numpy()
    assert np.allclose(ours, ref, atol=1e-12)
    ref = nx.laplacian_matrix(g, nodelist=range(12)).toarray()
    ours = laplacian(ei, 12, normalization="none", dtype=torch.float64).to_dense().numpy()
    assert np.allclose(ours, ref)
    a = nx.to_numpy_array(g, nodelist=range(12))
    deg = a.sum(1)
    ref = np.eye(12) - a / np.where(deg > 0, deg, 1)[:, None]
    ours = laplacian(ei, 12, normalization="rw", dtype=torch.float64).to_dense().numpy()
    assert np.allclose(ours, ref)


def test_connected_components_and_counts():
    ei = torch.tensor([[0, 1, 3, 5], [1, 2, 4, 6]])
    labels = connected_components(ei, 8)
    assert labels.tolist() == [0, 0, 0, 3, 3, 5, 5, 7]
    ptr = torch.tensor([0, 3, 8])
    assert components_per_graph(labels, ptr).tolist() == [1, 3]
    assert connected_components(torch.zeros(2, 0, dtype=torch.long), 0).numel() == 0


def test_size_buckets_groups_and_excludes():
    sizes = torch.tensor([3, 0, 5, 3, 9, 4])
    buckets = size_buckets(sizes, granularity=1, max_size=8)
    assert [(b.size, b.graphs.tolist()) for b in buckets] == [(3, [0, 3]), (4, [5]), (5, [2])]
    buckets = size_buckets(sizes, granularity=4)
    assert [(b.size, b.graphs.tolist()) for b in buckets] == [(4, [0, 3, 5]), (8, [2]), (12, [4])]
    with pytest.raises(ValueError, match="granularity must be an int >= 1, got 0"):
        size_buckets(sizes, granularity=0)


def test_dense_adjacency_matches_simple_graph():
    # graph 0: 3 nodes (directed edge + duplicate + self loop), graph 1: 2 nodes, graph 2: 4 nodes
    ei = torch.tensor([[0, 0, 1, 2, 3, 5, 6], [1, 1, 1, 0, 4, 6, 7]])
    w = torch.tensor([1.0, 2.0, 9.0, 4.0, 1.5, 0.5, 3.0])
    ptr = torch.tensor([0, 3, 5, 9])
    buckets = size_buckets(ptr[1:] - ptr[:-1], granularity=4)
    blocks = dense_adjacency(ei, ptr, buckets, w, torch.float64)
    assert [b.shape for b in blocks] == [torch.Size([3, 4, 4])]
    block = blocks[0]
    for slot, g in enumerate(buckets[0].graphs.tolist()):
        s, e = int(ptr[g]), int(ptr[g + 1])
        sub = ei[:, (ei[0] >= s) & (ei[0] < e)] - s
        simple = undirected_simple(sub, e - s, w[(ei[0] >= s) & (ei[0] < e)])
        ref = torch.zeros(4, 4, dtype=torch.float64)
        ref[simple.edge_index[0], simple.edge_index[1]] = simple.edge_weight.double()
        assert torch.equal(block[slot], ref)
    node, inside = bucket_node_index(ptr, buckets[0])
    assert inside.sum() == 9 and torch.equal(node[inside], torch.arange(9))


def test_batch_from_ptr():
    assert batch_from_ptr(torch.tensor([0, 2, 2, 5])).tolist() == [0, 0, 2, 2, 2]


def test_bucket_groups_respect_the_memory_budget():
    from graphpe.ops.graph import bucket_groups

    sizes = torch.tensor([4, 4, 4, 10, 10, 3])
    buckets = size_buckets(sizes)
    groups = bucket_groups(buckets, itemsize=8, budget_bytes=8 * 130)
    flat = sorted(int(g) for group in groups for b in group for g in b.graphs)
    assert flat == list(range(6))  # every graph exactly once
    for group in groups:
        used = sum(8 * b.size**2 * b.graphs.numel() for b in group)
        assert used <= 8 * 130 or sum(b.graphs.numel() for b in group) == 1


def test_buckets_exact_for_datasets_geometric_for_batches():
    from graphpe.ops.graph import PADDING_GROWTH, bucket_growth_for, size_ladder

    assert bucket_growth_for(torch.full((1024,), 30)) is None
    assert bucket_growth_for(torch.tensor([9, 23, 38])) == PADDING_GROWTH
    assert size_ladder(40) == [1, 2, 3, 4, 5, 6, 7, 8, 10, 13, 17, 22, 28, 35, 44]
    sizes = torch.arange(1, 400)
    buckets = size_buckets(sizes, growth=PADDING_GROWTH)
    for bucket in buckets:  # padding never more than 1.25x the nodes (1.95x an n^3 solve)
        assert bool((bucket.size < PADDING_GROWTH * sizes[bucket.graphs]).all())
    assert len(buckets) <= 30
    with pytest.raises(ValueError, match="growth must be > 1, got 1.0"):
        size_buckets(sizes, growth=1.0)


def test_coarse_buckets_give_the_exact_bucket_results(families):
    from torch_geometric.data import Batch

    from graphpe.ops import laplacian_eigenpairs, random_walk_landing_probs

    batch = Batch.from_data_list(list(families.values()))
    args = (batch.edge_index, batch.num_nodes)
    for granularity in (1, 8):
        coarse = random_walk_landing_probs(*args, 8, ptr=batch.ptr)
        exact = random_walk_landing_probs(*args, 8, ptr=batch.ptr,
            plan=ExecPlan(bucket_granularity=1))
        assert torch.allclose(coarse, exact, atol=1e-6)
        coarse = laplacian_eigenpairs(*args, 5, ptr=batch.ptr,
            plan=ExecPlan(bucket_granularity=granularity))
        exact = laplacian_eigenpairs(*args, 5, ptr=batch.ptr, plan=ExecPlan(bucket_granularity=1))
        assert torch.allclose(coarse.eigvals, exact.eigvals, atol=1e-6)
        assert torch.equal(coarse.mask, exact.mask)
