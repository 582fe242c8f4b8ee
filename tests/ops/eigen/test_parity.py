"""LapPE's compiled host kernels (``ExecPlan(kernel="compiled")``) against the batched tensor
kernels (``ExecPlan(kernel="tensor")``), on generated batches of awkward graphs: empty and
single-node graphs, isolated nodes, several components, N <= k, multi-edges, self loops,
directed edges, zero and large weights, repeated eigenvalues; and the compiled solver's parts
against numpy."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch_geometric.data import Batch, Data

from graphpe.ops import laplacian_eigenpairs
from graphpe.ops.graph import undirected_simple
from graphpe.ops.plan import ExecPlan
from tests.conftest import graph_families, nx_to_data
from tests.ops.strategies import batch_of, raw_graph


def simple_spectra(batch: Batch, normalization: str) -> list[np.ndarray]:
    """Every graph's full Laplacian spectrum (numpy), to find the simple eigenvalues."""
    out = []
    for g in batch.to_data_list():
        n = g.num_nodes
        a = np.zeros((n, n))
        sg = undirected_simple(g.edge_index, n, g.get("edge_weight"))
        w = (np.ones(sg.edge_index.size(1)) if sg.edge_weight is None
             else sg.edge_weight.double().numpy())
        a[sg.edge_index[0].numpy(), sg.edge_index[1].numpy()] = w
        d = a.sum(1)
        if normalization == "none":
            lap = np.diag(d) - a
        else:
            dis = np.where(d > 0, 1 / np.sqrt(np.maximum(d, 1e-300)), 0)
            lap = np.diag((d > 0).astype(float)) - dis[:, None] * a * dis[None, :]
        out.append(np.linalg.eigvalsh(lap) if n else np.zeros(0))
    return out


def assert_eigenpairs_match(batch: Batch, k: int, **options) -> None:
    ours = laplacian_eigenpairs(batch.edge_index, batch.num_nodes, k, ptr=batch.ptr,
                                edge_weight=batch.get("edge_weight"),
                                **options, plan=ExecPlan(kernel="compiled"))
    ref = laplacian_eigenpairs(batch.edge_index, batch.num_nodes, k, ptr=batch.ptr,
                               edge_weight=batch.get("edge_weight"),
                               **options, plan=ExecPlan(kernel="tensor"))
    assert torch.equal(ours.mask, ref.mask)
    torch.testing.assert_close(ours.eigvals, ref.eigvals, atol=1e-6, rtol=0)
    spectra = simple_spectra(batch, options.get("normalization", "sym"))
    for g, spectrum in enumerate(spectra):
        lo, hi = int(batch.ptr[g]), int(batch.ptr[g + 1])
        for j in range(k):
            if not bool(ref.mask[g, j]):
                assert bool((ours.eigvecs[lo:hi, j] == 0).all())
                continue
            lam = float(ref.eigvals[g, j])
            if (np.abs(spectrum - lam) < 1e-5).sum() > 1:
                continue  # repeated eigenvalue: any basis of its eigenspace is right
            torch.testing.assert_close(ours.eigvecs[lo:hi, j], ref.eigvecs[lo:hi, j],
                                       atol=1e-5, rtol=0)


@settings(max_examples=60, deadline=None)
@given(st.lists(raw_graph(), min_size=1, max_size=5), st.sampled_from(["sym", "rw", "none"]),
       st.booleans(), st.integers(1, 6))
def test_laplacian_eigenpairs_compiled_equals_tensor(graphs, normalization, keep_trivial, k):
    assert_eigenpairs_match(batch_of(graphs), k, normalization=normalization,
                            keep_trivial=keep_trivial)


@settings(max_examples=30, deadline=None)
@given(st.lists(raw_graph(weighted=True), min_size=1, max_size=4), st.booleans())
def test_laplacian_eigenpairs_compiled_equals_tensor_weighted(graphs, keep_trivial):
    assert_eigenpairs_match(batch_of(graphs), 4, keep_trivial=keep_trivial)


