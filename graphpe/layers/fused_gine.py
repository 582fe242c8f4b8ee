"""A GINE model's layer (:class:`~graphpe.nn.models.GINE`) as one autograd node on the CPU.

Each layer of the ``GINE`` model is

.. math::
    a &= (1 + \\epsilon)\\,x + \\textstyle\\sum_{j \\to i} \\mathrm{ReLU}(x_j + e_{ji}), \\quad
    r = \\mathrm{ReLU}(\\mathrm{BN}_a(a W_1^\\top + b_1)), \\\\
    \\mathrm{out} &= x + \\mathrm{ReLU}(\\mathrm{BN}_b(r W_2^\\top + b_2))

(GINE's MLP ``Linear -> BatchNorm1d -> ReLU -> Linear`` with a learned :math:`\\epsilon`, then
the model's norm, ReLU and residual; without edge features the model is GIN, whose messages are
:math:`x_j`, :func:`graphpe.ops.message.gin_aggregate`). Module by module that is ~12 autograd
nodes and ~25 tensor calls each way. Here forward and backward are written out over the compiled
kernels of :mod:`graphpe.layers.fused` (GINE's aggregation, the batch norms with their running
statistics, the ReLU epilogues), with the products as plain ``mm``: the biases are shifts the
batch norms absorb, and :math:`\\epsilon`'s gradient is :math:`\\sum_{i,c} \\partial a_{ic}\\,
x_{ic}`. The tests compare outputs, every gradient (``eps`` included) and the running
statistics with the module path. In evaluation without autograd (``torch.no_grad()``,
``inference_mode()``) the same kernels run as one function, each batch norm an affine pass from
its running statistics (:func:`fused_gine_inference`).

It runs where it computes exactly that layer: training mode (or evaluation without autograd),
CPU float32 without autocast, no PEG gate, no dropout in training, the MLP and norms of those
exact types (batch norms with affine parameters and running statistics, updated with a momentum
in training), no hooks, not under ``torch.compile``. Everything else, and a model with ``fused
= False``, takes the module path; this module's logger says why at DEBUG.
"""

from __future__ import annotations

import logging
from typing import NamedTuple

import torch
from torch import Tensor, nn
from torch.autograd.function import once_differentiable

from graphpe.layers.common import form_of
from graphpe.layers.conv import checked_edges
from graphpe.layers.fused import (
    batch_norm_train,
    declined,
    fusable_batch_norm,
    has_hooks,
    relu_grad_,
    sequence_mismatch,
    weight_grad,
)
from graphpe.layers.layer_maths import gine_layer
from graphpe.ops import message
from graphpe.ops.epilogue import bias_relu_, residual_relu
from graphpe.ops.host import use_host_kernels
from graphpe.ops.norm import batch_norm_backward, batch_norm_inference

logger = logging.getLogger(__name__)


class _Plan(NamedTuple):
    """The non-tensor inputs of :class:`_FusedGINELayer`."""

    src: Tensor
    dst: Tensor
    norms: tuple[nn.BatchNorm1d, nn.BatchNorm1d]


def _aggregate(x: Tensor, edge_attr: Tensor | None, plan: _Plan, scale: float) -> Tensor:
    """GINE's ``scale x + sum ReLU(x_j + e_ji)``, or GIN's ``scale x + sum x_j`` without
    edge features."""
    if edge_attr is None:
        return torch.from_numpy(message.gin_aggregate(x.numpy(), plan.src.numpy(),
                                                      plan.dst.numpy(), scale))
    return torch.from_numpy(message.gine_aggregate(
        x.numpy(), edge_attr.numpy(), plan.src.numpy(), plan.dst.numpy(), scale))


