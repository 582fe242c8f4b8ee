r"""The pair features a link decoder reads, declared once: each a name, its columns and the
kernel that computes it for query pairs ``(u, v)`` without reading the pair's own edge.

A link model must not learn from the edge it is asked to predict. Removing every training
target at once would leave a training graph without its edges, so each feature sets aside each
pair's own edge alone: a positive training pair is then described as a held-out one is, and
a pair's features on a graph with the edge ``u - v`` equal its features on the graph without
it (``tests/ops/test_link_features.py``). The features (``PAIR_FEATURES``):

- ``spd``: the shortest-path distance in the graph without ``u - v``, capped at ``max_dist``
  (:func:`graphpe.ops.link.pair_distances`), one-hot over ``0 .. max_dist + 1`` (``max_dist +
  1``: farther, or unreachable): ``max_dist + 2`` columns.
- ``cn``: ``log(1 + CN)``, Adamic-Adar and resource allocation
  (:func:`graphpe.ops.link.pair_neighbourhood_scores`; a common neighbour of ``u`` and ``v``
  is neither of them, so none reads ``u - v``): 3 columns.
- ``ppr``: ``log(1 + n pi_u(v))`` and ``log(1 + n pi_v(u))``, the personalized PageRank both
  ways (:func:`graphpe.ops.link.pair_ppr`, forward push at its defaults) relative to the
  uniform ``1 / n``: 2 columns.
- ``resistance``: ``1 / (1 + R(u, v))`` with ``R`` the effective resistance
  (:func:`graphpe.ops.resistance.pair_resistance`, exact): ``1`` for ``u = v``, ``0`` across
  components or over a bridge that is the pair's own edge: 1 column.
- ``rrwp``: ``log(1 + n M^k[u, v])`` and ``log(1 + n M^k[v, u])`` for ``k = 1 ..``
  :data:`PAIR_WALK_STEPS`, the random walk's landing probabilities at the pair
  (:func:`graphpe.ops.pair_walk.pair_walks`, exact) relative to the uniform ``1 / n``:
  ``2 PAIR_WALK_STEPS`` columns.
- ``heat``: ``log(1 + n H_t[u, v])`` and ``log(1 + n H_t[v, u])`` for ``t`` in
  :data:`PAIR_HEAT_TIMES`, the heat kernel ``H_t = exp(-t (I - D^-1 A))`` at the pair
  (:func:`graphpe.ops.pair_walk.pair_heat`, its series to 8 powers, within 1.1e-6):
  ``2 len(PAIR_HEAT_TIMES)`` columns.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import torch
from torch import Tensor

from graphpe.ops.checks import check_positive_int
from graphpe.ops.host import HostCSR
from graphpe.ops.link import (
    check_pairs,
    pair_distances,
    pair_graph,
    pair_neighbourhood_scores,
    pair_ppr,
)
from graphpe.ops.pair_walk import pair_heat, pair_walks
from graphpe.ops.resistance import pair_resistance

#: the walk lengths of ``rrwp``, 1 .. this (balls of radius 2 around both ends)
PAIR_WALK_STEPS = 4
#: the diffusion times of ``heat``
PAIR_HEAT_TIMES = (0.5, 1.0)


class PairGraph(NamedTuple):
    """The graph the features read, in the two forms their kernels take: ``edge_index``
    ``[2, E]`` and its undirected simple CSR (:func:`graphpe.ops.link.pair_graph`, built once
    for every feature of a set)."""

    edge_index: Tensor
    csr: HostCSR
    num_nodes: int


def _spd(graph: PairGraph, pairs: Tensor, max_dist: int) -> Tensor:
    distance = pair_distances(graph.csr, graph.num_nodes, pairs, max_dist,
                              without_own_edge=True)
    return torch.nn.functional.one_hot(distance, max_dist + 2).to(torch.float32)


def _cn(graph: PairGraph, pairs: Tensor, max_dist: int) -> Tensor:
    scores = pair_neighbourhood_scores(graph.csr, graph.num_nodes, pairs)
    scores[:, 0] = torch.log1p(scores[:, 0])
    return scores.to(torch.float32)


def _ppr(graph: PairGraph, pairs: Tensor, max_dist: int) -> Tensor:
    ppr = pair_ppr(graph.csr, graph.num_nodes, pairs, without_own_edge=True)
    return torch.log1p(graph.num_nodes * ppr).to(torch.float32)


def _resistance(graph: PairGraph, pairs: Tensor, max_dist: int) -> Tensor:
    resistance = pair_resistance(graph.edge_index, graph.num_nodes, pairs,
                                 without_own_edge=True)
    return (1.0 / (1.0 + resistance)).to(torch.float32).unsqueeze(1)  # 1 / inf = 0


def _rrwp(graph: PairGraph, pairs: Tensor, max_dist: int) -> Tensor:
    walks = pair_walks(graph.csr, graph.num_nodes, pairs, PAIR_WALK_STEPS,
                       without_own_edge=True)
    return torch.log1p(graph.num_nodes * walks).to(torch.float32)


def _heat(graph: PairGraph, pairs: Tensor, max_dist: int) -> Tensor:
    heat = pair_heat(graph.csr, graph.num_nodes, pairs, PAIR_HEAT_TIMES,
                     without_own_edge=True)
    return torch.log1p(graph.num_nodes * heat).to(torch.float32)


@dataclass(frozen=True)
class PairFeature:
    """One pair feature: its name, what it is, its column count given ``max_dist``, and
    ``compute(graph, pairs, max_dist)`` (``graph`` a :class:`PairGraph`), a float32
    ``[Q, width]`` that does not read a pair's own edge."""

    name: str
    about: str
    width: Callable[[int], int]
    compute: Callable[[PairGraph, Tensor, int], Tensor]


