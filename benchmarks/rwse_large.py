"""RWSE (landing probabilities, ``T`` steps) on one large graph of each kind, by each of the
large-graph paths of :mod:`graphpe.ops.walk.large` (``local``, ``powers``, ``blocked``), by
``random_walk_landing_probs`` (its own choice), and by PyG's ``AddRandomWalkPE``.

    python benchmarks/rwse_large.py [--graphs road,social,coauthor] [--timeout 120]

The graphs are :mod:`graphpe.synthetic`'s stand-ins: ``road_like_graph(--road-junctions)``,
``social_like_graph(--social-nodes)``, ``coauthor_like_graph(--coauthor-nodes)``. Every run
is its own subprocess, on one thread, with ``--timeout`` seconds and an address-space limit of
``--memory-limit-gb`` (``RLIMIT_AS``), so a path that fills memory fails there instead of
exhausting the machine. Peak memory is the subprocess's peak resident size less its size
before the call. Values are compared with the first run that finished, in float64. The
chooser's prediction (:func:`graphpe.ops.walk.large.landing_path_costs`) is printed beside.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

RUNS = ("local", "powers", "blocked", "auto", "pyg")


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def child(run: str, graph: str, walk_length: int, result: str) -> None:
    """One timed run in this process: prints ``{"seconds", "peak_bytes", "path"}``."""
    import torch

    torch.set_num_threads(1)
    data = np.load(graph)
    edge_index = torch.from_numpy(data["edge_index"])
    n = int(data["num_nodes"])
    path = run
    if run == "pyg":
        from torch_geometric.data import Data
        from torch_geometric.transforms import AddRandomWalkPE

        transform = AddRandomWalkPE(walk_length, attr_name="pe")
        transform(Data(edge_index=edge_index[:, :4].clone(), num_nodes=n))  # warm
        before = _rss_bytes()
        start = time.perf_counter()
        out = transform(Data(edge_index=edge_index, num_nodes=n)).pe
        seconds = time.perf_counter() - start
    else:
        from graphpe.ops.host import simple_csr
        from graphpe.ops.plan import ExecPlan
        from graphpe.ops.walk import random_walk_landing_probs
        from graphpe.ops.walk.large import large_landing_probs

        tiny = torch.tensor([[0, 1, 2, 3], [1, 0, 3, 2]])
        for p in ("local", "powers", "blocked"):  # load the compiled kernels
            large_landing_probs(simple_csr(tiny, 4), walk_length, np.empty((4, walk_length)),
                                budget=2**30, path=p)
        random_walk_landing_probs(tiny, 4, walk_length, dtype=torch.float64)
        random_walk_landing_probs(tiny, 4, walk_length, plan=ExecPlan(dense_max_nodes=0))
        before = _rss_bytes()
        start = time.perf_counter()
        if run == "auto":
            out = random_walk_landing_probs(edge_index, n, walk_length, dtype=torch.float64)
        else:
            out = np.empty((n, walk_length))
            path = large_landing_probs(simple_csr(edge_index, n), walk_length, out,
                                       budget=2**40, path=run)
        seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before
    np.save(result, np.asarray(out, dtype=np.float64))
    print(json.dumps({"seconds": seconds, "peak_bytes": max(peak, 0), "path": path}))


def _limit(gigabytes: float):
    def apply() -> None:
        limit = int(gigabytes * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return apply


def make_graphs(args, folder: Path) -> dict[str, tuple[Path, int, int]]:
    from graphpe.synthetic import coauthor_like_graph, road_like_graph, social_like_graph

    makers = {"road": lambda: road_like_graph(args.road_junctions),
              "social": lambda: social_like_graph(args.social_nodes),
              "coauthor": lambda: coauthor_like_graph(args.coauthor_nodes)}
    graphs = {}
    for name in args.graphs.split(","):
        data = makers[name]()
        file = folder / f"{name}.npz"
        np.savez(file, edge_index=data.edge_index.numpy(), num_nodes=data.num_nodes)
        graphs[name] = (file, data.num_nodes, data.edge_index.size(1) // 2)
    return graphs


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--graphs", default="road,social,coauthor")
    ap.add_argument("--runs", default=",".join(RUNS))
    ap.add_argument("--road-junctions", type=int, default=25_000)
    ap.add_argument("--social-nodes", type=int, default=80_000)
    ap.add_argument("--coauthor-nodes", type=int, default=19_000)
    ap.add_argument("--walk-length", type=int, default=16)
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--memory-limit-gb", type=float, default=8.0)
    ap.add_argument("--json", default=None, help="write the rows here")
    ap.add_argument("--child", nargs=3, metavar=("RUN", "GRAPH", "RESULT"),
                    help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args.child[0], args.child[1], args.walk_length, args.child[2])
        return

    import torch

    from graphpe.ops.host import simple_csr
    from graphpe.ops.walk.large import landing_path_costs

    torch.set_num_threads(1)
    env = dict(os.environ, OMP_NUM_THREADS="1", NUMBA_NUM_THREADS="1", MKL_NUM_THREADS="1")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name, (file, n, edges) in make_graphs(args, folder).items():
            data = np.load(file)
            costs = landing_path_costs(simple_csr(torch.from_numpy(data["edge_index"]), n),
                                       args.walk_length, 2**30 * 6, threads=1)
            print(f"{name}: {n} nodes, {edges} edges; {costs.describe()}", flush=True)
            reference = None
            for run in args.runs.split(","):
                result = folder / f"{name}_{run}.npy"
                cmd = [sys.executable, __file__, "--walk-length", str(args.walk_length),
                       "--child", run, str(file), str(result)]
                row = {"graph": name, "nodes": n, "edges": edges, "run": run,
                       "chosen": costs.path,
                       "predicted_seconds": costs.seconds.get(run),
                       "predicted_bytes": costs.memory.get(run)}
                try:
                    done = subprocess.run(cmd, capture_output=True, text=True, env=env,
                                          timeout=args.timeout,
                                          preexec_fn=_limit(args.memory_limit_gb))
                    if done.returncode == 0:
                        row.update(json.loads(done.stdout.strip().splitlines()[-1]))
                        values = np.load(result)
                        if reference is None:
                            reference = (run, values)
                        row["max_diff"] = float(np.abs(values - reference[1]).max())
                        row["compared_with"] = reference[0]
                    else:
                        tail = (done.stderr.strip().splitlines() or ["?"])[-1]
                        row["error"] = f"exit {done.returncode}: {tail[:200]}"
                except subprocess.TimeoutExpired:
                    row["error"] = f"> {args.timeout:g} s"
                rows.append(row)
                shown = (f"{row['seconds']:.2f} s, peak {row['peak_bytes'] / 2**20:.0f} MiB, "
                         f"max diff {row['max_diff']:.1e}" if "seconds" in row
                         else row["error"])
                print(f"  {run:8s} {shown}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows}, indent=1))


if __name__ == "__main__":
    main()
