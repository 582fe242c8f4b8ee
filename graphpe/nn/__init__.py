"""``torch.nn`` modules: PE encoders, the GPS layer and the GINE, GPS, GRIT, GatedGCN, GCN,
GraphSAGE, GIN, Graphormer, SGFormer and Polynormer models (built from a config by
:func:`build_model`).

Every encoder maps a ``Batch`` carrying the attributes of :mod:`graphpe.transforms` to
``[N, channels]``, so it can be added to the node embedding of any GNN.
"""

from graphpe.encodings.curvature import LCPEncoder
from graphpe.encodings.cycles import CycleCountEncoder
from graphpe.encodings.directed_walk import DirectedRWSEEncoder
from graphpe.encodings.gpse import GPSEEncoder
from graphpe.encodings.laplacian import LapPEEncoder, SignNetEncoder, SPEEncoder
from graphpe.encodings.learned import DegreeEncoder, PEARLEncoder
from graphpe.encodings.maglap import MagLapEncoder, MagLapNodeEncoder
from graphpe.encodings.rfp import LearnedRFP, RFPEncoder
from graphpe.encodings.spectral import ElstaticSEEncoder, HKdiagSEEncoder
from graphpe.encodings.svd import SVDEncoder
from graphpe.encodings.walk import RWSEEncoder
from graphpe.layers.attention import GraphLayout, MultiheadGraphAttention, graph_layout
from graphpe.layers.conv import GatedGCNLayer, GINLayer, PEGGate, pe_distances
from graphpe.layers.encoders import LinearSEEncoder, PairBiasEncoder, PairFeatureEncoder
from graphpe.layers.gps import GPSLayer, GPSOutput
from graphpe.layers.gpse import GPSE
from graphpe.layers.graph_token import GraphToken
from graphpe.layers.graphormer import GraphormerLayer
from graphpe.layers.grit import GRITAttention
from graphpe.layers.linear_attention import LinearAttention, PerformerAttention
from graphpe.layers.polynormer import PolynormerAttention
from graphpe.layers.sgformer import SGFormerAttention, SGFormerGlobal, SGFormerGNN
from graphpe.nn.build import build_model, load_model
from graphpe.nn.models import GCN, GIN, GINE, SAGE, GatedGCN, PEGraphModel
from graphpe.nn.scalable import Polynormer, SGFormer
from graphpe.nn.static import (
    StaticBatch,
    StaticCollate,
    StaticGPS,
    static_batch,
    static_shapes,
)
from graphpe.nn.transformers import GPS, GRIT, Graphormer

__all__ = [
    "CycleCountEncoder",
    "DegreeEncoder",
    "DirectedRWSEEncoder",
    "ElstaticSEEncoder",
    "GCN",
    "GIN",
    "GINE",
    "GINLayer",
    "GPS",
    "GPSE",
    "GPSEEncoder",
    "GPSLayer",
    "GPSOutput",
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
    "MagLapEncoder",
    "MagLapNodeEncoder",
    "MultiheadGraphAttention",
    "PEARLEncoder",
    "PEGGate",
    "PerformerAttention",
    "PEGraphModel",
    "Polynormer",
    "PolynormerAttention",
    "PairBiasEncoder",
    "PairFeatureEncoder",
    "RFPEncoder",
    "RWSEEncoder",
    "SAGE",
    "SGFormer",
    "SGFormerAttention",
    "SGFormerGNN",
    "SGFormerGlobal",
    "SPEEncoder",
    "SVDEncoder",
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
