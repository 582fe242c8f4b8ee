"""The minimum degree ordering and the exact analysis of a Cholesky factor against elimination
done by hand on dense boolean patterns, and the budgets that stop them."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from graphpe.ops.eigen.ordering import (
    cholesky_column_counts,
    dense_degree,
    minimum_degree_order,
    symbolic_cholesky,
)


def pattern(n: int, pairs) -> sp.csr_matrix:
    """The symmetric CSR pattern of an undirected graph (diagonal stored, as a Laplacian's)."""
    rows = [i for i, j in pairs] + [j for i, j in pairs] + list(range(n))
    cols = [j for i, j in pairs] + [i for i, j in pairs] + list(range(n))
    m = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n))
    m.sum_duplicates()
    return m


def eliminated_counts(m: sp.csr_matrix, perm: np.ndarray) -> np.ndarray:
    """Column counts below the diagonal by eliminating the dense boolean pattern in order:
    each eliminated node joins its later neighbours into a clique."""
    b = m.toarray()[np.ix_(perm, perm)] != 0
    n = b.shape[0]
    counts = np.zeros(n, dtype=np.int64)
    for j in range(n):
        later = np.flatnonzero(b[j + 1 :, j]) + j + 1
        counts[j] = later.size
        b[np.ix_(later, later)] = True
    return counts


def grid(side: int) -> sp.csr_matrix:
    idx = np.arange(side * side).reshape(side, side)
    pairs = list(zip(idx[:, :-1].ravel(), idx[:, 1:].ravel(), strict=True))
    pairs += list(zip(idx[:-1].ravel(), idx[1:].ravel(), strict=True))
    return pattern(side * side, pairs)


graphs = st.integers(1, 40).flatmap(lambda n: st.tuples(
    st.just(n),
    st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=4 * n)))


@settings(max_examples=150, deadline=None)
@given(graphs)
def test_counts_equal_elimination_by_hand(graph):
    n, pairs = graph
    m = pattern(n, [(i, j) for i, j in pairs if i != j])
    symbolic = symbolic_cholesky(m.indptr, m.indices)
    assert np.array_equal(np.sort(symbolic.perm), np.arange(n))
    assert symbolic.complete
    want = eliminated_counts(m, symbolic.perm)
    assert np.array_equal(symbolic.column_counts, want)
    assert symbolic.nnz == n + want.sum()
    assert symbolic.flops == pytest.approx(float((want * (want + 3) / 2).sum()))
    # any other order is counted exactly too
    other = np.random.default_rng(n).permutation(n)
    counts, total, complete = cholesky_column_counts(m.indptr, m.indices, other)
    assert complete and total == counts.sum()
    assert np.array_equal(counts, eliminated_counts(m, other))


def test_minimum_degree_fills_a_grid_far_less_than_its_natural_order():
    m = grid(30)
    natural = cholesky_column_counts(m.indptr, m.indices, np.arange(900))[1]
    ordered = symbolic_cholesky(m.indptr, m.indices)
    assert ordered.nnz - 900 < 0.5 * natural


def test_leaves_and_paths_are_eliminated_without_fill():
    # a path and a tree: a perfect elimination order exists, minimum degree finds it
    path = pattern(50, [(i, i + 1) for i in range(49)])
    tree = pattern(63, [(i, (i - 1) // 2) for i in range(1, 63)])
    for m in (path, tree):
        s = symbolic_cholesky(m.indptr, m.indices)
        assert s.nnz - m.shape[0] == (m.nnz - m.shape[0]) // 2  # no entry beyond A's


def test_hubs_are_ordered_last_and_isolated_nodes_are_kept():
    n = 400  # a star: the centre's degree exceeds the dense threshold
    assert n - 1 > dense_degree(n)
    m = pattern(n + 2, [(0, i) for i in range(1, n)])  # nodes n and n + 1 are isolated
    perm, complete, _ = minimum_degree_order(m.indptr, m.indices)
    assert complete and perm[-1] == 0
    assert np.array_equal(np.sort(perm), np.arange(n + 2))
    counts, total, _ = cholesky_column_counts(m.indptr, m.indices, perm)
    assert total == n - 1  # every leaf: one entry, in the centre's row


def test_budgets_stop_the_analysis():
    m = grid(30)
    full = symbolic_cholesky(m.indptr, m.indices)
    fill = int(full.column_counts.sum())
    perm, complete, work = minimum_degree_order(m.indptr, m.indices)
    assert complete and work > 0
    assert not minimum_degree_order(m.indptr, m.indices, max_fill=fill // 10)[1]
    assert not minimum_degree_order(m.indptr, m.indices, max_work=work // 10)[1]
    assert not minimum_degree_order(m.indptr, m.indices, max_flops=full.flops / 10)[1]
    counts, total, complete = cholesky_column_counts(m.indptr, m.indices, perm, fill // 10)
    assert not complete and fill // 10 < total < fill
    partial = symbolic_cholesky(m.indptr, m.indices, max_fill=fill // 10)
    assert not partial.complete and partial.nnz < full.nnz


def _laplacian_pattern(graph) -> sp.csr_matrix:
    n = int(graph.num_nodes)
    row, col = graph.edge_index.numpy()
    return pattern(n, list(zip(row.tolist(), col.tolist(), strict=True)))


def test_projected_work_stops_hub_heavy_orderings_early():
    """A hub-heavy graph's ordering stops once its work so far, over the share of nodes
    eliminated, passes twice the budget: before the budget itself. Graphs whose ordering
    fits the budget (a grid, a co-authorship graph) still finish within it exactly."""
    from graphpe.ops.eigen.ordering import PROJECTED_WORK_MARGIN
    from graphpe.synthetic import coauthor_like_graph, social_like_graph

    hubs = _laplacian_pattern(social_like_graph(5000, seed=0))
    _, complete, total = minimum_degree_order(hubs.indptr, hubs.indices)
    assert complete
    budget = total // 8
    _, complete, work = minimum_degree_order(hubs.indptr, hubs.indices, max_work=budget)
    assert not complete and work < 0.8 * budget
    assert PROJECTED_WORK_MARGIN == 2.0
    for m in (grid(30), _laplacian_pattern(coauthor_like_graph(2000, seed=0))):
        _, complete, total = minimum_degree_order(m.indptr, m.indices)
        assert minimum_degree_order(m.indptr, m.indices, max_work=total)[1:] == (True, total)
