r"""The GPS layer (Rampasek et al., "Recipe for a General, Powerful, Scalable Graph Transformer",
NeurIPS 2022) over the message-passing and attention modules it is given, as PyG's
``GPSConv``: :class:`GPSLayer`, and what it returns, :class:`GPSOutput`."""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.nn.resolver import activation_resolver, normalization_resolver

from graphpe.layers.attention import GraphLayout, layout_from_batch
from graphpe.layers.fused import fused_forward, may_fuse
from graphpe.layers.grit import log_degree
from graphpe.layers.layer_maths import gps_layer

#: the inputs of :meth:`GPSLayer.forward` that a branch module may read (its ``reads``)
LAYER_INPUTS = ("edge_index", "edge_attr", "edge_weight", "batch", "num_graphs", "layout",
                "pair_bias", "pair_index", "pair_attr", "log_deg")
#: the features a branch module may return updated beside the nodes (its ``updates``)
UPDATABLE = ("edge_attr", "pair_attr")


class GPSOutput(NamedTuple):
    """What :class:`GPSLayer` returns: the new node states ``x [N, channels]`` and the edge
    and pair features a branch updated (``[E, channels]``, ``[P, channels]``), None where
    nothing updated them (or a last layer computed none)."""

    x: Tensor
    edge_attr: Tensor | None = None
    pair_attr: Tensor | None = None


class Branch(NamedTuple):
    """What a branch module declares under :class:`GPSLayer`'s contract (defaults filled in)."""

    reads: tuple[str, ...]
    updates: str | None
    adds_residual: bool
    computes_update: bool
    declares_reads: bool = True  # False: a conv without ``reads``, called as conv(x, edge_index)


def declared(module: nn.Module, role: str) -> Branch:
    """``module``'s declarations under :class:`GPSLayer`'s contract, checked. ``role`` is
    ``conv`` (default ``reads``: ``("edge_index",)``, a plain PyG convolution) or ``attn``
    (``reads`` required)."""
    reads = getattr(module, "reads", ("edge_index",) if role == "conv" else None)
    name = type(module).__name__
    if reads is None:
        raise ValueError(f"GPSLayer's attn {name} must declare `reads`, the layer inputs it "
                         f"takes after x (of {LAYER_INPUTS})")
    unknown = [r for r in reads if r not in LAYER_INPUTS]
    if unknown:
        raise ValueError(f"{name}.reads names {unknown}, not inputs of GPSLayer "
                         f"({LAYER_INPUTS})")
    updates = getattr(module, "updates", None)
    if updates not in (None, *UPDATABLE):
        raise ValueError(f"{name}.updates must be None or one of {UPDATABLE}, got {updates!r}")
    return Branch(tuple(reads), updates, bool(getattr(module, "adds_residual", False)),
                  bool(getattr(module, "computes_update", updates is not None)),
                  hasattr(module, "reads"))


