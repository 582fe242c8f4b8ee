"""Random Feature Propagation."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from graphpe.ops.graph import check_num_nodes
from graphpe.ops.propagate import OPERATORS, PROPAGATION_NORMS, random_feature_propagation
from graphpe.transforms.base import PETransform, check_seed


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

    def __init__(
        self,
        dim: int = 16,
        steps: int = 8,
        num_draws: int = 1,
        operator: str = "gcn",
        normalization: str = "qr",
        seed: int | None = None,
        attr_name: str = "rfp",
    ) -> None:
        for name, value, low in (("dim", dim, 1), ("steps", steps, 0), ("num_draws", num_draws, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
        if operator not in OPERATORS:
            raise ValueError(f"operator must be one of {OPERATORS}, got {operator!r}")
        if normalization not in PROPAGATION_NORMS:
            raise ValueError(
                f"normalization must be one of {PROPAGATION_NORMS}, got {normalization!r}"
            )
        self.dim = dim
        self.steps = steps
        self.num_draws = num_draws
        self.operator = operator
        self.normalization = normalization
        self.seed = check_seed(seed)
        self.attr_name = attr_name
        self.reset_generator()

    @property
    def draws_random(self) -> bool:
        return True

    def settings(self) -> dict[str, Any]:
        return {
            "dim": self.dim,
            "steps": self.steps,
            "num_draws": self.num_draws,
            "operator": self.operator,
            "normalization": self.normalization,
            "seed": self.seed,
            "attr_name": self.attr_name,
        }

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
