"""Positional-encoding encoders. One interface: ``forward(batch) -> Tensor[N, channels]``, where
``batch`` is a PyG ``Data``/``Batch`` carrying the attributes written by
:mod:`graphpe.transforms` (names configurable)."""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import NamedTuple

import torch
from torch import Tensor, nn

from graphpe.nn.common import mlp, read_attribute
from graphpe.nn.conv import gin_aggregate
from graphpe.ops.checks import check_non_negative_int, check_positive_int
from graphpe.ops.walk import all_pairs, pair_row_edges

POOLINGS = ("sum", "mean")


def _graph_index(batch) -> Tensor:
    b = batch.get("batch") if hasattr(batch, "get") else None
    if b is None:
        return torch.zeros(batch.num_nodes, dtype=torch.long, device=batch.edge_index.device)
    return b


class NodeBlocks(NamedTuple):
    """Where each graph's nodes lie in a batch (nodes of a graph are contiguous, as in PyG)."""

    graph: Tensor  # [N] the graph of each node
    num_graphs: int
    ptr: Tensor  # [G + 1] node offsets
    local: Tensor  # [N] each node's index within its graph
    n_max: int  # the largest graph's node count
    first: Tensor  # [G] each graph's first node (clamped into range for an empty graph)


def node_blocks(batch, num_nodes: int) -> NodeBlocks:
    """The :class:`NodeBlocks` of ``batch`` (its ``batch`` vector; one graph without it), for
    encoders that lay each graph's nodes out densely."""
    graph = _graph_index(batch)
    num_graphs = int(graph.max()) + 1 if num_nodes else 0
    counts = torch.bincount(graph, minlength=num_graphs)
    ptr = torch.cat([counts.new_zeros(1), torch.cumsum(counts, 0)])
    start = ptr[:-1]
    local = torch.arange(num_nodes, device=graph.device) - start[graph]
    return NodeBlocks(graph, num_graphs, ptr, local, int(counts.max()) if num_nodes else 0,
                      start.clamp(max=max(num_nodes - 1, 0)))


def _spectral_inputs(batch, attr_names: tuple[str, str, str], k: int, dtype: torch.dtype):
    """``(eigenvectors [N, k], eigenvalues [N, k], mask [N, k] or None)`` of a batch, the
    first two in ``dtype`` (the encoder's parameters': float64 models take float64 PEs)."""
    vec_name, val_name, mask_name = attr_names
    producer = f"LaplacianPE(k={k}, attr_names={tuple(attr_names)!r})"
    vecs = read_attribute(batch, vec_name, producer)
    vals = read_attribute(batch, val_name, producer)
    if vecs.dim() != 2 or vecs.size(1) != k:
        raise ValueError(f"expected {vec_name} [N, {k}], got {list(vecs.shape)}")
    mask = batch.get(mask_name) if hasattr(batch, "get") else None
    return vecs.to(dtype), vals.to(dtype), mask


def parameter_dtype(module: nn.Module) -> torch.dtype:
    """The dtype of ``module``'s (first) parameter: what its inputs read from a batch are cast
    to (float64 in a ``model.double()``, float32 under autocast)."""
    return next(module.parameters()).dtype


