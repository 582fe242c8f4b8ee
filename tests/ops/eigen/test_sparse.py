"""Chebyshev-filtered subspace iteration against dense and ARPACK references."""

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from graphpe.ops import laplacian_eigenpairs
from graphpe.ops.eigen.sparse import ComponentBasis, chebyshev_eigenpairs, component_basis
from graphpe.ops.graph import (
    connected_components,
    laplacian_entries,
    sparse_operator,
    undirected_simple,
)
from graphpe.ops.plan import ExecPlan
from tests.conftest import nx_to_data
from tests.ops.eigen.test_eigen import assert_matches_reference, clusters


def large_families() -> dict[str, nx.Graph]:
    """Sparse-path graphs: small spectral gaps (grid, long cycle), hubs (power law), repeated
    eigenvalues (disjoint copies), many components and isolated nodes."""
    return {
        "grid30x31": nx.grid_2d_graph(30, 31),
        "cycle600": nx.cycle_graph(600),
        "ba1500": nx.barabasi_albert_graph(1500, 2, seed=0),
        "er2000": nx.gnp_random_graph(2000, 2.0 / 2000, seed=1),  # ~270 components
        "ws1000": nx.connected_watts_strogatz_graph(1000, 4, 0.1, seed=2),
        "copies": nx.disjoint_union_all([nx.petersen_graph()] * 50),
    }


def operator_of(g: nx.Graph, normalization="sym", dtype=torch.float64):
    data = nx_to_data(g)
    n = data.num_nodes
    graph = undirected_simple(data.edge_index, n)
    ei, off, diag, deg = laplacian_entries(graph, normalization, torch.float64)
    weight = torch.ones_like(deg) if normalization == "none" else deg.sqrt()
    basis = component_basis(connected_components(graph.edge_index, n), weight)
    dense = (sp.coo_matrix((off.numpy(), ei.numpy()), shape=(n, n)) + sp.diags(diag.numpy()))
    return sparse_operator(ei, off.to(dtype), n, diag.to(dtype)), basis, dense.toarray(), deg


@pytest.mark.parametrize("name", list(large_families()))
def test_matches_dense_eigh_in_float64(name):
    op, basis, dense, _ = operator_of(large_families()[name])
    k = 8
    res = chebyshev_eigenpairs(op, k, upper=2.0, deflate=basis, tol=1e-9,
                               generator=torch.Generator().manual_seed(0), max_iter=2000)
    assert res.converged and res.residuals.max() <= 1e-9
    w, v = np.linalg.eigh(dense)
    c = basis.count
    assert np.allclose(res.eigvals.numpy(), w[c : c + k], atol=1e-9)
    # eigenvectors: projector of every eigenvalue cluster the selection does not cut
    vecs = res.eigvecs.numpy()
    for lo, hi in clusters(w[c:], tol=1e-7):
        if hi > k:
            break
        ref = v[:, c + lo : c + hi]
        ours = vecs[:, lo:hi]
        assert np.abs(ref @ ref.T - ours @ ours.T).max() < 1e-5, (name, lo, hi)
    # orthonormal and orthogonal to the deflated null space
    assert np.allclose(vecs.T @ vecs, np.eye(k), atol=1e-10)
    assert np.abs(basis.dense().numpy().T @ vecs).max() < 1e-10


@pytest.mark.parametrize("name", ["grid30x31", "ba1500", "er2000"])
def test_float32_spmm_reaches_its_tolerance(name):
    op, basis, dense, _ = operator_of(large_families()[name], dtype=torch.float32)
    res = chebyshev_eigenpairs(op, 6, upper=2.0, deflate=basis, tol=1e-5,
                               generator=torch.Generator().manual_seed(1))
    assert res.converged and res.residuals.max() <= 1e-5
    w = np.linalg.eigvalsh(dense)[basis.count : basis.count + 6]
    # eigenvalue error is second order in the residual
    assert np.allclose(res.eigvals.numpy(), w, atol=1e-7)
    # the residual norms are true ones (recomputed in float64 here)
    vecs = res.eigvecs.numpy()
    true = np.linalg.norm(dense @ vecs - vecs * res.eigvals.numpy(), axis=0)
    assert true.max() <= 2e-5


def test_combinatorial_laplacian_with_gershgorin_bound():
    op, basis, dense, deg = operator_of(large_families()["ba1500"], "none")
    res = chebyshev_eigenpairs(op, 5, upper=2.0 * float(deg.max()), deflate=basis, tol=1e-8)
    w = np.linalg.eigvalsh(dense)
    assert np.allclose(res.eigvals.numpy(), w[1:6], atol=1e-7)


