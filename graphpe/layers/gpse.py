r"""GPSE, the Graph Positional and Structural Encoder (Cantürk, Liu, Lapointe-Gagné, Létourneau,
Wolf, Beaini, Rampášek, "Graph Positional and Structural Encoder", ICML 2024): a deep
message-passing network that reads random node features and is pretrained to predict a graph's
positional and structural encodings; its last hidden representation is then used as a PE.

:class:`GPSE` is PyG's ``torch_geometric.nn.GPSE`` (the architecture of its defaults, which
the published checkpoints use) written as plain torch: :meth:`GPSE.load_pyg_state_dict` loads a
PyG ``state_dict`` (or a GPSE repository checkpoint) and the outputs are PyG's for the same
weights and inputs; :meth:`GPSE.pyg_state_dict` writes the weights back in PyG's names.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from itertools import pairwise

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from graphpe.ops.checks import check_non_negative_int, check_positive_int


@dataclass(frozen=True)
class GPSEConfig:
    """The architecture of a :class:`GPSE` (defaults: PyG's ``GPSE()``, the published models).

    Args:
        dim_in: width of the random input features (20).
        dim_inner: width of every hidden layer and of the encoding (512).
        layers_pre_mp: linear layers before message passing (1).
        layers_mp: gated convolutions (20).
        batch_norm: BatchNorm after every linear layer and convolution (True; their bias is
            then dropped, as PyG's).
        dropout: dropout after each norm (0.2; training only).
        virtual_node: graphs are read with one virtual node each, linked both ways to every
            node (True); it is an input convention the encoding transform follows.
        num_node_targets, num_graph_targets: the pretraining heads' outputs (51 and 11 in the
            paper's setup); 0 and 0: no head.
        head_layers: layers of each head MLP (PyG's ``layers_post_mp``, 2).
        head_hidden: hidden width of the per-target node MLPs (PyG's
            ``multi_head_dim_inner``, 32); the graph MLP's hidden width is ``dim_inner``.
    """

    dim_in: int = 20
    dim_inner: int = 512
    layers_pre_mp: int = 1
    layers_mp: int = 20
    batch_norm: bool = True
    dropout: float = 0.2
    virtual_node: bool = True
    num_node_targets: int = 51
    num_graph_targets: int = 11
    head_layers: int = 2
    head_hidden: int = 32

    def __post_init__(self) -> None:
        for name in ("dim_in", "dim_inner", "head_layers", "head_hidden"):
            check_positive_int(name, getattr(self, name))
        for name in ("layers_pre_mp", "layers_mp", "num_node_targets", "num_graph_targets"):
            check_non_negative_int(name, getattr(self, name))
        if self.layers_pre_mp == 0 and self.dim_in != self.dim_inner:
            raise ValueError("layers_pre_mp=0 needs dim_in == dim_inner (the skip connections "
                             f"add the input to every layer), got {self.dim_in} and "
                             f"{self.dim_inner}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout!r}")

    @property
    def has_head(self) -> bool:
        """Whether the model carries the pretraining head."""
        return self.num_node_targets > 0 or self.num_graph_targets > 0

    def to_dict(self) -> dict:
        """The fields as plain values (what a checkpoint stores)."""
        return asdict(self)


class ResGatedConv(nn.Module):
    r"""The residual gated graph convolution of Bresson & Laurent ("Residual Gated Graph
    ConvNets", 2017), PyG's ``ResGatedGraphConv`` without edge features: for every node
    :math:`i`, summing over the edges :math:`j \to i` of ``edge_index``,

    .. math:: h_i' = W_s h_i + \sum_{j \to i} \sigma(W_k h_i + b_k + W_q h_j + b_q)
              \odot (W_v h_j + b_v) \;[+\, b].

    Submodules ``key``, ``query``, ``value`` (with biases) and ``skip`` (without) hold
    :math:`W_k, W_q, W_v, W_s`; ``bias`` is :math:`b` (None without it).
    """

    def __init__(self, channels: int, bias: bool = True) -> None:
        super().__init__()
        self.key, self.query, self.value = (nn.Linear(channels, channels) for _ in range(3))
        self.skip = nn.Linear(channels, channels, bias=False)
        self.bias = nn.Parameter(torch.zeros(channels)) if bias else None

    def forward(self, h: Tensor, edge_index: Tensor) -> Tensor:
        src, dst = edge_index[0], edge_index[1]
        gate = torch.sigmoid(self.key(h).index_select(0, dst) + self.query(h).index_select(0, src))
        messages = gate * self.value(h).index_select(0, src)
        out = self.skip(h).index_add(0, dst, messages)
        return out if self.bias is None else out + self.bias


class HeadMLP(nn.Module):
    """A pretraining head: ``len(hidden)`` layers Linear -> Dropout -> ReLU -> L2 normalization,
    then a Linear to the outputs (PyG's graphgym ``MLP`` with ``has_l2norm``)."""

    def __init__(self, dim_in: int, dim_out: int, hidden: int, layers: int,
                 dropout: float) -> None:
        super().__init__()
        widths = [dim_in] + [hidden] * (layers - 1)
        self.hidden = nn.ModuleList(nn.Linear(a, b) for a, b in pairwise(widths))
        self.out = nn.Linear(widths[-1], dim_out)
        self.dropout = dropout

    def forward(self, x: Tensor) -> Tensor:
        for lin in self.hidden:
            x = F.normalize(F.relu(F.dropout(lin(x), self.dropout, self.training)), dim=-1)
        return self.out(x)


class GPSEHead(nn.Module):
    r"""GPSE's pretraining head (PyG's ``GNNInductiveHybridMultiHead``): one :class:`HeadMLP`
    of hidden width ``head_hidden`` per node target (each predicts one column), and one
    :class:`HeadMLP` (hidden width ``dim_inner``) on the sum of each graph's node
    representations for the graph targets."""

    def __init__(self, config: GPSEConfig) -> None:
        super().__init__()
        c = config
        self.node_mlps = nn.ModuleList(
            HeadMLP(c.dim_inner, 1, c.head_hidden, c.head_layers, c.dropout)
            for _ in range(c.num_node_targets))
        self.graph_mlp = (HeadMLP(c.dim_inner, c.num_graph_targets, c.dim_inner, c.head_layers,
                                  c.dropout) if c.num_graph_targets else None)

    def forward(self, h: Tensor, graph: Tensor, num_graphs: int) -> tuple[Tensor, Tensor]:
        """``h [N, dim_inner]`` (virtual nodes included), ``graph [N]`` each node's graph ->
        ``(node predictions [N, num_node_targets], graph predictions [G,
        num_graph_targets])``."""
        node = self.node_targets(h) if len(self.node_mlps) else h.new_zeros(h.size(0), 0)
        if self.graph_mlp is None:
            return node, h.new_zeros(num_graphs, 0)
        pooled = h.new_zeros(num_graphs, h.size(1)).index_add_(0, graph, h)
        return node, self.graph_mlp(pooled)


    def node_targets(self, h: Tensor) -> Tensor:
        """Every node MLP at once: ``h [N, d]`` -> ``[N, T]``, column ``t`` ``node_mlps[t](h)``
        (their weights stacked, so that ``T`` small products are a few large ones)."""
        mlps = self.node_mlps
        x = h.unsqueeze(1)  # [N, 1, d]: the same input for every target
        for j in range(len(mlps[0].hidden)):
            weight = torch.stack([m.hidden[j].weight for m in mlps])  # [T, out, in]
            bias = torch.stack([m.hidden[j].bias for m in mlps])
            x = torch.einsum("nti,toi->nto", x.expand(-1, len(mlps), -1), weight) + bias
            x = F.dropout(x, mlps[0].dropout, self.training)
            x = F.normalize(F.relu(x), dim=-1)
        weight = torch.cat([m.out.weight for m in mlps])  # [T, hidden]
        bias = torch.cat([m.out.bias for m in mlps])
        return torch.einsum("nti,ti->nt", x.expand(-1, len(mlps), -1), weight) + bias


class GPSE(nn.Module):
    r"""The GPSE network (Cantürk et al., ICML 2024), as PyG's ``torch_geometric.nn.GPSE``.

    From random node features :math:`x_i \in \mathbb{R}^{d_{in}}` (a virtual node's are 0):

    .. math::
        h^{(0)}_i &= \mathrm{L2}(\mathrm{ReLU}(\mathrm{Drop}(\mathrm{BN}(W_0 x_i))))
                     \quad \text{(``layers_pre_mp`` such layers)}, \\
        h^{(l)}_i &= h^{(l-1)}_i + \mathrm{L2}(\mathrm{ReLU}(\mathrm{Drop}(\mathrm{BN}(
                     \mathrm{ResGatedConv}_l(h^{(l-1)})_i)))), \quad l = 1..L, \\
        z_i &= \mathrm{L2}(h^{(L)}_i),

    with :math:`\mathrm{L2}(v) = v / \max(\lVert v \rVert_2, 10^{-12})` and
    :class:`ResGatedConv` the gated convolution. :math:`z` ``[N, dim_inner]`` is the
    encoding (PyG's pretrained models replace the head by the identity: ``repr_type
    no_post_mp``). In pretraining :class:`GPSEHead` predicts the targets from :math:`z`.

    Args:
        config: the architecture (:class:`GPSEConfig`; keyword arguments build one).
    """

    def __init__(self, config: GPSEConfig | None = None, **kwargs) -> None:
        super().__init__()
        if config is None:
            config = GPSEConfig(**kwargs)
        elif kwargs:
            raise ValueError("give a GPSEConfig or keyword arguments, not both")
        self.config = c = config
        widths = [c.dim_in] + [c.dim_inner] * c.layers_pre_mp
        bias = not c.batch_norm
        self.pre_mp = nn.ModuleList(nn.Linear(a, b, bias=bias)
                                    for a, b in pairwise(widths))
        self.pre_norms = nn.ModuleList(self._norm() for _ in range(c.layers_pre_mp))
        self.convs = nn.ModuleList(ResGatedConv(c.dim_inner, bias=bias)
                                   for _ in range(c.layers_mp))
        self.norms = nn.ModuleList(self._norm() for _ in range(c.layers_mp))
        self.head = GPSEHead(c) if c.has_head else None

    def _norm(self) -> nn.Module:
        return nn.BatchNorm1d(self.config.dim_inner) if self.config.batch_norm else nn.Identity()

    def _block(self, h: Tensor, norm: nn.Module) -> Tensor:
        h = F.dropout(norm(h), self.config.dropout, self.training)
        return F.normalize(F.relu(h), dim=-1)

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        """``x [N, dim_in]`` (virtual nodes included, their rows 0), ``edge_index [2, E]``
        (messages flow ``edge_index[0] -> edge_index[1]``, as given) -> the encoding ``[N,
        dim_inner]``."""
        if x.dim() != 2 or x.size(1) != self.config.dim_in:
            raise ValueError(f"GPSE expects x [N, {self.config.dim_in}], got {list(x.shape)}")
        h = x
        for lin, norm in zip(self.pre_mp, self.pre_norms, strict=True):
            h = self._block(lin(h), norm)
        for conv, norm in zip(self.convs, self.norms, strict=True):
            h = h + self._block(conv(h, edge_index), norm)
        return F.normalize(h, dim=-1)

    def encode(self, x: Tensor, edge_index: Tensor, ptr: Tensor) -> Tensor:
        """The encoding of the graphs of a batch (``ptr [G + 1]`` their node offsets), with
        their virtual nodes when the model reads them (:func:`add_virtual_nodes`): ``x [N,
        dim_in]`` -> ``[N, dim_inner]``."""
        if not self.config.virtual_node:
            return self(x, edge_index)
        x_vn, edge_index_vn, _ = add_virtual_nodes(x, edge_index, ptr)
        return self(x_vn, edge_index_vn)[: x.size(0)]

    # ---------------------------------------------------------------- PyG's weights
    def _pyg_names(self) -> list[tuple[str, str]]:
        """``(this module's prefix, PyG's prefix)`` of every submodule holding weights."""
        c = self.config
        names = []
        for i in range(c.layers_pre_mp):
            names += [(f"pre_mp.{i}", f"pre_mp.Layer_{i}.layer.model"),
                      (f"pre_norms.{i}", f"pre_mp.Layer_{i}.post_layer.0")]
        for i in range(c.layers_mp):
            conv = f"mp.layer{i}.layer.model"
            names += [(f"convs.{i}.{ours}", f"{conv}.lin_{ours}")
                      for ours in ("key", "query", "value", "skip")]
            names += [(f"convs.{i}", conv), (f"norms.{i}", f"mp.layer{i}.post_layer.0")]
        if self.head is not None:
            mlps = [(f"head.node_mlps.{t}", f"post_mp.node_post_mps.{t}")
                    for t in range(c.num_node_targets)]
            if c.num_graph_targets:
                mlps.append(("head.graph_mlp", "post_mp.graph_post_mp"))
            for ours, theirs in mlps:
                if c.head_layers == 1:  # PyG's MLP is then the last Linear alone
                    names.append((f"{ours}.out", f"{theirs}.model.0.model"))
                    continue
                names += [(f"{ours}.hidden.{j}", f"{theirs}.model.0.Layer_{j}.layer.model")
                          for j in range(c.head_layers - 1)]
                names.append((f"{ours}.out", f"{theirs}.model.1.model"))
        return names

    def pyg_state_dict(self) -> dict[str, Tensor]:
        """The weights under the names of PyG's ``torch_geometric.nn.GPSE`` of this
        architecture (``GPSE(dim_in, dim_inner=..., layers_mp=..., ...)``), so PyG loads
        them."""
        rename = _prefix_map(self._pyg_names(), reverse=False)
        return {rename(key): value for key, value in self.state_dict().items()}

    def load_pyg_state_dict(self, state: Mapping[str, Tensor], strict: bool = True) -> None:
        """Load the ``state_dict`` of a PyG ``torch_geometric.nn.GPSE`` (or of its head-less
        form, ``post_mp`` the identity: then ``strict`` allows a model without head only)."""
        rename = _prefix_map(self._pyg_names(), reverse=True)
        self.load_state_dict({rename(key): value for key, value in state.items()},
                             strict=strict)

    @classmethod
    def from_pyg_state_dict(cls, state: Mapping[str, Tensor], dropout: float = 0.2,
                            virtual_node: bool = True) -> GPSE:
        """A :class:`GPSE` with the architecture of ``state`` (a PyG ``GPSE`` ``state_dict``,
        or a GPSE repository checkpoint ``{"model_state": {"model.<name>": ...}}``) and its
        weights. Widths and layer counts are read from the shapes; the rest of PyG's options
        must be its defaults (ReLU, L2 norms, ``skipsum``, sum pooling, no BatchNorm in the
        head), as in the published models. ``dropout`` and ``virtual_node`` are not in the
        weights (PyG's defaults: 0.2, True)."""
        state = pyg_gpse_state(state)
        config = _config_from_pyg(state, dropout, virtual_node)
        model = cls(config)
        model.load_pyg_state_dict(state)
        return model


def add_virtual_nodes(x: Tensor, edge_index: Tensor,
                      ptr: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """GPSE's virtual nodes, one per graph of a batch (``ptr [G + 1]``), as PyG's
    ``VirtualNode`` and GPSE's input convention: graph ``g``'s is node ``N + g``, its
    features 0, linked both ways to every node of its graph. Returns ``(x [N + G, d],
    edge_index [2, E + 2N], graph [N + G])`` (each node's graph)."""
    n, num_graphs = x.size(0), ptr.numel() - 1
    graphs = torch.arange(num_graphs, device=x.device)
    node_graph = torch.repeat_interleave(graphs, ptr.diff(), output_size=n)
    nodes, virtual = torch.arange(n, device=x.device), n + node_graph
    edge_index = torch.cat([edge_index, torch.stack([nodes, virtual]),
                            torch.stack([virtual, nodes])], dim=1)
    x = torch.cat([x, x.new_zeros(num_graphs, x.size(1))])
    return x, edge_index, torch.cat([node_graph, graphs])


def pyg_gpse_state(state: Mapping[str, Tensor]) -> dict[str, Tensor]:
    """A PyG ``GPSE`` ``state_dict`` from either itself or a GPSE repository checkpoint (the
    files ``GPSE.from_pretrained`` downloads: ``{"model_state": {"model.<name>": ...}}``)."""
    if "model_state" in state and isinstance(state["model_state"], Mapping):
        # PyG's from_pretrained: drop the first name component of every key
        return {key.split(".", 1)[1]: value for key, value in state["model_state"].items()}
    return dict(state)


def _count(state: Mapping[str, Tensor], pattern: str) -> int:
    found = {int(m.group(1)) for key in state if (m := re.fullmatch(pattern, key))}
    if found != set(range(len(found))):
        raise ValueError(f"not a PyG GPSE state_dict: layers {sorted(found)} of {pattern!r}")
    return len(found)


def _config_from_pyg(state: Mapping[str, Tensor], dropout: float,
                     virtual_node: bool) -> GPSEConfig:
    pre = _count(state, r"pre_mp\.Layer_(\d+)\.layer\.model\.weight")
    mp = _count(state, r"mp\.layer(\d+)\.layer\.model\.lin_key\.weight")
    if mp == 0 and pre == 0:
        raise ValueError("not a PyG GPSE state_dict: it has no pre_mp or mp layers "
                         f"(keys: {sorted(state)[:5]}...)")
    first = (state["pre_mp.Layer_0.layer.model.weight"] if pre
             else state["mp.layer0.layer.model.lin_key.weight"])
    dim_inner, dim_in = first.shape
    batch_norm = any(key.endswith("post_layer.0.running_mean") for key in state
                     if key.startswith(("pre_mp.", "mp.")))
    nodes = _count(state, r"post_mp\.node_post_mps\.(\d+)\.model\.0\..*weight")
    graph_out = state.get("post_mp.graph_post_mp.model.1.model.weight",
                          state.get("post_mp.graph_post_mp.model.0.model.weight"))
    hidden_layers = r"\.model\.0\.Layer_(\d+)\.layer\.model\.weight"
    head_layers = 1 + max(_count(state, rf"post_mp\.{head}{hidden_layers}")
                          for head in (r"node_post_mps\.0", "graph_post_mp"))
    hidden = state.get("post_mp.node_post_mps.0.model.0.Layer_0.layer.model.weight")
    if any(key.startswith("post_mp.") and "running_mean" in key for key in state):
        raise ValueError("a GPSE head with BatchNorm (PyG's head_bn=True) is not supported")
    return GPSEConfig(dim_in=dim_in, dim_inner=dim_inner, layers_pre_mp=pre, layers_mp=mp,
                      batch_norm=batch_norm, dropout=dropout, virtual_node=virtual_node,
                      num_node_targets=nodes,
                      num_graph_targets=0 if graph_out is None else graph_out.size(0),
                      head_layers=head_layers,
                      head_hidden=32 if hidden is None else hidden.size(0))


def _prefix_map(pairs: list[tuple[str, str]], reverse: bool):
    """A function renaming ``prefix.param`` keys by the longest matching prefix of ``pairs``
    (ours -> PyG's, or back with ``reverse``); keys matching none are kept (then reported by
    ``load_state_dict``)."""
    table = {theirs: ours for ours, theirs in pairs} if reverse else dict(pairs)

    def rename(key: str) -> str:
        prefix, _, param = key.rpartition(".")
        return f"{table[prefix]}.{param}" if prefix in table else key

    return rename


def gpse_loss(node_pred: Tensor, node_true: Tensor, graph_pred: Tensor, graph_true: Tensor,
              node_graph: Tensor, num_graphs: int) -> Tensor:
    r"""GPSE's pretraining loss (``mae_cosim_col_sep`` of the GPSE code and PyG's
    ``gpse_loss``): the mean absolute error plus one minus the mean cosine similarity.

    Node predictions and targets ``[N, T]`` and graph ones ``[G, T_g]`` are stacked into one
    ``[N + G, T + T_g]`` matrix, zero outside their own columns; the MAE is its mean. The
    cosine similarity is taken per column over the nodes of each graph (a column of a graph's
    node targets, :math:`\cos(\hat y_{:, t}, y_{:, t})` over its nodes) and per graph column
    over the graphs of the batch; pairs whose target column is all 0 (among them every padded
    one) are left out of the mean. ``node_graph [N]`` is each (real) node's graph.

    This is what the comments of the GPSE code describe. Its code (and PyG's ``gpse_loss``)
    groups the stacked rows with ``to_dense_batch``, graph rows last under index 0, which
    that function's sorted-index assumption misplaces: the graph rows fall into its overflow
    slot and each group's node rows shift by G rows into the previous graph's. On the rows
    in sorted order (graph rows first) the two agree.
    """
    n, t = node_true.shape
    g, tg = graph_true.shape
    abs_err = (node_pred - node_true).abs().sum() + (graph_pred - graph_true).abs().sum()
    mae = abs_err / ((n + g) * (t + tg))
    # nodes grouped per graph: [G, max nodes, T] (rows past a graph's nodes are 0)
    counts = torch.bincount(node_graph, minlength=num_graphs)
    slot = torch.arange(n, device=node_graph.device) - (counts.cumsum(0) - counts)[node_graph]
    width = int(counts.max()) if n else 0
    dense_pred = node_pred.new_zeros(num_graphs, width, t).index_put_((node_graph, slot),
                                                                       node_pred)
    dense_true = node_true.new_zeros(num_graphs, width, t).index_put_((node_graph, slot),
                                                                      node_true)
    cos_nodes = F.cosine_similarity(dense_pred, dense_true, dim=1)  # [G, T]
    cos_graphs = F.cosine_similarity(graph_pred, graph_true, dim=0)  # [T_g]
    cos = torch.cat([cos_nodes[(dense_true != 0).any(1)], cos_graphs[(graph_true != 0).any(0)]])
    return mae + 1 - cos.mean()