class LapPEEncoder(nn.Module):
    r"""Laplacian eigenvectors with their eigenvalues through DeepSets (GraphGPS's LapPE
    encoder, Rampasek et al., 2022): for node :math:`i` and eigenpair :math:`j`,

    .. math:: h_i = \rho\Big(\sum_{j : \mathrm{mask}_{ij}} \phi([v_{ij}, \lambda_j])\Big),

    with :math:`\phi: \mathbb{R}^2 \to \mathbb{R}^h` and :math:`\rho` MLPs; padded columns are
    masked out. In training, each graph's eigenvectors get random sign flips (per column).

    Args:
        k: eigenpairs per node (the ``k`` of :class:`~graphpe.transforms.LaplacianPE`).
        channels: output channels.
        hidden: width of ``phi`` and ``rho`` (default ``channels``).
        pooling: ``sum`` or ``mean`` over the valid columns.
        random_sign_flip: flip signs at random while training.
        attr_names: the (eigenvectors, eigenvalues, mask) attributes.
    """

    # runs under StaticGPS: its DeepSets reads per-node rows and a per-graph sum
    static_shapes = True

    def __init__(
        self,
        k: int,
        channels: int,
        hidden: int | None = None,
        pooling: str = "sum",
        random_sign_flip: bool = True,
        attr_names: tuple[str, str, str] = ("lap_pe", "lap_eigvals", "lap_mask"),
    ) -> None:
        super().__init__()
        check_positive_int("k", k)
        check_positive_int("channels", channels)
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
        hidden = hidden or channels
        self.k, self.channels, self.pooling = k, channels, pooling
        self.random_sign_flip, self.attr_names = random_sign_flip, tuple(attr_names)
        self.phi = mlp([2, hidden, hidden])
        self.rho = mlp([hidden, hidden, channels])

    def forward(self, batch) -> Tensor:
        """``batch`` with ``attr_names`` (eigenvectors ``[N, k]``, eigenvalues ``[N, k]``,
        optional mask ``[N, k]``, as written by ``LaplacianPE``; also ``batch.batch`` and
        ``edge_index`` where the encoder needs them) -> ``[N, channels]``."""
        vecs, vals, mask = _spectral_inputs(batch, self.attr_names, self.k,
                                            parameter_dtype(self))
        graph = num_graphs = None
        if self.training and self.random_sign_flip:
            graph = _graph_index(batch)
            num_graphs = int(graph.max()) + 1 if graph.numel() else 0
        return self.encode(vecs, vals, mask, graph, num_graphs)

    def encode(self, vecs: Tensor, vals: Tensor, mask: Tensor | None, graph: Tensor | None,
               num_graphs: int | None) -> Tensor:
        """The encoder on its tensors: eigenvectors and eigenvalues ``[N, k]``, the valid
        columns ``mask [N, k]`` (None: all), and, for the random sign flips in training, each
        node's graph ``graph [N]`` among ``num_graphs``."""
        if mask is None:
            mask = torch.ones_like(vecs, dtype=torch.bool)
        if self.training and self.random_sign_flip:
            signs = torch.randint(0, 2, (num_graphs, self.k), device=vecs.device) * 2 - 1
            vecs = vecs * signs[graph].to(vecs.dtype)
        h = self.phi(torch.stack([vecs, vals], dim=-1)) * mask.unsqueeze(-1)
        h = h.sum(1)
        if self.pooling == "mean":
            h = h / mask.sum(1, keepdim=True).clamp(min=1)
        return self.rho(h)


class _ChannelGIN(nn.Module):
    """GIN layers on node signals with extra axes, ``[N, ..., C]``: every index of the middle
    axes is an independent signal on the graph (weights shared across them; SignNet's
    eigenvector columns), or on rows ``[R, C]`` of any graph (SPE's pair rows). With
    ``batch_norm``, a BatchNorm over all real entries (those ``keep`` marks) follows every layer
    but the last, as in SPE's reference GIN: without it the sum over ``n`` columns that follows
    gives activations whose scale grows with the graph size and training can stall (SPE on CSL:
    chance accuracy on 2 of 5 folds)."""

    def __init__(self, sizes: list[int], batch_norm: bool = False) -> None:
        super().__init__()
        self.mlps = nn.ModuleList(mlp([a, b, b]) for a, b in zip(sizes[:-1], sizes[1:],
                                                                  strict=True))
        self.eps = nn.Parameter(torch.zeros(len(self.mlps)))
        self.norms = nn.ModuleList(nn.BatchNorm1d(b) for b in sizes[1:-1]) if batch_norm else None

    def forward(self, h: Tensor, edge_index: Tensor, keep: Tensor | None = None) -> Tensor:
        for layer, update in enumerate(self.mlps):
            h = update(gin_aggregate(h, edge_index, self.eps[layer]))
            if layer < len(self.mlps) - 1:
                if self.norms is not None:
                    h = self._norm(self.norms[layer], h, keep)
                h = torch.relu(h)
            if keep is not None:
                h = h * keep
        return h

    @staticmethod
    def _norm(norm: nn.BatchNorm1d, h: Tensor, keep: Tensor | None) -> Tensor:
        """BatchNorm over the channel axis of the real entries only (padding has no say in
        the statistics)."""
        flat = h.reshape(-1, h.size(-1))
        real = None if keep is None else keep.expand(*h.shape[:-1], 1).reshape(-1).bool()
        rows = flat if real is None else flat[real]
        if norm.training and rows.size(0) < 2:  # one value per channel: no batch statistics
            return h
        if real is None:
            return norm(flat).view_as(h)
        out = torch.zeros_like(flat)
        out[real] = norm(rows)
        return out.view_as(h)


