"""Encodings computed inside the model from the graph alone: no transform."""

from __future__ import annotations

from torch import nn

from graphpe.encodings.registry import Encoding, register, setting
from graphpe.nn import DegreeEncoder, PEARLEncoder


class _Learned(Encoding):
    family = "models"

    def transform(self) -> None:
        return None


@register
class PEARL(_Learned):
    name = "pearl"
    summary = "PEARL: a message-passing network on random or basis inputs, pooled over samples"
    paper = "Kanatsoulis et al., Learning Efficient Positional Encodings with GNNs, ICLR 2025"
    reference_test = "tests/nn/test_pearl.py::test_vectorized_equals_a_loop_over_samples"

    # lighter than the paper's ZINC setting (PEARLEncoder's own defaults), for CPU runs
    variant: str = setting("random")
    num_samples: int = setting(32)
    layers: int = setting(4)
    hidden: int = setting(32)
    pe_dim: int = setting(32)
    powers: int | None = setting(None)
    mlp_layers: int = setting(2)
    mlp_hidden: int = setting(32)
    pooling: str = setting("sum")
    max_nodes: int = setting(512)
    seed: int = setting(0)

    def encoder(self, channels: int) -> nn.Module:
        return PEARLEncoder(channels, **self.settings)


@register
class Degree(_Learned):
    name = "degree"
    summary = "Graphormer's centrality encoding: a learned vector per node degree"
    paper = ("Ying et al., Do Transformers Really Perform Bad for Graph Representation?, "
             "NeurIPS 2021")
    reference_test = ("tests/nn/test_encoders.py::"
                      "test_degree_encoder_embeds_networkx_degrees_clamped")

    max_degree: int = setting(64)
    directed: bool = setting(False)

    def encoder(self, channels: int) -> nn.Module:
        return DegreeEncoder(channels, max_degree=self.max_degree, directed=self.directed)
