"""RWSE on graphs above the dense limit: the three paths of graphpe.ops.walk.large (local
walks, sparse powers, blocked columns) against each other and a dense numpy reference, the
choice between them, and the memory budget."""

from __future__ import annotations

import logging
import re

import numpy as np
import pytest
import torch

from graphpe.ops import random_walk_landing_probs
from graphpe.ops.host import graph_chunks, memory_budget, simple_csr
from graphpe.ops.plan import ExecPlan
from graphpe.ops.walk import large
from graphpe.ops.walk.compiled import local_landing_probs, symmetric_walk
from graphpe.ops.walk.large import (
    BLOCKED_WIDTH,
    LANDING_PATHS,
    blocked_layout,
    blocked_memory,
    choose_landing_path,
    component_dense_max_nodes,
    landing_path_costs,
    large_landing_probs,
    local_cap,
    local_memory,
)
from graphpe.synthetic import coauthor_like_graph, road_like_graph, social_like_graph

T = 16


def dense_reference(edge_index: torch.Tensor, n: int, steps: int,
                    weight: torch.Tensor | None = None) -> np.ndarray:
    """diag(P^t), t = 1..steps, P = D^-1 A in float64: A symmetrized, duplicates and loops
    merged by their largest weight, a loop counted once, zero rows for isolated nodes."""
    a = np.zeros((n, n))
    w = np.ones(edge_index.size(1)) if weight is None else weight.double().numpy()
    for (u, v), x in zip(edge_index.T.tolist(), w.tolist(), strict=True):
        a[u, v] = a[v, u] = max(a[u, v], x)
    deg = a.sum(1)
    p = a / np.where(deg > 0, deg, 1.0)[:, None]
    out, power = [], np.eye(n)
    for _ in range(steps):
        power = power @ p
        out.append(power.diagonal().copy())
    return np.stack(out, 1)


def _mixed_graph() -> tuple[torch.Tensor, int, torch.Tensor]:
    """Two components (a weighted path with a self loop, a triangle with duplicated and
    looped nodes), isolated nodes, one of them with a self loop only."""
    ei = torch.tensor([[0, 1, 2, 3, 3, 5, 6, 7, 5, 6, 9, 2],
                       [1, 2, 3, 4, 3, 6, 7, 5, 6, 6, 9, 2]])
    w = torch.tensor([1.0, 2.5, 0.5, 3.0, 2.0, 1.0, 4.0, 0.25, 1.5, 0.75, 3.0, 1.0],
                     dtype=torch.float64)
    return ei, 11, w


def _cases():
    road = road_like_graph(40, seed=1)
    social = social_like_graph(300, seed=2)
    coauthor = coauthor_like_graph(250, seed=3)
    ei, n, w = _mixed_graph()
    return {"road": (road.edge_index, road.num_nodes, None),
            "social": (social.edge_index, social.num_nodes, None),
            "coauthor": (coauthor.edge_index, coauthor.num_nodes, None),
            "mixed": (ei, n, w),
            "mixed_unweighted": (ei, n, None)}


CASES = _cases()


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_path_equals_the_dense_reference(name):
    ei, n, w = CASES[name]
    csr = simple_csr(ei, n, w)
    want = dense_reference(ei, n, T, w)
    got = {}
    for path in LANDING_PATHS:
        out = np.full((n, T), np.nan)
        assert large_landing_probs(csr, T, out, budget=2**30, path=path,
                                   components=False) == path
        np.testing.assert_allclose(out, want, atol=1e-12, rtol=0, err_msg=path)
        got[path] = out
        # component by component: small ones dense, the others by the path
        out = np.full((n, T), np.nan)
        assert large_landing_probs(csr, T, out, budget=2**30, path=path) in (path, "dense")
        np.testing.assert_allclose(out, want, atol=1e-12, rtol=0, err_msg=path)
    # the same arithmetic gives the same bits: auto takes one of the paths
    out = np.empty((n, T))
    chosen = large_landing_probs(csr, T, out, budget=2**30, components=False)
    assert np.array_equal(out, got[chosen])


