r"""GCN's propagation as one sparse matrix product: the operator of PyG's ``GCNConv``
(Kipf & Welling, ICLR 2017) as a CSR matrix, and a product with it whose backward is a product
with its transpose, kept beside it.

``GCNConv(normalize=True, add_self_loops=True)`` computes ``out = S (X W) + b`` with
``S[i, j] = sum over edges j -> i of d_j^-1/2 d_i^-1/2`` (duplicate edges summed), a self
loop of weight 1 added where a node has none, and ``d_i = 1 + (in-edges of i)`` counted with
their weights: PyG's ``gcn_norm``, whose weights this module takes, so ``S`` is that
operator for any ``edge_index`` (directed, with duplicates or self loops). Message passing
gathers and scatters ``[E, C]`` rows each way; the product with ``S`` reads each row once, and
the backward's product with ``S^T`` likewise (torch would transpose the CSR matrix at every
backward).
"""

from __future__ import annotations

import warnings

import torch
from torch import Tensor


def gcn_operator(edge_index: Tensor, num_nodes: int,
                 dtype: torch.dtype = torch.float32) -> tuple[Tensor, Tensor]:
    """``(S, S^T)`` of the module docstring, both ``[num_nodes, num_nodes]`` sparse CSR on
    ``edge_index``'s device."""
    from torch_geometric.nn.conv.gcn_conv import gcn_norm

    loops, weight = gcn_norm(edge_index, None, num_nodes, improved=False, add_self_loops=True,
                             dtype=dtype)
    return _operator_pair(loops[0], loops[1], weight, num_nodes)


def mean_operator(edge_index: Tensor, num_nodes: int,
                  dtype: torch.dtype = torch.float32) -> tuple[Tensor, Tensor]:
    """``(M, M^T)`` of the mean over in-neighbours, ``M[i, j] = (edges j -> i) / (in-edges
    of i)`` (PyG's ``aggr="mean"``, SAGEConv's and DGL's ``copy_u_mean``; a node without
    in-edges gets zeros), both sparse CSR on ``edge_index``'s device."""
    src, dst = edge_index
    degree = torch.zeros(num_nodes, dtype=dtype, device=edge_index.device)
    degree.index_add_(0, dst, torch.ones(dst.numel(), dtype=dtype, device=dst.device))
    return _operator_pair(src, dst, degree[dst].reciprocal(), num_nodes)


def _operator_pair(src: Tensor, dst: Tensor, weight: Tensor,
                   num_nodes: int) -> tuple[Tensor, Tensor]:
    """The operator with ``weight`` at ``[dst, src]`` (duplicates summed) and its transpose,
    both sparse CSR."""
    with warnings.catch_warnings():  # (torch's notes that sparse CSR is in beta)
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
        warnings.filterwarnings("ignore", message="Sparse invariant checks")
        size = (num_nodes, num_nodes)
        forward = torch.sparse_coo_tensor(torch.stack([dst, src]), weight, size)
        backward = torch.sparse_coo_tensor(torch.stack([src, dst]), weight, size)
        return forward.coalesce().to_sparse_csr(), backward.coalesce().to_sparse_csr()


def _sparse_dense(operator: Tensor, x: Tensor) -> Tensor:
    """``operator @ x``; on the CPU by ``torch.sparse.mm(..., "sum")``, whose CSR kernel (the
    one PyG's ``spmm`` calls) is about a third faster than ``@``'s on large graphs, the same
    sums to rounding."""
    if operator.device.type == "cpu" and operator.layout == torch.sparse_csr:
        return torch.sparse.mm(operator, x, "sum")
    return operator @ x


class _OperatorProduct(torch.autograd.Function):
    @staticmethod
    def forward(ctx, operator: Tensor, transpose: Tensor, x: Tensor) -> Tensor:
        ctx.transpose = transpose
        return _sparse_dense(operator, x)

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[None, None, Tensor]:
        return None, None, _sparse_dense(ctx.transpose, grad.contiguous())


def operator_product(operator: Tensor, transpose: Tensor, x: Tensor) -> Tensor:
    """``operator @ x`` for a constant sparse ``operator`` whose transpose is given: the
    gradient of ``x`` is ``transpose @ grad`` (no gradient flows to the operator)."""
    return _OperatorProduct.apply(operator, transpose, x)
