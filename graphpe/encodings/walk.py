"""Random-walk encodings of nodes: RWSE."""

from __future__ import annotations

from torch import nn

from graphpe.encodings.registry import Encoding, register, setting
from graphpe.nn import RWSEEncoder
from graphpe.ops.checks import check_positive_int
from graphpe.transforms import RWSE as RWSETransform


@register
class RWSE(Encoding):
    name = "rwse"
    summary = "random-walk landing probabilities diag((D^-1 A)^t), t = 1..walk_length"
    paper = ("Dwivedi et al., Graph Neural Networks with Learnable Structural and Positional "
             "Representations, ICLR 2022")
    family = "walk"
    demo = 2
    warmup_models = ("gps", "gine", "gatedgcn")
    reference_test = "tests/transforms/test_rwse.py::test_data_and_batch_equal_pyg"

    walk_length: int = setting(16, check_positive_int)

    def transform(self) -> RWSETransform:
        return RWSETransform(self.walk_length)

    def encoder(self, channels: int) -> nn.Module:
        return RWSEEncoder(self.walk_length, channels)
