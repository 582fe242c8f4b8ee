"""Random-walk structural encodings."""

from __future__ import annotations

from typing import Any

from torch import Tensor

from graphpe.ops.walk import random_walk_landing_probs
from graphpe.transforms.base import PETransform, check_attr_names, check_size_limit


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
        walk_length: number of steps ``T``.
        attr_name: attribute written.
        dense_max_nodes: larger graphs use sparse products and are never densified.
        self_loops: keep self loops as edges of the walk (PyG's behaviour); False drops them.
    """

    def __init__(
        self, walk_length: int, attr_name: str = "rwse", dense_max_nodes: int = 512,
        self_loops: bool = True,
    ) -> None:
        if isinstance(walk_length, bool) or not isinstance(walk_length, int) or walk_length < 1:
            raise ValueError(f"walk_length must be a positive int, got {walk_length!r}")
        if not isinstance(self_loops, bool):
            raise ValueError(f"self_loops must be True or False, got {self_loops!r}")
        check_attr_names({"attr_name": attr_name}, optional=("attr_name",))
        self.walk_length = walk_length
        self.attr_name = attr_name
        self.dense_max_nodes = check_size_limit("dense_max_nodes", dense_max_nodes)
        self.self_loops = self_loops

    def settings(self) -> dict[str, Any]:
        # dense and sparse products agree to rounding, but a cache must not mix their outputs
        return {"walk_length": self.walk_length, "attr_name": self.attr_name,
                "self_loops": self.self_loops, "dense_max_nodes": self.dense_max_nodes}

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
            dense_max_nodes=self.dense_max_nodes,
            self_loops=self.self_loops,
        )
        return {self.attr_name: rwse}
