r"""Magnetic Laplacian positional encoding of a directed graph, for one or several potentials
``q``, with the stable (basis-invariant) encoder of Huang et al.

This module holds the encoding's transform, encoder and declaration, as "Adding an encoding" in
the docs describes; its kernel is :func:`graphpe.ops.eigen.magnetic.magnetic_eigenpairs`.

Several ``q`` are one transform with ``q`` a tuple rather than a second declaration: one ``q``
is the case ``Q = 1`` of several, the kernel is the same for each (on the CPU one compiled
call over all graphs and potentials, each matrix solved at its own size; on other devices one
batched ``eigh`` over a size bucket's graphs and potentials together), the attributes keep one
layout ``[N, Q, k, ...]`` and the stable encoder reads ``Q`` as a channel axis, so both need
the same encoder.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor, nn

from graphpe.encodings.registry import Encoding, register, setting, setting_of
from graphpe.encodings.transform import PETransform, check_attr_names, option
from graphpe.layers.common import mlp, read_attribute
from graphpe.layers.encoders import ChannelGIN, check_pair_memory, node_blocks, parameter_dtype
from graphpe.ops.checks import check_choice, check_flag, check_positive_int, check_size_limit
from graphpe.ops.eigen import DENSE_MAX_NODES
from graphpe.ops.eigen.magnetic import (
    MAGLAP_NORMALIZATIONS,
    check_q,
    magnetic_eigenpairs,
    magnetic_eigenpairs_host,
)
from graphpe.ops.graph import per_node, validate_graph
from graphpe.ops.host import host_array
from graphpe.ops.walk import all_pairs, pair_row_edges


def _check_normalization(name: str, value: object) -> object:
    return check_choice(name, value, MAGLAP_NORMALIZATIONS)


@dataclass(eq=False, repr=False)
class MagneticLaplacianPE(PETransform):
    r"""Magnetic Laplacian positional encoding of directed graphs (Geisler, Li, Mankowitz,
    Cemgil, Günnemann, Paduraru, "Transformers Meet Directed Graphs", ICML 2023), for one
    potential ``q`` or several (Huang, Lu, Robinson, Yang, Zhang, Jegelka, Li, "What Are Good
    Positional Encodings for Directed Graphs?", ICLR 2025: Multi-q).

    For each graph and each potential :math:`q`, the ``k`` smallest eigenpairs of
    :math:`L_q = I - D_s^{-1/2} (A_s \circ e^{i \Theta_q}) D_s^{-1/2}`, :math:`A_s` the
    symmetrized adjacency, :math:`D_s` its degrees,
    :math:`\Theta_q(u, v) = 2 \pi q (A(u, v) - A(v, u))` (``none``: :math:`D_s - A_s \circ
    e^{i \Theta_q}`); see :func:`~graphpe.ops.eigen.magnetic.magnetic_eigenpairs` for
    weights, isolated nodes and solvers. It reads the direction of ``edge_index``; ``q = 0``
    gives LapPE on the undirected graph (with its trivial pairs kept). Every eigenpair is
    kept, the trivial ones too. Writes, with ``Q`` the number of potentials:

    - ``maglap_pe`` ``[N, Q, k, 2]``: the eigenvectors' real (``[..., 0]``) and imaginary
      (``[..., 1]``) parts, rows are nodes;
    - ``maglap_eigvals`` ``[N, Q, k]``: each node carries its graph's eigenvalues;
    - ``maglap_mask`` ``[N, k]`` (bool): False in the columns past a graph's size, where the
      vectors and eigenvalues are 0.

    Phase: an eigenvector is defined up to a unit complex factor. Each is turned so that
    :math:`\sum_i v_i |v_i|^2` is real and positive, which does not depend on the node order
    (on a real vector, LapPE's canonical sign); where that sum vanishes the entry of largest
    magnitude is made real and positive, ties to the lowest index
    (:func:`~graphpe.ops.eigen.magnetic.canonical_phases`). Vectors of a repeated eigenvalue
    are an arbitrary basis of its space: the stable encoder (:class:`MagLapEncoder`) does not
    depend on either choice.

    Args:
        k: eigenpairs per potential (default 8).
        q: a potential or a tuple of them, each in ``[0, 1/2]`` (default ``(0.1,)``); ``L_q``
            has period 1 in ``q`` and ``L_{1-q}`` is the conjugate of ``L_q``.
        relative_q: divide ``q`` by each graph's number of one-way pairs, capped at its node
            count (Geisler et al.'s default ``q_absolute=False``; default False).
        normalization: ``"sym"`` (default) or ``"none"``.
        attr_names: names of the three attributes written.
        dense_max_nodes: larger graphs are solved per component by sparse Lanczos
            (:func:`~graphpe.ops.eigen.magnetic.magnetic_eigenpairs`).
    """

    k: int = option(8, check_positive_int)
    q: tuple[float, ...] = option((0.1,), check_q)
    relative_q: bool = option(False, check_flag)
    normalization: str = option("sym", _check_normalization)
    attr_names: tuple[str, str, str] = option(("maglap_pe", "maglap_eigvals", "maglap_mask"),
                                              lambda _, value: tuple(value))
    # solvers agree to rounding, but a cache must not mix their outputs
    dense_max_nodes: int = option(DENSE_MAX_NODES, check_size_limit)

    def validate(self) -> None:
        if len(self.attr_names) != 3:
            raise ValueError("attr_names must name (eigenvectors, eigenvalues, mask)")
        check_attr_names(dict(zip(("eigenvectors' name", "eigenvalues' name", "mask's name"),
                                  self.attr_names, strict=True)))

    def compute(self, edge_index, num_nodes, ptr, edge_weight=None) -> dict[str, Tensor]:
        vec_name, val_name, mask_name = self.attr_names
        if edge_index.device.type == "cpu":  # numpy views, one compiled call, no tensor ops
            validate_graph(edge_index, num_nodes, edge_weight, ptr)
            pe, vals, mask = magnetic_eigenpairs_host(
                edge_index, num_nodes, self.k, self.q, None if ptr is None else
                host_array(ptr, np.int64), edge_weight, self.normalization, self.relative_q,
                self.dense_max_nodes, per_node=True)
            return {vec_name: torch.from_numpy(pe), val_name: torch.from_numpy(vals),
                    mask_name: torch.from_numpy(mask)}
        pairs = magnetic_eigenpairs(
            edge_index, num_nodes, self.k, self.q, ptr=ptr, edge_weight=edge_weight,
            normalization=self.normalization, relative_q=self.relative_q,
            dense_max_nodes=self.dense_max_nodes)
        return {vec_name: torch.view_as_real(pairs.eigvecs).float(),
                val_name: per_node(pairs.eigvals.float(), ptr, num_nodes),
                mask_name: per_node(pairs.mask, ptr, num_nodes)}


def _maglap_inputs(batch, attr_names: tuple[str, str, str], k: int, num_q: int,
                   dtype: torch.dtype) -> tuple[Tensor, Tensor, Tensor]:
    """``(eigenvectors [N, Q, k, 2], eigenvalues [N, Q, k], mask [N, k])`` of a batch as
    :class:`MagneticLaplacianPE` writes them, the first two in ``dtype``; a missing attribute
    or a wrong shape is a ValueError naming it."""
    producer = f"MagneticLaplacianPE(k={k}) of graphpe.encodings.maglap"
    vec_name, val_name, mask_name = attr_names
    vecs = read_attribute(batch, vec_name, producer)
    shape = (num_q, k, 2)
    if vecs.dim() != 4 or tuple(vecs.shape[1:]) != shape:
        raise ValueError(f"expected {vec_name} [N, {', '.join(map(str, shape))}], got "
                         f"{list(vecs.shape)}")
    vals = read_attribute(batch, val_name, producer).to(dtype)
    return vecs.to(dtype), vals, read_attribute(batch, mask_name, producer)


class MagLapEncoder(nn.Module):
    r"""The stable, basis-invariant encoder of complex eigenvectors (Huang et al., "What Are
    Good Positional Encodings for Directed Graphs?", ICLR 2025; their code's ``PEEncoder``
    with ``encoder='spe'``): SPE (:class:`~graphpe.nn.SPEEncoder`) carried to Hermitian
    matrices and several potentials. For each potential :math:`q` of a graph, an MLP
    :math:`\phi` (shared over the potentials) maps each eigenvalue to ``m`` weights, giving
    the ``n x n`` complex matrices

    .. math:: W_{q,c} = V_q \operatorname{diag}(\phi_c(\lambda_q)) V_q^{\mathsf H},
       \quad c = 1..m,

    whose entries :math:`(i, j)`, real and imaginary parts of all ``Q m`` of them, go through
    an MLP to ``rho_hidden`` channels; :math:`\rho`, a GIN over the graph (its directed
    edges, every column :math:`j` a copy of the graph), updates the rows, which are summed
    over :math:`j`, normalized and mapped to ``channels``:

    .. math:: h_i = \mathrm{Linear}\Big(\mathrm{BN}\Big(\sum_j
       \rho\big(\mathrm{MLP}([\operatorname{Re} W, \operatorname{Im} W]_{ij})\big)\Big)\Big).

    :math:`W_{q,c}` does not change when an eigenvector is multiplied by a unit complex
    number, nor when the basis of an eigenspace kept whole is turned by any unitary map
    (:math:`\phi` gives equal eigenvalues equal weights). As the reference, ``phi`` is shared
    over potentials, and the pair MLP halves its width once; as graphpe's ``SPEEncoder``, ``rho``
    normalizes between its layers and the sum is batch-normalized before a linear map (the
    reference: a LayerNorm, dropout and a GELU after the map). Memory ``O(Q n^2 m)`` per graph:
    for molecule-scale graphs.

    Args:
        k: eigenpairs per potential.
        num_q: the number of potentials ``Q``.
        channels: output channels.
        m: outputs of ``phi`` (default 8).
        phi_hidden, phi_layers: the eigenvalue MLP (default 16, 3).
        rho_hidden, rho_layers: the GIN ``rho`` (default 32, 2).
        attr_names: the (eigenvectors, eigenvalues, mask) attributes.
    """

    def __init__(self, k: int, num_q: int, channels: int, m: int = 8, phi_hidden: int = 16,
                 phi_layers: int = 3, rho_hidden: int = 32, rho_layers: int = 2,
                 attr_names: tuple[str, str, str] = ("maglap_pe", "maglap_eigvals",
                                                     "maglap_mask")) -> None:
        super().__init__()
        for name, value in (("k", k), ("num_q", num_q), ("channels", channels), ("m", m),
                            ("phi_hidden", phi_hidden), ("phi_layers", phi_layers),
                            ("rho_hidden", rho_hidden), ("rho_layers", rho_layers)):
            check_positive_int(name, value)
        self.k, self.num_q, self.m, self.attr_names = k, num_q, m, tuple(attr_names)
        self.phi = mlp([1] + [phi_hidden] * (phi_layers - 1) + [m])
        self.pair = mlp([2 * num_q * m, num_q * m, rho_hidden])
        self.rho = ChannelGIN([rho_hidden] * (rho_layers + 1), batch_norm=True)
        self.out_norm = nn.BatchNorm1d(rho_hidden)
        self.out = nn.Linear(rho_hidden, channels)
        # values held per node pair: the padded rows of Re W | Im W and their gathered copy,
        # the pair MLP's layers, then what each GIN layer keeps for the backward pass
        self.floats_per_pair = (4 * num_q * m + 2 * (num_q * m + rho_hidden)
                                + 5 * rho_hidden * rho_layers)

    def forward(self, batch) -> Tensor:
        """``batch`` with ``attr_names`` (``[N, Q, k, 2]``, ``[N, Q, k]``, ``[N, k]`` as
        :class:`MagneticLaplacianPE` writes them; ``batch.batch`` and ``edge_index``) ->
        ``[N, channels]``."""
        vecs, vals, mask = _maglap_inputs(batch, self.attr_names, self.k, self.num_q,
                                          parameter_dtype(self))
        num_nodes = vecs.size(0)
        blocks = node_blocks(batch, num_nodes)
        graph, num_graphs, ptr, local, n_max, first = blocks
        check_pair_memory(blocks, num_nodes, self.floats_per_pair, vecs.dtype, vecs.device,
                          "maglap", "use maglap:nodewise=true on large graphs")
        weights = self.phi(vals[first].unsqueeze(-1))  # [G, Q, k, m]
        weights = weights * mask[first][:, None, :, None].to(vecs.dtype)
        # real arithmetic on (a + ib): V_i conj(V_j) = a_i a_j + b_i b_j + i (b_i a_j - a_i b_j)
        re, im = vecs[..., 0], vecs[..., 1]  # [N, Q, k]
        wa = re.unsqueeze(-1) * weights[graph]  # [N, Q, k, m]
        wb = im.unsqueeze(-1) * weights[graph]
        right = torch.cat([torch.cat([wa, wb], -1), torch.cat([wb, -wa], -1)], -2)  # [N,Q,2k,2m]
        dense = vecs.new_zeros(num_graphs, n_max, self.num_q, 2 * self.k)
        dense[graph, local] = torch.cat([re, im], -1)
        rows = dense.transpose(1, 2)[graph] @ right  # [N, Q, n_max, 2m]: Re W | Im W of (i, j)
        rows = rows.transpose(1, 2).reshape(num_nodes * n_max, 2 * self.num_q * self.m)
        pairs, pair_ptr = all_pairs(ptr)
        column = pairs[1] - ptr[graph[pairs[0]]]
        h = self.pair(rows.index_select(0, pairs[0] * n_max + column))  # [P, rho_hidden]
        h = self.rho(h, pair_row_edges(batch.edge_index, ptr, pair_ptr, graph))
        h = torch.zeros(num_nodes, h.size(1), dtype=h.dtype, device=h.device).index_add_(
            0, pairs[0], h)  # sum over each node's columns
        if not (self.training and h.size(0) < 2):
            h = self.out_norm(h)
        return self.out(h)


class MagLapNodeEncoder(nn.Module):
    r"""A node-wise encoder of complex eigenvectors, for graphs too large for
    :class:`MagLapEncoder`'s ``n x n`` matrices: MagLapNet of Geisler et al. ("Transformers Meet
    Directed Graphs", ICML 2023; their ``MagLapNet`` with an MLP per element, the SignNet
    symmetrization and the eigenvalues concatenated). Node :math:`i`'s entry of eigenvector
    :math:`j` of potential :math:`q`, :math:`x = (\operatorname{Re} v_{qij},
    \operatorname{Im} v_{qij})`, goes through an MLP :math:`\phi` symmetrized over the sign,
    its eigenvalue is appended, padded columns are zeroed, and the ``Q k`` results are
    concatenated in the eigenvalues' order and mapped to ``channels`` by an MLP :math:`\rho`:

    .. math:: h_i = \rho\Big(\big\Vert_{q, j}\, \mathrm{mask}_{ij}
       \big[\phi(x_{qij}) + \phi(-x_{qij}),\ \lambda_{qj}\big]\Big).

    Cost ``O(n Q k hidden)``: linear in the graph's nodes. Invariant to each eigenvector's
    sign; its other unit phases are fixed by the transform's canonical phase, and a basis of
    a repeated eigenvalue is taken as the solver gives it (unlike :class:`MagLapEncoder`, not
    invariant to it). The reference flips no sign of the first (trivial) column and may add
    attention between a node's columns; here every column is symmetrized, without attention.

    Args:
        k: eigenpairs per potential.
        num_q: the number of potentials ``Q``.
        channels: output channels.
        hidden: width of ``phi`` (default 16).
        attr_names: the (eigenvectors, eigenvalues, mask) attributes.
    """

    def __init__(self, k: int, num_q: int, channels: int, hidden: int = 16,
                 attr_names: tuple[str, str, str] = ("maglap_pe", "maglap_eigvals",
                                                     "maglap_mask")) -> None:
        super().__init__()
        for name, value in (("k", k), ("num_q", num_q), ("channels", channels),
                            ("hidden", hidden)):
            check_positive_int(name, value)
        self.k, self.num_q, self.attr_names = k, num_q, tuple(attr_names)
        self.phi = nn.Sequential(mlp([2, hidden, hidden]), nn.ReLU())
        self.rho = mlp([num_q * k * (hidden + 1), channels, channels])

    def forward(self, batch) -> Tensor:
        """``batch`` with ``attr_names`` (``[N, Q, k, 2]``, ``[N, Q, k]``, ``[N, k]`` as
        :class:`MagneticLaplacianPE` writes them) -> ``[N, channels]``."""
        vecs, vals, mask = _maglap_inputs(batch, self.attr_names, self.k, self.num_q,
                                          parameter_dtype(self))
        mask = mask.to(vecs.dtype)
        h = self.phi(vecs) + self.phi(-vecs)  # [N, Q, k, hidden]
        h = torch.cat([h, vals.unsqueeze(-1)], -1) * mask[:, None, :, None]
        return self.rho(h.flatten(1))


@register
class MagLapSpec(Encoding):
    name = "maglap"
    summary = ("magnetic Laplacian eigenvectors of the directed graph for one or several q, "
               "through a stable network over V diag(phi) V^H")
    paper = ("Geisler et al., Transformers Meet Directed Graphs, ICML 2023; Huang et al., What "
             "Are Good Positional Encodings for Directed Graphs?, ICLR 2025")
    family = "eigen"
    reference_test = ("tests/ops/eigen/test_magnetic.py::"
                      "test_equals_digraph_transformers_magnetic_laplacian")

    transform_class = MagneticLaplacianPE
    encoder_class = MagLapEncoder

    k: int = setting_of(MagneticLaplacianPE, "k")
    q: tuple[float, ...] = setting_of(MagneticLaplacianPE, "q")
    relative_q: bool = setting_of(MagneticLaplacianPE, "relative_q")
    normalization: str = setting_of(MagneticLaplacianPE, "normalization")
    # False: MagLapEncoder, pairwise over each graph's nodes (m, rho_hidden, rho_layers);
    # True: MagLapNodeEncoder, linear in the nodes, for one large graph (hidden)
    nodewise: bool = setting(False, check_flag)
    m: int = setting(8, check_positive_int)
    rho_hidden: int = setting(32, check_positive_int)
    rho_layers: int = setting(2, check_positive_int)
    hidden: int = setting(16, check_positive_int)

    def encoder(self, channels: int) -> nn.Module:
        if self.nodewise:
            return MagLapNodeEncoder(self.k, len(self.q), channels, hidden=self.hidden)
        return MagLapEncoder(self.k, len(self.q), channels, m=self.m,
                             rho_hidden=self.rho_hidden, rho_layers=self.rho_layers)
