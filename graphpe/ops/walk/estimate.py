"""RWSE exactly or by an estimate, graph by graph: the choice between the exact paths of
:mod:`graphpe.ops.walk.large` and the random walks of :mod:`graphpe.ops.walk.sampled`.

:func:`landing_probs_or_estimate` is what :class:`~graphpe.encodings.walk.RWSE` calls unless
it is asked for exact values only: ``estimate='exact'`` is
:func:`~graphpe.ops.walk.random_walk_landing_probs` itself, ``'sampled'`` estimates every
graph, and ``'auto'`` estimates only a graph above the dense limit whose exact paths are all
predicted past their budget (:func:`~graphpe.ops.walk.large.exact_landing_cost`: no path
within the memory budget for some component, or the predicted seconds past
``max_exact_seconds``), saying so at WARNING with the predictions.
"""

from __future__ import annotations

import logging

import numpy as np
import torch
from torch import Tensor

from graphpe.ops.checks import check_choice, check_number, check_positive_int
from graphpe.ops.graph import validate_graph
from graphpe.ops.host import (
    host_array,
    memory_budget,
    node_range_csr,
    numpy_dtype,
    simple_csr,
    use_compiled,
)
from graphpe.ops.plan import DEFAULT_PLAN, ExecPlan
from graphpe.ops.progress import duration_text
from graphpe.ops.walk.compiled import landing_probs
from graphpe.ops.walk.large import (
    ExactCost,
    blocked_itemsize,
    exact_landing_cost,
    large_landing_probs,
)
from graphpe.ops.walk.sampled import ESTIMATORS, MIN_WALKS, sampled_landing_probs
from graphpe.ops.walk.tensor import RWSE_DENSE_MAX_NODES, random_walk_landing_probs

LOG = logging.getLogger(__name__)

ESTIMATES = ("auto", "exact", "sampled")
DEFAULT_WALKS = 256
# Seconds per walk step of one node's walks on one core, for the prediction logged with the
# choice (benchmarks/rwse_estimator.py: ogbn-arxiv, the collision estimator, T = 16, about
# 2e-8 s per node, walk and step counted T times; graphs that fit in cache take half that)
SAMPLED_SECONDS_PER_STEP = 2e-8


def sampled_seconds(num_nodes: int, walks: int, walk_length: int, threads: int = 1) -> float:
    """Predicted seconds of :func:`~graphpe.ops.walk.sampled.sampled_landing_probs` on a
    graph of ``num_nodes`` nodes (:data:`SAMPLED_SECONDS_PER_STEP`)."""
    return SAMPLED_SECONDS_PER_STEP * num_nodes * walks * walk_length / max(threads, 1)


def check_walks(name: str, value: object) -> int:
    """``value`` as an int if it is an int >= :data:`~graphpe.ops.walk.sampled.MIN_WALKS`."""
    value = check_positive_int(name, value)
    if value < MIN_WALKS:
        raise ValueError(f"{name} must be at least {MIN_WALKS} (the standard error leaves one "
                         f"walk out), got {value!r}")
    return value


def check_max_seconds(name: str, value: object) -> float | None:
    """None, or ``value`` as a float if it is a finite number > 0."""
    if value is None:
        return None
    value = check_number(name, value, low=0.0)
    if value <= 0.0:
        raise ValueError(f"{name} must be a finite number > 0 or None, got {value!r}")
    return value