class SignNetEncoder(nn.Module):
    r"""SignNet (Lim et al., "Sign and Basis Invariant Networks for Spectral Graph
    Representation Learning", ICLR 2023): every eigenvector column is a 1-channel signal on the
    graph, processed by a GIN :math:`\phi` (weights shared across columns, columns batched along
    a channel axis), made sign-invariant as :math:`\phi(v) + \phi(-v)`, then concatenated with
    the eigenvalues' embedding over the ``k`` columns and mapped by an MLP :math:`\rho`.

    Args:
        k: eigenvectors per node.
        channels: output channels.
        hidden: width of ``phi`` (default 16) and ``rho`` (default ``channels``).
        phi_layers: GIN layers of ``phi``.
        attr_names: the (eigenvectors, eigenvalues, mask) attributes.
    """

    def __init__(
        self,
        k: int,
        channels: int,
        hidden: int = 16,
        phi_layers: int = 3,
        attr_names: tuple[str, str, str] = ("lap_pe", "lap_eigvals", "lap_mask"),
    ) -> None:
        super().__init__()
        for name, value in (("k", k), ("channels", channels), ("hidden", hidden),
                            ("phi_layers", phi_layers)):
            check_positive_int(name, value)
        self.k, self.channels, self.attr_names = k, channels, tuple(attr_names)
        self.phi = _ChannelGIN([2] + [hidden] * phi_layers)
        self.rho = mlp([k * hidden, channels, channels])

    def forward(self, batch) -> Tensor:
        """``batch`` with ``attr_names`` (eigenvectors ``[N, k]``, eigenvalues ``[N, k]``,
        optional mask ``[N, k]``, as written by ``LaplacianPE``; also ``batch.batch`` and
        ``edge_index`` where the encoder needs them) -> ``[N, channels]``."""
        vecs, vals, mask = _spectral_inputs(batch, self.attr_names, self.k,
                                            parameter_dtype(self))
        keep = (torch.ones_like(vecs) if mask is None else mask.to(vecs.dtype)).unsqueeze(-1)
        # each column: the eigenvector entry and its eigenvalue, [N, k, 2]
        pos = torch.stack([vecs, vals], dim=-1)
        neg = torch.stack([-vecs, vals], dim=-1)
        h = self.phi(pos, batch.edge_index, keep) + self.phi(neg, batch.edge_index, keep)
        return self.rho(h.flatten(1))


