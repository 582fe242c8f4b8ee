"""The graph transformers: :class:`GPS` (GPS layers over a message-passing module and an
attention, both built from their config names by :func:`gps_branches`), :class:`GRIT` and
:class:`Graphormer`, on the :class:`~graphpe.nn.models.PEGraphModel` body."""

from __future__ import annotations

from typing import Any, NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from graphpe.layers.attention import (
    MAX_BUCKETS,
    GraphLayout,
    MultiheadGraphAttention,
    check_heads,
    layout_from_batch,
)
from graphpe.layers.common import DeclaredForm
from graphpe.layers.conv import GatedGCNLayer, GINLayer
from graphpe.layers.encoders import PairBiasEncoder, PairFeatureEncoder
from graphpe.layers.gps import GPSLayer, declared
from graphpe.layers.graph_token import GraphToken, TokenLayout
from graphpe.layers.graphormer import GraphormerLayer
from graphpe.layers.grit import GRITAttention, log_degree
from graphpe.layers.linear_attention import LinearAttention, PerformerAttention
from graphpe.nn.models import PEGraphModel
from graphpe.ops.checks import check_positive_int
from graphpe.ops.walk import pair_ids_of_edges

MPNNS = ("gine", "gin", "gatedgcn", None)
ATTENTIONS = ("multihead", "linear", "performer", "grit", None)


def gps_branches(channels: int, mpnn: str | None, attention: str | None, *, heads: int = 4,
                 dropout: float = 0.0, attn_dropout: float = 0.0, last: bool = False
                 ) -> tuple[nn.Module | None, nn.Module | None]:
    """``(conv, attn)``: the message-passing and attention modules of a
    :class:`~graphpe.layers.gps.GPSLayer` from their config names, the one place where those
    names are read.

    Args:
        channels: width.
        mpnn: ``gine`` (:class:`~graphpe.layers.conv.GINLayer` over ``Linear -> ReLU ->
            Linear``, reading edge features), ``gin`` (the same without them,
            ``edge_features=False``), ``gatedgcn`` (:class:`~graphpe.layers.conv.GatedGCNLayer`
            with dropout ``dropout``, GraphGPS's ``CustomGatedGCN``) or None.
        attention: ``multihead``
            (:class:`~graphpe.layers.attention.MultiheadGraphAttention`, dropout
            ``attn_dropout`` on its weights), ``linear``
            (:class:`~graphpe.layers.linear_attention.LinearAttention`, which forms no
            weights: ``attn_dropout`` must be 0), ``performer``
            (:class:`~graphpe.layers.linear_attention.PerformerAttention`, GraphGPS's:
            ``attn_dropout`` on its output), ``grit``
            (:class:`~graphpe.layers.grit.GRITAttention`, ``attn_dropout`` on its weights) or
            None.
        heads: attention heads (checked against ``channels`` also without attention).
        dropout: GatedGCN's dropout (the layer's own).
        attn_dropout: as above.
        last: the modules of a network's last layer, which compute no edge or pair features
            (nobody reads them).
    """
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
                         "pair features: one model does not take both")

    def gin_mlp() -> nn.Module:
        return nn.Sequential(nn.Linear(channels, channels), nn.ReLU(),
                             nn.Linear(channels, channels))

    convs = {"gine": lambda: GINLayer(gin_mlp()),
             "gin": lambda: GINLayer(gin_mlp(), edge_features=False),
             "gatedgcn": lambda: GatedGCNLayer(channels, dropout, update_edges=not last),
             None: lambda: None}
    attentions = {
        "multihead": lambda: MultiheadGraphAttention(channels, heads, attn_dropout),
        "linear": lambda: LinearAttention(channels, heads),
        "performer": lambda: PerformerAttention(channels, heads, dropout=attn_dropout),
        "grit": lambda: GRITAttention(channels, heads, attn_dropout, update_pairs=not last),
        None: lambda: None}
    conv = convs[mpnn]()  # (first: GINE's and GIN's initializations draw as they always did)
    return conv, attentions[attention]()


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


