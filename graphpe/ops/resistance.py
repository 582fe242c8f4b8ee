r"""The effective resistance of query node pairs on one graph, for link prediction: exact,
through one sparse factor per connected component, never the graph's dense pseudo-inverse.

The graph is read as :mod:`graphpe.ops.link` reads it: undirected, unweighted, simple. With
``L = D - A`` (each edge a unit conductance) the effective resistance of ``u`` and ``v`` is

.. math:: R(u, v) = (e_u - e_v)^\top L^{+} (e_u - e_v),

``inf`` for nodes in different components and 0 for ``u = v``. Within a component ``C``,
grounding one node ``g`` (deleting its row and column) leaves ``L_g``, positive definite, and
:math:`R(u, v) = G_{uu} + G_{vv} - 2 G_{uv}` with :math:`G = L_g^{-1}` extended by zeros on
``g`` (Doyle & Snell, "Random walks and electric networks", 1984). ``L_g`` is factored once
(:func:`graphpe.ops.eigen.krylov.factor_laplacian`: graphpe's minimum-degree ordering and
SuperLU), and each distinct endpoint costs one solve; a pair reads two diagonal entries and
one column entry.

Leakage: a training target's own edge lowers its resistance below 1. With
``without_own_edge=True`` the resistance of each pair that is an edge is the one in the graph
without that edge, from the same factor: removing a unit conductance between the ends of an
edge gives :math:`R' = R / (1 - R)` (the Sherman-Morrison update of ``L``), and ``inf`` where
``R = 1`` (the edge was a bridge).

Many pairs: with ``sketch=k`` each component costs ``k`` solves instead of one per endpoint,
by Spielman and Srivastava's random projection ("Graph sparsification by effective
resistances", STOC 2008): with ``x = G (e_u - e_v)`` the potentials of a unit current,
:math:`R(u, v) = \lVert B x \rVert^2` (``B`` the edge-node incidence matrix), and a ``k x m``
matrix ``S`` of independent signs over :math:`\sqrt{k}` keeps that norm in expectation:
:math:`\tilde R(u, v) = \lVert Y_u - Y_v \rVert^2` with :math:`Y = G B^\top S^\top`
(``n x k``, one row per node). Each estimate is a mean of ``k`` squares: unbiased, with a
relative standard deviation of about :math:`\sqrt{2 / k}` (``k = 200``: 10 %).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.sparse as sp
import torch
from scipy.sparse.csgraph import connected_components
from torch import Tensor

from graphpe.ops.checks import check_flag, check_positive_int
from graphpe.ops.eigen.krylov import factor_laplacian
from graphpe.ops.host import memory_budget
from graphpe.ops.link import adjacency, check_pairs

#: the bytes of one block of right-hand sides solved together (``n x b`` float64, ``b`` at
#: most 256)
SOLVE_BLOCK_BYTES = 64 << 20
#: a resistance within this of 1 on an edge counts as a bridge (without_own_edge: ``inf``)
BRIDGE_TOL = 1e-9


def pair_resistance(edge_index: Tensor, num_nodes: int, pairs: Tensor, *,
                    without_own_edge: bool = False, sketch: int | None = None, seed: int = 0,
                    max_factor_bytes: int | None = None) -> Tensor:
    """``[Q]`` float64: the effective resistance of each pair of ``pairs`` ``[2, Q]`` (module
    docstring), ``inf`` across components. ``without_own_edge``: a pair that is an edge is
    read in the graph without it (exact only). ``sketch``: estimate from ``sketch`` random
    projections drawn from ``seed`` (``sketch`` solves per component; None: exact, one solve
    per distinct endpoint). ``max_factor_bytes``: a ``MemoryError`` before any numeric work
    where a component's factor would take more (None: the kernels' working-memory budget,
    :func:`~graphpe.ops.host.memory_budget`)."""
    pairs = check_pairs(pairs, num_nodes)
    check_flag("without_own_edge", without_own_edge)
    if sketch is not None:
        check_positive_int("sketch", sketch)
        if without_own_edge:
            raise ValueError("without_own_edge needs the exact resistance: R / (1 - R) "
                             "magnifies the sketch's error on edges near a bridge")
    rng = np.random.default_rng(seed)
    adj = adjacency(edge_index, num_nodes)
    _, label = connected_components(adj, directed=False)
    # each pair read as (smaller, larger) id: R(u, v) and R(v, u) are then the same numbers
    us = np.minimum(pairs[0].numpy(), pairs[1].numpy())
    vs = np.maximum(pairs[0].numpy(), pairs[1].numpy())
    out = np.full(us.shape[0], np.inf)
    out[us == vs] = 0.0
    inside = (label[us] == label[vs]) & (us != vs)
    lap = (sp.diags(np.asarray(adj.sum(axis=1)).ravel()) - adj).tocsr()
    for component in np.unique(label[us[inside]]):
        asked = np.flatnonzero(inside & (label[us] == component))
        nodes = np.flatnonzero(label == component)
        solve = _grounded_solver(lap, nodes, max_factor_bytes)
        out[asked] = (_component_resistance(solve, nodes, us[asked], vs[asked], lap.shape[0])
                      if sketch is None else
                      _sketched_resistance(solve, adj, nodes, us[asked], vs[asked], sketch,
                                           rng))
    out = np.maximum(out, 0.0)
    if without_own_edge:
        edge = inside & (np.asarray(adj[us, vs]).ravel() > 0)
        bridge = edge & (out >= 1.0 - BRIDGE_TOL)
        kept = edge & ~bridge
        out[kept] = out[kept] / (1.0 - out[kept])
        out[bridge] = np.inf
    return torch.from_numpy(out)


def _columns_per_block(rows: int) -> int:
    """Right-hand sides of ``rows`` float64 entries handled together: at most 256, within
    :data:`SOLVE_BLOCK_BYTES`."""
    return int(min(256, max(1, SOLVE_BLOCK_BYTES // (8 * max(rows, 1)))))


def _grounded_solver(lap: sp.csr_matrix, nodes: np.ndarray,
                     max_factor_bytes: int | None) -> Callable[[np.ndarray], np.ndarray]:
    """``b -> G b`` for one component (its sorted ``nodes``) grounded at its first node:
    ``b`` is ``[len(nodes), r]`` (the ground's row ignored), the result has 0 on the ground's
    row; solved ``r`` columns at a time within :data:`SOLVE_BLOCK_BYTES`."""
    kept = nodes[1:]
    factor = factor_laplacian(lap[kept][:, kept], 0.0,
                              max_factor_bytes=memory_budget(max_factor_bytes))
    size = _columns_per_block(kept.shape[0])

    def solve(rhs: np.ndarray) -> np.ndarray:
        out = np.zeros(rhs.shape)
        for lo in range(0, rhs.shape[1], size):
            block = np.ascontiguousarray(rhs[1:, lo: lo + size][factor.perm])
            out[1 + factor.perm, lo: lo + size] = factor.lu.solve(block)
        return out

    return solve


def _component_resistance(solve: Callable[[np.ndarray], np.ndarray], nodes: np.ndarray,
                          us: np.ndarray, vs: np.ndarray, num_nodes: int) -> np.ndarray:
    """The exact resistances of the pairs ``(us, vs)`` of one component: one column of ``G``
    per distinct endpoint (none for the ground, whose column is 0)."""
    local = np.full(num_nodes, -1, np.int64)
    local[nodes] = np.arange(nodes.shape[0])
    ends = np.unique(np.concatenate([us, vs]))
    ends = ends[ends != nodes[0]]
    diag = np.zeros(num_nodes)  # G_xx of the endpoints (0 at the ground)
    cross = np.zeros(us.shape[0])  # G_uv of each pair
    order = np.argsort(us, kind="stable")
    step = _columns_per_block(nodes.shape[0])
    for lo in range(0, ends.shape[0], step):
        block = ends[lo: lo + step]
        rhs = np.zeros((nodes.shape[0], block.shape[0]))
        rhs[local[block], np.arange(block.shape[0])] = 1.0
        solved = solve(rhs)
        diag[block] = solved[local[block], np.arange(block.shape[0])]
        first = np.searchsorted(us[order], block[0])
        last = np.searchsorted(us[order], block[-1], side="right")
        mine = order[first:last]
        cross[mine] = solved[local[vs[mine]], np.searchsorted(block, us[mine])]
    return diag[us] + diag[vs] - 2.0 * cross


def _sketched_resistance(solve: Callable[[np.ndarray], np.ndarray], adj: sp.csr_matrix,
                         nodes: np.ndarray, us: np.ndarray, vs: np.ndarray, k: int,
                         rng: np.random.Generator) -> np.ndarray:
    """The resistances of one component's pairs estimated from ``k`` projections (module
    docstring): ``Y = G B^T S^T`` with ``S`` random signs over ``sqrt(k)``."""
    local = np.full(adj.shape[0], -1, np.int64)
    local[nodes] = np.arange(nodes.shape[0])
    edges = sp.triu(adj[nodes][:, nodes], k=1).tocoo()
    signs = (rng.integers(0, 2, (edges.nnz, k)) * 2.0 - 1.0) / np.sqrt(k)
    # B^T S^T: each edge (a, b) adds its row of signs to node a and takes it from node b
    rhs = np.zeros((nodes.shape[0], k))
    np.add.at(rhs, edges.row, signs)
    np.subtract.at(rhs, edges.col, signs)
    y = solve(rhs)
    diff = y[local[us]] - y[local[vs]]
    return np.einsum("ij,ij->i", diff, diff)
