"""Discrete Ricci curvature of edges, and per-node profiles of it.

All curvatures are those of the unweighted undirected simple graph underlying ``edge_index``
(``ops.graph.undirected_simple``; edge weights play no part). Every function returns one value
per *input* edge, in input order, so results line up with ``edge_index`` whatever its
direction or duplicates; a self loop gets 0.

Ollivier-Ricci curvature (Ollivier 2009), with the lazy random-walk measures
``m_x = alpha * delta_x + (1 - alpha) / d_x * sum_{u ~ x} delta_u``, is
``kappa(x, y) = 1 - W1(m_x, m_y)`` for an edge ``x ~ y``. The exact kernel uses that every
transport cost between ``supp(m_x)`` and ``supp(m_y)`` is 0, 1, 2 or 3 (same node, adjacent,
common neighbour, else 3, since ``u ~ x ~ y ~ v``), read from the adjacency lists: no
all-pairs shortest paths. Each edge is then a transport problem of size
``(d_x + 1) x (d_y + 1)``, solved exactly by successive shortest paths in a compiled (numba)
loop over edges (:mod:`graphpe.ops.curvature.compiled`, with the compiled profiles of the CPU
path), on threads over chunks of the edges.

The work of the exact solve grows with the *transport cells*, ``sum over edges of
|supp m_x| * |supp m_y|`` (``(d_x + 1)(d_y + 1)`` for a lazy walk, ``d_x d_y`` for
``alpha = 0``), which a hub makes huge: every edge at a hub of degree ``h`` is a problem of
at least ``h`` cells, so the hub alone adds more than ``h^2``. :func:`orc_transport_cost`
counts them (one vectorized pass over the degrees) before anything is solved, and the exact
functions refuse a graph past ``max_transport_cells`` at once
(:func:`check_transport_budget`), naming the estimate and the cheap alternatives.
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np
import torch
from torch import Tensor

from graphpe.ops.checks import GraphRefusedError
from graphpe.ops.curvature.compiled import (
    ORC_CELLS_PER_SECOND,
    edge_triangles_host,
    node_profile_host,
    orc_csr,
    per_input_edge_host,
    solve_edges,
    transport_cells,
    upper_edges,
)
from graphpe.ops.graph import (
    UndirectedGraph,
    degree,
    undirected_simple,
    validate_graph,
)
from graphpe.ops.host import simple_csr, use_compiled
from graphpe.ops.plan import DEFAULT_PLAN, ExecPlan
from graphpe.ops.progress import duration_text

PROFILE_STATS = ("min", "max", "mean", "std", "median")

# Default budget of the exact ORC, in transport cells: a couple of minutes of one thread at
# the solver's rough speed, far above any molecule or citation benchmark graph (thousands of
# cells each), below a hub-heavy social graph (10^9 cells and more).
DEFAULT_MAX_TRANSPORT_CELLS = 250_000_000


class TransportCost(NamedTuple):
    """What the exact Ollivier-Ricci curvature of a graph would solve.

    ``edges``: undirected edges, one transport problem each; ``cells``: their total size,
    ``sum |supp m_x| * |supp m_y|``; ``largest``: the cells of the largest problem;
    ``seconds``: ``cells / ORC_CELLS_PER_SECOND``, a rough time on one thread."""

    edges: int
    cells: int
    largest: int
    seconds: float


class TransportBudgetError(GraphRefusedError):
    """The exact Ollivier-Ricci curvature of a graph would exceed ``max_transport_cells``;
    ``cost`` holds the estimate (:class:`TransportCost`)."""

    def __init__(self, message: str, cost: TransportCost) -> None:
        super().__init__(message)
        self.cost = cost


def _cost_of(indptr: np.ndarray, indices: np.ndarray, alpha: float) -> TransportCost:
    src, dst, _ = upper_edges(indptr, indices)
    cells = transport_cells(indptr, src, dst, alpha)
    total = int(cells.sum())
    largest = int(cells.max()) if cells.size else 0
    return TransportCost(int(src.shape[0]), total, largest, total / ORC_CELLS_PER_SECOND)


def orc_transport_cost(edge_index: Tensor, num_nodes: int, alpha: float = 0.0) -> TransportCost:
    """The size of the exact Ollivier-Ricci solve of a graph, before solving anything.

    Each undirected edge ``x ~ y`` of the simple graph is a transport problem between the
    supports of ``m_x`` and ``m_y``: ``|supp m_x| = d_x + [alpha > 0]`` nodes, so
    ``(d_x + [alpha > 0]) (d_y + [alpha > 0])`` cells. Returns a :class:`TransportCost`;
    O(N + E), vectorized.

    Args:
        edge_index: ``[2, E]`` edges (symmetrized; self loops and duplicates ignored).
        num_nodes: number of nodes.
        alpha: laziness of the walks, in ``[0, 1)``.
    """
    check_alpha(alpha)
    validate_graph(edge_index, num_nodes)
    csr = simple_csr(edge_index, num_nodes)
    return _cost_of(csr.indptr, csr.indices, float(alpha))


def check_transport_budget(cost: TransportCost, max_transport_cells: int | None) -> None:
    """Raise :class:`TransportBudgetError` if ``cost.cells`` exceeds ``max_transport_cells``
    (None: no limit), with the estimate and the alternatives in the message."""
    if max_transport_cells is None or cost.cells <= max_transport_cells:
        return
    raise TransportBudgetError(
        f"exact Ollivier-Ricci curvature would solve {cost.edges:,} transport problems of "
        f"{cost.cells:,} cells in all (the largest {cost.largest:,}), roughly "
        f"{duration_text(cost.seconds)} on one thread, past max_transport_cells="
        f"{max_transport_cells:,}. Use curvature='orc_bounds' (Jost-Liu lower and triangle "
        f"upper bounds, curvature_bounds) or 'forman' / 'afrc' (forman_curvature), which "
        f"solve no transport problem, or pass a larger max_transport_cells (None: no limit) "
        f"to solve it exactly.", cost)


def check_budget(name: str, value: int | None) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"{name} must be an int >= 0 or None, got {value!r}")
    return int(value)


def _csr(graph: UndirectedGraph) -> tuple[np.ndarray, np.ndarray]:
    row, col = graph.edge_index.cpu().numpy()
    counts = np.bincount(row, minlength=graph.num_nodes)
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return indptr, col.astype(np.int64)



def per_input_edge(
    edge_index: Tensor, graph: UndirectedGraph, values: Tensor
) -> Tensor:
    """Map values on the simple graph's directed edges back to the input edges (0 on loops)."""
    n = max(graph.num_nodes, 1)
    simple_keys = graph.edge_index[0] * n + graph.edge_index[1]
    row, col = edge_index[0].long(), edge_index[1].long()
    keys = row * n + col
    pos = torch.searchsorted(simple_keys, keys).clamp(max=max(simple_keys.numel() - 1, 0))
    out = values.new_zeros((keys.numel(),) + values.shape[1:])
    if simple_keys.numel():
        hit = (simple_keys[pos] == keys) & (row != col)
        out[hit] = values[pos[hit]]
    return out


