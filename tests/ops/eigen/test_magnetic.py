"""The magnetic Laplacian's eigenpairs (graphpe.ops.eigen.magnetic, and its compiled kernel
in graphpe.ops.eigen.hermitian) against the reference code of Geisler et al. and of Huang et
al., LapPE's kernel at q = 0, the batched torch solver and the sparse one, and by their
symmetries."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch_geometric.utils import (
    add_self_loops,
    remove_self_loops,
    scatter,
    to_dense_adj,
    to_scipy_sparse_matrix,
)
from torch_geometric.utils.num_nodes import maybe_num_nodes

from graphpe.ops.eigen import canonical_signs, laplacian_eigenpairs, magnetic
from graphpe.ops.eigen.compiled import SMALL_EIGH_MAX
from graphpe.ops.eigen.magnetic import canonical_phases, magnetic_eigenpairs

# ---------------------------------------------------------------------------------------------
# References, copied


def digraph_transformer_eigv_magnetic_laplacian(
        senders, receivers, n_node, padded_nodes_size, k, k_excl, q, q_absolute,
        norm_comps_sep, l2_norm, sign_rotate, use_symmetric_norm):
    """``eigv_magnetic_laplacian_numba`` of google-deepmind/digraph_transformer, ``utils.py``
    (Apache License 2.0, Copyright 2022 DeepMind Technologies Limited). Changes: the
    ``@numba.njit`` decorator is dropped (the body is numpy and runs unchanged), and the
    ``norm_comps_sep`` and max-norm branches, which call two numba helpers, are left out: the
    tests call it with ``norm_comps_sep=False, l2_norm=True`` (unit-norm eigenvectors)."""
    assert not norm_comps_sep and l2_norm
    # Handle -1 padding
    edges_padding_mask = senders >= 0

    adj = np.zeros(int(padded_nodes_size * padded_nodes_size), dtype=np.float64)
    linear_index = receivers + (senders * padded_nodes_size).astype(senders.dtype)
    adj[linear_index] = edges_padding_mask.astype(adj.dtype)
    adj = adj.reshape(padded_nodes_size, padded_nodes_size)
    adj = np.where(adj > 1, 1, adj)

    symmetric_adj = adj + adj.T
    symmetric_adj = np.where((adj != 0) & (adj.T != 0), symmetric_adj / 2,
                             symmetric_adj)

    symmetric_deg = symmetric_adj.sum(-2)

    if not q_absolute:
        m_imag = (adj != adj.T).sum() / 2
        m_imag = min(m_imag, n_node[0])
        q = q / (m_imag if m_imag > 0 else 1)

    theta = 1j * 2 * np.pi * q * (adj - adj.T)

    if use_symmetric_norm:
        inv_deg = np.zeros((padded_nodes_size, padded_nodes_size), dtype=np.float64)
        np.fill_diagonal(
            inv_deg, 1. / np.sqrt(np.where(symmetric_deg < 1, 1, symmetric_deg)))
        eye = np.eye(padded_nodes_size)
        inv_deg = inv_deg.astype(adj.dtype)
        deg = inv_deg @ symmetric_adj.astype(adj.dtype) @ inv_deg
        laplacian = eye - deg * np.exp(theta)

        mask = np.arange(padded_nodes_size) < n_node[:1]
        mask = np.expand_dims(mask, -1) & np.expand_dims(mask, 0)
        laplacian = mask.astype(adj.dtype) * laplacian
    else:
        deg = np.zeros((padded_nodes_size, padded_nodes_size), dtype=np.float64)
        np.fill_diagonal(deg, symmetric_deg)
        laplacian = deg - symmetric_adj * np.exp(theta)

    if q == 0:
        laplacian_r = np.real(laplacian)
        assert (laplacian_r == laplacian_r.T).all()
        # Avoid rounding errors of any sort
        eigenvalues, eigenvectors = np.linalg.eigh(laplacian_r)
        eigenvalues = eigenvalues[..., k_excl:k_excl + k]
        eigenvectors = eigenvectors[..., :, k_excl:k_excl + k]
        return eigenvalues.real, eigenvectors.astype(np.complex128), laplacian

    eigenvalues, eigenvectors = np.linalg.eigh(laplacian)

    eigenvalues = eigenvalues[..., k_excl:k_excl + k]
    eigenvectors = eigenvectors[..., k_excl:k_excl + k]

    if sign_rotate:
        sign = np.zeros((eigenvectors.shape[1],), dtype=eigenvectors.dtype)
        for i in range(eigenvectors.shape[1]):
            argmax_i = np.abs(eigenvectors[:, i].real).argmax()
            sign[i] = np.sign(eigenvectors[argmax_i, i].real)
        eigenvectors = np.expand_dims(sign, 0) * eigenvectors

        argmax_imag_0 = eigenvectors[:, 0].imag.argmax()
        rotation = np.angle(eigenvectors[argmax_imag_0:argmax_imag_0 + 1])
        eigenvectors = eigenvectors * np.exp(-1j * rotation)

    return eigenvalues.real, eigenvectors, laplacian


def multi_q_get_mag_laplacian(edge_index, edge_weight=None, normalization=None, dtype=None,
                              num_nodes=None, q=0.1, dynamic_q=False, multiple_q=1):
    """``get_mag_laplacian`` of Graph-COM/Multi-q-Maglap, ``utils/get_mag_lap.py`` (MIT
    License, Copyright (c) 2024 Graph-COM; the LICENSE file is on the repository's ``main``
    branch), unchanged but for its docstring and commented-out code, and the ``rw`` branch
    (not Hermitian; unused here)."""
    if normalization is not None:
        assert normalization in ['sym', 'rw']  # 'Invalid normalization'

    edge_index, edge_weight = remove_self_loops(edge_index, edge_weight)

    if edge_weight is None:
        edge_weight = torch.ones(edge_index.size(1), dtype=dtype,
                                 device=edge_index.device)

    num_nodes = maybe_num_nodes(edge_index, num_nodes)

    row, col = edge_index[0], edge_index[1]
    deg = scatter(edge_weight, row, 0, dim_size=num_nodes, reduce='sum') + \
        scatter(edge_weight, col, 0, dim_size=num_nodes, reduce='sum')  # symmetric total degree

    # apply a complex adjacency matrix
    if dynamic_q:  # normalize q using longest path distance
        adj_matrix = to_dense_adj(edge_index)
        l = (adj_matrix != adj_matrix.transpose(1, 2)).sum() / 2  # noqa: E741
        q /= max(min(l, num_nodes), 1)

    q0 = q
    edge_weight0 = edge_weight
    edge_index0 = edge_index
    edge_weight_list = []
    for i in range(1, multiple_q + 1):
        if multiple_q == 1:
            q = q0
        else:
            q = q0 * i
        edge_weight = torch.tensor(np.exp(1j * 2 * np.pi * q)) * edge_weight0

        if normalization is None:
            # L = D - A.
            edge_index = torch.cat([edge_index0, edge_index0[[1, 0]]], dim=-1)  # symmetrization
            # complex conjugate the reverse edges
            edge_weight = torch.cat([edge_weight, torch.conj(edge_weight)], dim=0)
            edge_index, _ = add_self_loops(edge_index, num_nodes=num_nodes)
            edge_weight = torch.cat([-edge_weight, deg], dim=0)
        elif normalization == 'sym':
            # Compute A_norm = -D^{-1/2} A D^{-1/2}.
            deg_inv_sqrt = deg.pow(-0.5)
            deg_inv_sqrt.masked_fill_(deg_inv_sqrt == float('inf'), 0)
            edge_weight = deg_inv_sqrt[row] * edge_weight * deg_inv_sqrt[col]

            edge_index = torch.cat([edge_index0, edge_index0[[1, 0]]], dim=-1)  # symmetrization
            # complex conjugate the reverse edges
            edge_weight = torch.cat([edge_weight, torch.conj(edge_weight)], dim=0)

            # L = I - A_norm.

            edge_index, tmp = add_self_loops(edge_index, -edge_weight,
                                             fill_value=1., num_nodes=num_nodes)
            assert tmp is not None
            edge_weight = tmp
        edge_weight_list.append(edge_weight)

    return edge_index, edge_weight_list


def multi_q_eigenpairs(edge_index, edge_weight, num_nodes, k, q, dynamic_q, multiple_q):
    """The eigen-decomposition of ``AddMagLaplacianEigenvectorPE.__call__`` (same file and
    licence): per potential, the ``k`` smallest eigenpairs of the dense ``L_q`` by
    ``np.linalg.eigh``, zero-padded to ``k``; here as ``([Q, k], [N, Q, k])`` arrays, with
    ``dtype=torch.float64`` passed to ``get_mag_laplacian`` (its default is float32)."""
    edge_index, edge_weight_list = multi_q_get_mag_laplacian(
        edge_index, edge_weight, normalization='sym', dtype=torch.float64,
        num_nodes=num_nodes, q=q, dynamic_q=dynamic_q, multiple_q=multiple_q)
    pe_list, eigvals_list = [], []
    for edge_weight in edge_weight_list:
        L = to_scipy_sparse_matrix(edge_index, edge_weight, num_nodes)
        eig_vals, eig_vecs = np.linalg.eigh(L.toarray())
        sort = eig_vals.argsort()[:k]
        eig_vals = eig_vals[sort]
        eig_vecs = eig_vecs[:, sort]
        if len(eig_vals) < k:
            eig_vals = np.pad(eig_vals, (0, k - len(eig_vals)))
            eig_vecs = np.pad(eig_vecs, ((0, 0), (0, k - eig_vecs.shape[-1])))
        pe_list.append(eig_vecs[:, None])
        eigvals_list.append(eig_vals[None])
    return np.concatenate(eigvals_list), np.concatenate(pe_list, axis=1)


# ---------------------------------------------------------------------------------------------
# Helpers


def random_digraph(seed, sizes=(7, 5), p=0.35, reciprocal=0.3, isolated=2, weighted=False):
    """A directed graph of ``len(sizes)`` random components (edge probability ``p``, a
    fraction ``reciprocal`` of the edges also given the other way; a component may split
    further), ``isolated`` isolated nodes, nodes shuffled; no self loops or duplicates.
    Returns ``(edge_index, edge_weight or None, n)``."""
    rng = np.random.default_rng(seed)
    edges, offset = [np.zeros((2, 0), dtype=np.int64)], 0
    for size in sizes:
        a = np.triu(rng.random((size, size)) < p, 1)
        src, dst = np.nonzero(a)
        flip = rng.random(src.size) < 0.5
        src, dst = np.where(flip, dst, src), np.where(flip, src, dst)
        both = rng.random(src.size) < reciprocal
        src, dst = np.concatenate([src, dst[both]]), np.concatenate([dst, src[both]])
        edges.append(np.stack([src, dst]) + offset)
        offset += size
    n = offset + isolated
    perm = rng.permutation(n)
    ei = torch.from_numpy(perm[np.concatenate(edges, axis=1)]).long()
    weight = torch.from_numpy(rng.uniform(0.5, 2.0, ei.size(1))) if weighted else None
    return ei, weight, n


def dense_eigenpairs(ei, n, q, **kwargs):
    """Our full spectrum of one graph: ``([Q, n], [Q, n, n])`` numpy arrays."""
    out = magnetic_eigenpairs(ei, n, n, q, **kwargs)
    return out.eigvals[0].numpy(), out.eigvecs.permute(1, 0, 2).numpy()


def clusters(vals, gap=1e-6):
    """Index ranges of the runs of equal eigenvalues (within ``gap``) of sorted ``vals``."""
    cuts = [0] + [j for j in range(1, len(vals)) if vals[j] - vals[j - 1] > gap] + [len(vals)]
    return [range(a, b) for a, b in zip(cuts[:-1], cuts[1:], strict=True)]


def projector(vecs):
    return vecs @ vecs.conj().T


def compare_with_reference(ours_vals, ours_vecs, ref_vals, ref_vecs, chung_nodes=()):
    """Max differences ``(eigenvalues, projectors)`` of our full spectrum against a
    reference's, each eigenspace compared whole. ``chung_nodes``: isolated nodes where the
    reference puts 1 on the diagonal of ``L_sym`` and we put 0 (Chung's convention, as
    LapPE); their indicator vectors are eigenvectors of both, of eigenvalue 1 there and 0
    here, so the reference's spectrum and eigenspaces are mapped accordingly."""
    iso = np.zeros((len(ours_vals), len(ours_vals)))
    iso[list(chung_nodes), list(chung_nodes)] = 1.0
    moved = ref_vals.copy()
    ones = np.argsort(np.abs(ref_vals - 1.0), kind="stable")[:len(chung_nodes)]
    assert np.allclose(ref_vals[ones], 1.0)
    moved[ones] = 0.0
    val_diff = np.abs(np.sort(moved) - ours_vals).max()
    proj_diff = 0.0
    for run in clusters(ours_vals):
        value = ours_vals[run[0]]
        ref = projector(ref_vecs[:, np.abs(ref_vals - value) < 1e-6])
        ref = ref - iso * (abs(value - 1.0) < 1e-6) + iso * (abs(value) < 1e-6)
        proj_diff = max(proj_diff, np.abs(projector(ours_vecs[:, list(run)]) - ref).max())
    return val_diff, proj_diff


