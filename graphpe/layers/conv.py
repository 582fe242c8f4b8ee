"""Message-passing layers written as a few tensor calls (no ``MessagePassing`` machinery), for
the layers whose per-call Python overhead shows in a training step."""

from __future__ import annotations

import weakref
from collections import OrderedDict

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.autograd.function import once_differentiable

from graphpe.layers.common import DeclaredForm
from graphpe.ops import message
from graphpe.ops.checks import check_positive_int
from graphpe.ops.graph import index_range
from graphpe.ops.host import use_host_kernels
from graphpe.ops.spmm import gcn_operator, mean_operator, operator_product


class _GINEAggregate(torch.autograd.Function):
    """``(1 + eps) x + sum_{j -> i} ReLU(x_j + e_ji)`` by the compiled host loops of
    :mod:`graphpe.ops.message`, as one autograd node (``eps`` a constant)."""

    @staticmethod
    def forward(ctx, x, edge_attr, src, dst, scale):
        ctx.save_for_backward(x, edge_attr, src, dst)
        ctx.scale = scale
        return torch.from_numpy(message.gine_aggregate(
            x.detach().numpy(), edge_attr.detach().numpy(), src.numpy(), dst.numpy(), scale))

    @staticmethod
    @once_differentiable  # numpy inside: no graph to differentiate again
    def backward(ctx, grad_out):
        x, edge_attr, src, dst = ctx.saved_tensors
        grad_x, grad_edge = message.gine_aggregate_backward(
            x.detach().numpy(), edge_attr.detach().numpy(), src.numpy(), dst.numpy(),
            ctx.scale, grad_out.contiguous().numpy())
        return torch.from_numpy(grad_x), torch.from_numpy(grad_edge), None, None, None


class _GINAggregate(torch.autograd.Function):
    """``(1 + eps) x + sum_{j -> i} x_j`` by the compiled host loops of
    :mod:`graphpe.ops.message`, as one autograd node with ``eps``'s gradient
    :math:`\\sum_{i,c} \\partial_{ic}\\, x_{ic}`."""

    @staticmethod
    def forward(ctx, x, eps, src, dst):
        scale = 1.0 + float(eps)
        ctx.save_for_backward(x, src, dst)
        ctx.scale = scale
        # a torch allocation: the output is an activation the next layer saves, as large as
        # the other activations of a step (SPE's pair rows: tens of MB), which torch allocates
        out = torch.empty_like(x)
        message.gin_aggregate(x.detach().numpy(), src.numpy(), dst.numpy(), scale,
                              out=out.numpy())
        return out

    @staticmethod
    @once_differentiable  # numpy inside: no graph to differentiate again
    def backward(ctx, grad_out):
        x, src, dst = ctx.saved_tensors
        grad_out = grad_out.contiguous()
        grad_x = torch.from_numpy(message.gin_aggregate_backward(
            src.numpy(), dst.numpy(), ctx.scale, grad_out.numpy()))
        grad_eps = None
        if ctx.needs_input_grad[1]:
            grad_eps = (grad_out * x).sum().reshape(1)
        return grad_x, grad_eps, None, None


def gin_aggregate(x: Tensor, edge_index: Tensor, eps: Tensor) -> Tensor:
    r"""GIN's aggregation :math:`(1 + \epsilon)\, x_i + \sum_{j \to i} x_j` of node signals
    ``x [N, ...]`` (trailing axes are channels; messages flow ``edge_index[0] -> [1]``) with
    ``eps`` a one-element tensor, learned or not. On CPU tensors of one float dtype it is one
    compiled loop over the edges each way (:func:`graphpe.ops.message.gin_aggregate`, ids
    checked); elsewhere a gather and an ``index_add``. Both add the messages in edge order,
    then the scaled ``x``."""
    if (edge_index.size(1) and x.numel() and edge_index.dtype == torch.long
            and use_host_kernels(x, eps)):
        src, dst = checked_edges(edge_index, x.size(0))
        flat = x.reshape(x.size(0), -1).contiguous()
        return _GINAggregate.apply(flat, eps.reshape(1), src, dst).view_as(x)
    agg = torch.zeros_like(x).index_add_(0, edge_index[1], x.index_select(0, edge_index[0]))
    return agg + (1 + eps.reshape(())) * x


