"""GRIT's attention: node attention whose logits come from pair features that every layer
updates (Ma et al., "Graph Inductive Biases in Transformers without Message Passing", ICML
2023), over the pairs listed in a ``pair_index`` (all pairs of each small graph, or the pairs
within a few hops of a large one)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.utils import softmax

from graphpe.layers.attention import check_heads, weight_dropout
from graphpe.ops import pair_attention as kernels
from graphpe.ops.graph import index_range
from graphpe.ops.host import host_empty, use_host_kernels

# ``sqrt(|x| + eps) - sqrt(eps)`` instead of ``sqrt(|x|)``: the same value to 1e-4 and a
# gradient bounded by ``1 / (2 sqrt(eps))`` at 0, where the plain square root's is infinite.
SIGNED_SQRT_EPS = 1e-8
# GRIT's bound on the attention logits before the softmax
LOGIT_CLAMP = 5.0


def signed_sqrt(x: Tensor, eps: float = SIGNED_SQRT_EPS) -> Tensor:
    """``sign(x) * (sqrt(|x| + eps) - sqrt(eps))``: GRIT's signed square root, which keeps the
    products of the pair and node terms on the scale of their factors. Computed in float32 at
    least (returned in ``x``'s dtype): in float16 ``eps`` rounds to 0 and the gradient at 0 is
    infinite."""
    wide = x.to(torch.promote_types(x.dtype, torch.float32))
    return (torch.sign(wide) * (torch.sqrt(wide.abs() + eps) - math.sqrt(eps))).to(x.dtype)


def log_degree(edge_index: Tensor, num_nodes: int, dtype: torch.dtype = torch.float32) -> Tensor:
    """``log(1 + in-degree)`` per node, ``[N, 1]``: the input of GRIT's degree scaler."""
    deg = torch.bincount(edge_index[1], minlength=num_nodes)[:num_nodes]
    return torch.log1p(deg.to(dtype)).unsqueeze(-1)


def _host(t: Tensor):
    return t.detach().contiguous().numpy()


class _PairScores(torch.autograd.Function):
    """:func:`graphpe.ops.pair_attention.grit_pair_scores` with its compiled backward."""

    @staticmethod
    def forward(ctx, q, k, ewb, score, query, key):
        dtype = _host(q).dtype
        pair = host_empty((ewb.size(0), q.size(1)), dtype)
        logits = host_empty((ewb.size(0), score.size(1)), dtype)
        kernels.grit_pair_scores(_host(q), _host(k), _host(ewb), _host(score), _host(query),
                                 _host(key), SIGNED_SQRT_EPS, pair, logits)
        ctx.save_for_backward(q, k, ewb, score, query, key)
        return torch.from_numpy(pair), torch.from_numpy(logits)

    @staticmethod
    def backward(ctx, grad_pair, grad_logits):
        q, k, ewb, score, query, key = ctx.saved_tensors
        if grad_pair is None:
            grad_pair = ewb.new_zeros(ewb.size(0), q.size(1))
        if grad_logits is None:
            grad_logits = ewb.new_zeros(ewb.size(0), score.size(1))
        ewb_host = _host(ewb)
        grad_ewb = host_empty(ewb_host.shape, ewb_host.dtype)
        grad_q, grad_k, grad_score = kernels.grit_pair_scores_backward(
            _host(q), _host(k), ewb_host, _host(score), _host(query), _host(key),
            SIGNED_SQRT_EPS, _host(grad_pair), _host(grad_logits), grad_ewb)
        return (torch.from_numpy(grad_q), torch.from_numpy(grad_k), torch.from_numpy(grad_ewb),
                torch.from_numpy(grad_score), None, None)


class _PairWeightedSums(torch.autograd.Function):
    """:func:`graphpe.ops.pair_attention.pair_weighted_sums` with its compiled backward."""

    @staticmethod
    def forward(ctx, alpha, v, pair, query, key, num_nodes):
        out_v, out_pair = kernels.pair_weighted_sums(_host(alpha), _host(v), _host(pair),
                                                     _host(query), _host(key), num_nodes)
        ctx.save_for_backward(alpha, v, pair, query, key)
        return torch.from_numpy(out_v), torch.from_numpy(out_pair)

    @staticmethod
    def backward(ctx, grad_v_out, grad_pair_out):
        alpha, v, pair, query, key = ctx.saved_tensors
        if grad_v_out is None:
            grad_v_out = v.new_zeros(v.shape)
        if grad_pair_out is None:
            grad_pair_out = v.new_zeros(grad_v_out.shape)
        alpha_host, pair_host = _host(alpha), _host(pair)
        grad_alpha = host_empty(alpha_host.shape, alpha_host.dtype)
        grad_pair = host_empty(pair_host.shape, pair_host.dtype)
        grad_v = kernels.pair_weighted_sums_backward(
            alpha_host, _host(v), pair_host, _host(query), _host(key), _host(grad_v_out),
            _host(grad_pair_out), grad_alpha, grad_pair)
        return (torch.from_numpy(grad_alpha), torch.from_numpy(grad_v),
                torch.from_numpy(grad_pair), None, None, None)


class GRITAttention(nn.Module):
    r"""GRIT's multi-head attention with pair features. For a pair :math:`(i, j)` (query
    :math:`i = \mathrm{pair\_index}[0]`, key :math:`j = \mathrm{pair\_index}[1]`) with features
    :math:`e_{ij}`, per head:

    .. math::
        \hat e_{ij} &= \mathrm{ReLU}\big(\rho\big((W_Q x_i + W_K x_j) \odot W_{Ew} e_{ij}\big)
                       + W_{Eb} e_{ij}\big), \qquad \rho(z) = \mathrm{sign}(z)\sqrt{|z|}, \\
        \alpha_{ij} &= \mathrm{softmax}_{j}\big(\mathrm{clamp}(w_A^\top \hat e_{ij}, \pm 5)\big),
        \\
        o_i &= \textstyle\sum_j \alpha_{ij}\, W_V x_j + W_{Ev} \sum_j \alpha_{ij} \hat e_{ij},

    then the degree scaler :math:`o_i \leftarrow \theta_1 \odot o_i + \log(1 + d_i)\,
    \theta_2 \odot o_i` and the output maps: ``out_proj(o)`` for the nodes and
    ``pair_proj(ê)`` as the pairs' new features. The softmax runs over the keys listed for
    each query (a pair that is not listed is not attended); dropout acts on :math:`\alpha`.

    Args:
        channels: width of nodes and pairs (``heads * head_dim``).
        heads: attention heads.
        dropout: dropout on the attention weights during training (GRIT uses 0.2 on ZINC).
        clamp: bound on the logits (None: no bound).
        degree_scaler: learn the per-channel degree scaling (GRIT's default).
        update_pairs: return the pairs' new features (False for a last layer, whose pair
            features nothing reads: no ``pair_proj``, and None in their place).

    As the attention of :class:`~graphpe.layers.gps.GPSLayer` it reads ``pair_attr``,
    ``pair_index`` and ``log_deg`` (the layer computes it from ``edge_index`` when not given)
    and updates the pair features: the layer adds their residual and norm,
    :math:`e' = \mathrm{norm}_e(e + \mathrm{Dropout}(\mathrm{pair\_proj}(\hat e)))`.
    """

    #: GPSLayer's contract (:mod:`graphpe.layers.gps`): the inputs read after ``x``, in call
    #: order, and the features returned updated beside the nodes, ``(h, pair_proj(ê))``;
    #: their residual and norm are the layer's
    reads = ("pair_attr", "pair_index", "log_deg")
    updates = "pair_attr"
    adds_residual = False

    def __init__(self, channels: int, heads: int = 4, dropout: float = 0.0,
                 clamp: float | None = LOGIT_CLAMP, degree_scaler: bool = True,
                 update_pairs: bool = True) -> None:
        super().__init__()
        check_heads(channels, heads)
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout!r}")
        self.channels, self.heads, self.head_dim = channels, heads, channels // heads
        self.dropout, self.clamp = dropout, clamp
        # queries carry a bias, keys and values none (GRIT's choice: a key or value bias would
        # be the same for every key of a query)
        self.query = nn.Linear(channels, channels)
        self.key_value = nn.Linear(channels, 2 * channels, bias=False)
        self.pair_in = nn.Linear(channels, 2 * channels)  # W_Ew and W_Eb
        self.score = nn.Parameter(torch.empty(self.head_dim, heads))  # w_A per head
        self.pair_value = nn.Parameter(torch.empty(heads, self.head_dim, self.head_dim))
        self.degree_coef = nn.Parameter(torch.empty(channels, 2)) if degree_scaler else None
        self.out_proj = nn.Linear(channels, channels)
        self.pair_proj = nn.Linear(channels, channels) if update_pairs else None
        # the compiled CPU kernels of graphpe.ops.pair_attention (False: the torch formulation,
        # the reference they are tested against)
        self.use_kernels = True
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # GRIT initializes every projection with xavier_normal_
        for lin in (self.query, self.key_value, self.pair_in, self.out_proj, self.pair_proj):
            if lin is not None:
                nn.init.xavier_normal_(lin.weight)
                if lin.bias is not None:
                    nn.init.zeros_(lin.bias)
        nn.init.xavier_normal_(self.score.view(self.head_dim, self.heads, 1))
        nn.init.xavier_normal_(self.pair_value)
        if self.degree_coef is not None:
            nn.init.xavier_normal_(self.degree_coef.view(1, self.channels, 2))

    @property
    def computes_update(self) -> bool:
        """Whether the pairs' new features are computed (GPSLayer's contract)."""
        return self.pair_proj is not None

    def forward(self, x: Tensor, pair_attr: Tensor, pair_index: Tensor,
                log_deg: Tensor | None = None) -> tuple[Tensor, Tensor | None]:
        """``x [N, channels]``, ``pair_attr [P, channels]``, ``pair_index [2, P]`` (pairs of one
        graph each), ``log_deg [N, 1]`` (needed with the degree scaler) -> ``(nodes [N,
        channels], pairs [P, channels] or None without update_pairs)``."""
        if pair_attr is None or pair_index is None:
            raise ValueError("GRIT's attention needs pair_attr [P, channels] and pair_index "
                             "[2, P] (e.g. from PairFeatureEncoder over RRWP)")
        n, heads, dim = x.size(0), self.heads, self.head_dim
        if pair_attr.dim() != 2 or pair_attr.size(1) != self.channels:
            raise ValueError(f"pair_attr must be [num_pairs, {self.channels}], got "
                             f"{list(pair_attr.shape)}")
        if pair_index.dim() != 2 or pair_index.size(0) != 2 or \
                pair_index.size(1) != pair_attr.size(0):
            raise ValueError(f"pair_index must be [2, {pair_attr.size(0)}], got "
                             f"{list(pair_index.shape)}")
        query, key = pair_index[0], pair_index[1]
        q = self.query(x)
        kv = self.key_value(x)
        k, v = kv[:, :self.channels], kv[:, self.channels:]
        ewb = self.pair_in(pair_attr)  # [W_Ew e | W_Eb e]
        compiled = self.use_kernels and use_host_kernels(x, pair_attr, ewb)
        if compiled and pair_index.numel():
            lo, hi = index_range(pair_index.numpy())  # one compiled pass
            if lo < 0 or hi >= n:  # the compiled loops index node rows unchecked
                raise ValueError(f"pair_index holds node ids outside [0, {n})")
        if compiled:
            pair, logits = _PairScores.apply(q, k.contiguous(), ewb, self.score, query, key)
        else:
            e_w, e_b = ewb.view(-1, 2, heads, dim).unbind(1)
            pair = F.relu(signed_sqrt((q.view(n, heads, dim).index_select(0, query)
                                       + k.reshape(n, heads, dim).index_select(0, key)) * e_w)
                          + e_b).reshape(-1, self.channels)  # ê [P, channels]
            logits = torch.einsum("phd,dh->ph", pair.view(-1, heads, dim), self.score)
        if self.clamp is not None:
            logits = logits.clamp(-self.clamp, self.clamp)
        alpha = softmax(logits, query, num_nodes=n)  # over each query's keys
        alpha = weight_dropout(alpha, self.dropout, self.training)
        if compiled:
            out, pair_sum = _PairWeightedSums.apply(alpha.contiguous(), v.contiguous(), pair,
                                                    query, key, n)
        else:
            a = alpha.unsqueeze(-1)
            # summed in x's precision (under autocast v and the pairs are bfloat16/float16)
            acc = torch.promote_types(x.dtype, v.dtype)
            out = x.new_zeros(n, heads, dim, dtype=acc).index_add_(
                0, query, (v.reshape(n, heads, dim).index_select(0, key) * a).to(acc))
            pair_sum = x.new_zeros(n, heads, dim, dtype=acc).index_add_(
                0, query, (pair.view(-1, heads, dim) * a).to(acc))
            out, pair_sum = out.view(n, -1), pair_sum.view(n, -1)
        out = out + torch.einsum("nhd,hde->nhe", pair_sum.view(n, heads, dim),
                                 self.pair_value).reshape(n, -1)
        if self.degree_coef is not None:
            if log_deg is None:
                raise ValueError("the degree scaler needs log_deg [N, 1] (log_degree())")
            out = out * (self.degree_coef[:, 0] + log_deg * self.degree_coef[:, 1])
        if self.pair_proj is None:
            return self.out_proj(out), None
        return self.out_proj(out), self.pair_proj(pair)
