"""GraphGPS's spectral structural encodings: heat kernel diagonals and electrostatics.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from torch import Tensor, nn

from graphpe.encodings.registry import Encoding, register, setting_of
from graphpe.encodings.transform import PETransform, check_attr_names, option
from graphpe.layers.encoders import (
    LinearSEEncoder,
)
from graphpe.ops.checks import check_flag, check_size_limit
from graphpe.ops.spectral import (
    SPECTRAL_MAX_NODES,
    check_normalization,
    check_times,
    electrostatic_encoding,
    heat_kernel_diagonals,
)


def times_option(_: str, value: Any) -> tuple[float, ...]:
    """:func:`~graphpe.ops.spectral.check_times` as an option's check."""
    return check_times(value)


def normalization_option(_: str, value: Any) -> str:
    """:func:`~graphpe.ops.spectral.check_normalization` as an option's check."""
    return check_normalization(value)


@dataclass(eq=False, repr=False)
class HKdiagSE(PETransform):
    r"""Heat kernel diagonal structural encoding (Kreuzer et al., NeurIPS 2021; GraphGPS's
    ``HKdiagSE``, Rampasek et al., NeurIPS 2022): for every node and diffusion time :math:`t`,

    .. math:: \mathrm{hkdiag}_{i,t} = \sum_{k:\ \lambda_k > 0} e^{-t \lambda_k} (v_k)_i^2,

    over the eigenpairs of the Laplacian ``L = D - A`` of the node's graph. This is GraphGPS's
    ``get_heat_kernels_diag`` (its ``space_dim=0``): the eigenvalue-0 pairs, one per connected
    component, are left out, so the value is ``exp(-t L)_ii - 1/n_c`` in a component of
    ``n_c`` nodes (0 on an isolated node). ``keep_trivial=True`` gives the heat kernel's own
    diagonal ``exp(-t L)_ii``. Writes ``hkdiag`` ``[N, len(times)]`` (name configurable).

    Args:
        times: diffusion times (a non-empty sequence, or one number; non-negative).
        attr_name: attribute written.
        normalization: ``none`` (``D - A``, GraphGPS) or ``sym`` (``I - D^-1/2 A D^-1/2``).
        keep_trivial: keep the eigenvalue-0 pairs (the full heat kernel diagonal).
        max_nodes: largest graph (one dense ``n x n`` eigendecomposition per graph).
    """

    times: tuple[float, ...] = option(tuple(range(1, 17)), times_option)
    attr_name: str | None = option("hkdiag")
    normalization: str = option("none", normalization_option)
    keep_trivial: bool = option(False, check_flag)
    max_nodes: int = option(SPECTRAL_MAX_NODES, check_size_limit, key=False)

    def validate(self) -> None:
        check_attr_names({"attr_name": self.attr_name}, optional=("attr_name",))

    def compute(self, edge_index, num_nodes, ptr, edge_weight=None) -> dict[str, Tensor]:
        return {self.attr_name: heat_kernel_diagonals(
            edge_index, num_nodes, self.times, ptr=ptr, edge_weight=edge_weight,
            normalization=self.normalization, keep_trivial=self.keep_trivial,
            max_nodes=self.max_nodes)}


@dataclass(eq=False, repr=False)
class ElstaticSE(PETransform):
    r"""GraphGPS's electrostatic structural encoding (``ElstaticSE``, Rampasek et al., NeurIPS
    2022): from the pseudo-inverse ``L+`` of ``L = D - A`` and the potential
    :math:`E_{ij} = L^+_{ij} - L^+_{jj}`, ten statistics per node (min, max, mean, std of its
    column; min of its row; max of its column again, as GraphGPS computes it; mean and std of
    its row; the potential averaged over its neighbours, both directions). See
    :func:`graphpe.ops.spectral.electrostatic_encoding` for the exact features and where they
    differ from GraphGPS's (0 where it gives NaN). Writes ``elstatic`` ``[N, 10]``.

    Args:
        attr_name: attribute written.
        per_component: take the statistics over the node's connected component instead of the
            whole graph (GraphGPS: the whole graph; the same on connected graphs).
        max_nodes: largest graph (one dense ``n x n`` eigendecomposition per graph).
    """

    attr_name: str | None = option("elstatic")
    per_component: bool = option(False, check_flag)
    max_nodes: int = option(SPECTRAL_MAX_NODES, check_size_limit, key=False)

    def validate(self) -> None:
        check_attr_names({"attr_name": self.attr_name}, optional=("attr_name",))

    def compute(self, edge_index, num_nodes, ptr, edge_weight=None) -> dict[str, Tensor]:
        return {self.attr_name: electrostatic_encoding(
            edge_index, num_nodes, ptr=ptr, edge_weight=edge_weight,
            per_component=self.per_component, max_nodes=self.max_nodes)}


class HKdiagSEEncoder(LinearSEEncoder):
    """Heat kernel diagonals ``[N, num_times]`` -> ``[N, channels]`` (BatchNorm + Linear, as
    GraphGPS's kernel PE encoder with its default linear model)."""

    producer = "HKdiagSE(<{0.in_dim} times>, attr_name={0.attr_name!r})"

    def __init__(self, num_times: int, channels: int, attr_name: str = "hkdiag", **kwargs):
        super().__init__(num_times, channels, attr_name, **kwargs)


class ElstaticSEEncoder(LinearSEEncoder):
    """GraphGPS's electrostatic encoding ``[N, 10]`` -> ``[N, channels]`` (BatchNorm +
    Linear); the input width is fixed, so only ``channels`` is given."""

    producer = "ElstaticSE(attr_name={0.attr_name!r})"

    def __init__(self, channels: int, attr_name: str = "elstatic", **kwargs):
        super().__init__(10, channels, attr_name, **kwargs)


@register
class HKdiagSpec(Encoding):
    name = "hkdiag"
    summary = "heat kernel diagonals exp(-tL)_ii over diffusion times (GraphGPS's HKdiagSE)"
    paper = "Kreuzer et al., Rethinking Graph Transformers with Spectral Attention, NeurIPS 2021"
    family = "eigen"
    reference_test = ("tests/ops/test_spectral.py::"
                      "test_default_heat_kernels_are_graphgps_and_drop_one_over_component_size")

    transform_class = HKdiagSE
    encoder_class = HKdiagSEEncoder

    times: tuple[float, ...] = setting_of(HKdiagSE, "times")
    normalization: str = setting_of(HKdiagSE, "normalization")
    keep_trivial: bool = setting_of(HKdiagSE, "keep_trivial")

    def encoder(self, channels: int) -> nn.Module:
        return HKdiagSEEncoder(len(self.times), channels)

    @classmethod
    def upgrade(cls, settings: dict) -> dict:
        if "num_times" in settings:  # the encoder's width: any times of that count
            settings["times"] = tuple(range(1, settings.pop("num_times") + 1))
        return settings


@register
class ElstaticSpec(Encoding):
    name = "elstatic"
    summary = "electrostatic potentials from the Laplacian's pseudo-inverse (GraphGPS)"
    paper = "Rampasek et al., Recipe for a General, Powerful, Scalable Graph Transformer, 2022"
    family = "eigen"
    reference_test = "tests/ops/test_spectral.py::test_electrostatic_equals_graphgps"

    transform_class = ElstaticSE
    encoder_class = ElstaticSEEncoder

    per_component: bool = setting_of(ElstaticSE, "per_component")

    def encoder(self, channels: int) -> nn.Module:
        return ElstaticSEEncoder(channels)
