"""Encoders every encoding builds on: linear encoders of node features, the input of a
feature vector, pairwise biases and features, GIN layers on channel signals, and where
each graph's nodes lie in a batch. One interface: ``forward(batch) -> Tensor[N, channels]``.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import NamedTuple

import torch
from torch import Tensor, nn

from graphpe.layers.common import mlp, read_attribute
from graphpe.layers.conv import gin_aggregate
from graphpe.ops.checks import check_non_negative_int, check_positive_int
from graphpe.ops.host import available_memory_bytes

POOLINGS = ("sum", "mean")


def graph_index(batch) -> Tensor:
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
    graph = graph_index(batch)
    num_graphs = int(graph.max()) + 1 if num_nodes else 0
    counts = torch.bincount(graph, minlength=num_graphs)
    ptr = torch.cat([counts.new_zeros(1), torch.cumsum(counts, 0)])
    start = ptr[:-1]
    local = torch.arange(num_nodes, device=graph.device) - start[graph]
    return NodeBlocks(graph, num_graphs, ptr, local, int(counts.max()) if num_nodes else 0,
                      start.clamp(max=max(num_nodes - 1, 0)))


def device_memory_bytes(device: torch.device) -> int | None:
    """Memory free for new tensors on ``device``: the CUDA driver's free count, or the host's
    available memory (:func:`graphpe.ops.host.available_memory_bytes`); None where unknown."""
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    return available_memory_bytes() if device.type == "cpu" else None


def check_pair_memory(blocks: NodeBlocks, num_nodes: int, floats_per_pair: int,
                      dtype: torch.dtype, device: torch.device, encoder: str,
                      instead: str) -> None:
    """Refuses, before anything is allocated, a batch whose pairwise encoder (one row of
    ``floats_per_pair`` values for each node and each node of its graph, padded to the largest
    graph) needs more memory than ``device`` has free: a ValueError in one line naming the
    graph's size, the need, and ``instead`` (an encoder that is linear in the nodes)."""
    pairs = num_nodes * blocks.n_max
    need = pairs * floats_per_pair * torch.finfo(dtype).bits // 8
    free = device_memory_bytes(device)
    if free is not None and need > free:
        raise ValueError(
            f"{encoder}: a graph of {blocks.n_max} nodes gives {pairs:,} node pairs, about "
            f"{need / 2**30:.1f} GiB for the encoder with {free / 2**30:.1f} GiB free; this "
            f"encoder is for molecule-scale graphs, {instead}")


def parameter_dtype(module: nn.Module) -> torch.dtype:
    """The dtype of ``module``'s (first) parameter: what its inputs read from a batch are cast
    to (float64 in a ``model.double()``, float32 under autocast)."""
    return next(module.parameters()).dtype


class ChannelGIN(nn.Module):
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
    :class:`~graphpe.layers.grit.GRITAttention`, which updates them layer by layer), and, for
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
