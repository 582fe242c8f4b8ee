"""A property sweep of every transform over generated graphs (issue 13): empty graphs, isolated
nodes, several components, multi-edges, self loops, directed edges, zero and huge weights,
N <= k, regular and strongly regular graphs with repeated eigenvalues, sizes around ``k`` and
``dim``. For each graph and transform: finite output of the right shape, masks, permutation
equivariance, Batch == per graph, and an independent reference (numpy ``eigh`` of the
Laplacian, a numpy random walk and PyG's ``AddRandomWalkPE``, a linear program for ORC); RWSE
and LCP also through ``OnTheFlyPE`` and ``precompute``.

``make test`` runs a quick profile; ``make test-slow`` runs 10,000 graphs per transform.
"""

from __future__ import annotations

import os

import networkx as nx
import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog
from scipy.sparse.csgraph import connected_components, shortest_path
from torch_geometric.data import Batch, Data

from graphpe.transforms import LCP, RFP, RWSE, LaplacianPE, OnTheFlyPE, precompute
from tests.conftest import graph_families, nx_to_data

QUICK = 80
SWEEP = int(os.environ.get("GRAPHPE_SWEEP_EXAMPLES", 10_000))  # graphs per transform, slow suite
K, WALK, DIM, STEPS, DRAWS = 4, 6, 4, 3, 2
FAMILIES = {**graph_families(), "k33": nx.complete_bipartite_graph(3, 3),
            "clebsch_like": nx.circulant_graph(16, [1, 4, 6, 7]),
            "paley9": nx.paley_graph(9).to_undirected(), "cycle4": nx.cycle_graph(4),
            "triangle": nx.cycle_graph(3)}
WEIGHTS = {"none": None, "mixed": [0.0, 0.5, 1.0, 2.0], "huge64": [1e200, 3e200],
           "huge32": [1e30, 3e30], "tiny64": [1e-200, 5e-200]}


@st.composite
def raw_graph(draw, max_nodes: int = 18) -> Data:
    """Any edge list (directions, duplicates, self loops) and optionally weights."""
    n = draw(st.integers(0, max_nodes))
    edges = [] if n == 0 else draw(st.lists(
        st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=3 * n))
    data = Data(edge_index=torch.tensor(edges, dtype=torch.long).reshape(-1, 2).t()
                .contiguous(), num_nodes=n)
    kind = draw(st.sampled_from(sorted(WEIGHTS)))
    if WEIGHTS[kind] is not None:
        dtype = torch.float32 if kind == "huge32" else torch.float64
        values = draw(st.lists(st.sampled_from(WEIGHTS[kind]), min_size=len(edges),
                               max_size=len(edges)))
        data.edge_weight = torch.tensor(values, dtype=dtype)
    return data


@st.composite
def family_graph(draw) -> Data:
    data = nx_to_data(FAMILIES[draw(st.sampled_from(sorted(FAMILIES)))])
    perm = draw(st.permutations(range(data.num_nodes)))
    return permute(data, torch.tensor(perm, dtype=torch.long))


def sweep_graphs() -> st.SearchStrategy[Data]:
    union = st.tuples(family_graph(), raw_graph(8)).map(lambda gs: disjoint_union(*gs))
    return st.one_of(raw_graph(), family_graph(), union)


def disjoint_union(a: Data, b: Data) -> Data:
    if (a.get("edge_weight") is None) != (b.get("edge_weight") is None):
        a, b = (strip(a), strip(b))
    out = Batch.from_data_list([a, b])
    data = Data(edge_index=out.edge_index, num_nodes=out.num_nodes)
    if out.get("edge_weight") is not None:
        data.edge_weight = out.edge_weight.double()
    return data


def strip(g: Data) -> Data:
    return Data(edge_index=g.edge_index, num_nodes=g.num_nodes)


def batch_with(data: Data, mates: list[Data]) -> tuple[Batch, Data]:
    """``data`` batched after its mates (weights dropped from all when only some have them,
    which PyG's collation requires), and ``data`` as batched."""
    graphs = [*[m.clone() for m in mates], data.clone()]
    if len({g.get("edge_weight") is None for g in graphs}) > 1:
        graphs = [strip(g) for g in graphs]
    return Batch.from_data_list(graphs), graphs[-1]


def permute(data: Data, perm: torch.Tensor) -> Data:
    """The graph with node ``perm[i]`` renamed ``i``."""
    inverse = torch.empty_like(perm)
    inverse[perm] = torch.arange(perm.numel())
    out = Data(edge_index=inverse[data.edge_index], num_nodes=data.num_nodes)
    if data.get("edge_weight") is not None:
        out.edge_weight = data.edge_weight
    return out


