"""HeaRT's hard negatives for link prediction (Li et al., "Evaluating Graph Neural Networks
for Link Prediction: Current Pitfalls and New Benchmarking", NeurIPS 2023): each held-out
edge ``(s, t)`` is scored against its own negatives, ``(s, x)`` for the ``K / 2`` nodes ``x``
that rank highest as partners of ``s`` and ``(x, t)`` for the ``K / 2`` that rank highest as
partners of ``t``, and the metric is the edge's rank among them (MRR, Hits@K), not a ROC-AUC
against random non-edges that most models separate easily.

A node ``x``'s rank as a partner of ``u`` is the best (smallest) of its ranks under three
heuristics computed on the graph the model reads before the part is scored (the training
edges):

- resource allocation, ``RA(u, x) = sum over common neighbours w of 1 / deg(w)``;
- personalized PageRank from ``u`` (teleport ``alpha = 0.15``), ``PPR_u(x)``;
- the cosine similarity of the node features.

Under each heuristic the nodes with a positive score are ranked from the highest (rank 1, ties
sharing the smallest rank), then come the nodes scoring 0 (one rank after the last), then the
excluded ones: ``u`` itself, the held-out edge's other end and ``u``'s neighbours in the graph
of known edges (training edges; for the test part, training and validation edges). The
``K / 2`` nodes of smallest combined rank are the negatives, among the nodes some heuristic
scores above 0; where fewer than ``K / 2`` are, the rest are drawn at random from the nodes
that score 0 under all three (the paper's code does the same).

Where this differs from the paper's code (``heart_negatives/create_heart_negatives.py``): PPR
is computed by power iteration to :data:`PPR_TOL` instead of Andersen's push with ``eps =
1e-7`` (the push leaves its smallest scores at 0, so the order of the lowest-ranked nodes can
differ; the top ``K / 2`` are where the heuristics score high); ties in the combined (smallest)
rank, which are many (every node a heuristic scores 0 shares that heuristic's last rank), are
broken by the mean of the three ranks, then by node id, where the paper's code leaves them to
``torch.topk``; and zero-score nodes are drawn without replacement where there are enough.
The edges themselves are split by :func:`~graphpe.datasets.link.random_link_split` (PyG's
``RandomLinkSplit``, 85 / 5 / 10), not by the paper's own split files.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import scipy.sparse as sp
import torch
from torch import Tensor

from graphpe.datasets.link import LinkSplit
from graphpe.datasets.metrics import RankEvaluator
from graphpe.ops.link import adjacency

#: negatives per held-out edge (the paper's ``--num-samples``): half from each end
HEART_NEGATIVES = 500
#: PPR's teleport probability (the paper's ``alpha``)
PPR_ALPHA = 0.15
#: the power iteration stops once the mass it has not yet spread is below this
PPR_TOL = 1e-9
#: the three heuristics, in the order :class:`HeuristicScores` returns them: resource
#: allocation, personalized PageRank, feature cosine
HEURISTICS = ("ra", "ppr", "cos")
#: rows of the score matrices formed at once (memory: ``3 * n * ROWS`` float64 values)
ROWS = 1024


def heart_split(split: LinkSplit, negatives: int = HEART_NEGATIVES, seed: int = 0) -> LinkSplit:
    """``split`` with HeaRT's negatives for its validation and test edges (module docstring):
    ``negatives`` per held-out edge (even), grouped by edge, scored by the rank of each edge
    among its own (:class:`~graphpe.datasets.metrics.RankEvaluator`, the MRR selecting the
    epoch). ``seed`` draws the zero-score fill."""
    if not isinstance(negatives, int) or negatives < 2 or negatives % 2:
        raise ValueError(f"negatives must be an even int >= 2, got {negatives!r}")
    n = split.num_nodes
    if split.graph.x is None:
        raise ValueError(f"{split.name}: HeaRT's negatives rank nodes by feature similarity "
                         "too, and the graph has no node features")
    if negatives // 2 > n - 2:
        raise ValueError(f"{split.name}: {negatives // 2} negatives per end need more than its "
                         f"{n} nodes")
    rng = np.random.default_rng(seed)
    features = split.graph.x.double().numpy()
    train = adjacency(split.train_pos, n)
    known_test = adjacency(torch.cat([split.train_pos, split.val_pos], 1), n)
    scorer = HeuristicScores(train, features)
    val_neg = hard_negatives(split.val_pos, scorer, train, negatives // 2, rng)
    test_neg = hard_negatives(split.test_pos, scorer, known_test, negatives // 2, rng)
    return dataclasses.replace(split, name=f"{split.name} (HeaRT)", val_neg=val_neg,
                               test_neg=test_neg, select_by="mrr", evaluator=RankEvaluator(),
                               negatives_per_positive=negatives)


class HeuristicScores:
    """The three heuristics of the module docstring, for a block of source nodes at a time,
    on the undirected ``adjacency`` (scipy CSR, 0/1) with node ``features`` ``[n, f]``."""

    def __init__(self, adjacency: sp.csr_matrix, features: np.ndarray) -> None:
        degree = np.asarray(adjacency.sum(axis=1)).ravel()
        inverse = np.divide(1.0, degree, out=np.zeros_like(degree), where=degree > 0)
        self.adjacency = adjacency
        self.ra = (adjacency @ sp.diags(inverse) @ adjacency).tocsr()
        self.walk = (sp.diags(inverse) @ adjacency).tocsr()  # row-stochastic D^-1 A
        norms = np.linalg.norm(features, axis=1, keepdims=True)
        self.unit = np.divide(features, norms, out=np.zeros_like(features), where=norms > 0)

    def __call__(self, sources: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``[b, n]`` RA, PPR and cosine scores of the nodes ``sources``."""
        return tuple(self.score(name, sources) for name in HEURISTICS)

    def score(self, name: str, sources: np.ndarray) -> np.ndarray:
        """``[b, n]`` scores of the nodes ``sources`` under the heuristic ``name`` (one of
        :data:`HEURISTICS`)."""
        if name == "ra":
            return self.ra[sources].toarray()
        if name == "ppr":
            return personalized_pagerank(self.walk, sources)
        if name == "cos":
            return self.unit[sources] @ self.unit.T
        raise ValueError(f"unknown heuristic {name!r}; known: {', '.join(HEURISTICS)}")