def test_without_deflation_finds_the_null_space_too():
    g = nx.disjoint_union(nx.cycle_graph(50), nx.path_graph(40))
    op, _, dense, _ = operator_of(g)
    res = chebyshev_eigenpairs(op, 4, upper=2.0, tol=1e-9)
    assert np.allclose(res.eigvals.numpy(), np.linalg.eigvalsh(dense)[:4], atol=1e-9)


def test_block_spanning_the_whole_space_is_exact():
    op, basis, dense, _ = operator_of(nx.petersen_graph())
    res = chebyshev_eigenpairs(op, 9, upper=2.0, deflate=basis, tol=1e-10)
    assert res.iterations <= 1 and res.converged
    assert np.allclose(res.eigvals.numpy(), np.linalg.eigvalsh(dense)[1:], atol=1e-10)


def test_not_converging_warns_and_returns_the_best_pairs():
    op, basis, _, _ = operator_of(nx.path_graph(3000))
    with pytest.warns(RuntimeWarning, match=r"chebyshev_eigenpairs: 2 iterations, largest "
                                            r"residual .* > tol 1\.0e-10"):
        res = chebyshev_eigenpairs(op, 4, upper=2.0, deflate=basis, tol=1e-10, max_iter=2)
    assert not res.converged and res.iterations == 2 and res.eigvecs.shape == (3000, 4)


def test_bad_arguments_raise():
    op, basis, _, _ = operator_of(nx.cycle_graph(20))
    with pytest.raises(ValueError, match=r"^k must be a positive int, got 0$"):
        chebyshev_eigenpairs(op, 0, upper=2.0)
    with pytest.raises(ValueError, match=r"^k=20 exceeds the 19 eigenpairs outside the "
                                         r"deflated space$"):
        chebyshev_eigenpairs(op, 20, upper=2.0, deflate=basis)
    with pytest.raises(ValueError, match=r"^block_size must be >= k, got 2 < 3$"):
        chebyshev_eigenpairs(op, 3, upper=2.0, block_size=2)
    with pytest.raises(ValueError, match=r"^degree must be >= 1, got 0$"):
        chebyshev_eigenpairs(op, 3, upper=2.0, degree=0)
    with pytest.raises(ValueError, match=r"^upper must be a positive bound of the spectrum"):
        chebyshev_eigenpairs(op, 3, upper=0.0)
    with pytest.raises(ValueError, match=r"^operator must be a square matrix, got shape"):
        chebyshev_eigenpairs(torch.zeros(3, 4).to_sparse(), 1, upper=2.0)


def test_component_basis_segment_sum_equals_dense_projection():
    g = nx.disjoint_union_all([nx.path_graph(3)] * 40 + [nx.empty_graph(30)])
    data = nx_to_data(g)
    n = data.num_nodes
    deg = torch.bincount(data.edge_index[0], minlength=n).double()
    basis = component_basis(connected_components(data.edge_index, n), deg.sqrt())
    assert basis.count == 70 > ComponentBasis.dense_max_count
    z = basis.dense()
    assert torch.allclose(z.T @ z, torch.eye(70, dtype=torch.float64))
    x = torch.randn(n, 5, dtype=torch.float64)
    assert torch.allclose(basis.project_out(x), x - z @ (z.T @ x))
    assert torch.allclose(basis.coefficients(x), z.T @ x)


@pytest.mark.parametrize("normalization", ["sym", "rw", "none"])
@pytest.mark.parametrize("keep_trivial", [False, True])
def test_laplacian_eigenpairs_sparse_paths_agree(normalization, keep_trivial):
    g = nx.disjoint_union_all([nx.connected_watts_strogatz_graph(400, 4, 0.2, seed=3),
                               nx.cycle_graph(30), nx.empty_graph(3)])
    data = nx_to_data(g)
    n, k = data.num_nodes, 7
    out = {}
    for solver in ("chebyshev", "arpack"):
        out[solver] = laplacian_eigenpairs(
            data.edge_index, n, k, normalization=normalization, keep_trivial=keep_trivial,
            dtype=torch.float64, plan=ExecPlan(dense_max_nodes=100, sparse_solver=solver))
    dense = laplacian_eigenpairs(data.edge_index, n, k, normalization=normalization,
                                 keep_trivial=keep_trivial,
                                 dtype=torch.float64, plan=ExecPlan(dense_max_nodes=4096))
    for solver, pairs in out.items():
        assert torch.allclose(pairs.eigvals, dense.eigvals, atol=1e-8), solver
        assert torch.equal(pairs.mask, dense.mask)
        # the trivial space (eigenvalue 0, dimension 5) has no unique basis: compare projectors
        # of the non-trivial columns, whose eigenvalues are simple here
        lo = 5 if keep_trivial else 0
        a, b = pairs.eigvecs[:, lo:], dense.eigvecs[:, lo:]
        assert torch.allclose(a @ a.T, b @ b.T, atol=1e-6), solver


