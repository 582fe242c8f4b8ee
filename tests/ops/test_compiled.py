"""The compiled host kernels (``kernel="compiled"``) against the batched tensor kernels
(``kernel="tensor"``), on generated batches of awkward graphs: empty and single-node graphs,
isolated nodes, several components, N <= k, multi-edges, self loops, directed edges, zero and
large weights, repeated eigenvalues."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch_geometric.data import Batch, Data

from graphpe.ops import (
    laplacian_eigenpairs,
    local_curvature_profile,
    random_feature_propagation,
    random_walk_landing_probs,
)
from graphpe.ops.compiled import simple_csr, use_host_kernels
from graphpe.ops.graph import undirected_simple
from tests.conftest import graph_families, nx_to_data


@st.composite
def raw_graph(draw, max_nodes: int = 14, weighted: bool = False) -> Data:
    """A graph as users hand it over: any edge list (directions, duplicates, loops)."""
    n = draw(st.integers(0, max_nodes))
    if n == 0:
        edges = []
    else:
        edges = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)),
                              max_size=3 * n))
    ei = torch.tensor(edges, dtype=torch.long).reshape(-1, 2).t().contiguous()
    data = Data(edge_index=ei, num_nodes=n)
    if weighted:
        w = draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0]), min_size=ei.size(1),
                          max_size=ei.size(1)))
        data.edge_weight = torch.tensor(w, dtype=torch.float64)
    return data


def batch_of(graphs: list[Data]) -> Batch:
    return Batch.from_data_list(graphs)


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
                                edge_weight=batch.get("edge_weight"), kernel="compiled",
                                **options)
    ref = laplacian_eigenpairs(batch.edge_index, batch.num_nodes, k, ptr=batch.ptr,
                               edge_weight=batch.get("edge_weight"), kernel="tensor",
                               **options)
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
                                 kernel=kernel) for kernel in ("compiled", "tensor")]
    simple = outs[1].eigvals[1]  # the path's spectrum is simple
    torch.testing.assert_close(outs[0].eigvecs[7:, :], outs[1].eigvecs[7:, :], atol=1e-6,
                               rtol=0)
    assert simple.unique().numel() == 3


@settings(max_examples=60, deadline=None)
@given(st.lists(raw_graph(weighted=True), min_size=1, max_size=5), st.integers(1, 9))
def test_landing_probs_compiled_equals_tensor(graphs, walk_length):
    batch = batch_of(graphs)
    args = (batch.edge_index, batch.num_nodes, walk_length)
    kw = dict(ptr=batch.ptr, edge_weight=batch.get("edge_weight"))
    ours = random_walk_landing_probs(*args, kernel="compiled", **kw)
    ref = random_walk_landing_probs(*args, kernel="tensor", compute_dtype=torch.float64, **kw)
    torch.testing.assert_close(ours, ref.float(), atol=1e-6, rtol=0)


def test_landing_probs_exact_where_the_walk_is():
    """On a triangle the 2-step return probability is exactly 1/2 (float64 inside)."""
    ei = torch.tensor([[0, 1, 1, 2, 2, 0], [1, 0, 2, 1, 0, 2]])
    rwse = random_walk_landing_probs(ei, 3, 3, kernel="compiled")
    assert rwse[:, 1].tolist() == [0.5, 0.5, 0.5]
    assert rwse[:, 2].tolist() == [0.25, 0.25, 0.25]


@settings(max_examples=50, deadline=None)
@given(st.lists(raw_graph(weighted=True), min_size=1, max_size=5),
       st.sampled_from(["gcn", "adj", "rw", "lap_shift"]), st.sampled_from(["qr", "l2"]),
       st.integers(1, 5), st.integers(0, 4), st.integers(0, 2**16))
def test_propagation_compiled_equals_tensor(graphs, operator, normalization, dim, steps, seed):
    """In float64 both paths agree to rounding on every block: Cholesky-QR gives Gram-Schmidt's
    Q for a full-rank block, and a rank-deficient block goes through the same rank-cutting
    Gram-Schmidt in both (zero columns where the rank does not grow)."""
    batch = batch_of(graphs)
    x0 = torch.randn(batch.num_nodes, 2, dim, generator=torch.Generator().manual_seed(seed),
                     dtype=torch.float64)
    kw = dict(ptr=batch.ptr, edge_weight=batch.get("edge_weight"), dtype=torch.float64)
    args = (batch.edge_index, batch.num_nodes, x0, steps, operator, normalization)
    ours = random_feature_propagation(*args, kernel="compiled", **kw)
    ref = random_feature_propagation(*args, kernel="tensor", **kw)
    assert ours.shape == (batch.num_nodes, 2, (steps + 1) * dim)
    torch.testing.assert_close(ours, ref, atol=1e-6 if normalization == "qr" else 1e-9, rtol=0)


def test_propagation_rank_deficient_blocks_agree_across_kernels():
    """A star's GCN operator has rank 2, so after one step every 4-column block is
    rank-deficient: the tensor path (Gram-Schmidt with the rank cut) gives the compiled
    kernel's columns, zeros included, and not a Householder completion."""
    ei = torch.tensor([[0, 0, 0, 0, 0, 1, 2, 3, 4, 5], [1, 2, 3, 4, 5, 0, 0, 0, 0, 0]])
    x0 = torch.randn(6, 3, 4, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    kw = dict(dtype=torch.float64)
    ours = random_feature_propagation(ei, 6, x0, 3, "adj", kernel="compiled", **kw)
    ref = random_feature_propagation(ei, 6, x0, 3, "adj", kernel="tensor", **kw)
    norms = ref.reshape(6, 3, 4, 4).norm(dim=0)  # [draws, steps + 1, columns]
    assert bool((norms[:, 1:] < 1e-12).any())  # the cut happened
    torch.testing.assert_close(ours, ref, atol=1e-10, rtol=0)


def test_propagation_qr_zeroes_columns_beyond_the_rank():
    """n = 3 nodes, d = 5 columns: 3 orthonormal columns and 2 zero ones, in every block."""
    ei = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])
    x0 = torch.randn(3, 1, 5, generator=torch.Generator().manual_seed(0))
    out = random_feature_propagation(ei, 3, x0, 3, kernel="compiled").reshape(3, 4, 5)
    norms = out.norm(dim=0)
    assert torch.allclose(norms[:, :3], torch.ones(4, 3), atol=1e-6)
    assert bool((norms[:, 3:] == 0).all())


