"""The sparse eigensolvers (lanczos, shift_invert, chebyshev) against each other and against
dense eigh on the large-graph stand-ins, and auto's bounded choice and race among them."""

import functools
import logging

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from torch_geometric.data import Data

from graphpe.ops import laplacian_eigenpairs
from graphpe.ops.eigen.krylov import (
    FACTOR_MAX_BYTES,
    analyze_factor,
    auto_eigenpairs,
    choose_sparse_solver,
    degree_order,
    factor_bytes,
    factor_laplacian,
    lanczos_eigenpairs,
    permuted,
    predicted_factor_seconds,
    shift_invert_eigenpairs,
)
from graphpe.ops.eigen.sparse import chebyshev_eigenpairs, component_basis
from graphpe.ops.graph import (
    connected_components,
    laplacian_entries,
    sparse_operator,
    undirected_simple,
)
from graphpe.ops.plan import ExecPlan
from graphpe.synthetic import coauthor_like_graph, road_like_graph, social_like_graph
from tests.ops.eigen.test_eigen import clusters

K = 8


@functools.cache
def stand_in(name: str) -> Data:
    if name == "road":
        return road_like_graph(250, seed=1)  # ~1,100 nodes, one component, tiny gaps
    if name == "social":
        return social_like_graph(1500, seed=2)  # a giant component, hubs, isolated nodes
    return coauthor_like_graph(1500, seed=3)  # many components of dense cliques


@functools.cache
def giant_component(name: str):
    """The Laplacian L_sym of the largest component (scipy CSR), its null space as a
    ComponentBasis, the same as a torch CSR, and its dense eigh."""
    data = stand_in(name)
    n = data.num_nodes
    graph = undirected_simple(data.edge_index, n)
    ei, off, diag, deg = laplacian_entries(graph, "sym", torch.float64)
    lap = (sp.coo_matrix((off.numpy(), ei.numpy()), shape=(n, n)) + sp.diags(diag.numpy()))
    labels = connected_components(graph.edge_index, n)
    nodes = np.flatnonzero(labels.numpy() == torch.mode(labels).values.item())
    sub = lap.tocsr()[nodes][:, nodes].tocsr()
    basis = component_basis(torch.zeros(nodes.size, dtype=torch.long),
                            deg[torch.from_numpy(nodes)].sqrt())
    coo = sub.tocoo()
    torch_op = sparse_operator(torch.from_numpy(np.stack([coo.row, coo.col])).long(),
                               torch.from_numpy(coo.data), nodes.size)
    w, v = np.linalg.eigh(sub.toarray())
    return sub, basis, torch_op, w, v


