"""Random-walk structural encodings."""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor

from graphpe.ops.checks import check_flag, check_positive_int, check_size_limit
from graphpe.ops.plan import execution_plan
from graphpe.ops.walk import RWSE_DENSE_MAX_NODES, random_walk_landing_probs
from graphpe.transforms.base import PETransform, check_attr_names, option


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
