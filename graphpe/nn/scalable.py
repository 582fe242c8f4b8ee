r"""Graph transformers for node-level learning on large graphs, linear in the node count:
:class:`SGFormer` (Wu et al., NeurIPS 2023) and :class:`Polynormer` (Deng et al., ICLR 2024),
on the :class:`~graphpe.nn.models.PEGraphModel` body, so any node encoding of the registry
(``pe``) is added to (or concatenated with) the node embedding they start from.

Each equals PyG's model of the same name (``torch_geometric.nn.models.SGFormer`` /
``Polynormer``) on the embedded nodes: its submodules carry PyG's names, so PyG's
``state_dict`` loads into the model (:meth:`~SGFormer.load_pyg_state_dict`) and gives the
same outputs up to PyG's final ``log_softmax`` (graphpe's models return the logits; the
cross-entropy of the training loop takes them). Where PyG pads a batch of several graphs to
its largest, these sum each graph's attention over its own nodes (see
:mod:`graphpe.layers.sgformer` and :mod:`graphpe.layers.polynormer`).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.nn import GATConv, GCNConv

from graphpe.layers.attention import check_heads
from graphpe.layers.polynormer import PolynormerAttention
from graphpe.layers.sgformer import SGFormerGlobal, SGFormerGNN
from graphpe.nn.models import PEGraphModel
from graphpe.ops.checks import check_non_negative_int, check_number, check_positive_int

AGGREGATES = ("add", "cat")


class _NodeLevelTransformer(PEGraphModel):
    """What :class:`SGFormer` and :class:`Polynormer` share: node classification only, no edge
    features, no re-injected PE, dropout 0.5 unless given (PyG's), the prediction made by the
    layers (the head is the identity) and the loading of PyG's weights."""

    #: keys of PyG's state_dict that its forward never reads (not built here)
    pyg_unread: tuple[str, ...] = ()

    def __init__(self, channels: int, num_layers: int, out_dim: int, **kwargs: Any) -> None:
        name = type(self).__name__
        task = kwargs.setdefault("task", "node_classification")
        if task != "node_classification":
            raise ValueError(f"{name} is a node-level model: task must be "
                             f"'node_classification', got {task!r}")
        if kwargs.get("reinject_pe"):
            raise ValueError(f"{name} does not re-inject the PE (reinject_pe): its encoders "
                             "enter the node embedding once")
        kwargs.update(edge_vocab=None, edge_dim=None)  # no layer reads edge features
        kwargs.setdefault("dropout", 0.5)
        super().__init__(channels, num_layers, out_dim, **kwargs)
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout!r}")
        self.head = nn.Identity()  # the layers end in PyG's output maps

    def load_pyg_state_dict(self, state_dict: dict[str, Tensor]) -> None:
        """Loads the ``state_dict`` of PyG's model of the same sizes (``in_channels`` and
        ``hidden_channels`` equal to ``channels``): its keys are this model's (PyG's names),
        but for those PyG's forward never reads (Polynormer's ``lin_in``), which are dropped.
        The node embedding and the PE encoders, which PyG has not, are left as they are. A
        key of neither model, or a layer weight it lacks, is a ``ValueError``; weights of
        other shapes are torch's ``RuntimeError`` (PyG's Polynormer with ``heads > 1`` builds
        its attention for other inputs, see :class:`Polynormer`)."""
        kept = {k: v for k, v in state_dict.items()
                if not k.startswith(tuple(f"{u}." for u in self.pyg_unread))}
        missing, unexpected = self.load_state_dict(kept, strict=False)
        own = ("node_input.", "pe_encoders.", "combine.")
        missing = [k for k in missing if not k.startswith(own) and k != "_extra_state"]
        if missing or unexpected:
            raise ValueError(f"not the state_dict of PyG's {type(self).__name__} of these "
                             f"sizes: missing {missing}, unexpected {unexpected}")

    @staticmethod
    def _graphs(batch) -> tuple[Tensor | None, int | None]:
        """The graph of every node (None: one graph) and their count where the batch knows
        it (a ``Batch``'s ``ptr``; None: counted by the attention)."""
        graph, ptr = batch.get("batch"), batch.get("ptr")
        return graph, (ptr.numel() - 1 if ptr is not None and graph is not None else None)


