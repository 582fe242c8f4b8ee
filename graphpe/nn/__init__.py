"""``torch.nn`` modules: PE encoders, the GPS layer, GINE/GPS models and a builder.

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
    build_model,
    load_model,
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

__all__ = [
    "DegreeEncoder",
    "ElstaticSEEncoder",
    "GINE",
    "GINLayer",
    "GPS",
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
    "build_model",
    "graph_layout",
    "load_model",
    "pe_distances",
    "static_batch",
    "static_shapes",
]
