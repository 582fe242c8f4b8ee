r"""The labeling trick for link prediction: each query pair ``(u, v)``'s enclosing subgraph,
with node labels that say where each node sits relative to the two targets (SEAL: Zhang &
Chen, "Link Prediction Based on Graph Neural Networks", NeurIPS 2018; Zhang et al.,
"Labeling Trick: A Theory of Using Graph Neural Networks for Multi-Node Representation
Learning", NeurIPS 2021).

The graph is read as undirected and unweighted (:func:`graphpe.ops.host.simple_csr`: both
directions, duplicates merged, self loops dropped). For a pair ``(u, v)`` with ``u != v``:

- **Nodes**: ``u`` and ``v`` (at local indices 0 and 1), then the nodes within ``hops`` hops
  of either, hop layer by hop layer: layer ``h`` is the nodes adjacent to layer ``h - 1``
  (layer 0 = ``{u, v}``) and in no earlier layer, as SEAL's breadth-first search from the
  two targets together. With ``max_nodes_per_hop = k``, a layer of more than ``k`` nodes
  keeps ``k`` of them drawn uniformly without replacement, and the next layer grows from the
  kept ones only (the dropped ones stay out of every later layer): SEAL's
  ``max_nodes_per_hop`` (Zhang & Chen 2018, its code's ``subgraph_extraction_labeling``), so
  a subgraph holds at most ``2 + hops * k`` nodes.
- **Edges**: every edge of the graph between two nodes of the subgraph, in both directions,
  **except the target edge** ``(u, v)`` and ``(v, u)``, which is never in its own subgraph
  (whether or not the graph has it): a positive training pair cannot read its own label.
  Other pairs' edges are kept, as in SEAL.
- **Labels** (distances within the subgraph above, target edge removed). Let ``d_u(x)`` be
  the distance from ``u`` to ``x`` in the subgraph with ``v`` removed, and ``d_v(x)`` the
  distance from ``v`` with ``u`` removed (``inf`` where unreachable):

  - ``"drnl"``, double-radius node labeling (Zhang & Chen 2018): the targets get 1; a node
    with ``d_u`` or ``d_v`` infinite gets 0; any other gets, with ``d = d_u + d_v``,
    ``1 + min(d_u, d_v) + (d // 2) * (d // 2 + d % 2 - 1)``. This is PyG's SEAL example
    (``examples/seal_link_pred.py``, ``drnl_node_labeling``) exactly, its NaN for a node
    unreachable from one target included (it becomes 0). ``[M]`` int64.
  - ``"de"``, distance encoding (Li, Wang, Wang & Leskovec, "Distance Encoding: Design
    Provably More Powerful Neural Networks for Graph Representation Learning", NeurIPS
    2020): ``(min(dist(u, x), c), min(dist(v, x), c))`` with ``c = max_distance`` and the
    distances in the subgraph with neither target removed (so ``dist(u, v)`` is the length
    of a path avoiding the target edge); unreachable gives ``c``. SEAL-OGB's
    ``de_node_labeling``. ``[M, 2]`` int64, column 0 towards ``u``.
  - ``"de+"``: the same pair from ``d_u`` and ``d_v`` (each target masked while measuring
    from the other, as DRNL), with ``d_u(v) = d_v(u) = 0``: SEAL-OGB's
    ``de_plus_node_labeling``. ``[M, 2]`` int64.

Compiled: all pairs in two compiled passes over them (the subgraphs' sizes, then their
contents written in place), each a breadth-first search over the CSR from the two targets,
then one per target for the labels; pairs are shared out over threads
(:func:`graphpe.ops.host.run_over_graphs`). The module is not in ``aot.AOT_MODULES`` yet:
numba compiles its kernels on first use and keeps them in its disk cache.

Random numbers: pair ``(u, v)`` draws from a counter-based SplitMix64 stream of ``(seed, u,
v)``, so its subgraph is a function of the seed and the pair, whatever the other pairs asked
with it, their order or the threads.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch
from torch import Tensor

from graphpe.ops import aot
from graphpe.ops.checks import (
    check_choice,
    check_optional_positive_int,
    check_positive_int,
)
from graphpe.ops.host import graph_chunks, run_over_graphs, simple_csr
from graphpe.ops.link import check_pairs
from graphpe.ops.walk.sampled import splitmix64

LABELS = ("drnl", "de", "de+", None)
# the columns of labels per node, by labeling (0: none)
_LABEL_WIDTH = {"drnl": 1, "de": 2, "de+": 2, None: 0}
_LABEL_CODE = {"drnl": 0, "de": 1, "de+": 2, None: -1}
# the fewest pairs a thread is given
PAIRS_PER_THREAD = 256
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_TO_UNIT = 1.0 / 9007199254740992.0  # 2^-53
_UNSEEN, _DROPPED = -1, -2


class EnclosingSubgraphs(NamedTuple):
    """The enclosing subgraphs of ``P`` pairs as one batch, in PyG's collated layout:
    subgraph ``i`` holds the nodes ``ptr[i] .. ptr[i + 1] - 1`` (its two targets first, at
    ``ptr[i]`` and ``ptr[i] + 1``) and the edges ``edge_ptr[i] .. edge_ptr[i + 1] - 1``.

    Attributes:
        nodes: ``int64 [M]``, each node's id in the graph (``x[nodes]`` gathers features).
        edge_index: ``int64 [2, E]``, the subgraphs' edges in the batch's numbering (rows of
            ``nodes``), both directions, never a subgraph's own target edge.
        ptr: ``int64 [P + 1]``, where each subgraph's nodes start.
        batch: ``int64 [M]``, each node's subgraph.
        edge_ptr: ``int64 [P + 1]``, where each subgraph's edges start.
        labels: ``int64 [M]`` (DRNL), ``[M, 2]`` (DE, DE+), or None.
    """

    nodes: Tensor
    edge_index: Tensor
    ptr: Tensor
    batch: Tensor
    edge_ptr: Tensor
    labels: Tensor | None

    @property
    def num_subgraphs(self) -> int:
        """``P``, the number of pairs."""
        return self.ptr.numel() - 1

    @property
    def target_index(self) -> Tensor:
        """``int64 [2, P]``: the rows of each subgraph's ``u`` and ``v`` in the batch."""
        return torch.stack([self.ptr[:-1], self.ptr[:-1] + 1])

    def subgraph(self, i: int) -> tuple[Tensor, Tensor, Tensor | None]:
        """Subgraph ``i`` on its own: its nodes' ids in the graph, its edges in local indices
        (``u`` is 0, ``v`` is 1), its labels (or None)."""
        lo, hi = int(self.ptr[i]), int(self.ptr[i + 1])
        edges = self.edge_index[:, int(self.edge_ptr[i]):int(self.edge_ptr[i + 1])] - lo
        labels = None if self.labels is None else self.labels[lo:hi]
        return self.nodes[lo:hi], edges, labels


