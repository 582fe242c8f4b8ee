"""GPS training step with a pairwise attention bias: what each bias costs over RWSE alone, with
the fused layer (the default on the CPU) and module by module (``fused = False``).

    python benchmarks/pair_bias_step.py --threads 1

GPS 4 x 64 with RWSE(16) on the nodes (the ``benchmarks/zinc.py`` model), ZINC-12k batches of
128, forward, backward and plain ``Adam``; the variants take turns within each round, medians
over rounds, ms per step. Biases: none, SPD (Graphormer's spatial encoding), SPD with
Graphormer's edge encoding over 5 hops, RRWP(21). Run it on two checkouts (``git worktree``,
``PYTHONPATH``) to compare commits.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DEFAULT_ROOT, DEFAULT_SHARED, place  # noqa: E402

from graphpe.nn.build import build_model  # noqa: E402
from graphpe.transforms import RRWP, RWSE, SPD  # noqa: E402

BIASES = {"none": (None, None), "spd": (SPD(8), {"spd": {"max_dist": 8}}),
          "spd+path": (SPD(8, path_hops=5), {"spd": {"max_dist": 8, "path_hops": 5}}),
          "rrwp": (RRWP(21), {"rrwp": {"num_steps": 21}})}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--graphs", type=int, default=1024, help="ZINC validation graphs used")
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--biases", default=",".join(BIASES))
    ap.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    ap.add_argument("--shared", type=Path, default=DEFAULT_SHARED)
    ap.add_argument("--json", type=Path, default=Path("benchmarks/results/pair_bias_step.json"))
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    if not place("ZINC", args.root, args.shared):
        print("[skip] no offline ZINC copy: nothing measured", file=sys.stderr)
        return
    from torch_geometric.datasets import ZINC
    from torch_geometric.loader import DataLoader

    dataset = ZINC(str(args.root / "ZINC"), subset=True, split="val")
    steps, batches = {}, {}
    for name in args.biases.split(","):
        transform, pair = BIASES[name]
        graphs = [RWSE(16)(dataset[i]) for i in range(min(args.graphs, len(dataset)))]
        if transform is not None:
            graphs = [transform(g) for g in graphs]
        batches[name] = list(DataLoader(graphs, batch_size=args.batch_size))
        for fused in (True, False):
            torch.manual_seed(0)
            model = build_model({"model": "gps", "channels": 64, "layers": 4, "out_dim": 1,
                                 "node_vocab": 28, "edge_vocab": 4,
                                 "pe": {"rwse": {"walk_length": 16}},
                                 **({"pair": pair} if pair else {})})
            for layer in model.layers:
                layer.fused = fused
            model.train()
            opt = torch.optim.Adam(model.parameters(), lr=1e-3)

            def step(batch, model=model, opt=opt) -> None:
                opt.zero_grad(set_to_none=True)
                (model(batch).squeeze(-1) - batch.y).abs().mean().backward()
                opt.step()

            steps[(name, fused)] = step
    for key, step in steps.items():  # warm-up: first calls, compiled kernels' loading
        step(batches[key[0]][0])
    times: dict = {key: [] for key in steps}
    for _ in range(args.rounds):
        for key, step in steps.items():
            start = time.perf_counter()
            for batch in batches[key[0]]:
                step(batch)
            times[key].append((time.perf_counter() - start) / len(batches[key[0]]) * 1e3)
    rows = [{"bias": name, "fused": fused, "ms_per_step": statistics.median(times[(name, fused)])}
            for name, fused in steps]
    base = {r["fused"]: r["ms_per_step"] for r in rows if r["bias"] == "none"}
    print(f"GPS 4 x 64 + RWSE, ZINC batches of {args.batch_size}, {args.threads} thread(s), "
          f"median of {args.rounds} rounds, ms per step:")
    for r in rows:
        extra = (f", {r['ms_per_step'] / base[r['fused']]:.2f}x no bias"
                 if r["fused"] in base else "")
        print(f"  {r['bias']:<9} {'fused' if r['fused'] else 'module by module':<17}"
              f"{r['ms_per_step']:8.1f}{extra}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    command = (f"python benchmarks/pair_bias_step.py --threads {args.threads} --rounds "
               f"{args.rounds}" + ("" if args.biases == ",".join(BIASES)
                                   else f" --biases {args.biases}"))
    args.json.write_text(json.dumps({"command": command, "threads": args.threads,
                                     "batch_size": args.batch_size, "rounds": args.rounds,
                                     "graphs": args.graphs, "torch": torch.__version__,
                                     "rows": rows}, indent=2))
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
