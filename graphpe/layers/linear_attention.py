"""Linear-time attention within each graph of a batch, for graphs too large for softmax
attention's ``n x n`` scores: Performer's FAVOR+ random features (:class:`PerformerAttention`)
and the ``elu + 1`` feature map of Katharopoulos et al. (:class:`LinearAttention`). Both sum
over each graph's own nodes (a ``batch`` vector), with no padding; :func:`graph_kernel_sums`
forms those sums (also for SGFormer's and Polynormer's attentions) in bounded memory."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from graphpe.layers.attention import check_heads
from graphpe.ops.checks import check_non_negative_int, check_positive_int

# performer-pytorch's offset inside the feature map (keeps the normalizer away from 0)
PERFORMER_EPS = 1e-4


#: the most elements of the per-node outer products ``k_j v_j^T`` formed at once by
#: :func:`graph_kernel_sums` for a batch of several graphs (64 MiB in float32)
OUTER_PRODUCT_ELEMENTS = 1 << 24


def graph_kernel_sums(q: Tensor, k: Tensor, v: Tensor, batch: Tensor | None,
                      num_graphs: int) -> tuple[Tensor, Tensor]:
    r"""The two sums of kernelized (linear) attention within each graph: for queries, keys and
    values ``[N, heads, d]`` (values ``[N, heads, e]``),

    .. math:: \mathrm{num}_i = q_i^\top \sum_{j \in G(i)} k_j v_j^\top, \qquad
              \mathrm{den}_i = q_i^\top \sum_{j \in G(i)} k_j,

    per head, ``(num [N, heads, e], den [N, heads])``, :math:`G(i)` the nodes of node ``i``'s
    graph (``batch`` None: one graph). One graph takes two products and no per-node copy of
    the ``[d, e]`` sums; several graphs form the outer products :math:`k_j v_j^\top` and read
    the sums back in chunks of nodes of at most :data:`OUTER_PRODUCT_ELEMENTS` elements, so
    memory stays ``O(N heads e + num_graphs heads d e)`` whatever the batch. Sums in the
    inputs' dtype, autocast off (callers widen half precision first)."""
    with torch.autocast(q.device.type, enabled=False):
        return _kernel_sums(q, k, v, batch, num_graphs)


