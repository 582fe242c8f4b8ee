"""Compiled (numba) GINE and GIN aggregation on the host CPU, forward and backward.

GINE's input to its MLP, :math:`s\\,x_i + \\sum_{j \\to i} \\mathrm{ReLU}(x_j + e_{ji})` with
:math:`s = 1 + \\epsilon`, is five or six tensor operations in torch (gather, add, ReLU,
zero-fill, ``index_add``, scale and add) and as many in its backward, each a full pass over
``[E, C]`` or ``[N, C]`` rows; here each direction is one loop over the edges. The backward
recomputes the ReLU's sign from ``x`` and ``e`` rather than keeping an ``[E, C]`` mask. The
torch formulation in :class:`graphpe.layers.conv.GINLayer` is the reference (the tests compare
values and gradients) and the path on GPUs.
GIN's (no edge features), :math:`s\\,x_i + \\sum_{j \\to i} x_j`, is the same loop without
the edge term and the ReLU (:func:`gin_aggregate`).

GatedGCN's gated mean (:func:`gated_aggregate`, :class:`graphpe.layers.conv.GatedGCNLayer`) is the
same again with a sigmoid gate per edge and channel: the edge logits, the gates, the gated sum
and the gate sum in one loop over the edges, and the five gradients back in another, against
~15 tensor operations each way.

Layouts: ``x [N, C]`` node rows, ``edge_attr [E, C]``, ``src, dst [E]`` int64 (messages flow
``src -> dst``); every array C-contiguous, ids checked by the caller.
"""

from __future__ import annotations

import numba
import numpy as np

from graphpe.ops.fastmath import sigmoid
from graphpe.ops.host import host_empty

# no reassociation: each row's sum over edges stays in edge order, as torch's index_add; no
# contraction either (torch rounds scale * x before adding it)
FASTMATH = {"arcp", "nsz"}


@numba.njit(cache=True, nogil=True, fastmath=FASTMATH)
def _gine_aggregate(x, edge_attr, src, dst, scale, out):  # pragma: no cover - compiled
    # the torch formulation's order of additions (messages in edge order, then the scaled
    # x), so both paths round alike: per-graph norms downstream amplify any difference
    channels = x.shape[1]
    zero = x.dtype.type(0.0)
    out[:] = zero
    for e in range(src.shape[0]):
        s = src[e]
        d = dst[e]
        for c in range(channels):
            out[d, c] += max(x[s, c] + edge_attr[e, c], zero)
    for i in range(x.shape[0]):
        for c in range(channels):
            out[i, c] += scale * x[i, c]


@numba.njit(cache=True, nogil=True, fastmath=FASTMATH)
def _scaled_into(grad_out, scale, grad_x, accumulate):  # pragma: no cover - compiled
    # the gradient through the aggregation's scale * x term: written, or added to grad_x
    channels = grad_out.shape[1]
    for i in range(grad_out.shape[0]):
        if accumulate:
            for c in range(channels):
                grad_x[i, c] += scale * grad_out[i, c]
        else:
            for c in range(channels):
                grad_x[i, c] = scale * grad_out[i, c]


def _gradient_into(grad_x: np.ndarray | None, shape: tuple[int, ...],
                   dtype: np.dtype) -> tuple[np.ndarray, bool]:
    """The array a backward writes ``x``'s gradient into: ``grad_x`` (checked; the kernel
    adds to it) or a new one; and whether it accumulates."""
    if grad_x is None:
        return host_empty(shape, dtype), False
    if (grad_x.shape != shape or grad_x.dtype != dtype or not grad_x.flags.c_contiguous
            or not grad_x.flags.writeable):
        raise ValueError(f"grad_x must be a writeable C-contiguous {dtype} array of shape "
                         f"{shape}")
    return grad_x, True