@settings(max_examples=50, deadline=None)
@given(st.lists(raw_graph(), min_size=1, max_size=5),
       st.sampled_from(["orc", "orc_bounds", "forman", "afrc"]), st.sampled_from([0.0, 0.5]))
def test_curvature_profile_compiled_equals_tensor(graphs, curvature, alpha):
    if curvature in ("forman", "afrc"):
        alpha = 0.0
    batch = batch_of(graphs)
    args = (batch.edge_index, batch.num_nodes, curvature, alpha)
    ours = local_curvature_profile(*args, ptr=batch.ptr, kernel="compiled")
    ref = local_curvature_profile(*args, ptr=batch.ptr, kernel="tensor")
    for a, b in zip(ours, ref, strict=True):
        torch.testing.assert_close(a, b, atol=1e-12, rtol=0)


@settings(max_examples=50, deadline=None)
@given(raw_graph(weighted=True))
def test_simple_csr_is_the_undirected_simple_graph(data):
    """Same edges and weights as ops.graph.undirected_simple, minus edges of weight 0."""
    csr = simple_csr(data.edge_index, data.num_nodes, data.edge_weight)
    ref = undirected_simple(data.edge_index, data.num_nodes, data.edge_weight)
    keep = ref.edge_weight > 0
    rows = np.repeat(np.arange(data.num_nodes), np.diff(csr.indptr))
    assert rows.tolist() == ref.edge_index[0][keep].tolist()
    assert csr.indices.tolist() == ref.edge_index[1][keep].tolist()
    assert csr.weight.tolist() == ref.edge_weight[keep].tolist()


