r"""Features of query node pairs on one graph, for link prediction: the bounded shortest-path
distance and the common-neighbourhood scores of each pair ``(u, v)``, computed for the pairs
asked (any number, in chunks), never for all pairs of the graph.

The graph is read as undirected and unweighted: ``edge_index``'s edges in both directions,
duplicates merged, self loops and edge weights ignored (:func:`graphpe.ops.host.simple_csr`).
Let ``N(x)`` be the neighbours of ``x`` and ``d(x) = |N(x)|``.

- :func:`pair_distances`: the length of a shortest path from ``u`` to ``v``, ``0`` for
  ``u = v``, and ``max_dist + 1`` where it is longer than ``max_dist`` or there is none. By
  balls grown from both ends: with ``B_a(u)`` the nodes within ``a`` hops of ``u``,
  ``dist(u, v) <= a + b`` exactly when ``B_a(u)`` and ``B_b(v)`` meet; each pair grows the
  smaller of its two balls one hop at a time and is done once they meet, so a pair at
  distance ``D`` costs two balls of radius about ``D / 2`` instead of one of radius ``D``.
- :func:`pair_neighbourhood_scores`: ``[CN, AA, RA]`` per pair: the common neighbours
  ``|N(u) ∩ N(v)|``; Adamic-Adar ``sum_(w in N(u) ∩ N(v)) 1 / log d(w)`` (Adamic & Adar,
  2003); resource allocation ``sum_(w in N(u) ∩ N(v)) 1 / d(w)`` (Zhou, Lü & Zhang, 2009),
  as networkx's ``common_neighbors``, ``adamic_adar_index`` and
  ``resource_allocation_index`` (a common neighbour of two distinct nodes has ``d(w) >= 2``,
  so ``log d(w) > 0``).

A link model must not read the edges it is asked to predict: :func:`without_pairs` removes
the edges joining given pairs (either direction) from ``edge_index``, and the features of a
training target are computed on that graph (a positive pair then has distance >= 2, as a held
out one has). Removing every training target at once would leave a training graph without
its edges; :func:`link_pair_features` instead sets aside each pair's own edge alone: its
distance is the one in the graph without ``u - v`` (``pair_distances(...,
without_own_edge=True)``: each ball's first hop skips that edge), and the neighbourhood
scores never read it (a common neighbour of ``u`` and ``v`` is neither of them).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch
from torch import Tensor

from graphpe.ops.checks import check_positive_int
from graphpe.ops.host import simple_csr

# pairs handled together: each chunk holds two sparse balls of its pairs' rows
PAIR_CHUNK = 4096
# the columns of pair_neighbourhood_scores
NEIGHBOURHOOD_SCORES = ("common_neighbours", "adamic_adar", "resource_allocation")


def check_pairs(pairs: Tensor, num_nodes: int) -> Tensor:
    """``pairs`` as a ``[2, Q]`` int64 tensor of node ids in ``[0, num_nodes)`` (on the CPU);
    a ValueError naming what is wrong otherwise."""
    if not isinstance(pairs, Tensor) or pairs.dim() != 2 or pairs.size(0) != 2:
        shape = list(pairs.shape) if isinstance(pairs, Tensor) else type(pairs).__name__
        raise ValueError(f"pairs must be a [2, Q] tensor of node ids, got {shape}")
    if pairs.dtype.is_floating_point or pairs.dtype == torch.bool:
        raise ValueError(f"pairs must hold integer node ids, got {pairs.dtype}")
    if pairs.size(1) == 0:
        raise ValueError("pairs is empty: give at least one (u, v) column")
    low, high = int(pairs.min()), int(pairs.max())
    if low < 0 or high >= num_nodes:
        bad = low if low < 0 else high
        raise ValueError(f"pairs name node {bad}, outside the graph's {num_nodes} nodes")
    return pairs.to(device="cpu", dtype=torch.int64)


def adjacency(edge_index: Tensor, num_nodes: int) -> sp.csr_matrix:
    """The 0/1 adjacency of the undirected simple graph of ``edge_index`` (CSR)."""
    csr = simple_csr(edge_index.cpu(), num_nodes)
    ones = np.ones(csr.indices.shape[0], dtype=np.float64)
    return sp.csr_matrix((ones, csr.indices, csr.indptr), shape=(num_nodes, num_nodes))


def without_pairs(edge_index: Tensor, pairs: Tensor, num_nodes: int) -> Tensor:
    """``edge_index`` without its edges that join a pair of ``pairs`` ``[2, Q]``, in either
    direction (self loops and other edges kept, in their order): the graph a link model may
    read while ``pairs`` are its targets."""
    pairs = check_pairs(pairs, num_nodes)
    ei = edge_index.cpu().to(torch.int64)
    n = max(int(num_nodes), 1)
    targets = torch.cat([pairs[0] * n + pairs[1], pairs[1] * n + pairs[0]]).unique()
    keys = ei[0] * n + ei[1]
    position = torch.searchsorted(targets, keys).clamp(max=targets.numel() - 1)
    keep = targets[position] != keys
    return edge_index[:, keep.to(edge_index.device)]


def _grown(ball: sp.csr_matrix, rows: np.ndarray, adj: sp.csr_matrix,
           cut: tuple[np.ndarray, np.ndarray] | None = None) -> sp.csr_matrix:
    """``ball`` with its ``rows`` one hop larger (their nodes and their neighbours, as 0/1),
    the other rows as they were. With ``cut = (centres, far_ends)`` (one of each per row of
    ``ball``), row ``r`` does not step along the edge from ``centres[r]`` to ``far_ends[r]``:
    the hop counts how many of the ball's nodes reach each node, and that edge's one is taken
    off (the ball always holds its centre)."""
    if rows.size == 0:
        return ball
    select = sp.csr_matrix((np.ones(rows.size), (rows, np.arange(rows.size))),
                           shape=(ball.shape[0], rows.size))
    step = ball[rows] @ adj
    if cut is not None:
        centres, far_ends = cut[0][rows], cut[1][rows]
        joined = np.asarray(adj[centres, far_ends]).ravel()
        step = step - sp.csr_matrix((joined, (np.arange(rows.size), far_ends)), shape=step.shape)
        step.eliminate_zeros()
    grown = ball + select @ step
    grown.eliminate_zeros()
    grown.data[:] = 1.0
    return grown


def _meet(a: sp.csr_matrix, b: sp.csr_matrix) -> np.ndarray:
    """Rows of two balls that share a node."""
    return np.asarray(a.multiply(b).sum(axis=1)).ravel() > 0


def pair_distances(edge_index: Tensor, num_nodes: int, pairs: Tensor, max_dist: int = 3,
                   without_own_edge: bool = False) -> Tensor:
    """Shortest-path distances of ``pairs`` ``[2, Q]`` on the undirected graph, capped: an
    int64 ``[Q]`` with ``max_dist + 1`` for pairs farther apart than ``max_dist`` hops or not
    connected (see the module docstring). Each pair grows the smaller of its two balls, and
    a pair is set aside once they meet. ``without_own_edge``: each pair's distance in the
    graph without the edge ``u - v`` itself (a training target's distance as if it were held
    out; the other pairs' edges stay)."""
    check_positive_int("max_dist", max_dist)
    pairs = check_pairs(pairs, num_nodes)
    adj = adjacency(edge_index, num_nodes)
    eye = sp.identity(num_nodes, format="csr", dtype=np.float64)
    out = np.full(pairs.size(1), max_dist + 1, dtype=np.int64)
    u_all, v_all = pairs[0].numpy(), pairs[1].numpy()
    for start in range(0, u_all.shape[0], PAIR_CHUNK):
        u, v = u_all[start:start + PAIR_CHUNK], v_all[start:start + PAIR_CHUNK]
        dist = out[start:start + PAIR_CHUNK]
        dist[u == v] = 0
        active = np.flatnonzero(u != v)  # the pairs whose balls have not met yet
        ends = (u[active], v[active])
        ball_u, ball_v = eye[ends[0]], eye[ends[1]]
        for d in range(1, max_dist + 1):  # the two radii sum to d
            if active.size == 0:
                break
            grow_u = np.diff(ball_u.indptr) <= np.diff(ball_v.indptr)  # the smaller side
            ball_u = _grown(ball_u, np.flatnonzero(grow_u), adj,
                            ends if without_own_edge else None)
            ball_v = _grown(ball_v, np.flatnonzero(~grow_u), adj,
                            ends[::-1] if without_own_edge else None)
            met = _meet(ball_u, ball_v)
            dist[active[met]] = d
            keep = ~met
            active, ball_u, ball_v = active[keep], ball_u[keep], ball_v[keep]
            ends = (ends[0][keep], ends[1][keep])
    return torch.from_numpy(out)


def pair_neighbourhood_scores(edge_index: Tensor, num_nodes: int, pairs: Tensor) -> Tensor:
    """``[Q, 3]`` float64: each pair's common neighbours, Adamic-Adar and resource allocation
    scores (:data:`NEIGHBOURHOOD_SCORES`, see the module docstring)."""
    pairs = check_pairs(pairs, num_nodes)
    adj = adjacency(edge_index, num_nodes)
    degree = np.asarray(adj.sum(axis=1)).ravel()
    with np.errstate(divide="ignore"):
        inv_log = np.where(degree > 1, 1.0 / np.log(np.maximum(degree, 2.0)), 0.0)
        inv_deg = np.where(degree > 0, 1.0 / np.maximum(degree, 1.0), 0.0)
    weights = np.stack([np.ones(num_nodes), inv_log, inv_deg], axis=1)
    out = np.empty((pairs.size(1), 3), dtype=np.float64)
    u_all, v_all = pairs[0].numpy(), pairs[1].numpy()
    for start in range(0, u_all.shape[0], PAIR_CHUNK):
        u, v = u_all[start:start + PAIR_CHUNK], v_all[start:start + PAIR_CHUNK]
        common = adj[u].multiply(adj[v])  # [chunk, n]: the common neighbours
        out[start:start + u.shape[0]] = common @ weights
    return torch.from_numpy(out)


def link_pair_features(edge_index: Tensor, num_nodes: int, pairs: Tensor,
                       max_dist: int = 3) -> Tensor:
    """``[Q, max_dist + 5]`` float32 inputs of a pair decoder: the one-hot capped distance of
    each pair in the graph without the pair's own edge (columns ``0 .. max_dist + 1``, see
    :func:`pair_distances`), then ``log(1 + CN)``, Adamic-Adar and resource allocation
    (:func:`pair_neighbourhood_scores`: none of them reads the edge ``u - v``). A positive
    target and a negative one are therefore described alike: neither's features show whether
    the two nodes are joined."""
    distance = pair_distances(edge_index, num_nodes, pairs, max_dist, without_own_edge=True)
    scores = pair_neighbourhood_scores(edge_index, num_nodes, pairs)
    scores[:, 0] = torch.log1p(scores[:, 0])
    one_hot = torch.nn.functional.one_hot(distance, max_dist + 2).to(torch.float32)
    return torch.cat([one_hot, scores.to(torch.float32)], dim=1)