def dense_undirected(data: Data, loops: bool) -> np.ndarray:
    """The weighted adjacency graphpe reads: both directions, duplicates by their largest
    weight, self loops on the diagonal (or dropped)."""
    n = data.num_nodes
    a = np.zeros((n, n))
    ei = data.edge_index.numpy()
    w = (np.ones(ei.shape[1]) if data.get("edge_weight") is None
         else data.edge_weight.double().numpy())
    for (u, v), x in zip(ei.T, w, strict=True):
        if u == v and not loops:
            continue
        a[u, v] = a[v, u] = max(a[u, v], x)
    return a


# ----------------------------------------------------------------------------- references


def rwse_reference(data: Data) -> np.ndarray:
    a = dense_undirected(data, loops=True)
    a = a / a.max() if a.size and a.max() > 0 else a  # P = D^-1 A is scale-free
    deg = a.sum(1)
    p = np.divide(a, deg[:, None], out=np.zeros_like(a), where=deg[:, None] > 0)
    out, power = np.zeros((data.num_nodes, WALK)), np.eye(data.num_nodes)
    for t in range(WALK):
        power = power @ p
        out[:, t] = np.diag(power)
    return out


def laplacian_reference(data: Data) -> tuple[np.ndarray, int]:
    """Eigenvalues of the symmetric normalized Laplacian, and the number of components."""
    a = dense_undirected(data, loops=False)
    if a.size and a.max() > 0:
        a = a / a.max()
    deg = a.sum(1)
    dis = np.divide(1.0, np.sqrt(deg), out=np.zeros_like(deg), where=deg > 0)
    lap = np.diag((deg > 0).astype(float)) - dis[:, None] * a * dis[None, :]
    comps = connected_components(a > 0, directed=False)[0] if data.num_nodes else 0
    return np.linalg.eigvalsh(lap), comps


def orc_profile_reference(data: Data) -> np.ndarray:
    """[min, max, mean, std, median] per node of exact ORC (alpha 0, unweighted simple graph),
    each edge's transport problem solved as a linear program."""
    n = data.num_nodes
    adj = dense_undirected(strip(data), loops=False) > 0
    dist = shortest_path(adj.astype(float), unweighted=True, directed=False)
    per_node = [[] for _ in range(n)]
    for x, y in zip(*np.nonzero(np.triu(adj)), strict=True):
        nx_, ny_ = np.flatnonzero(adj[x]), np.flatnonzero(adj[y])
        cost = dist[np.ix_(nx_, ny_)].ravel()
        rows, cols = len(nx_), len(ny_)
        a_eq = np.zeros((rows + cols, rows * cols))
        for i in range(rows):
            a_eq[i, i * cols:(i + 1) * cols] = 1
        for j in range(cols):
            a_eq[rows + j, j::cols] = 1
        b_eq = np.concatenate([np.full(rows, 1 / rows), np.full(cols, 1 / cols)])
        w1 = linprog(cost, A_eq=a_eq, b_eq=b_eq, bounds=(0, None), method="highs").fun
        for node in (x, y):
            per_node[node].append(1.0 - w1)
    out = np.zeros((n, 5))
    for i, vals in enumerate(per_node):
        if vals:
            v = np.array(vals)
            out[i] = [v.min(), v.max(), v.mean(), v.std(), np.median(v)]
    return out


# ----------------------------------------------------------------------------- checks


def check_rwse(data: Data, batch_mates: list[Data]) -> None:
    out = RWSE(WALK)(data.clone()).rwse
    assert out.shape == (data.num_nodes, WALK) and bool(torch.isfinite(out).all())
    ref = rwse_reference(data)
    np.testing.assert_allclose(out.numpy(), ref, atol=2e-6)
    if data.get("edge_weight") is None and data.num_nodes:
        from torch_geometric.transforms import AddRandomWalkPE

        a = dense_undirected(data, loops=True)
        ei = torch.from_numpy(np.stack(np.nonzero(a))).long()
        pyg = AddRandomWalkPE(WALK)(Data(edge_index=ei, num_nodes=data.num_nodes))
        np.testing.assert_allclose(out.numpy(), pyg.random_walk_pe.numpy(), atol=2e-6)
    check_equivariant_and_batched(RWSE(WALK), "rwse", data, batch_mates)


