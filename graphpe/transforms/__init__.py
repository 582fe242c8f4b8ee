"""PyG transforms that add positional and structural encodings to ``Data`` and ``Batch``.

Every encoding's transform is defined in its module of :mod:`graphpe.encodings` and exported
here (a test checks that each transform of the registry is); :func:`precompute` runs any of
them over a whole dataset and :class:`OnTheFlyPE` inside a training step.
"""

from graphpe.encodings.curvature import LCP
from graphpe.encodings.cycles import CycleCounts
from graphpe.encodings.directed_walk import DirectedRWSE
from graphpe.encodings.gpse import GPSEPE
from graphpe.encodings.laplacian import LaplacianPE
from graphpe.encodings.maglap import MagneticLaplacianPE
from graphpe.encodings.pairwise import (
    RRWP,
    SPD,
    HeatKernel,
    PairwiseTransform,
    ResistanceDistance,
)
from graphpe.encodings.rfp import RFP
from graphpe.encodings.spectral import ElstaticSE, HKdiagSE
from graphpe.encodings.svd import SVDPE
from graphpe.encodings.transform import PETransform
from graphpe.encodings.walk import RWSE
from graphpe.transforms.on_the_fly import OnTheFlyPE
from graphpe.transforms.precompute import precompute

__all__ = [
    "CycleCounts",
    "DirectedRWSE",
    "ElstaticSE",
    "GPSEPE",
    "HKdiagSE",
    "HeatKernel",
    "LCP",
    "LaplacianPE",
    "MagneticLaplacianPE",
    "OnTheFlyPE",
    "PETransform",
    "PairwiseTransform",
    "RFP",
    "RRWP",
    "RWSE",
    "ResistanceDistance",
    "SPD",
    "SVDPE",
    "precompute",
]