class GINLayer(DeclaredForm, nn.Module):
    r"""GIN (Xu et al., "How Powerful are Graph Neural Networks?", ICLR 2019) and, with edge
    features, GINE (Hu et al., "Strategies for Pre-training Graph Neural Networks", ICLR 2020):

    .. math:: x'_i = h_\Theta\Big((1 + \epsilon)\, x_i + \sum_{j \to i}
              \mathrm{ReLU}(x_j + e_{ji})\Big)

    (GIN: the message is :math:`x_j`). The same maths and state (``nn``, ``eps``) as PyG's
    ``GINEConv`` / ``GINConv`` without ``edge_dim``, so their weights load; the messages are
    one gather, one add-ReLU and one ``index_add``. On the CPU, GINE (``eps`` fixed, no edge
    weights) and GIN (no edge weights; :func:`gin_aggregate`) run the aggregation as one
    compiled loop over the edges each way (:mod:`graphpe.ops.message`; ``use_kernels =
    False`` takes the torch formulation).

    As a branch of :class:`~graphpe.layers.gps.GPSLayer` it reads ``edge_index``,
    ``edge_attr`` (GINE; not with ``edge_features=False``) and ``edge_weight``, updates no
    edge or pair features and leaves the residual to the layer.

    Args:
        mlp: :math:`h_\Theta`, e.g. ``Linear -> ReLU -> Linear``.
        eps: initial :math:`\epsilon`.
        train_eps: learn :math:`\epsilon` (else a buffer).
        edge_features: read edge features where given (GINE; without them GIN). False: GIN
            only, a layer that takes no ``edge_attr`` (a GPS layer does not pass it one).
    """

    #: GPSLayer's contract (:mod:`graphpe.layers.gps`): no edge or pair features updated, the
    #: residual and dropout left to the layer
    updates = None
    adds_residual = False
    #: what the fast paths compute in its place (:class:`~graphpe.layers.common.DeclaredForm`)
    form = "gin"

    def __init__(self, mlp: nn.Module, eps: float = 0.0, train_eps: bool = False,
                 edge_features: bool = True) -> None:
        super().__init__()
        self.nn = mlp
        self.edge_features = edge_features
        # GINE's aggregation by the compiled CPU loops of graphpe.ops.message where they apply
        # (False: the torch formulation, the reference)
        self.use_kernels = True
        if train_eps:
            self.eps = nn.Parameter(torch.tensor([float(eps)]))
        else:
            self.register_buffer("eps", torch.tensor([float(eps)]))

    def forward(self, x: Tensor, edge_index: Tensor, edge_attr: Tensor | None = None,
                edge_weight: Tensor | None = None) -> Tensor:
        """``x [N, C]``, ``edge_index [2, E]`` (messages flow ``edge_index[0] -> [1]``),
        ``edge_attr [E, C]`` (GINE) or None (GIN) -> ``[N, out]``. ``edge_weight [E, 1]``
        scales each message (e.g. :class:`PEGGate`)."""
        if edge_attr is not None and not self.edge_features:
            raise ValueError("this GINLayer is GIN (edge_features=False): it takes no edge_attr")
        src, dst = edge_index[0], edge_index[1]
        if edge_attr is not None and edge_attr.shape != (src.numel(), x.size(1)):
            raise ValueError(f"edge_attr must have shape {(src.numel(), x.size(1))} (one row "
                             f"of width {x.size(1)} per edge), got {tuple(edge_attr.shape)}")
        edges = self.kernel_edges(x, edge_index, edge_attr, edge_weight)
        if edges is not None:
            return self.nn(_GINEAggregate.apply(x.contiguous(), edge_attr.contiguous(),
                                                *edges, self.scale))
        if self.use_kernels and edge_attr is None and edge_weight is None:
            # GIN: the compiled loop where it applies (eps learned or not), else torch ops
            return self.nn(gin_aggregate(x, edge_index, self.eps))
        msg = x.index_select(0, src)
        if edge_attr is not None:
            msg = (msg + edge_attr).relu()
        if edge_weight is not None:
            if edge_weight.shape != (msg.size(0), 1):
                raise ValueError(f"edge_weight must have shape ({msg.size(0)}, 1), got "
                                 f"{tuple(edge_weight.shape)}")
            msg = msg * edge_weight
        # summed in the wider of x's and the messages' dtypes (under autocast x may come out
        # of a linear map in bfloat16 while the edge embeddings stay float32)
        acc = torch.promote_types(x.dtype, msg.dtype)
        agg = torch.zeros_like(x, dtype=acc).index_add_(0, dst, msg.to(acc))
        return self.nn(agg + (1.0 + self.eps) * x)

    @property
    def reads(self) -> tuple[str, ...]:
        """The GPS layer's inputs this layer takes after ``x``, in its call order (GPSLayer's
        contract): ``edge_attr`` only where it reads edge features."""
        if self.edge_features:
            return ("edge_index", "edge_attr", "edge_weight")
        return ("edge_index", "edge_weight")

    @property
    def scale(self) -> float:
        """:math:`1 + \\epsilon` as a float (rounded to ``x``'s dtype by the kernels, as the
        torch path's ``1 + eps``)."""
        return 1.0 + self.eps.item()

    def takes_kernels(self, x: Tensor, edge_index: Tensor, edge_attr: Tensor | None,
                      edge_weight: Tensor | None = None) -> bool:
        """Whether GINE's compiled aggregation (:mod:`graphpe.ops.message`) takes these
        inputs (``eps`` fixed, no edge weights, CPU tensors of one float dtype)."""
        return bool(self.use_kernels and edge_attr is not None and edge_weight is None
                    and not self.eps.requires_grad and edge_index.size(1)
                    and use_host_kernels(x, edge_attr, edge_index)
                    and edge_attr.dtype == x.dtype and edge_index.dtype == torch.long)

    def kernel_edges(self, x: Tensor, edge_index: Tensor, edge_attr: Tensor | None,
                     edge_weight: Tensor | None = None) -> tuple[Tensor, Tensor] | None:
        """``(src, dst)`` (:func:`checked_edges`) when :meth:`takes_kernels`, else None."""
        if not self.takes_kernels(x, edge_index, edge_attr, edge_weight):
            return None
        return checked_edges(edge_index, x.size(0))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(nn={self.nn})"