def _kernel_sums(q: Tensor, k: Tensor, v: Tensor, batch: Tensor | None,
                 num_graphs: int) -> tuple[Tensor, Tensor]:
    if batch is None or num_graphs == 1:
        kv = torch.einsum("nhd,nhe->hde", k, v)
        return torch.einsum("nhd,hde->nhe", q, kv), (q * k.sum(0)).sum(-1)
    n, heads, d = k.shape
    e = v.size(-1)
    kv = k.new_zeros(num_graphs, heads, d, e)
    k_sum = k.new_zeros(num_graphs, heads, d).index_add(0, batch, k)
    step = max(1, OUTER_PRODUCT_ELEMENTS // max(1, heads * d * e))
    for start in range(0, n, step):
        rows = slice(start, start + step)
        kv.index_add_(0, batch[rows], torch.einsum("nhd,nhe->nhde", k[rows], v[rows]))
    num = torch.cat([torch.einsum("nhd,nhde->nhe", q[start:start + step],
                                  kv[batch[start:start + step]])
                     for start in range(0, n, step)]) if n else q.new_zeros(0, heads, e)
    return num, (q * k_sum[batch]).sum(-1)


def orthogonal_gaussian_features(num_features: int, dim: int,
                                 generator: torch.Generator | None = None) -> Tensor:
    """``[num_features, dim]`` random feature directions for FAVOR+ (Choromanski et al., ICLR
    2021): blocks of ``dim`` orthonormal rows (QR of a Gaussian matrix), each row scaled by the
    norm of an independent Gaussian vector, so every row is marginally ``N(0, I)`` and the
    rows of a block are exactly orthogonal (a lower-variance estimate than i.i.d. rows)."""
    blocks = []
    for start in range(0, num_features, dim):
        gaussian = torch.randn(dim, dim, generator=generator, dtype=torch.float64)
        q, r = torch.linalg.qr(gaussian)
        q = q * torch.sign(torch.diagonal(r)).unsqueeze(0)  # Haar-uniform (sign-fixed QR)
        blocks.append(q.t()[: min(dim, num_features - start)])
    norms = torch.randn(num_features, dim, generator=generator, dtype=torch.float64).norm(dim=1)
    return (torch.cat(blocks) * norms.unsqueeze(1)).float()


class PerformerAttention(nn.Module):
    r"""Performer attention within each graph (Choromanski et al., "Rethinking Attention with
    Performers", ICLR 2021; GraphGPS's ``Performer`` global model): softmax attention
    estimated with FAVOR+ positive random features. With :math:`x' = d^{-1/4} x` (``d`` the
    head width) and directions :math:`w_1..w_m`,

    .. math:: \varphi(x) = m^{-1/2} \big[\exp(w_r^\top x' - \lVert x' \rVert^2 / 2 - s)
              + \epsilon\big]_{r=1..m}, \qquad
              o_i = \frac{\varphi(q_i)^\top \sum_{j \in G(i)} \varphi(k_j)\, v_j^\top}
                         {\varphi(q_i)^\top \sum_{j \in G(i)} \varphi(k_j)},

    so that :math:`E[\varphi(q)^\top \varphi(k)] \propto \exp(q \cdot k / \sqrt d)`: ``O(N m
    d)`` time, no ``n x n`` scores. The stabilizer :math:`s` (subtracted before the
    exponential) is each query's own largest :math:`w_r^\top q'`, and for keys the largest over
    the keys of their graph and head, so it cancels between numerator and denominator up to
    :math:`\epsilon = 10^{-4}` (performer-pytorch's). The directions are orthogonal Gaussian
    (:func:`orthogonal_gaussian_features`), drawn from torch's generator and drawn again every
    ``redraw_interval`` training forwards (performer-pytorch's default 1000; 0: never).
    Dropout ``dropout`` on the output, as performer-pytorch's ``SelfAttention``.

    GraphGPS runs performer-pytorch on ``to_dense_batch``'s padded blocks and zero-fills the
    padding keys; :math:`\varphi(0)` is not 0, so every graph there also attends to ``n_max -
    n`` phantom nodes whose value is ``to_v``'s bias. Here the sums run over each graph's own
    nodes.

    Args:
        channels: width (``heads * head_dim``).
        heads: attention heads.
        num_features: random features ``m`` per head (default ``int(d ln d)``, at least 1, as
            performer-pytorch).
        redraw_interval: training forwards between two draws of the directions.
        dropout: dropout on the output (training).

    As the attention of :class:`~graphpe.layers.gps.GPSLayer` it reads ``batch`` and
    ``num_graphs``.
    """

    #: GPSLayer's contract (:mod:`graphpe.layers.gps`)
    reads = ("batch", "num_graphs")
    updates = None
    adds_residual = False

    def __init__(self, channels: int, heads: int = 1, num_features: int | None = None,
                 redraw_interval: int = 1000, dropout: float = 0.0) -> None:
        super().__init__()
        check_heads(channels, heads)
        self.heads, self.head_dim = heads, channels // heads
        if num_features is None:
            num_features = max(1, int(self.head_dim * math.log(self.head_dim)))
        num_features = check_positive_int("num_features", num_features)
        redraw_interval = check_non_negative_int("redraw_interval", redraw_interval)
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout!r}")
        self.num_features, self.redraw_interval, self.dropout = (num_features, redraw_interval,
                                                                 dropout)
        self.to_q = nn.Linear(channels, channels)
        self.to_k = nn.Linear(channels, channels)
        self.to_v = nn.Linear(channels, channels)
        self.to_out = nn.Linear(channels, channels)
        self.register_buffer("projection_matrix",
                             orthogonal_gaussian_features(num_features, self.head_dim))
        self.calls_since_redraw = 0

    @torch.compiler.disable  # a host-side counter and a QR: outside any compiled graph
    def _count_call(self) -> None:
        if not self.training or not self.redraw_interval:
            return
        self.calls_since_redraw += 1
        if self.calls_since_redraw >= self.redraw_interval:
            self.redraw_features()

    def redraw_features(self) -> None:
        """Draw the random feature directions again (from torch's default generator)."""
        fresh = orthogonal_gaussian_features(self.num_features, self.head_dim)
        self.projection_matrix.copy_(fresh.to(self.projection_matrix))
        self.calls_since_redraw = 0

    def features(self, x: Tensor, batch: Tensor | None, num_graphs: int) -> Tensor:
        r""":math:`\varphi` of the docstring on ``x [N, heads, d]`` -> ``[N, heads, m]``:
        queries (``batch`` None) stabilized per row, keys per graph and head."""
        scale = self.head_dim ** -0.25
        proj = torch.einsum("nhd,md->nhm", x * scale, self.projection_matrix.to(x.dtype))
        half_norm = (x * scale).square().sum(-1, keepdim=True) / 2
        if batch is None:
            stab = proj.amax(-1, keepdim=True)
        else:
            row = proj.amax(-1)  # [N, heads]
            stab = row.new_full((num_graphs, self.heads), float("-inf")).scatter_reduce(
                0, batch.unsqueeze(1).expand_as(row), row, "amax")[batch].unsqueeze(-1)
        return (torch.exp(proj - half_norm - stab.detach()) + PERFORMER_EPS) * (
            self.num_features ** -0.5)

    def forward(self, x: Tensor, batch: Tensor, num_graphs: int) -> Tensor:
        """``x [N, channels]``, ``batch [N]`` graph ids (``num_graphs`` of them) -> ``[N,
        channels]``."""
        self._count_call()
        n = x.size(0)
        shape = (n, self.heads, self.head_dim)
        # the features and sums in float32 at least (under autocast the maps give bf16/fp16)
        acc = torch.promote_types(x.dtype, torch.float32)
        q = self.features(self.to_q(x).view(shape).to(acc), None, num_graphs)
        k = self.features(self.to_k(x).view(shape).to(acc), batch, num_graphs)
        v = self.to_v(x).view(shape).to(acc)
        if num_graphs == 1:  # one (large) graph: no per-node copy of the [m, d] sums
            kv_sum = torch.einsum("nhm,nhe->hme", k, v)
            num = torch.einsum("nhm,hme->nhe", q, kv_sum)
            den = (q * k.sum(0)).sum(-1, keepdim=True)
        else:
            kv = torch.einsum("nhm,nhe->nhme", k, v)
            kv_sum = kv.new_zeros((num_graphs,) + kv.shape[1:]).index_add(0, batch, kv)
            k_sum = k.new_zeros((num_graphs,) + k.shape[1:]).index_add(0, batch, k)
            num = torch.einsum("nhm,nhme->nhe", q, kv_sum[batch])
            den = (q * k_sum[batch]).sum(-1, keepdim=True)
        out = self.to_out((num / den).reshape(n, -1).to(self.to_out.weight.dtype))
        return F.dropout(out, self.dropout, self.training)


