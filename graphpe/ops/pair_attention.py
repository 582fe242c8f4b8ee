"""Compiled (numba) kernels for attention over a pair list on the host CPU: GRIT's pair
scores (Ma et al., ICML 2023) and the attention-weighted sums over each query's pairs, each
with its backward.

Each direction (forward, backward) is one loop over the pairs that keeps a pair's ``C``
values in registers, reading the inputs once and writing the outputs once. The torch
formulation in :mod:`graphpe.layers.grit` is the reference (the tests compare values and
gradients) and the path on GPUs.

Layouts: ``q, k, v [N, C]`` node rows; ``ewb [P, 2C]`` the pair terms ``W_Ew e`` (first ``C``)
and ``W_Eb e`` (last ``C``); ``score [d, H]`` (``C = H d``, channel ``c`` of head ``c // d``);
``query, key [P]`` int64 node ids.

The ``[P, ...]`` outputs are allocated by the callers with
:func:`graphpe.ops.host.host_empty` (numpy arrays backed by huge pages), not inside the
kernels.
"""

from __future__ import annotations

import math

import numba
import numpy as np

# LLVM may reorder the per-head sums to vectorize them; nothing relies on IEEE order
FASTMATH = {"contract", "arcp", "reassoc", "nsz"}


@numba.njit(cache=True, nogil=True, fastmath=FASTMATH)
def grit_pair_scores(q: np.ndarray, k: np.ndarray, ewb: np.ndarray, score: np.ndarray,
                     query: np.ndarray, key: np.ndarray, eps: float, pair: np.ndarray,
                     logits: np.ndarray) -> None:
    """Per pair ``p = (i, j)``: ``pair[p] = relu(rho((q_i + k_j) * ew_p) + eb_p)`` with
    ``rho(z) = sign(z) (sqrt(|z| + eps) - sqrt(eps))``, and the logits ``[p, h] = sum_t
    pair[p, h d + t] score[t, h]``, written into ``pair [P, C]`` and ``logits [P, H]``."""
    num_pairs = ewb.shape[0]
    dim, heads = score.shape
    channels = heads * dim
    root_eps = math.sqrt(eps)
    for p in range(num_pairs):
        i, j = query[p], key[p]
        for h in range(heads):
            acc = 0.0
            for t in range(dim):
                c = h * dim + t
                z = (q[i, c] + k[j, c]) * ewb[p, c]
                u = math.copysign(math.sqrt(abs(z) + eps) - root_eps, z) + ewb[p, channels + c]
                u = u if u > 0.0 else 0.0
                pair[p, c] = u
                acc += u * score[t, h]
            logits[p, h] = acc


@numba.njit(cache=True, nogil=True, fastmath=FASTMATH)
def grit_pair_scores_backward(q: np.ndarray, k: np.ndarray, ewb: np.ndarray,
                              score: np.ndarray, query: np.ndarray, key: np.ndarray,
                              eps: float, grad_pair: np.ndarray, grad_logits: np.ndarray,
                              grad_ewb: np.ndarray):
    """Gradients of :func:`grit_pair_scores` from those of its outputs: ``grad_ewb [P, 2C]``
    written in place, ``(grad_q [N, C], grad_k [N, C], grad_score [d, H])`` returned. The
    pair values are recomputed from the inputs rather than read back (the same arithmetic,
    so the same ReLU gates)."""
    num_pairs, channels = ewb.shape[0], q.shape[1]
    dim, heads = score.shape
    root_eps = math.sqrt(eps)
    grad_q = np.zeros_like(q)
    grad_k = np.zeros_like(k)
    # channel-major copies of score and of each pair's grad_logits, so that the main loop
    # runs over channels without an integer division c // dim per value; the ReLU gate is a
    # multiplication, not a branch; a pair's gradient for q_i and k_j goes to a buffer first
    # and is added to their rows in two plain loops (the row updates cannot alias it)
    grad_score = np.zeros(channels)
    score_c = np.empty(channels)
    for h in range(heads):
        for t in range(dim):
            score_c[h * dim + t] = score[t, h]
    grad_logits_c = np.empty(channels)
    grad_s = np.empty(channels)
    for p in range(num_pairs):
        i, j = query[p], key[p]
        for h in range(heads):
            for t in range(dim):
                grad_logits_c[h * dim + t] = grad_logits[p, h]
        for c in range(channels):
            s = np.float64(q[i, c]) + k[j, c]
            w = np.float64(ewb[p, c])
            z = s * w
            root = math.sqrt(abs(z) + eps)
            u = math.copysign(root - root_eps, z) + ewb[p, channels + c]
            active = np.float64(u > 0.0)
            gl = grad_logits_c[c]
            grad_score[c] += gl * u * active
            g = (grad_pair[p, c] + gl * score_c[c]) * active
            grad_ewb[p, channels + c] = g
            gz = g * 0.5 / root  # d rho / dz = 1 / (2 sqrt(|z| + eps))
            grad_ewb[p, c] = gz * s
            grad_s[c] = gz * w
        for c in range(channels):
            grad_q[i, c] += grad_s[c]
        for c in range(channels):
            grad_k[j, c] += grad_s[c]
    return grad_q, grad_k, grad_score.reshape(heads, dim).T.astype(q.dtype)


@numba.njit(cache=True, nogil=True, fastmath=FASTMATH)
def pair_weighted_sums(alpha: np.ndarray, v: np.ndarray, pair: np.ndarray, query: np.ndarray,
                       key: np.ndarray, num_nodes: int):
    """``out_v[i] = sum_p alpha[p, h] v[key_p]`` and ``out_pair[i] = sum_p alpha[p, h]
    pair[p]`` over the pairs ``p`` of query ``i`` (per head ``h`` of each channel). Returns
    ``(out_v [N, C], out_pair [N, C])``."""
    num_pairs, channels = pair.shape
    heads = alpha.shape[1]
    dim = channels // heads
    out_v = np.zeros((num_nodes, channels), dtype=v.dtype)
    out_pair = np.zeros((num_nodes, channels), dtype=v.dtype)
    for p in range(num_pairs):
        i, j = query[p], key[p]
        for h in range(heads):
            a = alpha[p, h]
            for t in range(dim):
                c = h * dim + t
                out_v[i, c] += a * v[j, c]
                out_pair[i, c] += a * pair[p, c]
    return out_v, out_pair


@numba.njit(cache=True, nogil=True, fastmath=FASTMATH)
def pair_weighted_sums_backward(alpha: np.ndarray, v: np.ndarray, pair: np.ndarray,
                                query: np.ndarray, key: np.ndarray, grad_v_out: np.ndarray,
                                grad_pair_out: np.ndarray, grad_alpha: np.ndarray,
                                grad_pair: np.ndarray) -> np.ndarray:
    """Gradients of :func:`pair_weighted_sums`: ``grad_alpha [P, H]`` and ``grad_pair [P, C]``
    written in place, ``grad_v [N, C]`` returned."""
    num_pairs, channels = pair.shape
    heads = alpha.shape[1]
    dim = channels // heads
    grad_v = np.zeros_like(v)
    for p in range(num_pairs):
        i, j = query[p], key[p]
        for h in range(heads):
            a = alpha[p, h]
            acc = 0.0
            for t in range(dim):
                c = h * dim + t
                acc += grad_v_out[i, c] * v[j, c] + grad_pair_out[i, c] * pair[p, c]
                grad_v[j, c] += a * grad_v_out[i, c]
                grad_pair[p, c] = a * grad_pair_out[i, c]
            grad_alpha[p, h] = acc
    return grad_v