def checked_edges(edge_index: Tensor, num_nodes: int) -> tuple[Tensor, Tensor]:
    """``(src, dst)`` of a CPU int64 ``edge_index``, contiguous, for the compiled loops of
    :mod:`graphpe.ops.message`, which index rows unchecked: raises on node ids outside ``[0,
    num_nodes)``."""
    lo, hi = index_range(edge_index.numpy())
    if lo < 0 or hi >= num_nodes:
        raise ValueError(f"edge_index holds node ids outside [0, {num_nodes})")
    return edge_index[0].contiguous(), edge_index[1].contiguous()


def pe_distances(pe: Tensor, edge_index: Tensor) -> Tensor:
    """``||p_i - p_j||^2`` of every edge ``(i, j)``: ``[E, 1]`` from node positions
    ``pe [N, k]`` (zero columns, e.g. masked eigenvectors of small graphs, add nothing)."""
    return (pe.index_select(0, edge_index[0]) - pe.index_select(0, edge_index[1])).square().sum(
        -1, keepdim=True)


class PEGGate(nn.Module):
    r"""The edge gate of PEG (Wang, Yin, Zhang, Li, "Equivariant and Stable Positional
    Encoding for More Powerful Graph Neural Networks", ICLR 2022), GraphGPS's
    ``EquivStableLapPE``: a message along ``(j, i)`` is scaled by
    :math:`\sigma(\mathrm{MLP}(\lVert p_i - p_j \rVert^2))`, with ``p`` the Laplacian
    eigenvectors kept out of the node features. Distances between eigenvector rows do not
    change when an eigenvector's sign flips or a whole eigenspace's basis rotates, and move
    little when the graph does: the layer is permutation-equivariant and stable (PEG's
    Theorem 3.6). GraphGPS first maps the eigenvectors by a learned linear layer, which gives
    up both; graphpe gates with the raw distances, as the paper.

    Args:
        hidden: width of the MLP ``Linear(1, hidden) -> ReLU -> Linear(hidden, 1)``.
    """

    def __init__(self, hidden: int) -> None:
        super().__init__()
        hidden = check_positive_int("hidden", hidden)
        self.mlp = nn.Sequential(nn.Linear(1, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, distances: Tensor) -> Tensor:
        """``[E, 1]`` squared distances (:func:`pe_distances`) -> ``[E, 1]`` gates in (0, 1)."""
        return torch.sigmoid(self.mlp(distances))


class _GatedAggregate(torch.autograd.Function):
    """GatedGCN's edge logits and gated mean by the compiled host loops of
    :func:`graphpe.ops.message.gated_aggregate`, as one autograd node: ``(xw [N, 4C], ce [E,
    C], bias [3, C], gate [E, 1] or None, src, dst) -> (e_hat [E, C], out [N, C])``."""

    @staticmethod
    def forward(ctx, xw, ce, bias, gate, src, dst):
        xw, ce, bias = xw.detach(), ce.detach(), bias.detach()
        gate_np = None if gate is None else gate.detach().reshape(-1).numpy()
        e_hat, out, inv, mean = message.gated_aggregate(
            xw.numpy(), ce.numpy(), bias.numpy(), src.numpy(), dst.numpy(), gate_np)
        e_hat, inv, mean = torch.from_numpy(e_hat), torch.from_numpy(inv), torch.from_numpy(mean)
        ctx.save_for_backward(xw, bias, gate, src, dst, e_hat, inv, mean)
        return e_hat, torch.from_numpy(out)

    @staticmethod
    @once_differentiable  # numpy inside: no graph to differentiate again
    def backward(ctx, grad_e, grad_out):
        xw, bias, gate, src, dst, e_hat, inv, mean = ctx.saved_tensors
        if grad_out is None:
            grad_out = torch.zeros_like(inv)
        grad_xw, grad_ce, grad_gate = message.gated_aggregate_backward(
            xw.numpy(), bias.numpy(), src.numpy(), dst.numpy(),
            None if gate is None else gate.detach().reshape(-1).numpy(), e_hat.numpy(),
            inv.numpy(), mean.numpy(), grad_out.contiguous().numpy(),
            None if grad_e is None else grad_e.contiguous().numpy())
        grad_xw, grad_ce = torch.from_numpy(grad_xw), torch.from_numpy(grad_ce)
        channels = grad_ce.size(1)
        grad_bias = torch.stack([grad_out.sum(0), grad_xw[:, channels:2 * channels].sum(0),
                                 grad_ce.sum(0)])
        if grad_gate is not None:
            grad_gate = torch.from_numpy(grad_gate).view(-1, 1)
        return grad_xw, grad_ce, grad_bias, grad_gate, None, None


class GatedGCNLayer(DeclaredForm, nn.Module):
    r"""The residual gated graph convolution with edge features (Bresson & Laurent, "Residual
    Gated Graph ConvNets", 2017; with the edge update of Dwivedi et al., "Benchmarking Graph
    Neural Networks", JMLR 2023), as GraphGPS's ``GatedGCNLayer``, the local MPNN of its
    ogbg-mol*, LRGB and PCQM4M models. For every edge :math:`j \to i`:

    .. math::
        \hat e_{ji} &= D x_i + E x_j + C e_{ji}, \qquad
        \sigma_{ji} = \mathrm{sigmoid}(\hat e_{ji})\,[\cdot\, g_{ji}], \\
        \hat x_i &= A x_i + \frac{\sum_{j \to i} \sigma_{ji} \odot B x_j}
                                {\sum_{j \to i} \sigma_{ji} + 10^{-6}}, \\
        x_i' &= x_i + \mathrm{Dropout}(\mathrm{ReLU}(\mathrm{BN}_x(\hat x_i))), \qquad
        e_{ji}' = e_{ji} + \mathrm{Dropout}(\mathrm{ReLU}(\mathrm{BN}_e(\hat e_{ji}))),

    with ``A``..``E`` linear maps with biases, the gate :math:`g_{ji}` an optional per-edge
    weight (PEG's, :class:`PEGGate`, as GraphGPS's ``equivstable_pe``) and the residuals
    optional. Submodules are named as GraphGPS's (``A``..``E``, ``bn_node_x``,
    ``bn_edge_e``), so its weights load. ``A``, ``B``, ``D`` and ``E`` run as one product;
    on CPU tensors of one float dtype the logits, gates and gated mean are one compiled loop
    over the edges each way (:func:`graphpe.ops.message.gated_aggregate`; ``use_kernels =
    False`` takes the torch formulation, the reference and the GPU path).

    Args:
        channels: width of the node and edge features (in and out).
        dropout: dropout on both outputs before the residual.
        residual: add the inputs to the outputs.
        update_edges: compute :math:`e'` (False for a network's last layer, whose edge
            features nobody reads: it returns ``(x', None)`` and has no ``bn_edge_e``).

    As a branch of :class:`~graphpe.layers.gps.GPSLayer` (GraphGPS's ``CustomGatedGCN``) it
    reads ``edge_index``, ``edge_attr`` and ``edge_weight``, updates the edge features and adds
    its own residuals and dropout: the layer's MPNN branch is :math:`\mathrm{norm}_1(x')` and
    :math:`e'` its new edge features.
    """

    #: GPSLayer's contract (:mod:`graphpe.layers.gps`): the inputs read after ``x``, in call
    #: order, and the features returned updated beside the nodes, ``(x', edge_attr')``
    reads = ("edge_index", "edge_attr", "edge_weight")
    updates = "edge_attr"
    #: what the fast paths compute in its place (:class:`~graphpe.layers.common.DeclaredForm`)
    form = "gatedgcn"

    def __init__(self, channels: int, dropout: float = 0.0, residual: bool = True,
                 update_edges: bool = True) -> None:
        super().__init__()
        channels = check_positive_int("channels", channels)
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout!r}")
        self.channels, self.dropout, self.residual = channels, dropout, residual
        self.update_edges = update_edges
        self.A, self.B, self.C, self.D, self.E = (nn.Linear(channels, channels)
                                                  for _ in range(5))
        self.bn_node_x = nn.BatchNorm1d(channels)
        self.bn_edge_e = nn.BatchNorm1d(channels) if update_edges else None
        self.use_kernels = True

    @property
    def adds_residual(self) -> bool:
        """Whether the outputs include the residuals (GPSLayer's contract)."""
        return self.residual

    @property
    def computes_update(self) -> bool:
        """Whether :math:`e'` is computed (GPSLayer's contract; False: ``(x', None)``)."""
        return self.update_edges

    def forward(self, x: Tensor, edge_index: Tensor, edge_attr: Tensor,
                edge_weight: Tensor | None = None) -> tuple[Tensor, Tensor | None]:
        """``x [N, channels]``, ``edge_attr [E, channels]`` (edge ``k`` runs
        ``edge_index[0, k] -> edge_index[1, k]``), ``edge_weight [E, 1]`` gates or None ->
        ``(x' [N, channels], edge_attr' [E, channels] or None)``."""
        x_hat, e_hat = self.gated(x, edge_index, edge_attr, edge_weight)
        x_out = F.dropout(F.relu(self.bn_node_x(x_hat)), self.dropout, self.training)
        if self.residual:
            x_out = x + x_out
        if self.bn_edge_e is None:
            return x_out, None
        e_out = F.dropout(F.relu(self.bn_edge_e(e_hat)), self.dropout, self.training)
        return x_out, edge_attr + e_out if self.residual else e_out

    def gated(self, x: Tensor, edge_index: Tensor, edge_attr: Tensor,
              edge_weight: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """The layer before its norms: ``(x_hat [N, C], e_hat [E, C])`` of the docstring's
        formula (the static GPS path normalizes them over its real rows and edges)."""
        if edge_attr is None or edge_attr.shape != (edge_index.size(1), self.channels):
            got = None if edge_attr is None else tuple(edge_attr.shape)
            raise ValueError(f"GatedGCNLayer needs edge_attr [num_edges, {self.channels}] "
                             f"= [{edge_index.size(1)}, {self.channels}], got {got}")
        if edge_weight is not None and edge_weight.shape != (edge_index.size(1), 1):
            raise ValueError(f"edge_weight must have shape ({edge_index.size(1)}, 1), got "
                             f"{tuple(edge_weight.shape)}")
        c = self.channels
        # the four maps of x as one product [N, 4C]; the biases are added per edge and node
        xw = torch.mm(x, torch.cat([self.A.weight, self.B.weight, self.D.weight,
                                    self.E.weight]).t())
        ce = torch.mm(edge_attr, self.C.weight.t())
        bias = torch.stack([self.A.bias, self.B.bias, self.C.bias + self.D.bias + self.E.bias])
        # the products' dtypes decide (under autocast they are bfloat16/float16: torch path)
        tensors = (xw, ce, bias) if edge_weight is None else (xw, ce, bias, edge_weight)
        if (self.use_kernels and edge_index.size(1) and use_host_kernels(*tensors)
                and edge_index.dtype == torch.long):
            src, dst = checked_edges(edge_index, x.size(0))
            e_hat, x_hat = _GatedAggregate.apply(xw.contiguous(), ce.contiguous(),
                                                 bias.contiguous(), edge_weight, src, dst)
        else:
            src, dst = edge_index[0], edge_index[1]
            e_hat = (ce + xw[:, 2 * c:3 * c].index_select(0, dst)
                     + xw[:, 3 * c:].index_select(0, src) + bias[2])
            sigma = torch.sigmoid(e_hat)
            if edge_weight is not None:
                sigma = sigma * edge_weight
            # numerator and denominator in one scatter: [E, 2C]
            both = torch.cat([sigma * (xw[:, c:2 * c] + bias[1]).index_select(0, src), sigma],
                             dim=1)
            sums = both.new_zeros(x.size(0), 2 * c).index_add_(0, dst, both)
            x_hat = xw[:, :c] + bias[0] + sums[:, :c] / (sums[:, c:] + message.GATE_EPS)
        return x_hat, e_hat

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.channels}, dropout={self.dropout})"