def personalized_pagerank(walk: sp.csr_matrix, sources: np.ndarray,
                          alpha: float = PPR_ALPHA, tol: float = PPR_TOL) -> np.ndarray:
    """``[b, n]`` rows ``pi_u = alpha sum_k (1 - alpha)^k e_u^T P^k`` for each ``u`` of
    ``sources``, ``P = walk`` row-stochastic (a node without edges keeps only its own
    ``alpha``), summed until ``(1 - alpha)^k < tol``."""
    n = walk.shape[0]
    # the terms as columns ([n, b], C order): each step one sparse product straight into a
    # new array, scaled and added in place (a row layout would copy each term twice a step)
    term = np.zeros((n, len(sources)))
    term[sources, np.arange(len(sources))] = alpha
    total = term.copy()
    walk_t = walk.T.tocsr()
    mass = alpha
    while mass > tol:
        term = walk_t @ term
        term *= 1.0 - alpha
        total += term
        mass *= 1.0 - alpha
    return np.ascontiguousarray(total.T)


def heuristic_ranks(scores: np.ndarray) -> np.ndarray:
    """Ranks of each row of ``scores`` (``[b, n]``; excluded entries negative): positive
    scores from the highest (1; ties share the smallest rank), then the zeros (one rank past
    the last positive), then the excluded ones (one more)."""
    ranks = np.empty_like(scores)
    # a loop over the block's rows: run once per split before training, never per step
    for row, out in zip(scores, ranks, strict=True):
        positive = row > 0
        values = row[positive]
        # the rank of a value: 1 + how many values exceed it
        ordered = np.sort(values)
        rank = (values.size - np.searchsorted(ordered, values, side="right") + 1).astype(
            np.float64)
        top = rank.max() if values.size else 0.0
        out[positive] = rank
        out[row == 0] = top + 1
        out[row < 0] = top + 2
    return ranks


def hard_negatives(pos: Tensor, scorer: HeuristicScores, known: sp.csr_matrix, per_end: int,
                   rng: np.random.Generator) -> Tensor:
    """``[2, Q * 2 per_end]`` negatives of the held-out edges ``pos`` ``[2, Q]``, edge by
    edge: ``per_end`` pairs ``(s, x)``, then ``per_end`` pairs ``(x, t)``."""
    ends = pos.numpy()
    q = ends.shape[1]
    out = np.empty((q, 2, 2, per_end), dtype=np.int64)  # edge, end, (row, col), negatives
    for lo in range(0, q, ROWS // 2):
        block = ends[:, lo:lo + ROWS // 2]
        for side in (0, 1):
            own, other = block[side], block[1 - side]
            partners = _best_partners(own, other, scorer, known, per_end, rng)
            pairs = out[lo:lo + block.shape[1], side]
            pairs[:, side] = own[:, None]
            pairs[:, 1 - side] = partners
    return torch.from_numpy(out.transpose(2, 0, 1, 3).reshape(2, -1))


def _best_partners(own: np.ndarray, other: np.ndarray, scorer: HeuristicScores,
                   known: sp.csr_matrix, per_end: int, rng: np.random.Generator) -> np.ndarray:
    """``[b, per_end]``: for each node ``own[i]``, the nodes of best combined rank, excluding
    ``own[i]``, ``other[i]`` and ``own[i]``'s known neighbours."""
    scores = scorer(own)
    excluded = known[own].toarray() > 0
    rows = np.arange(len(own))
    excluded[rows, own] = True
    excluded[rows, other] = True
    zero_everywhere = np.ones_like(excluded)
    for score in scores:
        score[excluded] = -1.0
        zero_everywhere &= score == 0
    ranks = [heuristic_ranks(score) for score in scores]
    combined, mean = np.minimum.reduce(ranks), np.add.reduce(ranks)
    best = np.empty((len(own), per_end), dtype=np.int64)
    for i in rows:
        ranked = np.lexsort((mean[i], combined[i]))  # ties: by the mean rank, then node id
        scored = ranked[~(excluded[i] | zero_everywhere[i])[ranked]]
        if scored.size >= per_end:
            best[i] = scored[:per_end]
        else:  # fill from the nodes no heuristic scores, at random
            zeros = np.flatnonzero(zero_everywhere[i])
            fill = rng.choice(zeros, per_end - scored.size, replace=zeros.size < per_end -
                              scored.size)
            best[i] = np.concatenate([scored, fill])
    return best
