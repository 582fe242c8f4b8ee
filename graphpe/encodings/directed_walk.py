r"""Directed random-walk structural encoding: the return probabilities of the random walk that
follows the direction of the edges.

One module holds the whole encoding (kernel, transform, encoder, declaration), as "Adding an
encoding" in the docs describes. The kernels of :mod:`graphpe.ops.walk` are not used: they
build the undirected graph of the input (:func:`graphpe.ops.host.simple_csr`), and the walk
here must keep the direction.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor, nn

from graphpe.encodings.registry import Encoding, register, setting_of
from graphpe.encodings.transform import PETransform, check_attr_names, option
from graphpe.layers.encoders import LinearSEEncoder
from graphpe.ops.aot import njit
from graphpe.ops.checks import check_choice, check_positive_int, check_size_limit
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
        raise ValueError(f"directed_landing_probs densifies each graph: a graph of "
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


@njit(cache=True, nogil=True, fastmath=FASTMATH)
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


@dataclass(eq=False, repr=False)
class DirectedRWSE(PETransform):
    r"""Directed random-walk structural encoding: RWSE's return probabilities (Dwivedi et al.,
    "Graph Neural Networks with Learnable Structural and Positional Representations", ICLR
    2022) for the walk that follows the direction of ``edge_index``,
    :math:`(P^t)_{ii}` with :math:`P = D_{out}^{-1} A`, :math:`t = 1..T`, after the directional
    random-walk encodings of Geisler et al. ("Transformers Meet Directed Graphs", ICML 2023)
    (:func:`directed_landing_probs`). On a graph given with both directions of every edge it
    is RWSE, except that a node without edges is a sink. Writes ``drwse`` ``[N, T]``.

    Args:
        walk_length: the steps ``T`` (default 16, as RWSE).
        sink: what the walker does on a node without out-edges: ``stay`` (default; it stays,
            as on a self loop), ``teleport`` (to a uniform node of its graph) or ``vanish``
            (the walk ends).
        attr_name: attribute written (``"drwse"``; None appends to ``x``).
        max_nodes: largest graph (each is computed densely).
    """

    walk_length: int = option(16, check_positive_int)
    sink: str = option("stay", lambda name, value: check_choice(name, value, SINKS))
    attr_name: str | None = option("drwse")
    max_nodes: int = option(DIRECTED_WALK_MAX_NODES, check_size_limit, key=False)

    def validate(self) -> None:
        check_attr_names({"attr_name": self.attr_name}, optional=("attr_name",))

    def compute(self, edge_index, num_nodes, ptr, edge_weight=None) -> dict[str, Tensor]:
        return {self.attr_name: directed_landing_probs(
            edge_index, num_nodes, self.walk_length, ptr=ptr, edge_weight=edge_weight,
            sink=self.sink, max_nodes=self.max_nodes)}


class DirectedRWSEEncoder(LinearSEEncoder):
    """``drwse`` ``[N, walk_length]`` -> ``[N, channels]`` (BatchNorm + Linear, as RWSE's)."""

    producer = "DirectedRWSE(walk_length={0.in_dim}) of graphpe.encodings.directed_walk"

    def __init__(self, walk_length: int, channels: int, attr_name: str = "drwse",
                 **kwargs) -> None:
        super().__init__(walk_length, channels, attr_name, **kwargs)


@register
class DRWSESpec(Encoding):
    name = "drwse"
    summary = ("directed random-walk return probabilities diag((D_out^-1 A)^t), t = "
               "1..walk_length, along the edges' direction")
    paper = "Geisler et al., Transformers Meet Directed Graphs, ICML 2023"
    family = "walk"
    reference_test = ("tests/encodings/test_directed_walk.py::"
                      "test_equals_dense_matrix_powers")

    transform_class = DirectedRWSE
    encoder_class = DirectedRWSEEncoder

    walk_length: int = setting_of(DirectedRWSE, "walk_length")
    sink: str = setting_of(DirectedRWSE, "sink")

    def encoder(self, channels: int) -> nn.Module:
        return DirectedRWSEEncoder(self.walk_length, channels)