class SGFormer(_NodeLevelTransformer):
    r"""SGFormer (Wu et al., "SGFormer: Simplifying and Empowering Transformers for Large-Graph
    Representations", NeurIPS 2023), as PyG's ``SGFormer``: from the embedded nodes :math:`x`
    (node features plus the encoders of ``pe``), a global branch
    :math:`h = \mathrm{SGFormerGlobal}(x)` of ``trans_num_layers`` layers of SGFormer's simple
    attention (:class:`~graphpe.layers.sgformer.SGFormerGlobal`, submodule ``trans_conv``) and
    a GCN branch :math:`g = \mathrm{SGFormerGNN}(x)` of ``num_layers`` layers
    (:class:`~graphpe.layers.sgformer.SGFormerGNN`, submodule ``graph_conv``), combined and
    mapped to the classes by ``fc``:

    .. math:: \mathrm{out} = W_{fc}\,\big(w\, g + (1 - w)\, h\big) + b_{fc}
              \quad (\text{aggregate} = \text{add}), \qquad
              W_{fc}\, [h \,\Vert\, g] + b_{fc} \quad (\text{cat}),

    :math:`w` = ``graph_weight``; linear in the node count (no ``n x n`` scores). Node
    classification only; edge features are not read.

    PyG's arguments are these: ``in_channels`` and ``hidden_channels`` are ``channels`` (the
    node embedding's width), ``out_channels`` is ``out_dim``, ``gnn_num_layers`` is
    ``num_layers`` and ``trans_num_heads`` is ``heads``; the others keep their names and
    defaults, but the dropouts default to ``dropout`` (0.5 unless given, PyG's default).

    Args:
        channels: width of the node embedding and of both branches.
        num_layers: GCN layers (PyG's ``gnn_num_layers``, default 3 there).
        out_dim: classes.
        trans_num_layers: attention layers.
        heads: heads of each attention (PyG's ``trans_num_heads``; each head is ``channels``
            wide, and the heads are averaged).
        trans_dropout: dropout of the attention branch (None: ``dropout``).
        gnn_dropout: dropout of the GCN branch (None: ``dropout``).
        graph_weight: the GCN branch's weight :math:`w` with ``aggregate='add'``.
        aggregate: ``add`` (weighted sum) or ``cat`` (concatenation) of the branches.
        **kwargs: :class:`~graphpe.nn.models.PEGraphModel`'s (``node_vocab`` / ``node_dim``,
            ``pe_encoders``, ``pe_combine``, ``dropout``; ``task`` must be
            ``node_classification``, its default here).
    """

    def __init__(self, channels: int, num_layers: int, out_dim: int, trans_num_layers: int = 2,
                 heads: int = 1, trans_dropout: float | None = None,
                 gnn_dropout: float | None = None, graph_weight: float = 0.5,
                 aggregate: str = "add", **kwargs: Any) -> None:
        super().__init__(channels, num_layers, out_dim, **kwargs)
        if aggregate not in AGGREGATES:
            raise ValueError(f"aggregate must be one of {AGGREGATES}, got {aggregate!r}")
        check_positive_int("heads", heads)
        self.graph_weight = check_number("graph_weight", graph_weight)
        self.aggregate = aggregate
        self.trans_conv = SGFormerGlobal(
            channels, channels, trans_num_layers, heads,
            self.dropout if trans_dropout is None else trans_dropout)
        self.graph_conv = SGFormerGNN(channels, channels, num_layers,
                                      self.dropout if gnn_dropout is None else gnn_dropout)
        self.fc = nn.Linear(channels * (2 if aggregate == "cat" else 1), out_dim)

    def layers_forward(self, h, batch, edge_attr, pe):
        graph, num_graphs = self._graphs(batch)
        x1 = self.trans_conv(h, graph, num_graphs)
        x2 = self.graph_conv(h, batch.edge_index)
        if self.aggregate == "add":
            return self.fc(self.graph_weight * x2 + (1 - self.graph_weight) * x1)
        return self.fc(torch.cat([x1, x2], dim=-1))