def test_laplacian_eigenpairs_compiled_on_families():
    """Repeated eigenvalues (Petersen, Paley, hypercube), isolated nodes, tiny graphs."""
    batch = batch_of([nx_to_data(g) for g in graph_families().values()])
    for normalization in ("sym", "rw", "none"):
        assert_eigenpairs_match(batch, 6, normalization=normalization)


def test_laplacian_eigenpairs_random_signs_are_the_same_draws():
    batch = batch_of([nx_to_data(nx.cycle_graph(7)), nx_to_data(nx.path_graph(5))])
    outs = [laplacian_eigenpairs(batch.edge_index, batch.num_nodes, 3, ptr=batch.ptr,
                                 sign="random", generator=torch.Generator().manual_seed(3),
                                 plan=ExecPlan(kernel=kernel))
            for kernel in ("compiled", "tensor")]
    simple = outs[1].eigvals[1]  # the path's spectrum is simple
    torch.testing.assert_close(outs[0].eigvecs[7:, :], outs[1].eigvecs[7:, :], atol=1e-6,
                               rtol=0)
    assert simple.unique().numel() == 3


def test_laplacian_eigenpairs_compiled_on_mid_sized_graphs():
    """Graphs of 60-250 nodes: the compiled solver up to SMALL_EIGH_MAX, LAPACK's dsytrd
    reduction above it, against the tensor path (one full LAPACK eigh per size bucket)."""
    from graphpe.ops.eigen.compiled import SMALL_EIGH_MAX
    from graphpe.synthetic import molecule_like_graphs

    graphs = molecule_like_graphs(6, min_nodes=60, max_nodes=250, seed=3)
    sizes = [g.num_nodes for g in graphs]
    assert min(sizes) <= SMALL_EIGH_MAX < max(sizes)
    batch = batch_of(graphs)
    for normalization in ("sym", "rw", "none"):
        assert_eigenpairs_match(batch, 16, normalization=normalization)
    assert_eigenpairs_match(batch, 5, keep_trivial=True)


@pytest.mark.parametrize("scale", [1e-150, 1.0, 1e150])
def test_small_eigh_against_numpy(scale):
    """The compiled solver on random symmetric matrices, scaled far from 1, and on matrices
    with repeated eigenvalues and exact zero blocks: eigenvalues to rounding, residuals and
    orthogonality of the wanted vectors at machine precision."""
    import numba

    from graphpe.ops.eigen.compiled import _small_eigh

    @numba.njit
    def solve(matrix, first, count):
        n = matrix.shape[0]
        w = np.empty(n + 1)
        v = np.empty((n + 1, count))
        work = np.empty((12, n + 2))
        _small_eigh(matrix.copy(), n, first, count, w, v, work)
        return w[:n].copy(), v[:n].copy()

    rng = np.random.default_rng(0)
    mats = []
    for n in (1, 2, 3, 7, 20, 45):
        a = rng.standard_normal((n, n))
        mats.append(a + a.T)
    a = nx.to_numpy_array(nx.petersen_graph())  # eigenvalues 3, 1 (x5), -2 (x4)
    mats.append(a)
    mats.append(np.zeros((5, 5)))
    block = np.zeros((8, 8))
    block[:4, :4] = nx.to_numpy_array(nx.cycle_graph(4))
    block[5:, 5:] = nx.to_numpy_array(nx.path_graph(3))
    mats.append(block)
    for m in mats:
        m = m * scale
        n = m.shape[0]
        first, count = min(1, n - 1), min(6, n - min(1, n - 1))
        w, v = solve(m, first, count)
        ref = np.linalg.eigvalsh(m)
        norm = max(np.abs(ref).max(), 1e-300 if scale < 1 else 1.0)
        assert np.abs(w - ref).max() <= 1e-13 * norm
        residual = m @ v - v * w[first : first + count]
        assert np.abs(residual).max() <= 1e-12 * norm
        assert np.abs(v.T @ v - np.eye(count)).max() <= 1e-12
    # the two components of the block matrix: vectors exactly zero off their component
    w, v = solve(block, 0, 8)
    for col in v.T:
        on_cycle = np.abs(col[:4]).max() > 0
        on_path = np.abs(col[5:]).max() > 0
        assert on_cycle + on_path + (abs(col[4]) > 0) == 1


