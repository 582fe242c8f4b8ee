"""graphpe.ops.distributed.partition: the row partition, the halo exchange and the
distributed product against the whole graph's, on 2 gloo ranks."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from graphpe.ops.distributed import (
    all_sum,
    connected_labels,
    halo_exchange,
    laplacian_operator,
    local_rows,
    row_partition,
)
from graphpe.ops.graph import laplacian_entries, undirected_simple
from graphpe.ops.host import simple_csr
from tests.ops.distributed.graphs import two_components
from tests.ops.distributed.spawn import run_ranks


def _products(rank: int, world: int) -> dict:
    graph = two_components(weighted=True)
    n = graph.num_nodes
    part = row_partition(n, world, rank)
    rows = local_rows(simple_csr(graph.edge_index, n, graph.edge_weight), part)
    exchange = halo_exchange(rows)
    op, _ = laplacian_operator(rows, exchange)
    x = np.random.default_rng(1).standard_normal((n, 3))
    exchange.reset_counts()
    y = op.matvec(x[part.lo : part.hi])
    y_torch = op.matmul(torch.from_numpy(x[part.lo : part.hi]))
    return {"lo": part.lo, "hi": part.hi, "y": y, "y_torch": y_torch.numpy(),
            "halo": exchange.halo, "sent": exchange.values_sent, "calls": exchange.calls,
            "labels": connected_labels(rows, exchange),
            "total": all_sum(np.array([rank + 1.0]))}


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    return run_ranks(_products, 2, tmp_path_factory.mktemp("partition"))


def _laplacian(graph) -> sp.csr_matrix:
    n = graph.num_nodes
    ei, off, diag, _ = laplacian_entries(undirected_simple(graph.edge_index, n,
                                                           graph.edge_weight), "sym",
                                         torch.float64)
    return (sp.coo_matrix((off.numpy(), ei.numpy()), shape=(n, n))
            + sp.diags(diag.numpy())).tocsr()


def test_the_rows_are_contiguous_balanced_blocks(ranks):
    assert [(r["lo"], r["hi"]) for r in ranks] == [(0, 63), (63, 127)]


def test_the_halo_product_equals_the_whole_graphs_product(ranks):
    graph = two_components(weighted=True)
    x = np.random.default_rng(1).standard_normal((graph.num_nodes, 3))
    want = _laplacian(graph) @ x
    got = np.concatenate([r["y"] for r in ranks])
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-13)
    np.testing.assert_allclose(np.concatenate([r["y_torch"] for r in ranks]), want, atol=1e-13)


def test_a_product_sends_exactly_the_halo_rows(ranks):
    graph = two_components(weighted=True)
    lap = _laplacian(graph).tocoo()
    for me, other in ((0, 1), (1, 0)):
        lo, hi = ranks[me]["lo"], ranks[me]["hi"]
        inside = (lap.row >= lo) & (lap.row < hi)
        cols = np.unique(lap.col[inside])
        np.testing.assert_array_equal(ranks[me]["halo"], cols[(cols < lo) | (cols >= hi)])
        # what each rank sent, in two products of 3 columns, is the other rank's halo
        assert ranks[other]["sent"] == 2 * 3 * ranks[me]["halo"].size
    assert [r["calls"] for r in ranks] == [2, 2]


def test_components_are_labelled_by_their_smallest_node(ranks):
    labels = np.concatenate([r["labels"] for r in ranks])
    np.testing.assert_array_equal(labels, [0] * 120 + [120] * 7)
    assert [float(r["total"][0]) for r in ranks] == [3.0, 3.0]


def test_the_bandwidth_order_narrows_a_shuffled_paths_band():
    from graphpe.ops.distributed.partition import bandwidth_order

    n = 50
    shuffle = np.random.default_rng(0).permutation(n)
    src, dst = shuffle[:-1], shuffle[1:]  # a path through the nodes in shuffled order, one
    pattern = sp.csr_matrix((np.ones(n - 1), (src, dst)), shape=(n, n))  # direction only
    order = bandwidth_order(pattern.indptr, pattern.indices, n)
    assert np.array_equal(np.sort(order), np.arange(n))
    row_of = np.empty(n, dtype=np.int64)
    row_of[order] = np.arange(n)
    assert np.abs(row_of[src] - row_of[dst]).max() == 1  # the path, in a row
    assert np.abs(src - dst).max() > 1
    # an isolated node and a second component keep every node
    pattern = sp.csr_matrix(([1.0, 1.0], ([0, 3], [1, 4])), shape=(6, 6))
    assert sorted(bandwidth_order(pattern.indptr, pattern.indices, 6)) == list(range(6))


def test_a_reordered_partition_names_its_rows_input_nodes():
    order = np.array([4, 2, 0, 1, 3])
    part = row_partition(5, 2, 1, order)
    assert (part.lo, part.hi) == (2, 5)
    assert part.nodes.tolist() == [0, 1, 3] and part.input_ids().tolist() == [0, 1, 3]
    assert row_partition(5, 2, 1).input_ids().tolist() == [2, 3, 4]
    with pytest.raises(ValueError, match=r"^order has 4 entries for a graph of 5 nodes$"):
        row_partition(5, 2, 0, order[:4])


def test_a_partition_needs_a_node_per_rank():
    with pytest.raises(ValueError, match=r"^cannot partition a graph of 3 nodes over 4 ranks: "
                                         r"every rank needs at least one node$"):
        row_partition(3, 4, 0)
