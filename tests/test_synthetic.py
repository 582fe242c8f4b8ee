"""The generated stand-ins for large real graphs have the shape their docstrings promise."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from graphpe.synthetic import coauthor_like_graph, road_like_graph, social_like_graph


def _shape(data):
    n = data.num_nodes
    ei = data.edge_index.numpy()
    adj = sp.csr_matrix((np.ones(ei.shape[1]), (ei[0], ei[1])), shape=(n, n))
    assert (adj != adj.T).nnz == 0 and adj.diagonal().sum() == 0 and adj.max() == 1
    deg = np.asarray(adj.sum(1)).ravel()
    count, labels = connected_components(adj)
    return n, deg, count, np.bincount(labels).max()


def test_road_like_graph_is_one_sparse_component():
    n, deg, count, _ = _shape(road_like_graph(2_000, seed=1))
    assert count == 1 and 1.9 < deg.mean() < 2.4 and deg.max() <= 8 and n > 2_000


def test_social_like_graph_has_hubs_and_a_giant_component():
    n, deg, _, giant = _shape(social_like_graph(5_000, seed=1))
    assert n == 5_000 and giant > 0.8 * n and deg.max() > 20 * deg.mean()


def test_coauthor_like_graph_has_many_components():
    n, deg, count, _ = _shape(coauthor_like_graph(5_000, seed=1))
    assert n == 5_000 and count > 100 and deg.max() > 50


@pytest.mark.parametrize("make", [road_like_graph, social_like_graph, coauthor_like_graph])
def test_stand_ins_are_seeded(make):
    a, b = make(1_000, seed=3), make(1_000, seed=3)
    assert a.num_nodes == b.num_nodes and bool((a.edge_index == b.edge_index).all())
