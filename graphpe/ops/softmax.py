"""Compiled (numba) softmax over the keys of padded attention score blocks, with the
attention-weight dropout, forward and backward, on the host CPU.

The bucketed attention of :mod:`graphpe.layers.attention` holds a bucket's scores as ``[heads *
graphs, n, n]`` blocks of short rows (~25 keys for molecules). These kernels take the blocks
transposed, keys first (``S^T = K Q^T``, ``[blocks, keys, queries]``, which the batched
products give by reading ``Q`` and ``K`` transposed): the softmax runs down each column, and
every inner loop runs along a row of queries, updating one running maximum and sum per query,
so that it vectorizes (a loop along a row of keys is too short for LLVM's loop vectorizer). The
exponential is a polynomial on ``[-1/2, 1/2]`` times a power of two built from its exponent
bits (:func:`graphpe.ops.fastmath.exp2_poly`: libm's ``expf`` does not vectorize here).

The dropout masks are those of :mod:`graphpe.ops.dropout` (a keyed hash of each element's
position in the block array, ``p`` at a resolution of ``2^-24``), so the backward recomputes
nothing it did not store: the forward keeps the probabilities and the dropped weights.

Layouts: ``scores [B, n, n]`` float32 C-contiguous, keys first (``scores[b, j, i]`` is query
``i``'s logit for key ``j``, unscaled); block ``b`` belongs to graph ``b % graphs`` (the
head-major order of the bucketed attention) whose first ``key_counts[b % graphs]`` keys are
real; the others are padding and get weight 0.
"""

from __future__ import annotations

import numba
import numpy as np

from graphpe.ops.dropout import DROPOUT_BITS, keyed_hash
from graphpe.ops.fastmath import LOG2E, exp2_poly
from graphpe.ops.host import host_empty

# Reassociation lets LLVM vectorize the loops over queries; no result here depends on the
# order of a sum beyond float32 rounding.
FASTMATH = {"contract", "arcp", "reassoc", "nsz"}


@numba.njit(cache=True, nogil=True, fastmath=FASTMATH)
def _softmax_keys_first(scores, key_counts, graphs, scale, key0, key1, threshold, keep_scale,
                        dropped, col_max, col_sum):  # pragma: no cover - compiled
    blocks, n = scores.shape[0], scores.shape[1]
    drop = threshold > 0
    k0 = np.uint32(key0)
    k1 = np.uint32(key1)
    t = np.uint32(threshold)
    shift = np.uint32(32 - DROPOUT_BITS)
    zero = np.float32(0.0)
    to_log2 = np.float32(scale * LOG2E)
    flat_scores = scores.reshape(-1)
    flat_dropped = dropped.reshape(-1)
    for b in range(blocks):
        keys = key_counts[b % graphs]
        s = scores[b]
        # the loops along a row of queries keep one running value per query; the costly
        # elementwise work (exponential, dropout hash) runs over the block's real keys as one
        # flat loop, so that rows of ~25 queries do not leave the vector loops idle
        for i in range(n):
            col_max[i] = s[0, i]
            col_sum[i] = zero
        for j in range(1, keys):
            row = s[j]
            for i in range(n):
                col_max[i] = max(col_max[i], row[i])
        for j in range(keys):
            row = s[j]
            for i in range(n):
                row[i] = (row[i] - col_max[i]) * to_log2  # log2 of the unnormalized weight
        start, size = b * n * n, keys * n
        x = flat_scores[start: start + size]
        for e in range(size):
            x[e] = exp2_poly(x[e])  # (graphpe.ops.fastmath: vectorizes, libm's expf does not)
        for j in range(keys):
            row = s[j]
            for i in range(n):
                col_sum[i] += row[i]
        for i in range(n):
            col_sum[i] = np.float32(1.0) / col_sum[i]
        for j in range(keys):
            row = s[j]
            for i in range(n):
                row[i] *= col_sum[i]
        if drop:
            out = flat_dropped[start: start + size]
            for e in range(size):
                h = keyed_hash(np.uint32(start + e), k0, k1)
                out[e] = x[e] * (keep_scale * ((h >> shift) >= t))
        for e in range(start + size, start + n * n):  # padding keys weigh nothing
            flat_scores[e] = zero
            if drop:
                flat_dropped[e] = zero


@numba.njit(cache=True, nogil=True, fastmath=FASTMATH)
def _softmax_keys_first_backward(grad, probs, dropped, scale,
                                 col_sum):  # pragma: no cover - compiled
    blocks, n = grad.shape[0], grad.shape[1]
    for b in range(blocks):
        g = grad[b]
        for i in range(n):
            col_sum[i] = np.float32(0.0)
        for j in range(n):
            row, d = g[j], dropped[b, j]
            for i in range(n):
                v = row[i] * d[i]
                row[i] = v
                col_sum[i] += v
        for j in range(n):
            row, p = g[j], probs[b, j]
            for i in range(n):
                row[i] = scale * (row[i] - p[i] * col_sum[i])


def softmax_keys_first(
    scores: np.ndarray,
    key_counts: np.ndarray,
    graphs: int,
    scale: float,
    dropout: float = 0.0,
    keys: tuple[int, int] = (0, 0),
) -> np.ndarray | None:
    """Softmax over the keys of keys-first score blocks, in place, and the dropped weights.

    ``scores [B, n, n]`` float32 (``scores[b, j, i]``: query ``i``, key ``j``, before the
    ``scale``) becomes ``softmax_j(scale * scores[b, :, i])`` over the block's first
    ``key_counts[b % graphs]`` keys, 0 on the others. Returns the weights after dropout
    ``dropout`` (kept ones scaled by ``1 / (1 - dropout)``; the mask of
    :func:`graphpe.ops.dropout.dropout_host` with ``keys``, over the positions of ``scores``)
    as a new array, or None when ``dropout`` is 0 (the weights are ``scores`` then)."""
    if scores.dtype != np.float32 or scores.ndim != 3 or scores.shape[1] != scores.shape[2]:
        raise ValueError("softmax_keys_first takes float32 [blocks, n, n] scores, got "
                         f"{scores.dtype} {scores.shape}")
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"dropout probability must be in [0, 1), got {dropout!r}")
    if scores.size >= 2**32:
        raise ValueError("softmax_keys_first counts elements in 32 bits: at most 2^32 - 1")
    n = scores.shape[1]
    threshold = round(dropout * 2**DROPOUT_BITS)
    dropped = host_empty(scores.shape, np.float32) if threshold else scores[:0]
    _softmax_keys_first(scores, key_counts, graphs, np.float32(scale), keys[0], keys[1],
                        threshold, np.float32(1.0 / (1.0 - dropout)), dropped,
                        np.empty(n, np.float32), np.empty(n, np.float32))
    return dropped if threshold else None


def softmax_keys_first_backward(grad: np.ndarray, probs: np.ndarray, dropped: np.ndarray,
                                scale: float) -> None:
    """The logits' gradient, in place: ``grad [B, n, n]`` (keys first, the gradient of the
    dropped weights, ``V dO^T``) becomes ``scale * (grad * dropped - probs * sum_j (grad *
    dropped))`` per query column, the gradient of the unscaled ``scores`` of
    :func:`softmax_keys_first` (``dropped`` is ``probs`` without dropout)."""
    _softmax_keys_first_backward(grad, probs, dropped, np.float32(scale),
                                 np.empty(grad.shape[1], np.float32))