def test_components_apart_dense_and_by_path():
    # the co-authorship graph's components: the small ones by the dense kernel, the largest
    # by its path; the same values as the whole graph at once
    ei, n = CASES["coauthor"][:2]
    csr = simple_csr(ei, n)
    want = dense_reference(ei, n, T)
    for path in LANDING_PATHS:
        out = np.empty((n, T))
        assert large_landing_probs(csr, T, out, budget=2**30, path=path) in (path, "dense")
        np.testing.assert_allclose(out, want, atol=1e-12, rtol=0)
    # a budget too small for any dense scratch sends every component to the paths
    assert component_dense_max_nodes(T, 2**30, 1) == 256
    assert component_dense_max_nodes(T, 1000, 1) == 2


@pytest.mark.parametrize("steps", [1, 2, 3, 7])
def test_short_and_odd_walks(steps):
    ei, n, w = CASES["mixed"]
    csr = simple_csr(ei, n, w)
    for path in LANDING_PATHS:
        out = np.empty((n, steps))
        large_landing_probs(csr, steps, out, budget=2**30, path=path, components=False)
        np.testing.assert_allclose(out, dense_reference(ei, n, steps, w), atol=1e-12, rtol=0)


def test_without_self_loops_the_loops_are_dropped():
    ei, n, w = CASES["mixed"]
    keep = ei[0] != ei[1]
    want = dense_reference(ei[:, keep], n, T, w[keep])
    for path in LANDING_PATHS:
        out = np.empty((n, T))
        large_landing_probs(simple_csr(ei, n, w), T, out, budget=2**30, self_loops=False,
                            path=path, components=False)
        np.testing.assert_allclose(out, want, atol=1e-12, rtol=0)


def test_the_public_kernel_takes_the_large_paths_in_a_batch():
    # a batch of the cases, with the dense limit between their sizes: small graphs by the
    # dense kernel, large ones by the chosen path, all equal to the reference
    names = ["mixed", "road", "social", "coauthor"]
    parts, offsets, weights, start = [], [0], [], 0
    for name in names:
        ei, n, w = CASES[name]
        parts.append(ei + start)
        weights.append(torch.ones(ei.size(1), dtype=torch.float64) if w is None else w)
        start += n
        offsets.append(start)
    ei, w, ptr = torch.cat(parts, 1), torch.cat(weights), torch.tensor(offsets)
    want = np.concatenate([dense_reference(*CASES[name][:2], T, CASES[name][2])
                           for name in names])
    for dense_max_nodes in (0, 20, 512):
        got = random_walk_landing_probs(ei, start, T, ptr=ptr, edge_weight=w,
                                        dtype=torch.float64,
                                        plan=ExecPlan(dense_max_nodes=dense_max_nodes))
        np.testing.assert_allclose(got.numpy(), want, atol=1e-12, rtol=0)
    small = random_walk_landing_probs(ei, start, T, ptr=ptr, edge_weight=w,
                                      plan=ExecPlan(dense_max_nodes=0))
    assert small.dtype == torch.float32
    np.testing.assert_allclose(small.numpy(), want, atol=1e-6, rtol=0)


def test_the_choice_takes_local_walks_on_a_road_and_not_on_a_power_law_graph(caplog):
    road = road_like_graph(200, seed=0)
    social = social_like_graph(2000, mean_degree=20.0, seed=0)
    with caplog.at_level(logging.DEBUG, logger="graphpe"):
        on_road = choose_landing_path(simple_csr(road.edge_index, road.num_nodes), T, 2**30)
        on_social = choose_landing_path(simple_csr(social.edge_index, social.num_nodes), T,
                                        2**30)
    assert on_road.path == "local"
    assert on_social.path != "local"
    assert on_road.seconds["local"] < min(on_road.seconds["powers"], on_road.seconds["blocked"])
    assert on_social.seconds["local"] > on_social.seconds[on_social.path]
    assert "RWSE path 'local'" in caplog.text
    assert set(on_road.memory) == set(LANDING_PATHS) and on_road.budget == 2**30


