r"""SGFormer's layers (Wu et al., "SGFormer: Simplifying and Empowering Transformers for
Large-Graph Representations", NeurIPS 2023): its simple global attention
(:class:`SGFormerAttention`), linear in the node count, the attention branch over it
(:class:`SGFormerGlobal`) and the GCN branch beside it (:class:`SGFormerGNN`). Their
arguments, defaults and submodule names are those of PyG's ``SGFormerAttention`` and of the
``SGModule`` and ``GraphModule`` of PyG's ``SGFormer``, so PyG's weights load as they are; the
model is :class:`graphpe.nn.scalable.SGFormer`.

PyG pads a batch of several graphs to its largest (``to_dense_batch``): there the padding rows
enter every graph's key sums and every graph counts the largest graph's node count. Here each
graph's sums run over its own nodes and count them: the same for one graph and for graphs of
equal size (tested), and a graph's output does not depend on the others in its batch.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.nn import GCNConv

from graphpe.layers.linear_attention import graph_kernel_sums
from graphpe.ops.checks import check_positive_int

#: what replaces an exact zero of a query or key before it is normalized (PyG's ``epsilon``)
ZERO_REPLACEMENT = 1e-6


def _check_dropout(dropout: float) -> float:
    if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or \
            not 0.0 <= dropout < 1.0:
        raise ValueError(f"dropout must be in [0, 1), got {dropout!r}")
    return float(dropout)


class SGFormerAttention(nn.Module):
    r"""SGFormer's simple global attention (Wu et al., NeurIPS 2023, eq. 3), as PyG's
    ``SGFormerAttention``: with :math:`q_i = W_Q x_i`, :math:`k_i = W_K x_i`, :math:`v_i = W_V
    x_i` split into ``heads`` heads of ``head_channels``, every exact zero of :math:`q` and
    :math:`k` replaced by :math:`10^{-6}` and each head's vector scaled to unit norm
    (:math:`\tilde q_i = q_i / \lVert q_i \rVert`, :math:`\tilde k_j = k_j / \lVert k_j
    \rVert`), node :math:`i` of a graph :math:`G(i)` of :math:`n` nodes gets, per head,

    .. math:: o_i = \frac{\tilde q_i^\top \big(\sum_{j \in G(i)} \tilde k_j v_j^\top\big)
              + n\, v_i}{\tilde q_i^\top \sum_{j \in G(i)} \tilde k_j + n},

    and the output is the mean of :math:`o_i` over the heads: ``[N, head_channels]``.
    ``O(N d^2)`` time: no ``n x n`` scores are formed (:func:`~graphpe.layers.linear_attention.
    graph_kernel_sums`).

    Args:
        channels: width of the input.
        heads: attention heads.
        head_channels: width of each head, and of the output (None: ``channels // heads``,
            which ``heads`` must divide).
        qkv_bias: biases in the query, key and value maps.

    As the attention of :class:`~graphpe.layers.gps.GPSLayer` (with ``head_channels`` equal to
    ``channels``) it reads ``batch`` and ``num_graphs``.
    """

    #: GPSLayer's contract (:mod:`graphpe.layers.gps`)
    reads = ("batch", "num_graphs")
    updates = None
    adds_residual = False

    def __init__(self, channels: int, heads: int = 1, head_channels: int | None = 64,
                 qkv_bias: bool = False) -> None:
        super().__init__()
        check_positive_int("channels", channels)
        check_positive_int("heads", heads)
        if head_channels is None:
            if channels % heads:
                raise ValueError(f"channels={channels} must be divisible by heads={heads} "
                                 "when head_channels is None")
            head_channels = channels // heads
        check_positive_int("head_channels", head_channels)
        self.heads, self.head_channels = heads, head_channels
        inner = heads * head_channels
        self.q = nn.Linear(channels, inner, bias=qkv_bias)
        self.k = nn.Linear(channels, inner, bias=qkv_bias)
        self.v = nn.Linear(channels, inner, bias=qkv_bias)

    def reset_parameters(self) -> None:
        for lin in (self.q, self.k, self.v):
            lin.reset_parameters()

    def forward(self, x: Tensor, batch: Tensor | None = None,
                num_graphs: int | None = None) -> Tensor:
        """``x [N, channels]``, ``batch [N]`` graph ids (None: one graph), ``num_graphs`` of
        them (None: counted) -> ``[N, head_channels]``."""
        n = x.size(0)
        shape = (n, self.heads, self.head_channels)
        # the sums in float32 at least (under autocast the maps give bfloat16/float16)
        acc = torch.promote_types(x.dtype, torch.float32)
        q, k = (self._unit(lin(x).view(shape).to(acc)) for lin in (self.q, self.k))
        v = self.v(x).view(shape).to(acc)
        if batch is None:
            num_graphs, counts = 1, v.new_full((n, 1, 1), float(n))
        else:
            if num_graphs is None:
                num_graphs = int(batch.max()) + 1 if n else 0
            counts = torch.bincount(batch, minlength=num_graphs).to(acc)[batch].view(n, 1, 1)
        num, den = graph_kernel_sums(q, k, v, batch, num_graphs)
        out = (num + counts * v) / (den.unsqueeze(-1) + counts)
        return out.mean(1).to(x.dtype)

    @staticmethod
    def _unit(t: Tensor) -> Tensor:
        t = torch.where(t == 0, torch.full_like(t, ZERO_REPLACEMENT), t)
        return t / torch.linalg.vector_norm(t, dim=-1, keepdim=True)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(heads={self.heads}, head_channels={self.head_channels})"


class SGFormerGlobal(nn.Module):
    r"""SGFormer's attention branch (the ``SGModule`` of PyG's ``SGFormer``): an input layer,
    then ``num_layers`` layers of :class:`SGFormerAttention`, each averaged with its input,

    .. math::
        h^{(0)} = \mathrm{Dropout}\big(\mathrm{ReLU}(\mathrm{LN}_0(W x))\big), \qquad
        h^{(l)} = \mathrm{Dropout}\Big(\mathrm{ReLU}\Big(\mathrm{LN}_l\Big(
                  \tfrac12 \big(\mathrm{Attn}_l(h^{(l-1)}) + h^{(l-1)}\big)\Big)\Big)\Big),

    returning :math:`h^{(L)}` ``[N, hidden_channels]``. Submodules as PyG's: ``fcs`` (the input
    map), ``bns`` (the layer norms, input's first) and ``attns``.

    Args:
        in_channels: width of the input.
        hidden_channels: width of the layers (and of each attention head).
        num_layers: attention layers.
        num_heads: heads of each attention.
        dropout: dropout after every layer.
    """

    def __init__(self, in_channels: int, hidden_channels: int, num_layers: int = 2,
                 num_heads: int = 1, dropout: float = 0.5) -> None:
        super().__init__()
        check_positive_int("num_layers", num_layers)
        self.dropout = _check_dropout(dropout)
        self.fcs = nn.ModuleList([nn.Linear(in_channels, hidden_channels)])
        self.bns = nn.ModuleList(nn.LayerNorm(hidden_channels) for _ in range(num_layers + 1))
        self.attns = nn.ModuleList(
            SGFormerAttention(hidden_channels, num_heads, hidden_channels)
            for _ in range(num_layers))

    def reset_parameters(self) -> None:
        for module in (*self.fcs, *self.bns, *self.attns):
            module.reset_parameters()

    def _out(self, h: Tensor, layer: int) -> Tensor:
        h = F.relu(self.bns[layer](h))
        return F.dropout(h, self.dropout, self.training)

    def forward(self, x: Tensor, batch: Tensor | None = None,
                num_graphs: int | None = None) -> Tensor:
        """``x [N, in_channels]``, ``batch`` and ``num_graphs`` as
        :meth:`SGFormerAttention.forward` -> ``[N, hidden_channels]``."""
        h = self._out(self.fcs[0](x), 0)
        for i, attn in enumerate(self.attns):
            h = self._out((attn(h, batch, num_graphs) + h) / 2, i + 1)
        return h


class SGFormerGNN(nn.Module):
    r"""SGFormer's GNN branch (the ``GraphModule`` of PyG's ``SGFormer``): an input layer, then
    ``num_layers`` GCN layers (PyG's ``GCNConv``: self loops, symmetric normalization), each
    with a residual to the input layer's output,

    .. math::
        g^{(0)} = \mathrm{Dropout}\big(\mathrm{ReLU}(\mathrm{BN}_0(W x))\big), \qquad
        g^{(l)} = \mathrm{Dropout}\big(\mathrm{ReLU}(\mathrm{BN}_l(\mathrm{GCN}_l(g^{(l-1)})))
                  \big) + g^{(0)},

    returning :math:`g^{(L)}` ``[N, hidden_channels]``. Submodules as PyG's: ``fcs``, ``bns``
    (batch norms, input's first) and ``convs``.

    Args:
        in_channels: width of the input.
        hidden_channels: width of the layers.
        num_layers: GCN layers.
        dropout: dropout after every layer.
    """

    def __init__(self, in_channels: int, hidden_channels: int, num_layers: int = 2,
                 dropout: float = 0.5) -> None:
        super().__init__()
        check_positive_int("num_layers", num_layers)
        self.dropout = _check_dropout(dropout)
        self.fcs = nn.ModuleList([nn.Linear(in_channels, hidden_channels)])
        self.bns = nn.ModuleList(nn.BatchNorm1d(hidden_channels) for _ in range(num_layers + 1))
        self.convs = nn.ModuleList(GCNConv(hidden_channels, hidden_channels)
                                   for _ in range(num_layers))

    def reset_parameters(self) -> None:
        for module in (*self.fcs, *self.bns, *self.convs):
            module.reset_parameters()

    def _out(self, h: Tensor, layer: int) -> Tensor:
        h = F.relu(self.bns[layer](h))
        return F.dropout(h, self.dropout, self.training)

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        """``x [N, in_channels]``, ``edge_index [2, E]`` -> ``[N, hidden_channels]``."""
        first = self._out(self.fcs[0](x), 0)
        h = first
        for i, conv in enumerate(self.convs):
            h = self._out(conv(h, edge_index), i + 1) + first
        return h
