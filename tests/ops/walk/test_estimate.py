"""The choice between RWSE's exact paths and its estimate by random walks
(graphpe.ops.walk.estimate): exact wherever the exact paths fit their budgets, the estimate
(with a warning giving the predictions) where they do not."""

from __future__ import annotations

import logging

import pytest
import torch

from graphpe.ops.plan import ExecPlan
from graphpe.ops.walk import random_walk_landing_probs
from graphpe.ops.walk.estimate import landing_probs_or_estimate
from graphpe.synthetic import road_like_graph

T = 16


def _large_graph():
    g = road_like_graph(150, seed=4)
    return g.edge_index, g.num_nodes


def test_auto_is_exact_where_the_exact_paths_fit_their_budgets():
    ei, n = _large_graph()
    plan = ExecPlan(dense_max_nodes=100)
    want = random_walk_landing_probs(ei, n, T, plan=plan)
    got, stderr = landing_probs_or_estimate(ei, n, T, plan=plan)
    assert stderr is None and torch.equal(got, want)
    for small in ((ei, n, None), (torch.tensor([[0, 1], [1, 2]]), 3, None)):
        got, stderr = landing_probs_or_estimate(small[0], small[1], T)
        assert stderr is None and torch.equal(got, random_walk_landing_probs(small[0],
                                                                             small[1], T))


def test_auto_estimates_a_graph_past_its_time_or_memory_budget(caplog):
    ei, n = _large_graph()
    ring = torch.tensor([[0, 1, 2, 1, 2, 0], [1, 2, 0, 0, 1, 2]])
    batch = torch.cat([ring, ei + 3], 1)
    ptr = torch.tensor([0, 3, n + 3])
    exact = random_walk_landing_probs(batch, n + 3, T, ptr=ptr, dtype=torch.float64)
    estimate, stderr = landing_probs_or_estimate(ei, n, T, estimate="sampled",
                                                 dtype=torch.float64)
    for kwargs, why in (({"max_exact_seconds": 1e-9}, "past max_exact_seconds=1e-09"),
                        ({"plan": ExecPlan(dense_max_nodes=100, max_memory_bytes=4096)},
                         "no exact path fits the memory budget")):
        with caplog.at_level(logging.WARNING, logger="graphpe"):
            caplog.clear()
            got, err = landing_probs_or_estimate(batch, n + 3, T, ptr=ptr,
                                                 dtype=torch.float64, **kwargs)
        said = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert len(said) == 1 and why in said[0] and "predicted" in said[0], said
        assert f"RWSE of a {n:,}-node graph" in said[0]
        assert said[0].endswith("rwse:estimate=exact forces the exact values; rwse:walks=N "
                                "sets the walks.") and "MiB):" not in said[0]
        # the ring exactly (standard error 0), the large graph by its own estimate
        assert torch.equal(got[:3], exact[:3]) and (err[:3] == 0).all()
        assert torch.equal(got[3:], estimate) and torch.equal(err[3:], stderr)
    with pytest.raises(ValueError, match="memory budget"):
        landing_probs_or_estimate(ei, n, T, estimate="exact",
                                  plan=ExecPlan(dense_max_nodes=100, max_memory_bytes=4096))


def test_bad_arguments_raise_value_errors_naming_them():
    ei = torch.tensor([[0, 1], [1, 2]])
    for kwargs, name in (({"estimate": "maybe"}, "estimate"), ({"walks": 1}, "walks"),
                         ({"max_exact_seconds": 0}, "max_exact_seconds"),
                         ({"max_exact_seconds": float("nan")}, "max_exact_seconds"),
                         ({"estimator": "mean"}, "estimator")):
        with pytest.raises(ValueError, match=name):
            landing_probs_or_estimate(ei, 3, 4, **kwargs)


def test_the_exact_cost_sums_the_components_chosen_paths():
    from graphpe.ops.host import simple_csr
    from graphpe.ops.walk.large import exact_landing_cost, landing_path_costs

    g = road_like_graph(150, seed=4)
    csr = simple_csr(g.edge_index, g.num_nodes)
    one = landing_path_costs(csr, T, 2**30)
    cost = exact_landing_cost(csr, T, 2**30)
    assert cost.fits and cost.seconds == one.seconds[one.path] and cost.largest == one
    assert f"{cost.seconds:.3g} s" in cost.describe()
    # two copies side by side: two components, twice the time; none fits 4 KiB
    n = g.num_nodes
    twice = simple_csr(torch.cat([g.edge_index, g.edge_index + n], 1), 2 * n)
    both = exact_landing_cost(twice, T, 2**30)
    assert both.fits and both.seconds == pytest.approx(2 * cost.seconds)
    assert not exact_landing_cost(twice, T, 4096).fits
