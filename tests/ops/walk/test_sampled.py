"""RWSE estimated by random walks (graphpe.ops.walk.sampled) against the exact landing
probabilities of graphs small enough to compute them.

Tolerances. An estimate counts as covered at ``(node, t)`` where ``|estimate - exact| <= 4 *
stderr + 1e-12`` (the slack covers the rounding of the entries computed exactly, whose
standard error is 0). The standard error is built so that at least 99% of the entries are
covered; a test sees ``N`` entries, and asserts at least the count that a share of exactly 99%
would pass 999 times in 1000 (the binomial's 0.1% quantile of ``N`` draws at 0.99: about
98.9% of 50,000 entries, 97.9% of 800), so a failure says the share is below 99%, not
chance. The graphs: road-like (odd cycles few and long), power-law (Chung-Lu, few
triangles), co-authorship (cliques), hub-heavy (Chung-Lu with hubs of a sixth of the nodes)
and stars (hubs of 400 leaves, with nodes of degree 2 in triangles with a hub and between two
hubs: returns of low-degree nodes through hubs, rare and large). Unbiasedness and the
standard error against the spread over many seeds are checked apart from that."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch
from scipy.stats import binom

from graphpe.ops.host import HostCSR, simple_csr
from graphpe.ops.walk import sampled
from graphpe.ops.walk.large import large_landing_probs
from graphpe.ops.walk.sampled import ESTIMATORS, sampled_landing_probs
from graphpe.synthetic import coauthor_like_graph, road_like_graph, social_like_graph
from tests.ops.walk.test_large import dense_reference

T = 16
TARGET = 0.99  # the share of (node, t) within 4 standard errors the standard error is built for


def _exact(csr: HostCSR, steps: int = T) -> np.ndarray:
    n = csr.indptr.shape[0] - 1
    out = np.empty((n, steps))
    large_landing_probs(csr, steps, out, budget=2**30)
    return out


def _covered(estimate: np.ndarray, stderr: np.ndarray, exact: np.ndarray,
             k: float = 4.0) -> np.ndarray:
    """Where the error is within ``k`` standard errors."""
    return np.abs(estimate - exact) <= k * stderr + 1e-12


def _assert_covers(covered: np.ndarray, label: object) -> None:
    """At least the binomial's 0.1% quantile of ``covered.size`` draws at :data:`TARGET`."""
    least = binom.ppf(1e-3, covered.size, TARGET)
    assert covered.sum() >= least, (label, float(covered.mean()), least / covered.size)


def hub_heavy_edges(n: int = 3000, mean_degree: float = 10.0, exponent: float = 2.1,
                    seed: int = 0) -> tuple[torch.Tensor, int]:
    """Chung-Lu with tail ``exponent`` and expected degrees capped at ``n / 4`` (hubs of a
    sixth of the nodes; ``social_like_graph`` caps them at ``sqrt(10 n)``)."""
    rng = np.random.default_rng(seed)
    weight = np.minimum(rng.pareto(exponent - 1.0, n) + 1.0, n / 4)
    pairs = rng.choice(n, size=(int(n * mean_degree / 2), 2), p=weight / weight.sum())
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    return torch.from_numpy(np.ascontiguousarray(pairs.T)), n


def star_edges(hubs: int = 3, leaves: int = 400, triangles: int = 15,
               bridges: int = 10) -> tuple[torch.Tensor, int, np.ndarray]:
    """``hubs`` adjacent hubs, each with ``leaves`` leaves and ``triangles`` pairs of degree-2
    nodes in a triangle with it; then ``bridges`` nodes of degree 2 joined to two hubs (their
    first odd return, ``t = 3`` through the hubs' edge, has probability ``1 / d_hub^2`` and a
    walk sees it about once in 900). The edges, the node count and the bridges."""
    edges = [(a, b) for a in range(hubs) for b in range(a + 1, hubs)]
    node = hubs
    for h in range(hubs):
        edges += [(h, node + k) for k in range(leaves)]
        node += leaves
        for _ in range(triangles):
            edges += [(h, node), (h, node + 1), (node, node + 1)]
            node += 2
    first = node
    for k in range(bridges):
        edges += [(k % hubs, node), ((k + 1) % hubs, node)]
        node += 1
    return torch.tensor(edges).T, node, np.arange(first, node)


GRAPHS = {  # the three stand-ins of benchmarks/rwse_estimator.py, smaller
    "road": lambda: road_like_graph(800, seed=1),
    "social": lambda: social_like_graph(3000, seed=2),
    "coauthor": lambda: coauthor_like_graph(3000, seed=2),
}