class SPEEncoder(nn.Module):
    r"""Stable and Expressive Positional Encoding (Huang, Lu, Robinson, Yang, Zhang, Jegelka,
    Li, "On the Stability of Expressive Positional Encodings for Graphs", ICLR 2024).

    From eigenpairs :math:`(V, \lambda)` of each graph: ``m`` elementwise MLPs
    :math:`\phi_\ell` on the eigenvalues give
    :math:`W_\ell = V \operatorname{diag}(\phi_\ell(\lambda)) V^\top` (``n x n x m`` per graph);
    :math:`\rho`, a GIN over the graph, takes the rows of ``W`` as node features (``m``
    channels, the ``n`` columns acting as a batch axis) and sums over columns:

    .. math:: \mathrm{SPE}(V, \lambda)_i = \sum_j \rho(W)_{ij} \in \mathbb{R}^{d}.

    Invariant to eigenvector signs and to any basis of an eigenspace kept whole (``phi`` gives
    equal eigenvalues equal weights), and stable under perturbations (Huang et al.). Batched
    without padding: ``rho`` runs once over the rows ``(i, j)`` of every graph's real node
    pairs, its messages along the graph's edges copied onto each column ``j``
    (:func:`graphpe.ops.walk.pair_row_edges`), so its products, batch norms and sums see
    no padding entries; on the CPU its aggregation is a compiled loop
    (:func:`graphpe.nn.conv.gin_aggregate`). Memory ``O(sum of n^2 * rho_hidden)`` over a
    batch's graphs, meant for molecule-scale graphs. Feed it eigenpairs with
    ``keep_trivial=True`` as in the paper.

    Paper's ZINC setting: ``k=37, m=16, phi_hidden=16, phi_layers=3, rho_layers=8,
    rho_hidden=128``; the defaults here are smaller and scaled by the arguments.

    Args:
        k: eigenpairs per node.
        channels: output channels.
        m: number of ``phi`` outputs (channels of ``W``).
        phi_hidden, phi_layers: the eigenvalue MLP.
        rho_hidden, rho_layers: the GIN ``rho``.
        attr_names: the (eigenvectors, eigenvalues, mask) attributes.
        batch_norm: BatchNorm between the layers of ``rho`` over the real entries, as the
            paper's code (default True; ``False``: an unnormalized GIN).
        output_norm: BatchNorm on the sum over columns, before the output map (default
            True). Not in the paper's code, which feeds the sum on directly; the sum's scale
            grows with the graph's size.
    """

    def __init__(
        self,
        k: int,
        channels: int,
        m: int = 16,
        phi_hidden: int = 16,
        phi_layers: int = 3,
        rho_hidden: int = 64,
        rho_layers: int = 4,
        attr_names: tuple[str, str, str] = ("lap_pe", "lap_eigvals", "lap_mask"),
        batch_norm: bool = True,
        output_norm: bool = True,
    ) -> None:
        super().__init__()
        for name, value in (("k", k), ("channels", channels), ("m", m),
                            ("phi_hidden", phi_hidden), ("phi_layers", phi_layers),
                            ("rho_hidden", rho_hidden), ("rho_layers", rho_layers)):
            check_positive_int(name, value)
        self.k, self.channels, self.m, self.attr_names = k, channels, m, tuple(attr_names)
        self.phi = mlp([1] + [phi_hidden] * (phi_layers - 1) + [m])
        self.rho = _ChannelGIN([m] + [rho_hidden] * rho_layers, batch_norm=batch_norm)
        self.out_norm = nn.BatchNorm1d(rho_hidden) if output_norm else None
        self.out = nn.Linear(rho_hidden, channels)

    def forward(self, batch) -> Tensor:
        """``batch`` with ``attr_names`` (eigenvectors ``[N, k]``, eigenvalues ``[N, k]``,
        optional mask ``[N, k]``, as written by ``LaplacianPE``; also ``batch.batch`` and
        ``edge_index`` where the encoder needs them) -> ``[N, channels]``."""
        vecs, vals, mask = _spectral_inputs(batch, self.attr_names, self.k,
                                            parameter_dtype(self))
        num_nodes = vecs.size(0)
        graph, num_graphs, ptr, local, n_max, first = node_blocks(batch, num_nodes)

        # per-graph eigenvalues (every node carries its graph's) -> phi: [G, k, m]
        lam = vals[first]
        weights = self.phi(lam.unsqueeze(-1))
        if mask is not None:
            weights = weights * mask[first].unsqueeze(-1).to(weights.dtype)
        # W rows of every node, padded: W[g, i, j, :] = sum_k V[g,i,k] phi[g,k,:] V[g,j,k]
        dense = vecs.new_zeros(num_graphs, n_max, self.k)
        dense[graph, local] = vecs
        rows = torch.bmm(dense[graph], vecs.unsqueeze(-1) * weights[graph])  # [N, n_max, m]
        # then only the real pairs, one row per (i, j) of each graph (all_pairs' order): rho
        # is a GIN over the graph's copies, one per column j (pair_row_edges), with nothing
        # padded to mask out of its products, batch norms and sums
        pairs, pair_ptr = all_pairs(ptr)
        column = pairs[1] - ptr[graph[pairs[0]]]
        w = rows.reshape(-1, self.m).index_select(0, pairs[0] * n_max + column)  # [P, m]
        h = self.rho(w, pair_row_edges(batch.edge_index, ptr, pair_ptr, graph))
        h = torch.zeros(num_nodes, h.size(1), dtype=h.dtype, device=h.device).index_add_(
            0, pairs[0], h)  # sum over each node's columns
        if self.out_norm is not None and not (self.training and h.size(0) < 2):
            h = self.out_norm(h)
        return self.out(h)


