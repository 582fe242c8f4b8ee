"""RWSE estimated by random walks (graphpe.ops.walk.sampled): its time and standard errors on
ogbn-arxiv, whose exact RWSE is past its budget, and its errors against the exact values on
graphs where those can be computed. One thread, T = 16.

    python benchmarks/rwse_estimator.py                      # every part, every estimator
    python benchmarks/rwse_estimator.py --walks 16,64 --estimators collision --scale 0.1

- ogbn-arxiv (169,343 nodes, 1,157,799 undirected edges), read in place from
  ``--arxiv`` (default ``../shared/data/ogbn-arxiv-graph/adj_full.npz`` beside the checkout,
  GraphSAINT's layout; skipped with its reason where absent): the exact paths' prediction
  (:func:`graphpe.ops.walk.large.exact_landing_cost`, float32 output, the default memory
  budget); per estimator and number of walks ``W``, the seconds of
  :func:`~graphpe.ops.walk.sampled.sampled_landing_probs`, the largest and median standard
  error, the share of estimates above 1, and on ``--check-nodes`` sampled nodes, against
  their exact values (``P^t e_j`` by ``T`` scipy products), the share within 3 and 4
  standard errors and the root mean square error.
- graphs where exact runs (sizes times ``--scale``): from :mod:`graphpe.synthetic`
  ``road_like_graph(5000)`` (about 23,000 nodes), ``social_like_graph(20000)`` (power law,
  Chung-Lu, hubs capped at ``sqrt(10 n)``), ``coauthor_like_graph(20000)``, and
  :func:`hub_heavy_graph` ``(20000)`` (Chung-Lu of tail 2.1, hubs capped at ``n / 4``: degrees
  in the thousands beside leaves): the exact values by
  :func:`~graphpe.ops.walk.large.large_landing_probs` (timed), then per estimator and ``W``
  the seconds and the share of ``(node, t)`` within 3 and 4 standard errors of exact (plus
  ``1e-12``: the entries computed exactly have standard error 0), by ``t`` as well, and the
  share outside 4 standard errors below the exact value (the estimate too small: a rare
  return not seen), the root mean square and largest errors, the standard errors' median
  (over every entry, and over the estimated entries that saw a contribution: estimate above
  0, ``t >= 3``) and largest.

The standard error is built so that at least 99% of the entries are within 4 of them
(:mod:`graphpe.ops.walk.sampled`): each row holds that target, whether the share met it, and
the share's binomial lower bound at 99.9% confidence (how far the checked entries pin it down:
ogbn-arxiv's are a sample). The last lines say, per graph and estimator, whether the largest
``W`` met the target. Rows go to ``--json`` (default ``benchmarks/results/rwse_estimator.json``)
as measured.
"""

from __future__ import annotations

import os
import sys

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import exact_landing_on_nodes, write_json_atomic  # noqa: E402

DEFAULT_JSON = Path("benchmarks/results/rwse_estimator.json")
DEFAULT_ARXIV = Path(__file__).resolve().parents[2] / "shared" / "data" / "ogbn-arxiv-graph" \
    / "adj_full.npz"
WALK = 16
SYNTHETIC = {"road": ("road_like_graph", 5000), "social": ("social_like_graph", 20_000),
             "coauthor": ("coauthor_like_graph", 20_000), "hubs": ("hub_heavy_graph", 20_000)}
# the share of (node, t) within 4 standard errors the standard error is built for
TARGET_WITHIN_4SE = 0.99


def hub_heavy_graph(num_nodes: int, mean_degree: float = 10.0, exponent: float = 2.1,
                    seed: int = 0):
    """A hub-heavy power-law graph: ``social_like_graph``'s Chung-Lu with a heavier tail
    (``exponent`` 2.1) and expected degrees capped at ``num_nodes / 4`` rather than
    ``sqrt(10 n)``: hubs of thousands of neighbours, many of them leaves."""
    import torch
    from torch_geometric.data import Data

    rng = np.random.default_rng(seed)
    weight = np.minimum(rng.pareto(exponent - 1.0, num_nodes) + 1.0, num_nodes / 4)
    pairs = rng.choice(num_nodes, size=(int(num_nodes * mean_degree / 2), 2),
                       p=weight / weight.sum())
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    return Data(edge_index=torch.from_numpy(np.ascontiguousarray(pairs.T)),
                num_nodes=num_nodes)


def simple_csr_of(edges: np.ndarray, n: int):
    """graphpe's simple CSR of ``[2, E]`` undirected edges (both directions added)."""
    import torch

    from graphpe.ops.host import simple_csr

    both = np.concatenate([edges, edges[::-1]], axis=1)
    return simple_csr(torch.from_numpy(np.ascontiguousarray(both)), n)


