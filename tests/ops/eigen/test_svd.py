"""The SVD of each graph's directed adjacency (graphpe.ops.eigen.svd), against DGL's
``svd_pe`` and by its symmetries."""

import numpy as np
import pytest
import scipy.linalg
import torch

from graphpe.ops.eigen.svd import svd_encoding


def dgl_svd_pe(adjacency: np.ndarray, k: int) -> np.ndarray:
    """DGL's ``svd_pe`` with ``random_flip=False`` (dmlc/dgl, python/dgl/transforms/
    functional.py, Apache License 2.0), on a dense adjacency instead of a DGLGraph."""
    n = adjacency.shape[0]
    u, d, vh = scipy.linalg.svd(adjacency)
    v = vh.transpose()
    m = min(n, k)
    topm_sqrt_d = np.diag(np.sqrt(d[0:m]))
    encoding = np.concatenate((u[:, 0:m] @ topm_sqrt_d, v[:, 0:m] @ topm_sqrt_d), axis=1)
    if n < k:
        encoding = np.concatenate([encoding, np.zeros((n, 2 * (k - n)))], axis=1)
    return encoding


def random_digraph(n, p, seed, weighted=False):
    rng = np.random.default_rng(seed)
    a = (rng.random((n, n)) < p).astype(float)
    if weighted:
        a *= rng.uniform(0.5, 2.0, (n, n))
    src, dst = np.nonzero(a)
    edge_index = torch.tensor(np.stack([src, dst]), dtype=torch.long)
    weight = torch.tensor(a[src, dst], dtype=torch.float64) if weighted else None
    return a, edge_index, weight


def simple_columns(adjacency, k, gap=1e-4):
    """Columns whose singular value is nonzero and apart from its neighbours (a unique pair
    up to sign)."""
    s = scipy.linalg.svdvals(adjacency)
    cols = []
    for j in range(min(k, len(s))):
        near = [abs(s[j] - s[i]) for i in (j - 1, j + 1) if 0 <= i < len(s)]
        if s[j] > 1e-6 * s[0] and all(x > gap * s[0] for x in near):
            cols.append(j)
    return cols


def assert_equal_up_to_pair_signs(ours, ref, k, cols):
    for j in cols:
        u, v = ours[:, j], ours[:, k + j]
        sign = 1.0 if np.dot(u, ref[:, j]) >= 0 else -1.0
        np.testing.assert_allclose(sign * u, ref[:, j], atol=1e-5)
        np.testing.assert_allclose(sign * v, ref[:, k + j], atol=1e-5)  # u, v flip together


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("weighted", [False, True])
def test_equals_dgls_svd_pe(seed, weighted):
    n, k = 12 + seed, 5
    a, edge_index, weight = random_digraph(n, 0.25, seed, weighted)
    ours = svd_encoding(edge_index, n, k, edge_weight=weight).double().numpy()
    ref = dgl_svd_pe(a, k)
    cols = simple_columns(a, k)
    assert cols, "the test needs graphs with simple singular values"
    assert_equal_up_to_pair_signs(ours, ref, k, cols)
    # past the rank the columns are 0 (DGL: sqrt of a rounding-level singular value)
    rank = np.linalg.matrix_rank(a)
    assert not ours[:, rank:k].any() and not ours[:, k + rank:].any()


def test_relabelling_the_nodes_permutes_the_rows():
    n, k = 15, 4
    a, edge_index, _ = random_digraph(n, 0.25, 3)
    cols = simple_columns(a, k)
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(0))
    inverse = torch.argsort(perm)
    ours = svd_encoding(edge_index, n, k)
    permuted = svd_encoding(inverse[edge_index], n, k)
    for j in cols:
        torch.testing.assert_close(ours[perm][:, [j, k + j]], permuted[:, [j, k + j]],
                                   atol=1e-5, rtol=0)


def test_direction_weights_duplicates_and_self_loops():
    edge_index = torch.tensor([[0, 1, 1, 2, 2], [1, 2, 2, 0, 2]])
    weight = torch.tensor([1.0, 0.5, 2.0, 3.0, 4.0])
    a = np.zeros((3, 3))
    a[0, 1], a[1, 2], a[2, 0], a[2, 2] = 1.0, 2.0, 3.0, 4.0  # duplicates: the largest weight
    ours = svd_encoding(edge_index, 3, 3, edge_weight=weight).double().numpy()
    assert_equal_up_to_pair_signs(ours, dgl_svd_pe(a, 3), 3, simple_columns(a, 3))
    # reversing every edge transposes A: U and V swap
    rev = svd_encoding(edge_index.flip(0), 3, 3, edge_weight=weight, sign="none")
    fwd = svd_encoding(edge_index, 3, 3, edge_weight=weight, sign="none")
    torch.testing.assert_close(rev[:, :3].abs(), fwd[:, 3:].abs(), atol=1e-6, rtol=0)


def test_bad_inputs_name_the_problem():
    with pytest.raises(ValueError, match="num_nodes must be non-negative, got -1"):
        svd_encoding(torch.zeros(2, 0, dtype=torch.long), -1, 2)
    with pytest.raises(ValueError, match="above max_nodes=4"):
        svd_encoding(torch.tensor([[0], [1]]), 5, 2, max_nodes=4)
