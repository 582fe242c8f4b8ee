"""Same learning curve: graphpe's GPS with the bucketed attention against the same model padded
to the batch's largest graph (``attention_buckets=1``, as PyG's ``GPSConv``) and trained on
fixed-shape batches (``static``: ``StaticGPS``, the path for CUDA graphs), trained on ZINC.

    python benchmarks/gps_curve.py --epochs 20 --variants bucketed,padded,static --seeds 0,1

The model is PyG's GPS example shape (10 layers, 64 channels, 4 heads, GINE, attention dropout
0.5) with RWSE(16), trained by ``graphpe.train`` (batch 32, AdamW, warm-up + cosine). Each
(variant, seed) run writes ``<json-dir>/gps_curve_<variant>_seed<seed>.json`` with the test MAE
at the best validation epoch, the validation curve and seconds per epoch; ``--variants`` and
``--seeds`` let two processes split the runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DEFAULT_ROOT, DEFAULT_SHARED, place  # noqa: E402

from graphpe.datasets import load_dataset  # noqa: E402
from graphpe.train import TrainConfig, run  # noqa: E402

# variant -> (model settings, training settings)
VARIANTS = {"bucketed": ({}, {}), "padded": ({"attention_buckets": 1}, {}),
            # fixed-shape batches (StaticGPS, the GPU/CUDA-graph path), evaluated by the eager
            # model: same maths, so the same curve within noise
            "static": ({}, {"static_shapes": True})}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--variants", default="bucketed,padded")
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    ap.add_argument("--shared", type=Path, default=DEFAULT_SHARED)
    ap.add_argument("--limit", type=int, default=None, help="train on the first N graphs only")
    ap.add_argument("--json-dir", type=Path, default=Path("benchmarks/results"))
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    if not place("ZINC", args.root, args.shared):
        print("[skip] no offline ZINC copy: nothing trained", file=sys.stderr)
        return
    bundle = load_dataset("ZINC", str(args.root))
    if args.limit is not None:
        bundle.train = bundle.train[: args.limit]
    for variant in args.variants.split(","):
        for seed in (int(s) for s in args.seeds.split(",")):
            model_kwargs, train_kwargs = VARIANTS[variant]
            config = TrainConfig(epochs=args.epochs, batch_size=32, seed=seed, progress=False,
                                 **train_kwargs)
            record = run(bundle, ["rwse"], model="gps", channels=64, layers=10, config=config,
                         heads=4, attn_dropout=0.5, **model_kwargs)
            out = {"variant": variant, "seed": seed, "epochs": args.epochs,
                   "test_mae": record["test"], "best_val_mae": record["val"],
                   "best_epoch": record["best_epoch"],
                   "seconds_per_epoch": record["seconds_per_epoch"],
                   "val_curve": [h["val"] for h in record["history"]],
                   "train_loss": [h["train_loss"] for h in record["history"]]}
            path = args.json_dir / f"gps_curve_{variant}_seed{seed}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(out, indent=2))
            print(f"{variant} seed {seed}: test MAE {record['test']:.4f} (best epoch "
                  f"{record['best_epoch']}), {record['seconds_per_epoch']:.1f} s/epoch -> {path}",
                  flush=True)


if __name__ == "__main__":
    main()