@aot.njit(cache=True, nogil=True, inline="always")
def _below(stream, draw, m):  # pragma: no cover - compiled
    """Draw number ``draw`` of the counter-based ``stream``, uniform in ``[0, m)``."""
    z = splitmix64(stream + np.uint64(draw + 1) * _GOLDEN)
    return min(np.int64(np.float64(z >> np.uint64(11)) * _TO_UNIT * m), m - 1)


@aot.njit(cache=True, nogil=True)
def _gather(indptr, indices, u, v, hops, cap, seed, state, nodes,
            dropped):  # pragma: no cover - compiled
    """The node set of pair ``(u, v)``: ``nodes[:count]`` (``u``, ``v``, then hop layer by
    hop layer), ``state[x]`` set to each one's local index and to ``_DROPPED`` for the nodes
    a capped layer left out (``dropped[:count_dropped]``). Returns ``(count,
    count_dropped)``; ``cap < 0``: no cap."""
    stream = splitmix64(splitmix64(seed ^ (np.uint64(u) * _GOLDEN)) + np.uint64(v))
    draws = 0
    nodes[0], nodes[1] = u, v
    state[u], state[v] = 0, 1
    count, count_dropped = 2, 0
    begin, end = 0, 2
    for _ in range(hops):
        start = count
        for i in range(begin, end):
            x = nodes[i]
            for p in range(indptr[x], indptr[x + 1]):
                w = indices[p]
                if state[w] == _UNSEEN:
                    state[w] = count
                    nodes[count] = w
                    count += 1
        size = count - start
        if 0 <= cap < size:  # keep cap of the layer, uniformly (a partial Fisher-Yates)
            for j in range(cap):
                r = start + j + _below(stream, draws, size - j)
                draws += 1
                nodes[start + j], nodes[r] = nodes[r], nodes[start + j]
            for j in range(start + cap, count):
                state[nodes[j]] = _DROPPED
                dropped[count_dropped] = nodes[j]
                count_dropped += 1
            count = start + cap
            for j in range(start, count):
                state[nodes[j]] = j
        if count == start:
            break
        begin, end = start, count
    return count, count_dropped


@aot.njit(cache=True, nogil=True)
def _forget(state, nodes, count, dropped, count_dropped):  # pragma: no cover - compiled
    """``state`` back to ``_UNSEEN`` on every node :func:`_gather` marked."""
    for i in range(count):
        state[nodes[i]] = _UNSEEN
    for i in range(count_dropped):
        state[dropped[i]] = _UNSEEN