def test_auto_falls_back_to_arpack_with_a_warning(monkeypatch):
    # (auto runs Chebyshev first on a GPU only: pretend this CPU is one)
    import graphpe.ops.eigen.tensor as eigen_tensor

    monkeypatch.setattr(eigen_tensor, "auto_sparse_solver", lambda device: "chebyshev")
    data = nx_to_data(nx.path_graph(2000))
    with pytest.warns(RuntimeWarning, match=r"graph 0 \(2000 nodes\): Chebyshev subspace "
                                            r"iteration did not converge in 3 filters"):
        pairs = laplacian_eigenpairs(data.edge_index, 2000, 3, dtype=torch.float64,
            plan=ExecPlan(dense_max_nodes=100, sparse_max_iter=3))
    # path P_n: lambda_j = 1 - cos(pi j / (n - 1)) for L_sym
    ref = 1 - np.cos(np.pi * np.arange(1, 4) / 1999)
    assert np.allclose(pairs.eigvals[0].numpy(), ref, rtol=1e-6)


def test_unknown_sparse_solver_raises():
    data = nx_to_data(nx.path_graph(5))
    with pytest.raises(ValueError, match=r"^sparse_solver must be one of \('auto', "
                                         r"'chebyshev', 'lanczos', 'shift_invert', "
                                         r"'arpack'\), got 'lobpcg'$"):
        laplacian_eigenpairs(data.edge_index, 5, 2, plan=ExecPlan(sparse_solver="lobpcg"))


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_sparse_path_matches_reference_and_is_permutation_invariant(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(60, 160))
    g = nx.gnp_random_graph(n, float(rng.uniform(1.0, 4.0)) / n, seed=seed)
    data = nx_to_data(g)
    pairs = laplacian_eigenpairs(data.edge_index, n, 5, dtype=torch.float64,
        plan=ExecPlan(dense_max_nodes=0, sparse_solver="chebyshev"))
    assert_matches_reference(data, pairs, 5)
    perm = torch.from_numpy(rng.permutation(n))
    inv = torch.empty_like(perm)
    inv[perm] = torch.arange(n)
    permuted = laplacian_eigenpairs(inv[data.edge_index], n, 5, dtype=torch.float64,
        plan=ExecPlan(dense_max_nodes=0, sparse_solver="chebyshev"))
    assert torch.allclose(permuted.eigvals, pairs.eigvals, atol=1e-8)


def test_refining_from_a_float32_block_converges_in_float64():
    op, basis, dense, _ = operator_of(large_families()["ba1500"], dtype=torch.float32)
    rough = chebyshev_eigenpairs(op, 6, upper=2.0, deflate=basis, tol=1e-4)
    assert rough.block.shape == (1500, 22)
    fine = chebyshev_eigenpairs(op.to(torch.float64), 6, upper=2.0, deflate=basis, tol=1e-9,
                                start=rough.block)
    assert fine.converged
    w = np.linalg.eigvalsh(dense)
    assert np.allclose(fine.eigvals.numpy(), w[1:7], atol=1e-9)
    with pytest.raises(ValueError, match=r"^start must be \[1500, q\], got \[10, 3\]$"):
        chebyshev_eigenpairs(op, 6, upper=2.0, start=torch.zeros(10, 3))


def test_eigenvalue_at_the_spectrum_bound_does_not_stop_the_iteration():
    # the case hypothesis found (seed 1344 of the test above): a sparse random graph with many
    # single-edge components (eigenvalue 2 = the bound of L_sym), so the block's largest Ritz
    # value sat on the bound at once and the iteration stopped unconverged
    rng = np.random.default_rng(1344)
    n = int(rng.integers(60, 160))
    g = nx.gnp_random_graph(n, float(rng.uniform(1.0, 4.0)) / n, seed=1344)
    op, basis, dense, _ = operator_of(g)
    res = chebyshev_eigenpairs(op, 5, upper=2.0, deflate=basis, tol=1e-9)
    assert res.converged and res.iterations > 0
    w = np.linalg.eigvalsh(dense)[basis.count : basis.count + 5]
    assert np.allclose(res.eigvals.numpy(), w, atol=1e-9)