class GPS(DeclaredForm, PEGraphModel):
    """A GPS network: a :class:`~graphpe.layers.gps.GPSLayer` stack, then pooling and an MLP
    head. Extra arguments: ``mpnn`` (default ``gine`` with edge features, else ``gin``;
    ``gatedgcn`` for GraphGPS's GatedGCN, which updates the edge features layer by layer),
    ``attention``, ``heads``, ``attn_dropout`` (every layer's modules built from these names by
    :func:`gps_branches`), ``norm``, ``attention_buckets`` (the most size buckets the
    ``multihead`` attention pads the batch's graphs into, built once per forward; 1 pads every
    graph to the largest, as PyG's ``GPSConv``), ``pair_encoder`` (``multihead`` attention:
    e.g. :class:`PairBiasEncoder`, an attention bias per node pair and head, shared by the
    layers; ``grit`` attention: a :class:`PairFeatureEncoder`, whose pair features the layers
    update, with the edge embeddings added on the pairs that are edges, and whose diagonal
    node encoding is added to the node embedding), ``graph_token`` (``multihead`` attention:
    add Graphormer's graph token to every graph,
    :class:`~graphpe.layers.graph_token.GraphToken`; with ``pool='token'`` its final state is
    the graph's representation, else it only relays attention and the nodes are pooled); the
    rest as :class:`PEGraphModel`."""

    takes_graph_token = True
    #: the function :class:`graphpe.nn.static.StaticGPS` computes in fixed shapes
    #: (:class:`~graphpe.layers.common.DeclaredForm`)
    form = "gps"

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
        # the last layer's edge or pair features would not be read: it does not compute them
        self.layers = nn.ModuleList(
            GPSLayer(channels, *gps_branches(channels, mpnn, attention, heads=heads,
                                             dropout=self.dropout, attn_dropout=attn_dropout,
                                             last=i == num_layers - 1),
                     dropout=self.dropout, norm=norm)
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

    def layer_reads(self) -> set[str]:
        """The inputs the layers' branches read (their declarations,
        :class:`~graphpe.layers.gps.GPSLayer`'s contract): what the forward builds for them."""
        return {name for layer in self.layers
                for module, role in ((layer.conv, "conv"), (layer.attn, "attn"))
                if module is not None for name in declared(module, role).reads}

    def layers_forward(self, h, batch, edge_attr, pe):
        reads = self.layer_reads()
        features = "pair_attr" in reads  # GRIT's attention: pair features, not biases
        h, graph, num_graphs, edge_index, pair_bias, pair_index, tokens, layout = \
            _attention_inputs(h, batch, None if features else self.pair_encoder,
                              self.graph_token,
                              self.attention_buckets if "layout" in reads else None)
        pair_attr = log_deg = None
        if features:  # pair features, updated by every layer
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
            out = layer(h, edge_index, batch=graph, edge_attr=edge_attr, layout=layout,
                        num_graphs=num_graphs, pair_bias=pair_bias, pair_index=pair_index,
                        edge_weight=gate, pair_attr=pair_attr, log_deg=log_deg)
            # the edge (GatedGCN) or pair (GRIT) features, updated by every layer but the last
            h = out.x
            edge_attr = edge_attr if out.edge_attr is None else out.edge_attr
            pair_attr = pair_attr if out.pair_attr is None else out.pair_attr
        if tokens is not None:
            return h[tokens.node_rows], h[tokens.token_rows]
        return h


class GRIT(GPS):
    """GRIT (Ma et al., "Graph Inductive Biases in Transformers without Message Passing", ICML
    2023): :class:`GPS` with ``attention='grit'`` and no MPNN by default, so each layer is
    GRIT's: attention over pair features that it updates (RRWP in the paper, given as
    ``pair_encoder``, a :class:`PairFeatureEncoder`), the degree scaler, residuals, norms and
    the FFN. ``mpnn='gine'`` adds GPS's message passing beside it. Arguments as :class:`GPS`."""

    form = "grit"  # not GPS's: StaticGPS does not run it

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
