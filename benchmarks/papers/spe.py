"""SPE's ZINC setup through graphpe, for a fixed short budget: no PE, SignNet and SPE side by
side (Huang, Lu, Robinson, Yang, Zhang, Jegelka, Li, "On the Stability of Expressive
Positional Encodings for Graphs", ICLR 2024, Table 1).

    python benchmarks/papers/spe.py --epochs 10 [--pes none,signnet,spe] [--limit 2000]

The model is the paper's: a GINE base network of 4 layers x 128 with residuals and mean
pooling; SPE on all eigenpairs of ``L_sym`` including the trivial one (k = 37, masked for
smaller graphs), phi = 16 MLPs (3 layers, hidden 16), rho = GIN 8 x 128; SignNet on the same
eigenpairs (graphpe's SignNet encoder, trivial pair dropped); Adam lr 1e-3, weight decay 3e-6,
batch 128, L1 loss, linear warm-up then cosine decay over ``--epochs``. The paper trains 1000
epochs (``configs/zinc_gine_spe.toml`` is that full protocol); here ``--epochs`` bounds the
run and the curves (training loss and validation MAE per epoch) are written to ``--json`` so the
orders can be compared early. Paper: SPE 0.0693, SignNet 0.0853, no PE 0.1772.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

BENCH = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(BENCH))
from common import (  # noqa: E402
    DEFAULT_ROOT,
    DEFAULT_SHARED,
    place,
    pyplot,
    replace_row,
    write_json_atomic,
)

from graphpe.datasets import load_dataset  # noqa: E402
from graphpe.records import versions  # noqa: E402
from graphpe.train import TrainConfig, run  # noqa: E402

PES = {
    "none": [],
    "signnet": [{"name": "signnet", "k": 37}],
    "spe": [{"name": "spe", "k": 37, "m": 16, "rho_hidden": 128, "rho_layers": 8}],
}
PAPER = {"none": 0.1772, "signnet": 0.0853, "spe": 0.0693}


def plot_curves(data: dict, png: Path) -> None:
    """Validation MAE per epoch of every run in ``data``, one panel per (device, epochs,
    training graphs) setting, the paper's 1000-epoch test MAE as dotted lines; nothing
    without matplotlib."""
    plt = pyplot()
    if plt is None:
        return
    settings = sorted({(r.get("device", "cpu"), r["epochs"], r["train_graphs"])
                       for r in data["rows"]})
    fig, axes = plt.subplots(1, len(settings), figsize=(5 * len(settings), 3.6), squeeze=False)
    colors = {"none": "tab:gray", "signnet": "tab:blue", "spe": "tab:red"}
    for ax, (device, epochs, graphs) in zip(axes[0], settings, strict=True):
        for r in data["rows"]:
            if (r.get("device", "cpu"), r["epochs"], r["train_graphs"]) != (device, epochs,
                                                                                graphs):
                continue
            color = colors.get(r["pe"])
            ax.plot([h["epoch"] + 1 for h in r["curve"]], [h["val"] for h in r["curve"]],
                    color=color, label=f"{r['pe']} (test {r['test_mae']:.3f})")
            ax.axhline(r["paper_test_mae_1000_epochs"], color=color, linestyle=":")
        ax.set_yscale("log")
        ax.set_xlabel("epoch")
        ax.set_ylabel("validation MAE")
        ax.set_title(f"{device}, {graphs:,} training graphs", fontsize=9)
        ax.legend(fontsize=7)
    fig.suptitle("SPE's ZINC setup (dotted: the paper after 1000 epochs)", fontsize=10)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)
    print(f"wrote {png}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    parser.add_argument("--shared-data", type=Path, default=DEFAULT_SHARED)
    parser.add_argument("--pes", default=",".join(PES))
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--limit", type=int, default=None,
                        help="use only the first N training graphs")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu", help="cpu, cuda, cuda:1, ...")
    parser.add_argument("--json", type=Path, default=BENCH / "results" / "papers_spe.json")
    parser.add_argument("--plot-only", action="store_true",
                        help="redraw the curves of --json (next to it, .png) and stop")
    args = parser.parse_args(argv)
    if args.plot_only:
        plot_curves(json.loads(args.json.read_text()), args.json.with_suffix(".png"))
        return
    torch.set_num_threads(args.threads)
    unknown = set(args.pes.split(",")) - set(PES)
    if unknown:
        parser.error(f"unknown PE(s) {sorted(unknown)}; choose from {sorted(PES)}")
    if not place("ZINC", args.root, args.shared_data):
        print(f"ZINC: skipped, no offline copy under {args.shared_data}")
        return
    data = json.loads(args.json.read_text()) if args.json.exists() else {"rows": []}
    for pe in args.pes.split(","):
        bundle = load_dataset("ZINC", args.root)
        if args.limit:
            bundle.train = bundle.train[: args.limit]
        config = TrainConfig(epochs=args.epochs, batch_size=128, lr=1e-3, weight_decay=3e-6,
                             warmup_epochs=min(5, args.epochs), patience=args.epochs,
                             seed=0, progress=False, device=args.device)
        start = time.perf_counter()
        record = run(bundle, PES[pe], model="gine", channels=128, layers=4, pool="mean",
                     config=config)
        row = {"pe": pe, "epochs": args.epochs, "train_graphs": len(bundle.train),
               "test_mae": record["test"], "val_mae": record["val"],
               "best_epoch": record["best_epoch"], "params": record["params"],
               "seconds_per_epoch": record["seconds_per_epoch"],
               "pe_seconds": record["pe_seconds"], "device": args.device,
               "paper_test_mae_1000_epochs": PAPER[pe],
               "curve": record["history"], "spec": PES[pe]}
        data["rows"] = replace_row(data["rows"], row, ("pe", "epochs", "train_graphs", "device"))
        data["versions"] = versions()
        write_json_atomic(args.json, data)
        plot_curves(data, args.json.with_suffix(".png"))
        print(f"ZINC {pe:<8} test MAE {record['test']:.4f} after {args.epochs} epochs "
              f"(paper after 1000: {PAPER[pe]:.4f}); {record['params']:,} parameters, "
              f"{record['seconds_per_epoch']:.0f} s/epoch  "
              f"[{time.perf_counter() - start:.0f} s]", flush=True)


if __name__ == "__main__":
    main()
