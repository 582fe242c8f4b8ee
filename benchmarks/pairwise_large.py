"""Pairwise encodings on one large graph, where all pairs (``n^2`` values) are out of reach:
the pairs within ``hops`` hops (``graphpe.ops.walk.local_pairs``), SPD on them
(``SPD(max_dist, local=True)``) and exact RRWP on them (``RRWP(K, hops=r)``), against
networkx's ``single_source_shortest_path_length(cutoff=hops)`` from every node (timed on
``--reference-sources`` nodes and scaled to all of them) in the same run.

    python benchmarks/pairwise_large.py --threads 1 [--nodes 100000 --edges 500000]

The graph: ``--edges`` uniform random undirected edges on ``--nodes`` nodes (seeded). Peak
memory of each graphpe call is read by ``tracemalloc`` (numpy's allocations included).
"""

from __future__ import annotations

import argparse
import json
import time
import tracemalloc
from pathlib import Path

import networkx as nx
import torch

from graphpe.ops.walk import local_pairs, relative_random_walk_probs


def timed(fn):
    tracemalloc.start()
    start = time.perf_counter()
    out = fn()
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return out, seconds, peak


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--nodes", type=int, default=100_000)
    ap.add_argument("--edges", type=int, default=500_000)
    ap.add_argument("--hops", type=int, default=2)
    ap.add_argument("--steps", type=int, default=3, help="RRWP's K")
    ap.add_argument("--reference-sources", type=int, default=2000)
    ap.add_argument("--json", type=Path, default=Path("benchmarks/results/pairwise_large.json"))
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    gen = torch.Generator().manual_seed(0)
    n = args.nodes
    ei = torch.randint(0, n, (2, args.edges), generator=gen)
    ei = torch.cat([ei, ei.flip(0)], 1)
    # warm-up on a small graph: numba's compiled code is loaded from its cache, not timed
    local_pairs(ei[:, :100] % 50, 50, args.hops)
    relative_random_walk_probs(ei[:, :100] % 50, 50, args.steps, hops=args.hops)

    pairs, t_pairs, m_pairs = timed(lambda: local_pairs(ei, n, args.hops))
    rrwp, t_rrwp, m_rrwp = timed(lambda: relative_random_walk_probs(ei, n, args.steps,
                                                                      hops=args.hops))
    num_pairs = pairs.pair_index.size(1)
    g = nx.Graph()
    g.add_nodes_from(range(n))
    g.add_edges_from(ei.t().tolist())
    sources = range(0, n, max(1, n // args.reference_sources))
    start = time.perf_counter()
    reached = sum(len(nx.single_source_shortest_path_length(g, s, cutoff=args.hops))
                  for s in sources)
    t_nx = (time.perf_counter() - start) * n / len(sources)
    own = int(torch.isin(pairs.pair_index[0], torch.tensor(list(sources))).sum())
    rows = [
        {"what": f"pairs within {args.hops} hops (SPD local)", "seconds": t_pairs,
         "peak_mb": m_pairs / 2**20, "reference_seconds": t_nx,
         "speedup": t_nx / t_pairs, "same_pairs_on_sampled_sources": own == reached},
        {"what": f"RRWP K={args.steps} on those pairs", "seconds": t_rrwp,
         "peak_mb": m_rrwp / 2**20},
    ]
    data = {"threads": args.threads, "nodes": n, "undirected_edges": args.edges,
            "pairs": num_pairs, "all_pairs": n * n, "rows": rows}
    for r in rows:
        ref = (f"; networkx {r['reference_seconds']:.1f} s (scaled), {r['speedup']:.1f}x, "
               f"same pairs: {r['same_pairs_on_sampled_sources']}"
               if "reference_seconds" in r else "")
        print(f"{r['what']}: {r['seconds']:.2f} s, peak {r['peak_mb']:.0f} MB{ref}")
    print(f"{num_pairs:,} pairs listed of {n * n:,} ({num_pairs / n:.0f} per node)")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(data, indent=2))
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