@functools.cache
def _graph(name: str) -> tuple[HostCSR, np.ndarray]:
    """``(csr, exact)`` of one of :data:`GRAPHS`, ``hubs`` or ``stars``."""
    if name in GRAPHS:
        g = GRAPHS[name]()
        edge_index, n = g.edge_index, g.num_nodes
    else:
        edge_index, n = hub_heavy_edges() if name == "hubs" else star_edges()[:2]
    csr = simple_csr(edge_index, n)
    return csr, _exact(csr)


@pytest.fixture(scope="module", params=list(GRAPHS))
def graph(request):
    return (request.param, *_graph(request.param))


@pytest.mark.parametrize(("name", "estimator"), [
    (name, estimator) for name in [*GRAPHS, "hubs", "stars"] for estimator in ESTIMATORS
    if (name, estimator) != ("stars", "transition")])
def test_the_estimate_is_within_four_standard_errors_of_the_exact_values(name, estimator):
    """At 256 walks at least 99% of the ``(node, t)`` within 4 standard errors, and of those
    whose exact value is positive and estimated (``t >= 3``; ``t >= 2`` for ``transition``,
    every ``t`` for ``indicator``). Not ``transition`` on the stars (measured 98.6%): a node
    of degree 2 in a triangle with a hub has odd returns of two sizes 220 times apart
    (``P(hub, i)``, ``P(y, i)``), the larger seen at fewer than one ``t`` in three, which the
    pooled size misses (``collision`` sees it in its pairs)."""
    csr, exact = _graph(name)
    estimate, stderr = sampled_landing_probs(csr, T, 256, seed=3, estimator=estimator)
    assert estimate.shape == stderr.shape == exact.shape
    covered = _covered(estimate, stderr, exact)
    _assert_covers(covered, (name, estimator, "all"))
    first = {"collision": 2, "transition": 1, "indicator": 0}[estimator]
    _assert_covers(covered[:, first:][exact[:, first:] > 0], (name, estimator, "positive"))
    assert (estimate >= 0).all() and (stderr >= 0).all()
    if estimator == "collision":  # t = 1, 2 are exact
        np.testing.assert_allclose(estimate[:, :2], exact[:, :2], atol=1e-12)
        assert (stderr[:, :2] == 0).all()


