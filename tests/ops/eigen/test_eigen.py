import networkx as nx
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch_geometric.data import Batch

from graphpe.ops import laplacian_eigenpairs
from graphpe.ops.eigen import canonical_signs
from graphpe.ops.plan import ExecPlan


def dense_reference(data, normalization="sym"):
    """numpy eigh of the Laplacian built independently (float64)."""
    n = data.num_nodes
    a = np.zeros((n, n))
    ei = data.edge_index.numpy()
    a[ei[0], ei[1]] = 1.0
    a = np.maximum(a, a.T)
    np.fill_diagonal(a, 0)
    deg = a.sum(1)
    if normalization == "none":
        lap = np.diag(deg) - a
    else:
        dis = np.where(deg > 0, 1 / np.sqrt(np.where(deg > 0, deg, 1)), 0)
        lap = np.diag((deg > 0).astype(float)) - dis[:, None] * a * dis[None, :]
    w, v = np.linalg.eigh(lap)
    comps = nx.number_connected_components(nx.from_numpy_array(a)) if n else 0
    return w, v, comps, a


def clusters(values, tol=1e-6):
    """Index ranges of eigenvalues equal within tol."""
    out, start = [], 0
    for i in range(1, len(values) + 1):
        if i == len(values) or values[i] - values[i - 1] > tol:
            out.append((start, i))
            start = i
    return out


def assert_matches_reference(data, pairs, k, keep_trivial=False, row_offset=0, graph=0):
    w, v, comps, _ = dense_reference(data)
    n = data.num_nodes
    skip = 0 if keep_trivial else comps
    m = max(0, min(k, n - skip))
    vals = pairs.eigvals[graph].double().numpy()
    vecs = pairs.eigvecs[row_offset : row_offset + n].double().numpy()
    mask = pairs.mask[graph].numpy()
    assert mask.tolist() == [True] * m + [False] * (k - m)
    assert np.allclose(vals[:m], w[skip : skip + m], atol=1e-5)
    assert np.all(vals[m:] == 0) and np.all(vecs[:, m:] == 0)
    for lo, hi in clusters(w):
        if lo < skip or hi > skip + m:
            continue  # a cluster cut by the selection has no well-defined projector
        p_ref = v[:, lo:hi] @ v[:, lo:hi].T
        ours = vecs[:, lo - skip : hi - skip]
        assert np.abs(p_ref - ours @ ours.T).max() < 1e-4


@pytest.mark.parametrize("k", [1, 3, 8, 20])
def test_matches_numpy_on_graph_families(families, k):
    for name, data in families.items():
        pairs = laplacian_eigenpairs(data.edge_index, data.num_nodes, k)
        try:
            assert_matches_reference(data, pairs, k)
        except AssertionError as err:
            raise AssertionError(f"{name}: {err}") from err


def test_keep_trivial(families):
    for data in families.values():
        pairs = laplacian_eigenpairs(data.edge_index, data.num_nodes, 5, keep_trivial=True)
        assert_matches_reference(data, pairs, 5, keep_trivial=True)


@pytest.mark.parametrize("dense_max_nodes", [2048, 10, 0])
def test_batch_equals_per_graph(families, dense_max_nodes):
    graphs = list(families.values())
    batch = Batch.from_data_list(graphs)
    k = 6
    pairs = laplacian_eigenpairs(
        batch.edge_index, batch.num_nodes, k, ptr=batch.ptr,
            plan=ExecPlan(dense_max_nodes=dense_max_nodes)
    )
    assert pairs.eigvals.shape == (len(graphs), k) and pairs.eigvecs.shape == (batch.num_nodes, k)
    for g, data in enumerate(graphs):
        assert_matches_reference(data, pairs, k, row_offset=int(batch.ptr[g]), graph=g)
        single = laplacian_eigenpairs(data.edge_index, data.num_nodes, k)
        assert torch.allclose(single.eigvals, pairs.eigvals[g : g + 1], atol=1e-6)
        assert torch.equal(single.mask, pairs.mask[g : g + 1])


def test_simple_spectrum_batch_equals_per_graph_exactly_up_to_rounding():
    graphs = [nx.gnp_random_graph(n, 0.3, seed=n) for n in (8, 13, 21, 30)]
    from tests.conftest import nx_to_data

    data = [nx_to_data(g) for g in graphs]
    batch = Batch.from_data_list(data)
    pairs = laplacian_eigenpairs(batch.edge_index, batch.num_nodes, 4, ptr=batch.ptr)
    for g, d in enumerate(data):
        w = np.linalg.eigvalsh(nx.normalized_laplacian_matrix(graphs[g]).toarray())
        if np.min(np.diff(w)) < 1e-4:
            continue
        single = laplacian_eigenpairs(d.edge_index, d.num_nodes, 4)
        rows = slice(int(batch.ptr[g]), int(batch.ptr[g + 1]))
        assert torch.allclose(single.eigvecs, pairs.eigvecs[rows], atol=1e-5)


