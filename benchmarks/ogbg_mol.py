"""OGB molecule property prediction with the official splits and ``Evaluator``.

    python benchmarks/ogbg_mol.py [--datasets ogbg-molhiv] [--pes none,rwse] [--epochs 10]

ogbg-molhiv (ROC-AUC), -molbace/-molbbbp (ROC-AUC), -molesol/-molfreesolv (RMSE).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DEFAULT_ROOT, DEFAULT_SHARED, place, report  # noqa: E402

from graphpe.datasets import load_dataset  # noqa: E402
from graphpe.train import TrainConfig, run  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    parser.add_argument("--shared-data", type=Path, default=DEFAULT_SHARED)
    parser.add_argument("--datasets", default="ogbg-molhiv,ogbg-molbace,ogbg-molesol")
    parser.add_argument("--models", default="gine")
    parser.add_argument("--pes", default="none,rwse")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", type=Path, default=Path("results/ogbg_mol.json"))
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    rows = []
    for name in args.datasets.split(","):
        if not place(name, args.root, args.shared_data):
            continue
        bundle = load_dataset(name, args.root)
        for model in args.models.split(","):
            for pe in args.pes.split(","):
                config = TrainConfig(epochs=args.epochs, batch_size=64, lr=1e-3,
                                     warmup_epochs=min(3, args.epochs), patience=args.epochs,
                                     progress=False)
                record = run(bundle, [] if pe == "none" else [pe], model=model, channels=64,
                             layers=4, config=config, dropout=0.2)
                rows.append({"dataset": name, "model": model, "pe_label": pe,
                             "metric": bundle.metric, "test": record["test"],
                             "val": record["val"], "pe_seconds": record["pe_seconds"],
                             "seconds_per_epoch": record["seconds_per_epoch"],
                             "epochs": args.epochs, "params": record["params"]})
                print(f"{name} {model} {pe}: test {bundle.metric} {record['test']:.4f}",
                      flush=True)
    report(rows, [("dataset", "dataset", ""), ("model", "model", ""), ("pe_label", "PE", ""),
                  ("metric", "metric", ""), ("test", "test", ".4f"), ("val", "val", ".4f"),
                  ("pe_seconds", "PE s", ".2f"), ("seconds_per_epoch", "s/epoch", ".1f")],
           f"OGB molecules, {args.epochs} epochs", args.json, "test", "test metric")


if __name__ == "__main__":
    main()