def test_low_degree_nodes_beside_hubs_and_returns_never_seen_are_covered():
    """On the stars: the nodes of degree at most 2 (leaves, the triangles' and the bridges'
    nodes) are covered as the whole graph is; and a bridge whose return at ``t = 3`` no walk
    saw (estimate 0, exact ``1 / d_hub^2``) has a positive standard error that reaches it (the
    plug-in standard error there is 0)."""
    csr, exact = _graph("stars")
    bridges = star_edges()[2]
    estimate, stderr = sampled_landing_probs(csr, T, 256, seed=3)
    covered = _covered(estimate, stderr, exact)
    low = np.diff(csr.indptr) <= 2
    _assert_covers(covered[low], "degree <= 2")
    unseen = bridges[estimate[bridges, 2] == 0]
    assert unseen.size >= 3  # (about 3 in 4 with 256 walks)
    assert (exact[unseen, 2] > 0).all() and (stderr[unseen, 2] > 0).all()
    assert covered[unseen].all()


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_the_error_shrinks_as_one_over_the_root_of_the_walks(graph, estimator):
    """16 times the walks: the error to the exact values about 4 times smaller, and the
    standard error 4 to 16 times: its plug-in part falls as ``1 / sqrt(W)``, the score
    interval's lift and the collision estimator's pairs' term as ``1 / W`` (where it is below
    its cap at 64 walks: ``p_t`` lies in ``[0, p_2]``, so ``4 stderr`` never passes ``max(
    estimate, p_2 - estimate)``)."""
    name, csr, exact = graph
    small, small_err = sampled_landing_probs(csr, T, 64, seed=5, estimator=estimator)
    large, large_err = sampled_landing_probs(csr, T, 1024, seed=5, estimator=estimator)
    rmse = [np.sqrt(((e - exact) ** 2).mean()) for e in (small, large)]
    assert 3.2 <= rmse[0] / rmse[1] <= 5.5, (name, rmse)
    top = np.where(np.arange(T) >= 1, exact[:, 1:2], 1.0)
    capped = 4 * small_err >= np.maximum(small, top - small) * (1 - 1e-9)
    moving = (small_err > 0) & (large_err > 0) & ~capped
    ratio = np.median(small_err[moving] / large_err[moving])
    assert 3.0 <= ratio <= 16.0 * (1 + 1e-9), (name, ratio)


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_every_estimator_is_unbiased_and_its_standard_error_calibrated(estimator):
    """Over 200 seeds the mean estimate converges to the exact value (its spread over the
    seeds over sqrt(200)); the standard error covers 99% of the (seed, node, t) within 4, and
    its mean square is 0.7 to 6 times the variance over the seeds (the plug-in's matches it;
    at 16 walks the score interval's lift is large, and the cap at ``[0, p_2]`` cuts it
    where that interval is narrower: measured 0.9 to 1.9 times); on a weighted graph with
    self loops and an isolated node."""
    g = road_like_graph(12, seed=3)
    n = g.num_nodes + 1  # and one isolated node
    ei = torch.cat([g.edge_index, torch.tensor([[0, 5], [0, 5]])], 1)  # two self loops
    w = torch.rand(ei.size(1), generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    w = w + 0.5
    csr = simple_csr(ei, n, w)
    exact = dense_reference(ei, n, 8, w)
    runs = [sampled_landing_probs(csr, 8, 16, seed=s, estimator=estimator) for s in range(200)]
    estimates = np.stack([r[0] for r in runs])
    errors = np.stack([r[1] for r in runs])
    mean, spread = estimates.mean(0), estimates.std(0, ddof=1) / np.sqrt(len(runs))
    assert (np.abs(mean - exact) <= 4 * spread + 1e-12).mean() >= 0.99
    varied = estimates.std(0) > 0
    ratio = (errors[:, varied] ** 2).mean() / estimates[:, varied].var(0, ddof=1).mean()
    assert 0.7 <= ratio <= 6.0, ratio
    _assert_covers(_covered(estimates, errors, exact), estimator)
    assert (estimates[:, -1] == 0).all() and (errors[:, -1] == 0).all()  # the isolated node


def test_a_seed_fixes_the_estimate_whatever_the_threads_and_the_batch():
    g = social_like_graph(400, seed=1)
    n = g.num_nodes
    csr = simple_csr(g.edge_index, n)
    one = sampled_landing_probs(csr, 8, 32, seed=7, threads=1)
    for threads in (1, 2):
        again = sampled_landing_probs(csr, 8, 32, seed=7, threads=threads)
        assert all(np.array_equal(a, b) for a, b in zip(one, again, strict=True))
    other = sampled_landing_probs(csr, 8, 32, seed=8)
    assert not np.array_equal(one[0], other[0])
    # the same graph after another in a batch: its rows are the same (streams keyed by the
    # node's index within its graph)
    ring = torch.tensor([[0, 1, 2, 1, 2, 0], [1, 2, 0, 0, 1, 2]])
    batch = simple_csr(torch.cat([ring, g.edge_index + 3], 1), n + 3)
    both = sampled_landing_probs(batch, 8, 32, seed=7, ptr=np.array([0, 3, n + 3]))
    assert np.array_equal(both[0][3:], one[0]) and np.array_equal(both[1][3:], one[1])


@pytest.mark.parametrize("self_loops", [True, False])
def test_isolated_nodes_and_a_node_with_only_a_loop(self_loops):
    ei = torch.tensor([[0, 1, 3], [1, 2, 3]])  # a path 0-1-2, node 3 with a loop, node 4 alone
    csr = simple_csr(ei, 5)
    for estimator in ESTIMATORS:
        estimate, stderr = sampled_landing_probs(csr, 6, 8, self_loops=self_loops,
                                                 estimator=estimator)
        assert (estimate[4] == 0).all() and (stderr[4] == 0).all()
        assert (estimate[3] == (1.0 if self_loops else 0.0)).all() and (stderr[3] == 0).all()
        # the path is bipartite: no return after an odd number of steps
        assert (estimate[:3, ::2] == 0).all()


def test_rounds_give_the_one_call_result_and_show_progress(monkeypatch, capsys):
    from graphpe.ops import progress

    g = road_like_graph(60, seed=2)
    csr = simple_csr(g.edge_index, g.num_nodes)
    whole = sampled_landing_probs(csr, T, 16)
    monkeypatch.setattr(sampled, "ROUND_STEPS", 1)  # one node per round
    monkeypatch.setattr(progress, "PROGRESS_DELAY_SECONDS", 0.0)
    rounds = sampled_landing_probs(csr, T, 16)
    assert all(np.array_equal(a, b) for a, b in zip(whole, rounds, strict=True))
    assert "RWSE estimate (" in capsys.readouterr().err


def test_bad_arguments_raise_value_errors_naming_them():
    csr = simple_csr(torch.tensor([[0, 1], [1, 2]]), 3)
    for kwargs, name in (({"walks": 2}, "walks"), ({"walks": 2.5}, "walks"),
                         ({"walk_length": 0}, "walk_length"), ({"seed": None}, "seed"),
                         ({"seed": "1"}, "seed"), ({"estimator": "mean"}, "estimator"),
                         ({"ptr": np.array([0, 2])}, "ptr"),
                         ({"ptr": np.array([0, 2, 1, 3])}, "ptr")):
        args = {"walk_length": 4, "walks": 8, **kwargs}
        with pytest.raises(ValueError, match=name):
            sampled_landing_probs(csr, **args)
