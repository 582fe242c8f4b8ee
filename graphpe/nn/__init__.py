"""``torch.nn`` modules: PE encoders, the GPS layer and the GINE, GPS, GRIT, GatedGCN, GCN,
GIN and Graphormer models (built from a config by :func:`graphpe.build.build_model`).

Every encoder maps a ``Batch`` carrying the attributes of :mod:`graphpe.transforms` to
``[N, channels]``, so it can be added to the node embedding of any GNN.
"""

from graphpe.nn.attention import (
    GraphLayout,
    LinearAttention,
    MultiheadGraphAttention,
    PerformerAttention,
    graph_layout,
)
from graphpe.nn.conv import GatedGCNLayer, GINLayer, PEGGate, pe_distances
from graphpe.nn.encoders import (
    DegreeEncoder,
    ElstaticSEEncoder,
    HKdiagSEEncoder,
    LapPEEncoder,
    LCPEncoder,
    LinearSEEncoder,
    PairBiasEncoder,
    PairFeatureEncoder,
    RWSEEncoder,
    SignNetEncoder,
    SPEEncoder,
)
from graphpe.nn.gpse import GPSE
from graphpe.nn.graph_token import GraphToken
from graphpe.nn.graphormer import GraphormerLayer
from graphpe.nn.grit import GRITAttention
from graphpe.nn.models import (
    GINE,
    GPS,
    GRIT,
    GatedGCN,
    GPSLayer,
    Graphormer,
    PEGraphModel,
)
from graphpe.nn.pearl import PEARLEncoder
from graphpe.nn.rfp import LearnedRFP, RFPEncoder
from graphpe.nn.static import (
    StaticBatch,
    StaticCollate,
    StaticGPS,
    static_batch,
    static_shapes,
)


def __getattr__(name: str):
    # build_model and load_model read the encodings registry, which sits above nn (it imports
    # the transforms too); they live in graphpe.build and are reachable here by their old name
    if name in ("build_model", "load_model"):
        from graphpe import build

        return getattr(build, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "DegreeEncoder",
    "ElstaticSEEncoder",
    "GINE",
    "GINLayer",
    "GPS",
    "GPSE",
    "GPSLayer",
    "GatedGCN",
    "GatedGCNLayer",
    "GRIT",
    "GRITAttention",
    "GraphLayout",
    "GraphToken",
    "Graphormer",
    "GraphormerLayer",
    "HKdiagSEEncoder",
    "LCPEncoder",
    "LapPEEncoder",
    "LearnedRFP",
    "LinearAttention",
    "LinearSEEncoder",
    "MultiheadGraphAttention",
    "PEARLEncoder",
    "PEGGate",
    "PerformerAttention",
    "PEGraphModel",
    "PairBiasEncoder",
    "PairFeatureEncoder",
    "RFPEncoder",
    "RWSEEncoder",
    "SPEEncoder",
    "SignNetEncoder",
    "StaticBatch",
    "StaticCollate",
    "StaticGPS",
    "graph_layout",
    "pe_distances",
    "static_batch",
    "static_shapes",
]
