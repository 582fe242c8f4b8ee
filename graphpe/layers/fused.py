"""A GPS layer's training step as one autograd node on the CPU.

:class:`~graphpe.layers.gps.GPSLayer` with GINE, multi-head attention and batch norms, module
by module, is ~16 autograd nodes per forward (linear maps, ReLUs, residual sums, norms, the
attention core). Here the layer's forward is one :class:`torch.autograd.Function` whose
backward is written out:

.. math::
    a &= s\\,x + \\textstyle\\sum_{j \\to i} \\mathrm{ReLU}(x_j + e_{ji}), \\quad
    r_1 = \\mathrm{ReLU}(a W_1^\\top + b_1), \\quad
    h_1 = \\mathrm{BN}_1(r_1 W_2^\\top + b_2 + x), \\\\
    h_2 &= \\mathrm{BN}_2(\\mathrm{Attn}(x W_q^\\top + b_q) W_o^\\top + b_o + x), \\quad
    o = h_1 + h_2, \\\\
    r_3 &= \\mathrm{ReLU}(o W_3^\\top + b_3), \\quad
    \\mathrm{out} = \\mathrm{BN}_3(r_3 W_4^\\top + b_4 + o),

the same maths as the module-by-module path, with the same kernels where one exists (GINE's
aggregation from :mod:`graphpe.ops.message`, the bucketed attention core of
:mod:`graphpe.layers.attention`) and the residual sum, batch norm and running-statistics update as
one compiled pass each way (:mod:`graphpe.ops.norm`). The linear maps run as plain products;
their biases are added by the pass that reads each product (a bias-ReLU epilogue from
:mod:`graphpe.ops.epilogue`, the norms' residual sum, the attention's gather into its
buckets), and backward the ReLU mask and the bias gradient are one pass, products accumulate
in place into gradients not read again, and the aggregation's gradient adds into ``x``'s.
The composition of branches, residuals and norms is the module's
(:func:`graphpe.layers.layer_maths.gps_layer`), given this path's pieces; the backward is its
derivative, written out. The tests compare outputs, every gradient and the running statistics
with the module path.

In evaluation without autograd (``torch.no_grad()`` or ``inference_mode()``, as
:func:`graphpe.train.evaluate` runs) the same layer runs as one function of those kernels
(:func:`fused_inference`): the batch norms are per-channel affine maps of the running
statistics (:func:`graphpe.ops.norm.batch_norm_inference`), each formed in the pass that adds
the residual, and the products again run without ``addmm``'s bias copy; outputs equal the
module path's to float32 rounding (tested).

It runs only where it computes exactly that layer: training mode (or evaluation without
autograd), CPU float32, a GINE :class:`~graphpe.layers.conv.GINLayer` over ``Linear -> ReLU ->
Linear`` through the compiled aggregation, a
:class:`~graphpe.layers.attention.MultiheadGraphAttention` (pair biases included, float32), the
feed-forward block ``Linear -> ReLU -> Dropout(0) -> Linear -> Dropout(0)``, no branch
dropout, batch norms with affine parameters and running statistics (momentum set), no hooks on
the layer's submodules, and not under ``torch.compile``. Everything else, and any layer with
``fused = False``, takes the module path, and this module's logger says why at DEBUG (which
module or setting differs)::

    logging.getLogger("graphpe.layers.fused").setLevel(logging.DEBUG)
"""

from __future__ import annotations

import logging
from typing import NamedTuple

import torch
from torch import Tensor, nn
from torch.autograd.function import once_differentiable
from torch.nn.modules import module as _module
from torch_geometric.nn.norm import BatchNorm

from graphpe.layers.attention import (
    GraphLayout,
    attention_core_backward,
    attention_core_forward,
)
from graphpe.layers.common import form_of
from graphpe.layers.conv import checked_edges
from graphpe.layers.layer_maths import gps_layer
from graphpe.ops import message
from graphpe.ops.epilogue import bias_relu_, relu_backward_
from graphpe.ops.host import use_host_kernels
from graphpe.ops.norm import batch_norm_backward, batch_norm_forward, batch_norm_inference

logger = logging.getLogger(__name__)


class _Plan(NamedTuple):
    """The non-tensor inputs of :class:`_FusedGPSLayer`."""

    src: Tensor
    dst: Tensor
    scale: float
    layout: GraphLayout
    heads: int
    attn_dropout: float
    norms: tuple[nn.BatchNorm1d, nn.BatchNorm1d, nn.BatchNorm1d]
    pair_slots: tuple | None  # GraphLayout.pair_slots of the pair biases, if any


