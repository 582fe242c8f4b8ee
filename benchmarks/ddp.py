"""Data-parallel training throughput: graphpe's GPS on ZINC with 1 process against N
processes (DistributedDataParallel over gloo on the CPU, NCCL on CUDA), the same batch per
process, one thread each.

    python benchmarks/ddp.py --processes 2 --steps 30

Each process trains on its own batches (forward, backward with the gradient all-reduce,
optimizer step); samples/s counts all processes' graphs. Target (issue 16): 2 CPU processes
>= 1.6x the samples/s of one.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.multiprocessing as mp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DEFAULT_ROOT, DEFAULT_SHARED  # noqa: E402
from train_step import graphpe_gps, load_zinc  # noqa: E402

TARGET = 1.6


def _worker(rank: int, world: int, port: int, args: argparse.Namespace, out: str) -> None:
    torch.set_num_threads(args.threads)
    if world > 1:
        import torch.distributed as dist

        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        dist.init_process_group("gloo", rank=rank, world_size=world)
    from torch_geometric.loader import DataLoader

    graphs = load_zinc(args.root, args.shared, args.batch_size * (args.steps + 3) * world, 20)
    mine = graphs[rank::world]  # each process its own graphs
    batches = list(DataLoader(mine, batch_size=args.batch_size))[: args.steps + 3]
    torch.manual_seed(0)
    model = graphpe_gps()
    if world > 1:
        from torch.nn.parallel import DistributedDataParallel

        model = DistributedDataParallel(model)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    def step(b):
        opt.zero_grad(set_to_none=True)
        (model(b).squeeze(-1) - b.y).abs().mean().backward()
        opt.step()

    for b in batches[:3]:
        step(b)
    if world > 1:
        dist.barrier()
    start = time.perf_counter()
    for b in batches[3:]:
        step(b)
    if world > 1:
        dist.barrier()
    seconds = time.perf_counter() - start
    if rank == 0:
        Path(out).write_text(json.dumps({"seconds": seconds, "steps": len(batches) - 3}))
    if world > 1:
        dist.destroy_process_group()


def measure(world: int, args: argparse.Namespace) -> float:
    """Samples per second of ``world`` processes."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tempfile.mktemp(suffix=".json")
    mp.spawn(_worker, args=(world, port, args, out), nprocs=world, join=True)
    res = json.loads(Path(out).read_text())
    Path(out).unlink()
    return world * args.batch_size * res["steps"] / res["seconds"]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--threads", type=int, default=1, help="threads per process")
    ap.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    ap.add_argument("--shared", type=Path, default=DEFAULT_SHARED)
    ap.add_argument("--json", type=Path, default=Path("benchmarks/results/ddp.json"))
    args = ap.parse_args(argv)
    if load_zinc(args.root, args.shared, 1, 20) is None:
        print("[skip] no offline ZINC copy: nothing measured", file=sys.stderr)
        return
    one = measure(1, args)
    many = measure(args.processes, args)
    ratio = many / one
    print(f"GPS (PyG example shape) on ZINC, batch {args.batch_size} per process, "
          f"{args.threads} thread(s) each, {args.steps} steps:")
    print(f"  1 process:  {one:8.1f} graphs/s")
    print(f"  {args.processes} processes: {many:8.1f} graphs/s  ({ratio:.2f}x; target >= "
          f"{TARGET}x: {'met' if ratio >= TARGET else 'NOT met'})")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({
        "processes": args.processes, "batch_size": args.batch_size, "threads": args.threads,
        "steps": args.steps, "graphs_per_s_1": round(one, 1),
        "graphs_per_s_n": round(many, 1), "speedup": round(ratio, 3), "target": TARGET,
    }, indent=2))
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