class _FusedGINELayer(torch.autograd.Function):
    """The layer of this module's docstring as one autograd node (inputs: ``x``,
    ``edge_attr`` (None for GIN), ``eps``, ``W1, b1``, the inner norm's weight and bias,
    ``W2, b2``, the outer norm's weight and bias, the plan)."""

    @staticmethod
    def forward(ctx, x, edge_attr, eps, w1, b1, g_a, beta_a, w2, b2, g_b, beta_b, plan):
        x = x.detach()
        edge_attr = None if edge_attr is None else edge_attr.detach()
        norm_a, norm_b = plan.norms
        scale, saved = 1.0 + float(eps), {}

        # the products' biases are the norms' shifts (added in their first pass): the
        # convolution returns its last product and that product's bias
        def conv(x: Tensor) -> tuple[Tensor, Tensor]:
            saved["agg"] = _aggregate(x, edge_attr, plan, scale)
            r, saved["xhat_a"], saved["inv_a"] = batch_norm_train(
                torch.mm(saved["agg"], w1.t()), None, norm_a, g_a, beta_a, b1)
            bias_relu_(r.numpy(), torch.zeros(r.size(1), dtype=r.dtype).numpy())
            saved["r"] = r
            return torch.mm(r, w2.t()), b2

        def norm(branch: tuple[Tensor, Tensor]) -> Tensor:
            saved["v"], saved["xhat_b"], saved["inv_b"] = batch_norm_train(
                branch[0], None, norm_b, g_b, beta_b, branch[1])
            return saved["v"]

        out = gine_layer(x, conv, norm, _relu_add)
        agg, r, xhat_a, inv_a, xhat_b, inv_b, v = (saved[k] for k in (
            "agg", "r", "xhat_a", "inv_a", "xhat_b", "inv_b", "v"))
        ctx.save_for_backward(x, w1, w2, g_a, g_b, agg, r, xhat_a, inv_a, xhat_b, inv_b, v)
        ctx.edge_attr = edge_attr  # (not an output: kept as is, None for GIN)
        ctx.plan, ctx.scale = plan, scale
        return out

    @staticmethod
    @once_differentiable  # numpy kernels inside: no graph to differentiate again
    def backward(ctx, grad_out):
        x, w1, w2, g_a, g_b, agg, r, xhat_a, inv_a, xhat_b, inv_b, v = ctx.saved_tensors
        plan, edge_attr = ctx.plan, ctx.edge_attr
        grad_out = grad_out.contiguous()

        def norm_backward(grad, xhat, invstd, weight):
            return (torch.from_numpy(t) for t in batch_norm_backward(
                grad.numpy(), xhat.numpy(), invstd.numpy(), weight.detach().numpy()))

        # out = x + ReLU(v): v's gradient is the output's where v > 0; x gets it whole
        d_v = grad_out.clone()
        relu_grad_(d_v, v)
        d_z2, d_g_b, d_beta_b, d_b2 = norm_backward(d_v, xhat_b, inv_b, g_b)
        d_w2 = weight_grad(d_z2, r)
        d_r = torch.mm(d_z2, w2)
        relu_grad_(d_r, r)
        d_z1, d_g_a, d_beta_a, d_b1 = norm_backward(d_r, xhat_a, inv_a, g_a)
        d_w1 = weight_grad(d_z1, agg)
        d_agg = torch.mm(d_z1, w1)
        d_eps = (d_agg * x).sum().view(1)  # a = (1 + eps) x + messages
        d_x = grad_out.clone()
        d_edge = None
        if edge_attr is None:
            message.gin_aggregate_backward(plan.src.numpy(), plan.dst.numpy(), ctx.scale,
                                           d_agg.numpy(), grad_x=d_x.numpy())
        else:
            _, d_edge = message.gine_aggregate_backward(
                x.numpy(), edge_attr.numpy(), plan.src.numpy(), plan.dst.numpy(), ctx.scale,
                d_agg.numpy(), grad_x=d_x.numpy())
            d_edge = torch.from_numpy(d_edge)
        return (d_x, d_edge, d_eps, d_w1, d_b1, d_g_a, d_beta_a, d_w2, d_b2,
                d_g_b, d_beta_b, None)


def _parts(conv: nn.Module, norm: nn.Module,
           training: bool) -> tuple[list[Tensor], tuple] | str:
    """The tensors :class:`_FusedGINELayer` takes after ``x`` and ``edge_attr`` (``eps``,
    then the parameters in its order) and the two ``BatchNorm1d``, when ``conv`` is a
    ``GINLayer`` over ``Linear -> BatchNorm1d -> ReLU -> Linear`` (with biases), ``norm`` a
    ``BatchNorm1d``, both in the mode ``training`` as
    :func:`~graphpe.layers.fused.fusable_batch_norm` requires, and nothing has hooks; else why
    not, a sentence."""
    if form_of(conv) != "gin":
        return f"conv is {type(conv).__name__}, which does not declare GINLayer's form 'gin'"
    if not conv.use_kernels:
        return "conv.use_kernels is False"
    mlp = conv._modules["nn"]
    reason = sequence_mismatch("conv.nn", mlp, (nn.Linear, nn.BatchNorm1d, nn.ReLU, nn.Linear))
    if reason is not None:
        return reason
    m = list(mlp._modules.values())
    norm_a, norm_b = fusable_batch_norm(m[1], training), fusable_batch_norm(norm, training)
    if isinstance(norm_a, str) or isinstance(norm_b, str):
        return f"conv.nn[1]: {norm_a}" if isinstance(norm_a, str) else f"the norm: {norm_b}"
    if has_hooks([conv, mlp, *m, norm]):
        return "a hook is registered on the conv, its MLP or the norm (the fused layer calls none)"
    eps = conv.eps
    params = [m[0]._parameters["weight"], m[0]._parameters["bias"], norm_a.weight,
              norm_a.bias, m[3]._parameters["weight"], m[3]._parameters["bias"], norm_b.weight,
              norm_b.bias]
    if any(p is None for p in params):
        return "a linear map has no bias, or its weight is parametrized"
    if eps.numel() != 1:
        return "eps is not one number"
    return [eps, *params], (norm_a, norm_b)


