"""Layers and models: the GPS layer, GINE and GPS networks, and a builder from a small config."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from functools import partial
from typing import Any, NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.nn import (
    GCNConv,
    global_add_pool,
    global_max_pool,
    global_mean_pool,
)
from torch_geometric.nn.resolver import normalization_resolver

from graphpe.layers.attention import (
    MAX_BUCKETS,
    GraphLayout,
    MultiheadGraphAttention,
    check_heads,
    layout_from_batch,
)
from graphpe.layers.common import mlp
from graphpe.layers.conv import GatedGCNLayer, GINLayer, PEGGate, pe_distances
from graphpe.layers.encoders import (
    FeatureInput,
    PairBiasEncoder,
    PairFeatureEncoder,
    parameter_dtype,
)
from graphpe.layers.fused import fused_forward, may_fuse
from graphpe.layers.fused_gine import fused_gine_layer
from graphpe.layers.graph_token import GraphToken, TokenLayout
from graphpe.layers.graphormer import GraphormerLayer
from graphpe.layers.grit import GRITAttention, log_degree
from graphpe.layers.layer_maths import gine_layer, gps_layer
from graphpe.layers.linear_attention import LinearAttention, PerformerAttention
from graphpe.ops.checks import check_positive_int
from graphpe.ops.walk import pair_ids_of_edges

MPNNS = ("gine", "gin", "gatedgcn", None)
ATTENTIONS = ("multihead", "linear", "performer", "grit", None)
POOLS = {"sum": global_add_pool, "mean": global_mean_pool, "max": global_max_pool}
TASKS = ("graph_regression", "graph_classification", "node_classification")
PE_COMBINE = ("sum", "concat")


class GPSLayer(nn.Module):
    r"""One layer of GPS (Rampasek et al., "Recipe for a General, Powerful, Scalable Graph
    Transformer", NeurIPS 2022):

    .. math::
        h^M &= \mathrm{norm}_1(x + \mathrm{MPNN}(x)), \quad
        h^A = \mathrm{norm}_2(x + \mathrm{Attn}(x)), \\
        \mathrm{out} &= \mathrm{norm}_3(h + \mathrm{FFN}(h)), \quad h = h^M + h^A,

    with dropout after each branch and the attention over each graph's nodes only. The same
    maths and submodule names as PyG's ``GPSConv`` (so its weights load directly), with the
    MPNN and attention each optional and two linear-time attentions for large graphs
    (``linear``, :class:`~graphpe.layers.linear_attention.LinearAttention`; ``performer``,
    :class:`~graphpe.layers.linear_attention.PerformerAttention`, GraphGPS's Performer). The
    ``multihead`` attention runs over size buckets of the batch's graphs
    (:class:`~graphpe.layers.attention.MultiheadGraphAttention`), not one block padded to the
    largest graph; pass the batch's ``layout`` when calling several layers, so it is built once.
    The ``grit`` attention (:class:`~graphpe.layers.grit.GRITAttention`) takes its logits from pair
    features and updates them: the layer then also returns the new pair features,
    :math:`e' = \mathrm{norm}_e(e + \mathrm{Dropout}(\hat e))` (GRIT's layer when ``mpnn`` is
    None). With ``mpnn='gatedgcn'`` (:class:`~graphpe.layers.conv.GatedGCNLayer`, GraphGPS's
    ``CustomGatedGCN``) the MPNN branch is :math:`h^M = \mathrm{norm}_1(\mathrm{GatedGCN}(x))`:
    that layer has its own residual and dropout (and norms inside), as in GraphGPS's
    ``GPSLayer``; the layer also returns the edge features it updated: ``(out, edge_attr')``.

    Args:
        channels: width.
        mpnn: ``gine`` (needs ``edge_attr`` of width ``channels``), ``gatedgcn`` (the same),
            ``gin`` or None.
        attention: ``multihead``, ``linear``, ``performer``, ``grit`` or None.
        heads: attention heads.
        dropout: dropout after each branch and inside the FFN.
        attn_dropout: dropout on the attention weights (``multihead``).
        norm: ``batch_norm``, ``layer_norm`` or None (PyG's resolver names).
        update_pairs: with ``grit``, return the new pair features, with ``gatedgcn`` the new
            edge features (False for a last layer: ``(x', None)``).
    """

    def __init__(
        self,
        channels: int,
        mpnn: str | None = "gine",
        attention: str | None = "multihead",
        heads: int = 4,
        dropout: float = 0.0,
        attn_dropout: float = 0.0,
        norm: str | None = "batch_norm",
        update_pairs: bool = True,
    ) -> None:
        super().__init__()
        if mpnn not in MPNNS:
            raise ValueError(f"mpnn must be one of {MPNNS}, got {mpnn!r}")
        if attention not in ATTENTIONS:
            raise ValueError(f"attention must be one of {ATTENTIONS}, got {attention!r}")
        if mpnn is None and attention is None:
            raise ValueError("a GPS layer needs an MPNN, an attention, or both")
        check_heads(channels, heads)
        if attention == "linear" and attn_dropout:
            raise ValueError("attn_dropout drops attention weights, which attention='linear' "
                             "never forms; use dropout")
        if mpnn == "gatedgcn" and attention == "grit":
            raise ValueError("mpnn='gatedgcn' updates the edge features, attention='grit' the "
                             "pair features: one layer does not take both")
        self.channels, self.dropout, self.mpnn, self.attention = channels, dropout, mpnn, attention
        inner = nn.Sequential(nn.Linear(channels, channels), nn.ReLU(),
                              nn.Linear(channels, channels))
        if mpnn == "gatedgcn":
            self.conv = GatedGCNLayer(channels, dropout, update_edges=update_pairs)
        else:
            self.conv = GINLayer(inner) if mpnn is not None else None
        if attention == "multihead":
            self.attn = MultiheadGraphAttention(channels, heads, attn_dropout)
        elif attention == "linear":
            self.attn = LinearAttention(channels, heads)
        elif attention == "performer":  # GraphGPS's Performer: dropout on its output
            self.attn = PerformerAttention(channels, heads, dropout=attn_dropout)
        elif attention == "grit":
            self.attn = GRITAttention(channels, heads, attn_dropout,
                                      update_pairs=update_pairs)
        else:
            self.attn = None
        self.mlp = nn.Sequential(
            nn.Linear(channels, 2 * channels), nn.ReLU(), nn.Dropout(dropout),
            nn.Linear(2 * channels, channels), nn.Dropout(dropout),
        )
        # a norm per branch that exists (GPSConv builds norm1 even without its MPNN)
        self.norm1 = normalization_resolver(norm, channels) if mpnn is not None else None
        self.norm2 = normalization_resolver(norm, channels) if attention is not None else None
        self.norm3 = normalization_resolver(norm, channels)
        self.norm_pair = (normalization_resolver(norm, channels)
                          if attention == "grit" and update_pairs else None)
        # as GPSConv: norms that work per graph (PyG's LayerNorm in graph mode, GraphNorm, ...)
        # get the batch vector; without it they would normalize over the whole batch
        self.norm_with_batch = self.norm3 is not None and (
            "batch" in inspect.signature(self.norm3.forward).parameters)
        # training steps on the CPU as one autograd node where graphpe.layers.fused applies
        # (False: module by module, e.g. to inspect the submodules' outputs)
        self.fused = True

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        # state dicts that hold a norm2 for a layer without attention (never read) still
        # load
        if self.norm2 is None:
            for key in [k for k in state_dict if k.startswith(prefix + "norm2.")]:
                del state_dict[key]
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def _norm(self, norm: nn.Module | None, h: Tensor, batch: Tensor | None,
              num_graphs: int | None) -> Tensor:
        if norm is None:
            return h
        if self.norm_with_batch:
            return norm(h, batch=batch, batch_size=num_graphs if batch is not None else None)
        return norm(h)

    def forward(
        self,
        x: Tensor,
        edge_index: Tensor,
        batch: Tensor | None = None,
        edge_attr: Tensor | None = None,
        layout: GraphLayout | None = None,
        num_graphs: int | None = None,
        pair_bias: Tensor | None = None,
        pair_index: Tensor | None = None,
        edge_weight: Tensor | None = None,
        pair_attr: Tensor | None = None,
        log_deg: Tensor | None = None,
    ) -> Tensor | tuple[Tensor, Tensor]:
        """``x [N, channels]`` -> ``[N, channels]`` (``(x', edge_attr')`` with
        ``mpnn='gatedgcn'``). ``batch`` maps nodes to graphs (None: one
        graph); ``layout`` is :func:`~graphpe.layers.attention.graph_layout` of the batch (built
        here when not given); ``num_graphs`` spares per-graph norms a ``batch.max()``;
        ``pair_bias [P, heads]`` is added to the attention logits of the pairs ``pair_index``
        (``multihead`` attention only); ``edge_weight [E, 1]`` scales the MPNN's messages
        (PEG gates). With ``attention='grit'``: ``pair_attr [P, channels]`` are the features
        of the pairs ``pair_index``, ``log_deg [N, 1]`` feeds the degree scaler (computed from
        ``edge_index`` when None), and the result is ``(x', pair_attr')``."""
        if self.attention == "grit" and (pair_attr is None or pair_index is None):
            raise ValueError("attention='grit' needs pair_attr [P, channels] and pair_index "
                             "[2, P] (e.g. from PairFeatureEncoder over RRWP)")
        if layout is None and self.attention == "multihead":
            layout = layout_from_batch(batch, x.size(0))
        if may_fuse(self, x, edge_attr, pair_bias, edge_weight):
            # under torch.compile the fused layer runs eagerly (a graph break): its compiled
            # kernels are opaque to the tracer and beat the traced module path on the CPU
            fused = _fused_eager if torch.compiler.is_compiling() else fused_forward
            out = fused(self, x, edge_index, edge_attr, layout, pair_bias, edge_weight,
                        pair_index)
            if out is not None:
                return out
        if self.attention in ("linear", "performer"):
            if pair_bias is not None:
                raise ValueError("pair biases need attention='multihead'")
            if batch is None:
                batch, num_graphs = x.new_zeros(x.size(0), dtype=torch.long), 1
            if num_graphs is None:
                num_graphs = int(batch.max()) + 1 if batch.numel() else 0
        side = {}  # what a branch updates besides the nodes: GatedGCN's edges, GRIT's pairs

        def dropout(h: Tensor) -> Tensor:
            return F.dropout(h, p=self.dropout, training=self.training) if self.dropout else h

        def mpnn(x: Tensor) -> Tensor:
            if self.mpnn == "gatedgcn":  # residual and dropout inside (CustomGatedGCN)
                h, side["edges"] = self.conv(x, edge_index, edge_attr, edge_weight)
                return h
            if self.mpnn == "gine" and edge_attr is None:
                raise ValueError("mpnn='gine' needs edge_attr of width channels")
            edges = edge_attr if self.mpnn == "gine" else None
            return dropout(self.conv(x, edge_index, edges, edge_weight))

        def attention(x: Tensor) -> Tensor:
            if self.attention == "grit":
                return dropout(self._grit(x, edge_index, batch, num_graphs, pair_bias,
                                          pair_attr, pair_index, log_deg, side))
            if self.attention == "multihead":
                return dropout(self.attn(x, layout, pair_bias, pair_index))
            return dropout(self.attn(x, batch, num_graphs))

        def add_norm(i: int, h: Tensor, residual: Tensor | None,
                     plus: Tensor | None) -> Tensor:
            norm = (self.norm1, self.norm2, self.norm3)[i - 1]
            out = self._norm(norm, h if residual is None else h + residual, batch, num_graphs)
            return out if plus is None else out + plus

        out = gps_layer(x, mpnn if self.conv is not None else None,
                        attention if self.attn is not None else None, self.mlp, add_norm,
                        mpnn_residual=self.mpnn != "gatedgcn")
        if self.mpnn == "gatedgcn":
            return out, side.get("edges")
        return (out, side.get("pairs")) if self.attention == "grit" else out

    def _grit(self, x: Tensor, edge_index: Tensor, batch: Tensor | None,
              num_graphs: int | None, pair_bias: Tensor | None, pair_attr: Tensor,
              pair_index: Tensor, log_deg: Tensor | None, side: dict) -> Tensor:
        """GRIT's attention branch; its new pair features
        :math:`\\mathrm{norm}_e(e + \\mathrm{Dropout}(\\hat e))` go to ``side['pairs']``."""
        if pair_bias is not None:
            raise ValueError("pair biases need attention='multihead'; the grit "
                             "attention takes pair features (pair_attr)")
        if log_deg is None:
            log_deg = log_degree(edge_index, x.size(0), x.dtype)
        h, pairs = self.attn(x, pair_attr, pair_index, log_deg)
        if pairs is not None:
            if self.dropout > 0.0:
                pairs = F.dropout(pairs, p=self.dropout, training=self.training)
            pair_graph = batch.index_select(0, pair_index[0]) if (
                self.norm_with_batch and batch is not None) else None
            side["pairs"] = self._norm(self.norm_pair, pairs + pair_attr, pair_graph,
                                       num_graphs)
        return h


class PEGraphModel(nn.Module):
    """Shared body of :class:`GINE` and :class:`GPS`: input embeddings, PE encoders combined
    with the node embedding, a stack of layers, a head.

    Args:
        channels: width.
        num_layers: layers.
        out_dim: outputs (classes, or regression targets).
        task: ``graph_regression``, ``graph_classification`` or ``node_classification``.
        node_vocab / node_dim: categorical node features (vocabulary size, or one per column)
            or continuous ones (width).
        edge_vocab / edge_dim: the same for edges (None for neither: no edge features).
        pe_encoders: encoders, each ``batch -> [N, pe_channels]``.
        pe_combine: ``sum`` (each encoder's output must have ``channels``) or ``concat``
            (node embedding and encoders concatenated, then projected to ``channels``).
        reinject_pe: add a per-layer projection of the PE embedding before every layer.
        pool: ``sum``, ``mean`` or ``max`` over the nodes for graph-level tasks, or
            ``token``: the final state of Graphormer's graph token (:class:`GPS` with
            ``graph_token=True``).
        dropout: dropout in layers and head.
    """

    #: whether the model can carry Graphormer's graph token (``pool='token'`` reads it)
    takes_graph_token = False

    def __init__(
        self,
        channels: int,
        num_layers: int,
        out_dim: int,
        task: str = "graph_regression",
        node_vocab: int | Sequence[int] | None = None,
        node_dim: int | None = None,
        edge_vocab: int | Sequence[int] | None = None,
        edge_dim: int | None = None,
        pe_encoders: Sequence[nn.Module] = (),
        pe_combine: str = "sum",
        reinject_pe: bool = False,
        pool: str = "sum",
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        if task not in TASKS:
            raise ValueError(f"task must be one of {TASKS}, got {task!r}")
        if pool not in POOLS and pool != "token":
            raise ValueError(f"pool must be one of {(*POOLS, 'token')}, got {pool!r}")
        if pool == "token" and not self.takes_graph_token:
            raise ValueError(f"pool='token' reads Graphormer's graph token, which "
                             f"{type(self).__name__} has not (model='gps' with "
                             f"graph_token=True)")
        if pe_combine not in PE_COMBINE:
            raise ValueError(f"pe_combine must be one of {PE_COMBINE}, got {pe_combine!r}")
        for name, value in (("channels", channels), ("num_layers", num_layers),
                            ("out_dim", out_dim)):
            check_positive_int(name, value)
        if reinject_pe and not pe_encoders:
            raise ValueError("reinject_pe needs at least one PE encoder")
        self.channels, self.task, self.pool, self.pe_combine = channels, task, pool, pe_combine
        self.node_input = FeatureInput(node_vocab, node_dim, channels, "node")
        self.edge_input = None
        if edge_vocab is not None or edge_dim is not None:
            self.edge_input = FeatureInput(edge_vocab, edge_dim, channels, "edge")
        self.pe_encoders = nn.ModuleList(pe_encoders)
        pe_width = sum(getattr(e, "channels", channels) for e in pe_encoders)
        if pe_combine == "sum":
            for e in pe_encoders:
                if getattr(e, "channels", channels) != channels:
                    raise ValueError(
                        f"pe_combine='sum' needs encoders with {channels} channels; "
                        f"{type(e).__name__} has {e.channels}"
                    )
            self.combine = None
        else:
            self.combine = nn.Linear(channels + pe_width, channels)
        self.reinject = nn.ModuleList(
            nn.Linear(pe_width if pe_combine == "concat" else channels, channels)
            for _ in range(num_layers)
        ) if reinject_pe else None
        self.dropout = dropout
        self.head = mlp([channels, channels, out_dim], dropout)

    def layers_forward(self, h: Tensor, batch, edge_attr: Tensor | None,
                       pe: Tensor | None) -> Tensor:
        raise NotImplementedError

    def reinjected(self, h: Tensor, pe: Tensor | None, layer: int,
                   node_rows: Tensor | None = None) -> Tensor:
        """``h`` plus layer ``layer``'s projection of the PE embedding ``pe`` (``reinject_pe``;
        ``h`` itself without it), added onto ``node_rows`` only where given (the rows of the
        real nodes when graph tokens, which carry no PE, are interleaved)."""
        if self.reinject is None:
            return h
        add = self.reinject[layer](pe)
        return h + add if node_rows is None else h.index_add(0, node_rows, add)

    def _build_peg(self, peg_attr: str | None, num_layers: int) -> None:
        """One :class:`~graphpe.layers.conv.PEGGate` per layer, reading the eigenvectors
        ``batch[peg_attr]`` (None: no gates)."""
        self.peg_attr = peg_attr
        self.peg_gates = (nn.ModuleList(PEGGate(self.channels) for _ in range(num_layers))
                          if peg_attr is not None else None)

    def _build_edge_start(self, needed: bool) -> None:
        """``edge_start``: for layers that update edge features (GatedGCN) in a model without
        edge features, the one learned vector every edge starts from (as benchmarking-gnns'
        GatedGCN with ``edge_feat=False``); None otherwise."""
        self.edge_start = (nn.Parameter(torch.zeros(self.channels))
                           if needed and self.edge_input is None else None)

    def _edge_states(self, batch, edge_attr: Tensor | None) -> Tensor | None:
        """The edge features the layers start from: the embedded ones, or ``edge_start`` on
        every edge."""
        if self.edge_start is None:
            return edge_attr
        return self.edge_start.expand(batch.edge_index.size(1), -1)

    def _peg_distances(self, batch) -> Tensor | None:
        if self.peg_gates is None:
            return None
        pe = batch.get(self.peg_attr)
        if pe is None:
            raise ValueError(f"PEG gates read batch.{self.peg_attr} (the eigenvectors of "
                             f"LaplacianPE(attr_names=({self.peg_attr!r}, ...)))")
        return pe_distances(pe.to(parameter_dtype(self.peg_gates)), batch.edge_index)

    def encode_pe(self, batch) -> Tensor | None:
        if not self.pe_encoders:
            return None
        outs = [enc(batch) for enc in self.pe_encoders]
        return torch.cat(outs, -1) if self.pe_combine == "concat" else sum(outs)

    def forward(self, batch) -> Tensor:
        if batch.get("x") is None:
            raise ValueError("the model needs node features batch.x")
        h = self.node_input(batch.x)
        pe = self.encode_pe(batch)
        if pe is not None:
            h = self.combine(torch.cat([h, pe], -1)) if self.combine is not None else h + pe
        edge_attr = None
        if self.edge_input is not None:
            if batch.get("edge_attr") is None:
                raise ValueError("the model was built with edge features but batch.edge_attr "
                                 "is missing")
            edge_attr = self.edge_input(batch.edge_attr)
        h = self.layers_forward(h, batch, edge_attr, pe)
        tokens = None
        if isinstance(h, tuple):  # GPS with graph tokens: (the nodes, one token per graph)
            h, tokens = h
        if self.task == "node_classification":
            return self.head(h)
        if self.pool == "token":
            return self.head(tokens)
        graph, num_graphs = batch.get("batch"), None
        if graph is None:
            graph, num_graphs = h.new_zeros(h.size(0), dtype=torch.long), 1
        elif batch.get("ptr") is not None:  # a Batch knows its graph count: no graph.max() sync
            num_graphs = batch.ptr.numel() - 1
        return self.head(POOLS[self.pool](h, graph, size=num_graphs))


class GINE(PEGraphModel):
    """A GINE network (Hu et al., 2020; GIN when there are no edge features): layers
    ``h = h + ReLU(BN(GINE(h)))``, then pooling and an MLP head. ``peg_attr`` names the
    eigenvectors whose distances gate every layer's messages (:class:`~graphpe.layers.conv.
    PEGGate`, PEG / EquivStableLapPE; None: no gates). See :class:`PEGraphModel` for the
    other arguments."""

    def __init__(self, channels: int, num_layers: int, out_dim: int,
                 peg_attr: str | None = None, **kwargs: Any) -> None:
        super().__init__(channels, num_layers, out_dim, **kwargs)

        def conv():
            inner = nn.Sequential(nn.Linear(channels, channels), nn.BatchNorm1d(channels),
                                  nn.ReLU(), nn.Linear(channels, channels))
            return GINLayer(inner, train_eps=True)  # PyG GINEConv/GINConv's maths and state

        self.convs = nn.ModuleList(conv() for _ in range(num_layers))
        self.norms = nn.ModuleList(nn.BatchNorm1d(channels) for _ in range(num_layers))
        self._build_peg(peg_attr, num_layers)
        # each layer as one autograd node on the CPU where it applies (graphpe.layers.fused_gine;
        # False: module by module)
        self.fused = True

    def layers_forward(self, h, batch, edge_attr, pe):
        distances = self._peg_distances(batch)
        cache: dict = {}  # the checked edges, shared by the fused layers
        for i, (conv, norm) in enumerate(zip(self.convs, self.norms, strict=True)):
            h = self.reinjected(h, pe, i)
            gate = self.peg_gates[i](distances) if distances is not None else None
            if self.fused and gate is None and not torch.compiler.is_compiling():
                out = fused_gine_layer(conv, norm, h, batch.edge_index, edge_attr,
                                       self.dropout, self.training, cache)
                if out is not None:
                    h = out
                    continue
            h = gine_layer(h, partial(conv, edge_index=batch.edge_index, edge_attr=edge_attr,
                                      edge_weight=gate), norm, self._relu_add)
        return h

    def _relu_add(self, v: Tensor, x: Tensor) -> Tensor:
        return x + F.dropout(F.relu(v), self.dropout, self.training)


class GatedGCN(PEGraphModel):
    """A GatedGCN network (Bresson & Laurent, 2017; with the edge-feature layers of
    benchmarking-gnns, Dwivedi et al., JMLR 2023): after the input embeddings,
    ``num_layers`` :class:`~graphpe.layers.conv.GatedGCNLayer` (residual gated convolutions that
    update the node and the edge features), then pooling (``pool``; benchmarking-gnns reads
    out the mean) and the MLP head of :class:`PEGraphModel`.
    Without edge features every edge starts from one learned vector. ``peg_attr`` names the
    eigenvectors whose distances gate every layer's messages (:class:`~graphpe.layers.conv.
    PEGGate`; GraphGPS's GatedGCN with ``equivstable_pe``). See :class:`PEGraphModel` for the
    other arguments."""

    def __init__(self, channels: int, num_layers: int, out_dim: int,
                 peg_attr: str | None = None, **kwargs: Any) -> None:
        super().__init__(channels, num_layers, out_dim, **kwargs)
        # the last layer's edge features would not be read: it does not compute them
        self.convs = nn.ModuleList(GatedGCNLayer(channels, self.dropout,
                                                 update_edges=i < num_layers - 1)
                                   for i in range(num_layers))
        self._build_edge_start(True)
        self._build_peg(peg_attr, num_layers)

    def layers_forward(self, h, batch, edge_attr, pe):
        distances = self._peg_distances(batch)
        edge_attr = self._edge_states(batch, edge_attr)
        for i, conv in enumerate(self.convs):
            h = self.reinjected(h, pe, i)
            gate = self.peg_gates[i](distances) if distances is not None else None
            h, edge_attr = conv(h, batch.edge_index, edge_attr, gate)
        return h


@torch.compiler.disable
def _fused_eager(*args) -> Tensor | None:
    return fused_forward(*args)


@torch.compiler.disable
def _layout(graph: Tensor | None, num_nodes: int, ptr: Tensor | None,
            max_buckets: int) -> GraphLayout:
    # host code (numpy over the graph sizes): outside any torch.compile'd region
    return layout_from_batch(graph, num_nodes, ptr=ptr, max_buckets=max_buckets)


class _AttentionInputs(NamedTuple):
    """What the layers of an attention model read besides the node states (after any graph
    tokens are inserted)."""

    h: Tensor
    graph: Tensor | None  # [N] graph of every row (None: one graph)
    num_graphs: int | None
    edge_index: Tensor
    pair_bias: Tensor | None  # [P, heads]
    pair_index: Tensor | None  # [2, P]
    tokens: TokenLayout | None
    layout: GraphLayout | None


def _attention_inputs(h: Tensor, batch, pair_encoder: nn.Module | None,
                      graph_token: GraphToken | None,
                      buckets: int | None) -> _AttentionInputs:
    """The pair biases of ``pair_encoder`` (one per pair and head, shared by the layers), the
    graph tokens inserted in front of each graph (rows, edges and pairs renumbered), and, when
    ``buckets`` is given, the attention's layout of the rows, built once for all layers."""
    graph, ptr, edge_index = batch.get("batch"), batch.get("ptr"), batch.edge_index
    pair_bias = pair_index = tokens = layout = None
    if pair_encoder is not None:
        pair_bias, pair_index = pair_encoder(batch)
    if graph_token is not None:
        h, tokens = graph_token(h, edge_index, graph, ptr, pair_bias, pair_index)
        graph, ptr, edge_index = tokens.graph, tokens.ptr, tokens.edge_index
        pair_bias, pair_index = tokens.pair_bias, tokens.pair_index
    if buckets is not None:
        layout = _layout(graph, h.size(0), ptr, buckets)
    num_graphs = ptr.numel() - 1 if ptr is not None else None
    return _AttentionInputs(h, graph, num_graphs, edge_index, pair_bias, pair_index, tokens,
                            layout)


class GPS(PEGraphModel):
    """A GPS network: :class:`GPSLayer` stack, then pooling and an MLP head. Extra arguments:
    ``mpnn`` (default ``gine`` with edge features, else ``gin``; ``gatedgcn`` for GraphGPS's
    GatedGCN, which updates the edge features layer by layer), ``attention``, ``heads``,
    ``attn_dropout``, ``norm``, ``attention_buckets`` (the most size buckets the ``multihead``
    attention pads the batch's graphs into, built once per forward; 1 pads every graph to the
    largest, as PyG's ``GPSConv``), ``pair_encoder`` (``multihead`` attention: e.g.
    :class:`PairBiasEncoder`, an attention bias per node pair and head, shared by the layers;
    ``grit`` attention: a :class:`PairFeatureEncoder`, whose pair features the layers update,
    with the edge embeddings added on the pairs that are edges, and whose diagonal node
    encoding is added to the node embedding), ``graph_token`` (``multihead`` attention: add
    Graphormer's graph token to every graph, :class:`~graphpe.layers.graph_token.GraphToken`; with
    ``pool='token'`` its final state is the graph's representation, else it only relays
    attention and the nodes are pooled); the rest as :class:`PEGraphModel`."""

    takes_graph_token = True

    def __init__(
        self,
        channels: int,
        num_layers: int,
        out_dim: int,
        mpnn: str | None = "auto",
        attention: str | None = "multihead",
        heads: int = 4,
        attn_dropout: float = 0.0,
        norm: str | None = "batch_norm",
        attention_buckets: int = MAX_BUCKETS,
        pair_encoder: nn.Module | None = None,
        peg_attr: str | None = None,
        graph_token: bool = False,
        **kwargs: Any,
    ) -> None:
        has_edges = kwargs.get("edge_vocab") is not None or kwargs.get("edge_dim") is not None
        if mpnn == "auto":
            mpnn = "gine" if has_edges else "gin"
        if mpnn in ("gin", None) and attention != "grit":
            # no layer reads edge features (GIN and the attentions other than GRIT's): no
            # edge embedding that would get no gradient, as GIN and GCN (a pair encoder with
            # Graphormer's path edges reads the raw ones itself)
            kwargs.update(edge_vocab=None, edge_dim=None)
        super().__init__(channels, num_layers, out_dim, **kwargs)
        if graph_token and attention != "multihead":
            raise ValueError(f"graph_token needs attention='multihead' (its pairs carry a "
                             f"learned attention bias), got attention={attention!r}")
        if self.pool == "token" and not graph_token:
            raise ValueError("pool='token' reads the graph token: it needs graph_token=True")
        if attention == "grit":
            if not isinstance(pair_encoder, PairFeatureEncoder) or \
                    pair_encoder.channels != channels:
                raise ValueError(f"attention='grit' needs a PairFeatureEncoder with {channels} "
                                 "channels as pair_encoder (e.g. pair={'rrwp': {}} in "
                                 "build_model)")
        elif pair_encoder is not None and attention != "multihead":
            raise ValueError("a pair_encoder (attention bias) needs attention='multihead'")
        elif isinstance(pair_encoder, PairFeatureEncoder):
            raise ValueError("a PairFeatureEncoder feeds attention='grit'; the multihead "
                             "attention takes a bias (PairBiasEncoder)")
        self.pair_encoder = pair_encoder
        check_positive_int("attention_buckets", attention_buckets)
        self.attention, self.attention_buckets = attention, attention_buckets
        if mpnn == "gine" and self.edge_input is None:
            raise ValueError("mpnn='gine' needs edge features (edge_vocab or edge_dim)")
        self.mpnn = mpnn
        self._build_edge_start(mpnn == "gatedgcn")
        # the last layer's pair features would not be read: it does not compute them
        self.layers = nn.ModuleList(
            GPSLayer(channels, mpnn, attention, heads, self.dropout, attn_dropout, norm,
                     update_pairs=i < num_layers - 1)
            for i in range(num_layers)
        )
        if peg_attr is not None and mpnn is None:
            raise ValueError("peg_attr gates the MPNN's messages: it needs an mpnn")
        self._build_peg(peg_attr, num_layers)
        self.graph_token = GraphToken(channels, heads) if graph_token else None

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        # state dicts that hold an edge embedding no layer reads (mpnn gin or None) still
        # load
        if self.edge_input is None:
            for key in [k for k in state_dict if k.startswith(prefix + "edge_input.")]:
                del state_dict[key]
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def layers_forward(self, h, batch, edge_attr, pe):
        grit = self.attention == "grit"
        h, graph, num_graphs, edge_index, pair_bias, pair_index, tokens, layout = \
            _attention_inputs(h, batch, None if grit else self.pair_encoder, self.graph_token,
                              self.attention_buckets if self.attention == "multihead" else None)
        pair_attr = log_deg = None
        if grit:  # pair features, updated by every layer
            node, pair_attr, pair_index = self.pair_encoder(batch)
            if node is not None:
                h = h + node
            if edge_attr is not None:
                edge_pairs = pair_ids_of_edges(pair_index, batch.edge_index, h.size(0))
                # (under autocast the pair features are bfloat16/float16: sum in the wider)
                acc = torch.promote_types(pair_attr.dtype, edge_attr.dtype)
                pair_attr = pair_attr.to(acc).index_add(0, edge_pairs, edge_attr.to(acc))
            log_deg = log_degree(batch.edge_index, h.size(0), h.dtype)
        distances = self._peg_distances(batch)
        edge_attr = self._edge_states(batch, edge_attr)
        for i, layer in enumerate(self.layers):
            h = self.reinjected(h, pe, i, None if tokens is None else tokens.node_rows)
            gate = self.peg_gates[i](distances) if distances is not None else None
            out = layer(h, edge_index, graph, edge_attr, layout, num_graphs, pair_bias,
                        pair_index, gate, pair_attr, log_deg)
            if self.mpnn == "gatedgcn":  # the edge features, updated by every layer
                h, edge_attr = out
            elif self.attention == "grit":
                h, pair_attr = out
            else:
                h = out
        if tokens is not None:
            return h[tokens.node_rows], h[tokens.token_rows]
        return h


class GRIT(GPS):
    """GRIT (Ma et al., "Graph Inductive Biases in Transformers without Message Passing", ICML
    2023): :class:`GPS` with ``attention='grit'`` and no MPNN by default, so each layer is
    GRIT's: attention over pair features that it updates (RRWP in the paper, given as
    ``pair_encoder``, a :class:`PairFeatureEncoder`), the degree scaler, residuals, norms and
    the FFN. ``mpnn='gine'`` adds GPS's message passing beside it. Arguments as :class:`GPS`."""

    def __init__(self, channels: int, num_layers: int, out_dim: int, mpnn: str | None = None,
                 attention: str | None = "grit", **kwargs: Any) -> None:
        if attention != "grit":
            raise ValueError(f"GRIT's attention is 'grit', got {attention!r}")
        super().__init__(channels, num_layers, out_dim, mpnn=mpnn, attention=attention,
                         **kwargs)


class Graphormer(PEGraphModel):
    r"""Graphormer (Ying et al., "Do Transformers Really Perform Badly for Graph
    Representation?", NeurIPS 2021): a transformer over each graph's nodes and its graph token.

    - Input: the node embedding plus the encoders of ``pe`` (Graphormer's centrality encoding
      is ``{"degree": {}}``, :class:`DegreeEncoder`), the graph token inserted in front of each
      graph (:class:`~graphpe.layers.graph_token.GraphToken`), a layer norm of every row
      (Graphormer's ``encoder_normalize_before``) and dropout.
    - Layers: :class:`~graphpe.layers.graphormer.GraphormerLayer`, attention over each graph's rows
      with the pair biases of ``pair_encoder`` (the spatial encoding: a
      :class:`PairBiasEncoder` of SPD, ``pair={"spd": {...}}`` in :func:`build_model`; with
      ``path_hops``, the edge encoding too) and the token's virtual-distance bias.
    - Readout: the token's final state (``pool='token'``; or ``sum``/``mean``/``max`` over the
      nodes), then Graphormer's head ``Linear -> GELU -> LayerNorm -> Linear``.
    - ``graphormer_init``: Graphormer's initialization (``apply_graphormer_init``) of the
      encoder (every linear map and embedding ``N(0, 0.02^2)``, biases 0; the head keeps
      torch's).

    ``graphormer_slim`` (its ZINC model) is ``Graphormer(80, 12, 1, heads=8,
    attn_dropout=0.1, act_dropout=0.1, dropout=0.0)`` (``ffn_channels`` = ``channels``).
    No layer reads edge features: they enter through the pair encoder's path edges only.

    Args:
        channels, num_layers, out_dim: width, layers, outputs.
        heads: attention heads.
        ffn_channels: hidden width of each layer's feed-forward block (default ``channels``).
        attn_dropout, act_dropout: dropout on the attention weights and after the GELU.
        pre_norm: pre-norm layers (Graphormer's ``--pre-layernorm``).
        pair_encoder: the attention biases (a :class:`PairBiasEncoder`), or None.
        graph_token: insert the graph token.
        input_norm: the layer norm of the input rows.
        graphormer_init: Graphormer's initialization.
        attention_buckets: as :class:`GPS`.
        pool: ``token`` (the default with the token) or ``sum``/``mean``/``max``.
        **kwargs: :class:`PEGraphModel`'s (``dropout`` is Graphormer's ``dropout``).
    """

    takes_graph_token = True
    default_heads = 8

    def __init__(self, channels: int, num_layers: int, out_dim: int, heads: int = 8,
                 ffn_channels: int | None = None, attn_dropout: float = 0.1,
                 act_dropout: float = 0.1, pre_norm: bool = False,
                 pair_encoder: nn.Module | None = None, graph_token: bool = True,
                 input_norm: bool = True, graphormer_init: bool = True,
                 attention_buckets: int = MAX_BUCKETS, pool: str | None = None,
                 **kwargs: Any) -> None:
        # no layer reads edge features (the pair encoder's path edges read the raw ones)
        kwargs.update(edge_vocab=None, edge_dim=None)
        pool = ("token" if graph_token else "sum") if pool is None else pool
        super().__init__(channels, num_layers, out_dim, pool=pool, **kwargs)
        if pool == "token" and not graph_token:
            raise ValueError("pool='token' reads the graph token: it needs graph_token=True")
        if pair_encoder is not None and not isinstance(pair_encoder, PairBiasEncoder):
            raise ValueError(f"Graphormer's pair_encoder gives attention biases (a "
                             f"PairBiasEncoder), got {type(pair_encoder).__name__}")
        check_positive_int("attention_buckets", attention_buckets)
        self.attention_buckets = attention_buckets
        self.pair_encoder = pair_encoder
        self.graph_token = GraphToken(channels, heads) if graph_token else None
        self.input_norm = nn.LayerNorm(channels) if input_norm else None
        self.layers = nn.ModuleList(
            GraphormerLayer(channels, heads, ffn_channels, self.dropout, attn_dropout,
                            act_dropout, pre_norm) for _ in range(num_layers))
        if graphormer_init:
            self.apply(_graphormer_init)
            if self.graph_token is not None:
                self.graph_token.reset_parameters()
        # Graphormer's lm_head_transform_weight, activation, layer_norm, embed_out
        self.head = nn.Sequential(nn.Linear(channels, channels), nn.GELU(),
                                  nn.LayerNorm(channels), nn.Linear(channels, out_dim))

    def layers_forward(self, h, batch, edge_attr, pe):
        h, graph, num_graphs, edge_index, pair_bias, pair_index, tokens, layout = \
            _attention_inputs(h, batch, self.pair_encoder, self.graph_token,
                              self.attention_buckets)
        if self.input_norm is not None:
            h = self.input_norm(h)
        h = F.dropout(h, self.dropout, self.training)
        for i, layer in enumerate(self.layers):
            h = self.reinjected(h, pe, i, None if tokens is None else tokens.node_rows)
            h = layer(h, layout, pair_bias, pair_index)
        if tokens is not None:
            return h[tokens.node_rows], h[tokens.token_rows]
        return h


def _graphormer_init(module: nn.Module) -> None:
    """microsoft/Graphormer's ``init_graphormer_params``: linear maps and embeddings
    ``N(0, 0.02^2)``, biases 0 (the attention's packed q/k/v projection included)."""
    if isinstance(module, nn.Linear):
        nn.init.normal_(module.weight, std=0.02)
        if module.bias is not None:
            nn.init.zeros_(module.bias)
    elif isinstance(module, nn.Embedding):
        nn.init.normal_(module.weight, std=0.02)
        if module.padding_idx is not None:
            with torch.no_grad():
                module.weight[module.padding_idx].zero_()
    elif isinstance(module, MultiheadGraphAttention):
        nn.init.normal_(module.in_proj_weight, std=0.02)
        nn.init.zeros_(module.in_proj_bias)


class GCN(PEGraphModel):
    r"""A GCN network (Kipf & Welling, "Semi-Supervised Classification with Graph
    Convolutional Networks", ICLR 2017), as the GCN baseline of the LCP paper (Fesser & Weber,
    "Effective Structural Encodings via Local Curvature Profiles", ICLR 2024): after the input
    embedding, ``num_layers`` layers

    .. math:: H' = \mathrm{Dropout}\big(\mathrm{ReLU}(\hat D^{-1/2} (A + I) \hat D^{-1/2}
              H W + b)\big), \qquad \hat D = \mathrm{diag}\big((A + I) \mathbf{1}\big),

    (PyG's ``GCNConv``: self loops added, symmetric normalization), then pooling (``pool``,
    e.g. ``mean`` as in the paper) for graph tasks and an MLP head. No residuals and no norms,
    as in the paper's code. GCN has no edge term: ``edge_vocab`` / ``edge_dim`` are accepted
    (so a :class:`~graphpe.datasets.DatasetBundle`'s ``model_kwargs()`` can be passed as is)
    and ignored. See :class:`PEGraphModel` for the other arguments (PE encoders included).
    """

    def __init__(self, channels: int = 64, num_layers: int = 4, out_dim: int = 1,
                 **kwargs: Any) -> None:
        kwargs.update(edge_vocab=None, edge_dim=None)
        super().__init__(channels, num_layers, out_dim, **kwargs)
        self.convs = nn.ModuleList(GCNConv(channels, channels) for _ in range(num_layers))

    def layers_forward(self, h, batch, edge_attr, pe):
        return _plain_stack(self, h, batch, pe)


class GIN(PEGraphModel):
    r"""A GIN network (Xu et al., "How Powerful are Graph Neural Networks?", ICLR 2019), as the
    GIN baseline of the LCP paper (Fesser & Weber, ICLR 2024): after the input embedding,
    ``num_layers`` layers

    .. math:: h_i' = \mathrm{Dropout}\Big(\mathrm{ReLU}\big(\mathrm{MLP}\big((1 + \epsilon)
              h_i + \textstyle\sum_{j \in N(i)} h_j\big)\big)\Big),

    with the paper code's two-layer MLP ``Linear -> BatchNorm -> ReLU -> Linear`` and a fixed
    :math:`\epsilon = 0` (``train_eps`` to learn it), then pooling (``pool``) for graph tasks
    and an MLP head. No residuals (unlike :class:`GINE`). The layer is
    :class:`~graphpe.layers.conv.GINLayer` (PyG ``GINConv``'s maths and state). GIN has no edge
    term: ``edge_vocab`` / ``edge_dim`` are accepted and ignored (use :class:`GINE` for edge
    features). See :class:`PEGraphModel` for the other arguments.
    """

    def __init__(self, channels: int = 64, num_layers: int = 4, out_dim: int = 1,
                 train_eps: bool = False, **kwargs: Any) -> None:
        kwargs.update(edge_vocab=None, edge_dim=None)
        super().__init__(channels, num_layers, out_dim, **kwargs)

        def gin_update():
            return nn.Sequential(nn.Linear(channels, channels), nn.BatchNorm1d(channels),
                                 nn.ReLU(), nn.Linear(channels, channels))

        self.convs = nn.ModuleList(GINLayer(gin_update(), train_eps=train_eps)
                                   for _ in range(num_layers))

    def layers_forward(self, h, batch, edge_attr, pe):
        return _plain_stack(self, h, batch, pe)


def _plain_stack(model: PEGraphModel, h: Tensor, batch, pe: Tensor | None) -> Tensor:
    """The layers of :class:`GCN` and :class:`GIN`: ``h = Dropout(ReLU(conv(h)))`` per layer,
    no residual (the LCP paper's baselines), with the PE re-injected first if asked."""
    for i, conv in enumerate(model.convs):
        h = model.reinjected(h, pe, i)
        h = F.dropout(F.relu(conv(h, batch.edge_index)), model.dropout, model.training)
    return h


# build_model's "model" names
MODELS = {"gine": GINE, "gps": GPS, "grit": GRIT, "gcn": GCN, "gin": GIN,
          "gatedgcn": GatedGCN, "graphormer": Graphormer}