def test_the_choice_leaves_out_a_path_over_the_budget():
    coauthor = CASES["coauthor"]
    csr = simple_csr(coauthor[0], coauthor[1])
    free = landing_path_costs(csr, T, 2**30)
    assert free.memory["powers"] > free.memory["local"]
    tight = landing_path_costs(csr, T, free.memory["powers"] - 1)
    assert tight.path in ("local", "blocked")
    assert landing_path_costs(csr, T, 1).path is None


def test_local_walks_stop_at_a_ball_over_their_cap_and_switch_to_blocked(caplog,
                                                                          monkeypatch):
    ei, n = CASES["road"][:2]
    csr = simple_csr(ei, n)
    values, diag = symmetric_walk(csr)
    out = np.empty((n, T))
    assert local_landing_probs(csr, values, diag, T, out, cap=3) >= 0
    assert local_landing_probs(csr, values, diag, T, out) == -1
    # a budget that holds every ball and one blocked column; the cap binds only where a
    # smaller budget is shared by threads: stand in for that cap
    threads = len(graph_chunks(np.arange(n + 1)))
    budget = max(blocked_memory(n, int(csr.indptr[-1]), 1), local_memory(n, T, n, threads))
    assert local_cap(n, T, budget, threads) == n
    assert local_cap(n, T, local_memory(n, T, 3, threads), threads) == 3
    monkeypatch.setattr(large, "local_cap", lambda *args: 3)
    out2 = np.empty((n, T))
    with caplog.at_level(logging.DEBUG, logger="graphpe"):
        assert large_landing_probs(csr, T, out2, budget=budget, path="local") == "blocked"
    assert "taking 'blocked'" in caplog.text
    np.testing.assert_allclose(out2, out, atol=1e-12, rtol=0)


def test_sparse_powers_give_way_to_blocked_before_filling_past_the_budget():
    ei, n = CASES["social"][:2]
    csr = simple_csr(ei, n)
    budget = blocked_memory(n, int(csr.indptr[-1]), 1)
    out = np.empty((n, T))
    assert large_landing_probs(csr, T, out, budget=budget, path="powers") == "blocked"
    np.testing.assert_allclose(out, dense_reference(ei, n, T), atol=1e-12, rtol=0)


def test_no_path_fits_a_tiny_budget():
    ei = torch.tensor([[0, 1, 2, 3, 4, 5, 6, 7, 8], [1, 2, 3, 4, 5, 6, 7, 8, 9]])
    csr = simple_csr(ei, 10)
    # blocked: S (18 + 10 entries of 56 bytes: renamed, and with the leaves folded out), two
    # columns of 10 float64 (float32 for a float32 output)
    assert blocked_memory(10, 18, 1) == 56 * 28 + 160
    assert blocked_memory(10, 18, 1, itemsize=4) == 56 * 28 + 80
    assert blocked_memory(10, 18, 3, threads=2) == 56 * 28 + 2 * 3 * 160
    with pytest.raises(ValueError, match=re.escape(
            "random-walk landing probabilities of a graph of 10 nodes and 9 edges need at "
            "least 1728 bytes of working memory (path 'blocked'), over the memory budget of "
            "1000 bytes (ExecPlan.max_memory_bytes)")):
        large_landing_probs(csr, 4, np.empty((10, 4)), budget=1000, path="blocked")
    costs = landing_path_costs(csr, 4, 100)
    least = min(LANDING_PATHS, key=lambda p: costs.memory[p])
    message = ("random-walk landing probabilities of a graph of 10 nodes and 9 edges need at "
               f"least {costs.memory[least]} bytes of working memory (path {least!r}), over "
               "the memory budget of 100 bytes (ExecPlan.max_memory_bytes)")
    with pytest.raises(ValueError, match="^" + re.escape(message) + "$"):
        random_walk_landing_probs(ei, 10, 4,
                                  plan=ExecPlan(dense_max_nodes=0, max_memory_bytes=100))
    # the torch kernel's blocked columns: P (18 entries of 4 + 16 bytes), the output
    # (10 x 4 float32) and two float32 columns
    with pytest.raises(ValueError, match="^" + re.escape(
            "random-walk landing probabilities of a graph of 10 nodes and 9 edges need at "
            "least 600 bytes of working memory (path 'blocked'), over the memory budget of "
            "100 bytes (ExecPlan.max_memory_bytes)") + "$"):
        random_walk_landing_probs(ei, 10, 4, plan=ExecPlan(
            kernel="tensor", dense_max_nodes=0, max_memory_bytes=100))


