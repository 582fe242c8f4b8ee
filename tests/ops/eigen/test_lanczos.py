"""Thick-restart Lanczos with partial reorthogonalization against dense eigh and scipy's
ARPACK, its breakdown, budget and argument handling."""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from hypothesis import given, settings
from hypothesis import strategies as st

from graphpe.ops.eigen.lanczos import (
    EPS,
    MIN_REORTH_THRESHOLD,
    SEMI_ORTHOGONAL,
    default_keep,
    default_ncv,
    normalized_pattern,
    pattern_product_dot,
    reorth_threshold,
    thick_restart_lanczos,
)
from tests.ops.eigen.test_eigen import clusters
from tests.ops.eigen.test_krylov import giant_component


def _null(name: str) -> np.ndarray:
    return np.ascontiguousarray(giant_component(name)[1].dense().numpy())


@pytest.mark.parametrize("name", ["road", "social", "coauthor"])
def test_smallest_pairs_match_dense_eigh(name):
    sub, _, _, w, v = giant_component(name)
    k, tol = 10, 1e-10
    res = thick_restart_lanczos(lambda x: sub @ x, sub.shape[0], k, null=_null(name), tol=tol,
                                norm_bound=2.0)
    assert res.converged
    assert np.allclose(res.values, w[1 : k + 1], atol=1e-10)
    x = res.vectors
    true = np.linalg.norm(sub @ x - x * res.values, axis=0)
    # the estimates are the true residuals: reorthogonalization keeps the floor below tol
    assert true.max() <= tol
    assert np.allclose(res.estimates, true, atol=tol / 10)
    assert np.abs(x.T @ x - np.eye(k)).max() < 1e-9
    assert np.abs(_null(name).T @ x).max() < 1e-12
    for lo, hi in clusters(w[1:], tol=1e-7):
        if hi > k:
            break
        ref, ours = v[:, 1 + lo : 1 + hi], x[:, lo:hi]
        assert np.abs(ref @ ref.T - ours @ ours.T).max() < 1e-7, (lo, hi)


@pytest.mark.parametrize("name", ["road", "social", "coauthor"])
@pytest.mark.parametrize("deflated", [True, False])
@pytest.mark.parametrize("index", [np.int32, np.int64])
@pytest.mark.parametrize("product", ["pattern", "csr"])
def test_the_fused_step_equals_the_numpy_step(name, deflated, index, product):
    """The compiled step (the operator given as a CSR matrix) runs the numpy step's
    arithmetic summed in another order: the same pairs to rounding, the same product count
    or nearly, and it restarts (the coupling to the kept Ritz vectors). ``pattern``: the
    normalized Laplacian, multiplied from its pattern; ``csr``: twice it, from its values."""
    sub, _, _, w, _ = giant_component(name)
    if product == "csr":
        sub, w = 2.0 * sub, 2.0 * w
    assert (normalized_pattern(sub) is not None) == (product == "pattern")
    csr = sub.copy()
    csr.indices, csr.indptr = sub.indices.astype(index), sub.indptr.astype(index)
    null = _null(name) if deflated else None
    k, tol = 6, 1e-10
    # without the null space 0 is the smallest eigenvalue, found as a Ritz pair like the rest
    want = w[1 : k + 1] if deflated else w[:k]
    bound = 2.0 if product == "pattern" else 4.0
    numpy_step = thick_restart_lanczos(lambda x: sub @ x, sub.shape[0], k, null=null,
                                       tol=tol, norm_bound=bound, ncv=24)
    fused = thick_restart_lanczos(csr, sub.shape[0], k, null=null, tol=tol, norm_bound=bound,
                                  ncv=24)
    assert fused.converged and fused.restarts > 0
    assert abs(fused.products - numpy_step.products) <= 0.1 * numpy_step.products
    assert np.allclose(fused.values, want, atol=1e-10)
    assert np.allclose(fused.values, numpy_step.values, atol=1e-11)
    x = fused.vectors
    assert np.linalg.norm(sub @ x - x * fused.values, axis=0).max() <= tol
    assert np.abs(x.T @ x - np.eye(k)).max() < 1e-9
    if deflated:
        assert np.abs(null.T @ x).max() < 1e-12