def batch_norm_train(a: Tensor, b: Tensor | None, norm: nn.BatchNorm1d, weight: Tensor,
                     bias: Tensor, shift: Tensor, extra: Tensor | None = None
                     ) -> tuple[Tensor, Tensor, Tensor]:
    r"""A training-mode batch norm in one compiled pass
    (:func:`graphpe.ops.norm.batch_norm_forward`): with :math:`z = a + \mathrm{shift}\, [+\,
    b]`, returns ``(out, xhat, invstd)``, ``out`` :math:`= \gamma \hat z + \beta\, [+\,
    \mathrm{extra}]` with :math:`\hat z` ``= xhat`` the batch-standardized :math:`z` and
    ``invstd`` :math:`= 1/\sqrt{\mathrm{Var}[z] + \epsilon}` per channel (the backward's
    inputs). ``norm``'s running statistics (float32 buffers) and ``num_batches_tracked`` are
    updated in place, with its momentum. ``weight`` and ``bias`` are :math:`\gamma, \beta`;
    ``b`` (a residual) and ``extra`` (added after the norm) may be None."""
    norm.num_batches_tracked.add_(1)
    out, xhat, invstd = batch_norm_forward(
        a.numpy(), None if b is None else b.numpy(), weight.detach().numpy(),
        bias.detach().numpy(), norm.eps, norm.momentum, norm.running_mean.numpy(),
        norm.running_var.numpy(), None if extra is None else extra.numpy(), shift.detach().numpy())
    return torch.from_numpy(out), torch.from_numpy(xhat), torch.from_numpy(invstd)