def orc_simple(
    graph: UndirectedGraph,
    alpha: float = 0.0,
    max_transport_cells: int | None = DEFAULT_MAX_TRANSPORT_CELLS,
    threads: int | None = None,
    progress: bool | None = None,
) -> Tensor:
    """Exact ORC of every directed edge of a simple graph (float64, on the graph's device);
    the arguments as :func:`ollivier_ricci`."""
    indptr, indices = _csr(graph)
    cost = _cost_of(indptr, indices, float(alpha))
    check_transport_budget(cost, check_budget("max_transport_cells", max_transport_cells))
    row, col = graph.edge_index.cpu().numpy()
    upper = row < col  # curvature is symmetric: solve each undirected edge once
    kappa_upper = solve_edges(indptr, indices, row[upper], col[upper], float(alpha), threads,
                              _show(progress, cost))
    kappa = np.empty(row.shape[0])
    kappa[upper] = kappa_upper
    if (~upper).any():
        # the edges are sorted by (row, col): find each lower edge's reverse among the upper ones
        n = max(graph.num_nodes, 1)
        upper_keys = row[upper] * n + col[upper]
        lower_keys = col[~upper] * n + row[~upper]
        kappa[~upper] = kappa_upper[np.searchsorted(upper_keys, lower_keys)]
    return torch.from_numpy(kappa).to(graph.edge_index.device)