def _normalized_laplacian(edges: np.ndarray, n: int) -> sp.csr_matrix:
    adj = sp.csr_matrix((np.ones(edges.shape[1]), (edges[0], edges[1])), shape=(n, n))
    adj = ((adj + adj.T) > 0).astype(np.float64)
    s = np.asarray(adj.sum(axis=1)).ravel() ** -0.5
    return (sp.identity(n, format="csr") - sp.diags(s) @ adj @ sp.diags(s)).tocsr()


def test_normalized_pattern_multiplies_as_the_csr_matrix():
    """Recognized: ``I - D^-1/2 A D^-1/2`` of an unweighted graph, in any row order and with
    unsorted indices; its pattern product equals the CSR product to rounding and returns
    ``x^T L x``."""
    rng = np.random.default_rng(0)
    n = 300
    edges = np.vstack([np.arange(n), (np.arange(n) + 1) % n])  # a cycle keeps degrees >= 2
    edges = np.hstack([edges, rng.integers(0, n, (2, 900))])
    edges = edges[:, edges[0] != edges[1]]
    lap = _normalized_laplacian(edges, n)
    order = rng.permutation(n)
    lap = lap[order][:, order].tocsr()
    lap.has_sorted_indices = False  # fancy indexing may leave rows unsorted: still recognized
    indptr, indices, scale = normalized_pattern(lap)
    assert indices.size == lap.nnz - n and np.allclose(scale, np.diff(indptr) ** -0.5)
    x = rng.standard_normal(n)
    out, work = np.empty(n), np.empty(n)
    acc = pattern_product_dot(indptr.view(np.uint32), indices.view(np.uint32), scale, x, work,
                              out)
    assert np.allclose(out, lap @ x, rtol=0, atol=1e-14)
    assert np.isclose(acc, x @ (lap @ x), rtol=1e-13)


def test_normalized_pattern_refuses_other_operators():
    """Weighted edges, a shifted or scaled diagonal, an isolated node, float32: None (the
    CSR product runs)."""
    edges = np.array([[0, 1, 2, 3], [1, 2, 3, 0]])
    lap = _normalized_laplacian(edges, 4)
    assert normalized_pattern(lap) is not None
    weighted = lap.copy()
    weighted.data[weighted.data < 0] *= np.linspace(0.5, 1.0, int((weighted.data < 0).sum()))
    assert normalized_pattern(weighted) is None
    assert normalized_pattern((lap - 0.1 * sp.identity(4)).tocsr()) is None
    assert normalized_pattern((2.0 * lap).tocsr()) is None
    assert normalized_pattern(lap.astype(np.float32)) is None
    isolated = sp.block_diag([lap, sp.csr_matrix(np.ones((1, 1)))], format="csr")
    assert normalized_pattern(isolated) is None


def test_an_operator_the_fused_step_does_not_cover_runs_the_numpy_step():
    """A float32 matrix, two null columns: the matrix is multiplied by ``@``."""
    sub, _, _, w, _ = giant_component("social")
    res = thick_restart_lanczos(sub.astype(np.float32), sub.shape[0], 4, null=_null("social"),
                                tol=1e-5, norm_bound=2.0)
    assert res.converged and np.allclose(res.values, w[1:5], atol=1e-5)
    two = np.linalg.qr(np.column_stack([_null("social")[:, 0], np.ones(sub.shape[0])]))[0]
    res = thick_restart_lanczos(sub, sub.shape[0], 2, null=two, tol=1e-9, norm_bound=2.0)
    assert res.converged


def test_largest_pairs_match_arpack_on_an_indefinite_matrix():
    rng = np.random.default_rng(0)
    a = sp.random(600, 600, density=0.02, random_state=1, format="csr")
    a = (a + a.T).tocsr()
    a.data -= 0.5
    k = 6
    res = thick_restart_lanczos(lambda x: a @ x, 600, k, which="largest", tol=1e-10,
                                norm_bound=float(abs(a).sum(1).max()), seed=3)
    ref = spla.eigsh(a, k, which="LA", v0=rng.standard_normal(600), tol=1e-14)[0][::-1]
    assert res.converged
    assert np.all(np.diff(res.values) <= 0)  # descending for "largest"
    assert np.allclose(res.values, ref, atol=1e-9)
    x = res.vectors
    assert np.linalg.norm(a @ x - x * res.values, axis=0).max() <= 1e-9


