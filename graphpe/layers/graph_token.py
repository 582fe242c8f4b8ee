r"""Graphormer's graph token: one extra node per graph that every node attends to and that
attends to every node, read out as the graph's representation.

Graphormer (Ying et al., "Do Transformers Really Perform Badly for Graph Representation?",
NeurIPS 2021, §3.3 "Special Node") prepends a learned token ``[VNode]`` to each graph's nodes.
It has no edges: it takes part in attention only, where its pairs get their own learned
"virtual distance" bias per head,

.. math::
    b_{\mathrm{tok}, j} = b_{i, \mathrm{tok}} = t_h \quad \text{for every node } i, j
    \text{ of its graph (and } b_{\mathrm{tok}, \mathrm{tok}} = t_h),

added to whatever pairwise bias (shortest-path distance, edge encoding) the real pairs have; and
its final state is the graph's representation. Graphormer's ``graph_token`` and
``graph_token_virtual_distance`` are ``nn.Embedding(1, .)`` initialized ``N(0, 0.02^2)``, as
here.

Here the token is inserted in front of each graph's nodes, so the batch stays graph-contiguous
(the attention's size buckets, ``ptr``): node ``i`` of graph ``g`` moves to row ``i + g + 1``
and graph ``g``'s token sits at row ``ptr[g] + g``. Edges are renumbered and none is added;
the token's pairs are appended to the pair list with the bias ``t``.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor, nn


class TokenLayout(NamedTuple):
    """A batch with one token in front of each graph's nodes (``N`` nodes, ``G`` graphs)."""

    node_rows: Tensor  # [N] the row of each original node
    token_rows: Tensor  # [G] the row of each graph's token
    ptr: Tensor  # [G + 1] graph offsets with the tokens
    graph: Tensor  # [N + G] graph of every row
    edge_index: Tensor  # [2, E] the edges, renumbered
    pair_index: Tensor  # [2, P + G + 2N] the pairs (renumbered), then the token's pairs
    pair_bias: Tensor  # [P + G + 2N, heads] their biases: the given ones, then t


class GraphToken(nn.Module):
    """Graphormer's graph token for a GPS stack with ``multihead`` attention (module docstring).

    Args:
        channels: width of the token's learned start state.
        heads: attention heads (one virtual-distance bias each).
    """

    def __init__(self, channels: int, heads: int) -> None:
        super().__init__()
        self.channels, self.heads = channels, heads
        self.embedding = nn.Parameter(torch.empty(channels))
        self.virtual_distance = nn.Parameter(torch.empty(heads))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.normal_(self.embedding, std=0.02)
        nn.init.normal_(self.virtual_distance, std=0.02)

    def forward(self, h: Tensor, edge_index: Tensor, graph: Tensor | None, ptr: Tensor | None,
                pair_bias: Tensor | None = None, pair_index: Tensor | None = None
                ) -> tuple[Tensor, TokenLayout]:
        """``h [N, channels]`` with the tokens inserted (``[N + G, channels]``) and the
        :class:`TokenLayout` of the new rows. ``graph``/``ptr`` as a PyG ``Batch``'s (both None:
        one graph); ``pair_bias [P, heads]`` on ``pair_index [2, P]``, if any, keep their
        values on the renumbered pairs."""
        num_nodes = h.size(0)
        device = h.device
        if ptr is None:
            if graph is not None and graph.numel() and bool((graph != 0).any()):
                raise ValueError("a batch of several graphs needs its ptr for graph tokens")
            ptr = torch.tensor([0, num_nodes], device=device)
        num_graphs = ptr.numel() - 1
        counts = ptr[1:] - ptr[:-1]
        graph_ids = torch.arange(num_graphs, device=device)
        if graph is None:
            graph = torch.repeat_interleave(graph_ids, counts, output_size=num_nodes)
        node_rows = torch.arange(num_nodes, device=device) + graph + 1
        token_rows = ptr[:-1] + graph_ids
        new_ptr = ptr + torch.arange(num_graphs + 1, device=device)
        new_graph = torch.repeat_interleave(graph_ids, counts + 1,
                                            output_size=num_nodes + num_graphs)
        out = h.new_empty(num_nodes + num_graphs, h.size(1))
        out[node_rows] = h
        out[token_rows] = self.embedding.to(h.dtype)
        # the token's pairs: itself, token -> each node (query token), each node -> token
        own = token_rows[graph]
        token_pairs = torch.stack([torch.cat([token_rows, own, node_rows]),
                                   torch.cat([token_rows, node_rows, own])])
        dtype = h.dtype if pair_bias is None else pair_bias.dtype
        token_bias = self.virtual_distance.to(dtype).expand(token_pairs.size(1), -1)
        if pair_bias is not None:
            if pair_index is None:
                raise ValueError("pair_bias needs its pair_index")
            token_pairs = torch.cat([node_rows[pair_index], token_pairs], 1)
            token_bias = torch.cat([pair_bias, token_bias], 0)
        return out, TokenLayout(node_rows, token_rows, new_ptr, new_graph,
                                node_rows[edge_index], token_pairs, token_bias)

    def extra_repr(self) -> str:
        return f"channels={self.channels}, heads={self.heads}"
