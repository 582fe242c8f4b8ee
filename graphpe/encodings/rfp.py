"""Random Feature Propagation."""

from __future__ import annotations

from torch import nn

from graphpe.encodings.registry import Encoding, register, setting
from graphpe.nn import RFPEncoder
from graphpe.nn.rfp import READOUTS
from graphpe.ops.checks import check_choice
from graphpe.transforms import RFP as RFPTransform


@register
class RFP(Encoding):
    name = "rfp"
    summary = "Random Feature Propagation: trajectories of random features under an operator"
    paper = "Eliasof et al., Graph Positional Encoding via Random Feature Propagation, ICML 2023"
    family = "propagate"
    demo = 3
    reference_test = "tests/ops/propagate/test_rfp.py::test_operators_match_dense_definitions"

    dim: int = setting(16)
    steps: int = setting(8)
    num_draws: int = setting(4)
    operator: str = setting("gcn")
    normalization: str = setting("qr")
    seed: int | None = setting(0)
    # what RFPEncoder's phi sees of each draw (gram: rotation-invariant inner products)
    readout: str = setting("gram", lambda name, value: check_choice(name, value, READOUTS))

    def transform(self) -> RFPTransform:
        return RFPTransform(dim=self.dim, steps=self.steps, num_draws=self.num_draws,
                            operator=self.operator, normalization=self.normalization,
                            seed=self.seed)

    def encoder(self, channels: int) -> nn.Module:
        return RFPEncoder(self.dim * (self.steps + 1), channels, readout=self.readout,
                          steps=self.steps)