# Estimated seconds past which the exact solve shows a progress bar when progress is None.
PROGRESS_AFTER_SECONDS = 30.0


def _show(progress: bool | None, cost: TransportCost) -> bool:
    return cost.seconds > PROGRESS_AFTER_SECONDS if progress is None else bool(progress)


def ollivier_ricci(
    edge_index: Tensor,
    num_nodes: int,
    alpha: float = 0.0,
    dtype: torch.dtype = torch.float32,
    max_transport_cells: int | None = DEFAULT_MAX_TRANSPORT_CELLS,
    threads: int | None = None,
    progress: bool | None = None,
) -> Tensor:
    """Exact Ollivier-Ricci curvature ``1 - W1(m_x, m_y)`` of every input edge.

    Args:
        edge_index: ``[2, E]`` edges (of one graph or a whole batch: graphs never interact).
        num_nodes: total number of nodes.
        alpha: laziness, the mass a walk keeps at its node, in ``[0, 1)``. The LCP paper uses
            0; GraphRicciCurvature's default is 0.5.
        dtype: dtype of the result (the solve runs in float64).
        max_transport_cells: budget of the solve in transport cells
            (:func:`orc_transport_cost`); past it :class:`TransportBudgetError` is raised at
            once, before anything is solved. None: no limit.
        threads: threads sharing the edges (default ``torch.get_num_threads()``).
        progress: show a progress bar; None: when the estimate exceeds
            :data:`PROGRESS_AFTER_SECONDS`.

    Returns ``[E]`` on ``edge_index``'s device. Equal to GraphRicciCurvature's ``OllivierRicci``
    (method ``OTD``, same alpha) on unweighted undirected graphs; the same bit for bit with any
    number of threads.
    """
    check_alpha(alpha)
    validate_graph(edge_index, num_nodes)
    graph = undirected_simple(edge_index, num_nodes)
    kappa = orc_simple(graph, alpha, max_transport_cells, threads, progress)
    return per_input_edge(edge_index, graph, kappa.to(dtype))


def check_alpha(alpha: float) -> None:
    if not 0.0 <= float(alpha) < 1.0:
        raise ValueError(f"alpha must be in [0, 1), got {alpha}")


# ----------------------------------------------------------------------------- fast tier


def edge_triangles(graph: UndirectedGraph) -> Tensor:
    """Number of common neighbours (triangles) of every directed edge of ``graph``:
    ``(A^2)_xy`` read at the edges, from one sparse product (any device)."""
    n = graph.num_nodes
    ei = graph.edge_index
    if ei.size(1) == 0:
        return torch.zeros(0, device=ei.device)
    ones = torch.ones(ei.size(1), device=ei.device)
    adj = torch.sparse_coo_tensor(ei, ones, (n, n), check_invariants=False).coalesce()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
        sq = torch.sparse.mm(adj, adj).coalesce()
    sq_keys = sq.indices()[0] * n + sq.indices()[1]
    keys = ei[0] * n + ei[1]
    pos = torch.searchsorted(sq_keys, keys).clamp(max=max(sq_keys.numel() - 1, 0))
    hit = sq_keys[pos] == keys
    return torch.where(hit, sq.values()[pos], torch.zeros_like(ones))