def isolated_nodes(ei, n):
    return sorted(set(range(n)) - set(ei.flatten().tolist()))


def assert_same_eigenpairs(vals, vecs_a, vecs_b, atol=1e-5):
    """Two solves of one graph and potential (``vals [k]``, ``vecs [n, k]``, complex, the same
    canonical phases): equal columns where the eigenvalue is simple and its phase statistic
    decisive (``|sum v |v|^2|`` not near 0: else the fallback may pick another node, as for a
    vector an automorphism negates), equal projectors on every other run of equal
    eigenvalues lying inside the ``k`` columns."""
    for run in clusters(vals, gap=1e-5):
        v = vecs_a[:, run[0]]
        decisive = abs((v * np.abs(v) ** 2).sum()) > 1e-3 * np.abs(v).max() ** 3
        if len(run) == 1 and decisive:
            np.testing.assert_allclose(v, vecs_b[:, run[0]], atol=atol)
        elif run[-1] < len(vals) - 1 or len(run) == 1:
            np.testing.assert_allclose(projector(vecs_a[:, list(run)]),
                                       projector(vecs_b[:, list(run)]), atol=atol)


# ---------------------------------------------------------------------------------------------
# The cross-checks


REFERENCE_GRAPHS = [dict(sizes=(8, 5), isolated=2), dict(sizes=(12,), isolated=0, p=0.3),
                    dict(sizes=(6, 6, 3), isolated=1, reciprocal=0.6),
                    dict(sizes=(10, 4), isolated=3, p=0.5, reciprocal=0.0)]