def landing_probs_or_estimate(
    edge_index: Tensor,
    num_nodes: int,
    walk_length: int,
    *,
    ptr: Tensor | None = None,
    edge_weight: Tensor | None = None,
    dtype: torch.dtype = torch.float32,
    self_loops: bool = True,
    estimate: str = "auto",
    walks: int = DEFAULT_WALKS,
    seed: int = 0,
    estimator: str = "collision",
    max_exact_seconds: float | None = None,
    plan: ExecPlan = DEFAULT_PLAN,
) -> tuple[Tensor, Tensor | None]:
    """``(landing, stderr)``: :func:`~graphpe.ops.walk.random_walk_landing_probs`'s
    ``diag(P^t)``, ``t = 1..walk_length`` (``[N, walk_length]``), computed exactly or
    estimated graph by graph, and the estimate's standard error (``[N, walk_length]``, 0 on
    the graphs computed exactly), or None where every graph was computed exactly.

    ``estimate``: ``exact`` (:func:`~graphpe.ops.walk.random_walk_landing_probs`, nothing
    else), ``sampled`` (every graph estimated by
    :func:`~graphpe.ops.walk.sampled.sampled_landing_probs`, on the host: a CUDA input is
    copied there and the result back), or ``auto``: on the compiled (CPU) kernel, each graph
    above ``plan.dense_max_nodes`` is estimated only where
    :func:`~graphpe.ops.walk.large.exact_landing_cost` predicts that some component fits no
    exact path within ``plan.max_memory_bytes`` (see
    :func:`~graphpe.ops.host.memory_budget`) or that the exact paths take more than
    ``max_exact_seconds`` (None: no limit on time), and the choice is logged at WARNING with
    the predictions; every other graph, and every graph on the ``tensor`` kernel, is exact.
    ``walks`` (at least :data:`~graphpe.ops.walk.sampled.MIN_WALKS`), ``seed`` and
    ``estimator`` (one of :data:`~graphpe.ops.walk.sampled.ESTIMATORS`) are the estimate's;
    a graph's estimate depends on them and on the graph only."""
    check_choice("estimate", estimate, ESTIMATES)
    walks = check_walks("walks", walks)
    check_choice("estimator", estimator, ESTIMATORS)
    max_exact_seconds = check_max_seconds("max_exact_seconds", max_exact_seconds)
    exact = {"ptr": ptr, "edge_weight": edge_weight, "dtype": dtype, "self_loops": self_loops,
             "plan": plan}
    dense_max_nodes = (RWSE_DENSE_MAX_NODES if plan.dense_max_nodes is None
                       else plan.dense_max_nodes)
    if estimate == "exact" or (estimate == "auto" and (
            not use_compiled(plan.kernel, edge_index.device)
            or (ptr is None and type(num_nodes) is int and num_nodes <= dense_max_nodes))):
        return random_walk_landing_probs(edge_index, num_nodes, walk_length, **exact), None
    walk_length = check_positive_int("walk_length", walk_length)
    validate_graph(edge_index, num_nodes, edge_weight, ptr)
    ptr_np = (np.array([0, num_nodes], dtype=np.int64) if ptr is None
              else host_array(ptr.cpu(), np.int64))
    sizes = ptr_np[1:] - ptr_np[:-1]
    if estimate == "auto" and not (sizes > dense_max_nodes).any():  # (a batch of small graphs)
        return random_walk_landing_probs(edge_index, num_nodes, walk_length, **exact), None
    device = edge_index.device
    csr = simple_csr(edge_index.cpu(), num_nodes,
                     None if edge_weight is None else edge_weight.cpu())
    sample = {"walks": walks, "seed": seed, "self_loops": self_loops, "estimator": estimator}
    if estimate == "sampled":
        values, stderr = sampled_landing_probs(csr, walk_length, ptr=ptr_np, **sample)
        return _tensors(values, stderr, dtype, device)
    out = np.empty((num_nodes, walk_length), dtype=numpy_dtype(dtype))
    landing_probs(csr, ptr_np, walk_length, dense_max_nodes, out, self_loops)
    stderr = None
    for g in np.flatnonzero(sizes > dense_max_nodes).tolist():
        start, end = int(ptr_np[g]), int(ptr_np[g + 1])
        one = node_range_csr(csr, start, end)
        budget = memory_budget(plan.max_memory_bytes)
        cost = exact_landing_cost(one, walk_length, budget, blocked_itemsize(out))
        if cost.fits and (max_exact_seconds is None or cost.seconds <= max_exact_seconds):
            large_landing_probs(one, walk_length, out[start:end], budget=budget,
                                self_loops=self_loops)
            continue
        _say_sampled(end - start, cost, budget, max_exact_seconds, walks, walk_length,
                     estimator)
        values, errors = sampled_landing_probs(one, walk_length, **sample)
        out[start:end] = values
        if stderr is None:
            stderr = np.zeros((num_nodes, walk_length), dtype=out.dtype)
        stderr[start:end] = errors
    return _tensors(out, stderr, dtype, device)


def _say_sampled(n: int, cost: ExactCost, budget: int, max_seconds: float | None, walks: int,
                 walk_length: int, estimator: str) -> None:
    why = ([] if cost.fits else [f"no exact path fits the memory budget of "
                                 f"{budget / 2**20:,.0f} MiB"])
    if max_seconds is not None and cost.seconds > max_seconds:
        why.append(f"past max_exact_seconds={max_seconds:g}")
    threads = torch.get_num_threads()
    LOG.warning("RWSE of a %s-node graph: exact would take about %s (%s), so it is estimated "
                "from %d random walks per node (about %s predicted), with its standard error. "
                "rwse:estimate=exact forces the exact values; rwse:walks=N sets the walks.",
                f"{n:,}", duration_text(cost.seconds), "; ".join(why), walks,
                duration_text(sampled_seconds(n, walks, walk_length, threads)))
    LOG.debug("RWSE estimate of a %s-node graph (%s estimator, %d thread%s): %s", f"{n:,}",
              estimator, threads, "" if threads == 1 else "s", cost.describe())


def _tensors(values: np.ndarray, stderr: np.ndarray | None, dtype: torch.dtype,
             device: torch.device) -> tuple[Tensor, Tensor | None]:
    out = torch.from_numpy(values).to(device=device, dtype=dtype)
    if stderr is None:
        return out, None
    return out, torch.from_numpy(stderr).to(device=device, dtype=dtype)