def bounds_simple(graph: UndirectedGraph, alpha: float = 0.0) -> tuple[Tensor, Tensor]:
    """:func:`curvature_bounds` on every directed edge of a simple graph (float64)."""
    deg = degree(graph.edge_index, graph.num_nodes, dtype=torch.float64)
    dx, dy = deg[graph.edge_index[0]], deg[graph.edge_index[1]]
    return degree_triangle_bounds(dx, dy, edge_triangles(graph).to(torch.float64), alpha)


def degree_triangle_bounds(dx: Tensor, dy: Tensor, t: Tensor,
                           alpha: float) -> tuple[Tensor, Tensor]:
    """The bounds of :func:`curvature_bounds` from the end degrees and common neighbours."""
    dmin, dmax = torch.minimum(dx, dy), torch.maximum(dx, dy)
    base = 1.0 - 1.0 / dx - 1.0 / dy
    jost_liu = -(base - t / dmin).clamp(min=0) - (base - t / dmax).clamp(min=0) + t / dmax
    lower = (1.0 - alpha) * jost_liu
    upper = (1.0 - alpha) * (2.0 + t) / dmax
    if alpha == 0.0:
        upper = torch.minimum(upper, t / dmax)
    return lower, upper


def curvature_bounds(
    edge_index: Tensor,
    num_nodes: int,
    alpha: float = 0.0,
    dtype: torch.dtype = torch.float32,
) -> tuple[Tensor, Tensor]:
    """Lower and upper bounds ``[E]`` on the Ollivier-Ricci curvature of every input edge.

    With ``t`` the common neighbours of ``x ~ y``, ``dmin``/``dmax`` the smaller/larger degree:

    - lower: Jost-Liu (2014), ``-(1 - 1/dx - 1/dy - t/dmin)_+ - (1 - 1/dx - 1/dy - t/dmax)_+
      + t/dmax`` for the non-lazy walk, times ``1 - alpha`` (``alpha -> kappa_alpha`` is concave
      with ``kappa_1 = 0``, Bourne et al. 2018, so ``kappa_alpha >= (1 - alpha) kappa_0``);
    - upper: ``t / dmax`` for ``alpha = 0`` (Jost-Liu); for every alpha,
      ``(1 - alpha) (2 + t) / dmax``, from the 1-Lipschitz test function ``d(., y)`` (and
      ``d(., x)``) in Kantorovich duality. The smaller applicable value is returned.

    Vectorized in torch on any device.
    """
    check_alpha(alpha)
    validate_graph(edge_index, num_nodes)
    graph = undirected_simple(edge_index, num_nodes)
    lower, upper = bounds_simple(graph, alpha)
    return (
        per_input_edge(edge_index, graph, lower.to(dtype)),
        per_input_edge(edge_index, graph, upper.to(dtype)),
    )


def forman_simple(graph: UndirectedGraph, augmented: bool = False) -> Tensor:
    """:func:`forman_curvature` on every directed edge of a simple graph (float64)."""
    deg = degree(graph.edge_index, graph.num_nodes, dtype=torch.float64)
    t = edge_triangles(graph).to(torch.float64) if augmented else None
    return forman_from_counts(deg[graph.edge_index[0]], deg[graph.edge_index[1]], t)


def forman_from_counts(dx: Tensor, dy: Tensor, t: Tensor | None) -> Tensor:
    """``4 - dx - dy``, plus ``3 t`` (augmented) when the triangle counts ``t`` are given."""
    value = 4.0 - dx - dy
    return value if t is None else value + 3.0 * t


def forman_curvature(
    edge_index: Tensor,
    num_nodes: int,
    augmented: bool = False,
    dtype: torch.dtype = torch.float32,
) -> Tensor:
    """Forman-Ricci curvature ``4 - dx - dy`` of every input edge, or with ``augmented`` the
    triangle-augmented ``4 - dx - dy + 3t`` (Samal et al. 2018), with undirected degrees."""
    validate_graph(edge_index, num_nodes)
    graph = undirected_simple(edge_index, num_nodes)
    return per_input_edge(edge_index, graph, forman_simple(graph, augmented).to(dtype))


# ----------------------------------------------------------------------------- profiles


