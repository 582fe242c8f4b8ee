"""Pairwise encodings: attention biases (GPS, Graphormer) or GRIT's pair features.

Which pairs are listed (``hops``, ``local``) is the transform's business; the encoders read
whatever pairs a batch holds.
"""

from __future__ import annotations

from graphpe.encodings.registry import PairEncoding, register, setting
from graphpe.nn import PairBiasEncoder, PairFeatureEncoder
from graphpe.transforms import RRWP as RRWPTransform
from graphpe.transforms import SPD as SPDTransform
from graphpe.transforms import HeatKernel, ResistanceDistance
from graphpe.transforms.spectral import times_option


@register
class RRWP(PairEncoding):
    name = "rrwp"
    summary = "relative random-walk probabilities [I, M, ..., M^(K-1)]_ij (GRIT)"
    paper = ("Ma et al., Graph Inductive Biases in Transformers without Message Passing, "
             "ICML 2023")
    family = "walk"
    warmup_models = ("gps", "grit")
    reference_test = ("tests/ops/walk/test_pairwise.py::"
                      "test_rrwp_equals_numpy_powers_and_its_diagonal_is_rwse")

    num_steps: int = setting(21)
    hops: int | None = setting(None)

    def transform(self) -> RRWPTransform:
        return RRWPTransform(self.num_steps, hops=self.hops)

    def pair_encoder(self, channels, heads, features, edge_vocab=None, edge_dim=None):
        if features:
            return PairFeatureEncoder(self.num_steps, channels, self.name)
        return PairBiasEncoder(self.num_steps, heads, self.name)


@register
class SPD(PairEncoding):
    name = "spd"
    summary = ("shortest-path distances (Graphormer's spatial encoding); path_hops adds its "
               "edge encoding")
    paper = ("Ying et al., Do Transformers Really Perform Bad for Graph Representation?, "
             "NeurIPS 2021")
    family = "walk"
    warmup_variants = ({"path_hops": 2},)
    reference_test = ("tests/ops/walk/test_pairwise.py::"
                      "test_shortest_paths_equal_networkx_and_batch_equals_per_graph")

    max_dist: int = setting(8)
    local: bool = setting(False)
    path_hops: int = setting(0)

    def transform(self) -> SPDTransform:
        return SPDTransform(self.max_dist, local=self.local, path_hops=self.path_hops)

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
class RD(PairEncoding):
    name = "rd"
    summary = "resistance distances from the Laplacian's pseudo-inverse (RD-WL)"
    paper = ("Zhang et al., Rethinking the Expressive Power of GNNs via Graph "
             "Biconnectivity, ICLR 2023")
    family = "eigen"
    reference_test = "tests/ops/walk/test_pairwise.py::test_resistance_equals_networkx"

    def transform(self) -> ResistanceDistance:
        return ResistanceDistance()

    def pair_encoder(self, channels, heads, features, edge_vocab=None, edge_dim=None):
        if features:
            return PairFeatureEncoder(1, channels, self.name, node_from_diagonal=False)
        return PairBiasEncoder(1, heads, self.name)


@register
class Heat(PairEncoding):
    name = "heat"
    summary = "heat kernels exp(-tL)_ij over diffusion times"
    paper = "Kreuzer et al., Rethinking Graph Transformers with Spectral Attention, NeurIPS 2021"
    family = "eigen"
    reference_test = "tests/ops/test_spectral.py::test_heat_kernel_with_trivial_pairs_is_expm"

    times: tuple[float, ...] = setting((1, 2, 4, 8, 16), times_option)
    normalization: str = setting("none")
    keep_trivial: bool = setting(False)

    def transform(self) -> HeatKernel:
        return HeatKernel(self.times, normalization=self.normalization,
                          keep_trivial=self.keep_trivial)

    def pair_encoder(self, channels, heads, features, edge_vocab=None, edge_dim=None):
        if features:
            return PairFeatureEncoder(len(self.times), channels, self.name)
        return PairBiasEncoder(len(self.times), heads, self.name)