class GPSLayer(nn.Module):
    r"""One layer of GPS (Rampasek et al., "Recipe for a General, Powerful, Scalable Graph
    Transformer", NeurIPS 2022) over a message-passing module ``conv`` and an attention
    ``attn``, as PyG's ``GPSConv``:

    .. math::
        h^M &= \mathrm{norm}_1\big(x + \mathrm{Dropout}(\mathrm{conv}(x))\big), \qquad
        h^A = \mathrm{norm}_2\big(x + \mathrm{Dropout}(\mathrm{attn}(x))\big), \\
        \mathrm{out} &= \mathrm{norm}_3\big(h + \mathrm{MLP}(h)\big), \qquad h = h^M + h^A,

    with :math:`\mathrm{MLP} = \mathrm{Linear}(C, 2C) \to \mathrm{act} \to \mathrm{Dropout} \to
    \mathrm{Linear}(2C, C) \to \mathrm{Dropout}`. Either branch may be None (its term leaves
    :math:`h`). The submodules are named as ``GPSConv``'s (``conv``, ``attn``, ``mlp``,
    ``norm1``, ``norm2``, ``norm3``): its weights load and give the same output (tested).

    **The branch contract.** The layer calls a branch module as ``module(x, *inputs)``, with
    ``inputs`` the arguments of :meth:`forward` that the module's ``reads`` names, in that
    order, and dispatches on what the module declares (class attributes, or properties where
    they depend on the instance), never on its type:

    - ``reads``: names among ``edge_index``, ``edge_attr``, ``edge_weight``, ``batch``,
      ``num_graphs``, ``layout``, ``pair_bias``, ``pair_index``, ``pair_attr`` and
      ``log_deg``. Where a branch reads them and they are not given, the layer builds
      ``layout`` (:func:`~graphpe.layers.attention.layout_from_batch`), ``batch`` and
      ``num_graphs`` (one graph without ``batch``) and ``log_deg``
      (:func:`~graphpe.layers.grit.log_degree`). A ``pair_bias`` or ``edge_weight`` that no
      branch reads is an error. A ``conv`` without ``reads`` is called as ``conv(x,
      edge_index)`` (a PyG convolution); an ``attn`` must declare it.
    - ``updates`` (default None): ``"edge_attr"`` or ``"pair_attr"``, features the module
      returns updated beside the nodes, as ``(h, new)``; ``new`` is None where the instance
      computes none (its ``computes_update`` False: a network's last layer).
    - ``adds_residual`` (default False): the module's outputs already hold their residual and
      dropout, so :math:`h^M = \mathrm{norm}_1(\mathrm{conv}(x))` (GraphGPS's
      ``CustomGatedGCN``; likewise :math:`h^A`) and updated features are taken as returned.
      Otherwise the layer adds them: updated pair features become :math:`e' =
      \mathrm{norm}_e(e + \mathrm{Dropout}(\mathrm{new}))` (submodule ``norm_pair``, GRIT's
      layer); the layer has no edge norm, so a module that updates edge features adds its own
      residual.

    graphpe's modules declare: :class:`~graphpe.layers.conv.GINLayer` reads ``edge_index,
    edge_attr, edge_weight`` (without ``edge_attr`` when built ``edge_features=False``: GIN);
    :class:`~graphpe.layers.conv.GatedGCNLayer` reads the same, updates ``edge_attr`` and adds
    its residual; :class:`~graphpe.layers.attention.MultiheadGraphAttention` reads ``layout,
    pair_bias, pair_index`` (softmax attention over size buckets of the batch's graphs);
    :class:`~graphpe.layers.linear_attention.LinearAttention` and
    :class:`~graphpe.layers.linear_attention.PerformerAttention` read ``batch, num_graphs``;
    :class:`~graphpe.layers.grit.GRITAttention` reads ``pair_attr, pair_index, log_deg`` and
    updates ``pair_attr``. A model builds them from config names with
    :func:`graphpe.nn.transformers.gps_branches`.

    On the CPU a layer of GINE, multi-head attention, the ReLU feed-forward block and batch
    norms runs its training step (and evaluation without autograd) as one autograd node
    (:mod:`graphpe.layers.fused`; ``fused = False`` turns it off). Where a module or setting
    differs the layer runs module by module, and the logger ``graphpe.layers.fused`` says why
    at DEBUG.

    Args:
        channels: the width :math:`C` of ``x``.
        conv: the message-passing module, or None.
        attn: the attention module, or None.
        dropout: dropout after each branch (and on updated pair features) and in the MLP.
        norm: the norms, by PyG's resolver names (``batch_norm``, ``layer_norm``,
            ``graph_norm``, ...) or None.
        norm_kwargs: arguments of the norm.
        act: the MLP's activation, by PyG's resolver names (``relu``, ``gelu``, ...) or a
            module.
        act_kwargs: arguments of the activation.
    """

    def __init__(self, channels: int, conv: nn.Module | None, attn: nn.Module | None, *,
                 dropout: float = 0.0, norm: str | nn.Module | None = "batch_norm",
                 norm_kwargs: dict[str, Any] | None = None, act: str | nn.Module = "relu",
                 act_kwargs: dict[str, Any] | None = None) -> None:
        super().__init__()
        if conv is None and attn is None:
            raise ValueError("a GPS layer needs an MPNN, an attention, or both")
        branches = [declared(m, role) for m, role in ((conv, "conv"), (attn, "attn"))
                    if m is not None]
        updated = [b.updates for b in branches if b.updates is not None]
        if len(set(updated)) < len(updated):
            raise ValueError(f"conv and attn both update {updated[0]}")
        if any(b.updates == "edge_attr" and not b.adds_residual for b in branches):
            raise ValueError("GPSLayer has no edge norm: a module that updates edge_attr adds "
                             "its own residual (adds_residual, as GatedGCNLayer)")
        self.channels, self.dropout = channels, dropout
        self.conv, self.attn = conv, attn
        self.mlp = nn.Sequential(
            nn.Linear(channels, 2 * channels), activation_resolver(act, **(act_kwargs or {})),
            nn.Dropout(dropout), nn.Linear(2 * channels, channels), nn.Dropout(dropout),
        )

        def make_norm(needed: bool) -> nn.Module | None:
            return normalization_resolver(norm, channels, **(norm_kwargs or {})) if needed \
                else None

        # a norm per branch that exists (GPSConv builds norm1 even without its MPNN)
        self.norm1, self.norm2 = make_norm(conv is not None), make_norm(attn is not None)
        self.norm3 = make_norm(True)
        self.norm_pair = make_norm(any(b.updates == "pair_attr" and b.computes_update
                                       and not b.adds_residual for b in branches))
        # as GPSConv: norms that work per graph (PyG's LayerNorm in graph mode, GraphNorm, ...)
        # get the batch vector; without it they would normalize over the whole batch
        self.norm_with_batch = self.norm3 is not None and (
            "batch" in inspect.signature(self.norm3.forward).parameters)
        # training steps on the CPU as one autograd node where graphpe.layers.fused applies
        # (False: module by module, e.g. to inspect the submodules' outputs)
        self.fused = True

    def reset_parameters(self) -> None:
        """Re-initialize the branches, the MLP and the norms (as PyG's ``GPSConv``): each
        submodule with a ``reset_parameters`` of its own resets itself."""
        for module in (self.conv, self.attn, *self.mlp, self.norm1, self.norm2, self.norm3,
                       self.norm_pair):
            if module is not None and hasattr(module, "reset_parameters"):
                module.reset_parameters()

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

    def _dropout(self, h: Tensor) -> Tensor:
        return F.dropout(h, p=self.dropout, training=self.training) if self.dropout else h

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
    ) -> GPSOutput:
        """``x [N, channels]`` -> :class:`GPSOutput` ``(x', edge_attr', pair_attr')``, the
        last two None unless a branch updated them. ``edge_index [2, E]``; ``batch [N]`` maps
        nodes to graphs (None: one graph), ``num_graphs`` counts them (sparing per-graph
        norms a ``batch.max()``); ``edge_attr [E, C]`` and ``edge_weight [E, 1]`` (PEG's
        gates) go to the branches that read them; ``layout`` is
        :func:`~graphpe.layers.attention.graph_layout` of the batch (pass it to every layer
        of a model, so it is built once); ``pair_bias [P, heads]`` is added to the attention
        logits of the pairs ``pair_index [2, P]``; ``pair_attr [P, C]`` are the features of
        those pairs and ``log_deg [N, 1]`` feeds GRIT's degree scaler."""
        inputs = {"edge_index": edge_index, "edge_attr": edge_attr, "edge_weight": edge_weight,
                  "batch": batch, "num_graphs": num_graphs, "layout": layout,
                  "pair_bias": pair_bias, "pair_index": pair_index, "pair_attr": pair_attr,
                  "log_deg": log_deg}
        conv = declared(self.conv, "conv") if self.conv is not None else None
        attn = declared(self.attn, "attn") if self.attn is not None else None
        self._complete_inputs(x, inputs, [b for b in (conv, attn) if b is not None])
        if may_fuse(self, x, edge_attr, pair_bias, edge_weight):
            # under torch.compile the fused layer runs eagerly (a graph break): its compiled
            # kernels are opaque to the tracer and beat the traced module path on the CPU
            fused = _fused_eager if torch.compiler.is_compiling() else fused_forward
            out = fused(self, x, edge_index, edge_attr, inputs["layout"], pair_bias,
                        edge_weight, pair_index)
            if out is not None:
                return GPSOutput(out)
        updated: dict[str, Tensor] = {}

        def add_norm(i: int, h: Tensor, residual: Tensor | None,
                     plus: Tensor | None) -> Tensor:
            norm = (self.norm1, self.norm2, self.norm3)[i - 1]
            out = self._norm(norm, h if residual is None else h + residual, inputs["batch"],
                             inputs["num_graphs"])
            return out if plus is None else out + plus

        out = gps_layer(x, self._branch(self.conv, conv, inputs, updated),
                        self._branch(self.attn, attn, inputs, updated), self.mlp, add_norm,
                        mpnn_residual=conv is None or not conv.adds_residual,
                        attention_residual=attn is None or not attn.adds_residual)
        return GPSOutput(out, updated.get("edge_attr"), updated.get("pair_attr"))

    def _complete_inputs(self, x: Tensor, inputs: dict[str, Any],
                         branches: list[Branch]) -> None:
        """Checks the optional inputs against what the branches read, and builds those read
        but not given (``layout``, ``batch`` and ``num_graphs``, ``log_deg``)."""
        reads = {name for b in branches for name in b.reads}
        if inputs["edge_attr"] is not None and "edge_attr" not in reads and \
                any(not b.declares_reads for b in branches):
            warnings.warn("GPSLayer: edge_attr is given, but the conv declares no `reads` and "
                          "is called as conv(x, edge_index), so the edge features are "
                          "unused; set its reads = ('edge_index', 'edge_attr') to pass them",
                          stacklevel=3)
        for name, what in (("pair_bias", "pair biases"), ("edge_weight", "edge weights")):
            if inputs[name] is not None and name not in reads:
                raise ValueError(f"{what} ({name}) need a branch that reads {name}; this "
                                 "layer's conv and attn do not")
        if "layout" in reads and inputs["layout"] is None:
            inputs["layout"] = layout_from_batch(inputs["batch"], x.size(0))
        if "batch" in reads or "num_graphs" in reads:
            if inputs["batch"] is None:
                inputs["batch"] = x.new_zeros(x.size(0), dtype=torch.long)
                inputs["num_graphs"] = 1
            if inputs["num_graphs"] is None:
                batch = inputs["batch"]
                inputs["num_graphs"] = int(batch.max()) + 1 if batch.numel() else 0
        if "log_deg" in reads and inputs["log_deg"] is None:
            inputs["log_deg"] = log_degree(inputs["edge_index"], x.size(0), x.dtype)

    def _branch(self, module: nn.Module | None, branch: Branch | None, inputs: dict[str, Any],
                updated: dict[str, Tensor]) -> Callable[[Tensor], Tensor] | None:
        """The branch :math:`x \\mapsto \\mathrm{Dropout}(\\mathrm{module}(x))` for
        :func:`~graphpe.layers.layer_maths.gps_layer` (no dropout where the module adds its
        residual), which puts the features it updates into ``updated``."""
        if module is None:
            return None

        def run(x: Tensor) -> Tensor:
            out = module(x, *(inputs[name] for name in branch.reads))
            if branch.updates is not None:
                out, new = out
                if new is not None:
                    updated[branch.updates] = (new if branch.adds_residual else
                                               self._pair_residual(new, inputs))
            return out if branch.adds_residual else self._dropout(out)

        return run

    def _pair_residual(self, new: Tensor, inputs: dict[str, Any]) -> Tensor:
        """GRIT's pair update :math:`e' = \\mathrm{norm}_e(e + \\mathrm{Dropout}(\\hat e))`."""
        pair_attr, pair_index, batch = inputs["pair_attr"], inputs["pair_index"], inputs["batch"]
        pair_graph = batch.index_select(0, pair_index[0]) if (
            self.norm_with_batch and batch is not None) else None
        return self._norm(self.norm_pair, self._dropout(new) + pair_attr, pair_graph,
                          inputs["num_graphs"])


@torch.compiler.disable
def _fused_eager(*args) -> Tensor | None:
    return fused_forward(*args)
