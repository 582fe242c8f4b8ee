r"""The residual blocks of Platonov et al.'s baselines ("A critical look at the evaluation of
GNNs under heterophily", ICLR 2023; their ``modules.py``, MIT licence): each block is

.. math:: h \leftarrow h + M\big(\mathrm{LayerNorm}(h)\big),

where the module :math:`M` propagates over the graph, then applies a feed-forward network
:math:`\mathrm{FFN}(z) = \mathrm{Dropout}(W_2\, \mathrm{GELU}(\mathrm{Dropout}(W_1 z)))`:

- ``gcn``: :math:`M(h) = \mathrm{FFN}(\hat D^{-1/2} (A + I) \hat D^{-1/2} h)` (self loops
  added, symmetric normalization);
- ``sage``: :math:`M(h) = \mathrm{FFN}([h \,\|\, \mathrm{mean}_{j \in N(i)} h_j])`, the
  ego and neighbour states kept apart (the ``-sep`` idea);
- ``gat``: GAT's attention over the in-neighbours and the node itself,
  :math:`\alpha_{ij} = \mathrm{softmax}_j\, \mathrm{LeakyReLU}_{0.2}(a^\top W h_j + b^\top W
  h_i)` per head, :math:`M(h) = \mathrm{FFN}(\sum_j \alpha_{ij} W h_j)`;
- ``gat-sep``: the same attention over the in-neighbours only, the ego state concatenated,
  :math:`M(h) = \mathrm{FFN}([W h_i \,\|\, \sum_{j \in N(i)} \alpha_{ij} W h_j])`;
- ``gt``: a transformer's attention over the in-neighbours and the node itself, with no
  feed-forward inside, :math:`M(h) = \mathrm{Dropout}(W_o \sum_j \alpha_{ij} W_v h_j)`,
  :math:`\alpha_{ij} = \mathrm{softmax}_j (W_q h_j)^\top (W_k h_i) / \sqrt{d_h}` per head
  (the paper's code scores an edge ``j -> i`` by the sender's query and the receiver's key);
- ``gt-sep``: the same over the in-neighbours only, :math:`M(h) = \mathrm{Dropout}(W_o [h_i
  \,\|\, \sum_{j \in N(i)} \alpha_{ij} W_v h_j])`;
- ``ffn``: :math:`M(h) = \mathrm{FFN}(h)`, no graph (the paper's ResNet, and the block that
  follows each ``gt`` / ``gt-sep`` block in its GT models).

The heads of ``gat`` split the channels as the paper's code does: channel ``c`` belongs to
head ``c mod heads``; those of ``gt`` take consecutive channels.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.utils import add_remaining_self_loops, remove_self_loops, softmax

from graphpe.layers.attention import weight_dropout
from graphpe.layers.conv import propagate
from graphpe.ops.checks import check_positive_int

#: the modules a :class:`ResidualBlock` can hold
RESIDUAL_MODULES = ("gcn", "sage", "gat", "gat-sep", "gt", "gt-sep", "ffn")


def attended_edges(edge_index: Tensor, num_nodes: int, self_loops: bool) -> Tensor:
    """The in-edges an attention block attends over: ``edge_index`` without self loops, or
    with exactly one per node (``self_loops``: ``gat``, ``gt``)."""
    edges = remove_self_loops(edge_index)[0]
    return add_remaining_self_loops(edges, num_nodes=num_nodes)[0] if self_loops else edges


class FeedForward(nn.Module):
    r"""``Dropout(W_2 GELU(Dropout(W_1 z)))`` from ``input_multiplier * dim`` through
    ``hidden_multiplier * dim`` back to ``dim`` (the paper's ``FeedForwardModule``)."""

    def __init__(self, dim: int, dropout: float = 0.0, hidden_multiplier: float = 1.0,
                 input_multiplier: int = 1) -> None:
        super().__init__()
        hidden = int(dim * hidden_multiplier)
        check_positive_int("the feed-forward's hidden width", hidden)
        self.linear_1 = nn.Linear(dim * input_multiplier, hidden)
        self.linear_2 = nn.Linear(hidden, dim)
        self.dropout = dropout

    def forward(self, z: Tensor) -> Tensor:
        # (the hashed one-pass dropout on the CPU: torch's mask draws cost more than the maps)
        z = F.gelu(weight_dropout(self.linear_1(z), self.dropout, self.training))
        return weight_dropout(self.linear_2(z), self.dropout, self.training)


class ResidualBlock(nn.Module):
    """``h + M(LayerNorm(h))`` for the module ``M`` named by ``module`` (one of
    :data:`RESIDUAL_MODULES`, see the module docstring).

    Args:
        dim: the width of ``h``.
        module: one of :data:`RESIDUAL_MODULES`.
        dropout: the feed-forward's dropout (and the attention output's, ``gt``).
        hidden_multiplier: the feed-forward's hidden width over ``dim``.
        heads: attention heads of ``gat``, ``gat-sep``, ``gt``, ``gt-sep`` (must divide
            ``dim``).
    """

    def __init__(self, dim: int, module: str = "gcn", dropout: float = 0.0,
                 hidden_multiplier: float = 1.0, heads: int = 8) -> None:
        super().__init__()
        if module not in RESIDUAL_MODULES:
            raise ValueError(f"module must be one of {RESIDUAL_MODULES}, got {module!r}")
        self.module, self.heads, self.dropout = module, heads, dropout
        self.norm = nn.LayerNorm(dim)
        separate = module in ("sage", "gat-sep", "gt-sep")
        if module.startswith(("gat", "gt")):
            check_positive_int("heads", heads)
            if dim % heads:
                raise ValueError(f"heads must divide the width: {dim} channels, {heads} heads")
        if module.startswith("gt"):
            self.query, self.key, self.value = (nn.Linear(dim, dim) for _ in range(3))
            self.output_linear = nn.Linear(dim * (2 if separate else 1), dim)
            return
        self.feed_forward = FeedForward(dim, dropout, hidden_multiplier,
                                        input_multiplier=2 if separate else 1)
        if module.startswith("gat"):
            self.input_linear = nn.Linear(dim, dim)
            self.attention_source = nn.Linear(dim, heads)
            self.attention_target = nn.Linear(dim, heads, bias=False)

    @property
    def self_loops(self) -> bool | None:
        """For an attention block, whether it attends over the node itself too (its edges are
        ``attended_edges(edge_index, n, self_loops)``); None for the others."""
        if not self.module.startswith(("gat", "gt")):
            return None
        return self.module in ("gat", "gt")

    def forward(self, h: Tensor, edge_index: Tensor, attended: Tensor | None = None) -> Tensor:
        """``h + M(LayerNorm(h))``; an attention block attends over ``attended`` where given
        (:func:`attended_edges` of ``edge_index``, which a model computes once for all its
        blocks), else over the edges it derives from ``edge_index``."""
        z = self.norm(h)
        if self.self_loops is not None and attended is None:
            attended = attended_edges(edge_index, h.size(0), self.self_loops)
        if self.module.startswith("gt"):
            return h + weight_dropout(self.output_linear(self._transformer_attend(
                z, attended)), self.dropout, self.training)
        if self.module == "gcn":
            z = propagate(z, edge_index, "gcn")
        elif self.module == "sage":
            z = torch.cat([z, propagate(z, edge_index, "mean")], -1)
        elif self.module != "ffn":
            z = self._attend(z, attended)
        return h + self.feed_forward(z)

    def _transformer_attend(self, z: Tensor, attended: Tensor) -> Tensor:
        """``gt``'s attention over the in-neighbours (and the node itself for ``gt``; the ego
        state concatenated for ``gt-sep``), before the output map."""
        n, dim = z.shape
        head_dim = dim // self.heads
        src, dst = attended
        queries, keys, values = (f(z).view(n, self.heads, head_dim)
                                 for f in (self.query, self.key, self.value))
        scores = (queries[src] * keys[dst]).sum(-1) / head_dim ** 0.5  # [E, heads]
        weights = softmax(scores, dst, num_nodes=n)
        out = torch.zeros_like(values).index_add_(0, dst, values[src] * weights.unsqueeze(-1))
        out = out.view(n, dim)
        return torch.cat([z, out], -1) if self.module == "gt-sep" else out

    def _attend(self, z: Tensor, attended: Tensor) -> Tensor:
        """GAT's weighted sum over the in-neighbours (with the node itself for ``gat``; the ego
        state concatenated for ``gat-sep``)."""
        z = self.input_linear(z)
        n = z.size(0)
        src, dst = attended
        scores = F.leaky_relu(self.attention_source(z)[src] + self.attention_target(z)[dst],
                              0.2)
        weights = softmax(scores, dst, num_nodes=n)  # [E, heads], over each node's in-edges
        heads = z.view(n, -1, self.heads)  # channel c in head c mod heads
        messages = heads[src] * weights.unsqueeze(1)
        out = torch.zeros_like(heads).index_add_(0, dst, messages).view(n, -1)
        return torch.cat([z, out], -1) if self.module == "gat-sep" else out
