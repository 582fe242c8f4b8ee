r"""The compositions of graphpe's layers, each written once for every form that computes it.

A layer has a readable module form (:class:`~graphpe.layers.gps.GPSLayer`, the ``GINE``
model's layers) and accelerated forms that compute the same maths from other kernels: one
autograd node with a written-out backward and an inference function on the CPU
(:mod:`graphpe.layers.fused`, :mod:`graphpe.layers.fused_gine`), and fixed shapes for CUDA graphs
(:class:`~graphpe.nn.static.StaticGPS`). Each form supplies its pieces (the branches, the
norm, the activation) and calls the composition here, so the order of branches, residuals and
norms is defined in one place; the parity tests check every form against the module form.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def gps_layer(
    x: T,
    mpnn: Callable[[T], Any] | None,
    attention: Callable[[T], Any] | None,
    feed_forward: Callable[[T], Any],
    add_norm: Callable[[int, Any, T | None, T | None], T],
    mpnn_residual: bool = True,
    attention_residual: bool = True,
) -> T:
    r"""The GPS layer (Rampasek et al., NeurIPS 2022):

    .. math::
        h^M = N_1(x + M(x)), \quad h^A = N_2(x + A(x)), \quad o = h^M + h^A, \quad
        \mathrm{out} = N_3(o + F(o)).

    Args:
        x: the node states.
        mpnn: :math:`M`, the message-passing branch before its residual (its dropout
            included), or None for a layer without one.
        attention: :math:`A`, the attention branch before its residual (its dropout
            included), or None.
        feed_forward: :math:`F`, the feed-forward block.
        add_norm: ``add_norm(i, h, residual, plus)`` is :math:`N_i(h + \mathrm{residual}) +
            \mathrm{plus}` (no residual where it is None, nothing added where ``plus`` is
            None). A branch's output ``h`` is passed to it as the branch returned it, so a
            form may return, say, a product and the bias its norm adds.
        mpnn_residual: False for an MPNN that adds its own residual (GatedGCN, as GraphGPS's
            ``CustomGatedGCN``): :math:`h^M = N_1(M(x))`.
        attention_residual: the same for the attention: :math:`h^A = N_2(A(x))`.
    """
    o = None
    if mpnn is not None:
        o = add_norm(1, mpnn(x), x if mpnn_residual else None, None)
    if attention is not None:
        o = add_norm(2, attention(x), x if attention_residual else None, o)
    if o is None:
        raise ValueError("a GPS layer needs an MPNN, an attention, or both")
    return add_norm(3, feed_forward(o), o, None)


def gine_layer(
    x: T,
    conv: Callable[[T], Any],
    norm: Callable[[Any], Any],
    activate_add: Callable[[Any, T], T],
) -> T:
    r"""A layer of the ``GINE`` model (Hu et al., ICLR 2020):
    :math:`\mathrm{out} = x + \mathrm{Dropout}(\mathrm{ReLU}(N(\mathrm{GINE}(x))))`.

    Args:
        x: the node states.
        conv: the GINE (or GIN) convolution.
        norm: :math:`N`.
        activate_add: ``activate_add(v, x)`` is :math:`x + \mathrm{Dropout}(\mathrm{ReLU}(v))`.
    """
    return activate_add(norm(conv(x)), x)
