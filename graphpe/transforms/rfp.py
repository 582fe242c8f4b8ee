"""Random Feature Propagation."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from graphpe.ops.checks import check_choice, check_seed
from graphpe.ops.graph import check_num_nodes
from graphpe.ops.propagate import OPERATORS, PROPAGATION_NORMS, random_feature_propagation
from graphpe.transforms.base import PETransform, option


def _int_at_least(low: int) -> Callable[[str, object], int]:
    def check(name: str, value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
        return value
    return check


@dataclass(eq=False, repr=False)
class RFP(PETransform):
    r"""Random Feature Propagation (Eliasof, Frasca, Bevilacqua, Treister, Chechik, Maron,
    "Graph Positional Encoding via Random Feature Propagation", ICML 2023, PMLR 202).

    Random node features :math:`R_0 \sim \mathcal{N}(0, 1)^{n \times d}` are propagated with a
    graph operator :math:`S` and normalized per graph after every step,

    .. math:: R_\ell = \mathrm{normalize}(S R_{\ell - 1}), \qquad \ell = 1, \dots, L,

    and the encoding is the trajectory :math:`[R_0, R_1, \dots, R_L]`: early blocks carry the
    expressivity of random features, late blocks approach the dominant eigenvectors of
    :math:`S` (with ``qr``, an orthonormal basis of the dominant subspace; with ``l2``, each
    column runs its own power iteration). :math:`R_0` is normalized the same way, so every
    block has the same scale. ``num_draws`` independent draws are stacked.

    Writes ``rfp`` ``[N, num_draws, dim * (steps + 1)]`` (name configurable).

    Args:
        dim: random features per draw, ``d``.
        steps: propagation steps, ``L``.
        num_draws: independent initializations.
        operator: ``gcn`` (``D~^-1/2 (A+I) D~^-1/2``), ``adj`` (``D^-1/2 A D^-1/2``), ``rw``
            (``D^-1 A``) or ``lap_shift`` (``2I - L_sym``).
        normalization: ``qr`` (per-graph orthonormalization) or ``l2`` (per-graph unit columns).
        seed: seed of the draws; calls draw successive features from one generator, and
            :func:`~graphpe.transforms.precompute` restarts it, so a dataset precompute is
            reproducible.
        attr_name: attribute written.
    """

    dim: int = option(16, _int_at_least(1))
    steps: int = option(8, _int_at_least(0))
    num_draws: int = option(1, _int_at_least(1))
    operator: str = option("gcn", lambda name, value: check_choice(name, value, OPERATORS))
    normalization: str = option("qr", lambda name, value: check_choice(
        name, value, PROPAGATION_NORMS))
    seed: int | None = option(None, lambda name, value: check_seed(value, name))
    attr_name: str = option("rfp")

    @property
    def draws_random(self) -> bool:
        return True

    def compute(
        self,
        edge_index: Tensor,
        num_nodes: int,
        ptr: Tensor | None,
        edge_weight: Tensor | None = None,
    ) -> dict[str, Tensor]:
        check_num_nodes(num_nodes)  # before the draw: the graph is validated after it
        # drawn on the CPU generator, so a seed gives the same features on every device
        x0 = torch.randn(num_nodes, self.num_draws, self.dim, generator=self.draw_generator())
        rfp = random_feature_propagation(
            edge_index, num_nodes, x0.to(edge_index.device), self.steps, self.operator,
            self.normalization, ptr=ptr, edge_weight=edge_weight)
        return {self.attr_name: rfp}
