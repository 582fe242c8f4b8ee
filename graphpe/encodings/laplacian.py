"""Encodings from Laplacian eigenpairs: LapPE, SignNet, SPE and PEG's gates.

Each writes its own attributes (``attr_names``), so several can be used together.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from torch import nn

from graphpe.encodings.registry import GATE, Encoding, register, setting
from graphpe.nn import LapPEEncoder, SignNetEncoder, SPEEncoder
from graphpe.ops.checks import check_positive_int
from graphpe.transforms import LaplacianPE


@dataclass(frozen=True, repr=False)
class _Eigenpairs(Encoding):
    """Shared by the four: ``k`` eigenpairs of the ``normalization`` Laplacian, written to the
    declaration's ``attr_names``."""

    attr_names: ClassVar[tuple[str, str, str]]
    keep_trivial: ClassVar[bool] = False
    family = "eigen"

    k: int = setting(8, check_positive_int)
    normalization: str = setting("sym")

    def transform(self) -> LaplacianPE:
        return LaplacianPE(self.k, normalization=self.normalization,
                           keep_trivial=self.keep_trivial,
                           sign=getattr(self, "sign", "canonical"), attr_names=self.attr_names)

    @classmethod
    def upgrade(cls, settings: dict) -> dict:
        names = settings.pop("attr_names", cls.attr_names)
        if tuple(names) != cls.attr_names:
            raise ValueError(f"{cls.name} writes {cls.attr_names}, got attr_names={names!r}: "
                             "build the encoder yourself for other names")
        return settings


@register
class Lap(_Eigenpairs):
    name = "lap"
    summary = "Laplacian eigenvectors and eigenvalues through DeepSets (GraphGPS's LapPE)"
    paper = "Dwivedi et al., Benchmarking Graph Neural Networks, JMLR 2023"
    attr_names = ("lap_pe", "lap_eigvals", "lap_mask")
    demo = 1
    reference_test = ("tests/transforms/test_laplacian.py::"
                      "test_matches_pyg_eigenvalue_subspace_on_connected_graph")

    sign: str = setting("canonical")

    def encoder(self, channels: int) -> nn.Module:
        return LapPEEncoder(self.k, channels, attr_names=self.attr_names)


@register
class SignNet(_Eigenpairs):
    name = "signnet"
    summary = "Laplacian eigenvectors through SignNet (sign invariant GIN per eigenvector)"
    paper = "Lim et al., Sign and Basis Invariant Networks, ICLR 2023"
    attr_names = ("sn_pe", "sn_eigvals", "sn_mask")
    warmup_models = ("gine",)
    reference_test = "tests/nn/test_encoders.py::test_signnet_and_spe_sign_invariance"


    def encoder(self, channels: int) -> nn.Module:
        return SignNetEncoder(self.k, channels, attr_names=self.attr_names)


@register
class SPE(_Eigenpairs):
    name = "spe"
    summary = "Stable and Expressive PE: eigenvalue MLPs and a GIN over V diag(phi) V^T"
    paper = "Huang et al., On the Stability of Expressive Positional Encodings, ICLR 2024"
    attr_names = ("spe_pe", "spe_eigvals", "spe_mask")
    keep_trivial = True
    demo = 5
    warmup_models = ("gine",)
    reference_test = "tests/nn/test_encoders.py::test_spe_equals_its_dense_per_graph_formula"

    m: int = setting(8, check_positive_int)
    rho_hidden: int = setting(32, check_positive_int)
    rho_layers: int = setting(2, check_positive_int)

    def encoder(self, channels: int) -> nn.Module:
        return SPEEncoder(self.k, channels, m=self.m, rho_hidden=self.rho_hidden,
                          rho_layers=self.rho_layers, attr_names=self.attr_names)


@register
class PEG(_Eigenpairs):
    name = "peg"
    kind = GATE
    summary = "eigenvector distances gating every layer's messages (EquivStableLapPE)"
    paper = "Wang et al., Equivariant and Stable Positional Encoding, ICLR 2022"
    attr_names = ("peg_pe", "peg_eigvals", "peg_mask")
    reference_test = ("tests/nn/test_models.py::"
                      "test_peg_gates_are_invariant_to_any_orthogonal_map_of_the_eigenvectors")


    @property
    def gate_attr(self) -> str:
        """The attribute the gates read: the eigenvectors."""
        return self.attr_names[0]