class LinearSEEncoder(nn.Module):
    """A structural encoding (RWSE, LCP, ...) through BatchNorm and a linear map:
    ``[N, in_dim] -> [N, channels]``.

    Args:
        in_dim: width of the encoding (e.g. the walk length, or the number of LCP statistics).
        channels: output channels.
        attr_name: attribute read.
        batch_norm: normalize the raw encoding first (its scale varies a lot across steps).
    """

    producer = "a transform writing it"
    # runs under StaticGPS (static shapes, CUDA graphs): a node-wise map of one attribute
    static_shapes = True

    def __init__(self, in_dim: int, channels: int, attr_name: str, batch_norm: bool = True):
        super().__init__()
        check_positive_int("in_dim", in_dim)
        check_positive_int("channels", channels)
        self.in_dim, self.channels, self.attr_name = in_dim, channels, attr_name
        self.norm = nn.BatchNorm1d(in_dim) if batch_norm else nn.Identity()
        self.lin = nn.Linear(in_dim, channels)

    def forward(self, batch) -> Tensor:
        """``batch`` (reads ``batch[attr_name]`` ``[N, in_dim]``) or that tensor itself ->
        ``[N, channels]``."""
        x = batch if isinstance(batch, Tensor) else read_attribute(
            batch, self.attr_name, self.producer.format(self))
        if x.dim() != 2 or x.size(1) != self.in_dim:
            raise ValueError(f"expected {self.attr_name} [N, {self.in_dim}], got {list(x.shape)}")
        # in the parameters' dtype: float64 models (reference checks) take float64 PEs
        return self.lin(self.norm(x.to(self.lin.weight.dtype)))


class RWSEEncoder(LinearSEEncoder):
    """RWSE ``[N, walk_length]`` -> ``[N, channels]`` (BatchNorm + Linear, as in GraphGPS)."""

    producer = "RWSE({0.in_dim}, attr_name={0.attr_name!r})"

    def __init__(self, walk_length: int, channels: int, attr_name: str = "rwse", **kwargs):
        super().__init__(walk_length, channels, attr_name, **kwargs)


class LCPEncoder(LinearSEEncoder):
    """LCP ``[N, num_stats]`` -> ``[N, channels]`` (BatchNorm + Linear). Arguments in the order
    of the other encoders: input width first, then ``channels``."""

    producer = "LCP(attr_name={0.attr_name!r})"

    def __init__(self, num_stats: int, channels: int, attr_name: str = "lcp", **kwargs):
        super().__init__(num_stats, channels, attr_name, **kwargs)


class HKdiagSEEncoder(LinearSEEncoder):
    """Heat kernel diagonals ``[N, num_times]`` -> ``[N, channels]`` (BatchNorm + Linear, as
    GraphGPS's kernel PE encoder with its default linear model)."""

    producer = "HKdiagSE(<{0.in_dim} times>, attr_name={0.attr_name!r})"

    def __init__(self, num_times: int, channels: int, attr_name: str = "hkdiag", **kwargs):
        super().__init__(num_times, channels, attr_name, **kwargs)


class ElstaticSEEncoder(LinearSEEncoder):
    """GraphGPS's electrostatic encoding ``[N, 10]`` -> ``[N, channels]`` (BatchNorm +
    Linear); the input width is fixed, so only ``channels`` is given."""

    producer = "ElstaticSE(attr_name={0.attr_name!r})"

    def __init__(self, channels: int, attr_name: str = "elstatic", **kwargs):
        super().__init__(10, channels, attr_name, **kwargs)


class DegreeEncoder(nn.Module):
    """Graphormer's centrality encoding (Ying et al., NeurIPS 2021, eq. 5): one learned vector
    per node degree, ``z[deg(i)]``, or with ``directed`` ``z_in[indeg(i)] + z_out[outdeg(i)]``;
    degrees above ``max_degree`` share the last vector (GraphGPS raises there instead).

    Degrees are counted on the batch's ``edge_index`` (a PyG undirected graph stores both
    directions, so a node's out-degree is its degree; a self loop counts once each way, as in
    Graphormer's networkx graph), in the model: no transform, nothing stored.

    Args:
        channels: output width.
        max_degree: largest degree with a vector of its own.
        directed: separate in- and out-degree vectors, summed.
    """

    def __init__(self, channels: int, max_degree: int = 64, directed: bool = False) -> None:
        super().__init__()
        check_positive_int("channels", channels)
        check_positive_int("max_degree", max_degree)
        self.channels, self.max_degree, self.directed = channels, max_degree, bool(directed)
        self.out_degree = nn.Embedding(max_degree + 1, channels)
        self.in_degree = nn.Embedding(max_degree + 1, channels) if directed else None

    def forward(self, batch) -> Tensor:
        """``batch`` with ``edge_index`` -> ``[N, channels]``."""
        edge_index, n = batch.edge_index, batch.num_nodes
        h = self.out_degree(torch.bincount(edge_index[0], minlength=n).clamp_(max=self.max_degree))
        if self.in_degree is not None:
            h = h + self.in_degree(torch.bincount(edge_index[1], minlength=n)
                                   .clamp_(max=self.max_degree))
        return h