# GCN's operator pays where message passing is slow: graphs of at least this many edges (a
# smaller batch goes through GCNConv's own message passing)
GCN_OPERATOR_MIN_EDGES = 50_000
# operators kept (the edge_index tensors a run alternates between: a full graph, its batches)
GCN_OPERATORS_KEPT = 4
_gcn_operators: OrderedDict[int, tuple] = OrderedDict()


#: the propagation operators of :func:`propagate`: name -> its builder in graphpe.ops.spmm
OPERATORS = {"gcn": gcn_operator, "mean": mean_operator}


def _cached_gcn_operator(edge_index: Tensor, num_nodes: int, dtype: torch.dtype,
                         kind: str = "gcn") -> tuple[Tensor, Tensor]:
    """The operator ``OPERATORS[kind]`` of ``edge_index`` (GCN's by default), kept for the
    same tensor object (unchanged since: its version counter) so that every layer, epoch and
    evaluation of a full-graph run builds it once."""
    key = (id(edge_index), kind)
    entry = _gcn_operators.get(key)
    if entry is not None:
        ref, version, nodes, kind_dtype, operators = entry
        if ref() is edge_index and version == edge_index._version and nodes == num_nodes \
                and kind_dtype == dtype:
            _gcn_operators.move_to_end(key)
            return operators
    operators = OPERATORS[kind](edge_index, num_nodes, dtype)
    _gcn_operators[key] = (weakref.ref(edge_index), edge_index._version, num_nodes, dtype,
                           operators)
    while len(_gcn_operators) > GCN_OPERATORS_KEPT:
        _gcn_operators.popitem(last=False)
    return operators