def solve(solver: str, name: str, k: int = K):
    sub, basis, torch_op, _, _ = giant_component(name)
    if solver == "lanczos":
        return lanczos_eigenpairs(sub, k, upper=2.0, deflate=basis, tol=1e-10)
    if solver == "shift_invert":
        return shift_invert_eigenpairs(sub, k, upper=2.0, deflate=basis, tol=1e-10)
    return chebyshev_eigenpairs(torch_op, k, upper=2.0, deflate=basis, tol=1e-10,
                                max_iter=5000, generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize("name", ["road", "social", "coauthor"])
@pytest.mark.parametrize("solver", ["lanczos", "shift_invert", "chebyshev"])
def test_solver_matches_dense_eigh(solver, name):
    sub, basis, _, w, v = giant_component(name)
    res = solve(solver, name)
    vals, vecs = res.eigvals.numpy(), res.eigvecs.numpy()
    assert res.converged and res.residuals.max() <= 1e-6
    # the returned residuals are the true ones
    true = np.linalg.norm(sub @ vecs - vecs * vals, axis=0)
    assert np.allclose(res.residuals.numpy(), true, atol=1e-12)
    assert np.allclose(vals, w[1 : K + 1], atol=1e-8)
    for lo, hi in clusters(w[1:], tol=1e-7):
        if hi > K:
            break
        ref, ours = v[:, 1 + lo : 1 + hi], vecs[:, lo:hi]
        assert np.abs(ref @ ref.T - ours @ ours.T).max() < 1e-6, (lo, hi)
    assert np.allclose(vecs.T @ vecs, np.eye(K), atol=1e-8)
    assert np.abs(basis.dense().numpy().T @ vecs).max() < 1e-8


def test_degree_order_puts_the_longest_rows_first_and_permutes_symmetrically():
    a = sp.csr_matrix(np.array([[1, 1, 0, 0], [1, 1, 1, 1], [0, 1, 1, 0], [0, 1, 0, 1.0]]))
    order = degree_order(a)
    assert order.tolist() == [1, 0, 2, 3]  # row 1 has 4 entries, the others 2 (kept in order)
    b = permuted(a, order)
    q = np.eye(4)[order]
    assert np.array_equal(b.toarray(), q @ a.toarray() @ q.T)


@pytest.mark.parametrize("name", ["road", "coauthor"])
def test_solvers_agree_with_each_other(name):
    results = [solve(s, name) for s in ("lanczos", "shift_invert", "chebyshev")]
    for other in results[1:]:
        assert np.allclose(other.eigvals.numpy(), results[0].eigvals.numpy(), atol=1e-9)


def disconnected_with_isolated() -> Data:
    """A road-like graph, a social-like one (with its own isolated nodes), a path and three
    isolated nodes, as one graph."""
    parts = [road_like_graph(120, seed=4), social_like_graph(700, seed=5)]
    edges, offset = [], 0
    for part in parts:
        edges.append(part.edge_index + offset)
        offset += part.num_nodes
    path = torch.arange(offset, offset + 40)
    edges.append(torch.stack([torch.cat([path[:-1], path[1:]]), torch.cat([path[1:], path[:-1]])]))
    return Data(edge_index=torch.cat(edges, dim=1), num_nodes=offset + 40 + 3)


@pytest.mark.parametrize("normalization", ["sym", "none"])
@pytest.mark.parametrize("keep_trivial", [False, True])
def test_laplacian_eigenpairs_every_solver_matches_dense(normalization, keep_trivial):
    data = disconnected_with_isolated()
    n, k = data.num_nodes, 10
    dense = laplacian_eigenpairs(data.edge_index, n, k, normalization=normalization,
                                 keep_trivial=keep_trivial, dtype=torch.float64,
                                 plan=ExecPlan(dense_max_nodes=4096))
    lap = sp.csr_matrix(sparse_operator(*_entries(data, normalization)).to_dense().numpy())
    lo = int(dense.eigvals[0].eq(0).sum()) if keep_trivial else 0
    for solver in ("auto", "lanczos", "shift_invert", "chebyshev", "arpack"):
        pairs = laplacian_eigenpairs(data.edge_index, n, k, normalization=normalization,
                                     keep_trivial=keep_trivial, dtype=torch.float64,
                                     plan=ExecPlan(dense_max_nodes=200, sparse_solver=solver))
        scale = 1.0 if normalization == "sym" else float(np.abs(lap).sum(1).max())
        assert torch.allclose(pairs.eigvals, dense.eigvals, atol=1e-8 * scale), solver
        assert torch.equal(pairs.mask, dense.mask)
        vals, vecs = pairs.eigvals[0].numpy(), pairs.eigvecs.numpy()
        assert np.linalg.norm(lap @ vecs - vecs * vals, axis=0).max() <= 1e-6 * scale, solver
        # the trivial space has no unique basis: compare the non-trivial columns' projectors
        # over each cluster of eigenvalues the selection does not cut
        ref = dense.eigvecs.numpy()
        for a, b in clusters(vals[lo:], tol=1e-7 * scale):
            if b == k - lo:
                break
            p, q = vecs[:, lo + a : lo + b], ref[:, lo + a : lo + b]
            assert np.abs(p @ p.T - q @ q.T).max() < 1e-6, (solver, a, b)


def _entries(data: Data, normalization: str):
    graph = undirected_simple(data.edge_index, data.num_nodes)
    ei, off, diag, _ = laplacian_entries(graph, normalization, torch.float64)
    return ei, off, data.num_nodes, diag


def test_auto_races_on_a_road_network_and_takes_lanczos_on_a_power_law_graph(caplog,
                                                                            monkeypatch):
    import graphpe.ops.eigen.krylov as krylov

    monkeypatch.setattr(krylov, "RACE_MIN_SECONDS", 0.0)  # the stand-in is small: race anyway
    road = giant_component("road")
    choice = choose_sparse_solver(road[0], K)
    # the road network orders with little fill: both methods are affordable, Lanczos gets
    # the predicted time of the whole shift-invert solve first
    assert choice.solver == "shift_invert" and choice.symbolic.complete
    assert choice.lanczos_seconds > choice.probes["factor_seconds"] > 0
    assert choice.probes["factor_bytes"] == factor_bytes(choice.symbolic) <= FACTOR_MAX_BYTES
    assert choice.probes["fill_ratio"] < 3
    social = giant_component("social")
    choice = choose_sparse_solver(social[0], K, max_factor_bytes=20_000)
    assert choice.solver == "lanczos" and "factor_seconds" not in choice.probes
    assert choice.reason.startswith("the factor's analysis stopped at its budget")
    # laplacian_eigenpairs says what it chose and what solved it, at DEBUG on "graphpe"
    data = stand_in("road")
    with caplog.at_level(logging.DEBUG, logger="graphpe"):
        laplacian_eigenpairs(data.edge_index, data.num_nodes, 4, plan=ExecPlan(dense_max_nodes=200))
    said = [r.getMessage() for r in caplog.records if "sparse eigensolver" in r.getMessage()]
    assert said[0].startswith(f"sparse eigensolver for a component of {data.num_nodes} nodes")
    assert ": shift_invert: the LU factor fits" in said[0]
    assert said[-1].startswith("sparse eigensolver: solved by ")


@pytest.mark.parametrize("name", ["road", "social"])
def test_auto_equals_dense_eigh_whichever_solver_ends_the_race(name):
    sub, basis, _, w, v = giant_component(name)
    solved, solver = auto_eigenpairs(sub, K, upper=2.0, deflate=basis, tol=1e-10)
    assert solver in ("lanczos", "shift_invert")
    assert solved.converged and np.allclose(solved.eigvals.numpy(), w[1 : K + 1], atol=1e-9)


def test_the_race_falls_back_to_shift_invert_when_lanczos_runs_out_of_time(monkeypatch,
                                                                            caplog):
    import graphpe.ops.eigen.krylov as krylov

    monkeypatch.setattr(krylov, "SOLVE_SECONDS_PER_ENTRY", 0.0)
    monkeypatch.setattr(krylov, "ARPACK_SECONDS_PER_NODE_PAIR", 0.0)
    monkeypatch.setattr(krylov, "FACTOR_SECONDS_PER_COLUMN", 0.0)
    monkeypatch.setattr(krylov, "FACTOR_FLOPS_PER_SECOND", float("inf"))  # a 0 s race
    monkeypatch.setattr(krylov, "RACE_MIN_SECONDS", -1.0)  # (raced however short)
    sub, basis, _, w, _ = giant_component("road")
    with caplog.at_level(logging.DEBUG, logger="graphpe"):
        solved, solver = auto_eigenpairs(sub, K, upper=2.0, deflate=basis, tol=1e-10)
    assert solver == "shift_invert"
    assert any(r.getMessage().startswith("sparse eigensolver: Lanczos did not converge in "
                                         "0.00 s") for r in caplog.records)
    assert np.allclose(solved.eigvals.numpy(), w[1 : K + 1], atol=1e-9)


def test_auto_respects_the_factor_budgets(monkeypatch):
    import graphpe.ops.eigen.krylov as krylov

    sub, basis, _, _, _ = giant_component("road")
    symbolic = analyze_factor(sub)
    need = factor_bytes(symbolic)
    choice = choose_sparse_solver(sub, K, max_factor_bytes=need - 1)
    assert choice.solver == "lanczos"
    # a fill that cannot be factored in time at the best rate stops the analysis itself
    choice = choose_sparse_solver(sub, K, max_factor_seconds=1e-9)
    assert choice.solver == "lanczos" and choice.symbolic is None
    assert choice.reason.startswith("the factor's analysis stopped at its budget")
    # a factor within the fill budget whose predicted time is too long
    monkeypatch.setattr(krylov, "FACTOR_SECONDS_PER_COLUMN", 1.0)
    choice = choose_sparse_solver(sub, K)
    assert choice.solver == "lanczos" and choice.symbolic.complete
    assert f"~{predicted_factor_seconds(symbolic):.2f} s (limit 5 s)" in choice.reason
    # an explicit shift_invert is refused before any numeric work: by the analysis it runs,
    # which stops past the budget, or by the size of a complete analysis it is given
    with pytest.raises(MemoryError, match=r"^factor_laplacian: the LU factor would take more "
                                          r"than max_factor_bytes=1,000 bytes \(its analysis "
                                          r"stopped past 41 entries\)$"):
        shift_invert_eigenpairs(sub, 3, upper=2.0, deflate=basis, max_factor_bytes=1000)
    with pytest.raises(MemoryError, match=rf"^factor_laplacian: the LU factor would take "
                                          rf"{need:,} bytes > max_factor_bytes={need - 1:,}$"):
        shift_invert_eigenpairs(sub, 3, upper=2.0, deflate=basis, symbolic=symbolic,
                                max_factor_bytes=need - 1)


def test_factor_has_the_predicted_pattern_and_solves():
    sub, _, _, _, _ = giant_component("coauthor")
    symbolic = analyze_factor(sub)
    factor = factor_laplacian(sub, -1e-7, symbolic)
    # no pivoting in the analysed order: L has the Cholesky pattern, U its transpose
    assert factor.lu.L.nnz == symbolic.nnz and factor.lu.U.nnz == symbolic.nnz
    assert np.array_equal(factor.lu.perm_r, np.arange(sub.shape[0]))
    b = np.random.default_rng(0).standard_normal(sub.shape[0])
    x = np.empty_like(b)
    x[factor.perm] = factor.lu.solve(b[factor.perm])
    shifted = sub + 1e-7 * sp.identity(sub.shape[0])
    assert np.abs(shifted @ x - b).max() < 1e-8 * np.abs(b).max() * 1e3


def test_lanczos_basis_shrinks_to_its_memory_budget():
    sub, basis, _, w, _ = giant_component("social")
    n = sub.shape[0]
    # room for 20 vectors: ncv 19 instead of the default 56, same pairs
    small = lanczos_eigenpairs(sub, K, upper=2.0, deflate=basis, tol=1e-10,
                               max_basis_bytes=20 * n * 8)
    assert small.converged and np.allclose(small.eigvals.numpy(), w[1 : K + 1], atol=1e-9)
    with pytest.raises(MemoryError, match=rf"^lanczos_eigenpairs: a basis of {K + 8} vectors "
                                          rf"of {n:,} float64 values \({(K + 9) * n * 8:,} "
                                          rf"bytes\) exceeds max_basis_bytes=100,000$"):
        lanczos_eigenpairs(sub, K, upper=2.0, deflate=basis, max_basis_bytes=100_000)


def test_bad_arguments_raise():
    sub, basis, _, _, _ = giant_component("road")
    n = sub.shape[0]
    with pytest.raises(ValueError, match=r"^k must be a positive int, got 0$"):
        lanczos_eigenpairs(sub, 0, upper=2.0, deflate=basis)
    with pytest.raises(ValueError, match=rf"^k={n - 1} must be below the {n - 1} eigenpairs "
                                         r"outside the deflated space \(solve such small "
                                         r"problems densely\)$"):
        shift_invert_eigenpairs(sub, n - 1, upper=2.0, deflate=basis)
    with pytest.raises(ValueError, match=r"^operator must be a square matrix, got shape "
                                         r"\(3, 4\)$"):
        lanczos_eigenpairs(sp.csr_matrix((3, 4)), 1, upper=2.0)


def test_unknown_sparse_solver_raises():
    data = stand_in("road")
    with pytest.raises(ValueError, match=r"^sparse_solver must be one of \('auto', "
                                         r"'chebyshev', 'lanczos', 'shift_invert', 'arpack'\), "
                                         r"got 'lobpcg'$"):
        laplacian_eigenpairs(data.edge_index, data.num_nodes, 2,
                             plan=ExecPlan(sparse_solver="lobpcg"))


def test_a_solve_too_short_to_race_goes_straight_to_shift_invert(monkeypatch, caplog):
    """Below RACE_MIN_SECONDS of predicted shift-invert time, Lanczos is not started: the
    choice says so and the eigenpairs are shift-invert's, equal to dense eigh's."""
    import graphpe.ops.eigen.krylov as krylov

    sub, basis, _, w, _ = giant_component("road")
    monkeypatch.setattr(krylov, "RACE_MIN_SECONDS", 1e9)

    def no_lanczos(*args, **kwargs):
        raise AssertionError("Lanczos ran where no race was due")

    monkeypatch.setattr(krylov, "lanczos_eigenpairs", no_lanczos)
    choice = choose_sparse_solver(sub, K)
    assert choice.solver == "shift_invert" and choice.lanczos_seconds is None
    assert choice.reason.endswith("worth racing Lanczos for: no race")
    with caplog.at_level(logging.DEBUG, logger="graphpe"):
        solved, solver = auto_eigenpairs(sub, K, upper=2.0, deflate=basis, tol=1e-10)
    assert solver == "shift_invert" and solved.converged
    assert np.allclose(solved.eigvals.numpy(), w[1 : K + 1], atol=1e-9)
    assert any("solved by shift_invert (no race" in r.getMessage() for r in caplog.records)