class FeatureInput(nn.Module):
    """Node (and edge) feature embeddings: for categorical features an embedding per column
    (``vocab`` an int shared by all columns, or one size per column, as OGB's atom features),
    summed over columns; for continuous ones a linear map of width ``dim``."""

    def __init__(self, vocab: int | Sequence[int] | None, dim: int | None, channels: int,
                 what: str):
        super().__init__()
        if (vocab is None) == (dim is None):
            raise ValueError(f"give exactly one of {what}_vocab (categorical) or {what}_dim")
        self.categorical = vocab is not None
        if self.categorical:
            self.shared = isinstance(vocab, numbers.Integral)
            sizes = [vocab] if self.shared else list(vocab)
            if not sizes or any(isinstance(v, bool) or not isinstance(v, numbers.Integral)
                                or v < 1 for v in sizes):
                raise ValueError(f"{what}_vocab must be a positive int or a non-empty list of "
                                 f"them (one per feature column), got {vocab!r}")
            sizes = [int(v) for v in sizes]
            offsets = torch.tensor([0] + sizes[:-1]).cumsum(0)
            self.register_buffer("offsets", offsets, persistent=False)
            self.layer = nn.Embedding(sum(sizes), channels)
        else:
            check_positive_int(f"{what}_dim", dim)
            self.layer = nn.Linear(dim, channels)

    def forward(self, x: Tensor) -> Tensor:
        if self.categorical:
            x = x.long()
            if x.dim() == 1:
                x = x.unsqueeze(-1)
            if not self.shared:
                x = x + self.offsets[: x.size(-1)]
            return self.layer(x).sum(1)
        x = x.to(self.layer.weight.dtype)  # float64 models take float64 features
        return self.layer(x if x.dim() == 2 else x.unsqueeze(-1))


