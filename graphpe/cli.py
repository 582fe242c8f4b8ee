"""The ``graphpe`` command line: ``demo``, ``precompute``, ``train``, ``bench``."""

from __future__ import annotations

import argparse
import json
import runpy
import sys
import time
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
DEMO_PES = ["none", "lap", "rwse", "rfp", "lcp", "spe"]


def _pe_list(text: str) -> list[str]:
    return [p for p in (s.strip() for s in text.split(",")) if p and p != "none"]


def demo(epochs: int = 100, seed: int = 0, progress: bool = False) -> list[dict]:
    """GINE with no PE and with each PE on CSL generated in code (no download): 150 graphs of
    41 nodes, 10 classes that 1-WL cannot separate. Prints accuracy, PE time and train time."""
    import torch

    from graphpe.datasets import DatasetBundle, stratified_split
    from graphpe.synthetic import csl_graphs
    from graphpe.train import TrainConfig, run

    graphs = csl_graphs(seed=seed)
    labels = torch.cat([g.y for g in graphs])
    train, val, test = stratified_split(labels, fractions=(0.6, 0.2, 0.2), seed=seed)
    pick = lambda idx: [graphs[i] for i in idx.tolist()]  # noqa: E731
    bundle = DatasetBundle("CSL (generated)", pick(train), pick(val), pick(test),
                           task="graph_classification", metric="accuracy", out_dim=10,
                           node_vocab=1)
    rows = []
    print(f"graphpe demo: GINE (4 layers, 32 channels) on CSL generated in code, "
          f"{len(train)}/{len(val)}/{len(test)} train/val/test graphs, {epochs} epochs")
    for pe in DEMO_PES:
        config = TrainConfig(epochs=epochs, batch_size=16, lr=2e-3, warmup_epochs=5,
                             patience=epochs, seed=seed, progress=progress)
        record = run(bundle, _pe_list(pe), model="gine", channels=32, layers=4, config=config)
        rows.append({"pe": pe, "test_accuracy": record["test"], "val_accuracy": record["val"],
                     "pe_seconds": record["pe_seconds"], "train_seconds": record["train_seconds"],
                     "params": record["params"]})
        print(f"  {pe:<5} test accuracy {record['test']:.3f}  (PE {record['pe_seconds']:.2f} s, "
              f"train {record['train_seconds']:.1f} s)", flush=True)
    print(f"\n{'PE':<6} {'test acc':>9} {'val acc':>8} {'PE time':>9} {'train time':>11} "
          f"{'params':>8}")
    for r in rows:
        print(f"{r['pe']:<6} {r['test_accuracy']:>9.3f} {r['val_accuracy']:>8.3f} "
              f"{r['pe_seconds']:>8.2f}s {r['train_seconds']:>10.1f}s {r['params']:>8,}")
    print("\nA plain GINE cannot tell CSL's classes apart (about 10%: chance); PEs can.")
    return rows


def _run_benchmark(name: str, extra: list[str]) -> None:
    if not BENCHMARKS.is_dir():
        raise SystemExit(f"{BENCHMARKS} not found: `graphpe bench` runs the scripts of a source "
                         "checkout (pip install -e .)")
    script = BENCHMARKS / f"{name}.py"
    if not script.exists():
        available = sorted(p.stem for p in BENCHMARKS.glob("*.py") if p.stem != "common")
        raise SystemExit(f"no benchmark {name!r}; available: {', '.join(available)}")
    sys.argv = [str(script), *extra]
    runpy.run_path(str(script), run_name="__main__")


def main(argv: list[str] | None = None) -> None:
    from graphpe.datasets import DATASETS

    parser = argparse.ArgumentParser(prog="graphpe", description="Positional encodings for GNNs")
    sub = parser.add_subparsers(dest="command", required=True)
    p_demo = sub.add_parser("demo", help="GINE with and without each PE on CSL generated in "
                                         "code (no download); prints a table")
    p_demo.add_argument("--epochs", type=int, default=100)
    p_demo.add_argument("--seed", type=int, default=0)
    p_demo.add_argument("--progress", action="store_true")

    def data_args(p):
        p.add_argument("--dataset", required=True, choices=DATASETS)
        p.add_argument("--root", required=True, help="folder holding the dataset's files")
        p.add_argument("--pe", default="none",
                       help="comma-separated: lap, signnet, spe, rwse, rfp, lcp (or none)")
        p.add_argument("--download", action="store_true", help="allow the loader to download")

    p_pre = sub.add_parser("precompute", help="encode a dataset's splits and cache them")
    data_args(p_pre)
    p_pre.add_argument("--cache-dir", required=True)

    p_train = sub.add_parser("train", help="train a model with the given PEs")
    data_args(p_train)
    p_train.add_argument("--model", choices=["gine", "gps"], default="gine")
    p_train.add_argument("--channels", type=int, default=64)
    p_train.add_argument("--layers", type=int, default=4)
    p_train.add_argument("--epochs", type=int, default=100)
    p_train.add_argument("--batch-size", type=int, default=64)
    p_train.add_argument("--lr", type=float, default=1e-3)
    p_train.add_argument("--patience", type=int, default=30)
    p_train.add_argument("--seed", type=int, default=0)
    p_train.add_argument("--device", default="cpu")
    p_train.add_argument("--compile", action="store_true",
                         help="run the model through torch.compile (ignored where unsupported)")
    p_train.add_argument("--results", default=None, help="JSON file for the record")
    p_train.add_argument("--checkpoint", default=None, help="file for the best state_dict")

    bench = sub.add_parser("bench", help="run a benchmark script from benchmarks/")
    bench.add_argument("name", help="benchmark name, e.g. precompute, curvature, rfp")
    bench.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the script")
    args = parser.parse_args(argv)

    if args.command == "demo":
        demo(args.epochs, args.seed, args.progress)
    elif args.command == "bench":
        _run_benchmark(args.name, args.args)
    elif args.command == "precompute":
        from graphpe.datasets import load_dataset
        from graphpe.train import pe_transforms
        from graphpe.transforms import precompute

        transforms, _ = pe_transforms(_pe_list(args.pe))
        if not transforms:
            raise SystemExit("nothing to precompute: give --pe")
        bundle = load_dataset(args.dataset, args.root, download=args.download)
        start = time.perf_counter()
        for split in ("train", "val", "test"):
            precompute(getattr(bundle, split), transforms, cache_dir=args.cache_dir)
        print(f"encoded {args.dataset} with {args.pe} in {time.perf_counter() - start:.2f} s; "
              f"cache in {args.cache_dir}")
    elif args.command == "train":
        from graphpe.datasets import load_dataset
        from graphpe.train import TrainConfig, run

        bundle = load_dataset(args.dataset, args.root, seed=args.seed, download=args.download)
        config = TrainConfig(epochs=args.epochs, batch_size=args.batch_size, lr=args.lr,
                             patience=args.patience, seed=args.seed, device=args.device,
                             checkpoint=args.checkpoint, results=args.results,
                             compile=args.compile)
        record = run(bundle, _pe_list(args.pe), model=args.model, channels=args.channels,
                     layers=args.layers, config=config)
        summary = {k: record[k] for k in ("dataset", "model", "pe", "metric", "val", "test",
                                          "best_epoch", "params", "pe_seconds",
                                          "seconds_per_epoch")}
        print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