@pytest.mark.parametrize("normalization", ["rw", "none"])
def test_other_normalizations(families, normalization):
    for name, data in families.items():
        n = data.num_nodes
        pairs = laplacian_eigenpairs(
            data.edge_index, n, 4, normalization=normalization,
            dtype=torch.float64, plan=ExecPlan(compute_dtype=torch.float64)
        )
        w, _, comps, a = dense_reference(data, "none" if normalization == "none" else "sym")
        m = max(0, min(4, n - comps))
        assert np.allclose(pairs.eigvals[0, :m].numpy(), w[comps : comps + m], atol=1e-8), name
        deg = a.sum(1)
        if normalization == "none":
            op = np.diag(deg) - a
        else:
            op = np.eye(n) * (deg > 0) - a / np.where(deg > 0, deg, 1)[:, None]
        vecs = pairs.eigvecs.numpy()[:, :m]
        resid = op @ vecs - vecs * pairs.eigvals[0, :m].numpy()
        assert np.abs(resid).max(initial=0.0) < 1e-8, name
        assert np.allclose(np.linalg.norm(vecs, axis=0), 1.0), name


def test_sparse_path_large_graph():
    g = nx.connected_watts_strogatz_graph(300, 6, 0.2, seed=1)
    from tests.conftest import nx_to_data

    data = nx_to_data(g)
    dense = laplacian_eigenpairs(data.edge_index, 300, 5)
    sparse = laplacian_eigenpairs(data.edge_index, 300, 5, plan=ExecPlan(dense_max_nodes=100))
    assert torch.allclose(dense.eigvals, sparse.eigvals, atol=1e-5)
    assert torch.allclose(dense.eigvecs, sparse.eigvecs, atol=1e-4)


def test_deterministic_and_random_signs(families):
    data = families["er23"]
    a = laplacian_eigenpairs(data.edge_index, data.num_nodes, 6)
    b = laplacian_eigenpairs(data.edge_index, data.num_nodes, 6)
    assert torch.equal(a.eigvecs, b.eigvecs) and torch.equal(a.eigvals, b.eigvals)
    gen = lambda: torch.Generator().manual_seed(7)  # noqa: E731
    r1 = laplacian_eigenpairs(data.edge_index, data.num_nodes, 6, sign="random", generator=gen())
    r2 = laplacian_eigenpairs(data.edge_index, data.num_nodes, 6, sign="random", generator=gen())
    assert torch.equal(r1.eigvecs, r2.eigvecs)
    ratio = (r1.eigvecs / a.eigvecs).nan_to_num(0.0)
    flips = ratio[ratio.abs().amax(1) > 0].round()
    assert torch.all((flips == 1) | (flips == -1) | (flips == 0))


def test_empty_graph_and_bad_arguments():
    empty = torch.zeros(2, 0, dtype=torch.long)
    pairs = laplacian_eigenpairs(empty, 0, 4)
    assert pairs.eigvecs.shape == (0, 4) and pairs.eigvals.shape == (1, 4)
    assert not pairs.mask.any()
    with pytest.raises(ValueError, match="k must be a positive int"):
        laplacian_eigenpairs(empty, 3, 0)
    with pytest.raises(ValueError, match="normalization must be one of"):
        laplacian_eigenpairs(empty, 3, 2, normalization="foo")
    with pytest.raises(ValueError, match="sign must be one of"):
        laplacian_eigenpairs(empty, 3, 2, sign="foo")
    with pytest.raises(ValueError, match="negative values"):
        laplacian_eigenpairs(torch.tensor([[0], [1]]), 2, 1, edge_weight=torch.tensor([-1.0]))


def test_no_nan_on_isolated_nodes():
    ei = torch.tensor([[0, 1], [1, 0]])
    pairs = laplacian_eigenpairs(ei, 5, 4)
    assert torch.isfinite(pairs.eigvecs).all() and torch.isfinite(pairs.eigvals).all()
    assert pairs.mask.sum() == 1  # 5 nodes, 4 components -> one non-trivial pair
    assert torch.all(pairs.eigvecs[2:] == 0)


