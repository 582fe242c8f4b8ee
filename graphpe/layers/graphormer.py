r"""Graphormer's encoder layer (Ying et al., "Do Transformers Really Perform Badly for Graph
Representation?", NeurIPS 2021; ``GraphormerGraphEncoderLayer`` of microsoft/Graphormer).

A transformer layer over each graph's nodes (and its graph token) with the attention biases of
the pairs, post-norm as Graphormer's default (``pre_layernorm=False``):

.. math::
    h' &= \mathrm{LN}_1\big(h + \mathrm{Dropout}(\mathrm{Attn}(h, b))\big), \\
    \mathrm{out} &= \mathrm{LN}_2\big(h' + \mathrm{Dropout}(W_2\,
        \mathrm{Dropout_{act}}(\mathrm{GELU}(W_1 h' + c_1)) + c_2)\big),

or, with ``pre_norm=True`` (Graphormer's ``--pre-layernorm``),
:math:`h' = h + \mathrm{Dropout}(\mathrm{Attn}(\mathrm{LN}_1 h, b))` and
:math:`\mathrm{out} = h' + \mathrm{Dropout}(\mathrm{FFN}(\mathrm{LN}_2 h'))`. ``LN`` is a layer
norm of each node's features (``torch.nn.LayerNorm``, not PyG's per-graph one), the attention
is :class:`~graphpe.layers.attention.MultiheadGraphAttention` (softmax over each graph's own nodes,
dropout on its weights, the pair biases added to the logits).
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from graphpe.layers.attention import GraphLayout, MultiheadGraphAttention, check_heads
from graphpe.ops.checks import check_positive_int


def _check_dropout(name: str, value: float) -> None:
    if not 0.0 <= value < 1.0:
        raise ValueError(f"{name} must be in [0, 1), got {value!r}")


class GraphormerLayer(nn.Module):
    """One Graphormer encoder layer (module docstring).

    Args:
        channels: width.
        heads: attention heads.
        ffn_channels: hidden width of the feed-forward block (Graphormer's
            ``encoder_ffn_embed_dim``; default ``channels``, as ``graphormer_slim``).
        dropout: dropout after the attention and after the feed-forward block.
        attn_dropout: dropout on the attention weights.
        act_dropout: dropout after the feed-forward block's GELU.
        pre_norm: layer norms before each block (Graphormer's ``--pre-layernorm``) instead of
            after each residual sum.
    """

    def __init__(self, channels: int, heads: int = 8, ffn_channels: int | None = None,
                 dropout: float = 0.0, attn_dropout: float = 0.1, act_dropout: float = 0.1,
                 pre_norm: bool = False) -> None:
        super().__init__()
        check_heads(channels, heads)
        ffn_channels = check_positive_int(
            "ffn_channels", channels if ffn_channels is None else ffn_channels)
        for name, value in (("dropout", dropout), ("act_dropout", act_dropout)):
            _check_dropout(name, value)
        self.dropout, self.act_dropout, self.pre_norm = dropout, act_dropout, pre_norm
        self.attn = MultiheadGraphAttention(channels, heads, attn_dropout)
        self.attn_norm = nn.LayerNorm(channels)
        self.fc1 = nn.Linear(channels, ffn_channels)
        self.fc2 = nn.Linear(ffn_channels, channels)
        self.ffn_norm = nn.LayerNorm(channels)

    def forward(self, x: Tensor, layout: GraphLayout, pair_bias: Tensor | None = None,
                pair_index: Tensor | None = None) -> Tensor:
        """``x [N, channels]`` -> ``[N, channels]``; ``layout`` groups the rows by graph
        (:func:`~graphpe.layers.attention.graph_layout`), ``pair_bias [P, heads]`` is added to the
        logits of the pairs ``pair_index [2, P]``."""
        h = self.attn_norm(x) if self.pre_norm else x
        h = F.dropout(self.attn(h, layout, pair_bias, pair_index), self.dropout,
                      self.training)
        x = x + h if self.pre_norm else self.attn_norm(x + h)
        h = self.ffn_norm(x) if self.pre_norm else x
        h = F.dropout(F.gelu(self.fc1(h)), self.act_dropout, self.training)
        h = F.dropout(self.fc2(h), self.dropout, self.training)
        return x + h if self.pre_norm else self.ffn_norm(x + h)
