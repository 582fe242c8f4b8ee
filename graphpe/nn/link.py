r"""A link predictor: a node model (any of :func:`graphpe.nn.build.build_model`'s, with its node
encodings) embeds every node, and a pair decoder scores each query pair from the two
embeddings and, optionally, the pair's own features (:func:`graphpe.ops.link.
link_pair_features`: its distance and common-neighbourhood scores):

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


#: labels above this share one embedding (DRNL's grow with the distances: 2 hops give <= 10)
MAX_LABEL = 50


class SEAL(nn.Module):
    r"""SEAL's link scorer (Zhang & Chen, "Link Prediction Based on Graph Neural Networks",
    NeurIPS 2018) with a GIN over each pair's labeled enclosing subgraph
    (:func:`graphpe.ops.labeling.enclosing_subgraphs`): every node starts from the embedding
    of its label (DRNL; DE's two distances embedded and summed) plus a linear map of its
    features where ``node_dim`` is given; ``num_layers`` GIN layers
    :math:`h' = \mathrm{MLP}\big((1 + \epsilon) h + \sum_{j \to i} h_j\big)`; the score
    reads the two targets and the whole subgraph, every layer's states concatenated (as PyG's
    SEAL example's readout):

    .. math:: s(u, v) = \mathrm{MLP}\big([\, h_u \odot h_v \;\|\; \textstyle\sum_x h_x \,]\big)

    Args:
        channels: the width of every layer.
        num_layers: GIN layers.
        node_dim: the node features' width (None: the labels alone).
        label_columns: 1 for DRNL, 2 for DE / DE+.
        dropout: dropout between the scoring MLP's layers.
    """

    def __init__(self, channels: int = 32, num_layers: int = 3, node_dim: int | None = None,
                 label_columns: int = 1, dropout: float = 0.5) -> None:
        from graphpe.layers.conv import GINLayer

        super().__init__()
        check_positive_int("channels", channels)
        check_positive_int("num_layers", num_layers)
        check_choice("label_columns", label_columns, (1, 2))
        self.labels = nn.Embedding(MAX_LABEL + 1, channels)
        self.node_dim, self.dropout = node_dim, dropout
        # the node features' map, applied once to the graph's nodes and gathered per subgraph
        # (a node is in many subgraphs): the labels' embedding plus it is the input layer
        self.features = nn.Linear(node_dim, channels) if node_dim else None
        self.convs = nn.ModuleList(
            GINLayer(nn.Sequential(nn.Linear(channels, channels), nn.ReLU(),
                                   nn.Linear(channels, channels)), train_eps=True,
                     edge_features=False) for _ in range(num_layers))
        width = channels * num_layers
        self.score = mlp([2 * width, width, 1], dropout)

    def forward(self, x: Tensor | None, nodes: Tensor, edge_index: Tensor, batch: Tensor,
                labels: Tensor, target_index: Tensor) -> Tensor:
        """Logits ``[P]`` of the ``P`` subgraphs: the graph's node features ``x [N, node_dim]``
        (or None), each subgraph node's id in the graph ``nodes [M]``, the batch's
        ``edge_index``, ``batch [M]``, ``labels [M]`` or ``[M, 2]``, ``target_index [2, P]``
        (the rows of each pair's ``u`` and ``v``)."""
        label = self.labels(labels.clamp(max=MAX_LABEL))
        h = label if labels.dim() == 1 else label.sum(1)
        if self.features is not None:
            if x is None or x.size(-1) != self.node_dim:
                raise ValueError(f"SEAL was built for {self.node_dim} node features, got "
                                 f"{None if x is None else x.size(-1)}")
            h = h + self.features(x.to(h.dtype))[nodes]
        states = []
        for conv in self.convs:
            h = torch.relu(conv(h, edge_index))
            states.append(h)
        h = torch.cat(states, dim=-1)
        pooled = torch.zeros(target_index.size(1), h.size(1), dtype=h.dtype,
                             device=h.device).index_add_(0, batch, h)
        pair = h[target_index[0]] * h[target_index[1]]
        return self.score(torch.cat([pair, pooled], dim=-1)).view(-1)