def test_memory_budget_default_and_setting():
    assert memory_budget(12345) == 12345
    assert memory_budget(None) > 0
    with pytest.raises(ValueError, match=r"^max_memory_bytes must be a positive int or None, "
                                         r"got 0$"):
        ExecPlan(max_memory_bytes=0)


def test_bad_path_name():
    ei, n = CASES["road"][:2]
    with pytest.raises(ValueError, match="path must be one of"):
        large_landing_probs(simple_csr(ei, n), T, np.empty((n, T)), budget=2**30,
                            path="dense")


def test_blocked_layout_narrows_to_the_budget():
    n, m = 1000, 6000
    fixed = blocked_memory(n, m, 0)
    assert blocked_layout(n, m, 2**40, 4) == (BLOCKED_WIDTH, 4)
    # room for two full-width threads, then for 10 columns on one, then for one column
    assert blocked_layout(n, m, fixed + 2 * BLOCKED_WIDTH * 16 * n, 4) == (BLOCKED_WIDTH, 2)
    assert blocked_layout(n, m, fixed + 10 * 16 * n, 4) == (10, 1)
    assert blocked_layout(n, m, fixed + 10 * 8 * n, 4, itemsize=4) == (10, 1)
    assert blocked_layout(n, m, fixed, 4) == (1, 1)
    assert blocked_layout(20, m, 2**40, 1) == (20, 1)


@pytest.mark.parametrize("name", ["social", "coauthor", "mixed"])
@pytest.mark.parametrize("threads", [1, 3])
def test_blocked_float32_output_within_float32_rounding(name, threads, monkeypatch):
    # a float32 output takes float32 blocks: the values stay within a few float32 epsilons
    # of the float64 reference, relative (no cancellation: every term is non-negative)
    ei, n, w = CASES[name]
    csr = simple_csr(ei, n, w)
    want = dense_reference(ei, n, T, w)
    monkeypatch.setattr(large, "_threads", lambda n: threads)
    out = np.empty((n, T), np.float32)
    large_landing_probs(csr, T, out, budget=2**30, path="blocked", components=False)
    np.testing.assert_allclose(out, want, rtol=2e-6, atol=1e-9)
    out64 = np.empty((n, T))
    large_landing_probs(csr, T, out64, budget=2**30, path="blocked", components=False)
    np.testing.assert_allclose(out64, want, atol=1e-12, rtol=0)


def test_blocked_takes_leaves_from_their_parents():
    # a two-node component (neither end is a leaf of the other), a weighted star whose centre
    # has a loop, a leaf with a loop of its own (not a leaf to the walk), a triangle with a tail
    ei = torch.tensor([[0, 2, 2, 2, 2, 6, 7, 8, 9, 9, 5],
                       [1, 3, 4, 5, 2, 7, 8, 6, 6, 10, 5]])
    w = torch.tensor([1.0, 2.0, 0.5, 1.5, 3.0, 1.0, 1.0, 1.0, 2.5, 1.0, 0.75],
                     dtype=torch.float64)
    n = 11
    csr = simple_csr(ei, n, w)
    _, diag = symmetric_walk(csr)
    leaves, parents = large.graph_leaves(csr, diag)
    assert leaves.tolist() == [3, 4, 10] and parents.tolist() == [2, 2, 9]
    for steps in (1, 2, 3, T):
        out = np.full((n, steps), np.nan)
        large_landing_probs(csr, steps, out, budget=2**30, path="blocked", components=False)
        np.testing.assert_allclose(out, dense_reference(ei, n, steps, w), atol=1e-12, rtol=0)
