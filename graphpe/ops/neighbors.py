r"""Neighbour sampling for mini-batches of one large graph (GraphSAGE's sampler: Hamilton et
al., "Inductive Representation Learning on Large Graphs", NeurIPS 2017), the kernel behind
:class:`graphpe.sampling.CompiledNeighborSampler`.

The graph is given in CSC form: the in-edges of node ``v`` are the positions
``colptr[v] .. colptr[v + 1]`` of ``row`` (their sources). From the seed nodes, hop ``h``
takes every node first reached in hop ``h - 1`` (the seeds for ``h = 1``) and draws
``k = num_neighbors[h]`` of its in-edges: all of them where ``k < 0`` or (without
replacement) where the node has at most ``k``; otherwise ``k`` distinct positions uniformly
(Floyd's algorithm: every ``k``-subset equally likely), or with ``replace`` ``k``
independent uniform draws. An edge's source not yet in the sample joins it, in the order
met, so the seeds come first and each hop's new nodes follow the previous hop's. This is
PyG's directional sampling (``NeighborSampler(subgraph_type="directional")``, as pyg-lib's
``neighbor_sample`` does it): the edges returned are the sampled ones, from their source to the
node that drew them, and an edge between two sampled nodes that no node drew is left out.

Random numbers: numba's generator, seeded once per call with ``seed``, so a call's sample is
a function of its arguments.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def _grown(values: np.ndarray, needed: int) -> np.ndarray:
    """``values`` in an array of at least ``needed`` entries (doubling)."""
    if needed <= values.size:
        return values
    out = np.empty(max(needed, 2 * values.size), values.dtype)
    out[: values.size] = values
    return out


@numba.njit(cache=True, nogil=True)
def _draw(lo: int, degree: int, k: int, replace: bool, picks: np.ndarray) -> int:
    """Fills ``picks`` with the CSC positions of the edges drawn from ``lo .. lo + degree``
    (see the module docstring) and returns how many."""
    if k < 0 or (degree <= k and not replace):
        for j in range(degree):
            picks[j] = lo + j
        return degree
    if degree == 0:
        return 0
    if replace:
        for j in range(k):
            picks[j] = lo + np.random.randint(0, degree)
        return k
    # Floyd: for j = d - k .. d - 1 draw t in [0, j]; take t unless taken, else j
    for j in range(k):
        top = degree - k + j
        t = np.random.randint(0, top + 1)
        for m in range(j):
            if picks[m] == lo + t:
                t = top
                break
        picks[j] = lo + t
    return k


@numba.njit(cache=True, nogil=True)
def _sample(colptr: np.ndarray, row: np.ndarray, seeds: np.ndarray, num_neighbors: np.ndarray,
            replace: bool, local: np.ndarray, seed: int):
    np.random.seed(seed)
    nodes = np.empty(max(16, 4 * seeds.size), np.int64)
    rows = np.empty(max(16, 8 * seeds.size), np.int64)
    cols = np.empty_like(rows)
    edges = np.empty_like(rows)
    hop_nodes = np.zeros(num_neighbors.size + 1, np.int64)
    hop_edges = np.zeros(num_neighbors.size, np.int64)
    count = 0
    for s in seeds:
        nodes = _grown(nodes, count + 1)
        if local[s] < 0:  # (a repeated seed stays one node: its first place)
            local[s] = count
        nodes[count] = s
        count += 1
    hop_nodes[0] = count
    picks = np.empty(64, np.int64)
    m = 0
    begin, end = 0, count
    for hop in range(num_neighbors.size):
        k = num_neighbors[hop]
        for i in range(begin, end):
            v = nodes[i]
            lo = colptr[v]
            degree = colptr[v + 1] - lo
            picks = _grown(picks, degree if k < 0 or (degree <= k and not replace) else k)
            taken = _draw(lo, degree, k, replace, picks)
            rows = _grown(rows, m + taken)
            cols = _grown(cols, m + taken)
            edges = _grown(edges, m + taken)
            for j in range(taken):
                e = picks[j]
                u = row[e]
                if local[u] < 0:
                    nodes = _grown(nodes, count + 1)
                    local[u] = count
                    nodes[count] = u
                    count += 1
                rows[m] = local[u]
                cols[m] = local[v]
                edges[m] = e
                m += 1
            hop_edges[hop] += taken
        hop_nodes[hop + 1] = count - end
        begin, end = end, count
    for i in range(count):  # the scratch map back to "not sampled" for the next call
        local[nodes[i]] = -1
    return nodes[:count].copy(), rows[:m].copy(), cols[:m].copy(), edges[:m].copy(), \
        hop_nodes, hop_edges


def sample_neighbors(colptr: np.ndarray, row: np.ndarray, seeds: np.ndarray,
                     num_neighbors: np.ndarray, *, replace: bool = False, seed: int = 0,
                     local: np.ndarray | None = None):
    """One sample of the module docstring from ``seeds``.

    Args:
        colptr: ``int64 [n + 1]``, the CSC column pointers.
        row: ``int64 [e]``, the source of each CSC position.
        seeds: ``int64 [b]``, the nodes sampled from (distinct; a repeated seed keeps its
            first place in the sample).
        num_neighbors: ``int64 [hops]``, the in-edges drawn per node in each hop (``-1``: all).
        replace: draw with replacement.
        seed: the random numbers' seed.
        local: scratch, ``int64 [n]`` filled with ``-1`` (left so on return); allocated
            when omitted (a sampler keeps one across calls).

    Returns:
        ``(nodes, rows, cols, edges, hop_nodes, hop_edges)``: the sampled nodes' ids (seeds
        first), every sampled edge as local source ``rows``, local target ``cols`` and CSC
        position ``edges``, and the nodes added and edges drawn in each hop
        (``hop_nodes[0]`` the seeds).
    """
    if local is None:
        local = np.full(colptr.size - 1, -1, dtype=np.int64)
    return _sample(colptr, row, seeds, num_neighbors, bool(replace), local, int(seed))
