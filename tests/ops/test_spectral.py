"""Spectral kernels (heat kernels, HKdiagSE, ElstaticSE) against scipy's expm and numpy
re-implementations of GraphGPS's functions (graphgps/transform/posenc_stats.py)."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.linalg as sla
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch_geometric.data import Batch, Data

from graphpe.ops.spectral import check_times, electrostatic_encoding, heat_kernel_diagonals
from graphpe.ops.walk import heat_kernels
from tests.conftest import graph_families, nx_to_data
from tests.ops.walk.test_pairs import raw_graph

TIMES = (0.0, 0.3, 1.0, 2.5, 7.0)


def dense_simple(data: Data) -> np.ndarray:
    """The adjacency of the undirected simple graph (loops dropped, duplicates merged)."""
    n = data.num_nodes
    a = np.zeros((n, n))
    for u, v in data.edge_index.t().tolist():
        if u != v:
            a[u, v] = a[v, u] = 1.0
    return a


def laplacian_np(a: np.ndarray, normalization: str = "none") -> np.ndarray:
    deg = a.sum(1)
    if normalization == "none":
        return np.diag(deg) - a
    dis = np.divide(1.0, np.sqrt(deg), out=np.zeros_like(deg), where=deg > 0)
    return np.diag((deg > 0).astype(float)) - dis[:, None] * a * dis[None, :]


# -- numpy re-implementations of GraphGPS's posenc_stats functions, as written there -------

def graphgps_heat_kernels_diag(a: np.ndarray, times) -> np.ndarray:
    """get_heat_kernels_diag(evects, evals, kernel_times, space_dim=0) on L = D - A."""
    evals, evects = np.linalg.eigh(laplacian_np(a))
    evects = evects / np.linalg.norm(evects, axis=0, keepdims=True)  # F.normalize(dim=0)
    keep = ~(evals < 1e-8)  # eigenvalues == 0 removed
    evals, evects = evals[keep], evects[:, keep]
    return np.stack([(np.exp(-t * evals) * evects ** 2).sum(1) for t in times], axis=1)


def graphgps_heat_kernels(a: np.ndarray, times) -> np.ndarray:
    """get_heat_kernels: the full kernels, ``[n, n, T]``."""
    evals, evects = np.linalg.eigh(laplacian_np(a))
    keep = ~(evals < 1e-8)
    evals, evects = evals[keep], evects[:, keep]
    return np.stack([(evects * np.exp(-t * evals)) @ evects.T for t in times], axis=-1)


def graphgps_electrostatic(a: np.ndarray, fix_nan: bool = False) -> np.ndarray:
    """get_electrostatic_function_encoding; with ``fix_nan`` an isolated node's ``1/d`` is 0
    and the std of one value 0 (graphpe's convention where GraphGPS gives NaN)."""
    n = a.shape[0]
    lap = laplacian_np(a)
    with np.errstate(divide="ignore", invalid="ignore"):  # NaN where GraphGPS has NaN
        inv = np.diag(lap) ** -1.0
        if fix_nan:
            inv[np.diag(lap) == 0] = 0.0
        dinv = np.eye(n) * inv
        adj = np.abs(lap)
        np.fill_diagonal(adj, 0.0)
        dinv_a = dinv @ adj
    pot = np.linalg.pinv(lap, rcond=1e-10, hermitian=True)
    pot = pot - np.diag(pot)  # column j minus its diagonal entry (broadcast, as in torch)
    if n == 1:
        std0 = std1 = np.zeros(1) if fix_nan else np.full(1, np.nan)
    else:
        std0, std1 = pot.std(0, ddof=1), pot.std(1, ddof=1)
    return np.stack([pot.min(0), pot.max(0), pot.mean(0), std0, pot.min(1), pot.max(0),
                     pot.mean(1), std1, (dinv_a * pot).sum(0), (dinv_a * pot).sum(1)], axis=1)


def components(a: np.ndarray) -> list[np.ndarray]:
    g = nx.from_numpy_array(a)
    return [np.array(sorted(c)) for c in nx.connected_components(g)]


# -- heat kernels ----------------------------------------------------------------------

FAMILIES = ["path7", "cycle8", "petersen", "paley13", "grid3x4", "two_triangles",
            "with_isolated", "single_node", "two_isolated", "edge", "tree", "er23"]


@pytest.mark.parametrize("name", FAMILIES)
@pytest.mark.parametrize("normalization", ["none", "sym"])
def test_heat_kernel_with_trivial_pairs_is_expm(name, normalization):
    data = nx_to_data(graph_families()[name])
    n = data.num_nodes
    lap = laplacian_np(dense_simple(data), normalization)
    want = np.stack([sla.expm(-t * lap) for t in TIMES], axis=-1)
    full = heat_kernels(data.edge_index, n, TIMES, normalization=normalization,
                        keep_trivial=True, dtype=torch.float64)
    np.testing.assert_allclose(full.values.view(n, n, -1).numpy(), want, atol=1e-10)
    diag = heat_kernel_diagonals(data.edge_index, n, TIMES, normalization=normalization,
                                 keep_trivial=True, dtype=torch.float64)
    np.testing.assert_allclose(diag.numpy(), np.diagonal(want).T, atol=1e-10)


@pytest.mark.parametrize("name", FAMILIES)
def test_default_heat_kernels_are_graphgps_and_drop_one_over_component_size(name):
    data = nx_to_data(graph_families()[name])
    n = data.num_nodes
    a = dense_simple(data)
    diag = heat_kernel_diagonals(data.edge_index, n, TIMES, dtype=torch.float64).numpy()
    np.testing.assert_allclose(diag, graphgps_heat_kernels_diag(a, TIMES), atol=1e-10)
    full = heat_kernels(data.edge_index, n, TIMES, dtype=torch.float64)
    np.testing.assert_allclose(full.values.view(n, n, -1).numpy(),
                               graphgps_heat_kernels(a, TIMES), atol=1e-10)
    # GraphGPS's diagonal = exp(-t L)_ii - 1/n_c (the projector on the component's constants)
    expm_diag = np.stack([np.diag(sla.expm(-t * laplacian_np(a))) for t in TIMES], axis=1)
    size = np.zeros(n)
    for comp in components(a):
        size[comp] = comp.size
    np.testing.assert_allclose(diag, expm_diag - 1.0 / size[:, None], atol=1e-10)


def test_weights_are_conductances():
    ei = torch.tensor([[0, 1, 1, 2, 2, 3], [1, 0, 2, 1, 3, 2]])
    w = torch.tensor([0.5, 0.5, 2.0, 2.0, 1.5, 1.5], dtype=torch.float64)
    a = np.zeros((4, 4))
    for (u, v), x in zip(ei.t().tolist(), w.tolist(), strict=True):
        a[u, v] = x
    got = heat_kernels(ei, 4, [0.7, 2.0], edge_weight=w, keep_trivial=True,
                       dtype=torch.float64).values.view(4, 4, 2)
    for s, t in enumerate([0.7, 2.0]):
        np.testing.assert_allclose(got[..., s].numpy(), sla.expm(-t * laplacian_np(a)),
                                   atol=1e-12)
    pot = electrostatic_encoding(ei, 4, edge_weight=w, dtype=torch.float64).numpy()
    np.testing.assert_allclose(pot, graphgps_electrostatic(a), atol=1e-10)


@settings(max_examples=40, deadline=None)
@given(graphs=st.lists(raw_graph(), min_size=1, max_size=4), keep=st.booleans())
def test_heat_batch_equals_per_graph_and_its_diagonal_is_hkdiag(graphs, keep):
    batch = Batch.from_data_list(graphs)
    diag = heat_kernel_diagonals(batch.edge_index, batch.num_nodes, TIMES, ptr=batch.ptr,
                                 keep_trivial=keep, dtype=torch.float64)
    full = heat_kernels(batch.edge_index, batch.num_nodes, TIMES, ptr=batch.ptr,
                        keep_trivial=keep, dtype=torch.float64)
    for k, data in enumerate(graphs):
        n, lo, hi = data.num_nodes, int(batch.ptr[k]), int(batch.ptr[k + 1])
        alone = heat_kernel_diagonals(data.edge_index, n, TIMES, keep_trivial=keep,
                                      dtype=torch.float64)
        torch.testing.assert_close(diag[lo:hi], alone, atol=1e-12, rtol=0)
        pairs = full.values[int(full.pair_ptr[k]):int(full.pair_ptr[k + 1])].view(n, n, -1)
        torch.testing.assert_close(pairs.diagonal(dim1=0, dim2=1).t(), alone, atol=1e-12,
                                   rtol=0)
        want = graphgps_heat_kernels(dense_simple(data), TIMES)
        if keep:
            want = np.stack([sla.expm(-t * laplacian_np(dense_simple(data))) for t in TIMES], -1)
        np.testing.assert_allclose(pairs.numpy(), want, atol=1e-10)


# -- electrostatics ----------------------------------------------------------------------

@pytest.mark.parametrize("name", FAMILIES)
def test_electrostatic_equals_graphgps(name):
    data = nx_to_data(graph_families()[name])
    a = dense_simple(data)
    got = electrostatic_encoding(data.edge_index, data.num_nodes, dtype=torch.float64).numpy()
    assert np.isfinite(got).all()
    want = graphgps_electrostatic(a)
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], atol=1e-10)
    isolated = (a.sum(1) == 0).any()
    # GraphGPS gives NaN in features 8-9 of every node when a node is isolated (1/0 in D^-1),
    # and in the std of a 1-node graph; graphpe gives 0 there
    assert finite.all() == (not isolated and data.num_nodes > 1)
    np.testing.assert_allclose(got, graphgps_electrostatic(a, fix_nan=True), atol=1e-10)