def _dense_laplacian(g: Data, normalization: str) -> np.ndarray:
    n = g.num_nodes
    sg = undirected_simple(g.edge_index, n, g.get("edge_weight"))
    a = np.zeros((n, n))
    w = (np.ones(sg.edge_index.size(1)) if sg.edge_weight is None
         else sg.edge_weight.double().numpy())
    a[sg.edge_index[0].numpy(), sg.edge_index[1].numpy()] = w
    d = a.sum(1)
    if normalization == "none":
        return np.diag(d) - a
    dis = np.where(d > 0, 1 / np.sqrt(np.maximum(d, 1e-300)), 0)
    return np.diag((d > 0).astype(float)) - dis[:, None] * a * dis[None, :]


def test_laplacian_eigenpairs_compiled_mid_sized_hard_cases():
    """Graphs above SMALL_EIGH_MAX nodes, where the wanted eigenvalues come from bisection
    (few wanted) or QL (many wanted), on the solver's hard cases: eigenvalues of high
    multiplicity (hypercube, complete graph, star), equal eigenvalues in separate components
    (copies of one cycle), isolated nodes, weights. Against the tensor path, and every
    returned vector an orthonormal eigenvector, repeated eigenvalues included."""
    from graphpe.ops.eigen.compiled import SMALL_EIGH_MAX

    rng = np.random.default_rng(0)
    weighted = nx_to_data(nx.gnm_random_graph(120, 300, seed=1))
    weighted.edge_weight = torch.from_numpy(
        rng.choice([0.0, 0.5, 1.0, 3.0], size=weighted.edge_index.size(1)))
    path_and_isolated = nx.path_graph(100)
    path_and_isolated.add_nodes_from(range(100, 130))
    graphs = [nx_to_data(g) for g in (
        nx.hypercube_graph(7), nx.complete_graph(80), nx.star_graph(99),
        nx.disjoint_union_all([nx.cycle_graph(15)] * 6), path_and_isolated,
        nx.grid_2d_graph(10, 10))] + [weighted]
    for g in graphs[:-1]:  # a batch has weights for all graphs or none
        g.edge_weight = torch.ones(g.edge_index.size(1), dtype=torch.float64)
    assert min(g.num_nodes for g in graphs) > SMALL_EIGH_MAX
    batch = batch_of(graphs)
    for normalization, k, keep_trivial in [("sym", 16, False), ("rw", 16, False),
                                           ("none", 4, True), ("sym", 40, False)]:
        assert_eigenpairs_match(batch, k, normalization=normalization,
                                keep_trivial=keep_trivial)
        if normalization == "rw":
            continue  # L_rw vectors are not orthogonal
        ours = laplacian_eigenpairs(batch.edge_index, batch.num_nodes, k, ptr=batch.ptr,
                                    edge_weight=batch.get("edge_weight"),
                                    normalization=normalization, keep_trivial=keep_trivial,
                                    dtype=torch.float64, plan=ExecPlan(kernel="compiled"))
        for g, graph in enumerate(graphs):
            lo, hi = int(batch.ptr[g]), int(batch.ptr[g + 1])
            m = int(ours.mask[g].sum())
            v = ours.eigvecs[lo:hi, :m].numpy()
            lam = ours.eigvals[g, :m].numpy()
            lap = _dense_laplacian(graph, normalization)
            scale = max(1.0, np.abs(lap).max())
            assert np.abs(lap @ v - v * lam).max() <= 1e-10 * scale
            assert np.abs(v.T @ v - np.eye(m)).max() <= 1e-10