#: every pair feature, by name (the module docstring has the maths)
PAIR_FEATURES: dict[str, PairFeature] = {feature.name: feature for feature in (
    PairFeature("spd", "shortest-path distance capped at max_dist, one-hot",
                lambda max_dist: max_dist + 2, _spd),
    PairFeature("cn", "log(1 + common neighbours), Adamic-Adar, resource allocation",
                lambda max_dist: 3, _cn),
    PairFeature("ppr", "personalized PageRank both ways, log(1 + n pi)",
                lambda max_dist: 2, _ppr),
    PairFeature("resistance", "1 / (1 + effective resistance), exact",
                lambda max_dist: 1, _resistance),
    PairFeature("rrwp", f"random-walk landing probabilities both ways, 1 .. {PAIR_WALK_STEPS} "
                "steps, log(1 + n p)", lambda max_dist: 2 * PAIR_WALK_STEPS, _rrwp),
    PairFeature("heat", f"heat kernel of the random walk both ways at t = {PAIR_HEAT_TIMES}, "
                "log(1 + n H)", lambda max_dist: 2 * len(PAIR_HEAT_TIMES), _heat),
)}
#: what a link predictor reads unless told otherwise
DEFAULT_PAIR_FEATURES = ("spd", "cn")


@dataclass(frozen=True)
class PairFeatureSet:
    """The pair features a decoder reads, in order, and the distance cap of ``spd``.

    Args:
        names: names of :data:`PAIR_FEATURES` (empty: none, the embeddings alone).
        max_dist: ``spd``'s cap in hops (a positive int).
    """

    names: tuple[str, ...] = DEFAULT_PAIR_FEATURES
    max_dist: int = 3

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", tuple(self.names))
        check_positive_int("max_dist", self.max_dist)
        for name in self.names:
            if name not in PAIR_FEATURES:
                raise ValueError(f"unknown pair feature {name!r}; known: "
                                 f"{', '.join(PAIR_FEATURES)} (or none)")
        if len(set(self.names)) != len(self.names):
            raise ValueError(f"pair features named twice: {','.join(self.names)}")

    @classmethod
    def parse(cls, text: str, max_dist: int = 3) -> PairFeatureSet:
        """``"spd,cn,ppr"`` (``"none"`` or ``""``: no pair features)."""
        names = [] if text.strip() in ("", "none") else [n.strip() for n in text.split(",")]
        return cls(tuple(names), max_dist)

    @property
    def width(self) -> int:
        """The columns of :meth:`compute`."""
        return sum(PAIR_FEATURES[name].width(self.max_dist) for name in self.names)

    def compute(self, edge_index: Tensor, num_nodes: int, pairs: Tensor) -> Tensor:
        """The float32 ``[Q, width]`` features of ``pairs`` ``[2, Q]`` on the graph
        ``edge_index``, the features side by side in :attr:`names`' order."""
        pairs = check_pairs(pairs, num_nodes)
        if not self.names:
            return torch.zeros(pairs.size(1), 0)
        graph = PairGraph(edge_index, pair_graph(edge_index, num_nodes), num_nodes)
        return torch.cat([PAIR_FEATURES[name].compute(graph, pairs, self.max_dist)
                          for name in self.names], dim=1)


def link_pair_features(edge_index: Tensor, num_nodes: int, pairs: Tensor, max_dist: int = 3,
                       features: Sequence[str] = DEFAULT_PAIR_FEATURES) -> Tensor:
    """``[Q, width]`` float32 inputs of a pair decoder: the ``features`` of ``pairs`` (by
    default the one-hot capped distance, then ``log(1 + CN)``, Adamic-Adar and resource
    allocation: ``max_dist + 5`` columns), none of which reads a pair's own edge, so a positive
    target and a negative one are described alike."""
    return PairFeatureSet(tuple(features), max_dist).compute(edge_index, num_nodes, pairs)
