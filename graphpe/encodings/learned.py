"""Encodings computed inside the model from the graph alone: no transform.
"""

from __future__ import annotations

import warnings

import torch
from torch import Tensor, nn

from graphpe.encodings.registry import Encoding, register, setting
from graphpe.ops.checks import check_positive_int
from graphpe.ops.graph import (
    batch_from_ptr,
    laplacian_entries,
    single_graph_ptr,
    sparse_operator,
    undirected_simple,
    validate_graph,
)


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


VARIANTS = ("random", "basis")


POOLINGS = ("sum", "mean")


# the eval-mode draws are taken in blocks of this many rows from one seeded CPU generator:
# torch fills whole chunks of 16 values, so row i of a table of 16 * b rows does not depend on
# b, and a node's draws depend only on its local id (and the seed), not on its batch
_DRAW_BLOCK = 16


def _bn_mlp(sizes: list[int], batch_norm: bool) -> nn.Sequential:
    """``Linear -> BatchNorm -> ReLU`` for every hidden layer, a plain ``Linear`` last (the
    reference's ``MLP``)."""
    layers: list[nn.Module] = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            if batch_norm:
                layers.append(nn.BatchNorm1d(sizes[i + 1]))
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def pearl_operators(edge_index: Tensor, num_nodes: int, laplacian: bool,
                    dtype: torch.dtype = torch.float32) -> tuple[Tensor, Tensor | None]:
    """``(A, L_sym or None)`` as sparse CSR matrices of the undirected simple graph (directed
    input symmetrized, self loops and duplicates dropped, weights ignored): ``A`` the 0/1
    adjacency of the GIN's sum aggregation, ``L_sym = I - D^-1/2 A D^-1/2`` (0 on an isolated
    node) the filter of the inputs."""
    validate_graph(edge_index, num_nodes)
    graph = undirected_simple(edge_index, num_nodes)._replace(edge_weight=None)
    ei = graph.edge_index
    adj = sparse_operator(ei, torch.ones(ei.size(1), dtype=dtype, device=ei.device), num_nodes)
    lap = None
    if laplacian:
        ei, off, diag, _ = laplacian_entries(graph, "sym", dtype)
        lap = sparse_operator(ei, off, num_nodes, diag)
    return adj, lap


def _spmm(op: Tensor, x: Tensor) -> Tensor:
    """``op @ x`` in the operator's precision (float32 at least, see :func:`sparse_dtype`),
    returned in ``x``'s: sparse products have no bfloat16/float16 kernels, so under
    ``torch.autocast`` or in a bfloat16 model they run outside it on ``x`` cast up."""
    with warnings.catch_warnings(), torch.autocast(x.device.type, enabled=False):
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
        return (op @ x.to(op.dtype)).to(x.dtype)