@st.composite
def mid_sized_graph(draw) -> Data:
    """A graph above SMALL_EIGH_MAX nodes built from parts with the solver's hard cases:
    copies of one part (equal eigenvalues in separate components), complete graphs and stars
    (high multiplicity), isolated nodes, random trees with chords."""
    parts = []
    total = 0
    while total < 80:
        kind = draw(st.sampled_from(["path", "cycle", "star", "complete", "tree", "isolated"]))
        n = draw(st.integers(1, 40))
        copies = draw(st.integers(1, 3))
        if kind == "path":
            g = nx.path_graph(n)
        elif kind == "cycle":
            g = nx.cycle_graph(max(n, 3))
        elif kind == "star":
            g = nx.star_graph(n)
        elif kind == "complete":
            g = nx.complete_graph(min(n, 25))
        elif kind == "isolated":
            g = nx.empty_graph(n)
        else:
            seed = draw(st.integers(0, 10_000))
            g = nx.random_labeled_tree(max(n, 2), seed=seed)
            rng = np.random.default_rng(seed)
            for _ in range(draw(st.integers(0, 4))):
                u, v = rng.integers(0, g.number_of_nodes(), size=2)
                if u != v:
                    g.add_edge(int(u), int(v))
        parts += [g] * copies
        total += g.number_of_nodes() * copies
    return nx_to_data(nx.disjoint_union_all(parts))


@settings(max_examples=25, deadline=None)
@given(mid_sized_graph(), st.sampled_from(["sym", "rw", "none"]), st.booleans(),
       st.integers(1, 24))
def test_laplacian_eigenpairs_compiled_equals_tensor_mid_sized(graph, normalization,
                                                               keep_trivial, k):
    """Above SMALL_EIGH_MAX nodes (LAPACK reduction; bisection or QL for the eigenvalues),
    on generated graphs with many components and repeated eigenvalues."""
    from graphpe.ops.eigen.compiled import SMALL_EIGH_MAX

    assert graph.num_nodes > SMALL_EIGH_MAX
    assert_eigenpairs_match(batch_of([graph]), k, normalization=normalization,
                            keep_trivial=keep_trivial)


def test_smallest_by_bisection_on_split_tridiagonals():
    """The wanted smallest eigenvalues of a tridiagonal matrix split into blocks (equal blocks
    give equal eigenvalues in different blocks; a 1x1 block; a zero block), each with the
    block it belongs to, against numpy to the bisection tolerance."""
    from graphpe.ops.eigen.compiled import _smallest_by_bisection, split_tridiagonal

    rng = np.random.default_rng(0)
    pieces = [(rng.uniform(0, 2, 9), rng.uniform(-1, 1, 8))]
    pieces.append(pieces[0])  # an equal block: every eigenvalue twice
    pieces += [(np.array([0.3]), np.zeros(0)), (np.zeros(4), np.zeros(3)),
               (rng.uniform(0, 2, 30), rng.uniform(-1, 1, 29))]
    d = np.concatenate([p[0] for p in pieces])
    e = np.zeros(d.size)  # e[i] couples i - 1 and i
    at = 0
    for diag, off in pieces:
        e[at + 1 : at + diag.size] = off
        at += diag.size
    n = d.size
    dense = np.diag(d) + np.diag(e[1:], 1) + np.diag(e[1:], -1)
    block_of = np.empty(n)
    tnorm = split_tridiagonal(n, d, e.copy(), block_of)
    starts = [i for i in range(n) if i == 0 or e[i] == 0]  # (the zero piece: four 1x1 blocks)
    assert sorted(set(block_of.astype(int))) == starts
    for want in (1, 5, 12, n):
        lams, blocks = np.empty(n + 1), np.empty(n + 1)
        _smallest_by_bisection(n, d, e, block_of, want, 1e-12 * tnorm, lams, blocks,
                               np.empty((4, n + 1)), np.empty(n + 1, dtype=np.int64))
        np.testing.assert_allclose(lams[:want], np.linalg.eigvalsh(dense)[:want], atol=1e-11)
        for lam, b in zip(lams[:want], blocks[:want].astype(int), strict=True):
            end = starts[starts.index(b) + 1] if b != starts[-1] else n
            assert np.abs(np.linalg.eigvalsh(dense[b:end, b:end]) - lam).min() <= 1e-11