@numba.njit(cache=True, nogil=True, fastmath=FASTMATH)
def _gine_aggregate_backward(x, edge_attr, src, dst, scale, grad_out, grad_x, grad_edge,
                             accumulate):  # pragma: no cover - compiled
    channels = x.shape[1]
    _scaled_into(grad_out, scale, grad_x, accumulate)
    zero = x.dtype.type(0.0)
    for e in range(src.shape[0]):
        s = src[e]
        d = dst[e]
        for c in range(channels):
            g = grad_out[d, c] if x[s, c] + edge_attr[e, c] > zero else zero
            grad_edge[e, c] = g
            grad_x[s, c] += g


def gine_aggregate(x: np.ndarray, edge_attr: np.ndarray, src: np.ndarray, dst: np.ndarray,
                   scale: float) -> np.ndarray:
    """``out [N, C] = scale * x + sum over edges e of ReLU(x[src[e]] + edge_attr[e])`` at
    row ``dst[e]`` (a new array)."""
    out = host_empty(x.shape, x.dtype)
    _gine_aggregate(x, edge_attr, src, dst, x.dtype.type(scale), out)
    return out


def gine_aggregate_backward(x: np.ndarray, edge_attr: np.ndarray, src: np.ndarray,
                            dst: np.ndarray, scale: float, grad_out: np.ndarray,
                            grad_x: np.ndarray | None = None
                            ) -> tuple[np.ndarray, np.ndarray]:
    """The gradients of :func:`gine_aggregate` with respect to ``x`` and ``edge_attr``. With
    ``grad_x`` (``[N, C]``, writeable, C-contiguous: the gradient ``x`` has from elsewhere),
    the gradient with respect to ``x`` is added into it, and it is returned."""
    grad_x, accumulate = _gradient_into(grad_x, x.shape, x.dtype)
    grad_edge = host_empty(edge_attr.shape, edge_attr.dtype)
    _gine_aggregate_backward(x, edge_attr, src, dst, x.dtype.type(scale), grad_out, grad_x,
                             grad_edge, accumulate)
    return grad_x, grad_edge


@numba.njit(cache=True, nogil=True, fastmath=FASTMATH)
def _gin_aggregate(x, src, dst, scale, out):  # pragma: no cover - compiled
    # messages in edge order, then the scaled x (the torch formulation's order)
    channels = x.shape[1]
    out[:] = x.dtype.type(0.0)
    for e in range(src.shape[0]):
        s = src[e]
        d = dst[e]
        for c in range(channels):
            out[d, c] += x[s, c]
    for i in range(x.shape[0]):
        for c in range(channels):
            out[i, c] += scale * x[i, c]


@numba.njit(cache=True, nogil=True, fastmath=FASTMATH)
def _gin_aggregate_backward(src, dst, scale, grad_out, grad_x,
                            accumulate):  # pragma: no cover - compiled
    channels = grad_out.shape[1]
    _scaled_into(grad_out, scale, grad_x, accumulate)
    for e in range(src.shape[0]):
        s = src[e]
        d = dst[e]
        for c in range(channels):
            grad_x[s, c] += grad_out[d, c]


def gin_aggregate(x: np.ndarray, src: np.ndarray, dst: np.ndarray, scale: float,
                  out: np.ndarray | None = None) -> np.ndarray:
    """``out [N, C] = scale * x + sum over edges e of x[src[e]]`` at row ``dst[e]``: written
    into ``out`` (C-contiguous, ``x``'s shape and dtype; its values are not read) or a new
    array."""
    if out is None:
        out = host_empty(x.shape, x.dtype)
    elif out.shape != x.shape or out.dtype != x.dtype or not out.flags.c_contiguous:
        raise ValueError(f"out must be a C-contiguous {x.dtype} array of shape {x.shape}")
    _gin_aggregate(x, src, dst, x.dtype.type(scale), out)
    return out


def gin_aggregate_backward(src: np.ndarray, dst: np.ndarray, scale: float,
                           grad_out: np.ndarray, grad_x: np.ndarray | None = None) -> np.ndarray:
    """The gradient of :func:`gin_aggregate` with respect to ``x``; with ``grad_x`` (the
    gradient ``x`` has from elsewhere, as :func:`gine_aggregate_backward`'s) added into it
    and returned."""
    grad_x, accumulate = _gradient_into(grad_x, grad_out.shape, grad_out.dtype)
    _gin_aggregate_backward(src, dst, grad_out.dtype.type(scale), grad_out, grad_x, accumulate)
    return grad_x


