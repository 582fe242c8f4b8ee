r"""A link predictor: a node model (any of :func:`graphpe.nn.build.build_model`'s, with its node
encodings) embeds every node, and a pair decoder scores each query pair from the two
embeddings and, optionally, the pair's own features (:mod:`graphpe.ops.link_features`: its
distance, common-neighbourhood scores, PageRank, resistance):

.. math::

    s(u, v) = \mathrm{MLP}\big([\, h_u \odot h_v \;\|\; f(u, v) \,]\big)
    \quad \text{or, with the inner-product decoder,} \quad
    s(u, v) = h_u^\top h_v + w^\top f(u, v) + b

(the inner product is the graph autoencoder's decoder, Kipf & Welling 2016). The Hadamard
product makes the score symmetric in ``u`` and ``v`` and is the decoder of the
link benchmarks' GNN baselines (OGB's link examples, Li et al.'s HeaRT benchmark, NeurIPS 2023);
the pair features are what node-only embeddings provably miss (Zhang et al., "Labeling trick",
NeurIPS 2021).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from graphpe.layers.common import mlp
from graphpe.nn.build import build_model
from graphpe.ops.checks import check_choice, check_non_negative_int, check_positive_int

#: the pair decoders: an MLP of the product and the pair features, or the inner product plus a
#: linear map of the pair features
DECODERS = ("mlp", "dot")


class LinkPredictor(nn.Module):
    """Scores of node pairs: ``node_model``'s outputs (``channels`` per node) as embeddings,
    and a decoder (one of :data:`DECODERS`) of their product and the pairs' ``pair_dim``
    features (0: none).

    Args:
        node_model: maps a graph (``x``, ``edge_index`` and the node encodings' attributes)
            to ``[N, channels]``.
        channels: the width of ``node_model``'s outputs.
        pair_dim: the number of pair features the decoder reads (0: the embeddings alone).
        decoder: ``"mlp"`` (``hidden`` wide, ``decoder_layers`` linear layers, ``dropout``
            between them) or ``"dot"`` (the inner product, plus a linear map of the pair
            features where there are any).
        hidden: the MLP decoder's hidden width (default ``channels``).
        decoder_layers: the MLP decoder's linear layers (1: a linear map of the product).
        dropout: dropout between the MLP decoder's layers.
    """

    def __init__(self, node_model: nn.Module, channels: int, pair_dim: int = 0,
                 decoder: str = "mlp", hidden: int | None = None, decoder_layers: int = 2,
                 dropout: float = 0.0) -> None:
        super().__init__()
        check_positive_int("channels", channels)
        check_non_negative_int("pair_dim", pair_dim)
        check_positive_int("decoder_layers", decoder_layers)
        check_choice("decoder", decoder, DECODERS)
        hidden = channels if hidden is None else hidden
        self.node_model, self.pair_dim, self.decoder_kind = node_model, pair_dim, decoder
        self.decoder = (
            mlp([channels + pair_dim, *[hidden] * (decoder_layers - 1), 1], dropout)
            if decoder == "mlp" else nn.Linear(pair_dim, 1) if pair_dim else None)

    def embed(self, graph: Any) -> Tensor:
        """The node embeddings ``[N, channels]``."""
        return self.node_model(graph)

    def score(self, h: Tensor, pairs: Tensor, pair_features: Tensor | None = None) -> Tensor:
        """Logits ``[Q]`` of ``pairs`` ``[2, Q]`` from the embeddings ``h``."""
        product = h[pairs[0]] * h[pairs[1]]
        if self.pair_dim and (pair_features is None or pair_features.size(-1) != self.pair_dim):
            got = None if pair_features is None else pair_features.size(-1)
            raise ValueError(f"the decoder reads {self.pair_dim} pair features per pair, "
                             f"got {got}")
        if self.decoder_kind == "dot":
            score = product.sum(-1)
            if self.pair_dim:
                score = score + self.decoder(pair_features.to(product.dtype)).view(-1)
            return score
        if self.pair_dim:
            product = torch.cat([product, pair_features.to(product.dtype)], dim=-1)
        return self.decoder(product).view(-1)

    def forward(self, graph: Any, pairs: Tensor, pair_features: Tensor | None = None) -> Tensor:
        return self.score(self.embed(graph), pairs, pair_features)


def build_link_model(config: dict[str, Any], pair_dim: int = 0,
                     decoder: str = "mlp") -> LinkPredictor:
    """A :class:`LinkPredictor` (``decoder``, see :data:`DECODERS`) over
    ``build_model(config)``'s node model, which outputs ``config["channels"]`` per node
    (``out_dim`` and ``task`` are set here; its head is one linear map unless ``config``
    gives ``head_hidden``: the decoder is the predictor's MLP)."""
    channels = config["channels"]
    node_model = build_model({"head_hidden": [], **config, "out_dim": channels,
                              "task": "node_classification"})
    return LinkPredictor(node_model, channels, pair_dim, decoder)