def test_compiled_kernel_refuses_gpu_tensors():
    ei = torch.zeros(2, 0, dtype=torch.long, device="meta")
    with pytest.raises(ValueError, match="kernel='compiled' runs on CPU tensors"):
        random_walk_landing_probs(ei, 3, 2, kernel="compiled")


def test_unknown_kernel():
    with pytest.raises(ValueError, match=r"kernel must be one of \('auto', 'compiled', "
                                         r"'tensor'\), got 'fast'"):
        random_walk_landing_probs(torch.zeros(2, 0, dtype=torch.long), 3, 2, kernel="fast")


def test_laplacian_eigenpairs_compiled_on_mid_sized_graphs():
    """Graphs of 60-250 nodes: the compiled solver up to SMALL_EIGH_MAX, LAPACK's dsytrd
    reduction above it, against the tensor path (one full LAPACK eigh per size bucket)."""
    from graphpe.ops.compiled import SMALL_EIGH_MAX
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

    from graphpe.ops.compiled import _small_eigh

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
    from graphpe.ops.compiled import SMALL_EIGH_MAX

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
                                    edge_weight=batch.get("edge_weight"), kernel="compiled",
                                    normalization=normalization, keep_trivial=keep_trivial,
                                    dtype=torch.float64)
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
    from graphpe.ops.compiled import SMALL_EIGH_MAX

    assert graph.num_nodes > SMALL_EIGH_MAX
    assert_eigenpairs_match(batch_of([graph]), k, normalization=normalization,
                            keep_trivial=keep_trivial)


def test_smallest_by_bisection_on_split_tridiagonals():
    """The wanted smallest eigenvalues of a tridiagonal matrix split into blocks (equal blocks
    give equal eigenvalues in different blocks; a 1x1 block; a zero block), each with the
    block it belongs to, against numpy to the bisection tolerance."""
    from graphpe.ops.compiled import _smallest_by_bisection, _split_blocks

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
    tnorm = _split_blocks(n, d, e.copy(), block_of)
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


def test_graph_chunks_cover_every_graph_once():
    from graphpe.ops.compiled import graph_chunks

    sizes = np.array([5, 300, 7, 7, 900, 40, 1, 0, 260, 33])
    ptr = np.concatenate([[0], np.cumsum(sizes)])
    for threads in (1, 2, 3, 8):
        chunks = graph_chunks(ptr, threads, min_nodes=100)
        assert chunks[0][0] == 0 and chunks[-1][1] == len(sizes)
        assert all(a < b for a, b in chunks)
        assert all(b == c for (_, b), (c, _) in zip(chunks[:-1], chunks[1:], strict=True))
        assert len(chunks) <= threads
    assert graph_chunks(ptr, 8, min_nodes=10_000) == [(0, len(sizes))]  # too little work
    assert graph_chunks(np.array([0]), 4, min_nodes=1) == [(0, 0)]  # no graphs
    import threading

    seen = []
    worker = threading.Thread(target=lambda: seen.append(graph_chunks(ptr, 8, min_nodes=1)))
    worker.start()
    worker.join()
    assert seen == [[(0, len(sizes))]]  # not split again inside a caller's thread


def test_kernels_over_graph_chunks_in_threads_equal_one_call(families, monkeypatch):
    """RWSE, LapPE (canonical and random signs), RFP and RRWP with the graphs split over threads:
    the same bits as one call over all graphs (each graph's rows are its own)."""
    import graphpe.ops.compiled as compiled
    from graphpe.ops.pairwise import relative_random_walk_probs

    graphs = [g for g in families.values() if g.num_nodes > 0] * 4
    batch = Batch.from_data_list(graphs)
    x0 = torch.randn(batch.num_nodes, 2, 3)

    def encode():
        torch.manual_seed(0)
        gen = torch.Generator().manual_seed(1)
        return [random_walk_landing_probs(batch.edge_index, batch.num_nodes, 6, ptr=batch.ptr),
                *laplacian_eigenpairs(batch.edge_index, batch.num_nodes, 3, ptr=batch.ptr),
                *laplacian_eigenpairs(batch.edge_index, batch.num_nodes, 3, ptr=batch.ptr,
                                      sign="random", generator=gen),
                random_feature_propagation(batch.edge_index, batch.num_nodes, x0, 3,
                                           ptr=batch.ptr),
                *relative_random_walk_probs(batch.edge_index, batch.num_nodes, 4,
                                            ptr=batch.ptr)[:2]]

    monkeypatch.setattr(torch, "get_num_threads", lambda: 1)
    one = encode()
    monkeypatch.setattr(torch, "get_num_threads", lambda: 4)
    monkeypatch.setattr(compiled, "PARALLEL_MIN_NODES", 8)
    assert len(compiled.graph_chunks(batch.ptr.numpy())) == 4
    split = encode()
    assert all(torch.equal(a, b) for a, b in zip(one, split, strict=True))