def _linear_relu(x: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
    """``ReLU(x W^T + b)``: the product, then the bias and ReLU in one pass over it."""
    out = torch.mm(x, weight.t())
    bias_relu_(out.numpy(), bias.detach().numpy())
    return out


def relu_grad_(grad: Tensor, out: Tensor) -> Tensor:
    """The ReLU's backward: ``grad`` masked in place to where the ReLU's output ``out`` is
    positive; returns its column sums (the gradient of the bias inside the ReLU)."""
    return torch.from_numpy(relu_backward_(grad.numpy(), out.numpy()))


def weight_grad(a: Tensor, b: Tensor) -> Tensor:
    """``a^T b``: the gradient of a linear map's weight from the gradient ``a`` of its output
    and its input ``b``."""
    return torch.mm(a.t(), b)


class _FusedGPSLayer(torch.autograd.Function):
    """The GPS layer of this module's docstring as one autograd node (inputs: ``x``,
    ``edge_attr``, the attention's pair biases ``[P, heads]`` or None, then the layer's
    parameters in :func:`_fused_parts`' order)."""

    @staticmethod
    def forward(ctx, x, edge_attr, pair_bias, w1, b1, w2, b2, wq, bq, wo, bo, w3, b3, w4, b4,
                g1, beta1, g2, beta2, g3, beta3, plan):
        # detached where numpy reads them (torch's products run untracked in here anyway)
        x, edge_attr = x.detach(), edge_attr.detach()
        pair_bias = None if pair_bias is None else pair_bias.detach()
        gammas, betas, saved = (g1, g2, g3), (beta1, beta2, beta3), {}

        # the linear maps' biases are added by the pass that reads each product (the
        # bias-ReLU epilogue, the norms' residual sum, the attention's bucket gather), so each
        # branch returns its last product and that product's bias
        def mpnn(x: Tensor) -> tuple[Tensor, Tensor]:  # GINE: aggregation and MLP
            saved["agg"] = torch.from_numpy(message.gine_aggregate(
                x.numpy(), edge_attr.numpy(), plan.src.numpy(), plan.dst.numpy(), plan.scale))
            saved["r1"] = _linear_relu(saved["agg"], w1, b1)
            return torch.mm(saved["r1"], w2.t()), b2

        def attention(x: Tensor) -> tuple[Tensor, Tensor]:
            saved["attended"], saved["core"] = attention_core_forward(
                torch.mm(x, wq.t()), pair_bias, plan.layout, plan.heads, plan.attn_dropout,
                plan.pair_slots, qkv_bias=bq)
            return torch.mm(saved["attended"], wo.t()), bo

        def feed_forward(o: Tensor) -> tuple[Tensor, Tensor]:
            saved["o"], saved["r3"] = o, _linear_relu(o, w3, b3)
            return torch.mm(saved["r3"], w4.t()), b4

        def add_norm(i: int, branch: tuple[Tensor, Tensor], residual: Tensor,
                     plus: Tensor | None) -> Tensor:
            out, saved[f"xhat{i}"], saved[f"inv{i}"] = batch_norm_train(
                branch[0], residual, plan.norms[i - 1], gammas[i - 1], betas[i - 1],
                branch[1], extra=plus)
            return out

        out = gps_layer(x, mpnn, attention, feed_forward, add_norm)
        agg, r1, attended, core, o, r3 = (saved[k] for k in ("agg", "r1", "attended", "core",
                                                             "o", "r3"))
        xhat1, inv1, xhat2, inv2, xhat3, inv3 = (saved[k] for k in (
            "xhat1", "inv1", "xhat2", "inv2", "xhat3", "inv3"))
        ctx.save_for_backward(x, edge_attr, w1, w2, wq, wo, w3, w4, g1, g2, g3, agg, r1,
                              xhat1, inv1, attended, xhat2, inv2, o, r3, xhat3, inv3,
                              *core.tensors)
        core.tensors = ()
        ctx.plan, ctx.core = plan, core
        return out

    @staticmethod
    @once_differentiable  # numpy kernels inside: no graph to differentiate again
    def backward(ctx, grad_out):
        (x, edge_attr, w1, w2, wq, wo, w3, w4, g1, g2, g3, agg, r1, xhat1, inv1, attended,
         xhat2, inv2, o, r3, xhat3, inv3, *core_tensors) = ctx.saved_tensors
        plan, core = ctx.plan, ctx.core
        core.tensors = tuple(core_tensors)

        def norm_backward(grad, xhat, invstd, weight):
            return (torch.from_numpy(t) for t in batch_norm_backward(
                grad.numpy(), xhat.numpy(), invstd.numpy(), weight.detach().numpy()))

        # norm 3 and the feed-forward block: o receives the residual and the block's gradient
        # (products accumulate in place into gradients no longer read: d_s3, d_s2)
        d_s3, d_g3, d_beta3, d_b4 = norm_backward(grad_out.contiguous(), xhat3, inv3, g3)
        d_w4 = weight_grad(d_s3, r3)
        d_r3 = torch.mm(d_s3, w4)
        d_b3 = relu_grad_(d_r3, r3)
        d_w3 = weight_grad(d_r3, o)
        d_o = d_s3.addmm_(d_r3, w3)
        # attention branch: norm 2, out projection, core, in projection; x gets the residual
        d_s2, d_g2, d_beta2, d_bo = norm_backward(d_o, xhat2, inv2, g2)
        d_wo = weight_grad(d_s2, attended)
        d_qkv, d_pair = attention_core_backward(core, torch.mm(d_s2, wo))
        d_wq, d_bq = weight_grad(d_qkv, x), d_qkv.sum(0)
        d_x = d_s2.addmm_(d_qkv, wq)
        # MPNN branch: norm 1, GINE's MLP, the aggregation; x gets the residual
        d_s1, d_g1, d_beta1, d_b2 = norm_backward(d_o, xhat1, inv1, g1)
        d_x += d_s1
        d_w2 = weight_grad(d_s1, r1)
        d_r1 = torch.mm(d_s1, w2)
        d_b1 = relu_grad_(d_r1, r1)
        d_w1 = weight_grad(d_r1, agg)
        _, d_edge = message.gine_aggregate_backward(
            x.numpy(), edge_attr.numpy(), plan.src.numpy(), plan.dst.numpy(), plan.scale,
            torch.mm(d_r1, w1).numpy(), grad_x=d_x.numpy())
        return (d_x, torch.from_numpy(d_edge), d_pair, d_w1, d_b1, d_w2, d_b2, d_wq, d_bq,
                d_wo, d_bo, d_w3, d_b3, d_w4, d_b4, d_g1, d_beta1, d_g2, d_beta2, d_g3,
                d_beta3, None)


def fusable_batch_norm(norm: nn.Module | None, training: bool) -> nn.BatchNorm1d | str:
    """The ``BatchNorm1d`` behind a layer's norm (PyG's ``BatchNorm`` wraps one), if it
    normalizes as the fused kernels do: affine, with float32 running statistics, in the
    layer's mode; in training they are updated with a momentum, in evaluation they are what
    the norm applies. Otherwise why not, a sentence (no norm included)."""
    if norm is None:
        return "no norm (norm=None)"
    bn = norm._modules.get("module") if type(norm) is BatchNorm else norm
    if type(bn) is not nn.BatchNorm1d:
        return f"the norm is {type(norm).__name__}, not a BatchNorm1d"
    if bn.training != training:
        return "the norm's training mode differs from the layer's"
    if not bn.affine:
        return "the batch norm has no affine parameters"
    if not bn.track_running_stats or bn.running_mean is None:
        return "the batch norm tracks no running statistics"
    if bn.running_mean.dtype != torch.float32:
        return f"the batch norm's running statistics are {bn.running_mean.dtype}, not float32"
    if training and bn.momentum is None:
        return "the batch norm averages its statistics cumulatively (momentum=None)"
    return bn


def has_hooks(modules: list[nn.Module]) -> bool:
    """Whether any of ``modules`` has a forward or backward hook (or a global one is set): a
    fused layer calls none of its submodules, so their hooks would not run."""
    return bool(_module._global_forward_hooks or _module._global_forward_pre_hooks
                or _module._global_backward_hooks or _module._global_backward_pre_hooks
                or any(m._forward_hooks or m._forward_pre_hooks or m._backward_hooks
                       or m._backward_pre_hooks for m in modules))


def sequence_mismatch(name: str, module: nn.Module | None,
                      types: tuple[type, ...]) -> str | None:
    """Why ``module`` (called ``name``) is not an ``nn.Sequential`` of modules of exactly the
    classes ``types``, a sentence; None where it is."""
    want = " -> ".join(t.__name__ for t in types)
    if type(module) is not nn.Sequential:
        return f"{name} is {type(module).__name__}, not nn.Sequential({want})"
    parts = list(module._modules.values())
    if len(parts) != len(types):
        return f"{name} has {len(parts)} modules, not {len(types)} ({want})"
    for i, (part, kind) in enumerate(zip(parts, types, strict=True)):
        if type(part) is not kind:
            return (f"{name}[{i}] is {type(part).__name__}, not {kind.__name__} (the fused "
                    f"layer computes {name} = {want})")
    return None


def declined(logger: logging.Logger, path: str, reason: str) -> None:
    """Log at DEBUG that the fast path ``path`` declines a call, and why (not while
    ``torch.compile`` traces: the check is then constant)."""
    if not torch.compiler.is_compiling() and logger.isEnabledFor(logging.DEBUG):
        logger.debug("%s declines: %s; the module path runs", path, reason)


def _fused_parts(layer: nn.Module, training: bool) -> tuple[list[Tensor], tuple] | str:
    """The parameters :class:`_FusedGPSLayer` takes (in its order) and the three
    ``BatchNorm1d`` of ``layer``, when its submodules are those the fused layer computes
    (GINE's ``Linear -> ReLU -> Linear``, the FFN's ``Linear -> ReLU -> Dropout(0) -> Linear
    -> Dropout(0)``, batch norms as :func:`fusable_batch_norm`) and none has hooks (they would
    not run); else why not, a sentence. Read through ``_modules`` directly: this runs every
    layer call."""
    mods = layer._modules
    conv, attn, mlp = mods["conv"], mods["attn"], mods["mlp"]
    gine = conv._modules["nn"]
    reason = (sequence_mismatch("conv.nn", gine, (nn.Linear, nn.ReLU, nn.Linear))
              or sequence_mismatch("mlp", mlp, (nn.Linear, nn.ReLU, nn.Dropout, nn.Linear,
                                                nn.Dropout)))
    if reason is not None:
        return reason
    g, f = list(gine._modules.values()), list(mlp._modules.values())
    if f[2].p != 0.0 or f[4].p != 0.0:
        return "the feed-forward block has dropout (the fused layer has none)"
    # (a norm set to None is an attribute, not a submodule)
    wrappers = (mods.get("norm1"), mods.get("norm2"), mods.get("norm3"))
    norms = tuple(fusable_batch_norm(n, training) for n in wrappers)
    for i, norm in enumerate(norms):
        if isinstance(norm, str):
            return f"norm{i + 1}: {norm}"
    out_proj = attn._modules["out_proj"]
    if type(out_proj) is not nn.Linear:
        return f"attn.out_proj is {type(out_proj).__name__}, not Linear"
    if has_hooks([layer, conv, gine, *g, attn, out_proj, mlp, *f, *wrappers, *norms]):
        return "a hook is registered on the layer or a submodule (the fused layer calls none)"
    # the exact types above hold their parameters in _parameters (no parametrization)
    params = [g[0]._parameters["weight"], g[0]._parameters["bias"], g[2]._parameters["weight"],
              g[2]._parameters["bias"], attn._parameters["in_proj_weight"],
              attn._parameters["in_proj_bias"], out_proj._parameters["weight"],
              out_proj._parameters["bias"], f[0]._parameters["weight"],
              f[0]._parameters["bias"], f[3]._parameters["weight"], f[3]._parameters["bias"]]
    for bn in norms:
        params += [bn._parameters["weight"], bn._parameters["bias"]]
    if any(p is None for p in params):
        return "a linear map has no bias, or its weight is parametrized"
    return params, norms


def _kind(module: nn.Module | None) -> str:
    return "None" if module is None else type(module).__name__


def _module_reason(layer: nn.Module) -> str | None:
    """Why the fused layer does not compute ``layer``'s branches, from its settings alone
    (None where it does)."""
    if not layer.fused:
        return "fused is False"
    conv, attn = layer.conv, layer.attn
    if form_of(conv) != "gin":
        return f"conv is {_kind(conv)}, which does not declare GINLayer's form 'gin' (GINE)"
    if not conv.edge_features:
        return "conv is GIN (edge_features=False); the fused layer computes GINE"
    if form_of(attn) != "multihead":
        return (f"attn is {_kind(attn)}, which does not declare MultiheadGraphAttention's "
                "form 'multihead'")
    if layer.dropout != 0.0:
        return f"branch dropout {layer.dropout} (the fused layer has none)"
    return None


def fused_covers(layer: nn.Module) -> bool:
    """Whether this path runs ``layer`` (a :class:`~graphpe.layers.gps.GPSLayer`) in its
    current mode: the layer settings it declares to cover, which the parity tests enumerate.
    ``fused`` on, a conv that declares the form of a
    :class:`~graphpe.layers.conv.GINLayer` (``"gin"``, built with edge features: GINE), an
    attention that declares a :class:`~graphpe.layers.attention.MultiheadGraphAttention`'s
    (``"multihead"``; :class:`~graphpe.layers.common.DeclaredForm`: a subclass that overrides
    ``forward`` declares none), no branch dropout, and the
    submodules :func:`_fused_parts` computes (batch norms with affine parameters and running
    statistics, no hooks). Each call also needs what :func:`may_fuse` reads of its inputs:
    CPU float32 tensors without autocast, training mode or evaluation without autograd."""
    return (_module_reason(layer) is None
            and not isinstance(_fused_parts(layer, layer.training), str))


def _call_reason(layer: nn.Module, x: Tensor, edge_attr: Tensor | None,
                 pair_bias: Tensor | None, edge_weight: Tensor | None) -> str | None:
    """Why :func:`fused_forward` does not run this call, from settings and tensor metadata
    only (so ``torch.compile`` traces it without a graph break); None where it may."""
    reason = _module_reason(layer)
    if reason is not None:
        return reason
    if not (layer.training or not torch.is_grad_enabled()):
        return "evaluation under autograd (it runs in training, or without autograd)"
    if edge_attr is None:
        return "no edge_attr given (GINE reads edge features)"
    if edge_weight is not None:
        return "edge_weight (message gates) given"
    if pair_bias is not None and (pair_bias.dtype != torch.float32
                                  or pair_bias.device.type != "cpu"):
        return "pair_bias is not a CPU float32 tensor"
    if not (x.dtype == edge_attr.dtype == torch.float32 and x.device.type == "cpu"
            and edge_attr.device.type == "cpu"):
        return "x and edge_attr are not CPU float32 tensors"
    if x.dim() != 2 or x.size(0) < 2:
        return "fewer than 2 nodes (training-mode batch norm)"
    # autocast would run the products inside in bfloat16/float16 (the kernels are float32):
    # a mixed-precision step takes the module path
    if torch.is_autocast_enabled("cpu"):
        return "autocast is on (the fused kernels are float32)"
    return None


def may_fuse(layer: nn.Module, x: Tensor, edge_attr: Tensor | None,
             pair_bias: Tensor | None, edge_weight: Tensor | None) -> bool:
    """The conditions of :func:`fused_forward` that read only settings and tensor metadata
    (so ``torch.compile`` traces them without a graph break): a CPU float32 layer call of the
    fused kind, in training or in evaluation without autograd. Where one fails, the reason is
    logged at DEBUG (this module's logger)."""
    reason = _call_reason(layer, x, edge_attr, pair_bias, edge_weight)
    if reason is not None:
        declined(logger, "the fused GPS layer", reason)
    return reason is None


def fused_forward(layer: nn.Module, x: Tensor, edge_index: Tensor, edge_attr: Tensor | None,
                  layout: GraphLayout | None, pair_bias: Tensor | None,
                  edge_weight: Tensor | None, pair_index: Tensor | None = None
                  ) -> Tensor | None:
    """``layer``'s output (a :class:`~graphpe.layers.gps.GPSLayer`) through
    :class:`_FusedGPSLayer` when the layer and these inputs are those of this module's
    docstring and every condition there holds; else None (take the module path; the reason
    logged at DEBUG)."""
    if not may_fuse(layer, x, edge_attr, pair_bias, edge_weight):
        return None
    parts = _fused_parts(layer, layer.training)
    conv = layer._modules["conv"]
    if isinstance(parts, str):
        reason = parts
    elif layout is None:
        reason = "no attention layout"
    elif not (use_host_kernels(x, edge_attr) and conv.takes_kernels(x, edge_index, edge_attr)):
        reason = ("GINE's compiled aggregation does not take these inputs (a learned eps, "
                  "or edge_index not int64)")
    else:
        reason = None
    if reason is not None:
        declined(logger, "the fused GPS layer", reason)
        return None
    # every layer of a model gets the batch's edge_index and layout: checked once per batch
    cached = layout._bias_cache.get("edges")
    if cached is not None and cached[0] is edge_index and cached[1] == x.size(0):
        edges = cached[2]
    else:
        edges = checked_edges(edge_index, x.size(0))
        layout._bias_cache["edges"] = (edge_index, x.size(0), edges)
    params, norms = parts
    attn = layer._modules["attn"]
    slots = attn.bias_slots(layout, pair_bias, pair_index)
    plan = _Plan(*edges, conv.scale, layout, attn.heads,
                 attn.dropout if attn.training else 0.0, norms, slots)
    if not layer.training:
        return fused_inference(x.contiguous(), edge_attr.contiguous(), params, plan,
                               pair_bias)
    return _FusedGPSLayer.apply(x.contiguous(), edge_attr.contiguous(), pair_bias, *params,
                                plan)


def fused_inference(x: Tensor, edge_attr: Tensor, params: list[Tensor], plan: _Plan,
                    pair_bias: Tensor | None = None) -> Tensor:
    """The layer of this module's docstring in evaluation (batch norms from their running
    statistics, no dropout), without autograd: the forward of :class:`_FusedGPSLayer` with
    each norm one affine pass (:func:`~graphpe.ops.norm.batch_norm_inference`) written over
    the product it normalizes."""
    (w1, b1, w2, b2, wq, bq, wo, bo, w3, b3, w4, b4,
     g1, beta1, g2, beta2, g3, beta3) = (p.detach() for p in params)
    x, edge_attr = x.detach(), edge_attr.detach()  # (numpy reads them; no graph is recorded)

    gammas, betas = (g1, g2, g3), (beta1, beta2, beta3)

    def mpnn(x: Tensor) -> tuple[Tensor, Tensor]:
        agg = torch.from_numpy(message.gine_aggregate(
            x.numpy(), edge_attr.numpy(), plan.src.numpy(), plan.dst.numpy(), plan.scale))
        return torch.mm(_linear_relu(agg, w1, b1), w2.t()), b2

    def attention(x: Tensor) -> tuple[Tensor, Tensor]:
        attended, _ = attention_core_forward(
            torch.mm(x, wq.t()), None if pair_bias is None else pair_bias.detach(),
            plan.layout, plan.heads, 0.0, plan.pair_slots, qkv_bias=bq)
        return torch.mm(attended, wo.t()), bo

    def feed_forward(o: Tensor) -> tuple[Tensor, Tensor]:
        return torch.mm(_linear_relu(o, w3, b3), w4.t()), b4

    def add_norm(i: int, branch: tuple[Tensor, Tensor], residual: Tensor,
                 plus: Tensor | None) -> Tensor:
        # one affine pass over the product: the norm from its running statistics
        product, shift = branch
        bn, out = plan.norms[i - 1], product.numpy()
        batch_norm_inference(out, residual.numpy(), gammas[i - 1].numpy(),
                             betas[i - 1].numpy(), bn.eps, bn.running_mean.numpy(),
                             bn.running_var.numpy(), None if plus is None else plus.numpy(),
                             shift.numpy(), out=out)
        return product

    return gps_layer(x, mpnn, attention, feed_forward, add_norm)
