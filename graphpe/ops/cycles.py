r"""Substructure counts: the simple cycles of length ``3..max_length`` through every node (and,
on request, every edge), as GSN's structural features (the encoding
:class:`graphpe.encodings.cycles.CycleCounts`); and GPSE's graph-level cycle counts. One
compiled depth-first enumeration over the graphs on the host."""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from graphpe.ops import aot
from graphpe.ops.checks import check_positive_int
from graphpe.ops.curvature.compiled import per_input_edge_host
from graphpe.ops.graph import batch_from_ptr, validate_graph
from graphpe.ops.host import (
    csr_position,
    graph_chunks,
    host_array,
    run_over_graphs,
    simple_csr,
)

# The enumeration visits every simple path of up to max_length nodes that starts at its
# smallest node: a handful per node on molecules, but exponential in max_length on dense
# graphs. This many path extensions per graph (about a second of compiled work) is the default
# budget; a graph needing more is refused rather than left running for hours.
CYCLES_MAX_PATHS = 10**7


def check_max_length(name: str, value: object) -> int:
    """``value`` as an int if it is an int >= 3 (the shortest simple cycle)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 3:
        raise ValueError(f"{name} must be an int >= 3, got {value!r}")
    return int(value)


def cycle_counts(edge_index: Tensor, num_nodes: int, max_length: int = 8,
                 ptr: Tensor | None = None, edges: bool = False,
                 max_paths: int = CYCLES_MAX_PATHS) -> tuple[Tensor, Tensor | None]:
    r"""Exact counts of the simple cycles through each node (and each edge), by length.

    The graph is the undirected simple graph of ``edge_index``: directions are ignored,
    duplicate edges are one edge, self loops are dropped (a self loop is no cycle of length
    >= 3) and edge weights are not read. A simple cycle of length :math:`L` is a closed walk
    :math:`v_1 v_2 \dots v_L v_1` of :math:`L` distinct nodes, counted once whatever its
    starting node and direction. Returns

    - ``node [num_nodes, max_length - 2]`` int64: column :math:`L - 3` holds the number of
      simple cycles of length :math:`L` through the node, :math:`L = 3..\text{max_length}`;
    - with ``edges``, ``edge [E, max_length - 2]`` int64, aligned with ``edge_index``: the
      cycles of each length through the (undirected) edge; a self loop's row is 0, and
      duplicates of an edge (either direction) get the same row. Otherwise None.

    Each cycle is enumerated once, from its smallest node ``s``, by a depth-first search over
    the simple paths of nodes larger than ``s`` of at most ``max_length`` nodes; a path
    whose last node is adjacent to ``s`` closes a cycle, kept in the direction whose second
    node is smaller than its last. The cost is the number of such paths, times ``max_length``
    for each cycle found: :math:`O(n\,\Delta^{\text{max_length}-1})` for maximum degree
    :math:`\Delta` in the worst case, a few paths per node on molecules. A graph whose
    enumeration extends more than ``max_paths`` paths is refused with a ValueError (rather
    than running for hours on a dense graph).

    One compiled loop over the graphs of the batch (``ptr``, None for one graph), on the host
    (a CUDA input is copied there and the counts copied back), the graphs shared out over
    torch's threads.
    """
    validate_graph(edge_index, num_nodes, None, ptr)
    max_length = check_max_length("max_length", max_length)
    max_paths = check_positive_int("max_paths", max_paths)
    device = edge_index.device
    csr = simple_csr(edge_index.cpu(), num_nodes)
    ptr_np = (np.array([0, num_nodes], dtype=np.int64) if ptr is None
              else host_array(ptr.cpu(), np.int64))
    width = max_length - 2
    node = np.zeros((num_nodes, width), dtype=np.int64)
    entry = np.zeros((csr.indices.shape[0] if edges else 0, width), dtype=np.int64)
    refused = []

    def run(a: int, b: int) -> None:
        g = _count_cycles(csr.indptr, csr.indices, ptr_np[a:b + 1], max_length, max_paths,
                          edges, node, entry)
        if g >= 0:
            refused.append(a + g)

    run_over_graphs(run, graph_chunks(ptr_np))
    if refused:
        g = min(refused)
        raise ValueError(f"cycle_counts: graph {g} ({int(ptr_np[g + 1] - ptr_np[g])} nodes) has "
                         f"more than max_paths={max_paths} simple paths of up to {max_length} "
                         f"nodes to enumerate; lower max_length or raise max_paths")
    node_t = torch.from_numpy(node).to(device)
    if not edges:
        return node_t, None
    both = _both_directions(csr.indptr, csr.indices, entry)
    edge = per_input_edge_host(edge_index.cpu(), csr, both).astype(np.int64)
    return node_t, torch.from_numpy(edge).to(device)


def graph_cycle_counts(edge_index: Tensor, num_nodes: int, max_length: int = 8,
                       ptr: Tensor | None = None,
                       max_paths: int = CYCLES_MAX_PATHS) -> Tensor:
    r"""GPSE's graph-level cycle target (``CycleGE``: ``count_cycles(range(2, 9))`` of the GPSE
    code, Cantürk et al., ICML 2024): ``[num_graphs, max_length - 1]`` int64, column
    :math:`L - 2` the number of cycles of length :math:`L = 2..\text{max_length}` in each graph
    of the undirected simple graph of ``edge_index`` (as :func:`cycle_counts`).

    Columns :math:`L \ge 3` are the simple cycles, :math:`\frac{1}{L}\sum_i c_L(i)` of the node
    counts (each cycle passes through :math:`L` nodes). Column 0 (:math:`L = 2`) follows
    GPSE's enumeration, which closes a cycle on every edge walked there and back: it is the
    number of edges (each undirected edge once, self loops not counted; GPSE's code raises on
    a self loop)."""
    node, _ = cycle_counts(edge_index, num_nodes, max_length, ptr, max_paths=max_paths)
    return graph_cycle_counts_of_nodes(node, edge_index, num_nodes, ptr)


def graph_cycle_counts_of_nodes(node: Tensor, edge_index: Tensor, num_nodes: int,
                                ptr: Tensor | None) -> Tensor:
    """:func:`graph_cycle_counts` from the node counts of :func:`cycle_counts`."""
    device = node.device
    ptr = (torch.tensor([0, num_nodes]) if ptr is None else ptr.cpu()).long()
    graph = batch_from_ptr(ptr, num_nodes)
    num_graphs = ptr.numel() - 1
    lengths = torch.arange(3, node.size(1) + 3)
    cycles = torch.zeros(num_graphs, node.size(1), dtype=torch.long).index_add_(
        0, graph, node.cpu())
    src, dst = edge_index.cpu().long()
    keep = src != dst
    # each undirected edge once, whichever directions and duplicates the input lists
    pairs = torch.unique(torch.stack([torch.minimum(src, dst), torch.maximum(src, dst)])[:, keep],
                         dim=1)
    two = torch.bincount(graph[pairs[0]], minlength=num_graphs)
    return torch.cat([two.unsqueeze(1), cycles // lengths], dim=1).to(device)


@aot.njit(cache=True, nogil=True)
def _count_cycles(indptr, indices, ptr, max_length, max_paths, edges, node,
                  entry):  # pragma: no cover - compiled
    # Depth-first search from every root s over the nodes above s: path[:depth] is the current
    # path, nxt[d] the next CSR entry of path[d] to try (so nxt[d] - 1 is the entry just taken
    # from path[d]). Returns the first graph (index into ptr) past its budget, else -1.
    n_all = indptr.shape[0] - 1
    on_path = np.zeros(n_all, dtype=np.bool_)
    path = np.empty(max_length, dtype=np.int64)
    nxt = np.empty(max_length, dtype=np.int64)
    for g in range(ptr.shape[0] - 1):  # compiled: the per-graph budget needs the graph
        steps = 0
        for s in range(ptr[g], ptr[g + 1]):
            path[0] = s
            nxt[0] = indptr[s]
            on_path[s] = True
            depth = 1
            while depth > 0:
                u = path[depth - 1]
                p = nxt[depth - 1]
                if p == indptr[u + 1]:
                    on_path[u] = False
                    depth -= 1
                    continue
                nxt[depth - 1] = p + 1
                v = indices[p]
                if v == s:
                    # a cycle; its reverse is found too, and only the one whose second node
                    # is below its last is kept
                    if depth >= 3 and path[1] < u:
                        col = depth - 3
                        for d in range(depth):
                            node[path[d], col] += 1
                        if edges:  # one direction of each edge; _both_directions adds them
                            for d in range(depth - 1):
                                entry[nxt[d] - 1, col] += 1
                            entry[p, col] += 1
                    continue
                if v < s or on_path[v] or depth == max_length:
                    continue
                steps += 1
                if steps > max_paths:
                    for d in range(depth):
                        on_path[path[d]] = False
                    return g
                path[depth] = v
                nxt[depth] = indptr[v]
                on_path[v] = True
                depth += 1
    return -1


@aot.njit(cache=True, nogil=True)
def _both_directions(indptr, indices, entry):  # pragma: no cover - compiled
    """``entry[(u, v)] + entry[(v, u)]`` on every CSR entry: the counts of the undirected edge,
    each cycle having been recorded on one of its two directions."""
    out = np.empty(entry.shape, dtype=np.float64)
    for u in range(indptr.shape[0] - 1):
        for p in range(indptr[u], indptr[u + 1]):
            q = csr_position(indptr, indices, indices[p], u)
            for c in range(entry.shape[1]):
                out[p, c] = entry[p, c] + entry[q, c]
    return out


aot.bind(globals())  # the kernels compiled ahead of time, where built (ops.aot)
