"""Encodings from Laplacian eigenpairs: LapPE, SignNet, SPE and PEG's gates.

Each writes its own attributes (``attr_names``), so several can be used together.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import Tensor, nn

from graphpe.encodings.registry import GATE, Encoding, register, setting, setting_of
from graphpe.encodings.transform import PETransform, check_attr_names, option
from graphpe.layers.common import mlp, read_attribute
from graphpe.layers.encoders import (
    POOLINGS,
    ChannelGIN,
    check_pair_memory,
    graph_index,
    node_blocks,
    parameter_dtype,
)
from graphpe.ops.checks import (
    check_flag,
    check_optional_positive_int,
    check_positive_int,
    check_seed,
    check_size_limit,
)
from graphpe.ops.eigen import DENSE_MAX_NODES, check_eigenpair_options, laplacian_eigenpairs
from graphpe.ops.graph import per_node
from graphpe.ops.plan import ExecPlan, execution_plan
from graphpe.ops.walk import all_pairs, pair_row_edges


@dataclass(eq=False, repr=False)
class LaplacianPE(PETransform):
    r"""Laplacian eigenvector positional encoding (Dwivedi et al., "Benchmarking Graph Neural
    Networks", 2020), computed for a whole batch in one batched ``eigh`` per size bucket.

    For each graph, with :math:`L = I - D^{-1/2} A D^{-1/2}` (``sym``), :math:`I - D^{-1} A`
    (``rw``) or :math:`D - A` (``none``) on the undirected simple graph underlying
    ``edge_index``, the eigenpairs :math:`(\lambda_j, v_j)` are sorted by eigenvalue, the
    trivial ones (:math:`\lambda = 0`, one per connected component) are dropped unless
    ``keep_trivial``, and the next ``k`` are kept. Writes:

    - ``lap_pe`` ``[N, k]``: the eigenvectors, rows are nodes;
    - ``lap_eigvals`` ``[N, k]``: each node carries its graph's eigenvalues, so they batch like
      node features;
    - ``lap_mask`` ``[N, k]`` (bool): False in the columns of a graph with fewer than ``k``
      eigenpairs, where ``lap_pe`` is 0 and ``lap_eigvals`` is ``pad_value``.

    Args:
        k: number of eigenpairs (default 8).
        normalization: ``"sym"``, ``"rw"`` or ``"none"``.
        keep_trivial: keep the eigenvalue-0 pairs (as SPE does).
        sign: ``"canonical"`` (deterministic, independent of node order where the spectrum
            allows), ``"random"`` (canonical, then a random flip per graph and column, for
            augmentation) or ``"none"``.
        seed: seed of the random signs; calls draw successive signs from one generator.
        pad_value: eigenvalue written into padded columns.
        attr_names: names of the three attributes written.
        attr_name: PyG's spelling (``AddLaplacianEigenvectorPE(k, attr_name=...)``): the name of
            the eigenvector attribute alone, None appending the eigenvectors to ``x`` as PyG
            does; eigenvalues and mask keep their names from ``attr_names``.
        dense_max_nodes: larger graphs use a sparse eigensolver and are never densified.
        eigh_backend: dense solver (``"auto"``, ``"torch"``, ``"cupy"``, ``"host"``); on CUDA,
            ``auto`` uses CuPy's batched ``eigh`` above 32 nodes when CuPy is installed.
        sparse_solver: ``"auto"`` (on the CPU, per connected component: shift-invert
            Lanczos where the gaps are tiny and the sparse LU stays small, else Lanczos; on a
            GPU, Chebyshev-filtered subspace iteration), ``"chebyshev"``, ``"lanczos"``,
            ``"shift_invert"`` or ``"arpack"`` (``lanczos``); see
            :class:`graphpe.ops.plan.ExecPlan`.
    """

    k: int = option(8)
    normalization: str = option("sym")
    keep_trivial: bool = option(False, check_flag)
    sign: str = option("canonical")
    seed: int | None = option(None, lambda name, value: check_seed(value, name))
    pad_value: float = option(0.0)
    attr_names: tuple[str, str, str] = option(("lap_pe", "lap_eigvals", "lap_mask"),
                                              lambda _, value: tuple(value))
    # solvers agree to rounding, but a cache must not mix their outputs
    dense_max_nodes: int = option(DENSE_MAX_NODES, check_size_limit)
    sparse_solver: str = option("auto")
    eigh_backend: str = option("auto")
    # PyG's spelling, folded into attr_names
    attr_name: str | None = option("", key=False)

    def validate(self) -> None:
        if self.attr_name != "":  # given: PyG's single name for the eigenvectors
            self.attr_names = (self.attr_name, *self.attr_names[1:])
            self.attr_name = ""
        check_eigenpair_options(self.k, self.normalization, self.sign)
        _ = self.plan  # its construction checks the execution options
        if len(self.attr_names) != 3:
            raise ValueError("attr_names must name (eigenvectors, eigenvalues, mask)")
        # (eigenvectors named None are appended to x, as PyG's attr_name=None)
        check_attr_names(dict(zip(("eigenvectors' name", "eigenvalues' name", "mask's name"),
                                  self.attr_names, strict=True)),
                         optional=("eigenvectors' name",))
        if isinstance(self.pad_value, bool) or not isinstance(self.pad_value, numbers.Real):
            raise ValueError(f"pad_value must be a number, got {self.pad_value!r}")
        self.pad_value = float(self.pad_value)  # (0 and 0.0: one setting, one cache key)

    @property
    def plan(self) -> ExecPlan:
        """The execution options as the kernel takes them."""
        return execution_plan(dense_max_nodes=self.dense_max_nodes,
                              sparse_solver=self.sparse_solver, eigh_backend=self.eigh_backend)

    @property
    def draws_random(self) -> bool:
        return self.sign == "random"

    distributed_path = "Laplacian eigenpairs by distributed thick-restart Lanczos"

    def distributed_form(self, name: str) -> LaplacianPE:
        if self.attr_names[0] is None:
            raise ValueError(f"{name}: eigenvectors appended to x have no distributed path; "
                             "name their attribute")
        return self

    def compute_rows(self, rows, exchange) -> tuple[dict[str, Tensor], dict]:
        from graphpe.ops.distributed import distributed_laplacian_eigenpairs
        from graphpe.ops.eigen import random_signs

        flips = None
        if self.sign == "random":
            flips = random_signs(1, self.k, self.shared_generator(exchange.group),
                                 torch.float64)[0]
        pairs = distributed_laplacian_eigenpairs(
            rows, exchange, self.k, normalization=self.normalization,
            keep_trivial=self.keep_trivial, sign=self.sign, flips=flips,
            pad_value=self.pad_value)
        n = rows.rows
        vec, val, mask = self.attr_names
        tensors = {vec: pairs.eigvecs.float(), val: pairs.eigvals.float().expand(n, -1).clone(),
                   mask: pairs.mask.expand(n, -1).clone()}
        return tensors, {"method": "distributed thick-restart Lanczos", "products": pairs.products,
                         "residual": pairs.residual}

    def compute(
        self,
        edge_index: Tensor,
        num_nodes: int,
        ptr: Tensor | None,
        edge_weight: Tensor | None = None,
    ) -> dict[str, Tensor]:
        pairs = laplacian_eigenpairs(
            edge_index,
            num_nodes,
            self.k,
            ptr=ptr,
            edge_weight=edge_weight,
            normalization=self.normalization,
            keep_trivial=self.keep_trivial,
            sign=self.sign,
            generator=self.draw_generator(),
            pad_value=self.pad_value,
            plan=self.plan,
        )
        vec_name, val_name, mask_name = self.attr_names
        return {
            vec_name: pairs.eigvecs,
            val_name: per_node(pairs.eigvals, ptr, num_nodes),
            mask_name: per_node(pairs.mask, ptr, num_nodes),
        }


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
            graph = graph_index(batch)
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
        self.phi = ChannelGIN([2] + [hidden] * phi_layers)
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
    (:func:`graphpe.layers.conv.gin_aggregate`). Memory ``O(sum of n^2 * rho_hidden)`` over a
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
        self.rho = ChannelGIN([m] + [rho_hidden] * rho_layers, batch_norm=batch_norm)
        self.out_norm = nn.BatchNorm1d(rho_hidden) if output_norm else None
        # values held per node pair: W's padded row and its gathered copy, then what each GIN
        # layer keeps for the backward pass (aggregate, two products, activation, norm)
        self.floats_per_pair = 2 * m + 5 * rho_hidden * rho_layers
        self.out = nn.Linear(rho_hidden, channels)

    def forward(self, batch) -> Tensor:
        """``batch`` with ``attr_names`` (eigenvectors ``[N, k]``, eigenvalues ``[N, k]``,
        optional mask ``[N, k]``, as written by ``LaplacianPE``; also ``batch.batch`` and
        ``edge_index`` where the encoder needs them) -> ``[N, channels]``."""
        vecs, vals, mask = _spectral_inputs(batch, self.attr_names, self.k,
                                            parameter_dtype(self))
        num_nodes = vecs.size(0)
        blocks = node_blocks(batch, num_nodes)
        graph, num_graphs, ptr, local, n_max, first = blocks
        check_pair_memory(blocks, num_nodes, self.floats_per_pair, vecs.dtype, vecs.device, "spe",
                          "use signnet or lap on large graphs")

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


@dataclass(frozen=True, repr=False)
class _Eigenpairs(Encoding):
    """Shared by the four: ``k`` eigenpairs of the ``normalization`` Laplacian, written to the
    declaration's ``attr_names``."""

    attr_names: ClassVar[tuple[str, str, str]]
    keep_trivial: ClassVar[bool] = False
    family = "eigen"

    transform_class = LaplacianPE

    k: int = setting_of(LaplacianPE, "k")
    normalization: str = setting_of(LaplacianPE, "normalization")

    def transform(self) -> LaplacianPE:
        return LaplacianPE(self.k, normalization=self.normalization,
                           keep_trivial=self.keep_trivial,
                           sign=getattr(self, "sign", "canonical"), attr_names=self.attr_names)

    @classmethod
    def upgrade(cls, settings: dict) -> dict:
        names = settings.pop("attr_names", cls.attr_names)
        if tuple(names) != cls.attr_names:
            raise ValueError(f"{cls.name} writes {cls.attr_names}, got attr_names={names!r}: "
                             "build the encoder yourself for other names")
        return settings


@register
class LapSpec(_Eigenpairs):
    name = "lap"
    summary = "Laplacian eigenvectors and eigenvalues through DeepSets (GraphGPS's LapPE)"
    paper = "Dwivedi et al., Benchmarking Graph Neural Networks, JMLR 2023"
    attr_names = ("lap_pe", "lap_eigvals", "lap_mask")
    demo = 1
    reference_test = ("tests/transforms/test_laplacian.py::"
                      "test_matches_pyg_eigenvalue_subspace_on_connected_graph")

    encoder_class = LapPEEncoder

    sign: str = setting_of(LaplacianPE, "sign")
    # the DeepSets' width (phi and rho's hidden layer): None, the model's channels; GraphGPS
    # uses 16, and on a large graph each of the N * k (node, eigenpair) rows carries it
    hidden: int | None = setting(None, check_optional_positive_int)

    def encoder(self, channels: int) -> nn.Module:
        return LapPEEncoder(self.k, channels, hidden=self.hidden, attr_names=self.attr_names)


@register
class SignNetSpec(_Eigenpairs):
    name = "signnet"
    summary = "Laplacian eigenvectors through SignNet (sign invariant GIN per eigenvector)"
    paper = "Lim et al., Sign and Basis Invariant Networks, ICLR 2023"
    attr_names = ("sn_pe", "sn_eigvals", "sn_mask")
    encoder_class = SignNetEncoder
    warmup_models = ("gine",)
    reference_test = "tests/nn/test_encoders.py::test_signnet_and_spe_sign_invariance"


    def encoder(self, channels: int) -> nn.Module:
        return SignNetEncoder(self.k, channels, attr_names=self.attr_names)


@register
class SPESpec(_Eigenpairs):
    name = "spe"
    summary = "Stable and Expressive PE: eigenvalue MLPs and a GIN over V diag(phi) V^T"
    paper = "Huang et al., On the Stability of Expressive Positional Encodings, ICLR 2024"
    attr_names = ("spe_pe", "spe_eigvals", "spe_mask")
    encoder_class = SPEEncoder
    keep_trivial = True
    demo = 5
    warmup_models = ("gine",)
    reference_test = "tests/nn/test_encoders.py::test_spe_equals_its_dense_per_graph_formula"

    m: int = setting(8, check_positive_int)
    rho_hidden: int = setting(32, check_positive_int)
    rho_layers: int = setting(2, check_positive_int)

    def encoder(self, channels: int) -> nn.Module:
        return SPEEncoder(self.k, channels, m=self.m, rho_hidden=self.rho_hidden,
                          rho_layers=self.rho_layers, attr_names=self.attr_names)


@register
class PEGSpec(_Eigenpairs):
    name = "peg"
    kind = GATE
    summary = "eigenvector distances gating every layer's messages (EquivStableLapPE)"
    paper = "Wang et al., Equivariant and Stable Positional Encoding, ICLR 2022"
    attr_names = ("peg_pe", "peg_eigvals", "peg_mask")
    reference_test = ("tests/nn/test_models.py::"
                      "test_peg_gates_are_invariant_to_any_orthogonal_map_of_the_eigenvectors")


    @property
    def gate_attr(self) -> str:
        """The attribute the gates read: the eigenvectors."""
        return self.attr_names[0]
