"""Attention within each graph of a batch: multi-head softmax attention over size buckets (no
padding to the batch's largest graph). The linear-time attentions for large graphs are in
:mod:`graphpe.layers.linear_attention`.

A batch of graphs is laid out once per forward (:func:`graph_layout`): graphs are sorted by
size and cut into a few buckets, each padded only to its own largest graph. Every layer then
reuses that layout, so the per-layer cost is one scatter of the projected queries, keys and
values into the buckets, a few batched matrix products per bucket, and one gather back.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.autograd.function import once_differentiable

from graphpe.layers.common import DeclaredForm
from graphpe.ops.checks import check_positive_int
from graphpe.ops.dropout import dropout_host, dropout_keys
from graphpe.ops.host import rows_or_zero, use_host_kernels
from graphpe.ops.softmax import softmax_keys_first, softmax_keys_first_backward

# The cost model that picks the buckets: a bucket of ``g`` graphs padded to ``n`` nodes costs
# ``g * n * n`` score entries per head, plus a fixed overhead per bucket (the kernel calls of
# its forward and backward) expressed in score entries. On one CPU thread a bucket's ~15
# kernel calls cost ~0.2 ms and a score entry ~25 ns through QK^T, mask, softmax, dropout, AV
# and their backward (all heads), so ~8,000 entries per head; on ZINC batches of 32 this picks
# 2 buckets, measured 1.03x faster per training step than 1. On a GPU score entries are nearly
# free and launches are not: the CUDA value is a guess (one bucket unless sizes vary widely),
# not yet measured.
BUCKET_OVERHEAD = {"cpu": 8_000, "cuda": 1_000_000}
MAX_BUCKETS = 4


def check_heads(channels: int, heads: int) -> None:
    """Attention heads: a positive int that divides ``channels`` (ValueError otherwise)."""
    check_positive_int("heads", heads)
    if channels % heads:
        raise ValueError(f"channels={channels} must be divisible by heads={heads}")


@dataclass(frozen=True)
class Bucket:
    """``num_graphs`` graphs padded to ``size`` nodes, rows ``start`` to ``start + num_graphs *
    size`` of the padded node buffer; ``key_bias`` is ``[num_graphs, 1, 1, size]``, 0 on real
    nodes and ``-inf`` on padding."""

    start: int
    num_graphs: int
    size: int
    key_bias: Tensor


@dataclass(frozen=True)
class GraphLayout:
    """Where every node of a batch sits in the padded buckets of :func:`graph_layout`.

    ``slot[i]`` is node ``i``'s row in the padded buffer of ``num_slots`` rows; the buckets
    tile that buffer in order."""

    slot: Tensor
    num_slots: int
    buckets: tuple[Bucket, ...]
    _bias_cache: dict = field(default_factory=dict, repr=False, compare=False)

    def pair_slots(self, pair_index: Tensor, heads: int
                   ) -> tuple[list[Tensor], list[Tensor], list[Tensor]]:
        """Where the logits of pairs ``(i, j)`` sit in the buckets' ``[heads, graphs, n, n]``
        score blocks: per bucket, the pair ids it holds and their flat positions
        ``[pairs, heads]``, query-major and keys first (the blocks transposed, as the CPU's
        compiled softmax holds them). Cached per ``pair_index`` and ``heads``, so all layers
        share it."""
        key = ("pairs", heads)
        cached = self._bias_cache.get(key)
        if cached is not None and cached[0] is pair_index:  # the same tensor, not a reused id
            return cached[1]
        slot_i, slot_j = self.slot[pair_index[0]], self.slot[pair_index[1]]
        starts = torch.tensor([b.start for b in self.buckets], device=self.slot.device)
        which = torch.searchsorted(starts, slot_i, right=True) - 1
        ids, flats, flats_t = [], [], []
        for k, b in enumerate(self.buckets):
            pairs = torch.nonzero(which == k).flatten()
            ri, rj = slot_i[pairs] - b.start, slot_j[pairs] - b.start
            graph, a = ri // b.size, ri % b.size
            if bool(((rj // b.size) != graph).any()) or bool((rj < 0).any()):
                raise ValueError("pair_index holds a pair of nodes from different graphs")
            # score blocks are head-major: [heads * graphs, n, n]
            base = graph * b.size * b.size + a * b.size + rj % b.size
            base_t = graph * b.size * b.size + (rj % b.size) * b.size + a
            heads_off = torch.arange(heads, device=base.device) * (b.num_graphs * b.size
                                                                   * b.size)
            ids.append(pairs)
            flats.append(base.unsqueeze(1) + heads_off)
            flats_t.append(base_t.unsqueeze(1) + heads_off)
        self._bias_cache[key] = (pair_index, (ids, flats, flats_t))
        return ids, flats, flats_t

    def head_bias(self, bucket: Bucket, heads: int, dtype: torch.dtype) -> Tensor:
        """``bucket.key_bias`` repeated per head, head-major: ``[heads * num_graphs, 1,
        size]``, built once per layout (every layer reuses it)."""
        key = (bucket.start, heads, dtype)
        if key not in self._bias_cache:
            g, n = bucket.num_graphs, bucket.size
            self._bias_cache[key] = bucket.key_bias.to(dtype).view(1, g, 1, n).expand(
                heads, g, 1, n).reshape(heads * g, 1, n)
        return self._bias_cache[key]

    def head_rows(self, width: int) -> Tensor:
        """Where the ``width`` head vectors of each node sit in the head-major padded buffer:
        ``[num_nodes * width]`` row ids, node-major (the rows of ``x.view(-1, head_dim)`` for
        ``x [N, width * head_dim]``).

        Bucket ``b`` owns rows ``width * start`` to ``width * (start + graphs * size)`` of
        the buffer, laid out ``[width, graphs * size]``: so its queries, keys and values are
        plain views ``[heads * graphs, size, head_dim]`` for the batched products, and
        neither the forward nor the backward permutes heads and nodes in a copy. Cached per
        ``width``: every layer reuses it."""
        key = ("rows", width)
        if key not in self._bias_cache:
            device = self.slot.device
            starts = torch.tensor([b.start for b in self.buckets], dtype=torch.long,
                                  device=device)  # long also without buckets (no nodes)
            sizes = torch.tensor([b.num_graphs * b.size for b in self.buckets],
                                 dtype=torch.long, device=device)
            which = torch.searchsorted(starts, self.slot, right=True) - 1
            start, size = starts[which], sizes[which]
            part = torch.arange(width, device=device)
            self._bias_cache[key] = ((width * start + self.slot - start).unsqueeze(1)
                                     + part * size.unsqueeze(1)).flatten()
        return self._bias_cache[key]

    def head_sources(self, width: int) -> Tensor:
        """The inverse of :meth:`head_rows`: for each row of the ``[width * num_slots,
        head_dim]`` padded buffer, the row of ``x.view(-1, head_dim)`` it holds, or -1 on
        padding (the buffer filled as a gather, :func:`graphpe.ops.host.rows_or_zero`).
        Cached per ``width``."""
        key = ("sources", width)
        if key not in self._bias_cache:
            rows = self.head_rows(width)
            sources = torch.full((width * self.num_slots,), -1, dtype=torch.long,
                                 device=rows.device)
            sources[rows] = torch.arange(rows.numel(), device=rows.device)
            self._bias_cache[key] = sources
        return self._bias_cache[key]

    def padded_heads(self, x: Tensor, width: int, bias: Tensor | None = None) -> Tensor:
        """``x [N, width * head_dim]`` (plus ``bias [width * head_dim]`` on every row, if
        given) laid into the head-major padded buffer ``[width * num_slots, head_dim]``
        (:meth:`head_rows`), zero on padding rows: on the CPU one compiled gather
        (:func:`~graphpe.ops.host.rows_or_zero`), elsewhere a zero fill and an
        ``index_copy_``."""
        head_dim = x.size(1) // width
        if use_host_kernels(x):
            return rows_or_zero(x.reshape(-1, head_dim), self.head_sources(width),
                                None if bias is None else bias.view(width, head_dim))
        if bias is not None:
            x = x + bias
        return x.new_zeros(width * self.num_slots, head_dim).index_copy_(
            0, self.head_rows(width), x.reshape(-1, head_dim))

    def key_counts(self, bucket: Bucket) -> np.ndarray:
        """The real nodes of each graph of ``bucket`` (int64, host): the keys its attention
        rows weigh. Cached."""
        key = ("counts", bucket.start)
        if key not in self._bias_cache:
            self._bias_cache[key] = (bucket.key_bias.view(bucket.num_graphs, bucket.size) == 0
                                     ).sum(1).cpu().numpy().astype(np.int64)
        return self._bias_cache[key]

    @property
    def padded_entries(self) -> int:
        """Score entries per head over all buckets (``sum_b g_b * n_b^2``)."""
        return sum(b.num_graphs * b.size * b.size for b in self.buckets)


def _choose_buckets(sizes_desc: np.ndarray, overhead: float, max_buckets: int) -> list[int]:
    """Cut graph sizes (sorted descending) into at most ``max_buckets`` contiguous runs that
    minimize ``sum over runs (overhead + count * first_size^2)``; returns the run starts."""
    count = len(sizes_desc)
    sq = sizes_desc.astype(np.float64) ** 2
    i = np.arange(count)[:, None]
    j = np.arange(count + 1)[None, :]
    # run[i, j]: one bucket holding graphs i..j-1, padded to sizes_desc[i]
    run = np.where(j > i, overhead + (j - i) * sq[:, None], np.inf)
    best = np.full(count + 1, np.inf)  # best[j]: the first j graphs in exactly g buckets
    best[0] = 0.0
    levels = []
    for _ in range(min(max_buckets, count)):
        total = best[:count, None] + run
        arg = total.argmin(0)
        best = total[arg, np.arange(count + 1)]
        levels.append((arg, best[count]))
    g = int(np.argmin([cost for _, cost in levels]))
    starts, j = [], count
    for arg, _ in reversed(levels[: g + 1]):
        j = int(arg[j])
        starts.append(j)
    return starts[::-1]


def graph_layout(
    ptr: Tensor,
    max_buckets: int = MAX_BUCKETS,
    bucket_overhead: float | None = None,
    device: torch.device | None = None,
    dtype: torch.dtype = torch.float32,
) -> GraphLayout:
    """The padded-bucket layout of a batch whose graph ``g`` holds nodes ``ptr[g]:ptr[g+1]``.

    Graphs are sorted by size and cut into at most ``max_buckets`` runs, each padded to its
    largest graph, where the cut minimizes padded score entries plus ``bucket_overhead``
    (default: :data:`BUCKET_OVERHEAD` for the device) per bucket. ``max_buckets=1`` pads every
    graph to the largest, as ``to_dense_batch`` does. Empty graphs get no bucket.
    """
    max_buckets = check_positive_int("max_buckets", max_buckets)
    device = ptr.device if device is None else device
    if bucket_overhead is None:
        bucket_overhead = BUCKET_OVERHEAD.get(device.type, BUCKET_OVERHEAD["cuda"])
    ptr_np = ptr.detach().cpu().numpy().astype(np.int64)
    sizes = np.diff(ptr_np)
    order = np.argsort(-sizes, kind="stable")
    order = order[sizes[order] > 0]
    sizes_desc = sizes[order]
    num_nodes = int(ptr_np[-1]) if len(ptr_np) else 0
    if len(order) == 0:
        return GraphLayout(torch.zeros(0, dtype=torch.long, device=device), 0, ())
    starts = _choose_buckets(sizes_desc, float(bucket_overhead), max_buckets) + [len(order)]
    base = np.zeros(len(sizes), dtype=np.int64)  # padded row of each graph's first node
    buckets, row = [], 0
    for a, b in zip(starts[:-1], starts[1:], strict=True):
        size, graphs = int(sizes_desc[a]), b - a
        base[order[a:b]] = row + size * np.arange(graphs)
        valid = np.arange(size)[None, :] < sizes_desc[a:b, None]
        bias = torch.zeros(graphs, 1, 1, size, dtype=dtype)
        bias.masked_fill_(~torch.from_numpy(valid).view(graphs, 1, 1, size), float("-inf"))
        buckets.append(Bucket(row, graphs, size, bias.to(device)))
        row += graphs * size
    slot = np.repeat(base - ptr_np[:-1], sizes) + np.arange(num_nodes)
    return GraphLayout(torch.from_numpy(slot).to(device), row, tuple(buckets))


def layout_from_batch(batch: Tensor | None, num_nodes: int, ptr: Tensor | None = None,
                      **kwargs) -> GraphLayout:
    """:func:`graph_layout` from PyG's ``ptr`` if given, else from a sorted ``batch`` vector
    (None: one graph)."""
    if ptr is None:
        if batch is None:
            ptr = torch.tensor([0, num_nodes])
        else:
            counts = torch.bincount(batch.detach().cpu()) if batch.numel() else batch.new_zeros(0)
            ptr = torch.cat([counts.new_zeros(1), counts.cumsum(0)])
        kwargs.setdefault("device", batch.device if batch is not None else None)
    return graph_layout(ptr, **kwargs)


def dropout_scale_mask(like: Tensor, p: float) -> Tensor:
    """A dropout mask shaped as ``like``: ``1 / (1 - p)`` with probability ``1 - p``, else 0.
    Drawn as ``rand >= p`` in place: the distribution of ``bernoulli_``, with no
    boolean-to-float conversion."""
    return torch.rand_like(like).ge_(p).mul_(1.0 / (1.0 - p))


def attention_dropout(probs: Tensor, p: float) -> Tensor:
    """``probs`` with dropout ``p`` (kept entries scaled by ``1 / (1 - p)``), a new tensor. On
    the CPU one compiled pass with hashed random numbers
    (:func:`graphpe.ops.dropout.dropout_host`); elsewhere :func:`dropout_scale_mask`."""
    if use_host_kernels(probs):
        return dropout_host(probs, p)
    return probs * dropout_scale_mask(probs, p)


class _HashedDropout(torch.autograd.Function):
    """:func:`graphpe.ops.dropout.dropout_host` as an autograd node: the backward applies the
    forward's mask by hashing again with the same keys (nothing stored)."""

    @staticmethod
    def forward(ctx, x, p):
        ctx.p, ctx.keys = p, dropout_keys()
        return dropout_host(x, p, ctx.keys)

    @staticmethod
    @once_differentiable  # numpy inside: no graph to differentiate again
    def backward(ctx, grad_out):
        return dropout_host(grad_out, ctx.p, ctx.keys), None