def profile_simple(
    graph: UndirectedGraph, values: Tensor, stats: tuple[str, ...] = PROFILE_STATS
) -> Tensor:
    """Per-node statistics of ``values`` given on every directed edge of a simple graph
    (whose edges are sorted by source node). See :func:`node_profile`."""
    check_profile_stats(stats)
    num_nodes = graph.num_nodes
    device, dtype = values.device, values.dtype
    seg = graph.edge_index[0]
    counts = torch.bincount(seg, minlength=num_nodes)
    has = counts > 0
    safe = counts.clamp(min=1).to(dtype)
    zeros = torch.zeros(num_nodes, dtype=dtype, device=device)
    mean = zeros.index_add(0, seg, values) / safe
    sorted_vals = None
    out = []
    for s in stats:
        if s == "min":
            v = zeros.scatter_reduce(0, seg, values, reduce="amin", include_self=False)
        elif s == "max":
            v = zeros.scatter_reduce(0, seg, values, reduce="amax", include_self=False)
        elif s == "mean":
            v = mean
        elif s == "std":
            v = (zeros.index_add(0, seg, (values - mean[seg]) ** 2) / safe).sqrt()
        else:  # median: sort within each node's segment (edges are grouped by node already)
            if sorted_vals is None:
                order = torch.argsort(values, stable=True)
                order = order[torch.argsort(seg[order], stable=True)]
                sorted_vals = torch.cat([values[order], values.new_zeros(1)])
            start = torch.cumsum(counts, 0) - counts
            lo = sorted_vals[start + ((counts - 1) // 2).clamp(min=0)]
            hi = sorted_vals[start + counts // 2]
            v = (lo + hi) / 2
        out.append(torch.where(has, v, zeros))
    if not out:
        return torch.zeros(num_nodes, 0, dtype=dtype, device=device)
    return torch.stack(out, dim=1)


CURVATURES = ("orc", "orc_bounds", "forman", "afrc")


def local_curvature_profile(
    edge_index: Tensor,
    num_nodes: int,
    curvature: str = "orc",
    alpha: float = 0.0,
    stats: tuple[str, ...] = PROFILE_STATS,
    ptr: Tensor | None = None,
    plan: ExecPlan = DEFAULT_PLAN,
    max_transport_cells: int | None = DEFAULT_MAX_TRANSPORT_CELLS,
    threads: int | None = None,
    progress: bool | None = None,
) -> tuple[Tensor, Tensor]:
    """Local Curvature Profile: per node, ``stats`` of the curvature of its incident edges.

    Returns ``(profile [N, len(stats)] float64, curvature per input edge)``: ``[E]``, or for
    ``orc_bounds`` ``[E, 2]`` (lower, upper; the profile uses their midpoint). Curvatures as
    :func:`ollivier_ricci` (``orc``, exact), :func:`curvature_bounds` (``orc_bounds``) and
    :func:`forman_curvature` (``forman``, ``afrc``), on the unweighted simple graph. ``ptr``
    (graphs of a batch) is only validated: curvature never crosses a graph boundary anyway.
    ``plan.kernel``: ``compiled`` (CPU: compiled loops on the CSR adjacency), ``tensor`` (torch
    operations) or ``auto`` (``compiled`` on the CPU); the exact ORC solve is compiled either
    way. ``max_transport_cells``, ``threads`` and ``progress`` apply to ``orc`` as in
    :func:`ollivier_ricci`: past the budget the call raises :class:`TransportBudgetError` at
    once, before any curvature is computed.
    """
    if curvature not in CURVATURES:
        raise ValueError(f"curvature must be one of {CURVATURES}, got {curvature!r}")
    check_alpha(alpha)
    check_profile_stats(stats)
    max_transport_cells = check_budget("max_transport_cells", max_transport_cells)
    validate_graph(edge_index, num_nodes, ptr=ptr)
    device = edge_index.device
    if use_compiled(plan.kernel, device):
        csr = simple_csr(edge_index, num_nodes)
        if curvature == "orc":
            cost = _cost_of(csr.indptr, csr.indices, float(alpha))
            check_transport_budget(cost, max_transport_cells)
            value = stored = orc_csr(csr.indptr, csr.indices, alpha, threads,
                                     _show(progress, cost))
        else:
            deg = np.diff(csr.indptr).astype(np.float64)
            row = np.repeat(np.arange(num_nodes), np.diff(csr.indptr))
            dx = torch.from_numpy(deg[row])
            dy = torch.from_numpy(deg[csr.indices])
            t = None if curvature == "forman" else torch.from_numpy(
                edge_triangles_host(csr.indptr, csr.indices, np.arange(num_nodes)))
            if curvature == "orc_bounds":
                lower, upper = degree_triangle_bounds(dx, dy, t, alpha)
                value = ((lower + upper) / 2).numpy()
                stored = torch.stack([lower, upper], dim=1).numpy()
            else:
                value = stored = forman_from_counts(dx, dy, t).numpy()
        profile = torch.from_numpy(node_profile_host(csr, value, stats))
        return profile, torch.from_numpy(per_input_edge_host(edge_index, csr, stored))
    graph = undirected_simple(edge_index, num_nodes)
    if curvature == "orc":
        value = stored = orc_simple(graph, alpha, max_transport_cells, threads, progress)
    elif curvature == "orc_bounds":
        lower, upper = bounds_simple(graph, alpha)
        value, stored = (lower + upper) / 2, torch.stack([lower, upper], dim=1)
    else:
        value = stored = forman_simple(graph, augmented=curvature == "afrc")
    return profile_simple(graph, value, stats), per_input_edge(edge_index, graph, stored)


def check_profile_stats(stats: tuple[str, ...]) -> None:
    for s in stats:
        if s not in PROFILE_STATS:
            raise ValueError(f"unknown statistic {s!r}; choose from {PROFILE_STATS}")


def node_profile(
    edge_index: Tensor,
    num_nodes: int,
    edge_values: Tensor,
    stats: tuple[str, ...] = PROFILE_STATS,
) -> Tensor:
    """Statistics of the values on each node's incident edges, ``[num_nodes, len(stats)]``.

    ``edge_values`` holds one value per input edge; each undirected edge of the simple graph
    counts once for each endpoint (duplicates and the reverse direction are merged, the last
    given value winning; self loops are ignored). ``std`` uses ``ddof=0``; ``median`` averages
    the two middle values of an even count. A node without edges gets zeros.
    """
    check_profile_stats(stats)
    if edge_values.shape != (edge_index.size(1),):
        raise ValueError(
            f"edge_values must have shape [{edge_index.size(1)}], got {list(edge_values.shape)}"
        )
    validate_graph(edge_index, num_nodes)
    graph = undirected_simple(edge_index, num_nodes)
    row, col = edge_index[0].long(), edge_index[1].long()
    n = max(num_nodes, 1)
    keep = row != col
    keys = torch.cat([row[keep] * n + col[keep], col[keep] * n + row[keep]])
    vals = torch.cat([edge_values[keep], edge_values[keep]])
    simple_keys = graph.edge_index[0] * n + graph.edge_index[1]
    values = torch.zeros(simple_keys.numel(), dtype=edge_values.dtype, device=edge_values.device)
    if keys.numel():
        values[torch.searchsorted(simple_keys, keys)] = vals
    return profile_simple(graph, values, stats)


__all__ = [
    "CURVATURES",
    "DEFAULT_MAX_TRANSPORT_CELLS",
    "PROFILE_STATS",
    "TransportBudgetError",
    "TransportCost",
    "check_transport_budget",
    "orc_transport_cost",
    "local_curvature_profile",
    "orc_csr",
    "bounds_simple",
    "curvature_bounds",
    "edge_triangles",
    "forman_curvature",
    "forman_simple",
    "node_profile",
    "ollivier_ricci",
    "orc_simple",
    "per_input_edge",
    "profile_simple",
]
