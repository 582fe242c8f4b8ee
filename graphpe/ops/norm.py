"""Compiled (numba) batch normalization over node rows on the host CPU, forward and backward.

In a GPS layer each batch norm follows a residual sum, ``BN(a + b)``. The forward is three
loops over the rows (sum and mean, variance about the mean, normalize) that also form the
residual sum, add an optional second term to the output and update the running statistics; the
backward is two loops. The inner loops run along the contiguous channels. In evaluation the
norm is a per-channel affine map from the running statistics (:func:`batch_norm_inference`):
one loop that forms the residual sum and maps it.

Training-mode batch norm of :class:`torch.nn.BatchNorm1d` on ``[N, C]``: the statistics are
the batch mean and the biased variance (two passes, float64 accumulators), the running
variance is updated with the unbiased one, ``running = (1 - momentum) running + momentum
batch``. Layouts: ``[N, C]`` C-contiguous float32 or float64 arrays, per-channel vectors
``[C]``.
"""

from __future__ import annotations

import numba
import numpy as np

from graphpe.ops.host import host_empty

FASTMATH = {"arcp", "nsz", "contract"}


@numba.njit(cache=True, nogil=True, fastmath=FASTMATH)
def _batch_norm_forward(a, shift, b, extra, weight, bias, eps, momentum, running_mean,
                        running_var, out, xhat, invstd):  # pragma: no cover - compiled
    rows, channels = a.shape
    total = np.zeros(channels, dtype=a.dtype)
    if b.shape[0] == rows:
        for i in range(rows):
            for c in range(channels):
                s = (a[i, c] + shift[c]) + b[i, c]
                xhat[i, c] = s
                total[c] += s
    else:  # no residual term
        for i in range(rows):
            for c in range(channels):
                s = a[i, c] + shift[c]
                xhat[i, c] = s
                total[c] += s
    mean = total.astype(np.float64) / rows
    mean_t = mean.astype(a.dtype)
    sq_t = np.zeros(channels, dtype=a.dtype)
    for i in range(rows):
        for c in range(channels):
            d = xhat[i, c] - mean_t[c]
            sq_t[c] += d * d
    sq = sq_t.astype(np.float64)
    var = sq / rows
    inv = 1.0 / np.sqrt(var + eps)
    inv_t = inv.astype(a.dtype)
    has_extra = extra.shape[0] == rows
    for i in range(rows):
        for c in range(channels):
            h = (xhat[i, c] - mean_t[c]) * inv_t[c]
            xhat[i, c] = h
            out[i, c] = h * weight[c] + bias[c]
        if has_extra:
            for c in range(channels):
                out[i, c] += extra[i, c]
    for c in range(channels):
        invstd[c] = inv_t[c]
    if momentum >= 0.0:
        unbiased = sq / max(rows - 1, 1)
        for c in range(channels):
            running_mean[c] = (1.0 - momentum) * running_mean[c] + momentum * mean[c]
            running_var[c] = (1.0 - momentum) * running_var[c] + momentum * unbiased[c]


@numba.njit(cache=True, nogil=True, fastmath=FASTMATH)
def _batch_norm_backward(grad_out, xhat, invstd, weight, grad_in, grad_weight, grad_bias,
                         grad_in_sum):  # pragma: no cover - compiled
    rows, channels = grad_out.shape
    sum_g = np.zeros(channels, dtype=grad_out.dtype)
    sum_gx = np.zeros(channels, dtype=grad_out.dtype)
    for i in range(rows):
        for c in range(channels):
            g = grad_out[i, c]
            sum_g[c] += g
            sum_gx[c] += g * xhat[i, c]
    scale = (weight * invstd).astype(grad_out.dtype)
    mean_g = sum_g / grad_out.dtype.type(rows)
    mean_gx = sum_gx / grad_out.dtype.type(rows)
    total = np.zeros(channels, dtype=grad_out.dtype)
    for i in range(rows):
        for c in range(channels):
            gi = scale[c] * (grad_out[i, c] - mean_g[c] - xhat[i, c] * mean_gx[c])
            grad_in[i, c] = gi
            total[c] += gi
    for c in range(channels):
        grad_weight[c] = sum_gx[c]
        grad_bias[c] = sum_g[c]
        grad_in_sum[c] = total[c]