class PairBiasEncoder(nn.Module):
    r"""Pairwise encoding -> one attention bias per head: ``[P, ...]`` -> ``[P, heads]``, with the
    pairs' ``<attr_name>_index`` (as written by ``RRWP``, ``SPD``, ``ResistanceDistance``,
    ``HeatKernel``).

    Continuous values (RRWP ``[P, K]``, resistance ``[P]``, heat kernels ``[P, T]``) go through
    an MLP; an infinite value (no path: another component) becomes 0 plus an indicator
    feature. Categorical values (SPD's
    capped distances) get one learned bias per category and head, as Graphormer's spatial
    encoding.

    With ``path_hops > 0`` Graphormer's edge encoding (Ying et al., NeurIPS 2021, eq. 7) is
    added: for a pair whose shortest path (``SPD(path_hops=...)``'s ``<attr_name>_path``)
    runs over the edges :math:`e_1, \dots, e_L`, :math:`L = \min(d(i, j), \text{path_hops})`,

    .. math:: c_{ij} = \frac{1}{L} \sum_{t=1}^{L} W_t^\top\, \phi(x_{e_t}),

    :math:`\phi` an embedding of the raw edge features to one value per head (categorical:
    one vector per category, summed over columns; continuous: a linear map) and
    :math:`W_t` a learned ``heads x heads`` matrix per hop; 0 for ``L = 0``.

    Args:
        in_dim: width of a pair's values (``K`` for RRWP, 1 for SPD or resistance, the number
            of times for heat kernels).
        heads: attention heads.
        attr_name: base name of the attributes read.
        hidden: hidden width of the MLP.
        num_categories: for categorical values (SPD: ``max_dist + 2``), else None.
        path_hops: hops of the shortest paths read by the edge encoding (the transform's
            ``path_hops``; 0: no edge encoding).
        edge_vocab / edge_dim: the raw edge features the edge encoding reads: categorical
            (vocabulary size, or one per column) or continuous (width); one of them with
            ``path_hops``.
    """

    def __init__(self, in_dim: int, heads: int, attr_name: str = "rrwp", hidden: int = 32,
                 num_categories: int | None = None, path_hops: int = 0,
                 edge_vocab: int | Sequence[int] | None = None,
                 edge_dim: int | None = None) -> None:
        super().__init__()
        check_positive_int("in_dim", in_dim)
        check_positive_int("heads", heads)
        self.in_dim, self.heads, self.attr_name = in_dim, heads, attr_name
        self.num_categories = num_categories
        if num_categories is not None:
            check_positive_int("num_categories", num_categories)
            self.table = nn.Embedding(num_categories, heads)
        else:
            self.mlp = mlp([in_dim + 1, hidden, heads])
        path_hops = check_non_negative_int("path_hops", path_hops)
        self.path_hops = path_hops
        if path_hops:
            if edge_vocab is None and edge_dim is None:
                raise ValueError("path_hops (Graphormer's edge encoding) reads the edge "
                                 "features: give edge_vocab (categorical) or edge_dim")
            self.edge_embedding = FeatureInput(edge_vocab, edge_dim, heads, "edge")
            # Graphormer's (and GraphGPS's) initialization of the encoding's tables
            nn.init.normal_(self.edge_embedding.layer.weight, std=0.02)
            self.hop_weight = nn.Parameter(torch.randn(path_hops, heads, heads) * 0.02)

    def forward(self, batch) -> tuple[Tensor, Tensor]:
        """``batch`` with ``<attr_name>`` ``[P, in_dim]`` (or ``[P]``) and
        ``<attr_name>_index`` ``[2, P]`` (and with ``path_hops``, ``<attr_name>_path`` and
        ``edge_attr``) -> ``(bias [P, heads], pair_index [2, P])``."""
        values, index = _pair_inputs(batch, self.attr_name, self.in_dim, self.num_categories,
                                     parameter_dtype(self))
        bias = self.bias(values)
        if self.path_hops:
            bias = bias + self.path_bias(batch, index)
        return bias, index

    def bias(self, values: Tensor) -> Tensor:
        """The biases ``[P, heads]`` of pair values already prepared as model inputs
        (:func:`pair_values`)."""
        return self.table(values) if self.num_categories is not None else self.mlp(values)

    def path_bias(self, batch, pair_index: Tensor) -> Tensor:
        """Graphormer's edge encoding ``[P, heads]`` of the pairs ``pair_index``."""
        name = f"{self.attr_name}_path"
        path = read_attribute(batch, name, f"SPD(path_hops={self.path_hops}, "
                                           f"attr_name={self.attr_name!r})")
        if path.dim() != 2 or path.size(1) != self.path_hops \
                or path.size(0) != pair_index.size(1):
            raise ValueError(f"expected {name} [{pair_index.size(1)}, {self.path_hops}] (the "
                             f"encoder's path_hops), got {list(path.shape)}")
        edge_attr = batch.get("edge_attr")
        if edge_attr is None:
            raise ValueError("Graphormer's edge encoding (path_hops) reads the edge features "
                             "batch.edge_attr, and the batch has none")
        graph = batch.get("batch")
        ptr = batch.get("ptr")
        if graph is not None and (ptr is None or ptr.numel() > 2):
            # graph-local edge ids -> the batch's: add the first edge of the pair's graph
            num_graphs = ptr.numel() - 1 if ptr is not None else None
            edge_graph = graph[batch.edge_index[0]]
            counts = (torch.bincount(edge_graph, minlength=num_graphs) if num_graphs
                      else torch.bincount(edge_graph, minlength=int(graph.max()) + 1))
            first = counts.cumsum(0) - counts
            path = torch.where(path >= 0, path + first[graph[pair_index[0]]].unsqueeze(1),
                               path)
        return self.edge_term(path, edge_attr)

    def edge_term(self, path: Tensor, edge_attr: Tensor) -> Tensor:
        """Graphormer's edge encoding ``[P, heads]`` of paths given as the batch's own edge
        ids ``path [P, path_hops]`` (-1: no edge) over ``edge_attr [E, ...]``."""
        on_path = path >= 0
        per_edge = self.edge_embedding(edge_attr)  # [E, heads]
        num_edges, hops = per_edge.size(0), self.path_hops
        # every edge at every hop, W_t^T phi(x_e), as a table of hops * E rows (E, the
        # batch's edges, is far below its pairs): a pair's sum is then a gather of its rows,
        # the products done per edge, not per pair and hop (F.embedding_bag was 3x slower)
        table = torch.einsum("ek,tkl->tel", per_edge, self.hop_weight).reshape(-1, self.heads)
        table = torch.cat([table, table.new_zeros(1, self.heads)])  # the last row: no edge
        rows = path + torch.arange(hops, device=path.device) * num_edges
        rows = torch.where(on_path, rows, hops * num_edges)
        out = table[rows].sum(1)
        return out / on_path.sum(1, keepdim=True).clamp(min=1).to(out.dtype)


