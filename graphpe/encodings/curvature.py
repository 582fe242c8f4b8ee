"""Local Curvature Profiles.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

from torch import Tensor, nn

from graphpe.encodings.registry import Encoding, register, setting_of
from graphpe.encodings.transform import PETransform, check_attr_names, option
from graphpe.layers.encoders import (
    LinearSEEncoder,
)
from graphpe.ops.checks import (
    check_choice,
    check_size_limit,
)
from graphpe.ops.curvature import (
    CURVATURES,
    DEFAULT_MAX_TRANSPORT_CELLS,
    PROFILE_STATS,
    local_curvature_profile,
)


def _budget(name: str, value: object) -> int | None:
    """``max_transport_cells``: an int >= 0, or None for no limit."""
    return None if value is None else check_size_limit(name, value)


@dataclass(eq=False, repr=False)
class LCP(PETransform):
    r"""Local Curvature Profile (Fesser & Weber, "Effective Structural Encodings via
    Local Curvature Profiles", ICLR 2024): each node is described by statistics of the curvature of
    its incident edges,

    .. math:: \mathrm{LCP}(v) = \big[\min, \max, \mathrm{mean}, \mathrm{std}, \mathrm{median}\big]
        \{\kappa(v, u) : u \sim v\}.

    Curvatures (of the unweighted undirected simple graph; edge weights are ignored):

    - ``orc``: exact Ollivier-Ricci curvature with laziness ``alpha`` (the paper: 0);
    - ``orc_bounds``: the midpoint of the Jost-Liu lower and triangle upper bounds on ORC,
      a cheap estimate off by at most half the bracket (no transport problems solved);
    - ``forman``: ``4 - d_x - d_y``; ``afrc``: ``4 - d_x - d_y + 3 t`` (t = triangles).

    Writes ``lcp`` ``[N, len(stats)]`` (std with ddof=0, median averaging the middle pair; zeros
    for isolated nodes), and with ``edge_attr_name`` also the per-edge curvature ``[E]`` (for
    ``orc_bounds``: ``[E, 2]``, lower and upper), aligned with ``edge_index``.

    Args:
        curvature: one of ``orc``, ``orc_bounds``, ``forman``, ``afrc``.
        alpha: laziness of the random walks of ORC, in ``[0, 1)``.
        stats: statistics, a subset of ``min, max, mean, std, median`` in any order.
        attr_name: node attribute written.
        edge_attr_name: edge attribute for the per-edge curvature, or None.
        max_transport_cells: budget of the exact ``orc``, in transport cells: the sum over
            edges ``x ~ y`` of ``|supp m_x| * |supp m_y|`` (``d_x d_y`` for ``alpha = 0``,
            ``(d_x + 1)(d_y + 1)`` otherwise; see
            :func:`graphpe.ops.curvature.orc_transport_cost`), counted before anything is
            solved. A graph past it raises
            :class:`graphpe.ops.curvature.TransportBudgetError` at once, whose message gives
            the estimate and the alternatives (``orc_bounds``, ``forman``, ``afrc``). None:
            no limit. It only refuses graphs, never changes a value, so it is not part of the
            cache key.
    """

    curvature: str = option("orc", lambda name, value: check_choice(name, value, CURVATURES))
    alpha: float = option(0.0)
    stats: tuple[str, ...] = option(PROFILE_STATS, lambda _, value: tuple(value))
    attr_name: str | None = option("lcp")
    edge_attr_name: str | None = option(None)
    max_transport_cells: int | None = option(DEFAULT_MAX_TRANSPORT_CELLS, _budget, key=False)

    def validate(self) -> None:
        alpha = self.alpha
        if (isinstance(alpha, bool) or not isinstance(alpha, numbers.Real)
                or not 0.0 <= float(alpha) < 1.0):
            raise ValueError(f"alpha must be a number in [0, 1), got {alpha!r}")
        self.alpha = float(alpha)
        if not self.stats:
            raise ValueError(f"stats must name at least one statistic of {PROFILE_STATS}")
        for s in self.stats:
            if s not in PROFILE_STATS:
                raise ValueError(f"unknown statistic {s!r}; choose from {PROFILE_STATS}")
        if self.curvature in ("forman", "afrc") and self.alpha != 0.0:
            raise ValueError(f"alpha applies to Ollivier-Ricci curvature, not "
                             f"{self.curvature!r}")
        check_attr_names({"attr_name": self.attr_name, "edge_attr_name": self.edge_attr_name},
                         optional=("attr_name", "edge_attr_name"))

    def edge_attributes(self) -> set[str]:
        return set() if self.edge_attr_name is None else {self.edge_attr_name}

    distributed_path = "LCP's node profile"

    def distributed_form(self, name: str) -> LCP:
        if self.edge_attr_name is not None:
            raise ValueError(f"{name}: the per-edge curvature (edge_attr_name) has no "
                             "distributed path; the distributed LCP writes the node profile")
        if self.attr_name is None:
            raise ValueError(f"{name}: LCP appended to x has no distributed path; name its "
                             "attribute")
        return self

    def compute_rows(self, rows, exchange) -> tuple[dict[str, Tensor], dict]:
        from graphpe.ops.distributed import distributed_lcp

        profile, stats = distributed_lcp(rows, self.curvature, self.alpha, self.stats,
                                         self.max_transport_cells, exchange.group)
        return {self.attr_name: profile.float()}, {
            "method": "curvatures of the rank's edges from its ball's rows", **stats}

    def compute(
        self,
        edge_index: Tensor,
        num_nodes: int,
        ptr: Tensor | None,
        edge_weight: Tensor | None = None,
    ) -> dict[str, Tensor]:
        profile, per_edge = local_curvature_profile(
            edge_index, num_nodes, self.curvature, self.alpha, self.stats, ptr=ptr,
            max_transport_cells=self.max_transport_cells)
        out = {self.attr_name: profile.float()}
        if self.edge_attr_name is not None:
            out[self.edge_attr_name] = per_edge.float()
        return out


class LCPEncoder(LinearSEEncoder):
    """LCP ``[N, num_stats]`` -> ``[N, channels]`` (BatchNorm + Linear). Arguments in the order
    of the other encoders: input width first, then ``channels``."""

    producer = "LCP(attr_name={0.attr_name!r})"

    def __init__(self, num_stats: int, channels: int, attr_name: str = "lcp", **kwargs):
        super().__init__(num_stats, channels, attr_name, **kwargs)


@register
class LCPSpec(Encoding):
    name = "lcp"
    summary = "Local Curvature Profile: min/max/mean/std/median of incident edge curvatures"
    paper = ("Fesser & Weber, Effective Structural Encodings via Local Curvature Profiles, "
             "ICLR 2024")
    family = "curvature"
    demo = 4
    reference_test = ("tests/ops/curvature/test_curvature.py::"
                      "test_exact_orc_matches_graph_ricci_curvature")

    transform_class = LCP
    encoder_class = LCPEncoder

    curvature: str = setting_of(LCP, "curvature")
    alpha: float = setting_of(LCP, "alpha")

    def encoder(self, channels: int) -> nn.Module:
        return LCPEncoder(len(self.transform().stats), channels)

    @classmethod
    def upgrade(cls, settings: dict) -> dict:
        settings.pop("num_stats", None)  # the profile's width: fixed by the transform
        return settings
