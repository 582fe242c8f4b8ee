"""What an epoch of each shipped config costs on this machine: the config's own command
(``graphpe train --dataset D --config configs/X.toml``, read from the usage line in the
config's header) run for ``--epochs`` epochs (3) in a fresh process. From its record: the
encodings' seconds, the first epoch's training seconds (it pays the kernels' first calls),
an epoch after it (the median training seconds of the later epochs plus the mean evaluation
seconds per epoch), and the whole budget the config asks for at that rate.

    python benchmarks/config_epochs.py                       # every config whose data is here
    python benchmarks/config_epochs.py --configs zinc_gps_rwse,molhiv_gps_rwse --threads 2

The data: the offline copies in ``../shared/data`` (``common.OFFLINE``), copied into
``--root``; a config whose dataset has no offline copy (ogbn-arxiv's features, PCQM4Mv2,
...) is listed with the reason and not run. Rows go to ``--json`` as they finish; a rerun
skips the configs it holds at the same thread count. An epoch of a config whose training has
stages (Polynormer's local epochs first) is an epoch of its first stage. Run it alone: other
processes on the machine slow every row.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import DEFAULT_ROOT, DEFAULT_SHARED, OFFLINE, place  # noqa: E402

from graphpe.cli.options import load_config  # noqa: E402

CONFIGS = HERE.parent / "configs"
DEFAULT_JSON = HERE / "results" / "config_epochs.json"
#: the usage line every shipped config carries in its header
USAGE = re.compile(r"graphpe train --dataset (\S+)")


def config_dataset(path: Path) -> str | None:
    """The dataset of the config's own usage line (None where the header names none)."""
    match = USAGE.search(path.read_text())
    return match.group(1) if match else None


def epoch_row(config: Path, dataset: str, root: Path, threads: int, epochs: int, out: Path,
              timeout: float) -> dict:
    """``epochs`` epochs of ``config`` on ``dataset`` in a fresh process; its costs."""
    record = out / f"{config.stem}.json"
    argv = [sys.executable, "-m", "graphpe", "train", "--dataset", dataset, "--root",
            str(root), "--config", str(config), "--epochs", str(epochs), "--patience",
            str(epochs), "--results", str(record), "--no-progress"]
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads),
           "NUMBA_NUM_THREADS": str(threads), "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"}
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        return {"config": config.stem, "dataset": dataset, "error":
                (done.stderr.strip().splitlines() or ["(no output)"])[-1]}
    run = json.loads(record.read_text())
    trained = run["epoch_train_seconds"]
    evaluation = (run["train_seconds"] - sum(trained)) / len(trained)
    epoch = statistics.median(trained[1:] or trained) + evaluation
    budget = load_config(str(config)).get("epochs")
    return {"config": config.stem, "dataset": dataset, "threads": threads,
            "params": run.get("params"), "pe_seconds": run.get("pe_seconds"),
            "first_epoch_train_seconds": trained[0], "epoch_seconds": epoch,
            "epochs_run": len(trained), "wall_seconds": wall, "config_epochs": budget,
            "budget_hours": None if budget is None else budget * epoch / 3600}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", default=None,
                        help="comma-separated config names (default: every config)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    parser.add_argument("--shared", type=Path, default=DEFAULT_SHARED)
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON)
    parser.add_argument("--timeout", type=float, default=3600.0,
                        help="seconds one config's epoch may take")
    args = parser.parse_args(argv)
    names = args.configs.split(",") if args.configs else sorted(
        p.stem for p in CONFIGS.glob("*.toml"))
    result = json.loads(args.json.read_text()) if args.json.exists() else {"rows": []}
    done = {(r["config"], r.get("threads")) for r in result["rows"] if "error" not in r}
    result["rows"] = [r for r in result["rows"] if "error" not in r]
    result["command"] = "python benchmarks/config_epochs.py"
    records = args.json.parent / "config_epochs"
    records.mkdir(parents=True, exist_ok=True)
    for name in names:
        config = CONFIGS / f"{name}.toml"
        dataset = config_dataset(config)
        if (name, args.threads) in done:
            continue
        if dataset is None or dataset not in OFFLINE:
            print(f"[skip] {name}: {dataset or 'no usage line'} has no offline copy here",
                  flush=True)
            continue
        if not place(dataset, args.root, args.shared):
            continue
        row = epoch_row(config, dataset, args.root, args.threads, args.epochs, records,
                        args.timeout)
        result["rows"].append(row)
        args.json.write_text(json.dumps(result, indent=1))
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