@pytest.mark.parametrize("graph", range(len(REFERENCE_GRAPHS)))
@pytest.mark.parametrize("normalization", ["sym", "none"])
@pytest.mark.parametrize("q,relative", [(0.0, False), (0.1, False), (0.25, False),
                                        (0.5, False), (0.25, True)])
def test_equals_digraph_transformers_magnetic_laplacian(graph, normalization, q, relative):
    ei, _, n = random_digraph(100 + graph, **REFERENCE_GRAPHS[graph])
    vals, vecs = dense_eigenpairs(ei, n, q, normalization=normalization, relative_q=relative)
    ref_vals, ref_vecs, _ = digraph_transformer_eigv_magnetic_laplacian(
        ei[0].numpy(), ei[1].numpy(), np.array([n, 0]), n, k=n, k_excl=0, q=q,
        q_absolute=not relative, norm_comps_sep=False, l2_norm=True, sign_rotate=False,
        use_symmetric_norm=normalization == "sym")
    chung = isolated_nodes(ei, n) if normalization == "sym" else []
    val_diff, proj_diff = compare_with_reference(vals[0], vecs[0], ref_vals, ref_vecs, chung)
    assert val_diff < 1e-6 and proj_diff < 1e-6, (val_diff, proj_diff)


# (the reference builds its phase from a tensor q under dynamic_q: numpy and torch warn)
@pytest.mark.filterwarnings("ignore:__array_wrap__:DeprecationWarning",
                            "ignore:To copy construct from a tensor:UserWarning")
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dynamic_q", [False, True])
def test_equals_multi_q_maglap(seed, weighted, dynamic_q):
    # Multi-q's operator sums an edge given both ways as two edges (entry 2 cos(2 pi q) on a
    # degree of 2): the same as L_q only where no edge is reciprocal, so none is here
    ei, weight, n = random_digraph(200 + seed, sizes=(9, 5), reciprocal=0.0, isolated=2,
                                   weighted=weighted)
    q0, num_q = 0.07, 3
    qs = tuple(q0 * i for i in range(1, num_q + 1))  # Multi-q's potentials: q0, 2 q0, ...
    vals, vecs = dense_eigenpairs(ei, n, qs, edge_weight=weight, relative_q=dynamic_q)
    ref_vals, ref_vecs = multi_q_eigenpairs(ei, weight, n, n, q0, dynamic_q, num_q)
    for slot in range(num_q):
        val_diff, proj_diff = compare_with_reference(
            vals[slot], vecs[slot], ref_vals[slot], ref_vecs[:, slot], isolated_nodes(ei, n))
        assert val_diff < 1e-6 and proj_diff < 1e-6, (slot, val_diff, proj_diff)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("normalization", ["sym", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_q0_equals_the_laplacian_eigenpairs_of_the_symmetrized_graph(seed, normalization,
                                                                     weighted):
    ei, weight, n = random_digraph(300 + seed, sizes=(9, 6), isolated=2, weighted=weighted)
    k = 10
    exact = laplacian_eigenpairs(ei, n, k, edge_weight=weight, normalization=normalization,
                                 keep_trivial=True, dtype=torch.float64)
    ours_exact = magnetic_eigenpairs(ei, n, k, 0.0, edge_weight=weight,
                                     normalization=normalization)
    torch.testing.assert_close(ours_exact.eigvals[:, 0], exact.eigvals, atol=1e-12, rtol=0)


# ---------------------------------------------------------------------------------------------
# Conventions, batching, solvers


def test_self_loops_duplicates_and_weights():
    ei = torch.tensor([[0, 1, 1, 2, 2, 3, 0], [1, 2, 2, 0, 2, 0, 3]])
    weight = torch.tensor([1.0, 0.5, 2.0, 3.0, 4.0, 1.5, 0.0])
    # duplicates: the largest weight; the self loop and the weight-0 edge are no edges
    clean = magnetic_eigenpairs(torch.tensor([[0, 1, 2, 3], [1, 2, 0, 0]]), 4, 4, (0.1, 0.3),
                                edge_weight=torch.tensor([1.0, 2.0, 3.0, 1.5]))
    dirty = magnetic_eigenpairs(ei, 4, 4, (0.1, 0.3), edge_weight=weight)
    torch.testing.assert_close(dirty.eigvals, clean.eigvals, atol=1e-12, rtol=0)
    torch.testing.assert_close(dirty.eigvecs, clean.eigvecs, atol=1e-10, rtol=0)
    # a reversed graph has the conjugate Laplacian: same eigenvalues, conjugate vectors
    rev = magnetic_eigenpairs(ei.flip(0), 4, 4, (0.1, 0.3), edge_weight=weight)
    torch.testing.assert_close(rev.eigvals, clean.eigvals, atol=1e-12, rtol=0)
    torch.testing.assert_close(rev.eigvecs, clean.eigvecs.conj(), atol=1e-10, rtol=0)


def noisy_batch(seed, count=4, weighted=False, big=False):
    """A batch of :func:`random_digraph` graphs (reciprocal edges, isolated nodes, several
    components) with self loops and duplicate edges added; ``big``: one graph above the
    compiled solver's own size limit (LAPACK's ``zheevr`` path). Returns ``(edge_index,
    edge_weight, ptr)``."""
    rng = np.random.default_rng(seed)
    edges, weights, ptr = [], [], [0]
    for g in range(count):
        sizes = (int(rng.integers(2, 12)), int(rng.integers(1, 6)))
        if big and g == 1:
            sizes = (SMALL_EIGH_MAX + 8,)
        ei, w, n = random_digraph(seed * 100 + g, sizes=sizes, p=float(rng.uniform(0.15, 0.6)),
                                  reciprocal=float(rng.uniform(0, 0.7)),
                                  isolated=int(rng.integers(0, 3)), weighted=weighted)
        w = torch.ones(ei.size(1), dtype=torch.float64) if w is None else w
        loops = torch.from_numpy(rng.choice(n, size=2)).long()
        dup = ei[:, : min(3, ei.size(1))]
        ei = torch.cat([ei, loops.expand(2, -1), dup], 1)
        w = torch.cat([w, torch.full((2,), 0.7, dtype=torch.float64),
                       torch.full((dup.size(1),), 0.5, dtype=torch.float64)])
        edges.append(ei + ptr[-1])
        weights.append(w)
        ptr.append(ptr[-1] + n)
    weight = torch.cat(weights) if weighted else None
    return torch.cat(edges, 1), weight, torch.tensor(ptr)


def assert_kernels_agree(ei, weight, ptr, k, q, **kwargs):
    """The compiled kernel (``k`` pairs) against the batched torch reference (the full
    spectrum): eigenvalues to 1e-10, masks equal, vectors (same canonical phases) equal where
    the eigenvalue is simple and its phase statistic decisive, projectors equal on the other
    runs of equal eigenvalues (those lying whole inside the ``k`` columns); two compiled runs
    bit-identical."""
    num_nodes = int(ptr[-1])
    sizes = ptr.diff()
    full = max(int(sizes.max()), 1)
    ours = magnetic_eigenpairs(ei, num_nodes, k, q, ptr=ptr, edge_weight=weight,
                               kernel="compiled", **kwargs)
    again = magnetic_eigenpairs(ei, num_nodes, k, q, ptr=ptr, edge_weight=weight,
                                kernel="compiled", **kwargs)
    assert torch.equal(ours.eigvals, again.eigvals) and torch.equal(ours.eigvecs, again.eigvecs)
    ref = magnetic_eigenpairs(ei, num_nodes, full, q, ptr=ptr, edge_weight=weight,
                              kernel="tensor", **kwargs)
    m = min(k, full)
    torch.testing.assert_close(ours.eigvals[..., :m], ref.eigvals[..., :m], atol=1e-10, rtol=0)
    assert torch.equal(ours.mask, torch.arange(k) < sizes.unsqueeze(1))
    for g in range(ptr.numel() - 1):
        rows = slice(int(ptr[g]), int(ptr[g + 1]))
        n = int(sizes[g])
        for slot in range(len(q)):
            vals = ref.eigvals[g, slot, :n].numpy()
            a, b = ours.eigvecs[rows, slot].numpy(), ref.eigvecs[rows, slot].numpy()
            for run in clusters(vals, gap=1e-5):
                if run[-1] >= k:
                    break
                v = a[:, run[0]]
                decisive = abs((v * np.abs(v) ** 2).sum()) > 1e-3 * np.abs(v).max() ** 3
                if len(run) == 1 and decisive:
                    np.testing.assert_allclose(v, b[:, run[0]], atol=1e-8)
                else:
                    np.testing.assert_allclose(projector(a[:, list(run)]),
                                               projector(b[:, list(run)]), atol=1e-8)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("normalization", ["sym", "none"])
@pytest.mark.parametrize("weighted,relative", [(False, False), (True, False), (False, True)])
def test_compiled_kernel_equals_the_tensor_reference(seed, normalization, weighted, relative):
    ei, weight, ptr = noisy_batch(seed, weighted=weighted, big=seed == 0)
    assert_kernels_agree(ei, weight, ptr, 10, (0.0, 0.1, 0.25, 0.5),
                         normalization=normalization, relative_q=relative)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 30), k=st.integers(1, 12),
       p=st.floats(0.05, 0.9), reciprocal=st.floats(0.0, 1.0), isolated=st.integers(0, 3),
       q=st.floats(0.0, 0.5), weighted=st.booleans(), sym=st.booleans())
