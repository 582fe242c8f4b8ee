"""The models over a :class:`PEGraphModel` body: input embeddings, PE encoders, a stack of
message-passing layers and a head (GINE, GatedGCN, GCN, GraphSAGE, GIN, and the residual
GNNs of the heterophilous benchmarks). The graph
transformers (GPS, GRIT, Graphormer) are in :mod:`graphpe.nn.transformers`."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.nn import (
    GCNConv,
    SAGEConv,
    global_add_pool,
    global_max_pool,
    global_mean_pool,
)

from graphpe.layers.attention import weight_dropout
from graphpe.layers.common import mlp
from graphpe.layers.conv import GatedGCNLayer, GINLayer, PEGGate, gcn_conv, pe_distances
from graphpe.layers.encoders import FeatureInput, parameter_dtype
from graphpe.layers.fused_gine import fused_gine_layer
from graphpe.layers.layer_maths import gine_layer
from graphpe.layers.residual import ResidualBlock, attended_edges
from graphpe.ops.checks import check_positive_int

POOLS = {"sum": global_add_pool, "mean": global_mean_pool, "max": global_max_pool}
TASKS = ("graph_regression", "graph_classification", "node_classification")
PE_COMBINE = ("sum", "concat", "split")


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
        pe_combine: ``sum`` (each encoder's output must have ``channels``), ``concat``
            (node embedding and encoders concatenated, then projected to ``channels``) or
            ``split`` (the channels split: the node embedding gets ``channels`` minus the
            encoders' widths and the encoders' outputs fill the rest, concatenated without a
            projection; GraphGPS's ``dim_pe`` layout and PyG's ``examples/graph_gps.py``).
        reinject_pe: add a per-layer projection of the PE embedding before every layer.
        pool: ``sum``, ``mean`` or ``max`` over the nodes for graph-level tasks, or
            ``token``: the final state of Graphormer's graph token (:class:`GPS` with
            ``graph_token=True``).
        dropout: dropout in layers and head.
        head_hidden: the widths of the head's hidden layers (None: one of ``channels``);
            e.g. ``(32, 16)`` for GraphGPS's ``san_graph`` head on 64 channels.
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
        head_hidden: Sequence[int] | None = None,
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
        pe_width = sum(getattr(e, "channels", channels) for e in pe_encoders)
        node_width = channels
        if pe_combine == "sum":
            for e in pe_encoders:
                if getattr(e, "channels", channels) != channels:
                    raise ValueError(
                        f"pe_combine='sum' needs encoders with {channels} channels; "
                        f"{type(e).__name__} has {e.channels}"
                    )
        elif pe_combine == "split":
            node_width = channels - pe_width
            if node_width < 1:
                raise ValueError(f"pe_combine='split' leaves the node embedding channels minus "
                                 f"the encoders' widths: {channels} - {pe_width} < 1 (give the "
                                 f"encoders fewer channels, e.g. pe_channels in build_model)")
        self.node_input = FeatureInput(node_vocab, node_dim, node_width, "node")
        self.edge_input = None
        if edge_vocab is not None or edge_dim is not None:
            self.edge_input = FeatureInput(edge_vocab, edge_dim, channels, "edge")
        self.pe_encoders = nn.ModuleList(pe_encoders)
        self.combine = (nn.Linear(channels + pe_width, channels) if pe_combine == "concat"
                        else None)
        self.reinject = nn.ModuleList(
            nn.Linear(channels if pe_combine == "sum" else pe_width, channels)
            for _ in range(num_layers)
        ) if reinject_pe else None
        self.dropout = dropout
        hidden = (channels,) if head_hidden is None else tuple(head_hidden)
        for width in hidden:
            check_positive_int("head_hidden's widths", width)
        self.head = mlp([channels, *hidden, out_dim], dropout)

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
        return self.join_pe([enc(batch) for enc in self.pe_encoders])

    def join_pe(self, outs: list[Tensor]) -> Tensor:
        """The encoders' outputs as one PE embedding: summed (``pe_combine='sum'``) or
        concatenated."""
        return sum(outs) if self.pe_combine == "sum" else torch.cat(outs, -1)

    def combine_pe(self, h: Tensor, pe: Tensor | None) -> Tensor:
        """The node embedding ``h`` with the PE embedding ``pe`` (see ``pe_combine``)."""
        if pe is None:
            return h
        if self.pe_combine == "sum":
            return h + pe
        h = torch.cat([h, pe], -1)
        return self.combine(h) if self.combine is not None else h

    def forward(self, batch) -> Tensor:
        if batch.get("x") is None:
            raise ValueError("the model needs node features batch.x")
        h = self.node_input(batch.x)
        pe = self.encode_pe(batch)
        h = self.combine_pe(h, pe)
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
            if self.fused and not torch.compiler.is_compiling():
                out = fused_gine_layer(conv, norm, h, batch.edge_index, edge_attr,
                                       self.dropout, self.training, cache, gate)
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


class GCN(PEGraphModel):
    r"""A GCN network (Kipf & Welling, "Semi-Supervised Classification with Graph
    Convolutional Networks", ICLR 2017), as the GCN baseline of the LCP paper (Fesser & Weber,
    "Effective Structural Encodings via Local Curvature Profiles", ICLR 2024): after the input
    embedding, ``num_layers`` layers

    .. math:: H' = \mathrm{Dropout}\big(\mathrm{ReLU}(\hat D^{-1/2} (A + I) \hat D^{-1/2}
              H W + b)\big), \qquad \hat D = \mathrm{diag}\big((A + I) \mathbf{1}\big),

    (PyG's ``GCNConv``: self loops added, symmetric normalization), then pooling (``pool``,
    e.g. ``mean`` as in the paper) for graph tasks and an MLP head. No residuals and no norms by
    default, as in the paper's code; ``residual=True`` adds a linear skip inside each layer and
    ``norm`` a normalization before the ReLU, ``H' = Dropout(ReLU(Norm(conv(H) + H W_s)))``: the
    tuned classic GNNs of Luo et al. ("Classic GNNs are strong baselines", NeurIPS 2024). GCN
    has no edge term: ``edge_vocab`` / ``edge_dim`` are accepted (so a
    :class:`~graphpe.datasets.DatasetBundle`'s ``model_kwargs()`` can be passed as is) and
    ignored. See :class:`PEGraphModel` for the other arguments (PE encoders included).
    """

    def __init__(self, channels: int = 64, num_layers: int = 4, out_dim: int = 1,
                 residual: bool = False, norm: str | None = None, **kwargs: Any) -> None:
        kwargs.update(edge_vocab=None, edge_dim=None)
        super().__init__(channels, num_layers, out_dim, **kwargs)
        self.convs = nn.ModuleList(GCNConv(channels, channels) for _ in range(num_layers))
        _build_skips_and_norms(self, residual, norm, num_layers)

    def layers_forward(self, h, batch, edge_attr, pe):
        return _plain_stack(self, h, batch, pe)


class SAGE(PEGraphModel):
    r"""A GraphSAGE network (Hamilton et al., "Inductive Representation Learning on Large
    Graphs", NeurIPS 2017), the sampled-training baseline of OGB's node sets: after the input
    embedding, ``num_layers`` layers

    .. math:: h_i' = \mathrm{Dropout}\Big(\mathrm{ReLU}\big(W_1 h_i + W_2
              \tfrac{1}{|N(i)|} \textstyle\sum_{j \in N(i)} h_j + b\big)\Big)

    (PyG's ``SAGEConv`` with the mean aggregation; ``N(i)`` the in-neighbours, so on a
    sampled batch the sampled ones), then pooling (``pool``) for graph tasks and an MLP head.
    No residuals and no norms by default; ``residual`` and ``norm`` as :class:`GCN`'s.
    GraphSAGE has no edge term: ``edge_vocab`` / ``edge_dim`` are accepted and ignored. See
    :class:`PEGraphModel` for the other arguments.
    """

    def __init__(self, channels: int = 64, num_layers: int = 4, out_dim: int = 1,
                 residual: bool = False, norm: str | None = None, **kwargs: Any) -> None:
        kwargs.update(edge_vocab=None, edge_dim=None)
        super().__init__(channels, num_layers, out_dim, **kwargs)
        self.convs = nn.ModuleList(SAGEConv(channels, channels) for _ in range(num_layers))
        _build_skips_and_norms(self, residual, norm, num_layers)

    def layers_forward(self, h, batch, edge_attr, pe):
        return _plain_stack(self, h, batch, pe)


class ResidualGNN(PEGraphModel):
    r"""The residual GNNs of Platonov et al. ("A critical look at the evaluation of GNNs under
    heterophily: are we really making progress?", ICLR 2023; their ``model.py``), which with
    skip connections and LayerNorm match or beat the heterophily-specific models: the input
    map (the node embedding, with the encodings per ``pe_combine``), then

    .. math:: h \leftarrow \mathrm{GELU}(\mathrm{Dropout}(h)), \qquad
              h \leftarrow h + M_\ell(\mathrm{LayerNorm}(h)) \quad (\ell = 1 \dots L),

    a final LayerNorm and a linear head (``head_hidden=()``; give widths for an MLP). The
    module :math:`M` is GCN's, GraphSAGE's, GAT's or GAT-sep's propagation followed by a
    feed-forward network, or for GT / GT-sep (``module="gt"``, ``"gt-sep"``) a transformer's
    attention over the neighbours, each such block followed by a feed-forward block
    (:class:`~graphpe.layers.residual.ResidualBlock`); ``"ffn"`` is their ResNet (no graph).
    The paper trains them with 5 layers, 512 channels, dropout 0.2, AdamW at lr 3e-5 without
    weight decay, 1,000 full-batch steps (``configs/heterophilous_gcn.toml``). No edge
    features: ``edge_vocab`` / ``edge_dim`` are accepted and ignored.

    Args:
        channels / num_layers / out_dim: width, layers (a GT layer is two residual blocks),
            outputs.
        module: ``gcn``, ``sage``, ``gat``, ``gat-sep``, ``gt``, ``gt-sep`` or ``ffn``.
        heads: attention heads of ``gat``, ``gat-sep``, ``gt``, ``gt-sep`` (default 8, as the
            paper).
        hidden_multiplier: the feed-forward's hidden width over ``channels`` (1).
        **kwargs: :class:`PEGraphModel`'s (``dropout``, PE encoders, ...).
    """

    def __init__(self, channels: int = 64, num_layers: int = 5, out_dim: int = 1,
                 module: str = "gcn", heads: int = 8, hidden_multiplier: float = 1.0,
                 **kwargs: Any) -> None:
        kwargs.update(edge_vocab=None, edge_dim=None)
        kwargs.setdefault("head_hidden", ())
        super().__init__(channels, num_layers, out_dim, **kwargs)
        # a GT layer is two blocks, the attention's and a feed-forward's (the paper's MODULES)
        per_layer = [module, "ffn"] if module.startswith("gt") else [module]
        self.blocks = nn.ModuleList(
            ResidualBlock(channels, kind, self.dropout, hidden_multiplier, heads)
            for _ in range(num_layers) for kind in per_layer)
        self.output_norm = nn.LayerNorm(channels)

    def layers_forward(self, h, batch, edge_attr, pe):
        h = F.gelu(weight_dropout(h, self.dropout, self.training))
        per_layer = len(self.blocks) // len(self.reinject) if self.reinject else 1
        # the attention blocks' edges (with or without self loops), once for all blocks
        attended = {loops: attended_edges(batch.edge_index, h.size(0), loops)
                    for loops in {b.self_loops for b in self.blocks} - {None}}
        for i, block in enumerate(self.blocks):
            if i % per_layer == 0:
                h = self.reinjected(h, pe, i // per_layer)
            h = block(h, batch.edge_index, attended.get(block.self_loops))
        return self.output_norm(h)


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


#: the ``norm`` choices of :class:`GCN` and :class:`SAGE`
NORMS = {"batch": nn.BatchNorm1d, "layer": nn.LayerNorm}


def _build_skips_and_norms(model: PEGraphModel, residual: bool, norm: str | None,
                           num_layers: int) -> None:
    """``model.skips`` (a Linear per layer, ``residual``) and ``model.norms`` (``norm``'s
    module per layer), each None when not asked for."""
    if norm is not None and norm not in NORMS:
        raise ValueError(f"norm must be one of {tuple(NORMS)} or None, got {norm!r}")
    width = model.channels
    model.skips = nn.ModuleList(nn.Linear(width, width) for _ in range(num_layers)) \
        if residual else None
    model.norms = nn.ModuleList(NORMS[norm](width) for _ in range(num_layers)) \
        if norm is not None else None


def _plain_stack(model: PEGraphModel, h: Tensor, batch, pe: Tensor | None) -> Tensor:
    """The layers of :class:`GCN`, :class:`SAGE` and :class:`GIN`:
    ``h = Dropout(ReLU(conv(h)))`` per layer, no residual (the LCP paper's baselines), with the
    PE re-injected first if asked; with ``skips`` / ``norms`` (GCN's and SAGE's ``residual`` and
    ``norm``), ``h = Dropout(ReLU(Norm(conv(h) + skip(h))))``."""
    skips, norms = getattr(model, "skips", None), getattr(model, "norms", None)
    for i, conv in enumerate(model.convs):
        h = model.reinjected(h, pe, i)
        out = gcn_conv(conv, h, batch.edge_index)
        if skips is not None:
            out = out + skips[i](h)
        if norms is not None:
            out = norms[i](out)
        h = F.dropout(F.relu(out), model.dropout, model.training)
    return h


# build_model's "model" names
