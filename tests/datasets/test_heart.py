"""HeaRT's hard negatives (graphpe.datasets.heart) and the per-edge rank metrics: the ranks
and PageRank against their definitions, every negative checked against a brute-force reading
of the rule, no known edge among the negatives, the groups in the held-out edges' order; the
rank evaluator against OGB's ogbl-citation2 evaluator; bad input."""

import importlib.util

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
import torch
from torch_geometric.data import Data

from graphpe.datasets.heart import (
    HeuristicScores,
    heart_split,
    heuristic_ranks,
    personalized_pagerank,
)
from graphpe.datasets.link import random_link_split
from graphpe.datasets.metrics import RANK_HITS_AT, RankEvaluator


def _graph(n: int = 90, seed: int = 0) -> Data:
    g = nx.powerlaw_cluster_graph(n, 3, 0.3, seed=seed)
    edges = torch.tensor(list(g.edges)).t()
    x = torch.from_numpy(np.random.default_rng(seed).integers(0, 2, (n, 12))).float()
    return Data(x=x, edge_index=torch.cat([edges, edges.flip(0)], 1), num_nodes=n)


def _known(pairs: torch.Tensor) -> set[tuple[int, int]]:
    u, v = pairs.tolist()
    return {(a, b) for a, b in zip(u, v, strict=True)} | {(b, a) for a, b in zip(u, v,
                                                                                 strict=True)}


def test_ranks_follow_the_definition():
    scores = np.array([[0.5, 0.0, 0.5, 0.2, -1.0, 0.0],
                       [0.0, 0.0, -1.0, 0.0, 0.0, 0.0]])
    assert heuristic_ranks(scores).tolist() == [[1, 4, 1, 3, 5, 4], [1, 1, 2, 1, 1, 1]]


def test_pagerank_equals_the_inverse():
    graph = _graph(40)
    adjacency = sp.csr_matrix(nx.to_scipy_sparse_array(nx.from_edgelist(
        graph.edge_index.t().tolist())), dtype=float)
    n = adjacency.shape[0]
    walk = sp.diags(1.0 / np.asarray(adjacency.sum(1)).ravel()) @ adjacency
    alpha = 0.15
    exact = alpha * np.linalg.inv(np.eye(n) - (1 - alpha) * walk.toarray())
    sources = np.array([0, 7, 39])
    found = personalized_pagerank(walk.tocsr(), sources, alpha, tol=1e-13)
    np.testing.assert_allclose(found, exact[sources], atol=1e-12)


def _reference_partners(s: int, t: int, scores: list[np.ndarray], known: set, n: int,
                        per_end: int) -> list[int] | None:
    """The rule in plain Python: per heuristic, excluded = s, t and s's known neighbours;
    the rest ranked; the per_end nodes of least (min rank, summed rank, id) among the nodes
    some heuristic scores above 0; None where fewer than per_end are (the random fill)."""
    excluded = {s, t} | {b for a, b in known if a == s}
    ranks = []
    for score in scores:
        row = score[s].copy()
        row[list(excluded)] = -1
        positive = sorted({v for v in row if v > 0}, reverse=True)
        rank = {}
        for node in range(n):
            if row[node] > 0:
                rank[node] = 1 + sum(1 for v in row if v > row[node])
        top = max(rank.values(), default=0)
        ranks.append([rank.get(node, top + 1 if row[node] == 0 else top + 2)
                      for node in range(n)])
        assert positive or not rank
    candidates = [node for node in range(n) if node not in excluded
                  and any(score[s][node] > 0 for score in scores)]
    if len(candidates) < per_end:
        return None
    key = sorted(candidates, key=lambda node: (min(r[node] for r in ranks),
                                               sum(r[node] for r in ranks), node))
    return key[:per_end]