def weight_dropout(x: Tensor, p: float, training: bool = True) -> Tensor:
    """``F.dropout(x, p, training)`` for attention weights, differentiable; on CPU float
    tensors the hashed one-pass masks of :func:`attention_dropout`."""
    if not training or p == 0.0:
        return x
    if use_host_kernels(x):
        return _HashedDropout.apply(x, p)
    return F.dropout(x, p, training)


@dataclass
class CoreState:
    """What :func:`attention_core_backward` needs from :func:`attention_core_forward`:
    ``tensors`` (per bucket: the head-major ``qkv`` block, the weights and the dropped
    weights) and the settings of the call."""

    layout: GraphLayout
    heads: int
    scale: float
    keys_first: bool
    pair_slots: tuple | None
    pair_shape: torch.Size | None
    tensors: tuple = ()


def attention_core_forward(qkv: Tensor, pair_bias: Tensor | None, layout: GraphLayout,
                           heads: int, dropout: float, pair_slots=None,
                           qkv_bias: Tensor | None = None) -> tuple[Tensor, CoreState]:
    """The forward of :class:`_GraphAttentionCore` outside autograd: ``qkv [N, 3 * heads *
    d]`` -> ``([N, heads * d], state)``, ``state`` for :func:`attention_core_backward`. Also
    the attention step of :mod:`graphpe.layers.fused`'s one-node GPS layer, which passes the
    in-projection's product and its bias ``qkv_bias [3 * heads * d]`` apart: the bias is
    added as the rows are laid into the buckets (its gradient is the column sum of the
    ``qkv`` gradient)."""
    num_nodes, width = qkv.shape
    channels, dim = width // 3, width // (3 * heads)
    scale = 1.0 / math.sqrt(dim)
    slots, w3 = layout.num_slots, 3 * heads
    # on the CPU (float32) the scores are kept keys first (K Q^T): softmax and dropout then
    # run down each query's column in one compiled pass (graphpe.ops.softmax), whose short
    # loops vectorize that way round; pair biases are added to those raw scores divided by
    # the scale the pass multiplies them with
    keys_first = (qkv.dtype == torch.float32 and use_host_kernels(qkv)
                  and (pair_bias is None or pair_bias.dtype == torch.float32))
    # head-major padded buffers (GraphLayout.head_rows): padding rows stay 0 (finite keys
    # and values under the -inf key bias)
    padded = layout.padded_heads(qkv, w3, qkv_bias)
    out_padded = qkv.new_empty(heads * slots, dim)
    saved = []
    for i, b in enumerate(layout.buckets):
        g, n = b.num_graphs, b.size
        qkvh = padded[w3 * b.start: w3 * (b.start + g * n)].view(3, heads * g, n, dim)
        q, k, v = qkvh[0], qkvh[1], qkvh[2]
        if keys_first:
            probs = torch.bmm(k, q.transpose(1, 2))  # [heads * graphs, keys, queries]
            if pair_bias is not None and pair_slots[0][i].numel():
                pairs, flat_t = pair_slots[0][i], pair_slots[2][i]
                # (index_add_'s alpha takes a slow path: the scaling is a pass of its own)
                probs.view(-1).index_add_(0, flat_t.flatten(), pair_bias.index_select(
                    0, pairs).flatten().mul_(1.0 / scale))
            dropped = softmax_keys_first(probs.numpy(), layout.key_counts(b), g, scale,
                                         dropout, dropout_keys() if dropout else (0, 0))
            dropped = probs if dropped is None else torch.from_numpy(dropped)
            weights = dropped.transpose(1, 2)
        else:
            bias = layout.head_bias(b, heads, qkv.dtype)
            scores = torch.baddbmm(bias, q, k.transpose(1, 2), alpha=scale)
            if pair_bias is not None and pair_slots[0][i].numel():
                pairs, flat = pair_slots[0][i], pair_slots[1][i]
                # (under autocast the scores are bfloat16/float16, the biases float32)
                scores.view(-1).index_add_(0, flat.flatten(), pair_bias.index_select(
                    0, pairs).flatten().to(scores.dtype))
            probs = scores.softmax(-1)
            dropped = attention_dropout(probs, dropout) if dropout > 0.0 else probs
            weights = dropped
        torch.bmm(weights, v, out=out_padded[heads * b.start: heads * (b.start + g * n)]
                  .view(heads * g, n, dim))
        saved += [qkvh, probs, dropped]
    state = CoreState(layout, heads, scale, keys_first,
                      pair_slots if pair_bias is not None else None,
                      None if pair_bias is None else pair_bias.shape, tuple(saved))
    return out_padded.index_select(0, layout.head_rows(heads)).view(num_nodes, channels), state


