"""Random Feature Propagation: speed and quality.

    python benchmarks/rfp.py                  # all three parts
    python benchmarks/rfp.py --quick          # smaller sizes, fewer epochs

1. Dataset precompute throughput on ZINC-12k train (``RFP(dim=16, steps=8)``, qr and l2).
2. A synthetic graph with 1.2M nodes: time per propagation step of ``propagate`` against a bare
   sparse matmul of the same shape (the same trajectory without normalization), in this run.
3. Quality on EXP (pairs that 1-WL cannot separate): a GINE with and without RFP features
   (``graphpe.train``; fresh draws for the training graphs every epoch), test accuracy on a
   stratified 10% split per seed (``../shared/data/exp``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import place  # noqa: E402
from precompute import DEFAULT_SHARED, load_zinc  # noqa: E402

from graphpe.datasets import load_dataset  # noqa: E402
from graphpe.ops.propagate import propagate, propagation_operator  # noqa: E402
from graphpe.train import TrainConfig, run  # noqa: E402
from graphpe.transforms import RFP, precompute  # noqa: E402


def zinc_rows(dataset, repeats: int) -> list[dict]:
    rows = []
    for norm in ("qr", "l2"):
        t = RFP(dim=16, steps=8, num_draws=1, normalization=norm, seed=0)
        precompute(dataset, t, progress=False)
        best = float("inf")
        for _ in range(repeats):
            start = time.perf_counter()
            precompute(dataset, t, progress=False)
            best = min(best, time.perf_counter() - start)
        rows.append({"part": "zinc", "normalization": norm, "graphs": len(dataset),
                     "graphs_per_s": len(dataset) / best, "seconds": best})
    return rows


def large_rows(num_nodes: int, avg_degree: float, dim: int, steps: int) -> list[dict]:
    gen = torch.Generator().manual_seed(0)
    num_edges = int(num_nodes * avg_degree / 2)
    edge_index = torch.randint(0, num_nodes, (2, num_edges), generator=gen)
    op = propagation_operator(edge_index, num_nodes, "gcn")
    x0 = torch.randn(num_nodes, dim, generator=gen)

    def bare():
        traj = torch.empty(steps + 1, num_nodes, dim)
        traj[0] = x0
        for step in range(1, steps + 1):
            torch.mm(op, traj[step - 1], out=traj[step])
        return traj

    def timed(fn):
        fn()
        start = time.perf_counter()
        fn()
        return (time.perf_counter() - start) / steps

    bare_step = timed(bare)
    rows = [{"part": "large", "method": "bare SpMM trajectory", "nodes": num_nodes,
             "nnz": int(op._nnz()), "dim": dim, "seconds_per_step": bare_step}]
    # graph preparation: validate, symmetrize, merge duplicates, normalize (issue 11: at most
    # about one bare trajectory)
    build = float("inf")
    for _ in range(2):
        start = time.perf_counter()
        propagation_operator(edge_index, num_nodes, "gcn")
        build = min(build, time.perf_counter() - start)
    rows.append({"part": "large", "method": "operator build", "nodes": num_nodes,
                 "input_edges": num_edges, "nnz": int(op._nnz()), "seconds": build,
                 "ratio_to_bare_trajectory": build / (bare_step * steps)})
    for norm in ("qr", "l2"):
        step = timed(lambda norm=norm: propagate(op, x0, steps, norm))
        rows.append({"part": "large", "method": f"propagate ({norm})", "nodes": num_nodes,
                     "nnz": int(op._nnz()), "dim": dim, "seconds_per_step": step,
                     "ratio_to_bare": step / bare_step})
    return rows


def exp_rows(shared: Path, root: Path, epochs: int, seeds: list[int]) -> list[dict]:
    """GINE without PE and with RFP (fresh draws for the training graphs every epoch) on EXP,
    through the library's own loader, model builder and training loop."""
    if not place("EXP", root, shared):
        return []
    rows = []
    for pe in ([], ["rfp"]):
        accs, record = [], {}
        for seed in seeds:
            bundle = load_dataset("EXP", root, seed=seed)
            config = TrainConfig(epochs=epochs, batch_size=64, lr=2e-3, patience=epochs,
                                 seed=seed, progress=False)
            record = run(bundle, pe, model="gine", channels=64, layers=4, config=config)
            accs.append(record["test"])
        rows.append({"part": "exp", "model": "GINE + RFP" if pe else "GINE (no PE)",
                     "test_accuracy_mean": sum(accs) / len(accs), "test_accuracies": accs,
                     "epochs": epochs, "train_seconds_last": record["train_seconds"],
                     "pe_seconds": record["pe_seconds"]})
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared-data", type=Path, default=Path(os.environ.get(
        "GRAPHPE_SHARED_DATA", DEFAULT_SHARED)))
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "graphpe-bench")
    parser.add_argument("--parts", default="zinc,large,exp")
    parser.add_argument("--large-nodes", type=int, default=1_200_000)
    parser.add_argument("--large-degree", type=float, default=10.0)
    parser.add_argument("--epochs", type=int, default=60)
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", type=Path, default=Path("results/rfp.json"))
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.quick:
        args.large_nodes, args.epochs, args.seeds = 100_000, 5, "0"
    parts = set(args.parts.split(","))
    seeds = [int(s) for s in args.seeds.split(",")]

    rows = []
    if "zinc" in parts:
        zinc = load_zinc(args.shared_data, args.cache)
        if zinc is not None:
            rows += zinc_rows(zinc, 1 if args.quick else 3)
    if "large" in parts:
        rows += large_rows(args.large_nodes, args.large_degree, 16, 4 if args.quick else 8)
    if "exp" in parts:
        rows += exp_rows(args.shared_data, args.cache, args.epochs, seeds)

    print(f"\nRandom Feature Propagation, torch threads = {args.threads}")
    for r in rows:
        if r["part"] == "zinc":
            print(f"ZINC-12k train precompute, RFP(dim=16, steps=8, {r['normalization']}): "
                  f"{r['graphs_per_s']:,.0f} graphs/s ({r['seconds']:.2f} s)")
        elif r["part"] == "large" and r["method"] == "operator build":
            print(f"{r['nodes']:,} nodes / {r['input_edges']:,} input edges: operator build "
                  f"(validate, symmetrize, merge, normalize) {r['seconds']:.2f} s = "
                  f"{r['ratio_to_bare_trajectory']:.2f}x a bare SpMM trajectory (target <= 1x)")
        elif r["part"] == "large":
            extra = f", {r['ratio_to_bare']:.2f}x bare" if "ratio_to_bare" in r else ""
            print(f"{r['nodes']:,} nodes / {r['nnz']:,} nnz, d={r['dim']}: {r['method']} "
                  f"{r['seconds_per_step'] * 1e3:.0f} ms per step{extra}")
        else:
            accs = ", ".join(f"{a:.3f}" for a in r["test_accuracies"])
            print(f"EXP {r['model']}: test accuracy {r['test_accuracy_mean']:.3f} "
                  f"(seeds: {accs}; {r['epochs']} epochs)")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"rows": rows}, indent=2))
    print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