@aot.njit(cache=True, nogil=True)
def _edges(indptr, indices, state, nodes, count, offset, src, dst,
           start):  # pragma: no cover - compiled
    """The subgraph's edges but the target edge (between local 0 and 1), written from
    ``start`` of ``src``/``dst`` as local index + ``offset`` where ``src`` is not empty;
    returns how many."""
    m = 0
    write = src.shape[0] > 0
    for i in range(count):
        x = nodes[i]
        for p in range(indptr[x], indptr[x + 1]):
            j = state[indices[p]]
            if j >= 0 and (i >= 2 or j >= 2):
                if write:
                    src[start + m] = offset + i
                    dst[start + m] = offset + j
                m += 1
    return m


@aot.njit(cache=True, nogil=True)
def _distances(indptr, indices, state, nodes, count, source, blocked, dist,
               queue):  # pragma: no cover - compiled
    """``dist[:count]``: breadth-first distances from local ``source`` within the subgraph
    without the target edge and without local node ``blocked`` (``-1``: none); ``-1`` where
    unreachable."""
    for i in range(count):
        dist[i] = -1
    dist[source] = 0
    queue[0] = source
    head, tail = 0, 1
    while head < tail:
        i = queue[head]
        head += 1
        x = nodes[i]
        for p in range(indptr[x], indptr[x + 1]):
            j = state[indices[p]]
            if j >= 0 and j != blocked and dist[j] < 0 and (i >= 2 or j >= 2):
                dist[j] = dist[i] + 1
                queue[tail] = j
                tail += 1


@aot.njit(cache=True, nogil=True)
def _label(indptr, indices, state, nodes, count, kind, max_distance, out, start, d_u, d_v,
           queue):  # pragma: no cover - compiled
    """Writes the subgraph's labels (module docstring; ``kind`` 0 DRNL, 1 DE, 2 DE+) into
    ``out[start:start + count]``."""
    masked = kind != 1
    _distances(indptr, indices, state, nodes, count, 0, 1 if masked else -1, d_u, queue)
    _distances(indptr, indices, state, nodes, count, 1, 0 if masked else -1, d_v, queue)
    if masked:  # (as the reference inserts them: v at distance 0 from u, and u from v)
        d_u[1] = 0
        d_v[0] = 0
    for i in range(count):
        a, b = d_u[i], d_v[i]
        if kind == 0:
            if i < 2:
                out[start + i, 0] = 1
            elif a < 0 or b < 0:
                out[start + i, 0] = 0
            else:
                d = a + b
                half = d // 2
                out[start + i, 0] = 1 + min(a, b) + half * (half + d % 2 - 1)
        else:
            out[start + i, 0] = max_distance if a < 0 else min(a, max_distance)
            out[start + i, 1] = max_distance if b < 0 else min(b, max_distance)


@aot.njit(cache=True, nogil=True)
def _subgraph_sizes(indptr, indices, us, vs, lo, hi, hops, cap, seed, node_count,
                    edge_count):  # pragma: no cover - compiled
    """Pass 1: ``node_count[q]`` and ``edge_count[q]`` of the pairs ``lo .. hi - 1``."""
    n = indptr.shape[0] - 1
    state = np.full(n, _UNSEEN, np.int64)
    nodes = np.empty(n, np.int64)
    dropped = np.empty(n, np.int64)
    nowhere = np.empty(0, np.int64)
    for q in range(lo, hi):
        count, count_dropped = _gather(indptr, indices, us[q], vs[q], hops, cap, seed, state,
                                       nodes, dropped)
        node_count[q] = count
        edge_count[q] = _edges(indptr, indices, state, nodes, count, 0, nowhere, nowhere, 0)
        _forget(state, nodes, count, dropped, count_dropped)


@aot.njit(cache=True, nogil=True)
def _fill_subgraphs(indptr, indices, us, vs, lo, hi, hops, cap, seed, kind, max_distance,
                    ptr, edge_ptr, out_nodes, src, dst, labels):  # pragma: no cover - compiled
    """Pass 2: the nodes, edges (batch numbering) and labels of the pairs ``lo .. hi - 1``,
    written at their offsets ``ptr`` and ``edge_ptr``."""
    n = indptr.shape[0] - 1
    state = np.full(n, _UNSEEN, np.int64)
    nodes = np.empty(n, np.int64)
    dropped = np.empty(n, np.int64)
    d_u = np.empty(n, np.int64)
    d_v = np.empty(n, np.int64)
    queue = np.empty(n, np.int64)
    for q in range(lo, hi):
        count, count_dropped = _gather(indptr, indices, us[q], vs[q], hops, cap, seed, state,
                                       nodes, dropped)
        offset = ptr[q]
        out_nodes[offset:offset + count] = nodes[:count]
        _edges(indptr, indices, state, nodes, count, offset, src, dst, edge_ptr[q])
        if kind >= 0:
            _label(indptr, indices, state, nodes, count, kind, max_distance, labels, offset,
                   d_u, d_v, queue)
        _forget(state, nodes, count, dropped, count_dropped)