def read_arxiv(path: Path) -> tuple[np.ndarray, int]:
    """The undirected simple graph of GraphSAINT's ``adj_full.npz`` (citations ``i -> j``)."""
    import scipy.sparse as sp

    adj = sp.load_npz(path).tocoo()
    pairs = np.sort(np.stack([adj.row, adj.col], axis=1).astype(np.int64), axis=1)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    n = adj.shape[0]
    keys = np.unique(pairs[:, 0] * n + pairs[:, 1])
    return np.stack([keys // n, keys % n]), n


def errors(estimate: np.ndarray, stderr: np.ndarray, exact: np.ndarray) -> dict:
    """The estimate against exact values: shares within 3 and 4 standard errors (against
    the target, with the 4's binomial lower bound at 99.9% confidence), errors."""
    from scipy.stats import beta

    diff = np.abs(estimate - exact)
    inside = diff <= 4 * stderr + 1e-12
    cells, hits = inside.size, int(inside.sum())
    lower = float(beta.ppf(1e-3, hits, cells - hits + 1)) if hits else 0.0  # Clopper-Pearson
    return {"within_3se": float((diff <= 3 * stderr + 1e-12).mean()),
            "within_4se": float(inside.mean()), "within_4se_lower": lower,
            "target_within_4se": TARGET_WITHIN_4SE,
            "meets_target": bool(inside.mean() >= TARGET_WITHIN_4SE),
            "within_4se_by_t": [round(float(v), 4) for v in inside.mean(0)],
            "outside_4se_below_exact": float((~inside & (estimate < exact)).mean()),
            "zero_se_outside_4se": float(((diff > 4 * stderr + 1e-12) & (stderr == 0)).mean()),
            "rmse": float(np.sqrt((diff ** 2).mean())), "max_error": float(diff.max())}


def spread(stderr: np.ndarray, estimate: np.ndarray) -> dict:
    seen = estimate[:, 2:] > 0  # the estimated entries that saw a contribution
    return {"max_stderr": float(stderr.max()), "median_stderr": float(np.median(stderr)),
            "median_stderr_seen": float(np.median(stderr[:, 2:][seen])) if seen.any()
            else 0.0, "above_one": float((estimate > 1.0).mean())}


def target_text(row: dict) -> str:
    return (f"within 4 se {row['within_4se']:.4f} (>= {row['within_4se_lower']:.4f}; target "
            f"{row['target_within_4se']:.0%}: {'met' if row['meets_target'] else 'NOT met'})")


def timed_estimate(csr, walks: int, estimator: str, seed: int = 0):
    from graphpe.ops.walk.sampled import sampled_landing_probs

    start = time.perf_counter()
    estimate, stderr = sampled_landing_probs(csr, WALK, walks, seed, estimator=estimator)
    return time.perf_counter() - start, estimate, stderr


def bench_arxiv(args, emit) -> str | None:
    """ogbn-arxiv's rows; the reason it was skipped, or None."""
    from graphpe.ops.host import memory_budget
    from graphpe.ops.walk.estimate import sampled_seconds
    from graphpe.ops.walk.large import exact_landing_cost

    if not args.arxiv.exists():
        reason = f"ogbn-arxiv: no {args.arxiv} (GraphSAINT's adj_full.npz)"
        print(f"[skip] {reason}", flush=True)
        return reason
    edges, n = read_arxiv(args.arxiv)
    csr = simple_csr_of(edges, n)
    print(f"ogbn-arxiv: {n:,} nodes, {edges.shape[1]:,} edges", flush=True)
    start = time.perf_counter()
    cost = exact_landing_cost(csr, WALK, memory_budget(None), itemsize=4)
    base = {"graph": "ogbn-arxiv", "nodes": n, "edges": int(edges.shape[1]),
            "exact_predicted_seconds": cost.seconds, "exact_fits_memory": cost.fits,
            "exact_prediction": cost.describe(),
            "prediction_seconds": time.perf_counter() - start}
    nodes = np.sort(np.random.default_rng(0).choice(n, min(n, args.check_nodes),
                                                    replace=False))
    want = exact_landing_on_nodes(csr, nodes, WALK)
    for estimator in args.estimators:
        for walks in args.walks:
            seconds, estimate, stderr = timed_estimate(csr, walks, estimator)
            row = {**base, "estimator": estimator, "walks": walks, "seconds": seconds,
                   "predicted_seconds": sampled_seconds(n, walks, WALK),
                   **spread(stderr, estimate), "checked_nodes": int(nodes.shape[0]),
                   **errors(estimate[nodes], stderr[nodes], want)}
            print(f"  {estimator:>10} W={walks:<4} {seconds:7.2f} s  stderr max "
                  f"{row['max_stderr']:.3g} median {row['median_stderr']:.3g}  "
                  f"{target_text(row)} ({row['checked_nodes']} nodes)", flush=True)
            emit(row)
    return None


def bench_synthetic(name: str, args, emit) -> None:
    import graphpe.synthetic as synthetic
    from graphpe.ops.walk.large import large_landing_probs

    maker, size = SYNTHETIC[name]
    size = max(int(size * args.scale), 20)
    g = (hub_heavy_graph if maker == "hub_heavy_graph" else getattr(synthetic, maker))(size)
    n = int(g.num_nodes)
    from graphpe.ops.host import simple_csr

    csr = simple_csr(g.edge_index, n)
    exact = np.empty((n, WALK))
    start = time.perf_counter()
    large_landing_probs(csr, WALK, exact, budget=2**32)
    exact_seconds = time.perf_counter() - start
    label = f"{maker}({size})"
    print(f"{label}: {n:,} nodes, {int(csr.indptr[-1]) // 2:,} edges, exact {exact_seconds:.2f} s",
          flush=True)
    base = {"graph": label, "nodes": n, "edges": int(csr.indptr[-1]) // 2,
            "exact_seconds": exact_seconds}
    for estimator in args.estimators:
        for walks in args.walks:
            seconds, estimate, stderr = timed_estimate(csr, walks, estimator)
            row = {**base, "estimator": estimator, "walks": walks, "seconds": seconds,
                   **spread(stderr, estimate), **errors(estimate, stderr, exact)}
            print(f"  {estimator:>10} W={walks:<4} {seconds:7.2f} s  within 3 se "
                  f"{row['within_3se']:.4f}, {target_text(row)}  rmse {row['rmse']:.2e}",
                  flush=True)
            emit(row)


def main() -> None:
    import torch

    from graphpe.ops.walk.sampled import ESTIMATORS

    torch.set_num_threads(1)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--walks", default="16,64,256", help="walks per node, comma-separated")
    ap.add_argument("--estimators", default=",".join(ESTIMATORS),
                    help=f"comma-separated subset of {','.join(ESTIMATORS)}")
    ap.add_argument("--graphs", default="arxiv," + ",".join(SYNTHETIC),
                    help=f"comma-separated subset of arxiv,{','.join(SYNTHETIC)}")
    ap.add_argument("--arxiv", type=Path, default=DEFAULT_ARXIV,
                    help="GraphSAINT's ogbn-arxiv adj_full.npz")
    ap.add_argument("--check-nodes", type=int, default=256,
                    help="ogbn-arxiv's nodes checked against exact values")
    ap.add_argument("--scale", type=float, default=1.0, help="scale the stand-ins' sizes")
    ap.add_argument("--json", type=Path, default=DEFAULT_JSON)
    args = ap.parse_args()
    args.walks = [int(w) for w in args.walks.split(",")]
    args.estimators = args.estimators.split(",")
    for e in args.estimators:
        if e not in ESTIMATORS:
            ap.error(f"unknown estimator {e!r}; graphpe has {', '.join(ESTIMATORS)}")
    graphs = args.graphs.split(",")
    for g in graphs:
        if g != "arxiv" and g not in SYNTHETIC:
            ap.error(f"unknown graph {g!r}; choose from arxiv,{','.join(SYNTHETIC)}")
    meta = {"threads": 1, "walk_length": WALK, "walks": args.walks,
            "estimators": args.estimators, "scale": args.scale, "skipped": {},
            "command": "python benchmarks/rwse_estimator.py " + " ".join(sys.argv[1:])}
    rows: list[dict] = []

    def emit(row: dict) -> None:
        rows.append(row)
        write_json_atomic(args.json, {**meta, "rows": rows})

    # the kernels loaded (or compiled) before anything is timed
    from graphpe.ops.walk.sampled import sampled_landing_probs

    ring = np.array([np.arange(40), (np.arange(40) + 1) % 40])
    for estimator in args.estimators:
        sampled_landing_probs(simple_csr_of(ring, 40), WALK, 4, estimator=estimator)
    if "arxiv" in graphs:
        reason = bench_arxiv(args, emit)
        if reason is not None:
            meta["skipped"]["arxiv"] = reason
    for name in graphs:
        if name != "arxiv":
            bench_synthetic(name, args, emit)
    write_json_atomic(args.json, {**meta, "rows": rows})
    most = max(args.walks)
    for r in rows:
        if r["walks"] == most:
            print(f"{r['graph']:>28} {r['estimator']:>10} W={most}: {target_text(r)}")
    print(f"wrote {len(rows)} rows to {args.json}")


if __name__ == "__main__":
    main()
