r"""SVD positional encoding of a directed graph: singular vectors of its adjacency matrix.

This module holds the encoding's transform, encoder and declaration, as "Adding an encoding" in
the docs describes; its kernel is :func:`graphpe.ops.eigen.svd.svd_encoding`.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor, nn

from graphpe.encodings.registry import Encoding, register, setting_of
from graphpe.encodings.transform import PETransform, check_attr_names, option
from graphpe.layers.encoders import LinearSEEncoder
from graphpe.ops.checks import check_choice, check_positive_int, check_seed, check_size_limit
from graphpe.ops.eigen.svd import SIGNS, SVD_MAX_NODES, svd_encoding


@dataclass(eq=False, repr=False)
class SVDPE(PETransform):
    r"""SVD positional encoding (Hussain, Zaki, Subramanian, "Global Self-Attention as a
    Replacement for Graph Convolution", KDD 2022; DGL's ``SVDPE``): the rows of
    :math:`[U_k \Sigma_k^{1/2}, V_k \Sigma_k^{1/2}]` of each graph's adjacency matrix,
    :math:`A = U \Sigma V^\top` (:func:`~graphpe.ops.eigen.svd.svd_encoding`). It reads the
    direction of ``edge_index`` (``A[i, j]`` for ``i -> j``), as ``maglap`` and ``drwse`` do:
    on a directed graph ``U`` holds the nodes as sources and ``V`` as targets; on an
    undirected one they agree up to sign. Writes ``svd_pe`` ``[N, 2k]``.

    DGL writes the same ``2k`` columns for a graph of at least ``k`` nodes; for a smaller
    graph DGL shifts ``V``'s columns left, where this keeps ``U`` in columns ``0..k-1`` and
    ``V`` in ``k..2k-1`` so that a column means one thing across a batch. DGL's
    ``random_flip`` multiplies each node's row by a random sign; ``sign='random'`` flips each
    singular pair instead (the encoding's actual ambiguity).

    Args:
        k: singular values kept (default 8).
        sign: ``canonical`` (default), ``random`` or ``none`` (see
            :func:`~graphpe.ops.eigen.svd.svd_encoding`).
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
    reference_test = "tests/ops/eigen/test_svd.py::test_equals_dgls_svd_pe"

    transform_class = SVDPE
    encoder_class = SVDEncoder

    k: int = setting_of(SVDPE, "k")
    sign: str = setting_of(SVDPE, "sign")

    def encoder(self, channels: int) -> nn.Module:
        return SVDEncoder(self.k, channels)