def test_compiled_kernel_equals_the_reference_on_generated_graphs(seed, n, k, p, reciprocal,
                                                                 isolated, q, weighted, sym):
    ei, weight, num_nodes = random_digraph(seed, sizes=(n, max(n // 3, 1)), p=p,
                                           reciprocal=reciprocal, isolated=isolated,
                                           weighted=weighted)
    assert_kernels_agree(ei, weight, torch.tensor([0, num_nodes]), k, (q,),
                         normalization="sym" if sym else "none")


def test_threads_split_a_batch_without_changing_a_bit():
    ei, weight, ptr = noisy_batch(11, count=300, weighted=True)  # > 2 x 1024 nodes
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = magnetic_eigenpairs(ei, int(ptr[-1]), 6, (0.1, 0.2), ptr=ptr, edge_weight=weight)
        torch.set_num_threads(2)
        two = magnetic_eigenpairs(ei, int(ptr[-1]), 6, (0.1, 0.2), ptr=ptr, edge_weight=weight)
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(one.eigvals, two.eigvals) and torch.equal(one.eigvecs, two.eigvecs)


def test_canonical_phases():
    gen = torch.Generator().manual_seed(0)
    vecs = torch.randn(3, 7, 4, dtype=torch.complex128, generator=gen)
    vecs[1, :, 2] = 0  # a padded column
    turned = vecs * canonical_phases(vecs)
    s = (turned * turned.abs().square()).sum(-2)
    assert (s.imag.abs() < 1e-12).all() and (s.real >= 0).all()
    # the result does not depend on the phase the solver returned, nor on the node order
    phase = torch.polar(torch.ones(3, 1, 4, dtype=torch.float64),
                        torch.rand(3, 1, 4, generator=gen, dtype=torch.float64) * 6.28)
    torch.testing.assert_close((vecs * phase) * canonical_phases(vecs * phase), turned)
    perm = torch.randperm(7, generator=gen)
    torch.testing.assert_close(vecs[:, perm] * canonical_phases(vecs[:, perm]), turned[:, perm])
    # on real vectors (times any phase): LapPE's canonical signs
    real = torch.randn(6, 5, generator=gen, dtype=torch.float64)
    real[:, 1] = torch.tensor([1.0, -1.0, 0.5, -0.5, 0.0, 0.0])  # sum v^3 = 0: the fallback
    expected = real * canonical_signs(real)
    got = (real * phase[0, 0, 0]) * canonical_phases(real * phase[0, 0, 0])
    torch.testing.assert_close(got, expected.to(got.dtype))


@pytest.mark.parametrize("lanczos_min_nodes", [10**9, 30])
def test_sparse_solver_equals_dense(lanczos_min_nodes, monkeypatch):
    # one graph: a component above the dense limit, small components and isolated nodes;
    # solved by ARPACK, then with the 40-node component by thick-restart Lanczos
    monkeypatch.setattr(magnetic, "LANCZOS_MIN_NODES", lanczos_min_nodes)
    ei, weight, n = random_digraph(500, sizes=(40, 6, 3), isolated=3, p=0.15, weighted=True)
    q = (0.0, 0.2)
    dense = magnetic_eigenpairs(ei, n, 12, q, edge_weight=weight)
    sparse = magnetic_eigenpairs(ei, n, 12, q, edge_weight=weight, dense_max_nodes=20)
    torch.testing.assert_close(sparse.eigvals, dense.eigvals, atol=1e-8, rtol=0)
    for slot in range(len(q)):
        assert_same_eigenpairs(dense.eigvals[0, slot].numpy(), dense.eigvecs[:, slot].numpy(),
                               sparse.eigvecs[:, slot].numpy(), atol=1e-6)
    # a batch: the large graph goes to the sparse path, the others stay dense
    small, _, m = random_digraph(501, sizes=(5,), isolated=0)
    both = magnetic_eigenpairs(torch.cat([small, ei + m], 1), m + n, 12, q,
                               ptr=torch.tensor([0, m, m + n]), edge_weight=torch.cat(
                                   [torch.ones(small.size(1), dtype=weight.dtype), weight]),
                               dense_max_nodes=20)
    torch.testing.assert_close(both.eigvals[1], sparse.eigvals[0], atol=1e-8, rtol=0)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(5, 16))
def test_relabelling_the_nodes_permutes_the_rows(seed, n):
    ei, _, _ = random_digraph(seed, sizes=(n,), isolated=0, p=0.4)
    q = (0.1, 0.25)
    base = magnetic_eigenpairs(ei, n, n, q)
    perm = torch.from_numpy(np.random.default_rng(seed).permutation(n))
    inv = torch.argsort(perm)
    permuted = magnetic_eigenpairs(inv[ei], n, n, q)  # node i is node inv[i] there
    torch.testing.assert_close(permuted.eigvals, base.eigvals, atol=1e-10, rtol=0)
    for slot in range(len(q)):
        assert_same_eigenpairs(base.eigvals[0, slot].numpy(), base.eigvecs[perm, slot].numpy(),
                               permuted.eigvecs[:, slot].numpy(), atol=1e-8)


def test_bad_inputs_name_the_problem():
    for bad in (-0.1, 0.6, [], [0.1, 0.7], True, "0.1", float("nan")):
        with pytest.raises(ValueError, match=r"^q must be a number in \[0, 0.5\] or a non-empty "
                                             r"list of them, got "):
            magnetic_eigenpairs(torch.tensor([[0], [1]]), 2, 2, bad)
    with pytest.raises(ValueError, match="edge_index contains node index 5, out of range"):
        magnetic_eigenpairs(torch.tensor([[0], [5]]), 3, 2)
    with pytest.raises(ValueError, match="edge_weight contains negative values"):
        magnetic_eigenpairs(torch.tensor([[0], [1]]), 3, 2, edge_weight=torch.tensor([-1.0]))
    with pytest.raises(ValueError, match=r"^normalization must be one of \('sym', 'none'\), "
                                         r"got 'rw'$"):
        magnetic_eigenpairs(torch.tensor([[0], [1]]), 2, 2, normalization="rw")
