"""A GPS layer's training step as one autograd node on the CPU.

:class:`~graphpe.nn.models.GPSLayer` with GINE, multi-head attention and batch norms, module
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
autograd), CPU float32, ``mpnn='gine'`` through the compiled aggregation, ``multihead``
attention (pair biases included, float32), no branch dropout, batch norms with affine
parameters and running statistics (momentum set), no hooks on the layer's submodules, and not
under ``torch.compile``. Everything else, and any layer with ``fused = False``, takes the
module path.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor, nn
from torch.autograd.function import once_differentiable
from torch.nn.modules import module as _module
from torch_geometric.nn.norm import BatchNorm

from graphpe.layers.attention import (
    GraphLayout,
    MultiheadGraphAttention,
    attention_core_backward,
    attention_core_forward,
)
from graphpe.layers.conv import checked_edges
from graphpe.layers.layer_maths import gps_layer
from graphpe.ops import message
from graphpe.ops.epilogue import bias_relu_, relu_backward_
from graphpe.ops.host import use_host_kernels
from graphpe.ops.norm import batch_norm_backward, batch_norm_forward, batch_norm_inference


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


def fusable_batch_norm(norm: nn.Module | None, training: bool) -> nn.BatchNorm1d | None:
    """The ``BatchNorm1d`` behind a GPS layer's norm (PyG's ``BatchNorm`` wraps one), if it
    normalizes as the fused kernels do: affine, with float32 running statistics, in the
    layer's mode; in training they are updated with a momentum, in evaluation they are what
    the norm applies. None for no norm (``norm=None``: not the fused layer)."""
    if norm is None:
        return None
    bn = norm._modules.get("module") if type(norm) is BatchNorm else norm
    if (type(bn) is not nn.BatchNorm1d or bn.training != training or not bn.affine
            or not bn.track_running_stats or bn.running_mean is None
            or bn.running_mean.dtype != torch.float32
            or (training and bn.momentum is None)):
        return None
    return bn


def has_hooks(modules: list[nn.Module]) -> bool:
    """Whether any of ``modules`` has a forward or backward hook (or a global one is set): a
    fused layer calls none of its submodules, so their hooks would not run."""
    return bool(_module._global_forward_hooks or _module._global_forward_pre_hooks
                or _module._global_backward_hooks or _module._global_backward_pre_hooks
                or any(m._forward_hooks or m._forward_pre_hooks or m._backward_hooks
                       or m._backward_pre_hooks for m in modules))


def _fused_parts(layer: nn.Module, training: bool) -> tuple[list[Tensor], tuple] | None:
    """The parameters :class:`_FusedGPSLayer` takes (in its order) and the three
    ``BatchNorm1d`` of ``layer``, when its submodules are those the fused layer computes
    (GINE's ``Linear -> ReLU -> Linear``, the FFN's ``Linear -> ReLU -> Dropout(0) -> Linear
    -> Dropout(0)``, batch norms as :func:`fusable_batch_norm`) and none has hooks (they would
    not run); else None. Read through ``_modules`` directly: this runs every layer call."""
    mods = layer._modules
    conv, attn, mlp = mods["conv"], mods["attn"], mods["mlp"]
    gine = conv._modules["nn"]
    if type(gine) is not nn.Sequential or type(mlp) is not nn.Sequential:
        return None
    g, f = list(gine._modules.values()), list(mlp._modules.values())
    if not (len(g) == 3 and type(g[0]) is nn.Linear and type(g[1]) is nn.ReLU
            and type(g[2]) is nn.Linear and len(f) == 5 and type(f[0]) is nn.Linear
            and type(f[1]) is nn.ReLU and type(f[2]) is nn.Dropout and f[2].p == 0.0
            and type(f[3]) is nn.Linear and type(f[4]) is nn.Dropout and f[4].p == 0.0):
        return None
    # (a norm set to None is an attribute, not a submodule)
    wrappers = (mods.get("norm1"), mods.get("norm2"), mods.get("norm3"))
    norms = tuple(fusable_batch_norm(n, training) for n in wrappers)
    if None in norms:
        return None
    out_proj = attn._modules["out_proj"]
    if (type(attn) is not MultiheadGraphAttention or type(out_proj) is not nn.Linear
            or has_hooks([layer, conv, gine, *g, attn, out_proj, mlp, *f, *wrappers, *norms])):
        return None
    # the exact types above hold their parameters in _parameters (no parametrization)
    params = [g[0]._parameters["weight"], g[0]._parameters["bias"], g[2]._parameters["weight"],
              g[2]._parameters["bias"], attn._parameters["in_proj_weight"],
              attn._parameters["in_proj_bias"], out_proj._parameters["weight"],
              out_proj._parameters["bias"], f[0]._parameters["weight"],
              f[0]._parameters["bias"], f[3]._parameters["weight"], f[3]._parameters["bias"]]
    for bn in norms:
        params += [bn._parameters["weight"], bn._parameters["bias"]]
    if any(p is None for p in params):  # a linear map built without its bias
        return None
    return params, norms


def fused_covers(layer: nn.Module) -> bool:
    """Whether this path runs ``layer`` (a :class:`~graphpe.nn.models.GPSLayer`) in its
    current mode: the layer settings it declares to cover, which the parity tests enumerate.
    ``fused`` on, ``mpnn='gine'``, ``attention='multihead'``, no branch dropout, and the
    submodules :func:`_fused_parts` computes (batch norms with affine parameters and running
    statistics, no hooks). Each call also needs what :func:`may_fuse` reads of its inputs:
    CPU float32 tensors without autocast, training mode or evaluation without autograd."""
    return bool(layer.fused and layer.mpnn == "gine" and layer.attention == "multihead"
                and layer.dropout == 0.0 and _fused_parts(layer, layer.training) is not None)


def may_fuse(layer: nn.Module, x: Tensor, edge_attr: Tensor | None,
             pair_bias: Tensor | None, edge_weight: Tensor | None) -> bool:
    """The conditions of :func:`fused_forward` that read only settings and tensor metadata
    (so ``torch.compile`` traces them without a graph break): a CPU float32 layer call of the
    fused kind, in training or in evaluation without autograd."""
    return bool(layer.fused and (layer.training or not torch.is_grad_enabled())
                and layer.mpnn == "gine"
                and layer.attention == "multihead"
                and (pair_bias is None or (pair_bias.dtype == torch.float32
                                           and pair_bias.device.type == "cpu"))
                and edge_weight is None and edge_attr is not None and layer.dropout == 0.0
                and x.dtype == torch.float32 and edge_attr.dtype == torch.float32
                and x.device.type == "cpu" and edge_attr.device.type == "cpu"
                and x.dim() == 2 and x.size(0) >= 2
                # autocast would run the products inside in bfloat16/float16 (the kernels
                # are float32): a mixed-precision step takes the module path
                and not torch.is_autocast_enabled("cpu"))


def fused_forward(layer: nn.Module, x: Tensor, edge_index: Tensor, edge_attr: Tensor | None,
                  layout: GraphLayout | None, pair_bias: Tensor | None,
                  edge_weight: Tensor | None, pair_index: Tensor | None = None
                  ) -> Tensor | None:
    """``layer``'s output (a :class:`~graphpe.nn.models.GPSLayer`) through
    :class:`_FusedGPSLayer` when the layer and these inputs are those of this module's
    docstring and every condition there holds; else None (take the module path)."""
    if not (may_fuse(layer, x, edge_attr, pair_bias, edge_weight) and layout is not None
            and use_host_kernels(x, edge_attr)):
        return None
    parts = _fused_parts(layer, layer.training)
    if parts is None:
        return None
    conv = layer._modules["conv"]
    if not conv.takes_kernels(x, edge_index, edge_attr):
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
