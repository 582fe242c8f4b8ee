"""Compiled (numba) epilogues of linear maps on the host CPU: bias and ReLU forward, ReLU
backward with the bias gradient, in place; and a residual block's ``x + ReLU(v)``.

The product runs as ``torch.mm`` and one loop over its output adds the bias and applies the
ReLU (what ``torch.addmm(bias, a, W^T)`` followed by ``relu`` computes); the backward's loop
masks the gradient in place and sums its columns (the bias gradient). The inner loops run
along the contiguous channels. Used by the fused GPS and GINE layers
(:mod:`graphpe.layers.fused`, :mod:`graphpe.layers.fused_gine`).

Layouts: ``[N, C]`` C-contiguous float32 or float64 arrays, ``bias [C]`` of the same dtype.
"""

from __future__ import annotations

import numba
import numpy as np

from graphpe.ops.host import host_empty

# no reassociation: the column sums keep row order, as a plain loop over the rows
FASTMATH = {"arcp", "nsz"}


@numba.njit(cache=True, nogil=True, fastmath=FASTMATH)
def _bias_relu(x, bias):  # pragma: no cover - compiled
    zero = x.dtype.type(0.0)
    for i in range(x.shape[0]):
        for c in range(x.shape[1]):
            x[i, c] = max(x[i, c] + bias[c], zero)


@numba.njit(cache=True, nogil=True, fastmath=FASTMATH)
def _relu_backward(grad, out, grad_bias):  # pragma: no cover - compiled
    zero = grad.dtype.type(0.0)
    channels = grad.shape[1]
    total = np.zeros(channels, dtype=grad.dtype)
    for i in range(grad.shape[0]):
        for c in range(channels):
            g = grad[i, c] if out[i, c] > zero else zero
            grad[i, c] = g
            total[c] += g
    for c in range(channels):
        grad_bias[c] = total[c]


@numba.njit(cache=True, nogil=True, fastmath=FASTMATH)
def _residual_relu(v, x, out):  # pragma: no cover - compiled
    zero = v.dtype.type(0.0)
    for i in range(v.shape[0]):
        for c in range(v.shape[1]):
            out[i, c] = x[i, c] + max(v[i, c], zero)


def _check(x: np.ndarray, other: np.ndarray, name: str) -> None:
    if x.ndim != 2 or not x.flags.c_contiguous or not x.flags.writeable:
        raise ValueError(f"expected a writeable C-contiguous [N, C] array, got shape {x.shape}")
    if other.dtype != x.dtype:
        raise ValueError(f"{name} must have the dtype of x ({x.dtype}), got {other.dtype}")


def bias_relu_(x: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """``x = ReLU(x + bias)`` in place (``x [N, C]``, ``bias [C]``); returns ``x``."""
    _check(x, bias, "bias")
    if bias.shape != (x.shape[1],):
        raise ValueError(f"bias must be [{x.shape[1]}], got {bias.shape}")
    _bias_relu(x, bias)
    return x


def residual_relu(v: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``x + ReLU(v)`` (``[N, C]`` each; a new array): a residual block's output. Its
    gradient with respect to ``v`` is :func:`relu_backward_` with ``v`` as the mask (``v > 0``
    where ``ReLU(v) > 0``)."""
    if v.ndim != 2 or x.shape != v.shape or x.dtype != v.dtype:
        raise ValueError(f"v and x must be [N, C] arrays of one shape and dtype, got "
                         f"{v.shape} {v.dtype} and {x.shape} {x.dtype}")
    out = host_empty(v.shape, v.dtype)
    _residual_relu(v, x, out)
    return out


def relu_backward_(grad: np.ndarray, out: np.ndarray) -> np.ndarray:
    """The gradient through ``out = ReLU(z)`` in place: ``grad`` becomes ``grad * (out > 0)``
    (``[N, C]``, as ``threshold_backward(grad, out, 0)``). Returns its column sums ``[C]``, the
    gradient of the bias inside the ReLU (a new array)."""
    _check(grad, out, "out")
    if out.shape != grad.shape:
        raise ValueError(f"out must be {grad.shape}, got {out.shape}")
    grad_bias = host_empty((grad.shape[1],), grad.dtype)
    _relu_backward(grad, out, grad_bias)
    return grad_bias