def attention_core_backward(state: CoreState, grad_out: Tensor
                            ) -> tuple[Tensor, Tensor | None]:
    """The gradients of :func:`attention_core_forward` with respect to ``qkv`` and the pair
    biases (None without them)."""
    layout, heads, scale, saved = state.layout, state.heads, state.scale, state.tensors
    num_nodes, channels = grad_out.shape
    dim = channels // heads
    slots, w3 = layout.num_slots, 3 * heads
    # padding query rows get a zero output gradient: their (real) attention weights then
    # send nothing to the values and keys
    grad_padded_out = layout.padded_heads(grad_out, heads)
    grad_padded = grad_out.new_empty(w3 * slots, dim)  # padding rows are never read
    grad_pair = None if state.pair_slots is None else grad_out.new_zeros(state.pair_shape)
    for i, b in enumerate(layout.buckets):
        qkvh, probs, dropped = saved[3 * i: 3 * i + 3]
        q, k, v = qkvh[0], qkvh[1], qkvh[2]
        g, n = b.num_graphs, b.size
        d_out = grad_padded_out[heads * b.start: heads * (b.start + g * n)].view(
            heads * g, n, dim)
        d_qkv = grad_padded[w3 * b.start: w3 * (b.start + g * n)].view(3, heads * g, n, dim)
        if state.keys_first:  # probs and dropped are [heads * graphs, keys, queries]
            torch.bmm(dropped, d_out, out=d_qkv[2])
            d_scores = torch.bmm(v, d_out.transpose(1, 2))  # (dO V^T)^T
            softmax_keys_first_backward(d_scores.numpy(), probs.numpy(), dropped.numpy(),
                                        scale)  # d(logits), the scale included
            if grad_pair is not None and state.pair_slots[0][i].numel():
                pairs, flat_t = state.pair_slots[0][i], state.pair_slots[2][i]
                grad_pair.index_add_(0, pairs, d_scores.view(-1)[flat_t.flatten()]
                                     .view(flat_t.shape).mul_(1.0 / scale))
            torch.bmm(d_scores.transpose(1, 2), k, out=d_qkv[0])
            torch.bmm(d_scores, q, out=d_qkv[1])
            continue
        torch.bmm(dropped.transpose(1, 2), d_out, out=d_qkv[2])
        d_scores = torch.bmm(d_out, v.transpose(1, 2)).mul_(dropped)
        row = d_scores.sum(-1, keepdim=True)
        d_scores.addcmul_(probs, row, value=-1.0)  # d(logits)
        if grad_pair is not None and state.pair_slots[0][i].numel():
            pairs, flat = state.pair_slots[0][i], state.pair_slots[1][i]
            grad_pair.index_add_(0, pairs, d_scores.view(-1)[flat.flatten()].view(flat.shape))
        d_scores.mul_(scale)
        torch.bmm(d_scores, k, out=d_qkv[0])
        torch.bmm(d_scores.transpose(1, 2), q, out=d_qkv[1])
    grad_qkv = grad_padded.index_select(0, layout.head_rows(w3)).view(num_nodes, 3 * channels)
    return grad_qkv, grad_pair


