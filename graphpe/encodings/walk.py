"""Random-walk encodings of nodes: RWSE.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from graphpe.encodings.registry import Encoding, register, setting_of
from graphpe.encodings.transform import PETransform, check_attr_names, option
from graphpe.layers.encoders import (
    LinearSEEncoder,
)
from graphpe.ops.checks import (
    check_choice,
    check_flag,
    check_positive_int,
    check_seed,
    check_size_limit,
)
from graphpe.ops.plan import execution_plan
from graphpe.ops.walk import RWSE_DENSE_MAX_NODES
from graphpe.ops.walk.estimate import (
    DEFAULT_WALKS,
    ESTIMATES,
    check_max_seconds,
    check_walks,
    landing_probs_or_estimate,
)
from graphpe.ops.walk.sampled import ESTIMATORS


@dataclass(eq=False, repr=False)
class RWSE(PETransform):
    r"""Random-walk structural encoding (Dwivedi et al., "Graph Neural Networks with Learnable
    Structural and Positional Representations", ICLR 2022): the probability that a random walk
    started at a node is back there after :math:`t` steps,

    .. math:: \mathrm{rwse}_{i,t} = \big((D^{-1} A)^t\big)_{ii}, \qquad t = 1, \dots, T,

    on the undirected graph underlying ``edge_index`` (duplicate edges merged) with its self
    loops: a walk may stay on a self loop, which counts once in the degree. Equal to PyG's
    ``AddRandomWalkPE(walk_length)`` on undirected graphs (self loops included), computed for a
    whole batch at once. Writes ``rwse`` ``[N, walk_length]`` (name configurable); isolated
    nodes get zeros.

    On a graph above ``dense_max_nodes`` whose exact values are past their budget, RWSE can be
    estimated by random walks instead (:mod:`graphpe.ops.walk.sampled`: from every node
    ``walks`` walks; by default the collision estimator, unbiased, with a jackknife standard
    error): ``estimate="sampled"`` estimates every graph, and the default ``"auto"`` only a
    graph above ``dense_max_nodes`` none of whose exact paths fits the memory budget (a
    quarter of the available memory) or, with ``max_exact_seconds``, all of whose exact paths
    are predicted past that time, saying so at WARNING with the predictions
    (:func:`graphpe.ops.walk.estimate.landing_probs_or_estimate`). Every graph the exact
    paths can compute within those budgets gets the exact values, as before. An estimate is
    a fixed function of the graph, ``walks``, ``walk_seed`` and ``estimator``.

    Args:
        walk_length: number of steps ``T`` (default 16).
        attr_name: attribute written (``"rwse"``; None appends to ``x`` as PyG does).
        self_loops: keep self loops as edges of the walk (PyG's behaviour, the default); False
            drops them.
        dense_max_nodes: larger graphs use sparse products and are never densified (512).
        estimate: ``"auto"`` (default), ``"exact"`` (never estimate: a graph whose exact
            values fit no memory budget raises a ValueError) or ``"sampled"``.
        walks: walks per node of an estimate (256; at least 3). The standard error falls as
            ``1 / sqrt(walks)``, the time grows with it.
        walk_seed: seed of the walks (0).
        estimator: ``"collision"`` (default), ``"transition"`` or ``"indicator"``
            (:data:`graphpe.ops.walk.sampled.ESTIMATORS`).
        max_exact_seconds: with ``"auto"``, estimate a graph whose exact paths are predicted
            to take longer than this (None, the default: no limit on time, only on memory).
        stderr_name: attribute of the estimate's standard error ``[N, walk_length]`` (0 on
            the graphs computed exactly). By default ``"rwse_stderr"`` (``attr_name +
            "_stderr"``) with ``estimate="sampled"``, and none otherwise; give a name to
            have it written with ``"auto"`` too.
    """

    walk_length: int = option(16, check_positive_int)
    attr_name: str | None = option("rwse")
    self_loops: bool = option(True, check_flag, kw_only=True)
    # dense and sparse products agree to rounding, but a cache must not mix their outputs
    dense_max_nodes: int = option(RWSE_DENSE_MAX_NODES, check_size_limit, kw_only=True)
    # the estimate's settings enter the key only where set: RWSE() keeps its key and repr
    estimate: str = option("auto", lambda name, value: check_choice(name, value, ESTIMATES),
                           key="if_set", kw_only=True)
    walks: int = option(DEFAULT_WALKS, check_walks, key="if_set", kw_only=True)
    walk_seed: int = option(0, lambda name, value: check_seed(value, name), key="if_set",
                            kw_only=True)
    estimator: str = option("collision",
                            lambda name, value: check_choice(name, value, ESTIMATORS),
                            key="if_set", kw_only=True)
    max_exact_seconds: float | None = option(None, check_max_seconds, key="if_set",
                                             kw_only=True)
    stderr_name: str | None = option(None, key="if_set", kw_only=True)

    def validate(self) -> None:
        if self.walk_seed is None:
            raise ValueError("walk_seed must be an int, got None")
        if self.estimate == "exact" and self.stderr_name is not None:
            raise ValueError("stderr_name is written by estimate='auto' or 'sampled'; "
                             "estimate='exact' has no standard error")
        check_attr_names({"attr_name": self.attr_name, "stderr_name": self.stderr_attr},
                         optional=("attr_name", "stderr_name"))

    @property
    def stderr_attr(self) -> str | None:
        """The attribute the standard error is written to (None: not written)."""
        if self.stderr_name is not None or self.estimate != "sampled":
            return self.stderr_name
        return f"{self.attr_name or 'rwse'}_stderr"

    distributed_path = "RWSE's random-walk estimate, the walks crossing the partition"

    def distributed_form(self, name: str) -> RWSE:
        """The random-walk estimate: ``estimate="auto"`` becomes ``"sampled"`` (with this
        transform's walks, seed and estimator); exact RWSE has no distributed path."""
        if self.estimate == "exact":
            raise ValueError(f"{name}: estimate='exact' has no distributed path; the "
                             "distributed RWSE is the random-walk estimate (exact RWSE runs "
                             "in one process)")
        if self.attr_name is None:
            raise ValueError(f"{name}: RWSE appended to x has no distributed path; name its "
                             "attribute")
        if self.estimate == "auto":
            estimated = copy.copy(self)
            estimated.estimate = "sampled"
            return estimated
        return self

    def compute_rows(self, rows, exchange) -> tuple[dict[str, Tensor], dict]:
        from graphpe.ops.distributed.walk import distributed_sampled_landing_probs

        estimate, stderr, stats = distributed_sampled_landing_probs(
            rows, exchange, self.walk_length, self.walks, self.walk_seed,
            self_loops=self.self_loops, estimator=self.estimator)
        tensors = {self.attr_name: torch.from_numpy(estimate).float()}
        if self.stderr_attr is not None:
            tensors[self.stderr_attr] = torch.from_numpy(stderr).float()
        return tensors, {"method": "random walks crossing the partition", **stats}

    def compute(
        self,
        edge_index: Tensor,
        num_nodes: int,
        ptr: Tensor | None,
        edge_weight: Tensor | None = None,
    ) -> dict[str, Tensor]:
        rwse, stderr = landing_probs_or_estimate(
            edge_index,
            num_nodes,
            self.walk_length,
            ptr=ptr,
            edge_weight=edge_weight,
            self_loops=self.self_loops,
            estimate=self.estimate,
            walks=self.walks,
            seed=self.walk_seed,
            estimator=self.estimator,
            max_exact_seconds=self.max_exact_seconds,
            plan=execution_plan(dense_max_nodes=self.dense_max_nodes),
        )
        name = self.stderr_attr
        if name is None:
            return {self.attr_name: rwse}
        return {self.attr_name: rwse, name: torch.zeros_like(rwse) if stderr is None else stderr}


class RWSEEncoder(LinearSEEncoder):
    """RWSE ``[N, walk_length]`` -> ``[N, channels]`` (BatchNorm + Linear, as in GraphGPS)."""

    producer = "RWSE({0.in_dim}, attr_name={0.attr_name!r})"

    def __init__(self, walk_length: int, channels: int, attr_name: str = "rwse", **kwargs):
        super().__init__(walk_length, channels, attr_name, **kwargs)


@register
class RWSESpec(Encoding):
    name = "rwse"
    summary = "random-walk landing probabilities diag((D^-1 A)^t), t = 1..walk_length"
    paper = ("Dwivedi et al., Graph Neural Networks with Learnable Structural and Positional "
             "Representations, ICLR 2022")
    family = "walk"
    demo = 2
    warmup_models = ("gps", "gine", "gatedgcn")
    warmup_transform_variants = ({"estimate": "sampled", "walks": 8},)
    reference_test = "tests/transforms/test_rwse.py::test_data_and_batch_equal_pyg"

    transform_class = RWSE
    encoder_class = RWSEEncoder

    walk_length: int = setting_of(RWSE, "walk_length")
    # a graph past the exact paths' budget: estimated by random walks (see RWSE)
    estimate: str = setting_of(RWSE, "estimate")
    walks: int = setting_of(RWSE, "walks")
    walk_seed: int = setting_of(RWSE, "walk_seed")
    max_exact_seconds: float | None = setting_of(RWSE, "max_exact_seconds")

    def encoder(self, channels: int) -> nn.Module:
        return RWSEEncoder(self.walk_length, channels)
