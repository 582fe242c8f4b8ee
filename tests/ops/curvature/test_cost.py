"""The exact Ollivier-Ricci solve on large graphs: its cost estimate, its budget, and its
chunked, threaded run (the same values as one call)."""

import networkx as nx
import numpy as np
import pytest
import torch

from graphpe.ops.curvature import (
    DEFAULT_MAX_TRANSPORT_CELLS,
    TransportBudgetError,
    compiled,
    local_curvature_profile,
    ollivier_ricci,
    orc_transport_cost,
)
from graphpe.ops.curvature.compiled import _orc_kernel, edge_chunks, solve_edges, upper_edges
from graphpe.ops.host import simple_csr
from graphpe.transforms import LCP
from tests.conftest import nx_to_data


def hub_graph(n: int = 120, hubs: int = 3, seed: int = 0) -> tuple[torch.Tensor, int]:
    """A sparse random graph plus a few hubs adjacent to a third of the nodes each, given with
    both directions, a duplicate edge and a self loop."""
    rng = np.random.default_rng(seed)
    g = nx.gnm_random_graph(n, 3 * n, seed=seed)
    for h in range(hubs):
        for v in rng.choice(n, size=n // 3, replace=False):
            if v != h:
                g.add_edge(h, int(v))
    ei = nx_to_data(g).edge_index
    extra = torch.tensor([[0, 5], [1, 5]])  # a duplicate of an edge and a self loop
    return torch.cat([ei, extra], dim=1), n


def brute_cells(edge_index: torch.Tensor, n: int, alpha: float) -> tuple[int, int, int]:
    nbrs = [set() for _ in range(n)]
    for u, v in edge_index.t().tolist():
        if u != v:
            nbrs[u].add(v)
            nbrs[v].add(u)
    sizes = []
    for x in range(n):
        for y in nbrs[x]:
            if x < y:
                sx = nbrs[x] | ({x} if alpha > 0 else set())
                sy = nbrs[y] | ({y} if alpha > 0 else set())
                sizes.append(len(sx) * len(sy))
    return len(sizes), sum(sizes), max(sizes, default=0)


@pytest.mark.parametrize("alpha", [0.0, 0.5])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cost_estimate_is_the_exact_cell_count(alpha, seed):
    ei, n = hub_graph(40 + 20 * seed, seed=seed)
    cost = orc_transport_cost(ei, n, alpha)
    assert (cost.edges, cost.cells, cost.largest) == brute_cells(ei, n, alpha)
    assert cost.seconds == cost.cells / compiled.ORC_CELLS_PER_SECOND


def test_cost_of_an_empty_graph():
    cost = orc_transport_cost(torch.zeros(2, 0, dtype=torch.long), 3)
    assert (cost.edges, cost.cells, cost.largest) == (0, 0, 0)


STAR_MESSAGE = (
    "exact Ollivier-Ricci curvature would solve 4 transport problems of 16 cells in all (the "
    "largest 4), roughly 0 s on one thread, past max_transport_cells=15. Use "
    "curvature='orc_bounds' (Jost-Liu lower and triangle upper bounds, curvature_bounds) or "
    "'forman' / 'afrc' (forman_curvature), which solve no transport problem, or pass a larger "
    "max_transport_cells (None: no limit) to solve it exactly.")


def test_budget_refuses_at_once_with_the_estimate():
    ei = nx_to_data(nx.star_graph(4)).edge_index  # 4 edges of 4 x 1 cells
    with pytest.raises(TransportBudgetError) as info:
        local_curvature_profile(ei, 5, max_transport_cells=15)
    assert str(info.value) == STAR_MESSAGE
    assert info.value.cost.cells == 16
    with pytest.raises(TransportBudgetError, match="past max_transport_cells=15"):
        local_curvature_profile(ei, 5, max_transport_cells=15, plan=_tensor_plan())
    with pytest.raises(TransportBudgetError, match="past max_transport_cells=15"):
        ollivier_ricci(ei, 5, max_transport_cells=15)
    with pytest.raises(TransportBudgetError, match="past max_transport_cells=15"):
        LCP(max_transport_cells=15)(nx_to_data(nx.star_graph(4)))
    # at the budget, and without one, it solves; the cheap curvatures never count cells
    exact = ollivier_ricci(ei, 5, max_transport_cells=16)
    assert torch.equal(exact, ollivier_ricci(ei, 5, max_transport_cells=None))
    local_curvature_profile(ei, 5, curvature="orc_bounds", max_transport_cells=0)
    local_curvature_profile(ei, 5, curvature="forman", max_transport_cells=0)


def test_budget_is_checked_and_not_in_the_cache_key():
    assert LCP().max_transport_cells == DEFAULT_MAX_TRANSPORT_CELLS
    assert repr(LCP(max_transport_cells=5)) == repr(LCP())
    assert LCP(max_transport_cells=None).max_transport_cells is None
    for bad in (-1, 1.5, "10", True):
        with pytest.raises(ValueError, match="max_transport_cells"):
            LCP(max_transport_cells=bad)
    with pytest.raises(ValueError, match="max_transport_cells"):
        ollivier_ricci(torch.tensor([[0], [1]]), 2, max_transport_cells=-1)


def _tensor_plan():
    from graphpe.ops.plan import ExecPlan

    return ExecPlan(kernel="tensor")


@pytest.mark.parametrize("alpha", [0.0, 0.5])
def test_chunked_threaded_solve_is_bit_identical(alpha):
    ei, n = hub_graph(150, hubs=4, seed=3)
    csr = simple_csr(ei, n)
    src, dst, _ = upper_edges(csr.indptr, csr.indices)
    one_call = _orc_kernel(csr.indptr, csr.indices, src, dst, alpha)
    for threads, chunk_cells in [(1, 50), (2, 7), (2, 1000), (3, 1 << 30)]:
        chunks = edge_chunks(compiled.transport_cells(csr.indptr, src, dst, alpha), threads,
                             chunk_cells)
        assert chunks[0][0] == 0 and chunks[-1][1] == src.shape[0]
        assert all(a < b == c for (a, b), (c, _) in zip(chunks, chunks[1:], strict=False))
        out = solve_edges(csr.indptr, csr.indices, src, dst, alpha, threads=threads,
                          progress=threads == 2, chunk_cells=chunk_cells)
        assert np.array_equal(out, one_call)
    profile, per_edge = local_curvature_profile(ei, n, alpha=alpha, threads=2, progress=False)
    reference = ollivier_ricci(ei, n, alpha, dtype=torch.float64, threads=1)
    assert torch.equal(per_edge, reference)


def test_interrupt_stops_between_chunks(monkeypatch):
    ei, n = hub_graph(150, hubs=4, seed=4)
    csr = simple_csr(ei, n)
    src, dst, _ = upper_edges(csr.indptr, csr.indices)
    solve = compiled._orc_into
    calls = []

    def interrupted(*args):
        calls.append(args[-2:])
        if len(calls) == 2:
            raise KeyboardInterrupt
        return solve(*args)

    monkeypatch.setattr(compiled, "_orc_into", interrupted)
    chunks = edge_chunks(compiled.transport_cells(csr.indptr, src, dst, 0.0), 1, 20)
    assert len(chunks) > 20
    with pytest.raises(KeyboardInterrupt):
        solve_edges(csr.indptr, csr.indices, src, dst, 0.0, threads=1, chunk_cells=20)
    assert len(calls) < len(chunks)


@pytest.mark.parametrize("alpha", [0.0, 0.5])
def test_merged_problems_match_a_linear_program(alpha):
    """Edges at hubs (problems of hundreds of cells, whose equal cost rows and columns are
    merged before the solve) against W1 from a linear program on the shortest-path costs."""
    from scipy.optimize import linprog

    ei, n = hub_graph(150, hubs=4, seed=5)
    g = nx.Graph()
    g.add_edges_from((u, v) for u, v in ei.t().tolist() if u != v)
    csr = simple_csr(ei, n)
    src, dst, _ = upper_edges(csr.indptr, csr.indices)
    cells = compiled.transport_cells(csr.indptr, src, dst, alpha)
    pick = np.argsort(-cells, kind="stable")[:12]
    kappa = _orc_kernel(csr.indptr, csr.indices, src[pick], dst[pick], alpha)
    assert cells[pick].min() > compiled.MERGE_MIN_CELLS
    for x, y, value in zip(src[pick], dst[pick], kappa, strict=True):
        def measure(node):
            nbrs = sorted(g[node])
            mass = {v: (1 - alpha) / len(nbrs) for v in nbrs}
            if alpha > 0:
                mass[node] = alpha
            return mass

        mx, my = measure(int(x)), measure(int(y))
        sx, sy = list(mx), list(my)
        dist = {u: nx.single_source_shortest_path_length(g, u, cutoff=3) for u in sx}
        cost = np.array([[dist[u].get(v, 3) for v in sy] for u in sx], dtype=float)
        m, k = len(sx), len(sy)
        rows = np.zeros((m + k, m * k))
        for i in range(m):
            rows[i, i * k:(i + 1) * k] = 1
        for j in range(k):
            rows[m + j, j::k] = 1
        supply = np.array([mx[u] for u in sx] + [my[v] for v in sy])
        lp = linprog(cost.ravel(), A_eq=rows, b_eq=supply, bounds=(0, None), method="highs")
        assert abs(value - (1 - lp.fun)) < 1e-9
