"""Exact Ollivier-Ricci curvature throughput: graphpe against GraphRicciCurvature (``proc=1``,
method ``OTD``, the same alpha), measured in the same run.

    python benchmarks/curvature.py                 # ZINC-12k train + a 100k-edge random graph
    python benchmarks/curvature.py --quick         # smaller inputs, shorter reference budget

1. ZINC-12k (from ../shared/data): graphpe on every graph of the train split (one batched call),
   GraphRicciCurvature graph by graph until ``--ref-seconds`` have passed; undirected edges/s of
   both and the largest difference on the graphs both computed.
2. An Erdos-Renyi graph with about 100k undirected edges: time and peak memory of each, each in
   its own process; the reference is stopped after ``--ref-seconds-large`` (reported as such).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import networkx as nx
import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from precompute import DEFAULT_SHARED, load_zinc  # noqa: E402

from graphpe.ops.curvature import curvature_bounds, forman_curvature, ollivier_ricci  # noqa: E402


def reference_orc(g: nx.Graph, alpha: float) -> dict:
    from GraphRicciCurvature.OllivierRicci import OllivierRicci

    orc = OllivierRicci(g, alpha=alpha, method="OTD", verbose="ERROR", proc=1)
    return {frozenset(e): v for e, v in orc.compute_ricci_curvature_edges().items()}


def zinc_rows(dataset, alpha: float, ref_seconds: float) -> list[dict]:
    from torch_geometric.utils import to_networkx

    ptr = dataset.slices["x"]
    eptr = dataset.slices["edge_index"]
    local = dataset._data.edge_index
    graph_of_edge = torch.repeat_interleave(torch.arange(len(dataset)), eptr[1:] - eptr[:-1])
    edge_index = local + ptr[graph_of_edge]
    num_nodes = int(ptr[-1])
    undirected = edge_index.size(1) // 2

    ollivier_ricci(edge_index[:, :64], num_nodes, alpha)  # compile / warm
    start = time.perf_counter()
    ours = ollivier_ricci(edge_index, num_nodes, alpha, dtype=torch.float64)
    ours_time = time.perf_counter() - start

    rows = []
    for name, fn in [("Jost-Liu/triangle bounds", lambda: curvature_bounds(edge_index, num_nodes,
                                                                            alpha)),
                     ("augmented Forman", lambda: forman_curvature(edge_index, num_nodes, True))]:
        fn()
        t0 = time.perf_counter()
        fn()
        rows.append({"dataset": "ZINC-12k train", "method": f"graphpe {name}",
                     "edges_per_s": undirected / (time.perf_counter() - t0)})

    done_edges, worst, ref_time, graphs_done = 0, 0.0, 0.0, 0
    for i in range(len(dataset)):
        data = dataset[i]
        g = to_networkx(data, to_undirected=True)
        t0 = time.perf_counter()
        ref = reference_orc(g, alpha)
        ref_time += time.perf_counter() - t0
        e0, e1 = int(eptr[i]), int(eptr[i + 1])
        for (u, v), k in zip(local[:, e0:e1].T.tolist(), ours[e0:e1].tolist(), strict=True):
            worst = max(worst, abs(ref[frozenset((u, v))] - k))
        done_edges += g.number_of_edges()
        graphs_done += 1
        if ref_time > ref_seconds:
            break
    ours_rate = undirected / ours_time
    ref_rate = done_edges / ref_time
    rows.insert(0, {
        "dataset": "ZINC-12k train", "method": "exact ORC", "alpha": alpha,
        "graphpe_edges_per_s": ours_rate, "graphpe_seconds": ours_time, "edges": undirected,
        "reference_edges_per_s": ref_rate, "reference_graphs": graphs_done,
        "speedup": ours_rate / ref_rate, "max_error": worst,
    })
    return rows


def _large_worker(which: str, n: int, p: float, alpha: float, seed: int, queue) -> None:
    g = nx.fast_gnp_random_graph(n, p, seed=seed)
    e = np.array(list(g.edges()), dtype=np.int64).T
    start = time.perf_counter()
    if which == "graphpe":
        ei = torch.from_numpy(np.concatenate([e, e[::-1]], 1))
        ollivier_ricci(ei[:, :16], n, alpha)  # compile outside the timing
        start = time.perf_counter()
        ollivier_ricci(ei, n, alpha)
    else:
        reference_orc(g, alpha)
    elapsed = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    queue.put({"seconds": elapsed, "peak_rss_mb": peak_mb, "edges": g.number_of_edges()})


def large_rows(n: int, avg_degree: float, alpha: float, ref_seconds: float) -> list[dict]:
    p = avg_degree / (n - 1)
    rows = []
    ctx = mp.get_context("fork")
    for which, budget in [("graphpe", 600.0), ("GraphRicciCurvature", ref_seconds)]:
        queue = ctx.Queue()
        proc = ctx.Process(target=_large_worker, args=(which, n, p, alpha, 0, queue))
        start = time.perf_counter()
        proc.start()
        proc.join(budget)
        row = {"dataset": f"Erdos-Renyi n={n:,}", "method": which, "alpha": alpha}
        if proc.is_alive():
            # read the child's peak memory from /proc before stopping it
            try:
                status = Path(f"/proc/{proc.pid}/status").read_text()
                hwm = [ln for ln in status.splitlines() if ln.startswith("VmHWM")]
                row["peak_rss_mb"] = int(hwm[0].split()[1]) / 1024 if hwm else None
            except OSError:
                row["peak_rss_mb"] = None
            proc.terminate()
            proc.join()
            row.update({"seconds": None, "stopped_after_s": time.perf_counter() - start})
        else:
            row.update(queue.get())
        rows.append(row)
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared-data", type=Path, default=Path(os.environ.get(
        "GRAPHPE_SHARED_DATA", DEFAULT_SHARED)))
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "graphpe-bench")
    parser.add_argument("--alpha", type=float, default=0.0)
    parser.add_argument("--ref-seconds", type=float, default=30.0)
    parser.add_argument("--ref-seconds-large", type=float, default=120.0)
    parser.add_argument("--large-nodes", type=int, default=10_000)
    parser.add_argument("--large-degree", type=float, default=20.0)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--skip-zinc", action="store_true")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", type=Path, default=Path("results/curvature.json"))
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.quick:
        args.ref_seconds, args.ref_seconds_large = 3.0, 10.0
        args.large_nodes, args.large_degree = min(args.large_nodes, 2_000), 10.0

    rows = []
    zinc = None if args.skip_zinc else load_zinc(args.shared_data, args.cache)
    if zinc is not None:
        rows += zinc_rows(zinc, args.alpha, args.ref_seconds)
    rows += large_rows(args.large_nodes, args.large_degree, args.alpha, args.ref_seconds_large)

    print(f"\nOllivier-Ricci curvature, alpha = {args.alpha}, one process, torch threads = "
          f"{args.threads}")
    for r in rows:
        if "speedup" in r:
            print(f"{r['dataset']}: exact ORC graphpe {r['graphpe_edges_per_s']:,.0f} edges/s "
                  f"({r['edges']:,} edges in {r['graphpe_seconds']:.2f} s) | GraphRicciCurvature "
                  f"{r['reference_edges_per_s']:,.0f} edges/s (first {r['reference_graphs']} "
                  f"graphs) | speedup {r['speedup']:,.0f}x | max |diff| {r['max_error']:.1e}")
        elif "edges_per_s" in r:
            print(f"{r['dataset']}: {r['method']} {r['edges_per_s']:,.0f} edges/s")
        else:
            peak = r.get("peak_rss_mb")
            peak_s = f"{peak:,.0f} MB" if peak is not None else "n/a"
            if r.get("seconds") is not None:
                print(f"{r['dataset']} ({r['edges']:,} edges): {r['method']} "
                      f"{r['seconds']:.2f} s, peak RSS {peak_s}")
            else:
                print(f"{r['dataset']}: {r['method']} stopped after {r['stopped_after_s']:.0f} s "
                      f"without finishing, peak RSS so far {peak_s}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"alpha": args.alpha, "rows": rows}, indent=2))
    print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