def test_null_space_of_several_components_is_projected_out():
    # three paths: the null space of L_sym has one vector per component
    blocks = []
    for size in (60, 80, 100):
        p = sp.diags([np.ones(size - 1), np.ones(size - 1)], [-1, 1])
        deg = np.asarray(p.sum(1)).ravel()
        s = sp.diags(1 / np.sqrt(deg))
        blocks.append((sp.identity(size) - s @ p @ s, np.sqrt(deg) / np.linalg.norm(np.sqrt(deg))))
    lap = sp.block_diag([b for b, _ in blocks]).tocsr()
    null = np.zeros((240, 3))
    null[:60, 0], null[60:140, 1], null[140:, 2] = (z for _, z in blocks)
    w = np.linalg.eigvalsh(lap.toarray())
    res = thick_restart_lanczos(lambda x: lap @ x, 240, 5, null=null, tol=1e-11, norm_bound=2.0)
    assert np.allclose(res.values, w[3:8], atol=1e-10)  # the three zeros are never found
    assert np.abs(null.T @ res.vectors).max() < 1e-12


def test_breakdown_continues_in_a_fresh_direction():
    # a diagonal operator of 5 distinct values: every Krylov space has dimension <= 5, so the
    # recurrence breaks down and must continue orthogonally to find the repeated eigenvalue
    d = np.repeat([1.0, 2.0, 3.0, 4.0, 5.0], 40)
    res = thick_restart_lanczos(lambda x: d * x, d.size, 3, tol=1e-12, norm_bound=5.0, ncv=12)
    assert res.converged
    assert np.allclose(res.values, [1.0, 1.0, 1.0], atol=1e-12)
    x = res.vectors
    assert np.abs(x.T @ x - np.eye(3)).max() < 1e-10
    assert np.abs(x[40:]).max() < 1e-10  # all three in the eigenvalue-1 space


def test_budget_returns_the_best_pairs_unconverged():
    sub = giant_component("road")[0]
    res = thick_restart_lanczos(lambda x: sub @ x, sub.shape[0], 6, null=_null("road"),
                                tol=1e-14, norm_bound=2.0, ncv=20, max_products=50)
    assert not res.converged
    assert 50 <= res.products < 50 + 20
    assert res.vectors.shape == (sub.shape[0], 6)
    values_only = thick_restart_lanczos(lambda x: sub @ x, sub.shape[0], 6, null=_null("road"),
                                        tol=1e-14, norm_bound=2.0, ncv=20, max_products=50,
                                        vectors=False)
    assert values_only.vectors.shape == (sub.shape[0], 0)
    assert np.array_equal(values_only.values, res.values)


def test_start_vector_is_used():
    sub = giant_component("social")[0]
    n = sub.shape[0]
    start = np.random.default_rng(7).standard_normal(n)
    one = thick_restart_lanczos(lambda x: sub @ x, n, 4, null=_null("social"), start=start,
                                tol=1e-10, norm_bound=2.0, seed=1)
    two = thick_restart_lanczos(lambda x: sub @ x, n, 4, null=_null("social"), start=start,
                                tol=1e-10, norm_bound=2.0, seed=2)
    assert np.array_equal(one.values, two.values)  # the seed only draws a missing start


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_eigenvalues_are_invariant_under_node_relabelling(seed):
    sub = giant_component("social")[0]
    n = sub.shape[0]
    perm = np.random.default_rng(seed).permutation(n)
    permuted = sub[perm][:, perm].tocsr()
    null = _null("social")
    a = thick_restart_lanczos(lambda x: sub @ x, n, 5, null=null, tol=1e-10, norm_bound=2.0)
    b = thick_restart_lanczos(lambda x: permuted @ x, n, 5, null=null[perm], tol=1e-10,
                              norm_bound=2.0, seed=seed)
    assert np.allclose(a.values, b.values, atol=1e-10)


def test_defaults_and_threshold():
    assert default_ncv(16) == 64 and default_ncv(4) == 52 and default_ncv(30) == 90
    assert default_keep(16, 64) == 24 and default_keep(4, 5) == 4
    assert reorth_threshold(1.0, 1.0) == SEMI_ORTHOGONAL
    assert reorth_threshold(0.0, 1.0) == MIN_REORTH_THRESHOLD
    assert reorth_threshold(1e-8, 2.0) == pytest.approx(5e-11)
    assert SEMI_ORTHOGONAL == EPS**0.5


