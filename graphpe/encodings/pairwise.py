"""Pairwise encodings: attention biases (GPS, Graphormer) or GRIT's pair features.

Which pairs are listed (``hops``, ``local``) is the transform's business; the encoders read
whatever pairs a batch holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from torch import Tensor

from graphpe.encodings.registry import PairEncoding, register, setting_of
from graphpe.encodings.spectral import normalization_option, times_option
from graphpe.encodings.transform import PETransform, check_attr_names, option
from graphpe.layers.encoders import (
    PairBiasEncoder,
    PairFeatureEncoder,
)
from graphpe.ops.checks import (
    check_flag,
    check_non_negative_int,
    check_positive_int,
    check_size_limit,
)
from graphpe.ops.walk import (
    PAIRWISE_MAX_NODES,
    heat_kernels,
    relative_random_walk_probs,
    resistance_distances,
    shortest_paths,
)


def _hops(name: str, value: Any) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                              or value < 0):
        raise ValueError(f"{name} must be None or a non-negative int, got {value!r}")
    return value


class PairwiseTransform(PETransform):
    """Base of the pairwise transforms: outputs are per node pair, not per node or edge."""

    attr_name: str

    def pair_attributes(self) -> set[str]:
        return {self.attr_name, f"{self.attr_name}_index"}

    def pair_counts(self, sizes: Tensor) -> Tensor:
        """Pairs written per graph of ``sizes`` nodes: all ordered pairs, ``n^2``. (Pairs
        within some hops depend on the edges; ``precompute`` counts those from the index.)"""
        if getattr(self, "hops", None) is not None or getattr(self, "local", False):
            raise ValueError(f"{self!r} lists the pairs within some hops: their number "
                             "depends on the edges, not only on the graph's size")
        return sizes * sizes

    def _write(self, encoding) -> dict[str, Tensor]:
        return {f"{self.attr_name}_index": encoding.pair_index, self.attr_name: encoding.values}

    def validate(self) -> None:
        # the base name of the pair attributes: a pair list cannot be appended to ``x``
        check_attr_names({"attr_name": self.attr_name})


@dataclass(eq=False, repr=False)
class RRWP(PairwiseTransform):
    r"""Relative random-walk probabilities (Ma et al., "Graph Inductive Biases in Transformers
    without Message Passing", ICML 2023): for every ordered pair :math:`(i, j)` of a graph,

    .. math:: \mathrm{rrwp}_{ij} = \big[I, M, M^2, \dots, M^{K-1}\big]_{ij},
              \qquad M = D^{-1} A,

    on the undirected graph with its self loops (as RWSE, whose values are the diagonal of
    steps 1..K-1). Writes ``rrwp_index`` ``[2, P]`` and ``rrwp`` ``[P, K]``.

    Args:
        num_steps: ``K`` (GRIT uses 21 on ZINC).
        attr_name: base name of the two attributes.
        max_nodes: largest graph (all pairs: ``n^2`` values each).
        hops: list only the pairs within ``hops`` hops, for graphs of any size (memory
            follows those pairs, never ``n^2``; the attention bias of a pair not listed is
            0); None lists all pairs. Values are exact either way.
    """

    num_steps: int = option(21, check_positive_int)
    attr_name: str = option("rrwp")
    max_nodes: int = option(PAIRWISE_MAX_NODES, check_size_limit, key=False)
    hops: int | None = option(None, _hops, key="if_set")

    def compute(self, edge_index, num_nodes, ptr, edge_weight=None) -> dict[str, Tensor]:
        return self._write(relative_random_walk_probs(
            edge_index, num_nodes, self.num_steps, ptr=ptr, edge_weight=edge_weight,
            max_nodes=self.max_nodes, hops=self.hops))


@dataclass(eq=False, repr=False)
class SPD(PairwiseTransform):
    """Shortest-path (hop) distance of every ordered pair of a graph (Graphormer's spatial
    encoding, Ying et al., NeurIPS 2021), capped: ``max_dist + 1`` means farther or in another
    component. Writes ``spd_index`` ``[2, P]`` and ``spd`` ``[P]`` (int64).

    With ``path_hops > 0`` also the input of Graphormer's edge encoding: ``spd_path``
    ``[P, path_hops]`` (int64), the edges of the first ``path_hops`` hops of one shortest path
    from ``i`` to ``j`` as positions in the graph's ``edge_index`` (-1 past the path's end;
    :func:`graphpe.ops.walk.shortest_path_edges`). The ids are the graph's own, not
    offset when PyG collates a batch: :class:`graphpe.nn.PairBiasEncoder` adds each graph's
    edge offset. A later transform that reorders or drops edges invalidates them.

    Args:
        max_dist: largest distance told apart.
        attr_name: base name of the attributes.
        max_nodes: largest graph.
        local: list only the pairs within ``max_dist`` hops, for graphs of any size (a pair
            not listed is farther; its attention bias is 0, not the "farther" one).
        path_hops: hops of each pair's shortest path whose edges are listed (Graphormer's
            ``multi_hop_max_dist``; 0: none).
    """

    max_dist: int = option(8, check_positive_int)
    attr_name: str = option("spd")
    max_nodes: int = option(PAIRWISE_MAX_NODES, check_size_limit, key=False)
    local: bool = option(False, check_flag, key="if_set")
    path_hops: int = option(0, check_non_negative_int, key="if_set")

    def pair_attributes(self) -> set[str]:
        return super().pair_attributes() | ({f"{self.attr_name}_path"} if self.path_hops
                                            else set())

    def compute(self, edge_index, num_nodes, ptr, edge_weight=None) -> dict[str, Tensor]:
        encoding, path = shortest_paths(edge_index, num_nodes, self.max_dist, self.path_hops,
                                        ptr=ptr, max_nodes=self.max_nodes, local=self.local)
        out = self._write(encoding)
        if path is not None:
            out[f"{self.attr_name}_path"] = path
        return out


@dataclass(eq=False, repr=False)
class ResistanceDistance(PairwiseTransform):
    """Effective resistance of every ordered pair of a graph (``L = D - A``, weights as
    conductances; Zhang et al., "Rethinking the Expressive Power of GNNs via Graph
    Biconnectivity", ICLR 2023): ``inf`` between components, 0 on the diagonal. Writes
    ``rd_index`` ``[2, P]`` and ``rd`` ``[P]``.

    Args:
        attr_name: base name of the two attributes.
        max_nodes: largest graph.
    """

    attr_name: str = option("rd")
    max_nodes: int = option(PAIRWISE_MAX_NODES, check_size_limit, key=False)

    def compute(self, edge_index, num_nodes, ptr, edge_weight=None) -> dict[str, Tensor]:
        return self._write(resistance_distances(edge_index, num_nodes, ptr=ptr,
                                                edge_weight=edge_weight,
                                                max_nodes=self.max_nodes))


@dataclass(eq=False, repr=False)
class HeatKernel(PairwiseTransform):
    r"""Heat kernel of every ordered pair of a graph for several diffusion times (GraphGPS's
    ``HKfullPE`` kernel, ``get_heat_kernels``; Rampasek et al., NeurIPS 2022):

    .. math:: \mathrm{heat}_{ij,t} = \sum_{k:\ \lambda_k > 0} e^{-t \lambda_k}
              (v_k)_i (v_k)_j

    over the eigenpairs of ``L = D - A`` (weights as conductances), 0 between components. As in
    GraphGPS the eigenvalue-0 pairs are left out by default (``exp(-t L)_ij - 1/n_c`` in a component
    of ``n_c`` nodes); ``keep_trivial=True`` gives ``exp(-t L)`` itself. Its diagonal is the heat
    kernel diagonal encoding's (``hkdiag``) with the same settings. Writes ``heat_index`` ``[2, P]``
    and ``heat`` ``[P, len(times)]``.

    Args:
        times: diffusion times (a non-empty sequence, or one number; non-negative).
        attr_name: base name of the two attributes.
        normalization: ``none`` (``D - A``) or ``sym`` (``I - D^-1/2 A D^-1/2``).
        keep_trivial: keep the eigenvalue-0 pairs.
        max_nodes: largest graph.
    """

    times: tuple[float, ...] = option((1, 2, 4, 8, 16), times_option)
    attr_name: str = option("heat")
    normalization: str = option("none", normalization_option)
    keep_trivial: bool = option(False, check_flag)
    max_nodes: int = option(PAIRWISE_MAX_NODES, check_size_limit, key=False)

    def compute(self, edge_index, num_nodes, ptr, edge_weight=None) -> dict[str, Tensor]:
        return self._write(heat_kernels(
            edge_index, num_nodes, self.times, ptr=ptr, edge_weight=edge_weight,
            normalization=self.normalization, keep_trivial=self.keep_trivial,
            max_nodes=self.max_nodes))


@register
class RRWPSpec(PairEncoding):
    name = "rrwp"
    summary = "relative random-walk probabilities [I, M, ..., M^(K-1)]_ij (GRIT)"
    paper = ("Ma et al., Graph Inductive Biases in Transformers without Message Passing, "
             "ICML 2023")
    family = "walk"
    warmup_models = ("gps", "grit")
    reference_test = ("tests/ops/walk/test_pairs.py::"
                      "test_rrwp_equals_numpy_powers_and_its_diagonal_is_rwse")

    transform_class = RRWP
    encoder_class = PairBiasEncoder

    num_steps: int = setting_of(RRWP, "num_steps")
    hops: int | None = setting_of(RRWP, "hops")

    def pair_encoder(self, channels, heads, features, edge_vocab=None, edge_dim=None):
        if features:
            return PairFeatureEncoder(self.num_steps, channels, self.name)
        return PairBiasEncoder(self.num_steps, heads, self.name)


@register
class SPDSpec(PairEncoding):
    name = "spd"
    summary = ("shortest-path distances (Graphormer's spatial encoding); path_hops adds its "
               "edge encoding")
    paper = ("Ying et al., Do Transformers Really Perform Bad for Graph Representation?, "
             "NeurIPS 2021")
    family = "walk"
    warmup_variants = ({"path_hops": 2},)
    reference_test = ("tests/ops/walk/test_pairs.py::"
                      "test_shortest_paths_equal_networkx_and_batch_equals_per_graph")

    transform_class = SPD
    encoder_class = PairBiasEncoder

    max_dist: int = setting_of(SPD, "max_dist")
    local: bool = setting_of(SPD, "local")
    path_hops: int = setting_of(SPD, "path_hops")

    def pair_encoder(self, channels, heads, features, edge_vocab=None, edge_dim=None):
        categories = self.max_dist + 2  # 0..max_dist, and "farther or unreachable"
        if features:
            if self.path_hops:
                raise ValueError("path_hops (Graphormer's edge encoding) is an attention bias: "
                                 "use model='gps' with multihead attention, not GRIT's pair "
                                 "features")
            return PairFeatureEncoder(1, channels, self.name, node_from_diagonal=False,
                                      num_categories=categories)
        edges = ({"edge_vocab": edge_vocab, "edge_dim": edge_dim} if self.path_hops else {})
        return PairBiasEncoder(1, heads, self.name, num_categories=categories,
                               path_hops=self.path_hops, **edges)


@register
class RDSpec(PairEncoding):
    name = "rd"
    summary = "resistance distances from the Laplacian's pseudo-inverse (RD-WL)"
    paper = ("Zhang et al., Rethinking the Expressive Power of GNNs via Graph "
             "Biconnectivity, ICLR 2023")
    family = "eigen"
    reference_test = "tests/ops/walk/test_pairs.py::test_resistance_equals_networkx"

    transform_class = ResistanceDistance
    encoder_class = PairBiasEncoder

    def pair_encoder(self, channels, heads, features, edge_vocab=None, edge_dim=None):
        if features:
            return PairFeatureEncoder(1, channels, self.name, node_from_diagonal=False)
        return PairBiasEncoder(1, heads, self.name)


@register
class HeatSpec(PairEncoding):
    name = "heat"
    summary = "heat kernels exp(-tL)_ij over diffusion times"
    paper = "Kreuzer et al., Rethinking Graph Transformers with Spectral Attention, NeurIPS 2021"
    family = "eigen"
    reference_test = "tests/ops/test_spectral.py::test_heat_kernel_with_trivial_pairs_is_expm"

    transform_class = HeatKernel
    encoder_class = PairBiasEncoder

    times: tuple[float, ...] = setting_of(HeatKernel, "times")
    normalization: str = setting_of(HeatKernel, "normalization")
    keep_trivial: bool = setting_of(HeatKernel, "keep_trivial")

    def pair_encoder(self, channels, heads, features, edge_vocab=None, edge_dim=None):
        if features:
            return PairFeatureEncoder(len(self.times), channels, self.name)
        return PairBiasEncoder(len(self.times), heads, self.name)