def test_thread_pool_in_a_forked_child():
    """A DataLoader worker is a fork of a process whose pool threads it does not have: the
    child starts its own pool instead of waiting on the parent's forever."""
    import multiprocessing

    from graphpe.ops.compiled import run_over_graphs

    out = []
    run_over_graphs(lambda a, b: out.append((a, b)), [(0, 1), (1, 2)])  # the parent's pool
    ctx = multiprocessing.get_context("fork")
    child = ctx.Process(target=run_over_graphs, args=(lambda a, b: None, [(0, 1), (1, 2)]))
    child.start()
    child.join(timeout=60)
    if child.is_alive():  # hung on the parent's pool
        child.kill()
    assert child.exitcode == 0 and sorted(out) == [(0, 1), (1, 2)]


def test_host_kernels_take_one_float_dtype_on_the_cpu():
    x, w = torch.ones(3, 2), torch.ones(3, 2, dtype=torch.float64)
    index = torch.zeros(3, dtype=torch.long)
    assert use_host_kernels(x, x, index) and use_host_kernels(w, w)
    # a bfloat16 product beside float32 inputs (torch.autocast): the torch formulation
    assert not use_host_kernels(x, x.bfloat16())
    assert not use_host_kernels(x, w)
    assert not use_host_kernels(x.half())
    assert not use_host_kernels(x, torch.ones(3, 2, device="meta"))


def test_first_compile_is_announced_once(caplog, monkeypatch):
    """A graphpe kernel compiled (not loaded from numba's cache) is announced once per
    process; other packages' functions and a silenced notice say nothing."""
    import logging

    import numba
    from numba.core import event

    from graphpe.ops import compiled
    from graphpe.ops.compiled import FirstCompileNotice

    monkeypatch.setattr(compiled.FIRST_COMPILE_NOTICE, "enabled", False)  # the process's own

    def make(module):
        def twice(x):
            return 2 * x

        twice.__module__ = module
        return numba.njit(twice)  # no cache: compiled on its first call

    notice = FirstCompileNotice()
    with caplog.at_level(logging.WARNING, logger="graphpe"), \
            event.install_listener("numba:compile", notice):
        make("someone_else")(1)
        assert not caplog.records
        notice.enabled = False
        make("graphpe.fake")(1)
        assert not caplog.records
        notice.enabled = True
        make("graphpe.fake")(1)
        make("graphpe.fake")(1.5)
    assert [r.getMessage()[:55] for r in caplog.records] == [
        "graphpe: compiling its CPU kernels (numba) on first use"]


@pytest.mark.slow  # two fresh interpreters importing torch: ~17 s
def test_no_notice_when_the_kernels_load_from_the_cache(tmp_path):
    """In fresh processes: the first, on an empty numba cache, says it compiles; the second
    loads the kernel from that cache and says nothing."""
    import os
    import subprocess
    import sys

    code = ("import numpy as np\nfrom graphpe.ops.graph import index_range\n"
            "assert index_range(np.array([[0, 3], [1, 2]])) == (0, 3)\n")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True, timeout=300) for _ in range(2)]
    assert [r.returncode for r in runs] == [0, 0], runs[0].stderr[-2000:]
    said = ["graphpe: compiling its CPU kernels (numba) on first use" in r.stderr for r in runs]
    assert said == [True, False], [r.stderr[-1000:] for r in runs]