def check_lap(data: Data, batch_mates: list[Data]) -> None:
    out = LaplacianPE(K)(data.clone())
    n = data.num_nodes
    # eigenvalues and mask are stored per node (every node of a graph holds its graph's row)
    assert out.lap_pe.shape == out.lap_eigvals.shape == out.lap_mask.shape == (n, K)
    assert bool(torch.isfinite(out.lap_pe).all()) and bool(torch.isfinite(out.lap_eigvals).all())
    if n == 0:
        return
    assert bool((out.lap_eigvals == out.lap_eigvals[:1]).all())
    ref, comps = laplacian_reference(data)
    count = min(K, n - comps)
    assert int(out.lap_mask[0].sum()) == count
    np.testing.assert_allclose(out.lap_eigvals[0, :count].numpy(), ref[comps:comps + count],
                               atol=1e-4)
    vecs = out.lap_pe[:, :count].double()  # orthonormal columns, zero padding
    np.testing.assert_allclose((vecs.T @ vecs).numpy(), np.eye(count), atol=1e-4)
    assert not bool(out.lap_pe[:, count:].any())
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(n))
    moved = LaplacianPE(K)(permute(data, perm))
    torch.testing.assert_close(moved.lap_eigvals, out.lap_eigvals, atol=1e-4, rtol=0)
    full = np.concatenate([ref, [np.inf]])
    for j in range(count):  # simple eigenvalues: the same vector up to sign
        lam = ref[comps + j]
        if min(abs(lam - full[comps + j - 1]) if comps + j > 0 else np.inf,
               abs(full[comps + j + 1] - lam)) > 1e-3:
            cos = float(moved.lap_pe[:, j].double() @ out.lap_pe[perm, j].double())
            assert abs(abs(cos) - 1) < 1e-3
    batch, alone = batch_with(data, batch_mates)
    want = LaplacianPE(K)(alone).lap_eigvals
    got = LaplacianPE(K)(batch).lap_eigvals[batch.num_nodes - n:]
    torch.testing.assert_close(got, want, atol=1e-4, rtol=0)
    listed = precompute(batch.to_data_list(), LaplacianPE(K), progress=False)
    torch.testing.assert_close(listed[-1].lap_eigvals, want, atol=1e-4, rtol=0)


def check_lcp(data: Data, batch_mates: list[Data]) -> None:
    out = LCP()(data.clone()).lcp
    assert out.shape == (data.num_nodes, 5) and bool(torch.isfinite(out).all())
    if data.num_nodes <= 10:
        np.testing.assert_allclose(out.numpy(), orc_profile_reference(data), atol=1e-5)
    check_equivariant_and_batched(LCP(), "lcp", data, batch_mates)


def check_rfp(data: Data, batch_mates: list[Data]) -> None:
    out = RFP(DIM, STEPS, num_draws=DRAWS, seed=0)(data.clone()).rfp
    n = data.num_nodes
    assert out.shape == (n, DRAWS, DIM * (STEPS + 1)) and bool(torch.isfinite(out).all())
    blocks = out.reshape(n, DRAWS, STEPS + 1, DIM).permute(1, 2, 0, 3).double()
    gram = blocks.transpose(-1, -2) @ blocks  # [draws, steps + 1, dim, dim]
    diag = gram.diagonal(dim1=-2, dim2=-1)
    # every column orthonormal to the others, of norm 1 or exactly 0 (no noise columns)
    assert bool(((diag - 1).abs() < 1e-4).logical_or(diag == 0).all())
    if n == 0:
        return
    off = gram - torch.diag_embed(diag)
    assert float(off.abs().max()) < 1e-4
    assert int((diag > 0.5).sum(-1).max()) <= n  # rank at most n
    batch, _ = batch_with(data, batch_mates)
    assert bool(torch.isfinite(RFP(DIM, STEPS, seed=1)(batch).rfp).all())


def check_equivariant_and_batched(transform, attr: str, data: Data,
                                  batch_mates: list[Data]) -> None:
    out = getattr(transform(data.clone()), attr)
    perm = torch.randperm(data.num_nodes, generator=torch.Generator().manual_seed(1))
    moved = getattr(transform(permute(data, perm)), attr)
    torch.testing.assert_close(moved, out[perm], atol=2e-6, rtol=0)
    batch, alone = batch_with(data, batch_mates)
    want = getattr(transform(alone), attr)
    batched = getattr(transform(batch), attr)
    torch.testing.assert_close(batched[batched.size(0) - data.num_nodes:], want, atol=2e-6,
                               rtol=0)
    # the other entry points: OnTheFlyPE on the batch, precompute on the list of graphs
    fly = getattr(OnTheFlyPE([transform])(batch), attr)
    torch.testing.assert_close(fly, batched, atol=0, rtol=0)
    listed = precompute(batch.to_data_list(), transform, progress=False)
    torch.testing.assert_close(getattr(listed[-1], attr), want, atol=2e-6, rtol=0)


CHECKS = {"rwse": check_rwse, "lap": check_lap, "lcp": check_lcp, "rfp": check_rfp}


def run_sweep(name: str, examples: int) -> None:
    @settings(max_examples=examples, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(data=sweep_graphs(), mates=st.lists(raw_graph(10), max_size=2))
    def sweep(data, mates):
        CHECKS[name](data, mates)

    sweep()


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_sweep_quick(name):
    run_sweep(name, QUICK)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CHECKS))
def test_sweep_10k_graphs(name):
    run_sweep(name, SWEEP)