@numba.njit(cache=True, nogil=True, fastmath=FASTMATH)
def _batch_norm_inference(a, shift, b, extra, weight, bias, eps, running_mean, running_var,
                          out):  # pragma: no cover - compiled
    rows, channels = a.shape
    # torch's evaluation-mode batch_norm on the CPU: alpha = weight / sqrt(var + eps) and
    # beta = bias - mean * alpha (in float64 here), then out = s * alpha + beta
    alpha = np.empty(channels, dtype=a.dtype)
    beta = np.empty(channels, dtype=a.dtype)
    for c in range(channels):
        scale = weight[c] / np.sqrt(np.float64(running_var[c]) + eps)
        alpha[c] = scale
        beta[c] = bias[c] - running_mean[c] * scale
    has_b, has_extra = b.shape[0] == rows, extra.shape[0] == rows
    for i in range(rows):
        if has_b:
            for c in range(channels):
                out[i, c] = ((a[i, c] + shift[c]) + b[i, c]) * alpha[c] + beta[c]
        else:
            for c in range(channels):
                out[i, c] = (a[i, c] + shift[c]) * alpha[c] + beta[c]
        if has_extra:
            for c in range(channels):
                out[i, c] += extra[i, c]


def batch_norm_inference(
    a: np.ndarray,
    b: np.ndarray | None,
    weight: np.ndarray,
    bias: np.ndarray,
    eps: float,
    running_mean: np.ndarray,
    running_var: np.ndarray,
    extra: np.ndarray | None = None,
    shift: np.ndarray | None = None,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Evaluation-mode batch norm of the residual sum ``s = (a + shift) + b`` (``[N, C]``;
    ``b`` None: no residual) from the running statistics: ``out = (s - running_mean) /
    sqrt(running_var + eps) * weight + bias (+ extra)``. ``out`` may be ``a`` itself (each
    entry is read before it is written); a new array by default."""
    rows, channels = a.shape
    dtype = a.dtype
    if out is None:
        out = host_empty((rows, channels), dtype)
    if shift is None:
        shift = np.zeros(channels, dtype)
    none = np.empty((0, channels), dtype)
    _batch_norm_inference(a, shift, none if b is None else b, none if extra is None else extra,
                          weight, bias, float(eps), running_mean, running_var, out)
    return out


def batch_norm_forward(
    a: np.ndarray,
    b: np.ndarray | None,
    weight: np.ndarray,
    bias: np.ndarray,
    eps: float,
    momentum: float | None = None,
    running_mean: np.ndarray | None = None,
    running_var: np.ndarray | None = None,
    extra: np.ndarray | None = None,
    shift: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Training-mode batch norm of the residual sum ``s = a + b`` (``[N, C]``, N >= 2; ``b``
    None: no residual, ``s = a``):
    ``out = (s - mean) * invstd * weight + bias (+ extra)``; with ``shift [C]`` (the bias of
    a linear map whose product is ``a``), ``s = (a + shift) + b``. Returns ``out`` (new),
    ``xhat`` (the normalized sum, new; the backward's input) and ``invstd [C]``. With
    ``momentum``, ``running_mean`` and ``running_var`` are updated in place."""
    rows, channels = a.shape
    if rows < 2:
        raise ValueError(f"training-mode batch norm needs at least 2 rows, got {rows}")
    dtype = a.dtype
    out = host_empty((rows, channels), dtype)
    xhat = host_empty((rows, channels), dtype)
    invstd = host_empty((channels,), dtype)
    if momentum is None:
        running_mean = running_var = np.empty(0, dtype=np.float64)
    if shift is None:
        shift = np.zeros(channels, dtype)
    none = np.empty((0, channels), dtype)
    _batch_norm_forward(a, shift, none if b is None else b, none if extra is None else extra,
                        weight, bias, float(eps), -1.0 if momentum is None else float(momentum),
                        running_mean, running_var, out, xhat, invstd)
    return out, xhat, invstd


def batch_norm_backward(
    grad_out: np.ndarray, xhat: np.ndarray, invstd: np.ndarray, weight: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The gradients of :func:`batch_norm_forward` with respect to the sum ``a + b`` (so to
    each of ``a`` and ``b``; ``[N, C]``), ``weight`` and ``bias``, and the column sums of the
    first (the bias gradient of a linear map feeding ``a``: zero up to rounding, as the norm
    removes any shift, but computed rather than assumed)."""
    dtype = grad_out.dtype
    channels = grad_out.shape[1]
    grad_in = host_empty(grad_out.shape, dtype)
    grad_weight, grad_bias, grad_in_sum = (host_empty((channels,), dtype) for _ in range(3))
    _batch_norm_backward(grad_out, xhat, invstd, weight, grad_in, grad_weight, grad_bias,
                         grad_in_sum)
    return grad_in, grad_weight, grad_bias, grad_in_sum
