"""Mini-batches of a 2M-node graph with and without encoding rows: what carrying the encodings
costs a NeighborLoader batch, and the memory of sampled training.

    python benchmarks/sampled_batches.py                      # 2M nodes, ~20M edges
    python benchmarks/sampled_batches.py --nodes 200000       # a smaller stand-in

The graph: ``graphpe.synthetic.social_like_graph(--nodes, mean_degree=10)`` (Chung-Lu power
law: about ``5 * nodes`` undirected edges, both directions stored: ~20M for 2M nodes), with
100 float features per node (products-like) and labels of 47 classes; generated once into
``--cache-dir``. The encodings carried: LapPE's attributes (``lap_pe``, ``lap_eigvals``
float ``[N, 16]``, ``lap_mask`` bool ``[N, 16]``) and RWSE's (``rwse`` float ``[N, 16]``),
random values of the real shapes and types, laid out as LapPE lays out one graph's (its k
eigenvalues repeated on every node, the mask all true); what a batch copies does not depend on
the values otherwise, and computing them on this graph is the encodings' benchmark, not this
one.

Each case runs in its own process on one thread (peak memory: the graph, its features and
encodings, the loader and the model): PyG's ``NeighborLoader`` with graphpe's sampler
(:func:`graphpe.sampling.neighbor_loader`; PyG's own samplers need pyg-lib, which is not
installed here) over 1,024 seed nodes per batch, fan-outs 15, 10, 5, timing ``--batches``
batches after two warm-up ones: the loader alone (sample and cut), then a training step of
GraphSAGE (3 layers, 128 wide; LapPE's DeepSets 16 wide, as GraphGPS's) on each batch.
``without``: features only; ``with``: the encodings too. Targets (issue 52): the batch with
encodings at most 10% slower than without; peak memory under 12 GB. Rows go to ``--json``
(default ``benchmarks/results/sampled_batches.json``)."""

from __future__ import annotations

import argparse
import copy
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
FEATURES, CLASSES, K = 100, 47, 16
FANOUTS, BATCH = (15, 10, 5), 1024
PE_KEYS = ("lap_pe", "lap_eigvals", "lap_mask", "rwse")


def graph_file(nodes: int, cache_dir: Path) -> Path:
    """The generated graph's file (made on first use)."""
    import torch

    from graphpe.synthetic import social_like_graph

    path = cache_dir / f"social_{nodes}.pt"
    if not path.exists():
        cache_dir.mkdir(parents=True, exist_ok=True)
        g = social_like_graph(nodes, mean_degree=10.0, seed=0)
        gen = torch.Generator().manual_seed(0)
        torch.save({"edge_index": g.edge_index, "num_nodes": nodes,
                    "x": torch.randn(nodes, FEATURES, generator=gen),
                    "y": torch.randint(0, CLASSES, (nodes,), generator=gen)}, path)
    return path


def run_case(path: Path, encodings: bool, batches: int) -> dict:
    import torch
    import torch.nn.functional as F
    from torch_geometric.data import Data

    from graphpe.encodings import pe_model_config, resolve_pe
    from graphpe.nn import build_model
    from graphpe.sampling import neighbor_loader

    torch.set_num_threads(1)
    torch.manual_seed(0)
    saved = torch.load(path)
    data = Data(**saved)
    n = data.num_nodes
    pe = {}
    if encodings:
        # LapPE's layout on one graph: its k eigenvalues (and the all-true mask) on every node
        data.lap_pe, data.lap_eigvals = torch.randn(n, K), torch.rand(K).repeat(n, 1)
        data.lap_mask = torch.ones(n, K, dtype=torch.bool)
        data.rwse = torch.rand(n, K)
        pe = pe_model_config(resolve_pe(f"lap:k={K}:hidden=16,rwse:walk_length={K}"))
    seeds = torch.randperm(n)[: BATCH * (batches + 2)]
    # the same batches (the sample fixed by seed=0) with and without the encodings' rows,
    # taken in turn, so that both medians see the same conditions
    bare = copy.copy(data)
    for key in PE_KEYS:
        if key in bare:
            del bare[key]
    loaders = [neighbor_loader(graph, FANOUTS, input_nodes=seeds, batch_size=BATCH, seed=0)
               for graph in (bare, data)]
    loader = loaders[1]

    def timed(step) -> list[float]:
        seconds, it = [], iter(loader)
        for i in range(batches + 2):
            start = time.perf_counter()
            batch = next(it)
            step(batch)
            if i >= 2:
                seconds.append(time.perf_counter() - start)
        return seconds

    load_bare, load = [], []
    iterators = [iter(ld) for ld in loaders]
    for i in range(batches + 2):
        for it, out in zip(iterators, (load_bare, load), strict=True):
            start = time.perf_counter()
            next(it)
            if i >= 2:
                out.append(time.perf_counter() - start)
    model = build_model({"model": "sage", "channels": 128, "layers": 3, "out_dim": CLASSES,
                         "task": "node_classification", "node_dim": FEATURES, "pe": pe})
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def train(batch) -> None:
        opt.zero_grad()
        out = model(batch)[: batch.batch_size]
        F.cross_entropy(out, batch.y[: batch.batch_size]).backward()
        opt.step()

    step = timed(train)
    return {"encodings": encodings, "nodes": n, "edges": int(data.edge_index.size(1)),
            "batches": batches, "load_seconds": statistics.median(load),
            "load_seconds_without_encodings": statistics.median(load_bare),
            "step_seconds": statistics.median(step),
            "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--nodes", type=int, default=2_000_000)
    p.add_argument("--batches", type=int, default=10)
    p.add_argument("--cache-dir", type=Path,
                   default=Path.home() / ".cache" / "graphpe" / "sampled_batches")
    p.add_argument("--json", type=Path, default=HERE / "results" / "sampled_batches.json")
    p.add_argument("--note", default="", help="the conditions of the run, kept in the JSON")
    p.add_argument("--child", choices=["with", "without"], default=None,
                   help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    path = graph_file(args.nodes, args.cache_dir)
    if args.child:
        print(json.dumps(run_case(path, args.child == "with", args.batches)))
        return
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "NUMBA_NUM_THREADS": "1"}
    rows = []
    for case in ("without", "with"):
        out = subprocess.run([sys.executable, __file__, "--child", case, "--nodes",
                              str(args.nodes), "--batches", str(args.batches), "--cache-dir",
                              str(args.cache_dir)], env=env, capture_output=True, text=True,
                             check=True)
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
        print(rows[-1], flush=True)
    without, with_ = rows
    # the loader's cost of the rows: measured in the "with" process, batch by batch in turn
    summary = {"load_overhead": with_["load_seconds"] / with_["load_seconds_without_encodings"]
               - 1,
               "step_overhead": with_["step_seconds"] / without["step_seconds"] - 1,
               "peak_rss_gb": max(r["peak_rss_gb"] for r in rows)}
    summary["meets_targets"] = (summary["load_overhead"] <= 0.10
                                and summary["peak_rss_gb"] < 12)
    print(f"{args.nodes:,} nodes: a batch with the encodings' rows costs "
          f"{100 * summary['load_overhead']:+.1f}% to load, {100 * summary['step_overhead']:+.1f}"
          f"% per training step (target <= +10%); peak {summary['peak_rss_gb']:.2f} GB "
          "(target < 12 GB)")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"fanouts": FANOUTS, "batch_size": BATCH, "threads": 1,
                                     "note": args.note, "load_average": os.getloadavg(),
                                     "rows": rows, "summary": summary}, indent=1) + "\n")


if __name__ == "__main__":
    main()