# GatedGCN's denominator offset (GraphGPS's and benchmarking-gnns' 1e-6)
GATE_EPS = 1e-6
# GatedGCN's loops may contract products and sums into FMAs (its sigmoid polynomial is ~1.5x
# faster so): unlike GINE's sum, nothing downstream asks them to round as the torch path does
_GATED_FASTMATH = {"contract", "arcp", "nsz"}


# error_model='numpy': no zero-division check per element (it stops vectorization);
# the denominators here are >= 1e-6
@numba.njit(cache=True, nogil=True, fastmath=_GATED_FASTMATH, error_model="numpy")
def _gated_aggregate(xw, ce, bias, src, dst, gate, eps, e_hat, num, den,
                     out):  # pragma: no cover - compiled
    # xw [N, 4C] = x [A | B | D | E]^T (no biases); bias [3, C] = (A.b, B.b, D.b + E.b + C.b).
    # Each loop over a row's channels touches few arrays, through row views: LLVM vectorizes a
    # loop only when it can check at run time that its arrays do not overlap, for a few
    # arrays at most.
    channels = ce.shape[1]
    c1, c2, c3 = channels, 2 * channels, 3 * channels
    zero = ce.dtype.type(0.0)
    one = ce.dtype.type(1.0)
    gated = gate.shape[0] > 0
    num[:] = zero
    den[:] = zero
    b_b, b_e = bias[1], bias[2]
    for k in range(src.shape[0]):
        s = src[k]
        d = dst[k]
        g = gate[k] if gated else one
        xs, xd, row = xw[s], xw[d], e_hat[k]
        ck = ce[k]
        for c in range(channels):
            row[c] = xd[c2 + c] + xs[c3 + c] + ck[c] + b_e[c]
        nd, dd = num[d], den[d]
        for c in range(channels):
            sg = sigmoid(row[c]) * g
            nd[c] += sg * (xs[c1 + c] + b_b[c])
            dd[c] += sg
    b_a = bias[0]
    for i in range(xw.shape[0]):
        xi, ni, di, oi = xw[i], num[i], den[i], out[i]
        for c in range(channels):
            inv = one / (di[c] + eps)
            q = ni[c] * inv
            di[c] = inv  # kept for the backward: 1 / (sum of gates + eps)
            ni[c] = q  # and the gated mean
            oi[c] = xi[c] + b_a[c] + q


# error_model='numpy': no zero-division check per element (it stops vectorization);
# the denominators here are >= 1e-6
@numba.njit(cache=True, nogil=True, fastmath=_GATED_FASTMATH, error_model="numpy")
def _gated_aggregate_backward(xw, bias, src, dst, gate, e_hat, inv, mean, grad_out, grad_e,
                              grad_xw, grad_ce, grad_gate):  # pragma: no cover - compiled
    channels = grad_out.shape[1]
    c1, c2, c3 = channels, 2 * channels, 3 * channels
    zero = grad_out.dtype.type(0.0)
    one = grad_out.dtype.type(1.0)
    gated = gate.shape[0] > 0
    has_grad_e = grad_e.shape[0] > 0
    for i in range(xw.shape[0]):
        gi, go = grad_xw[i], grad_out[i]
        for c in range(channels):
            gi[c] = go[c]  # A x enters the output as is
        for c in range(c1, 4 * channels):
            gi[c] = zero
    sgm = np.empty(channels, grad_out.dtype)
    dsig = np.empty(channels, grad_out.dtype)
    b_b = bias[1]
    for k in range(src.shape[0]):
        s = src[k]
        d = dst[k]
        g = gate[k] if gated else one
        ek, xs, god, ivd, md = e_hat[k], xw[s], grad_out[d], inv[d], mean[d]
        for c in range(channels):
            sgm[c] = sigmoid(ek[c])
        # d(out) / d(gate): through the gated sum (B x_s) and the denominator (-mean)
        for c in range(channels):
            dsig[c] = god[c] * ivd[c] * (xs[c1 + c] + b_b[c] - md[c])
        gs = grad_xw[s]
        for c in range(channels):
            gs[c1 + c] += sgm[c] * g * (god[c] * ivd[c])
        row = grad_ce[k]
        for c in range(channels):
            row[c] = dsig[c] * g * sgm[c] * (one - sgm[c])
        if has_grad_e:
            gek = grad_e[k]
            for c in range(channels):
                row[c] += gek[c]
        gd = grad_xw[d]
        for c in range(channels):
            gd[c2 + c] += row[c]
        for c in range(channels):
            gs[c3 + c] += row[c]
        if gated:
            gg = zero
            for c in range(channels):
                gg += dsig[c] * sgm[c]
            grad_gate[k] = gg


