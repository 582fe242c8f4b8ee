"""GPS and GINE inference (evaluation forward, no autograd) against the same networks from
PyG.

    python benchmarks/inference.py --threads 1

The models of ``benchmarks/train_step.py`` (PyG's ``examples/graph_gps.py`` GPSConv model and
graphpe's GPS of the same shape, RWPE 20) and of ``benchmarks/gine_step.py`` (PyG's
``GINEConv`` network and graphpe's ``GINE``, 4 x 64) in ``eval()`` under
``torch.inference_mode()``, on
ZINC-12k batches of each size in ``--batch-sizes`` (32: a training loop's validation; 256:
``graphpe.train.evaluate``'s batches and bulk prediction). graphpe runs twice, with its fused
layers (``fused_inference`` of :mod:`graphpe.layers.fused` and :mod:`graphpe.layers.fused_gine`, the
default) and module by module
(``fused = False``), so the table shows what the fusion adds. The models take turns
within each round; medians over rounds, ms per batch. The outputs of the two graphpe paths are
checked equal before timing.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DEFAULT_ROOT, DEFAULT_SHARED  # noqa: E402
from gine_step import PygGINE  # noqa: E402
from train_step import PygGPS, graphpe_gps, load_zinc  # noqa: E402

from graphpe.nn import GINE  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch-sizes", default="32,256")
    ap.add_argument("--models", default="gps,gine")
    ap.add_argument("--batches", type=int, default=4, help="batches per model per round")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    ap.add_argument("--shared", type=Path, default=DEFAULT_SHARED)
    ap.add_argument("--json", type=Path, default=Path("benchmarks/results/inference.json"))
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    sizes = [int(s) for s in args.batch_sizes.split(",")]
    graphs = load_zinc(args.root, args.shared, max(sizes) * args.batches, 20)
    if graphs is None:
        print("[skip] no offline ZINC copy: nothing measured", file=sys.stderr)
        return
    from torch_geometric.loader import DataLoader

    rows = []
    print(f"GPS inference, ZINC, CPU, {args.threads} thread(s): ms per batch, median of "
          f"{args.rounds} rounds x {args.batches} batches")
    for kind, size in ((k, s) for k in args.models.split(",") for s in sizes):
        batches = list(DataLoader(graphs, batch_size=size))[: args.batches]
        torch.manual_seed(0)
        if kind == "gps":
            fused = graphpe_gps().eval()
            module = copy.deepcopy(fused)
            for layer in module.layers:
                layer.fused = False
            models = {"pyg GPSConv": PygGPS().eval(), "graphpe GPS": fused,
                      "graphpe GPS, module by module": module}
        else:
            fused, pyg = GINE(64, 4, 1, node_vocab=28, edge_vocab=4).eval(), PygGINE(64, 4)
            for model in (fused, pyg):  # running statistics other than the initial 0, 1
                for m in model.modules():
                    if isinstance(m, torch.nn.BatchNorm1d):
                        m.running_mean.uniform_(-0.5, 0.5)
                        m.running_var.uniform_(0.5, 2.0)
            module = copy.deepcopy(fused)
            module.fused = False
            models = {"pyg GINEConv": pyg.eval(), "graphpe GINE": fused,
                      "graphpe GINE, module by module": module}
        times: dict[str, list[float]] = {name: [] for name in models}
        with torch.inference_mode():
            diff = float((fused(batches[0]) - module(batches[0])).abs().max())
            if diff > 1e-3:
                raise AssertionError(f"fused and module-by-module outputs differ by {diff}")
            for r in range(args.rounds + 1):  # round 0 warms up
                for name, model in models.items():
                    start = time.perf_counter()
                    for b in batches:
                        model(b)
                    if r:
                        times[name].append((time.perf_counter() - start) / len(batches) * 1e3)
        base = statistics.median(next(iter(times.values())))  # PyG's
        nodes = round(statistics.mean(b.num_nodes for b in batches))
        for name, values in times.items():
            ms = statistics.median(values)
            rows.append({"batch_size": size, "nodes": nodes, "model": name, "kind": kind,
                         "ms_per_batch": round(ms, 2), "speedup_vs_pyg": round(base / ms, 2),
                         "rounds_ms": [round(v, 2) for v in values]})
            print(f"  batch {size:>4} ({nodes:>5} nodes)  {name:<32}{ms:>9.1f}"
                  f"{base / ms:>7.2f}x")
    result = {"command": " ".join(["python benchmarks/inference.py",
                                   *(sys.argv[1:] if argv is None else argv)]),
              "threads": args.threads, "rounds": args.rounds, "batches": args.batches,
              "torch": torch.__version__, "rows": rows}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2))
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