def _checked(pairs: Tensor, num_nodes: int, hops: int, labels: str | None,
             max_nodes_per_hop: int | None, max_distance: int, seed: int) -> Tensor:
    """The arguments' checks (one ValueError naming what is wrong); ``pairs`` as int64."""
    pairs = check_pairs(pairs, num_nodes)
    same = torch.nonzero(pairs[0] == pairs[1]).flatten()
    if same.numel():
        i = int(same[0])
        node = int(pairs[0, i])
        raise ValueError(f"pairs[:, {i}] is ({node}, {node}): a target link joins two "
                         "different nodes")
    check_positive_int("hops", hops)
    check_choice("labels", labels, LABELS)
    check_optional_positive_int("max_nodes_per_hop", max_nodes_per_hop)
    check_positive_int("max_distance", max_distance)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ValueError(f"seed must be an int, got {seed!r}")
    return pairs


def enclosing_subgraphs(edge_index: Tensor, num_nodes: int, pairs: Tensor, hops: int = 2, *,
                        labels: str | None = "drnl", max_nodes_per_hop: int | None = None,
                        max_distance: int = 3, seed: int = 0) -> EnclosingSubgraphs:
    """The enclosing subgraph of every pair of ``pairs``, with node labels, as one batch (the
    module docstring gives the subgraphs and the labels' formulas).

    Args:
        edge_index: ``[2, E]``, the graph the model may read (read as undirected and simple).
        num_nodes: the graph's node count.
        pairs: ``[2, P]`` node ids, the query pairs ``(u, v)``, ``u != v`` (positives and
            negatives, any number, in any order, repeats allowed).
        hops: the subgraphs' radius around ``u`` and ``v`` (>= 1).
        labels: ``"drnl"``, ``"de"``, ``"de+"`` or None (no labels).
        max_nodes_per_hop: the most nodes kept per hop layer (SEAL's ``max_nodes_per_hop``,
            drawn uniformly with ``seed``), or None for every node.
        max_distance: DE's and DE+'s cap ``c`` on distances (unreachable gives ``c``).
        seed: the seed of the draws of ``max_nodes_per_hop``.

    Returns:
        :class:`EnclosingSubgraphs` of CPU tensors: nodes, edges, ``ptr``, ``batch``,
        ``edge_ptr``, labels.
    """
    pairs = _checked(pairs, num_nodes, hops, labels, max_nodes_per_hop, max_distance, seed)
    csr = simple_csr(edge_index.cpu(), num_nodes)
    us, vs = pairs[0].numpy().copy(), pairs[1].numpy().copy()
    count = us.shape[0]
    cap = -1 if max_nodes_per_hop is None else int(max_nodes_per_hop)
    stream_seed = np.uint64(int(seed) % 2**64)
    chunks = graph_chunks(np.arange(count + 1), min_nodes=PAIRS_PER_THREAD)
    node_count = np.empty(count, np.int64)
    edge_count = np.empty(count, np.int64)
    run_over_graphs(lambda lo, hi: _subgraph_sizes(
        csr.indptr, csr.indices, us, vs, lo, hi, hops, cap, stream_seed, node_count,
        edge_count), chunks)
    ptr = np.zeros(count + 1, np.int64)
    np.cumsum(node_count, out=ptr[1:])
    edge_ptr = np.zeros(count + 1, np.int64)
    np.cumsum(edge_count, out=edge_ptr[1:])
    out_nodes = np.empty(ptr[-1], np.int64)
    edges = np.empty((2, edge_ptr[-1]), np.int64)
    out_labels = np.empty((ptr[-1], _LABEL_WIDTH[labels]), np.int64)
    run_over_graphs(lambda lo, hi: _fill_subgraphs(
        csr.indptr, csr.indices, us, vs, lo, hi, hops, cap, stream_seed, _LABEL_CODE[labels],
        max_distance, ptr, edge_ptr, out_nodes, edges[0], edges[1], out_labels), chunks)
    ptr_t = torch.from_numpy(ptr)
    batch = torch.repeat_interleave(torch.arange(count), torch.from_numpy(node_count))
    label_t = None if labels is None else torch.from_numpy(out_labels)
    if labels == "drnl":
        label_t = label_t[:, 0].contiguous()
    return EnclosingSubgraphs(torch.from_numpy(out_nodes), torch.from_numpy(edges), ptr_t,
                              batch, torch.from_numpy(edge_ptr), label_t)


aot.bind(globals())  # (binds nothing until the module joins aot.AOT_MODULES)
