"""Peptides-func (LRGB) with GPS + LapPE at Tönshoff et al.'s tuned settings
(``configs/peptides_func_gps_lappe.toml``), trained through ``graphpe train`` at the budget
that fits: test AP per seed, with the epochs and the time they took.

    python benchmarks/peptides_func.py --epochs 10 --seeds 0,1,2

The data: LRGB's own files (``../shared/data/lrgb/peptides-functional``: the SMILES csv and
the split pickle), linked into ``--root`` (default ``~/.cache/graphpe/lrgb``), where the
loader writes its processed graphs; the shared folder is only read. Each seed is one
``graphpe train`` process on one thread (``OMP_NUM_THREADS=1``) with the config's settings
except ``--epochs`` (the cosine schedule then spans those epochs), LapPE computed once through
``--cache-dir``. A seed's run keeps its state beside its checkpoint in ``--cache-dir``
(``peptides_func_seed<s>_epochs<N>.pt.state``, every epoch): stopped, the same command
continues it from its last epoch. The published number: GPS, 250 epochs, test AP
0.6534 +- 0.0091 over 4 seeds (Tönshoff et al., "Where Did the Gap Go?", 2023). Rows go to
``--json`` (default ``benchmarks/results/peptides_func.json``) as they finish.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED = Path(os.environ.get("GRAPHPE_SHARED_DATA", HERE.parents[1] / "shared" / "data"))
SOURCE = SHARED / "lrgb" / "peptides-functional"
CONFIG = HERE.parent / "configs" / "peptides_func_gps_lappe.toml"
PAPER = {"source": "Tönshoff et al., Where Did the Gap Go? Reassessing the Long-Range Graph "
                   "Benchmark (2023), GPS tuned", "test_ap": 0.6534, "std": 0.0091,
         "epochs": 250, "seeds": 4}


def prepared_root(root: Path) -> Path:
    """``root`` holding LRGB's layout, its raw files linked from the shared folder."""
    folder = root / "peptides-functional"
    if not (folder / "raw").exists():
        if not SOURCE.is_dir():
            sys.exit(f"{SOURCE} not found: this benchmark reads LRGB's Peptides-func files "
                     "(set GRAPHPE_SHARED_DATA, or give --root a folder in LRGB's layout)")
        folder.mkdir(parents=True, exist_ok=True)
        for name in ("raw", "splits_random_stratified_peptide.pickle"):
            (folder / name).symlink_to(SOURCE / name)
    return root


def train_row(root: Path, epochs: int, seed: int, cache_dir: Path, out: Path) -> dict:
    """One seed through ``graphpe train``; its record's numbers."""
    results = out / f"peptides_func_seed{seed}_epochs{epochs}.json"
    checkpoint = out / f"peptides_func_seed{seed}_epochs{epochs}.pt"
    state = Path(str(checkpoint) + ".state")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    resume = ["--resume", str(state)] if state.exists() else []
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "graphpe.cli", "train", "--dataset", "Peptides-func",
                    "--root", str(root), "--config", str(CONFIG), "--epochs", str(epochs),
                    "--seed", str(seed), "--cache-dir", str(cache_dir), "--results",
                    str(results), "--checkpoint", str(checkpoint), *resume], env=env,
                   check=True)
    record = json.loads(results.read_text())
    return {"seed": seed, "epochs": epochs, "metric": record["metric"], "val": record["val"],
            "test": record["test"], "best_epoch": record["best_epoch"],
            "seconds_per_epoch": record["seconds_per_epoch"],
            "epoch_train_seconds": record["epoch_train_seconds"],
            "pe_seconds": record["pe_seconds"], "params": record["params"],
            "resumed": bool(resume),
            # this sitting's seconds: a resumed run's earlier sittings are not in them
            "seconds": time.perf_counter() - start,
            # the largest of the runs so far (getrusage's children's peak)
            "peak_rss_gb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--root", type=Path, default=Path.home() / ".cache" / "graphpe" / "lrgb")
    p.add_argument("--cache-dir", type=Path,
                   default=Path.home() / ".cache" / "graphpe" / "peptides_func")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--json", type=Path, default=HERE / "results" / "peptides_func.json")
    args = p.parse_args(argv)
    root = prepared_root(args.root)
    saved = json.loads(args.json.read_text()) if args.json.exists() else {"rows": []}
    saved.update(config=str(CONFIG.relative_to(HERE.parent)), paper=PAPER, threads=1)
    done = {(r["seed"], r["epochs"]) for r in saved["rows"]}
    args.cache_dir.mkdir(parents=True, exist_ok=True)
    for seed in (int(s) for s in args.seeds.split(",")):
        if (seed, args.epochs) in done:
            continue
        saved["rows"].append(train_row(root, args.epochs, seed, args.cache_dir,
                                       args.cache_dir))
        print(saved["rows"][-1], flush=True)
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(saved, indent=1) + "\n")


if __name__ == "__main__":
    main()
