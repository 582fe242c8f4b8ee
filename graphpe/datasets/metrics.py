"""The benchmarks' own metrics as evaluator objects with the interface of OGB's ``Evaluator``:
``eval_metric`` (the key of the score the training loop selects on) and ``eval({"y_true":
..., "y_pred": ...}) -> {name: value}``.

- :class:`AveragePrecision`: LRGB's Peptides-func score (scores per class in ``y_pred``).
- :class:`MacroF1`: LRGB's PascalVOC-SP / COCO-SP score (class labels in ``y_pred``).
- :class:`WeightedAccuracy`: benchmarking-gnns' PATTERN / CLUSTER score (class labels).
- :class:`FilteredMRR`: LRGB's PCQM-Contact score (a score matrix per graph).
- :class:`BinaryROCAUC`: the area under the ROC curve of one binary target (the
  heterophilous benchmarks' Minesweeper, Tolokers, Questions; scores in ``y_pred``).
- :class:`RankEvaluator`: each held-out edge's rank among its own negatives (MRR, Hits@K;
  ogbl-citation2's and HeaRT's link metrics; ``y_pred_pos`` and ``y_pred_neg`` as OGB's).

The class-label evaluators set ``takes_labels``: the training loop hands them the arg-max of the
model's scores, as it does OGB's ``acc`` evaluators (OGB's convention for multi-class tasks).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


class AveragePrecision:
    """LRGB's metric for Peptides-func (its ``eval_ap``): the average precision of each class
    over the labelled graphs, averaged over the classes that have both positives and
    negatives."""

    eval_metric = "ap"

    def eval(self, input_dict: dict[str, Any]) -> dict[str, float]:
        from sklearn.metrics import average_precision_score

        y_true = np.asarray(input_dict["y_true"], dtype=np.float64)
        y_pred = np.asarray(input_dict["y_pred"], dtype=np.float64)
        if y_true.shape != y_pred.shape or y_true.ndim != 2:
            raise ValueError(f"y_true and y_pred must both be [graphs, classes], got "
                             f"{y_true.shape} and {y_pred.shape}")
        scores = []
        for c in range(y_true.shape[1]):
            labelled = ~np.isnan(y_true[:, c])
            truth = y_true[labelled, c]
            if (truth == 1).any() and (truth == 0).any():
                scores.append(average_precision_score(truth, y_pred[labelled, c]))
        if not scores:
            raise ValueError("average precision needs a class with both positive and negative "
                             "graphs")
        return {"ap": float(np.mean(scores))}


class BinaryROCAUC:
    r"""The area under the ROC curve of one binary target, as Platonov et al. score
    Minesweeper, Tolokers and Questions (scikit-learn's ``roc_auc_score``): the probability
    that a positive outranks a negative, ties counting one half,

    .. math:: \mathrm{AUC} = \frac{R_+ - n_+ (n_+ + 1) / 2}{n_+ \, n_-},

    with :math:`R_+` the sum of the positives' ranks among all scores (tied scores sharing
    their mean rank) and :math:`n_+`, :math:`n_-` the positives and negatives (the
    Mann-Whitney statistic). ``y_pred`` holds one score per node (any monotone function of
    the probability: a logit), ``[n]`` or ``[n, 1]``; ``y_true`` its 0/1 label. Labels of one
    class only have no ROC curve: a ``ValueError``."""

    eval_metric = "rocauc"

    def eval(self, input_dict: dict[str, Any]) -> dict[str, float]:
        from scipy.stats import rankdata

        y_true = np.asarray(input_dict["y_true"]).reshape(-1)
        y_pred = np.asarray(input_dict["y_pred"], dtype=np.float64)
        if y_pred.ndim == 2 and y_pred.shape[1] != 1 or y_pred.size != y_true.size:
            raise ValueError(f"ROC-AUC takes one score per label ([n] or [n, 1]), got y_pred "
                             f"{y_pred.shape} for {y_true.size} labels")
        if not np.isin(y_true, (0, 1)).all():
            raise ValueError("ROC-AUC scores a binary target: y_true must be 0 or 1, got "
                             f"{np.unique(y_true)[:5].tolist()}")
        positive = y_true == 1
        n_pos = int(positive.sum())
        n_neg = y_true.size - n_pos
        if n_pos == 0 or n_neg == 0:
            raise ValueError(f"ROC-AUC needs both classes among the labels, got {y_true.size} "
                             f"labels all {int(y_true[0]) if y_true.size else 'absent'}")
        ranks = rankdata(y_pred.reshape(-1))  # ties: their mean rank
        auc = (ranks[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)
        return {"rocauc": float(auc)}


def _labels(input_dict: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """``y_true`` and ``y_pred`` as two equally long 1-d integer arrays (``[n]`` or ``[n, 1]``
    each)."""
    y_true = np.asarray(input_dict["y_true"]).reshape(-1)
    y_pred = np.asarray(input_dict["y_pred"])
    if y_pred.ndim == 2 and y_pred.shape[1] != 1 or y_pred.size != y_true.size:
        raise ValueError(f"y_pred must hold one class label per entry of y_true ([n] or "
                         f"[n, 1]), got {y_pred.shape} for {y_true.size} labels")
    return y_true.astype(np.int64), y_pred.reshape(-1).astype(np.int64)


class MacroF1:
    """The F1 score of each class averaged over the classes (``average="macro"``, a class
    without true or predicted members scoring 0: ``zero_division=0``), over all nodes of the
    split at once: LRGB's and GraphGPS's ``f1`` for PascalVOC-SP and COCO-SP (their logger's
    ``classification_multi``). ``y_pred`` holds class labels."""

    eval_metric = "f1"
    takes_labels = True

    def eval(self, input_dict: dict[str, Any]) -> dict[str, float]:
        from sklearn.metrics import f1_score

        y_true, y_pred = _labels(input_dict)
        return {"f1": float(f1_score(y_true, y_pred, average="macro", zero_division=0))}


class WeightedAccuracy:
    """benchmarking-gnns' ``accuracy_SBM`` for PATTERN and CLUSTER (Dwivedi et al.,
    "Benchmarking Graph Neural Networks", JMLR 2023), as GraphGPS scores them
    (``accuracy-SBM``): the accuracy within each class (its nodes predicted right over its
    nodes), averaged over the classes of the confusion matrix, i.e. every class seen among the
    true or the predicted labels (a class only predicted counts 0). Over all nodes of the split
    at once (GraphGPS's logger; benchmarking-gnns averages per batch). A fraction in [0, 1]:
    the papers report it times 100. ``y_pred`` holds class labels."""

    eval_metric = "weighted_accuracy"
    takes_labels = True

    def eval(self, input_dict: dict[str, Any]) -> dict[str, float]:
        y_true, y_pred = _labels(input_dict)
        if y_true.size == 0:
            raise ValueError("weighted accuracy needs at least one labelled node")
        classes = np.union1d(y_true, y_pred)  # the rows of sklearn's confusion matrix
        recall = [float(np.mean(y_pred[y_true == c] == c)) if (y_true == c).any() else 0.0
                  for c in classes]
        return {"weighted_accuracy": float(np.mean(recall))}


class FilteredMRR:
    """LRGB's filtered mean reciprocal rank for PCQM-Contact (Dwivedi et al. 2022, filtered
    as in LRGB's ``inductive_edge`` head after Tönshoff et al. 2023): in each graph, every
    positive pair ``(i, j)`` is ranked by its score against all pairs ``(i, k)`` of its row,
    the graph's other positive pairs left out; the graph scores the mean reciprocal rank of its
    positive pairs (0 where it has none, as LRGB's head counts it), the split the mean over its
    graphs (LRGB averages per batch, weighted by the batch's labelled pairs: the same up to
    how graphs fall into batches). ``mrr_raw`` keeps the other positives among the
    candidates (LRGB's first version); ``hits@1``/``@3``/``@10`` are the filtered ones.

    ``y_pred``: one ``[n, n]`` score matrix per graph (``[i, k]`` the score of the pair ``i ->
    k``, a dot product of node embeddings in LRGB); ``y_true``: one ``[2, p]`` array of the
    graph's positive pairs per graph. Rank: 1 + the candidates scored strictly higher (LRGB's
    ``argsort`` breaks exact ties in no fixed order)."""

    eval_metric = "mrr"

    def eval(self, input_dict: dict[str, Any]) -> dict[str, float]:
        scores: Sequence = input_dict["y_pred"]
        positives: Sequence = input_dict["y_true"]
        if len(scores) != len(positives) or len(scores) == 0:
            raise ValueError(f"y_pred (score matrices) and y_true (positive pairs) must list "
                             f"the same graphs, at least one; got {len(scores)} and "
                             f"{len(positives)}")
        per_graph = {k: [] for k in ("mrr", "mrr_raw", "hits@1", "hits@3", "hits@10")}
        for score, pos in zip(scores, positives, strict=True):
            for key, value in _graph_ranks(np.asarray(score, dtype=np.float64),
                                           np.asarray(pos, dtype=np.int64)).items():
                per_graph[key].append(value)
        return {key: float(np.mean(values)) for key, values in per_graph.items()}


def _graph_ranks(score: np.ndarray, pos: np.ndarray) -> dict[str, float]:
    """One graph's filtered and raw reciprocal ranks and hits, averaged over its positive
    pairs (all 0 without one)."""
    n = score.shape[0]
    if score.shape != (n, n) or pos.ndim != 2 or pos.shape[0] != 2:
        raise ValueError(f"a graph's scores must be [n, n] and its positive pairs [2, p], got "
                         f"{score.shape} and {pos.shape}")
    if pos.shape[1] == 0:
        return dict.fromkeys(("mrr", "mrr_raw", "hits@1", "hits@3", "hits@10"), 0.0)
    rows, cols = pos
    target = score[rows, cols]
    rows_scores = score[rows]  # [p, n]: the candidates of each positive pair
    higher = rows_scores > target[:, None]
    raw = 1 + higher.sum(1)  # the pair itself is never strictly higher
    positive = np.zeros((n, n), dtype=bool)
    positive[rows, cols] = True
    filtered = 1 + (higher & ~positive[rows]).sum(1)
    return {"mrr": float(np.mean(1.0 / filtered)), "mrr_raw": float(np.mean(1.0 / raw)),
            **{f"hits@{k}": float(np.mean(filtered <= k)) for k in (1, 3, 10)}}


class RankEvaluator:
    """The rank of each held-out edge among its own negatives, as OGB's ogbl-citation2
    ``Evaluator`` and HeaRT's code compute it: ``y_pred_pos`` ``[Q]``, ``y_pred_neg``
    ``[Q, K]``; the rank is 1 plus the mean of the negatives scored above the edge and those
    scored at least as high (ties count half). Returns per-edge lists: the reciprocal rank
    (``mrr_list``) and, for each of :data:`RANK_HITS_AT`, whether the rank is at most ``K``."""

    eval_metric = "mrr"

    def eval(self, input_dict: dict[str, Any]) -> dict[str, np.ndarray]:
        pos = np.asarray(input_dict["y_pred_pos"], np.float64).reshape(-1, 1)
        neg = np.asarray(input_dict["y_pred_neg"], np.float64)
        if neg.ndim != 2 or neg.shape[0] != pos.shape[0] or not neg.shape[1]:
            raise ValueError(f"y_pred_neg must be [Q, K] for Q = {pos.shape[0]} edges, got "
                             f"{list(neg.shape)}")
        rank = 1.0 + 0.5 * ((neg > pos).sum(1) + (neg >= pos).sum(1))
        out = {"mrr_list": 1.0 / rank}
        out.update({f"hits@{k}_list": (rank <= k).astype(np.float64) for k in RANK_HITS_AT})
        return out


#: the K of the Hits@K that :class:`RankEvaluator` reports (HeaRT's)
RANK_HITS_AT = (1, 3, 10, 20, 50, 100)

#: the K of the Hits@K that :func:`link_metrics` reports (OGB's link benchmarks report 20,
#: 50 and 100)
HITS_AT = (20, 50, 100)


def link_metrics(pos: np.ndarray, neg: np.ndarray, hits_at: tuple[int, ...] = HITS_AT
                 ) -> dict[str, float]:
    """The scores of held-out edges ``pos`` against sampled non-edges ``neg``: ROC-AUC
    (:class:`BinaryROCAUC`), average precision (scikit-learn's ``average_precision_score``)
    and, for each ``K``, Hits@K as OGB's link evaluator counts it: the share of edges scored
    above the ``K``-th highest non-edge (all of them where there are fewer than ``K``)."""
    from sklearn.metrics import average_precision_score

    pos, neg = np.asarray(pos, np.float64).ravel(), np.asarray(neg, np.float64).ravel()
    if pos.size == 0 or neg.size == 0:
        raise ValueError(f"link metrics need edges and non-edges, got {pos.size} and {neg.size}")
    labels = np.concatenate([np.ones(pos.size), np.zeros(neg.size)])
    scores = np.concatenate([pos, neg])
    out = {"rocauc": BinaryROCAUC().eval({"y_true": labels, "y_pred": scores})["rocauc"],
           "ap": float(average_precision_score(labels, scores))}
    ranked = np.sort(neg)[::-1]
    for k in hits_at:
        out[f"hits@{k}"] = 1.0 if k > neg.size else float((pos > ranked[k - 1]).mean())
    return out