def test_bad_arguments_raise():
    def op(x):
        return x

    with pytest.raises(ValueError, match=r"^which must be 'smallest' or 'largest', got 'middle'$"):
        thick_restart_lanczos(op, 10, 2, which="middle")
    with pytest.raises(ValueError, match=r"^k=0 must be in \[1, 9\] \(the dimension outside "
                                         r"the null space is 10\)$"):
        thick_restart_lanczos(op, 10, 0)
    with pytest.raises(ValueError, match=r"^k=8 must be in \[1, 7\] \(the dimension outside "
                                         r"the null space is 8\)$"):
        thick_restart_lanczos(op, 10, 8, null=np.eye(10)[:, :2])
    with pytest.raises(ValueError, match=r"^ncv=3 must exceed k=3$"):
        thick_restart_lanczos(op, 10, 3, ncv=3)
    with pytest.raises(ValueError, match=r"^keep=2 must be in \[k=3, ncv=6\)$"):
        thick_restart_lanczos(op, 10, 3, ncv=6, keep=2)


def _hermitian(n: int, seed: int) -> sp.csr_matrix:
    """A sparse complex Hermitian matrix with spectrum near [0, 2]: a magnetic Laplacian-like
    ``I - (A o e^{i theta})`` scaled by its largest row sum."""
    a = sp.random(n, n, density=6 / n, random_state=seed, format="coo")
    phase = np.exp(2j * np.pi * np.random.default_rng(seed).random(a.nnz))
    h = sp.csr_matrix((a.data * phase, (a.row, a.col)), shape=(n, n))
    h = h + h.conj().T
    h = h / float(abs(h).sum(1).max())
    return (sp.identity(n, dtype=np.complex128) - h).tocsr()


@pytest.mark.parametrize("which", ["smallest", "largest"])
def test_hermitian_pairs_match_dense_eigh(which):
    """dtype=complex128: a Hermitian operator's extreme pairs, its Ritz vectors complex,
    orthonormal under the conjugated product, the residuals within tol."""
    h = _hermitian(700, 4)
    w, v = np.linalg.eigh(h.toarray())
    k, tol = 8, 1e-10
    res = thick_restart_lanczos(lambda x: h @ x, 700, k, which=which, tol=tol, norm_bound=2.0,
                                dtype=np.complex128)
    want = w[:k] if which == "smallest" else w[::-1][:k]
    assert res.converged and res.vectors.dtype == np.complex128
    assert np.allclose(res.values, want, atol=1e-10)
    x = res.vectors
    assert np.linalg.norm(h @ x - x * res.values, axis=0).max() <= tol
    assert np.abs(x.conj().T @ x - np.eye(k)).max() < 1e-9
    ref = v[:, :k] if which == "smallest" else v[:, ::-1][:, :k]
    # each vector its reference's up to a unit complex factor (the spectrum is simple here)
    assert np.allclose(np.abs(np.sum(ref.conj() * x, axis=0)), 1.0, atol=1e-8)


def test_hermitian_null_space_and_real_dtype_unchanged():
    """A complex null vector is projected out; the real path's values do not move by a bit
    with the dtype given explicitly."""
    h = _hermitian(400, 7)
    w, v = np.linalg.eigh(h.toarray())
    null = np.ascontiguousarray(v[:, :1])
    res = thick_restart_lanczos(lambda x: h @ x, 400, 4, null=null, tol=1e-10, norm_bound=2.0,
                                dtype=np.complex128)
    assert np.allclose(res.values, w[1:5], atol=1e-10)
    assert np.abs(null.conj().T @ res.vectors).max() < 1e-10
    sub = giant_component("road")[0]
    a = thick_restart_lanczos(lambda x: sub @ x, sub.shape[0], 4, null=_null("road"),
                              norm_bound=2.0)
    b = thick_restart_lanczos(lambda x: sub @ x, sub.shape[0], 4, null=_null("road"),
                              norm_bound=2.0, dtype=np.float64)
    assert np.array_equal(a.values, b.values) and np.array_equal(a.vectors, b.vectors)
    with pytest.raises(ValueError, match=r"^dtype must be float64 or complex128, got float32$"):
        thick_restart_lanczos(lambda x: x, 10, 2, dtype=np.float32)