class _GraphAttentionCore(torch.autograd.Function):
    r"""Softmax attention within each graph, all buckets of a :class:`GraphLayout` in one
    autograd node: ``qkv [N, 3 * heads * d]`` (node rows) -> ``[N, heads * d]``.

    Per bucket, with ``Q, K, V`` of shape ``[heads * graphs, n, d]``, key bias ``b`` (0 or
    ``-inf`` on padding) and dropout mask ``M`` (``1/(1-p)`` or 0):
    :math:`P = \mathrm{softmax}(s\,QK^\top + b)`, :math:`\tilde P = P \odot M`,
    :math:`O = \tilde P V`; backward with :math:`G = dO\,V^\top`: :math:`dV = \tilde P^\top
    dO`, :math:`dS = s\,(\tilde P \odot G - P\,\mathrm{rowsum}(\tilde P \odot G))`,
    :math:`dQ = dS\,K`, :math:`dK = dS^\top Q`. The whole step is one autograd node: a scatter
    into the head-major padded buckets (:meth:`GraphLayout.head_rows`), a dozen kernel calls
    per bucket and a gather back. On the CPU in float32 the blocks are held keys first
    (:math:`P^\top`, from :math:`K Q^\top`) for the compiled softmax of
    :mod:`graphpe.ops.softmax`; the products read them transposed.
    """

    @staticmethod
    def forward(ctx, qkv, pair_bias, layout, heads, dropout, pair_slots):
        out, state = attention_core_forward(qkv, pair_bias, layout, heads, dropout, pair_slots)
        ctx.save_for_backward(*state.tensors)
        state.tensors = ()
        ctx.state = state
        return out

    @staticmethod
    def backward(ctx, grad_out):
        ctx.state.tensors = ctx.saved_tensors
        grad_qkv, grad_pair = attention_core_backward(ctx.state, grad_out)
        return grad_qkv, grad_pair, None, None, None, None