def propagate(h: Tensor, edge_index: Tensor, kind: str = "gcn") -> Tensor:
    """``P h`` for the propagation operator ``P`` named by ``kind``: ``"gcn"``, GCN's
    ``D^-1/2 (A + I) D^-1/2`` (PyG's ``gcn_norm``, self loops added where missing), or
    ``"mean"``, the mean over in-neighbours. One sparse product with the operator built once
    per ``edge_index`` tensor (:func:`graphpe.ops.spmm.gcn_operator`,
    :func:`~graphpe.ops.spmm.mean_operator`); its gradient is the product with ``P^T``."""
    if kind not in OPERATORS:
        raise ValueError(f"kind must be one of {tuple(OPERATORS)}, got {kind!r}")
    dtype = h.dtype if h.dtype in (torch.float32, torch.float64) else torch.float32
    operator, transpose = _cached_gcn_operator(edge_index, h.size(0), dtype, kind)
    return operator_product(operator, transpose, h.to(dtype)).to(h.dtype)


def gcn_conv(conv: nn.Module, h: Tensor, edge_index: Tensor) -> Tensor:
    """``conv(h, edge_index)`` for PyG's ``GCNConv`` ``conv`` with its default normalization
    (self loops, symmetric, no ``improved``, not ``cached``, with bias), on a graph of at
    least :data:`GCN_OPERATOR_MIN_EDGES` edges as ``S (h W) + b`` with its operator ``S``
    (:func:`graphpe.ops.spmm.gcn_operator`, built once per ``edge_index`` tensor); the same
    maths, to rounding. PyG's ``SAGEConv`` goes to :func:`sage_conv`; other convolutions and
    settings, half precision and sparse ``edge_index`` go through ``conv`` itself."""
    covered = (isinstance(edge_index, Tensor) and not edge_index.is_sparse
               and edge_index.size(-1) >= GCN_OPERATOR_MIN_EDGES
               and h.dtype in (torch.float32, torch.float64)
               and not torch.is_autocast_enabled(h.device.type)
               and getattr(conv, "normalize", False) and getattr(conv, "add_self_loops", False)
               and not getattr(conv, "improved", True) and not getattr(conv, "cached", True)
               and getattr(conv, "bias", None) is not None and conv.__class__.__name__
               == "GCNConv")
    if not covered:
        return sage_conv(conv, h, edge_index)
    operator, transpose = _cached_gcn_operator(edge_index, h.size(0), h.dtype)
    return operator_product(operator, transpose, conv.lin(h)) + conv.bias


