r"""Substructure counts: the simple cycles of length ``3..max_length`` through every node (and,
on request, every edge), as GSN's structural features; and GPSE's graph-level cycle counts.

This module holds the encoding's transform, encoder and declaration, as "Adding an encoding" in
the docs describes; its kernels are :func:`graphpe.ops.cycles.cycle_counts` and
:func:`graphpe.ops.cycles.graph_cycle_counts`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from graphpe.encodings.registry import Encoding, register, setting_of
from graphpe.encodings.transform import PETransform, check_attr_names, option
from graphpe.layers.encoders import LinearSEEncoder
from graphpe.ops.checks import check_positive_int
from graphpe.ops.cycles import (
    CYCLES_MAX_PATHS,
    check_max_length,
    cycle_counts,
    graph_cycle_counts_of_nodes,
)
from graphpe.ops.graph import batch_from_ptr


@dataclass(eq=False, repr=False)
class CycleCounts(PETransform):
    r"""Substructure counts (Bouritsas, Frasca, Zafeiriou, Bronstein, "Improving Graph Neural
    Network Expressivity via Subgraph Isomorphism Counting", TPAMI 2022, GSN's cycle
    features): for every node, the number of simple cycles of each length
    :math:`L = 3..\text{max_length}` through it (:func:`~graphpe.ops.cycles.cycle_counts`;
    the undirected simple graph of ``edge_index``, weights not read). Writes ``cycle_counts``
    ``[N, max_length - 2]`` float32 (exact integers up to :math:`2^{24}`); with
    ``edge_attr_name`` also the counts through each edge ``[E, max_length - 2]``; with
    ``graph_attr_name`` also GPSE's graph-level target
    (:func:`~graphpe.ops.cycles.graph_cycle_counts`, lengths ``2..max_length``), written on
    every node of its graph (``[N, max_length - 1]``, so that it batches and precomputes like a
    node attribute; ``batch[graph_attr_name][batch.ptr[:-1]]`` is the ``[G, ...]`` target).

    Args:
        max_length: the longest cycle counted (default 8, as GPSE's cycle target).
        attr_name: node attribute written (``"cycle_counts"``; None appends to ``x``).
        edge_attr_name: edge attribute for the per-edge counts, or None (default).
        graph_attr_name: attribute for GPSE's graph-level counts, or None (default).
        max_paths: a graph whose enumeration extends more paths is refused.
    """

    max_length: int = option(8, check_max_length)
    attr_name: str | None = option("cycle_counts")
    edge_attr_name: str | None = option(None)
    graph_attr_name: str | None = option(None)
    max_paths: int = option(CYCLES_MAX_PATHS, check_positive_int, key=False)

    def validate(self) -> None:
        check_attr_names({"attr_name": self.attr_name, "edge_attr_name": self.edge_attr_name,
                          "graph_attr_name": self.graph_attr_name},
                         optional=("attr_name", "edge_attr_name", "graph_attr_name"))

    def edge_attributes(self) -> set[str]:
        return set() if self.edge_attr_name is None else {self.edge_attr_name}

    def compute(self, edge_index, num_nodes, ptr, edge_weight=None) -> dict[str, Tensor]:
        node, edge = cycle_counts(edge_index, num_nodes, self.max_length, ptr=ptr,
                                  edges=self.edge_attr_name is not None,
                                  max_paths=self.max_paths)
        out = {self.attr_name: node.float()}
        if edge is not None:
            out[self.edge_attr_name] = edge.float()
        if self.graph_attr_name is not None:
            per_graph = graph_cycle_counts_of_nodes(node, edge_index, num_nodes, ptr)
            graph = (torch.zeros(num_nodes, dtype=torch.long, device=node.device)
                     if ptr is None else batch_from_ptr(ptr.to(node.device), num_nodes))
            out[self.graph_attr_name] = per_graph[graph].float()
        return out


class CycleCountEncoder(LinearSEEncoder):
    """``cycle_counts`` ``[N, max_length - 2]`` -> ``[N, channels]`` (BatchNorm + Linear)."""

    producer = "CycleCounts(max_length={0.max_length}) of graphpe.encodings.cycles"

    def __init__(self, max_length: int, channels: int, attr_name: str = "cycle_counts",
                 **kwargs) -> None:
        super().__init__(check_max_length("max_length", max_length) - 2, channels, attr_name,
                         **kwargs)
        self.max_length = max_length


@register
class CyclesSpec(Encoding):
    name = "cycles"
    summary = "counts of the simple cycles of length 3..max_length through each node (GSN)"
    paper = ("Bouritsas et al., Improving Graph Neural Network Expressivity via Subgraph "
             "Isomorphism Counting, TPAMI 2022")
    # compiled with the curvature kernels (triangle counts, the map back to input edges)
    family = "curvature"
    reference_test = "tests/ops/test_cycles.py::test_node_counts_equal_networkx"

    transform_class = CycleCounts
    encoder_class = CycleCountEncoder

    max_length: int = setting_of(CycleCounts, "max_length")

    def encoder(self, channels: int) -> nn.Module:
        return CycleCountEncoder(self.max_length, channels)