def gated_aggregate(xw: np.ndarray, ce: np.ndarray, bias: np.ndarray, src: np.ndarray,
                    dst: np.ndarray, gate: np.ndarray | None = None
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """GatedGCN's edge logits and gated mean. With ``xw [N, 4C]`` the products of the node
    features with ``A, B, D, E`` (column blocks in that order, no biases), ``ce [E, C]`` that
    of the edge features with ``C``, ``bias [3, C]`` rows ``A``'s bias, ``B``'s and the sum of
    ``C``'s, ``D``'s and ``E``'s, and ``gate [E]`` (or None: 1):

    ``e_hat[k] = D x_dst + E x_src + C e_k`` (biases included) and ``out[i] = A x_i +
    sum_k sigma_k B x_src / (sum_k sigma_k + 1e-6)`` over the edges ``k`` into ``i``, with
    ``sigma_k = sigmoid(e_hat[k]) * gate[k]``. Returns ``(e_hat, out, inv, mean)``, the last
    two (``1 / (sum sigma + 1e-6)`` and the gated mean, ``[N, C]``) for
    :func:`gated_aggregate_backward`. New arrays of ``xw``'s dtype."""
    num_edges, channels = ce.shape
    e_hat = host_empty((num_edges, channels), ce.dtype)
    mean = host_empty((xw.shape[0], channels), ce.dtype)
    inv = host_empty((xw.shape[0], channels), ce.dtype)
    out = host_empty((xw.shape[0], channels), ce.dtype)
    _gated_aggregate(xw, ce, bias, src, dst, ce[:0, 0] if gate is None else gate,
                     ce.dtype.type(GATE_EPS), e_hat, mean, inv, out)
    return e_hat, out, inv, mean


def gated_aggregate_backward(xw: np.ndarray, bias: np.ndarray, src: np.ndarray,
                             dst: np.ndarray, gate: np.ndarray | None, e_hat: np.ndarray,
                             inv: np.ndarray, mean: np.ndarray, grad_out: np.ndarray,
                             grad_e: np.ndarray | None
                             ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The gradients of :func:`gated_aggregate` with respect to ``xw``, ``ce`` and ``gate``
    (None without one), from those of ``out`` (``grad_out [N, C]``) and of ``e_hat``
    (``grad_e [E, C]``, or None where ``e_hat`` was not used). ``bias``'s are column sums:
    ``grad_out``'s (``A``), ``grad_xw``'s second block (``B``), ``grad_ce``'s (the rest)."""
    grad_xw = host_empty(xw.shape, xw.dtype)
    grad_ce = host_empty(e_hat.shape, e_hat.dtype)
    grad_gate = None if gate is None else host_empty(gate.shape, gate.dtype)
    _gated_aggregate_backward(xw, bias, src, dst, e_hat[:0, 0] if gate is None else gate,
                              e_hat, inv, mean, grad_out,
                              e_hat[:0] if grad_e is None else grad_e, grad_xw, grad_ce,
                              e_hat[:0, 0] if grad_gate is None else grad_gate)
    return grad_xw, grad_ce, grad_gate