class LinearAttention(nn.Module):
    r"""Linear-time multi-head attention within each graph (Katharopoulos et al., 2020):
    with the feature map :math:`\varphi(x) = \mathrm{elu}(x) + 1`,

    .. math:: o_i = \frac{\varphi(q_i)^\top \sum_{j \in G(i)} \varphi(k_j) v_j^\top}
                         {\varphi(q_i)^\top \sum_{j \in G(i)} \varphi(k_j)},

    sums over the nodes of node ``i``'s graph, ``O(N d^2 / heads)`` time and memory.

    Args:
        channels: width (``heads * head_dim``).
        heads: attention heads.

    As the attention of :class:`~graphpe.layers.gps.GPSLayer` it reads ``batch`` and
    ``num_graphs``.
    """

    #: GPSLayer's contract (:mod:`graphpe.layers.gps`)
    reads = ("batch", "num_graphs")
    updates = None
    adds_residual = False

    def __init__(self, channels: int, heads: int = 1) -> None:
        super().__init__()
        check_heads(channels, heads)
        self.heads, self.head_dim = heads, channels // heads
        self.qkv = nn.Linear(channels, 3 * channels)
        self.out = nn.Linear(channels, channels)

    def forward(self, x: Tensor, batch: Tensor, num_graphs: int) -> Tensor:
        """``x [N, channels]``, ``batch [N]`` graph ids (``num_graphs`` of them) -> ``[N,
        channels]``."""
        n = x.size(0)
        q, k, v = self.qkv(x).view(n, 3, self.heads, self.head_dim).unbind(1)
        q, k = F.elu(q) + 1, F.elu(k) + 1
        # the per-graph sums in x's precision (under autocast q, k and v are bfloat16/float16)
        acc = torch.promote_types(x.dtype, k.dtype)
        num, den = graph_kernel_sums(q.to(acc), k.to(acc), v.to(acc), batch, num_graphs)
        out = num / den.unsqueeze(-1).clamp(min=1e-6)
        return self.out(out.reshape(n, -1).to(self.out.weight.dtype))
