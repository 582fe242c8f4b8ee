r"""SEAL (Zhang & Chen, "Link Prediction Based on Graph Neural Networks", NeurIPS 2018): a link
is scored from its two nodes' labeled enclosing subgraph
(:func:`graphpe.ops.labeling.enclosing_subgraphs`), the labeling trick's model. Trained by
:func:`graphpe.link.fit_seal` (``graphpe train --task link --model seal``).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from graphpe.layers.common import mlp
from graphpe.layers.conv import GINLayer
from graphpe.ops.checks import check_choice, check_positive_int

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