def sage_conv(conv: nn.Module, h: Tensor, edge_index: Tensor) -> Tensor:
    """``conv(h, edge_index)`` for PyG's ``SAGEConv`` ``conv`` with mean aggregation, a root
    weight and neither ``normalize`` nor ``project``, on a graph of at least
    :data:`GCN_OPERATOR_MIN_EDGES` edges as ``W_l (M h) + b + W_r h`` with the mean operator
    ``M`` (:func:`graphpe.ops.spmm.mean_operator`, built once per ``edge_index`` tensor, as
    PyG's cached CSR ``adj_t`` path reads it); the same maths, to rounding. Anything else goes
    through ``conv`` itself."""
    covered = (conv.__class__.__name__ == "SAGEConv" and isinstance(edge_index, Tensor)
               and not edge_index.is_sparse and edge_index.size(-1) >= GCN_OPERATOR_MIN_EDGES
               and h.dtype in (torch.float32, torch.float64)
               and not torch.is_autocast_enabled(h.device.type)
               and getattr(conv, "aggr", None) == "mean" and getattr(conv, "root_weight", False)
               and not getattr(conv, "normalize", True) and not getattr(conv, "project", True))
    if not covered:
        return conv(h, edge_index)
    operator, transpose = _cached_gcn_operator(edge_index, h.size(0), h.dtype, "mean")
    return conv.lin_l(operator_product(operator, transpose, h)) + conv.lin_r(h)