def pair_values(values: Tensor, attr_name: str, in_dim: int, num_categories: int | None,
                dtype: torch.dtype = torch.float32) -> Tensor:
    """A pairwise encoding's values ``[P, ...]`` as a model input: categorical values as clamped
    category ids ``[P]``; continuous ones as ``[P, in_dim + 1]`` floats of ``dtype`` (the
    model's), an infinite value (no path: another component) replaced by 0 and flagged in the
    last column."""
    if num_categories is not None:
        return values.long().view(-1).clamp(0, num_categories - 1)
    x = values.to(dtype).view(values.size(0), -1)
    if x.size(1) != in_dim:
        raise ValueError(f"expected {attr_name} [P, {in_dim}], got {list(values.shape)}")
    far = torch.isinf(x)
    x = torch.where(far, torch.zeros_like(x), x)
    return torch.cat([x, far.any(-1, keepdim=True).to(x.dtype)], -1)


def _pair_inputs(batch, attr_name: str, in_dim: int, num_categories: int | None,
                 dtype: torch.dtype) -> tuple[Tensor, Tensor]:
    """A pairwise encoding's values as a model input (:func:`pair_values`) and its
    ``pair_index``."""
    producer = f"RRWP, SPD, ResistanceDistance or HeatKernel (attr_name={attr_name!r})"
    values = read_attribute(batch, attr_name, producer)
    index = read_attribute(batch, f"{attr_name}_index", producer)
    return pair_values(values, attr_name, in_dim, num_categories, dtype), index


class PairFeatureEncoder(nn.Module):
    """Pairwise encoding -> pair features of width ``channels`` (the input of GRIT's attention,
    :class:`~graphpe.nn.grit.GRITAttention`, which updates them layer by layer), and, for
    encodings whose diagonal describes the node itself (RRWP: the diagonal is RWSE with the
    0-step 1 in front), a node encoding from the pairs ``(i, i)``, as GRIT's RRWP node and edge
    encoders (Ma et al., ICML 2023).

    Continuous values go through one linear map (its bias is the feature of a pair with all-zero
    values), an infinite value becoming 0 plus an indicator; categorical values (SPD) get one
    learned vector per category.

    Args:
        in_dim: width of a pair's values (``K`` for RRWP, 1 for SPD or resistance, the number
            of times for heat kernels).
        channels: width of the pair (and node) features.
        attr_name: base name of the attributes read (``<attr_name>``, ``<attr_name>_index``).
        num_categories: for categorical values (SPD: ``max_dist + 2``), else None.
        node_from_diagonal: also encode the diagonal pairs as a node feature.
    """

    def __init__(self, in_dim: int, channels: int, attr_name: str = "rrwp",
                 num_categories: int | None = None, node_from_diagonal: bool = True) -> None:
        super().__init__()
        check_positive_int("in_dim", in_dim)
        check_positive_int("channels", channels)
        self.in_dim, self.channels, self.attr_name = in_dim, channels, attr_name
        self.num_categories, self.node_from_diagonal = num_categories, node_from_diagonal
        if num_categories is not None:
            check_positive_int("num_categories", num_categories)
            self.pair = nn.Embedding(num_categories, channels)
            self.node = nn.Embedding(num_categories, channels) if node_from_diagonal else None
        else:
            self.pair = nn.Linear(in_dim + 1, channels)
            self.node = nn.Linear(in_dim + 1, channels) if node_from_diagonal else None

    def forward(self, batch) -> tuple[Tensor | None, Tensor, Tensor]:
        """``batch`` with ``<attr_name>`` and ``<attr_name>_index`` -> ``(node [N, channels] or
        None, pair [P, channels], pair_index [2, P])``; a node whose pair ``(i, i)`` is not
        listed gets a zero node feature."""
        values, index = _pair_inputs(batch, self.attr_name, self.in_dim, self.num_categories,
                                     parameter_dtype(self))
        pair = self.pair(values)
        if self.node is None:
            return None, pair, index
        diagonal = torch.nonzero(index[0] == index[1]).flatten()
        node = pair.new_zeros(batch.num_nodes, self.channels).index_copy_(
            0, index[0, diagonal], self.node(values.index_select(0, diagonal)))
        return node, pair, index
