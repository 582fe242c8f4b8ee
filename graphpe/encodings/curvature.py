"""Local Curvature Profiles."""

from __future__ import annotations

from torch import nn

from graphpe.encodings.registry import Encoding, register, setting
from graphpe.nn import LCPEncoder
from graphpe.transforms import LCP as LCPTransform


@register
class LCP(Encoding):
    name = "lcp"
    summary = "Local Curvature Profile: min/max/mean/std/median of incident edge curvatures"
    paper = ("Fesser & Weber, Effective Structural Encodings via Local Curvature Profiles, "
             "ICLR 2024")
    family = "curvature"
    demo = 4
    reference_test = ("tests/ops/curvature/test_curvature.py::"
                      "test_exact_orc_matches_graph_ricci_curvature")

    curvature: str = setting("orc")
    alpha: float = setting(0.0)

    def transform(self) -> LCPTransform:
        return LCPTransform(curvature=self.curvature, alpha=self.alpha)

    def encoder(self, channels: int) -> nn.Module:
        return LCPEncoder(len(self.transform().stats), channels)

    @classmethod
    def upgrade(cls, settings: dict) -> dict:
        settings.pop("num_stats", None)  # the profile's width: fixed by the transform
        return settings
