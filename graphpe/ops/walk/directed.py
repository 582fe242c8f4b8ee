r"""Directed random walk: the return probabilities of the walk that follows the direction of the
edges (the directed random-walk encoding, :class:`graphpe.encodings.directed_walk.DirectedRWSE`),
one compiled loop over the graphs on the host.

The kernels of :mod:`graphpe.ops.walk.compiled` are not used: they build the undirected graph of
the input (:func:`graphpe.ops.host.simple_csr`), and the walk here must keep the direction.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from graphpe.ops import aot
from graphpe.ops.checks import (
    GraphRefusedError,
    check_choice,
    check_positive_int,
    check_size_limit,
)
from graphpe.ops.graph import validate_graph
from graphpe.ops.host import FASTMATH, graph_chunks, host_array, numpy_dtype, run_over_graphs

# what the walker does on a node without out-edges (see directed_landing_probs)
SINKS = ("stay", "teleport", "vanish")
# each graph is computed densely: five scratch blocks of n^2 entries (160 MB at 2048 nodes)
DIRECTED_WALK_MAX_NODES = 2048


def directed_landing_probs(edge_index: Tensor, num_nodes: int, walk_length: int,
                           ptr: Tensor | None = None, edge_weight: Tensor | None = None,
                           sink: str = "stay", dtype: torch.dtype = torch.float32,
                           max_nodes: int = DIRECTED_WALK_MAX_NODES) -> Tensor:
    r"""``[num_nodes, walk_length]``: :math:`(P^t)_{ii}`, :math:`t = 1..T`, the probability that
    the random walk along the edges' direction, started at node :math:`i`, is back at
    :math:`i` after :math:`t` steps, with :math:`P = D_{out}^{-1} A`.

    :math:`A_{ij}` is the weight of the edge :math:`i \to j` (1 without weights; duplicates
    keep their largest weight; an edge of weight 0 is no edge) and a self loop is the entry
    :math:`A_{ii}` (the walker may stay, as RWSE's walk), counted once in the out-degree
    :math:`D_{out,ii} = \sum_j A_{ij}`. A sink (a node without out-edges, an isolated node
    among them) has no row to follow; ``sink`` says what the walker does there:

    - ``stay`` (default): it stays, as on a self loop (:math:`P_{ii} = 1`; an absorbing state,
      so a sink's return probability is 1 at every step);
    - ``teleport``: it jumps to a node of its graph drawn uniformly, itself included
      (:math:`P_{ij} = 1/n`: PageRank's rule for dangling nodes);
    - ``vanish``: the walk ends (a zero row; :math:`P` is then substochastic and a sink's
      return probability is 0). On an undirected graph this is RWSE, whose isolated nodes
      get 0.

    Each graph is computed alone, in float64: its dense :math:`P^t` advanced by one sparse
    product per step, :math:`O(T \cdot \mathrm{nnz}(P) \cdot n)` time and :math:`O(n^2)`
    memory for a graph of :math:`n` nodes; graphs above ``max_nodes`` are refused. One
    compiled loop over the graphs of the batch (``ptr``, None for one graph), on the host (a
    CUDA input is copied there and the result copied back), the graphs shared out over
    torch's threads. The result is in ``dtype``.
    """
    validate_graph(edge_index, num_nodes, edge_weight, ptr)
    walk_length = check_positive_int("walk_length", walk_length)
    check_choice("sink", sink, SINKS)
    max_nodes = check_size_limit("max_nodes", max_nodes)
    device = edge_index.device
    ptr_np = (np.array([0, num_nodes], dtype=np.int64) if ptr is None
              else host_array(ptr.cpu(), np.int64))
    sizes = ptr_np[1:] - ptr_np[:-1]
    if sizes.size and int(sizes.max()) > max_nodes:
        raise GraphRefusedError(f"directed_landing_probs densifies each graph: a graph of "
                         f"{int(sizes.max())} nodes is above max_nodes={max_nodes}")
    ei = host_array(edge_index.cpu(), np.int64)
    weight = (np.ones(ei.shape[1]) if edge_weight is None
              else host_array(edge_weight.cpu(), np.float64))
    # the edges grouped by source node: row i's out-edges are order[starts[i]:starts[i + 1]]
    order = np.argsort(ei[0], kind="stable")
    starts = np.zeros(num_nodes + 1, dtype=np.int64)
    np.cumsum(np.bincount(ei[0], minlength=num_nodes), out=starts[1:])
    dst, weight = ei[1][order], weight[order]
    out = np.empty((num_nodes, walk_length), dtype=numpy_dtype(dtype))
    code = SINKS.index(sink)
    run_over_graphs(lambda a, b: _directed_landing(starts, dst, weight, ptr_np[a:b + 1],
                                                   walk_length, code, out),
                    graph_chunks(ptr_np))
    return torch.from_numpy(out).to(device)


@aot.njit(cache=True, nogil=True, fastmath=FASTMATH)
def _directed_landing(starts, dst, weight, ptr, walk_length, sink,
                      out):  # pragma: no cover - compiled
    # Per graph: A densely (so that duplicates merge by their largest weight), then P's rows
    # as a local CSR (cols, vals), then X = P^t, dense, advanced by X <- P X (nnz(P) * n
    # multiply-adds a step), its diagonal read after each step. sink: 0 stay, 1 teleport,
    # 2 vanish (SINKS).
    big = 0
    for g in range(ptr.shape[0] - 1):  # compiled: the largest graph sizes the scratch
        big = max(big, ptr[g + 1] - ptr[g])
    adjacency = np.empty(big * big)
    store_x = np.empty(big * big)
    store_y = np.empty(big * big)
    cols = np.empty(big * big, dtype=np.int64)
    vals = np.empty(big * big)
    rows = np.empty(big + 1, dtype=np.int64)
    for g in range(ptr.shape[0] - 1):  # compiled: each graph at its own size, no padding
        s = ptr[g]
        n = ptr[g + 1] - s
        if n == 0:
            continue
        a = adjacency[: n * n].reshape((n, n))
        a[:, :] = 0.0
        for i in range(n):
            for p in range(starts[s + i], starts[s + i + 1]):
                j = dst[p] - s
                if weight[p] > a[i, j]:
                    a[i, j] = weight[p]
        nnz = 0
        for i in range(n):
            rows[i] = nnz
            top = 0.0
            for j in range(n):
                top = max(top, a[i, j])
            if top > 0.0:
                # divided by the row's largest weight first, so huge weights cannot overflow
                total = 0.0
                for j in range(n):
                    total += a[i, j] / top
                for j in range(n):
                    if a[i, j] > 0.0:
                        cols[nnz] = j
                        vals[nnz] = a[i, j] / top / total
                        nnz += 1
            elif sink == 0:
                cols[nnz] = i
                vals[nnz] = 1.0
                nnz += 1
            elif sink == 1:
                for j in range(n):
                    cols[nnz] = j
                    vals[nnz] = 1.0 / n
                    nnz += 1
        rows[n] = nnz
        x = store_x[: n * n].reshape((n, n))
        y = store_y[: n * n].reshape((n, n))
        x[:, :] = 0.0
        for i in range(n):
            for q in range(rows[i], rows[i + 1]):
                x[i, cols[q]] = vals[q]
            out[s + i, 0] = x[i, i]
        for t in range(1, walk_length):
            for i in range(n):
                row = y[i]
                row[:] = 0.0
                for q in range(rows[i], rows[i + 1]):
                    v = vals[q]
                    src = x[cols[q]]
                    for c in range(n):
                        row[c] += v * src[c]
                out[s + i, t] = row[i]
            x, y = y, x


aot.bind(globals())  # the kernels compiled ahead of time, where built (ops.aot)
