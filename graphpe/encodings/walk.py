"""Random-walk encodings of nodes: RWSE.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor, nn

from graphpe.encodings.registry import Encoding, register, setting_of
from graphpe.encodings.transform import PETransform, check_attr_names, option
from graphpe.layers.encoders import (
    LinearSEEncoder,
)
from graphpe.ops.checks import (
    check_flag,
    check_positive_int,
    check_size_limit,
)
from graphpe.ops.plan import execution_plan
from graphpe.ops.walk import (
    RWSE_DENSE_MAX_NODES,
    random_walk_landing_probs,
)


@dataclass(eq=False, repr=False)
class RWSE(PETransform):
    r"""Random-walk structural encoding (Dwivedi et al., "Graph Neural Networks with Learnable
    Structural and Positional Representations", ICLR 2022): the probability that a random walk
    started at a node is back there after :math:`t` steps,

    .. math:: \mathrm{rwse}_{i,t} = \big((D^{-1} A)^t\big)_{ii}, \qquad t = 1, \dots, T,

    on the undirected graph underlying ``edge_index`` (duplicate edges merged) with its self
    loops: a walk may stay on a self loop, which counts once in the degree. Equal to PyG's
    ``AddRandomWalkPE(walk_length)`` on undirected graphs (self loops included), computed for a
    whole batch at once. Writes ``rwse`` ``[N, walk_length]`` (name configurable); isolated
    nodes get zeros.

    Args:
        walk_length: number of steps ``T`` (default 16).
        attr_name: attribute written (``"rwse"``; None appends to ``x`` as PyG does).
        self_loops: keep self loops as edges of the walk (PyG's behaviour, the default); False
            drops them.
        dense_max_nodes: larger graphs use sparse products and are never densified (512).
    """

    walk_length: int = option(16, check_positive_int)
    attr_name: str | None = option("rwse")
    self_loops: bool = option(True, check_flag, kw_only=True)
    # dense and sparse products agree to rounding, but a cache must not mix their outputs
    dense_max_nodes: int = option(RWSE_DENSE_MAX_NODES, check_size_limit, kw_only=True)

    def validate(self) -> None:
        check_attr_names({"attr_name": self.attr_name}, optional=("attr_name",))

    def compute(
        self,
        edge_index: Tensor,
        num_nodes: int,
        ptr: Tensor | None,
        edge_weight: Tensor | None = None,
    ) -> dict[str, Tensor]:
        rwse = random_walk_landing_probs(
            edge_index,
            num_nodes,
            self.walk_length,
            ptr=ptr,
            edge_weight=edge_weight,
            self_loops=self.self_loops,
            plan=execution_plan(dense_max_nodes=self.dense_max_nodes),
        )
        return {self.attr_name: rwse}


class RWSEEncoder(LinearSEEncoder):
    """RWSE ``[N, walk_length]`` -> ``[N, channels]`` (BatchNorm + Linear, as in GraphGPS)."""

    producer = "RWSE({0.in_dim}, attr_name={0.attr_name!r})"

    def __init__(self, walk_length: int, channels: int, attr_name: str = "rwse", **kwargs):
        super().__init__(walk_length, channels, attr_name, **kwargs)


@register
class RWSESpec(Encoding):
    name = "rwse"
    summary = "random-walk landing probabilities diag((D^-1 A)^t), t = 1..walk_length"
    paper = ("Dwivedi et al., Graph Neural Networks with Learnable Structural and Positional "
             "Representations, ICLR 2022")
    family = "walk"
    demo = 2
    warmup_models = ("gps", "gine", "gatedgcn")
    reference_test = "tests/transforms/test_rwse.py::test_data_and_batch_equal_pyg"

    transform_class = RWSE
    encoder_class = RWSEEncoder

    walk_length: int = setting_of(RWSE, "walk_length")

    def encoder(self, channels: int) -> nn.Module:
        return RWSEEncoder(self.walk_length, channels)