def _call_reason(x: Tensor, edge_index: Tensor, edge_attr: Tensor | None,
                 edge_weight: Tensor | None, dropout: float, training: bool) -> str | None:
    """Why the fused layer does not take this call, from its settings and the tensors'
    metadata (None where it may)."""
    if training and dropout != 0.0:
        return f"dropout {dropout} in training (the fused layer has none)"
    if not training and torch.is_grad_enabled():
        return "evaluation under autograd (it runs in training, or without autograd)"
    if edge_weight is not None:
        return "edge_weight (PEG's gates) given"
    if x.dtype != torch.float32 or x.dim() != 2 or x.size(0) < 2:
        return "x is not float32 [N >= 2, C]"
    if edge_index.dim() != 2 or edge_index.size(1) == 0 or edge_index.dtype != torch.long:
        return "edge_index is not a non-empty int64 [2, E]"
    if edge_attr is not None and edge_attr.shape != (edge_index.size(1), x.size(1)):
        return "edge_attr is not [E, C]"
    if torch.is_autocast_enabled("cpu"):
        return "autocast is on (the fused kernels are float32)"
    if not use_host_kernels(x, *(() if edge_attr is None else (edge_attr,))):
        return "the tensors are not CPU tensors of one dtype (or torch.compile is tracing)"
    return None


def fused_gine_layer(conv: nn.Module, norm: nn.Module, x: Tensor, edge_index: Tensor,
                     edge_attr: Tensor | None, dropout: float, training: bool,
                     cache: dict, edge_weight: Tensor | None = None) -> Tensor | None:
    """A ``GINE`` model layer's output ``x + ReLU(norm(conv(x)))`` through
    :class:`_FusedGINELayer` when every condition of this module's docstring holds, else None
    (take the module path; the reason logged at DEBUG by this module's logger). ``cache`` (one
    dict per forward) keeps the checked edges for the model's other layers."""
    reason = _call_reason(x, edge_index, edge_attr, edge_weight, dropout, training)
    parts = _parts(conv, norm, training) if reason is None else reason
    if isinstance(parts, str):
        declined(logger, "the fused GINE layer", parts)
        return None
    edges = cache.get("edges")
    if edges is None:
        edges = cache["edges"] = checked_edges(edge_index, x.size(0))
    tensors, norms = parts
    plan = _Plan(*edges, norms)
    edge_attr = None if edge_attr is None else edge_attr.contiguous()
    if not training:
        return fused_gine_inference(x.contiguous(), edge_attr, tensors, plan)
    return _FusedGINELayer.apply(x.contiguous(), edge_attr, *tensors, plan)


def fused_gine_inference(x: Tensor, edge_attr: Tensor | None, tensors: list[Tensor],
                         plan: _Plan) -> Tensor:
    """The layer of this module's docstring in evaluation (batch norms from their running
    statistics), without autograd: the forward of :class:`_FusedGINELayer` with each norm
    one affine pass (:func:`~graphpe.ops.norm.batch_norm_inference`) over its product."""
    eps, w1, b1, g_a, beta_a, w2, b2, g_b, beta_b = (t.detach() for t in tensors)
    x = x.detach()
    edge_attr = None if edge_attr is None else edge_attr.detach()

    def affine_norm(product: Tensor, bn: nn.BatchNorm1d, weight: Tensor, bias: Tensor,
                    shift: Tensor) -> Tensor:
        # one pass over the product: the norm from its running statistics
        out = product.numpy()
        batch_norm_inference(out, None, weight.numpy(), bias.numpy(), bn.eps,
                             bn.running_mean.numpy(), bn.running_var.numpy(), None,
                             shift.numpy(), out=out)
        return product

    norm_a, norm_b = plan.norms

    def conv(x: Tensor) -> tuple[Tensor, Tensor]:
        agg = _aggregate(x, edge_attr, plan, 1.0 + float(eps))
        r = affine_norm(torch.mm(agg, w1.t()), norm_a, g_a, beta_a, b1)
        bias_relu_(r.numpy(), torch.zeros(r.size(1), dtype=r.dtype).numpy())
        return torch.mm(r, w2.t()), b2

    return gine_layer(x, conv, lambda branch: affine_norm(branch[0], norm_b, g_b, beta_b,
                                                          branch[1]), _relu_add)


def _relu_add(v: Tensor, x: Tensor) -> Tensor:
    """``x + ReLU(v)`` in one pass (no dropout: the fused layer runs without it)."""
    return torch.from_numpy(residual_relu(v.numpy(), x.numpy()))
