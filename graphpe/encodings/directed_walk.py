r"""Directed random-walk structural encoding: the return probabilities of the random walk that
follows the direction of the edges.

This module holds the encoding's transform, encoder and declaration, as "Adding an encoding" in
the docs describes; its kernel is :func:`graphpe.ops.walk.directed.directed_landing_probs`.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor, nn

from graphpe.encodings.registry import Encoding, register, setting_of
from graphpe.encodings.transform import PETransform, check_attr_names, option
from graphpe.layers.encoders import LinearSEEncoder
from graphpe.ops.checks import check_choice, check_positive_int, check_size_limit
from graphpe.ops.walk.directed import DIRECTED_WALK_MAX_NODES, SINKS, directed_landing_probs


@dataclass(eq=False, repr=False)
class DirectedRWSE(PETransform):
    r"""Directed random-walk structural encoding: RWSE's return probabilities (Dwivedi et al.,
    "Graph Neural Networks with Learnable Structural and Positional Representations", ICLR
    2022) for the walk that follows the direction of ``edge_index``,
    :math:`(P^t)_{ii}` with :math:`P = D_{out}^{-1} A`, :math:`t = 1..T`, after the directional
    random-walk encodings of Geisler et al. ("Transformers Meet Directed Graphs", ICML 2023)
    (:func:`~graphpe.ops.walk.directed.directed_landing_probs`). On a graph given with both
    directions of every edge it is RWSE, except that a node without edges is a sink. Writes
    ``drwse`` ``[N, T]``.

    Args:
        walk_length: the steps ``T`` (default 16, as RWSE).
        sink: what the walker does on a node without out-edges: ``stay`` (default; it stays,
            as on a self loop), ``teleport`` (to a uniform node of its graph) or ``vanish``
            (the walk ends).
        attr_name: attribute written (``"drwse"``; None appends to ``x``).
        max_nodes: largest graph (each is computed densely).
    """

    walk_length: int = option(16, check_positive_int)
    sink: str = option("stay", lambda name, value: check_choice(name, value, SINKS))
    attr_name: str | None = option("drwse")
    max_nodes: int = option(DIRECTED_WALK_MAX_NODES, check_size_limit, key=False)

    def validate(self) -> None:
        check_attr_names({"attr_name": self.attr_name}, optional=("attr_name",))

    def compute(self, edge_index, num_nodes, ptr, edge_weight=None) -> dict[str, Tensor]:
        return {self.attr_name: directed_landing_probs(
            edge_index, num_nodes, self.walk_length, ptr=ptr, edge_weight=edge_weight,
            sink=self.sink, max_nodes=self.max_nodes)}


class DirectedRWSEEncoder(LinearSEEncoder):
    """``drwse`` ``[N, walk_length]`` -> ``[N, channels]`` (BatchNorm + Linear, as RWSE's)."""

    producer = "DirectedRWSE(walk_length={0.in_dim}) of graphpe.encodings.directed_walk"

    def __init__(self, walk_length: int, channels: int, attr_name: str = "drwse",
                 **kwargs) -> None:
        super().__init__(walk_length, channels, attr_name, **kwargs)


@register
class DRWSESpec(Encoding):
    name = "drwse"
    summary = ("directed random-walk return probabilities diag((D_out^-1 A)^t), t = "
               "1..walk_length, along the edges' direction")
    paper = "Geisler et al., Transformers Meet Directed Graphs, ICML 2023"
    family = "walk"
    reference_test = "tests/ops/walk/test_directed.py::test_equals_dense_matrix_powers"

    transform_class = DirectedRWSE
    encoder_class = DirectedRWSEEncoder

    walk_length: int = setting_of(DirectedRWSE, "walk_length")
    sink: str = setting_of(DirectedRWSE, "sink")

    def encoder(self, channels: int) -> nn.Module:
        return DirectedRWSEEncoder(self.walk_length, channels)
