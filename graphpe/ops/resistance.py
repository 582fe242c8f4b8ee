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
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch
from scipy.sparse.csgraph import connected_components
from torch import Tensor

from graphpe.ops.checks import check_flag
from graphpe.ops.eigen.krylov import factor_laplacian
from graphpe.ops.link import adjacency, check_pairs

#: the bytes of one block of right-hand sides solved together (``n x b`` float64, ``b`` at
#: most 256)
SOLVE_BLOCK_BYTES = 64 << 20
#: a resistance within this of 1 on an edge counts as a bridge (without_own_edge: ``inf``)
BRIDGE_TOL = 1e-9


def pair_resistance(edge_index: Tensor, num_nodes: int, pairs: Tensor, *,
                    without_own_edge: bool = False,
                    max_factor_bytes: int | None = None) -> Tensor:
    """``[Q]`` float64: the effective resistance of each pair of ``pairs`` ``[2, Q]`` (module
    docstring), ``inf`` across components. ``without_own_edge``: a pair that is an edge is
    read in the graph without it. ``max_factor_bytes``: a ``MemoryError`` before any numeric
    work where a component's factor would take more."""
    pairs = check_pairs(pairs, num_nodes)
    check_flag("without_own_edge", without_own_edge)
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
        out[asked] = _component_resistance(lap, nodes, us[asked], vs[asked],
                                           max_factor_bytes)
    out = np.maximum(out, 0.0)
    if without_own_edge:
        edge = inside & (np.asarray(adj[us, vs]).ravel() > 0)
        bridge = edge & (out >= 1.0 - BRIDGE_TOL)
        kept = edge & ~bridge
        out[kept] = out[kept] / (1.0 - out[kept])
        out[bridge] = np.inf
    return torch.from_numpy(out)


def _component_resistance(lap: sp.csr_matrix, nodes: np.ndarray, us: np.ndarray,
                          vs: np.ndarray, max_factor_bytes: int | None) -> np.ndarray:
    """The resistances of the pairs ``(us, vs)`` of one component (its sorted ``nodes``),
    grounded at its first node."""
    ground, kept = nodes[0], nodes[1:]
    local = np.full(lap.shape[0], -1, np.int64)
    local[kept] = np.arange(kept.shape[0])
    factor = factor_laplacian(lap[kept][:, kept], 0.0, max_factor_bytes=max_factor_bytes)
    ends = np.unique(np.concatenate([us, vs]))
    ends = ends[ends != ground]
    diag = np.zeros(lap.shape[0])  # G_xx of the endpoints (0 at the ground)
    cross = np.zeros(us.shape[0])  # G_uv of each pair
    order = np.argsort(us, kind="stable")
    size = int(min(256, max(1, SOLVE_BLOCK_BYTES // (8 * max(kept.shape[0], 1)))))
    for lo in range(0, ends.shape[0], size):
        block = ends[lo: lo + size]
        rhs = np.zeros((kept.shape[0], block.shape[0]))
        rhs[local[block], np.arange(block.shape[0])] = 1.0
        solved = np.empty_like(rhs)
        solved[factor.perm] = factor.lu.solve(np.ascontiguousarray(rhs[factor.perm]))
        diag[block] = solved[local[block], np.arange(block.shape[0])]
        first = np.searchsorted(us[order], block[0])
        last = np.searchsorted(us[order], block[-1], side="right")
        mine = order[first:last]
        column = np.searchsorted(block, us[mine])
        reached = local[vs[mine]] >= 0
        cross[mine[reached]] = solved[local[vs[mine[reached]]], column[reached]]
    return diag[us] + diag[vs] - 2.0 * cross