@torch.compiler.disable
def _attention_core(qkv: Tensor, layout: GraphLayout, heads: int, dropout: float,
                    pair_bias: Tensor | None = None, pair_slots=None) -> Tensor:
    # Left to eager under torch.compile: the bucket loop depends on the batch's graph sizes,
    # and the compiled code around it (projections, norms, MLPs) keeps one symbolic node count.
    return _GraphAttentionCore.apply(qkv, pair_bias, layout, heads, dropout, pair_slots)


class MultiheadGraphAttention(DeclaredForm, nn.Module):
    r"""Multi-head softmax attention among the nodes of each graph,

    .. math:: \mathrm{out}_i = W_O \big\Vert_{h} \sum_{j \in G(i)}
              \mathrm{softmax}_j\Big(\frac{q^h_i \cdot k^h_j}{\sqrt{d_h}}\Big) v^h_j,

    computed over the size buckets of a :class:`GraphLayout` rather than one block padded to
    the largest graph. Parameters are named as in ``torch.nn.MultiheadAttention``
    (``in_proj_weight``, ``in_proj_bias``, ``out_proj``), so PyG ``GPSConv`` weights load.

    Args:
        channels: width (``heads * head_dim``).
        heads: attention heads.
        dropout: dropout on the attention weights during training (on the CPU the masks come
            from a hash keyed by torch's generator, :func:`attention_dropout`: seeded by
            ``torch.manual_seed``, not the masks ``torch.nn.Dropout`` would draw).

    As the attention of :class:`~graphpe.layers.gps.GPSLayer` it reads the batch's
    ``layout`` and the optional ``pair_bias``, ``pair_index``.
    """

    #: GPSLayer's contract (:mod:`graphpe.layers.gps`): the inputs read after ``x``, in call
    #: order; nothing updated beside the nodes; the residual left to the layer
    reads = ("layout", "pair_bias", "pair_index")
    updates = None
    adds_residual = False
    #: what the fast paths compute in its place (:class:`~graphpe.layers.common.DeclaredForm`)
    form = "multihead"

    def __init__(self, channels: int, heads: int = 1, dropout: float = 0.0) -> None:
        super().__init__()
        check_heads(channels, heads)
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout!r}")
        self.channels, self.heads, self.head_dim, self.dropout = (
            channels, heads, channels // heads, dropout)
        self.in_proj_weight = nn.Parameter(torch.empty(3 * channels, channels))
        self.in_proj_bias = nn.Parameter(torch.empty(3 * channels))
        self.out_proj = nn.Linear(channels, channels)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # as torch.nn.MultiheadAttention
        nn.init.xavier_uniform_(self.in_proj_weight)
        nn.init.zeros_(self.in_proj_bias)
        nn.init.zeros_(self.out_proj.bias)

    def forward(self, x: Tensor, layout: GraphLayout, pair_bias: Tensor | None = None,
                pair_index: Tensor | None = None) -> Tensor:
        """``x [N, channels]`` -> ``[N, channels]``; node ``i`` attends to its own graph.
        ``pair_bias [P, heads]`` is added to the logits of query ``pair_index[0]`` and key
        ``pair_index[1]`` (pairs of one graph; pairs not listed get no bias)."""
        if x.size(0) == 0:
            return self.out_proj(x)
        qkv = F.linear(x, self.in_proj_weight, self.in_proj_bias)
        p = self.dropout if self.training else 0.0
        slots = self.bias_slots(layout, pair_bias, pair_index)
        return self.out_proj(_attention_core(qkv, layout, self.heads, p, pair_bias, slots))

    def bias_slots(self, layout: GraphLayout, pair_bias: Tensor | None,
                   pair_index: Tensor | None):
        """:meth:`GraphLayout.pair_slots` of the pairs ``pair_index`` that ``pair_bias
        [P, heads]`` belongs to (None without a bias), after checking their shapes."""
        if pair_bias is None:
            return None
        if pair_index is None or pair_bias.shape != (pair_index.size(1), self.heads):
            raise ValueError(f"pair_bias must be [num_pairs, heads={self.heads}] with its "
                             f"pair_index [2, num_pairs]")
        return layout.pair_slots(pair_index, self.heads)

