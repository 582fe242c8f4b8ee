r"""Polynormer's global attention (Deng et al., "Polynormer: Polynomial-Expressive Graph
Transformer in Linear Time", ICLR 2024): :class:`PolynormerAttention`, linear in the node
count, with the arguments, defaults and submodule names of PyG's ``PolynormerAttention`` (its
weights load as they are). The model, with its local layers and its two training stages, is
:class:`graphpe.nn.scalable.Polynormer`.

PyG pads a batch of several graphs to its largest (``to_dense_batch``) and zeroes the padding
values but not the padding keys, which enter every graph's denominators. Here each graph's
sums run over its own nodes: the same for one graph and for graphs of equal size (tested),
and a graph's output does not depend on the others in its batch.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from graphpe.layers.linear_attention import graph_kernel_sums
from graphpe.ops.checks import check_number, check_positive_int

#: added to the attention's denominators (PyG's)
DENOMINATOR_EPS = 1e-6


class PolynormerAttention(nn.Module):
    r"""Polynormer's global attention layer (Deng et al., ICLR 2024, eq. 9-10), as PyG's
    ``PolynormerAttention``: with keys :math:`k_i = \sigma(W_K x_i)`, queries :math:`q_i =
    \sigma(W_Q x_i)` (:math:`= k_i` with ``qk_shared``), values :math:`v_i = W_V x_i`, each
    split into ``heads`` heads of ``head_channels`` (channel :math:`c` of a map belongs to
    head :math:`c \bmod \mathrm{heads}`, PyG's layout), node :math:`i` of a graph :math:`G(i)`
    gets, per head,

    .. math:: o_i = \frac{q_i^\top \sum_{j \in G(i)} k_j v_j^\top}
                         {q_i^\top \sum_{j \in G(i)} k_j + 10^{-6}},

    (a sigmoid kernel: no ``n x n`` scores are formed, :func:`~graphpe.layers.linear_attention.
    graph_kernel_sums`), the heads concatenated in the same layout, and then the polynomial
    gate and the output map,

    .. math:: \mathrm{out}_i = \mathrm{Dropout}\big(\mathrm{ReLU}\big(W_O\,
              (\mathrm{LN}(o_i) \odot (W_H x_i + \beta))\big)\big)
              \in \mathbb{R}^{\mathrm{heads} \cdot \mathrm{head\_channels}}.

    Args:
        channels: width of the input.
        heads: attention heads.
        head_channels: width of each head.
        beta: the constant :math:`\beta` added to the gate :math:`W_H x`.
        qkv_bias: biases in the query, key and value maps.
        qk_shared: queries are the keys (no ``q`` map).
        dropout: dropout on the output.

    As the attention of :class:`~graphpe.layers.gps.GPSLayer` (with ``heads *
    head_channels`` equal to ``channels``) it reads ``batch`` and ``num_graphs``.
    """

    #: GPSLayer's contract (:mod:`graphpe.layers.gps`)
    reads = ("batch", "num_graphs")
    updates = None
    adds_residual = False

    def __init__(self, channels: int, heads: int, head_channels: int = 64, beta: float = 0.9,
                 qkv_bias: bool = False, qk_shared: bool = True, dropout: float = 0.0) -> None:
        super().__init__()
        for name, value in (("channels", channels), ("heads", heads),
                            ("head_channels", head_channels)):
            check_positive_int(name, value)
        if not 0.0 <= check_number("dropout", dropout) < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout!r}")
        self.heads, self.head_channels = heads, head_channels
        self.beta, self.qk_shared, self.dropout = check_number("beta", beta), qk_shared, dropout
        inner = heads * head_channels
        self.h_lins = nn.Linear(channels, inner)
        self.q = None if qk_shared else nn.Linear(channels, inner, bias=qkv_bias)
        self.k = nn.Linear(channels, inner, bias=qkv_bias)
        self.v = nn.Linear(channels, inner, bias=qkv_bias)
        self.lns = nn.LayerNorm(inner)
        self.lin_out = nn.Linear(inner, inner)

    def reset_parameters(self) -> None:
        for module in (self.h_lins, self.q, self.k, self.v, self.lns, self.lin_out):
            if module is not None:
                module.reset_parameters()

    def forward(self, x: Tensor, batch: Tensor | None = None,
                num_graphs: int | None = None) -> Tensor:
        """``x [N, channels]``, ``batch [N]`` graph ids (None: one graph), ``num_graphs`` of
        them (None: counted) -> ``[N, heads * head_channels]``."""
        n = x.size(0)
        # [N, head_channels, heads] (PyG's layout) viewed as [N, heads, head_channels]; the
        # sums in float32 at least (under autocast the maps give bfloat16/float16)
        acc = torch.promote_types(x.dtype, torch.float32)

        def heads_of(t: Tensor) -> Tensor:
            return t.view(n, self.head_channels, self.heads).transpose(1, 2).to(acc)

        k = heads_of(torch.sigmoid(self.k(x)))
        q = k if self.q is None else heads_of(torch.sigmoid(self.q(x)))
        v = heads_of(self.v(x))
        if batch is not None and num_graphs is None:
            num_graphs = int(batch.max()) + 1 if n else 0
        num, den = graph_kernel_sums(q, k, v, batch, 1 if batch is None else num_graphs)
        o = (num / (den.unsqueeze(-1) + DENOMINATOR_EPS)).transpose(1, 2).reshape(n, -1)
        out = self.lns(o.to(x.dtype)) * (self.h_lins(x) + self.beta)
        return F.dropout(F.relu(self.lin_out(out)), self.dropout, self.training)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(heads={self.heads}, head_channels={self.head_channels})"