def test_canonical_signs_rule():
    v = torch.tensor([[[0.1, 0.5], [-0.9, 0.5], [0.3, -0.5], [0.3, -0.5]]])
    s = canonical_signs(v)
    # column 0: sum of cubes < 0 -> flip; column 1: cubes cancel -> largest |v| first (+0.5)
    assert s.tolist() == [[[-1.0, 1.0]]]


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(6, 30))
def test_canonical_signs_do_not_depend_on_node_order(seed, n):
    g = nx.gnp_random_graph(n, 0.35, seed=seed)
    ei = torch.tensor(list(g.edges()), dtype=torch.long).reshape(-1, 2).T
    k = 4
    base = laplacian_eigenpairs(ei, n, k, dtype=torch.float64)
    perm = torch.from_numpy(np.random.default_rng(seed).permutation(n))
    inv = torch.argsort(perm)
    permuted = laplacian_eigenpairs(inv[ei], n, k, dtype=torch.float64)
    # node i of the original graph is node inv[i] of the permuted one
    vals = base.eigvals[0].numpy()
    w = np.linalg.eigvalsh(nx.normalized_laplacian_matrix(g, nodelist=range(n)).toarray())
    for j in range(int(base.mask.sum())):
        gaps = np.abs(w - vals[j])
        simple = np.sort(gaps)[1] > 1e-4
        v = base.eigvecs[:, j]
        decisive = abs(float(v.pow(3).sum())) > 1e-3 * float(v.abs().max()) ** 3
        if simple and decisive:
            assert torch.allclose(permuted.eigvecs[inv, j], v, atol=1e-6)


@pytest.mark.parametrize("keep_trivial", [False, True])
def test_sparse_path_many_components(keep_trivial):
    from tests.conftest import nx_to_data

    g = nx.connected_watts_strogatz_graph(150, 4, 0.2, seed=3)
    for i in range(12):
        g = nx.disjoint_union(g, nx.path_graph(2 + i % 4))
    g = nx.disjoint_union(g, nx.empty_graph(3))
    data = nx_to_data(g)
    k = 20
    pairs = laplacian_eigenpairs(data.edge_index, data.num_nodes, k,
                                 keep_trivial=keep_trivial, plan=ExecPlan(dense_max_nodes=100))
    w, _, comps, _ = dense_reference(data)
    skip = 0 if keep_trivial else comps
    assert np.allclose(pairs.eigvals[0].numpy(), w[skip : skip + k], atol=1e-5)
    if not keep_trivial:
        assert_matches_reference(data, pairs, k)
    vecs = pairs.eigvecs.double()
    assert torch.allclose(vecs.T @ vecs, torch.eye(k, dtype=torch.float64), atol=1e-5)


def test_sparse_path_small_spectral_gaps():
    # a long path: the smallest eigenvalues crowd near 0, where plain Lanczos stalls
    from tests.conftest import nx_to_data

    data = nx_to_data(nx.path_graph(400))
    pairs = laplacian_eigenpairs(data.edge_index, 400, 4, plan=ExecPlan(dense_max_nodes=50))
    assert_matches_reference(data, pairs, 4)


@pytest.mark.parametrize("normalization", ["rw", "none"])
def test_sparse_path_other_normalizations(normalization):
    from tests.conftest import nx_to_data

    g = nx.disjoint_union(nx.connected_watts_strogatz_graph(120, 4, 0.3, seed=5),
                          nx.path_graph(7))
    data = nx_to_data(g)
    kw = dict(normalization=normalization, dtype=torch.float64)
    dense = laplacian_eigenpairs(data.edge_index, data.num_nodes, 6, **kw)
    sparse = laplacian_eigenpairs(data.edge_index, data.num_nodes, 6, **kw,
        plan=ExecPlan(dense_max_nodes=50))
    assert torch.allclose(sparse.eigvals, dense.eigvals, atol=1e-8)
    # same eigenspaces: every sparse vector is an eigenvector for its eigenvalue
    a = torch.from_numpy(nx.to_numpy_array(g, nodelist=range(g.number_of_nodes())))
    deg = a.sum(1)
    op = torch.diag(deg) - a if normalization == "none" else torch.eye(len(deg)) - a / deg[:, None]
    resid = op @ sparse.eigvecs - sparse.eigvecs * sparse.eigvals[0]
    assert resid.abs().max() < 1e-7


def test_memory_bounded_groups_give_the_same_result(families):
    graphs = list(families.values())
    batch = Batch.from_data_list(graphs)
    full = laplacian_eigenpairs(batch.edge_index, batch.num_nodes, 5, ptr=batch.ptr)
    small = laplacian_eigenpairs(batch.edge_index, batch.num_nodes, 5, ptr=batch.ptr,
        plan=ExecPlan(max_dense_bytes=4000))
    assert torch.equal(full.eigvals, small.eigvals) and torch.equal(full.mask, small.mask)
    assert torch.allclose(full.eigvecs, small.eigvecs, atol=1e-6)