def sparse_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype of the sparse operators for a model in ``dtype``: float32 at least."""
    return torch.promote_types(dtype, torch.float32)


class PEARLEncoder(nn.Module):
    r"""PEARL (Kanatsoulis, Choi, Jegelka, Leskovec, Ribeiro, "Learning Efficient Positional
    Encodings with Graph Neural Networks", ICLR 2025): a GIN applied to ``S`` node inputs of one
    channel each, independently, then pooled over the inputs.

    - ``random`` (R-PEARL): ``S = num_samples`` columns of i.i.d. ``N(0, 1)`` node values;
      cost linear in the number of nodes.
    - ``basis`` (B-PEARL): the ``n_g`` standard-basis vectors of each graph ``g`` (sample ``j``
      is ``e_j``: 1 at the node with local id ``j``); permutation-equivariant exactly, cost
      ``sum_g n_g * n_max`` per layer, so it is for small graphs (``max_nodes``).

    For each sample ``x`` the input of a node is ``[x, Lx, ..., L^{powers-1} x]`` with
    ``L = I - D^{-1/2} A D^{-1/2}``, mapped by ``Linear -> BatchNorm -> ReLU`` to ``hidden``;
    then ``layers`` GIN layers :math:`h \leftarrow \mathrm{MLP}((1 + \epsilon) h + A h)` (sum
    over neighbours, BatchNorm between layers, the last to ``pe_dim``), the same weights for
    every sample: the samples are a batch axis, and a layer is one sparse product over
    ``[N, S * width]``. The pooling (``sum`` or ``mean``) over a node's samples gives
    ``[N, pe_dim]``, and a linear map gives ``[N, channels]``. In the basis variant the samples
    ``j >= n_g`` of a graph do not exist: they are not computed, not in the BatchNorm statistics
    and not pooled, so a graph's rows do not depend on the other graphs of its batch (in eval
    mode; in training BatchNorm couples a batch as usual).

    Draws (``random``): fresh ``torch.randn`` draws at every call in ``train()``; in ``eval()``
    fixed draws from a generator seeded with ``seed``, indexed by each node's local id in its
    graph, so evaluation is deterministic and a graph's PE is the same alone or in any batch.
    (The reference draws fresh samples at evaluation too; a fixed seed is graphpe's
    convention, as in ``OnTheFlyPE``.) ``forward(batch, samples=...)`` takes given draws.

    Defaults follow the authors' ZINC configs (https://github.com/ehejin/Pearl-PE,
    ``PEARL/configs/zinc/RPEARL-500k.yaml`` and ``BPEARL-500k.yaml``; model in
    ``PEARL/src/pe.py``): 120 samples, an 8-layer GIN with BatchNorm, width 40, output 37,
    3-layer MLPs of width 105 in each GIN layer, sum over samples; one power (the sample
    itself) for R-PEARL, 7 for B-PEARL. Differences: the GIN's ``epsilon`` starts at 0 (the
    reference draws it from ``N(0, 1)``), the input map goes to ``hidden`` directly (the
    reference maps to ``pe_dim`` first), graphs are read as undirected and simple.

    Args:
        channels: output channels.
        variant: ``random`` (R-PEARL) or ``basis`` (B-PEARL).
        num_samples: random samples per node (``random``).
        layers: GIN layers.
        hidden: GIN width.
        pe_dim: GIN output width, pooled over samples, before the output map.
        powers: the input terms ``[x, Lx, ..., L^{powers-1} x]``; None: 1 for ``random``, 7
            for ``basis``.
        mlp_layers: linear layers of each GIN layer's MLP.
        mlp_hidden: width inside those MLPs.
        pooling: ``sum`` or ``mean`` over a node's samples.
        batch_norm: BatchNorm in the input map, the MLPs and between GIN layers.
        max_nodes: ``basis`` refuses batches with a larger graph (memory grows with
            ``n_max`` times the batch's node count).
        seed: seed of the eval-mode draws (``random``).
    """

    def __init__(
        self,
        channels: int,
        variant: str = "random",
        num_samples: int = 120,
        layers: int = 8,
        hidden: int = 40,
        pe_dim: int = 37,
        powers: int | None = None,
        mlp_layers: int = 3,
        mlp_hidden: int = 105,
        pooling: str = "sum",
        batch_norm: bool = True,
        max_nodes: int = 512,
        seed: int = 0,
    ) -> None:
        super().__init__()
        if variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
        if powers is None:
            powers = 1 if variant == "random" else 7
        for name, value in (("channels", channels), ("num_samples", num_samples),
                            ("layers", layers), ("hidden", hidden), ("pe_dim", pe_dim),
                            ("powers", powers), ("mlp_layers", mlp_layers),
                            ("mlp_hidden", mlp_hidden), ("max_nodes", max_nodes)):
            check_positive_int(name, value)
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError(f"seed must be an int, got {seed!r}")
        if not isinstance(batch_norm, bool):
            raise ValueError(f"batch_norm must be a bool, got {batch_norm!r}")
        self.channels, self.variant, self.num_samples = channels, variant, num_samples
        self.powers, self.pooling, self.max_nodes, self.seed = powers, pooling, max_nodes, seed
        self.num_layers = layers
        self.input = nn.Sequential(nn.Linear(powers, hidden),
                                   nn.BatchNorm1d(hidden) if batch_norm else nn.Identity(),
                                   nn.ReLU())
        widths = [hidden] * layers + [pe_dim]
        self.eps = nn.Parameter(torch.zeros(layers))
        self.mlps = nn.ModuleList(
            _bn_mlp([widths[i]] + [mlp_hidden] * (mlp_layers - 1) + [widths[i + 1]], batch_norm)
            for i in range(layers)
        )
        self.norms = nn.ModuleList(
            nn.BatchNorm1d(hidden) if batch_norm else nn.Identity() for _ in range(layers - 1)
        )
        self.out = nn.Linear(pe_dim, channels)

    def draws(self, ptr: Tensor, num_nodes: int, device: torch.device,
              dtype: torch.dtype) -> Tensor:
        """The random inputs ``[N, num_samples]``: fresh in training; in eval, row ``i`` of a
        table drawn from a generator seeded with ``seed``, for the node with local id ``i``."""
        shape = (num_nodes, self.num_samples)
        if self.training:
            return torch.randn(shape, device=device, dtype=dtype)
        sizes = ptr[1:] - ptr[:-1]
        n_max = int(sizes.max()) if sizes.numel() else 0
        rows = -(-max(n_max, 1) // _DRAW_BLOCK) * _DRAW_BLOCK
        gen = torch.Generator().manual_seed(self.seed)
        table = torch.randn(rows, self.num_samples, generator=gen).to(device=device, dtype=dtype)
        return table[_local_ids(ptr, num_nodes)]

    def forward(self, batch, samples: Tensor | None = None) -> Tensor:
        """A ``Data``/``Batch`` (``edge_index``, and ``ptr`` or a sorted ``batch`` vector for
        several graphs) -> ``[N, channels]``. ``samples [N, num_samples]`` replaces the random
        draws (``random`` only)."""
        edge_index, num_nodes = batch.edge_index, batch.num_nodes
        param = self.out.weight
        device, dtype = param.device, param.dtype
        edge_index = edge_index.to(device)
        if samples is not None and self.variant != "random":
            raise ValueError("samples are the inputs of variant='random'; the basis variant "
                             "has none to give")
        if num_nodes == 0:
            return param.new_zeros(0, self.channels)
        ptr = _ptr_of(batch, num_nodes, device)
        if self.variant == "random":
            width, idx = self.num_samples, None
            if samples is None:
                x = self.draws(ptr, num_nodes, device, dtype)
            else:
                if samples.shape != (num_nodes, self.num_samples):
                    raise ValueError(f"samples must have shape [{num_nodes}, "
                                     f"{self.num_samples}] (nodes, num_samples), got "
                                     f"{list(samples.shape)}")
                x = samples.to(device=device, dtype=dtype)
        else:
            x, idx, width = self._basis(ptr, num_nodes, device, dtype)
        adj, lap = pearl_operators(edge_index, num_nodes, self.powers > 1, sparse_dtype(dtype))
        terms = [x]
        for _ in range(self.powers - 1):
            terms.append(_spmm(lap, terms[-1]))
        h = torch.stack(terms, -1).reshape(num_nodes * width, self.powers)
        if idx is not None:  # only the samples that exist: j < n_g
            h = h.index_select(0, idx)
        h = self.input(h)
        for i, mlp in enumerate(self.mlps):
            h = mlp((1 + self.eps[i]) * h + _aggregate(adj, h, num_nodes, width, idx))
            if i < self.num_layers - 1:
                h = self.norms[i](h)
        if idx is None:
            h = h.view(num_nodes, width, -1)
            pooled = h.sum(1) if self.pooling == "sum" else h.mean(1)
        else:
            pooled = h.new_zeros(num_nodes, h.size(1)).index_add_(0, idx // width, h)
            if self.pooling == "mean":
                sizes = (ptr[1:] - ptr[:-1]).to(dtype)
                pooled = pooled / sizes[batch_from_ptr(ptr, num_nodes)].unsqueeze(1)
        return self.out(pooled)

    def _basis(self, ptr: Tensor, num_nodes: int, device: torch.device,
               dtype: torch.dtype) -> tuple[Tensor, Tensor, int]:
        """``(x [N, n_max], idx, n_max)``: the one-hot inputs ``x[v, local(v)] = 1`` and the
        flat ids ``v * n_max + j`` of the samples that exist (``j < n_g``)."""
        sizes = ptr[1:] - ptr[:-1]
        n_max = int(sizes.max())
        if n_max > self.max_nodes:
            raise ValueError(
                f"PEARLEncoder(variant='basis') got a graph with {n_max} nodes, above "
                f"max_nodes={self.max_nodes}: the basis variant costs n_max x (nodes in the "
                "batch) per layer; use variant='random' for large graphs, or raise max_nodes")
        local = _local_ids(ptr, num_nodes)
        x = torch.zeros(num_nodes, n_max, device=device, dtype=dtype)
        x[torch.arange(num_nodes, device=device), local] = 1.0
        graph_size = sizes[batch_from_ptr(ptr, num_nodes)]
        exists = torch.arange(n_max, device=device) < graph_size.unsqueeze(1)
        idx = exists.view(-1).nonzero().squeeze(1)
        return x, idx, n_max

    def extra_repr(self) -> str:
        return (f"channels={self.channels}, variant={self.variant!r}, "
                f"num_samples={self.num_samples}, layers={self.num_layers}, "
                f"powers={self.powers}, pooling={self.pooling!r}, seed={self.seed}")


def _aggregate(adj: Tensor, h: Tensor, num_nodes: int, width: int, idx: Tensor | None) -> Tensor:
    """``A h`` for every sample at once: rows of ``h`` are (node, sample) pairs (all of them, or
    the ``idx`` of ``[N, width]`` that exist); one sparse product over ``[N, width * d]``."""
    d = h.size(1)
    if idx is None:
        return _spmm(adj, h.view(num_nodes, width * d)).view(num_nodes * width, d)
    full = h.new_zeros(num_nodes * width, d).index_copy(0, idx, h)
    out = _spmm(adj, full.view(num_nodes, width * d)).view(num_nodes * width, d)
    return out.index_select(0, idx)


def _ptr_of(batch, num_nodes: int, device: torch.device) -> Tensor:
    ptr = batch.get("ptr") if hasattr(batch, "get") else None
    if ptr is not None:
        return ptr.to(device)
    graph = batch.get("batch") if hasattr(batch, "get") else None
    if graph is None:
        return single_graph_ptr(num_nodes, device)
    graph = graph.to(device)
    if graph.numel() > 1 and bool((graph[1:] < graph[:-1]).any()):
        raise ValueError("PEARLEncoder needs the nodes of each graph contiguous (a sorted "
                         "batch vector, as PyG's Batch), or batch.ptr")
    counts = torch.bincount(graph)
    return torch.cat([counts.new_zeros(1), counts.cumsum(0)])


def _local_ids(ptr: Tensor, num_nodes: int) -> Tensor:
    """Each node's index within its graph."""
    graph = batch_from_ptr(ptr, num_nodes)
    return torch.arange(num_nodes, device=ptr.device) - ptr[graph]


class _Learned(Encoding):
    family = "models"  # no transform: computed inside the model from the graph alone


@register
class PEARLSpec(_Learned):
    encoder_class = PEARLEncoder
    name = "pearl"
    summary = "PEARL: a message-passing network on random or basis inputs, pooled over samples"
    paper = "Kanatsoulis et al., Learning Efficient Positional Encodings with GNNs, ICLR 2025"
    reference_test = "tests/nn/test_pearl.py::test_vectorized_equals_a_loop_over_samples"

    # lighter than the paper's ZINC setting (PEARLEncoder's own defaults), for CPU runs
    variant: str = setting("random")
    num_samples: int = setting(32)
    layers: int = setting(4)
    hidden: int = setting(32)
    pe_dim: int = setting(32)
    powers: int | None = setting(None)
    mlp_layers: int = setting(2)
    mlp_hidden: int = setting(32)
    pooling: str = setting("sum")
    max_nodes: int = setting(512)
    seed: int = setting(0)

    def encoder(self, channels: int) -> nn.Module:
        return PEARLEncoder(channels, **self.settings)


@register
class DegreeSpec(_Learned):
    encoder_class = DegreeEncoder
    name = "degree"
    summary = "Graphormer's centrality encoding: a learned vector per node degree"
    paper = ("Ying et al., Do Transformers Really Perform Bad for Graph Representation?, "
             "NeurIPS 2021")
    reference_test = ("tests/nn/test_encoders.py::"
                      "test_degree_encoder_embeds_networkx_degrees_clamped")

    max_degree: int = setting(64)
    directed: bool = setting(False)

    def encoder(self, channels: int) -> nn.Module:
        return DegreeEncoder(channels, max_degree=self.max_degree, directed=self.directed)
