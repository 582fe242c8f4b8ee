r"""SVD positional encoding of a directed graph: singular vectors of its adjacency matrix.

This module is a whole encoding in one file (declaration, transform, kernel, encoder), as
"Adding an encoding" in the docs describes.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from graphpe.encodings.registry import Encoding, register, setting_of
from graphpe.encodings.transform import PETransform, check_attr_names, option
from graphpe.layers.encoders import LinearSEEncoder
from graphpe.ops.checks import check_choice, check_positive_int, check_seed, check_size_limit
from graphpe.ops.eigen import canonical_signs, random_signs
from graphpe.ops.graph import (
    batch_from_ptr,
    bucket_node_index,
    single_graph_ptr,
    size_buckets,
    validate_graph,
)

SIGNS = ("canonical", "random", "none")
# singular values below this fraction of a graph's largest are rank deficiency, not signal:
# their vectors are an arbitrary basis of a null space, and their columns are written as 0
RANK_TOL = 1e-6
SVD_MAX_NODES = 2048


def svd_encoding(edge_index: Tensor, num_nodes: int, k: int, ptr: Tensor | None = None,
                 edge_weight: Tensor | None = None, sign: str = "canonical",
                 generator: torch.Generator | None = None,
                 max_nodes: int = SVD_MAX_NODES) -> Tensor:
    r"""``[num_nodes, 2k]``: for each graph, with :math:`A_{ij}` the weight of the edge
    :math:`i \to j` (1 without weights; duplicates keep their largest weight; self loops stay
    on the diagonal) and :math:`A = U \Sigma V^\top` its singular value decomposition, the
    rows of :math:`[U_k \Sigma_k^{1/2},\ V_k \Sigma_k^{1/2}]` over the ``k`` largest singular
    values. Columns past the graph's rank (or its size) are 0.

    A singular pair's sign is arbitrary (``u`` and ``v`` flip together): ``canonical`` fixes
    it by ``u`` (:func:`~graphpe.ops.eigen.canonical_signs`), ``random`` flips each graph's
    columns at random on top of that, ``none`` keeps LAPACK's. Vectors of repeated singular
    values are an arbitrary basis of their space. Graphs are solved densely, in float64, one
    batched SVD per size bucket; graphs above ``max_nodes`` are refused.
    """
    validate_graph(edge_index, num_nodes, edge_weight, ptr)
    check_positive_int("k", k)
    check_choice("sign", sign, SIGNS)
    device = edge_index.device
    if ptr is None:
        ptr = single_graph_ptr(num_nodes, device)
    out = torch.zeros(num_nodes, 2 * k, dtype=torch.float32, device=device)
    sizes = ptr.diff()
    if num_nodes and int(sizes.max()) > max_nodes:
        raise ValueError(f"svd_encoding densifies each graph: a graph of {int(sizes.max())} "
                         f"nodes is above max_nodes={max_nodes}")
    buckets = size_buckets(sizes)
    flips = (random_signs(sizes.numel(), k, generator, torch.float64, device)
             if sign == "random" else None)
    for bucket, adjacency in zip(buckets, _directed_blocks(edge_index, edge_weight, ptr,
                                                           buckets), strict=True):
        u, s, vh = torch.linalg.svd(adjacency, full_matrices=False)
        m = min(k, bucket.size)
        u, s, v = u[..., :m], s[..., :m], vh.transpose(-1, -2)[..., :m]
        kept = s > RANK_TOL * s[..., :1].clamp(min=torch.finfo(s.dtype).tiny)
        scale = torch.where(kept, s, torch.zeros_like(s)).sqrt().unsqueeze(-2)
        if sign != "none":
            signs = canonical_signs(u, kept)
            if flips is not None:
                signs = signs * flips[bucket.graphs.to(device), :m].unsqueeze(-2)
            u, v = u * signs, v * signs
        node, inside = bucket_node_index(ptr, bucket)
        rows = node[inside]
        out[rows, :m] = (u * scale)[inside].float()
        out[rows, k:k + m] = (v * scale)[inside].float()
    return out


def _directed_blocks(edge_index: Tensor, edge_weight: Tensor | None, ptr: Tensor,
                     buckets: list) -> list[Tensor]:
    """Padded float64 adjacency blocks ``[B, n, n]`` per size bucket, ``A[i, j]`` for the edge
    ``i -> j`` (duplicates: the largest weight)."""
    device = edge_index.device
    num_nodes = int(ptr[-1])
    graph = batch_from_ptr(ptr, num_nodes)
    local = torch.arange(num_nodes, device=device) - ptr[graph]
    # each graph's bucket and its slot in that bucket's block (-1: a graph with no nodes)
    bucket_of = torch.full((ptr.numel() - 1,), -1, dtype=torch.long, device=device)
    slot = torch.full_like(bucket_of, -1)
    blocks = []
    for b, bucket in enumerate(buckets):
        graphs = bucket.graphs.to(device)
        bucket_of[graphs], slot[graphs] = b, torch.arange(graphs.numel(), device=device)
        blocks.append(torch.zeros(graphs.numel(), bucket.size, bucket.size,
                                  dtype=torch.float64, device=device))
    src, dst = edge_index
    weight = (torch.ones(src.numel(), dtype=torch.float64, device=device) if edge_weight is None
              else edge_weight.to(torch.float64))
    edge_bucket = bucket_of[graph[src]]
    for b, block in enumerate(blocks):
        here = edge_bucket == b
        s, d = src[here], dst[here]
        flat = (slot[graph[s]] * block.size(1) + local[s]) * block.size(1) + local[d]
        block.view(-1).scatter_reduce_(0, flat, weight[here], reduce="amax", include_self=True)
    return blocks


@dataclass(eq=False, repr=False)
class SVDPE(PETransform):
    r"""SVD positional encoding (Hussain, Zaki, Subramanian, "Global Self-Attention as a
    Replacement for Graph Convolution", KDD 2022; DGL's ``SVDPE``): the rows of
    :math:`[U_k \Sigma_k^{1/2}, V_k \Sigma_k^{1/2}]` of each graph's adjacency matrix,
    :math:`A = U \Sigma V^\top` (:func:`svd_encoding`). It reads the direction of
    ``edge_index`` (``A[i, j]`` for ``i -> j``), as ``maglap`` and ``drwse`` do: on a
    directed graph ``U`` holds the nodes as sources and ``V`` as targets; on an undirected
    one they agree up to sign. Writes ``svd_pe`` ``[N, 2k]``.

    DGL writes the same ``2k`` columns for a graph of at least ``k`` nodes; for a smaller
    graph DGL shifts ``V``'s columns left, where this keeps ``U`` in columns ``0..k-1`` and
    ``V`` in ``k..2k-1`` so that a column means one thing across a batch. DGL's
    ``random_flip`` multiplies each node's row by a random sign; ``sign='random'`` flips each
    singular pair instead (the encoding's actual ambiguity).

    Args:
        k: singular values kept (default 8).
        sign: ``canonical`` (default), ``random`` or ``none`` (see :func:`svd_encoding`).
        seed: seed of the random signs.
        attr_name: attribute written (``"svd_pe"``; None appends to ``x``).
        max_nodes: largest graph (each is solved densely).
    """

    k: int = option(8, check_positive_int)
    sign: str = option("canonical", lambda name, value: check_choice(name, value, SIGNS))
    seed: int | None = option(None, lambda name, value: check_seed(value, name))
    attr_name: str | None = option("svd_pe")
    max_nodes: int = option(SVD_MAX_NODES, check_size_limit, key=False)

    def validate(self) -> None:
        check_attr_names({"attr_name": self.attr_name}, optional=("attr_name",))

    @property
    def draws_random(self) -> bool:
        return self.sign == "random"

    def compute(self, edge_index, num_nodes, ptr, edge_weight=None) -> dict[str, Tensor]:
        return {self.attr_name: svd_encoding(
            edge_index, num_nodes, self.k, ptr=ptr, edge_weight=edge_weight, sign=self.sign,
            generator=self.draw_generator(), max_nodes=self.max_nodes)}


class SVDEncoder(LinearSEEncoder):
    """``svd_pe`` ``[N, 2k]`` -> ``[N, channels]`` (BatchNorm + Linear)."""

    producer = "SVDPE(k={0.k}) of graphpe.encodings.svd"

    def __init__(self, k: int, channels: int, attr_name: str = "svd_pe", **kwargs) -> None:
        super().__init__(2 * k, channels, attr_name, **kwargs)
        self.k = k


@register
class SVDSpec(Encoding):
    name = "svd"
    summary = "singular vectors of the (directed) adjacency, scaled by sqrt(singular values)"
    paper = ("Hussain et al., Global Self-Attention as a Replacement for Graph Convolution, "
             "KDD 2022")
    family = "eigen"
    reference_test = "tests/encodings/test_svd.py::test_equals_dgls_svd_pe"

    transform_class = SVDPE
    encoder_class = SVDEncoder

    k: int = setting_of(SVDPE, "k")
    sign: str = setting_of(SVDPE, "sign")

    def encoder(self, channels: int) -> nn.Module:
        return SVDEncoder(self.k, channels)