def _ritz_block(name: str, p: int = 10, seed: int = 0):
    """An orthonormal block's Ritz pairs on one of the families (float64), for the filters."""
    from graphpe.ops.eigen.sparse import _orthonormal_basis, _rayleigh_ritz, _ShiftedOperator

    op, basis, dense, _ = operator_of(large_families()[name])
    gen = torch.Generator().manual_seed(seed)
    shifted = _ShiftedOperator(op, 2.0, basis)
    q = _orthonormal_basis(torch.randn(op.size(0), p, generator=gen, dtype=torch.float64),
                           basis, gen)
    theta, x, lx = _rayleigh_ritz(q, shifted.apply(q))
    return op, basis, shifted, theta, x, lx


@pytest.mark.parametrize("name", ["ba1500", "grid30x31", "er2000"])
def test_corrected_filter_equals_the_plain_filter_in_float64(name):
    # p(L) X = X p(theta) + D: the same polynomial, so the same block up to rounding
    from graphpe.ops.eigen.sparse import _chebyshev_filter, _corrected_chebyshev_filter

    _, _, shifted, theta, x, lx = _ritz_block(name)
    a, b, low = float(theta[-1]) * 0.5, 2.02, float(theta[0])
    for degree in (1, 2, 7, 16):
        plain = _chebyshev_filter(shifted, x, degree, a, b, low)
        corrected = _corrected_chebyshev_filter(shifted, x, lx - x * theta, theta, degree,
                                                a, b, low)
        scale = plain.abs().amax(dim=0)
        assert ((corrected - plain).abs().amax(dim=0) <= 1e-10 * scale).all(), degree


def test_float32_products_reach_float64_residuals_through_the_corrected_filter():
    op, basis, dense, _ = operator_of(large_families()["ba1500"])
    w = np.linalg.eigvalsh(dense)
    gen = torch.Generator().manual_seed(0)
    plain32 = chebyshev_eigenpairs(op.to(torch.float32), 6, upper=2.0, deflate=basis,
                                   tol=1e-11, max_iter=30, generator=gen, warn=False)
    assert not plain32.converged and plain32.residuals.max() > 1e-8  # float32's floor
    mixed = chebyshev_eigenpairs(op, 6, upper=2.0, deflate=basis, tol=1e-11,
                                 generator=torch.Generator().manual_seed(0),
                                 filter_dtype=torch.float32)
    assert mixed.converged and mixed.residuals.max() <= 1e-11
    assert mixed.eigvals.dtype == torch.float64
    assert np.allclose(mixed.eigvals.numpy(), w[1:7], atol=1e-11)


def test_filter_degree_warms_up_then_predicts_the_last_filter():
    from graphpe.ops.eigen.sparse import filter_degree

    theta = torch.tensor([0.9, 0.95], dtype=torch.float64)
    far = torch.tensor([0.3, 0.3], dtype=torch.float64)
    # a random start: 4, 8, 16, then the full degree (pairs this close to the cut would need
    # more than 32)
    assert [filter_degree(theta, far, 1e-8, 1.0, 2.02, 32, warm_up=i) for i in range(5)] \
        == [4, 8, 16, 32, 32]
    assert filter_degree(theta, far, 1e-8, 1.0, 2.02, 32) == 32  # a given start: no warm-up
    theta = torch.tensor([0.1, 0.2], dtype=torch.float64)
    # near convergence: the degree whose Chebyshev growth at the slowest pair covers the
    # residual's ratio to tol, with a quarter and 2 to spare, at least degree / 4
    a, b = 0.3, 2.02
    e, c = (b - a) / 2, (b + a) / 2
    t = (c - 0.2) / e
    rho = t + np.sqrt(t * t - 1)
    near = torch.tensor([1e-9, 1e-6], dtype=torch.float64)
    want = int(np.ceil(1.25 * np.log(2 * 1e-6 / 1e-8) / np.log(rho))) + 2
    assert filter_degree(theta, near, 1e-8, a, b, 64) == max(want, 16)
    assert filter_degree(theta, near, 1e-8, a, b, 8) == 8  # never above the degree
    # a wanted pair above the cut: no prediction (the filter cannot say)
    assert filter_degree(torch.tensor([0.1, 0.5], dtype=torch.float64), near, 1e-8, a, b,
                         32) == 32