@settings(max_examples=50, deadline=None)
@given(data=raw_graph())
def test_electrostatic_per_component_is_graphgps_on_each_component(data):
    a = dense_simple(data)
    n = data.num_nodes
    whole = electrostatic_encoding(data.edge_index, n, dtype=torch.float64).numpy()
    np.testing.assert_allclose(whole, graphgps_electrostatic(a, fix_nan=True), atol=1e-9)
    parts = electrostatic_encoding(data.edge_index, n, per_component=True,
                                   dtype=torch.float64).numpy()
    for comp in components(a):
        np.testing.assert_allclose(parts[comp],
                                   graphgps_electrostatic(a[np.ix_(comp, comp)], fix_nan=True),
                                   atol=1e-9)
    if len(components(a)) == 1:
        np.testing.assert_allclose(parts, whole, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(graphs=st.lists(raw_graph(), min_size=1, max_size=4), per_component=st.booleans())
def test_electrostatic_batch_equals_per_graph(graphs, per_component):
    batch = Batch.from_data_list(graphs)
    got = electrostatic_encoding(batch.edge_index, batch.num_nodes, ptr=batch.ptr,
                                 per_component=per_component, dtype=torch.float64)
    for k, data in enumerate(graphs):
        alone = electrostatic_encoding(data.edge_index, data.num_nodes,
                                       per_component=per_component, dtype=torch.float64)
        torch.testing.assert_close(got[int(batch.ptr[k]):int(batch.ptr[k + 1])], alone,
                                   atol=1e-12, rtol=0)


# -- equivariance ------------------------------------------------------------------------

@st.composite
def graph_and_permutation(draw):
    data = draw(raw_graph())
    perm = draw(st.permutations(range(data.num_nodes)))
    return data, torch.tensor(perm, dtype=torch.long)


@settings(max_examples=50, deadline=None)
@given(case=graph_and_permutation(), per_component=st.booleans(),
       normalization=st.sampled_from(["none", "sym"]))
def test_permuting_the_nodes_permutes_the_encodings(case, per_component, normalization):
    """Node ``i`` of the input is node ``perm_inv[i]`` of the permuted graph: its encodings
    move with it (eigenvalue multiplicities and bases do not matter)."""
    data, perm = case
    n = data.num_nodes
    inv = torch.argsort(perm)  # new id of every old node
    moved = inv[data.edge_index]
    kw = {"dtype": torch.float64}
    for fn, extra in ((heat_kernel_diagonals, {"times": TIMES, "normalization": normalization}),
                      (electrostatic_encoding, {"per_component": per_component})):
        before = fn(data.edge_index, n, **extra, **kw)
        after = fn(moved, n, **extra, **kw)
        torch.testing.assert_close(after[inv], before, atol=1e-9, rtol=0)
    before = heat_kernels(data.edge_index, n, TIMES, normalization=normalization,
                          **kw).values.view(n, n, -1)
    after = heat_kernels(moved, n, TIMES, normalization=normalization,
                         **kw).values.view(n, n, -1)
    torch.testing.assert_close(after[inv][:, inv], before, atol=1e-9, rtol=0)


# -- settings and bad inputs -------------------------------------------------------------

def test_times_and_bad_inputs():
    assert check_times([1, 2.5]) == (1.0, 2.5)
    assert check_times(3) == (3.0,)
    assert check_times(torch.tensor([0.5, 1.0])) == (0.5, 1.0)
    assert check_times(range(1, 4)) == (1.0, 2.0, 3.0)
    ei = torch.tensor([[0, 1], [1, 0]])
    cases = [([], "times must not be empty: give at least one diffusion time"),
             ([1, -2], "times must be finite and non-negative, got -2"),
             ([1, float("nan")], "times must be finite and non-negative, got nan"),
             ([1, "a"], r"times must be numbers, got 'a' in \[1, 'a'\]"),
             ([True], r"times must be numbers, got True in \[True\]"),
             ("1,2", "times must be a sequence of non-negative numbers, got '1,2'"),
             (None, "times must be a sequence of non-negative numbers, got None")]
    for times, message in cases:
        with pytest.raises(ValueError, match=f"^{message}$"):
            heat_kernel_diagonals(ei, 2, times)
        with pytest.raises(ValueError, match=f"^{message}$"):
            heat_kernels(ei, 2, times)
    with pytest.raises(ValueError, match=r"normalization must be one of \('none', 'sym'\), "
                                         r"got 'rw'"):
        heat_kernel_diagonals(ei, 2, [1], normalization="rw")
    with pytest.raises(ValueError, match="per_component must be True or False, got 1"):
        electrostatic_encoding(ei, 2, per_component=1)
    with pytest.raises(ValueError, match=r"a graph has 2000 nodes: spectral encodings solve a "
                                         r"dense n x n eigenproblem per graph, and "
                                         r"max_nodes=1024"):
        electrostatic_encoding(ei, 2000)
    with pytest.raises(ValueError, match=r"a graph has 2000 nodes: all-pairs encodings "
                                         r"allocate n\^2 values per graph, and max_nodes=1024"):
        heat_kernels(ei, 2000, [1])
    # empty graphs and batches with empty graphs
    assert heat_kernel_diagonals(torch.zeros(2, 0, dtype=torch.long), 0, [1]).shape == (0, 1)
    assert electrostatic_encoding(torch.zeros(2, 0, dtype=torch.long), 0).shape == (0, 10)
    out = electrostatic_encoding(ei, 2, ptr=torch.tensor([0, 0, 2, 2]))
    assert out.shape == (2, 10) and out.dtype == torch.float32
