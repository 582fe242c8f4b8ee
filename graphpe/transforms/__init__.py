"""PyG transforms that add positional and structural encodings to ``Data`` and ``Batch``."""

from graphpe.transforms.base import PETransform
from graphpe.transforms.laplacian import LaplacianPE
from graphpe.transforms.lcp import LCP
from graphpe.transforms.on_the_fly import OnTheFlyPE
from graphpe.transforms.pairwise import (
    RRWP,
    SPD,
    HeatKernel,
    PairwiseTransform,
    ResistanceDistance,
)
from graphpe.transforms.precompute import precompute
from graphpe.transforms.rfp import RFP
from graphpe.transforms.rwse import RWSE
from graphpe.transforms.spectral import ElstaticSE, HKdiagSE

__all__ = [
    "ElstaticSE",
    "HKdiagSE",
    "HeatKernel",
    "LCP",
    "RRWP",
    "SPD",
    "LaplacianPE",
    "OnTheFlyPE",
    "PETransform",
    "PairwiseTransform",
    "RFP",
    "RWSE",
    "ResistanceDistance",
    "precompute",
]
