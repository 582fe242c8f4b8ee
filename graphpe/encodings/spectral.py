"""GraphGPS's spectral structural encodings: heat kernel diagonals and electrostatics."""

from __future__ import annotations

from torch import nn

from graphpe.encodings.registry import Encoding, register, setting
from graphpe.nn import ElstaticSEEncoder, HKdiagSEEncoder
from graphpe.transforms import ElstaticSE, HKdiagSE
from graphpe.transforms.spectral import times_option


@register
class HKdiag(Encoding):
    name = "hkdiag"
    summary = "heat kernel diagonals exp(-tL)_ii over diffusion times (GraphGPS's HKdiagSE)"
    paper = "Kreuzer et al., Rethinking Graph Transformers with Spectral Attention, NeurIPS 2021"
    family = "eigen"
    reference_test = ("tests/ops/test_spectral.py::"
                      "test_default_heat_kernels_are_graphgps_and_drop_one_over_component_size")

    times: tuple[float, ...] = setting(tuple(range(1, 17)), times_option)
    normalization: str = setting("none")
    keep_trivial: bool = setting(False)

    def transform(self) -> HKdiagSE:
        return HKdiagSE(self.times, normalization=self.normalization,
                        keep_trivial=self.keep_trivial)

    def encoder(self, channels: int) -> nn.Module:
        return HKdiagSEEncoder(len(self.times), channels)

    @classmethod
    def upgrade(cls, settings: dict) -> dict:
        if "num_times" in settings:  # the encoder's width: any times of that count
            settings["times"] = tuple(range(1, settings.pop("num_times") + 1))
        return settings


@register
class Elstatic(Encoding):
    name = "elstatic"
    summary = "electrostatic potentials from the Laplacian's pseudo-inverse (GraphGPS)"
    paper = "Rampasek et al., Recipe for a General, Powerful, Scalable Graph Transformer, 2022"
    family = "eigen"
    reference_test = "tests/ops/test_spectral.py::test_electrostatic_equals_graphgps"

    per_component: bool = setting(False)

    def transform(self) -> ElstaticSE:
        return ElstaticSE(per_component=self.per_component)

    def encoder(self, channels: int) -> nn.Module:
        return ElstaticSEEncoder(channels)