class Polynormer(_NodeLevelTransformer):
    r"""Polynormer (Deng et al., "Polynomial-Expressive Graph Transformer in Linear Time", ICLR
    2024), as PyG's ``Polynormer``: from the embedded nodes :math:`x^{(0)}` (node features plus
    the encoders of ``pe``, then dropout ``in_dropout``), ``num_layers`` local layers

    .. math::
        h &= \mathrm{ReLU}(W_h^{(l)} x^{(l-1)}), \qquad
        u = \mathrm{Dropout}\big(\mathrm{ReLU}(\mathrm{BN}_l(\mathrm{conv}_l(x^{(l-1)})
            + W^{(l)} x^{(l-1)}))\big), \\
        x^{(l)} &= (1 - \beta)\, \mathrm{LN}_l(h \odot u) + \beta\, u, \qquad
        x_{\mathrm{local}} = \textstyle\sum_l x^{(l)},

    (``conv`` PyG's ``GCNConv``, or with ``local_attn`` its ``GATConv`` with ``heads`` heads
    and no self loops; ``pre_ln`` puts a layer norm on :math:`x^{(l-1)}` first, ``post_bn``
    is the batch norm), then

    - in the **local stage**: :math:`\mathrm{out} = W_{\mathrm{local}} x_{\mathrm{local}}`
      (``pred_local``);
    - in the **global stage**: ``global_layers`` layers of
      :class:`~graphpe.layers.polynormer.PolynormerAttention` (no residual) over
      :math:`\mathrm{LN}(x_{\mathrm{local}})`, each graph's nodes attending to each other
      (linear in the node count), then ``pred_global``.

    **The two stages.** The paper trains the local layers alone first (a warm-up), then the
    whole model; PyG's example sets ``model._global = True`` at epoch ``local_epochs``. Here
    ``global_stage`` is that flag: the model starts in the global stage when ``local_epochs``
    is 0 (the default) and in the local stage otherwise, and :meth:`set_epoch`, which
    :func:`graphpe.train.fit` calls before every epoch, sets it to ``epoch >= local_epochs``.
    The stage is saved in the ``state_dict`` (its extra state), so a checkpoint comes back in
    the stage it was saved in. Each stage leaves the other's output map (and the local stage
    the attention) without gradients: under torchrun the model is wrapped with
    ``find_unused_parameters`` (``ddp_find_unused_parameters``).

    PyG's arguments are these: ``in_channels`` is ``channels``, ``hidden_channels`` is
    ``channels // heads`` (so every layer is ``channels`` wide), ``out_channels`` is
    ``out_dim`` and ``local_layers`` is ``num_layers``; the others keep their names and
    defaults, but ``global_dropout`` defaults to ``dropout`` (0.5 unless given, PyG's default
    for both). PyG builds the attention for inputs of ``hidden_channels``, which fails in its
    global stage for ``heads > 1``; here it takes the layers' width, ``channels`` (the same
    for one head). PyG's ``lin_in`` is never read by its forward and is not built here.

    Args:
        channels: width of the node embedding and of every layer (``heads`` must divide it).
        num_layers: local layers (PyG's ``local_layers``, default 7 there).
        out_dim: classes.
        global_layers: attention layers of the global stage.
        in_dropout: dropout on the embedded nodes.
        global_dropout: dropout on each attention layer's output (None: ``dropout``).
        heads: heads of the attention (and of ``GATConv``).
        beta: :math:`\beta` of the local layers and of the attention's gate.
        qk_shared: the attention's queries are its keys.
        pre_ln: a layer norm before each local layer.
        post_bn: the batch norm in each local layer.
        local_attn: ``GATConv`` for the local layers' convolution instead of ``GCNConv``.
        local_epochs: epochs of the local stage before the global one (0: global throughout).
        **kwargs: :class:`~graphpe.nn.models.PEGraphModel`'s (``dropout`` is the local
            layers' dropout; ``task`` must be ``node_classification``, its default here).
    """

    pyg_unread = ("lin_in",)
    #: the stages leave parameters without gradients (DistributedDataParallel must look)
    ddp_find_unused_parameters = True

    def __init__(self, channels: int, num_layers: int, out_dim: int, global_layers: int = 2,
                 in_dropout: float = 0.15, global_dropout: float | None = None, heads: int = 1,
                 beta: float = 0.9, qk_shared: bool = False, pre_ln: bool = False,
                 post_bn: bool = True, local_attn: bool = False, local_epochs: int = 0,
                 **kwargs: Any) -> None:
        super().__init__(channels, num_layers, out_dim, **kwargs)
        check_heads(channels, heads)
        check_non_negative_int("global_layers", global_layers)
        if not 0.0 <= check_number("in_dropout", in_dropout) < 1.0:
            raise ValueError(f"in_dropout must be in [0, 1), got {in_dropout!r}")
        self.in_dropout, self.beta = in_dropout, check_number("beta", beta)
        self.local_epochs = check_non_negative_int("local_epochs", local_epochs)
        self.global_stage = self.local_epochs == 0
        hidden = channels // heads

        def conv() -> nn.Module:
            if local_attn:
                return GATConv(channels, hidden, heads=heads, concat=True,
                               add_self_loops=False, bias=False)
            return GCNConv(channels, channels, cached=False, normalize=True)

        def layers(make) -> nn.ModuleList:
            return nn.ModuleList(make() for _ in range(num_layers))

        self.h_lins = layers(lambda: nn.Linear(channels, channels))
        self.local_convs = layers(conv)
        self.lins = layers(lambda: nn.Linear(channels, channels))
        self.lns = layers(lambda: nn.LayerNorm(channels))
        self.pre_lns = layers(lambda: nn.LayerNorm(channels)) if pre_ln else None
        self.post_bns = layers(lambda: nn.BatchNorm1d(channels)) if post_bn else None
        self.ln = nn.LayerNorm(channels)
        self.global_attn = nn.ModuleList(
            PolynormerAttention(channels, heads, hidden, beta, qk_shared=qk_shared,
                                dropout=self.dropout if global_dropout is None
                                else global_dropout)
            for _ in range(global_layers))
        self.pred_local = nn.Linear(channels, out_dim)
        self.pred_global = nn.Linear(channels, out_dim)

    def set_epoch(self, epoch: int) -> None:
        """The stage of training epoch ``epoch`` (from 0): global from ``local_epochs`` on."""
        self.global_stage = epoch >= self.local_epochs

    def get_extra_state(self) -> dict[str, bool]:
        return {"global_stage": self.global_stage}

    def set_extra_state(self, state: dict[str, bool]) -> None:
        self.global_stage = bool(state["global_stage"])

    def local_forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        """:math:`x_{\\mathrm{local}}`, the sum of the local layers' outputs."""
        x = F.dropout(x, self.in_dropout, self.training)
        total = torch.zeros_like(x)
        for i, conv in enumerate(self.local_convs):
            if self.pre_lns is not None:
                x = self.pre_lns[i](x)
            h = F.relu(self.h_lins[i](x))
            x = conv(x, edge_index) + self.lins[i](x)
            if self.post_bns is not None:
                x = self.post_bns[i](x)
            x = F.dropout(F.relu(x), self.dropout, self.training)
            x = (1 - self.beta) * self.lns[i](h * x) + self.beta * x
            total = total + x
        return total

    def layers_forward(self, h, batch, edge_attr, pe):
        x_local = self.local_forward(h, batch.edge_index)
        if not self.global_stage:
            return self.pred_local(x_local)
        graph, num_graphs = self._graphs(batch)
        x = self.ln(x_local)
        for attn in self.global_attn:
            x = attn(x, graph, num_graphs)
        return self.pred_global(x)