def test_every_negative_is_the_rule_and_no_known_edge():
    graph = _graph()
    n, per_end = graph.num_nodes, 6
    split = random_link_split("g", graph, seed=1)
    heart = heart_split(split, negatives=2 * per_end, seed=0)
    assert heart.negatives_per_positive == 2 * per_end and heart.select_by == "mrr"
    u, v = split.train_pos.numpy()
    train = sp.csr_matrix((np.ones(2 * u.size), (np.r_[u, v], np.r_[v, u])), shape=(n, n))
    scorer = HeuristicScores(train, graph.x.double().numpy())
    scores = [np.asarray(s) for s in scorer(np.arange(n))]
    train_known = _known(split.train_pos)
    test_known = train_known | _known(split.val_pos)
    for part, known in (("val", train_known), ("test", test_known)):
        pos, neg = getattr(heart, f"{part}_pos"), getattr(heart, f"{part}_neg")
        groups = neg.t().reshape(pos.size(1), 2 * per_end, 2)
        for (s, t), group in zip(pos.t().tolist(), groups.tolist(), strict=True):
            first, second = group[:per_end], group[per_end:]
            assert all(a == s for a, _ in first) and all(b == t for _, b in second)
            for pair in group:
                assert pair[0] != pair[1] and tuple(pair) not in known
                assert sorted(pair) != sorted((s, t))
            for own, partners in ((s, [b for _, b in first]), (t, [a for a, _ in second])):
                other = t if own == s else s
                expected = _reference_partners(own, other, scores, known, n, per_end)
                if expected is not None:
                    assert partners == expected, (part, own, partners, expected)


def test_a_seed_draws_the_same_negatives():
    split = random_link_split("g", _graph(), seed=1)
    a, b = heart_split(split, 10, seed=3), heart_split(split, 10, seed=3)
    assert torch.equal(a.test_neg, b.test_neg) and torch.equal(a.val_neg, b.val_neg)


def test_rank_metrics():
    evaluator = RankEvaluator()
    pos = np.array([0.9, 0.5, 0.1])
    neg = np.array([[0.1, 0.2, 0.3], [0.5, 0.9, 0.1], [0.1, 0.2, 0.3]])
    found = evaluator.eval({"y_pred_pos": pos, "y_pred_neg": neg})
    # ranks: 1; 1 + (1 above + 2 at least as high) / 2 = 2.5; 1 + 2 (one tie counts half)
    np.testing.assert_allclose(found["mrr_list"], [1.0, 1 / 2.5, 1 / 3.5])
    assert found["hits@3_list"].tolist() == [1.0, 1.0, 0.0]
    assert set(found) == {"mrr_list", *(f"hits@{k}_list" for k in RANK_HITS_AT)}
    with pytest.raises(ValueError, match=r"y_pred_neg must be \[Q, K\] for Q = 3 edges, "
                                         r"got \[9\]"):
        evaluator.eval({"y_pred_pos": pos, "y_pred_neg": neg.ravel()})


@pytest.mark.skipif(importlib.util.find_spec("ogb") is None, reason="ogb is not installed")
def test_rank_metrics_equal_ogb_citation2():
    from ogb.linkproppred import Evaluator

    rng = np.random.default_rng(0)
    pos = rng.integers(0, 5, 200).astype(np.float64)  # ties on purpose
    neg = rng.integers(0, 5, (200, 50)).astype(np.float64)
    ours = RankEvaluator().eval({"y_pred_pos": pos, "y_pred_neg": neg})
    theirs = Evaluator("ogbl-citation2").eval({"y_pred_pos": torch.from_numpy(pos),
                                               "y_pred_neg": torch.from_numpy(neg)})
    for key in ("mrr_list", "hits@1_list", "hits@3_list", "hits@10_list"):
        np.testing.assert_allclose(ours[key], theirs[key].numpy())


def test_bad_input():
    split = random_link_split("g", _graph(), seed=1)
    with pytest.raises(ValueError, match="negatives must be an even int >= 2, got 5"):
        heart_split(split, 5)
    with pytest.raises(ValueError, match="negatives per end need more than its 90 nodes"):
        heart_split(split, 200)
    split.graph = Data(num_nodes=split.num_nodes)
    with pytest.raises(ValueError, match="the graph has no node features"):
        heart_split(split, 10)
    graph = _graph()
    scorer = HeuristicScores(sp.csr_matrix((graph.num_nodes, graph.num_nodes)),
                             graph.x.double().numpy())
    with pytest.raises(ValueError, match=r"^unknown heuristic 'katz'; known: ra, ppr, cos$"):
        scorer.score("katz", np.arange(3))


def test_each_heuristic_alone_is_its_column_of_the_three():
    graph = _graph()
    n = graph.num_nodes
    u, v = graph.edge_index.numpy()
    scorer = HeuristicScores(sp.csr_matrix((np.ones(u.size), (u, v)), shape=(n, n)),
                             graph.x.double().numpy())
    sources = np.array([3, 0, 41])
    for name, together in zip(("ra", "ppr", "cos"), scorer(sources), strict=True):
        np.testing.assert_array_equal(scorer.score(name, sources), together)
