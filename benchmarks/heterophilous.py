"""The heterophilous node benchmarks (Platonov et al., ICLR 2023: Minesweeper, Tolokers) with
and without encodings, over their ten fixed splits, through ``graphpe compare``.

    python benchmarks/heterophilous.py --dataset Minesweeper --setting protocol \\
        --models res-gcn,res-sage --pes none,lap,rwse
    python benchmarks/heterophilous.py --merge     # only rebuild heterophilous.json

A *setting* is a config file of ``configs/`` (``SETTINGS``): ``protocol`` is the paper's
(``configs/heterophilous_gcn.toml``: 5 residual layers, dropout 0.2, AdamW at lr 3e-5 without
decay, 1,000 full-batch steps, the best validation step) at 64 channels instead of 512;
``tuned`` is Luo et al.'s tuned classic GCN (``configs/heterophilous_tuned.toml``: 12 layers
with linear skips and BatchNorm, Adam at lr 0.01) at 1,000 of their 2,000 epochs; ``polynormer``
is Polynormer's own Minesweeper run (``configs/heterophilous_polynormer.toml``, 2,100 epochs: a
GPU's budget; ``--epochs`` runs fewer); ``tuned-2000`` is ``tuned`` at their 2,000 epochs (Luo
et al. report the mean of splits 0-2: ``--splits 0,1,2``); ``polynormer-short`` is a 3 + 2 layer
Polynormer at 300 epochs (``configs/heterophilous_polynormer_short.toml``, the settings of
``heterophilous_pyg.py``'s comparison with PyG's Polynormer). Each grid is one ``graphpe
compare`` in this process on one thread, its runs' records under
``benchmarks/results/heterophilous/<dataset>-<setting>/`` (a stopped grid continues where it
stopped; finished runs are read back). After each grid,
``benchmarks/results/heterophilous.json`` is rebuilt from every grid's ``compare.json`` with the
published numbers (``graphpe.datasets.published``: Platonov et al.'s table, Polynormer, Luo et
al.'s tuned GNNs, each with its source; ``heterophilous/published.json`` adds how each was read)
for the docs' table.

The data: the authors' archives in ``../shared/data/heterophilous`` (copied into ``--root``,
default ``~/.cache/graphpe/heterophilous``; the shared folder is only read).
"""

from __future__ import annotations

import os

# one thread for every library, set before numpy, numba or torch load: BLAS and numba read
# these once, at import, and their worker threads spin against the other grid on a shared
# machine (measured: Tolokers' LapPE 2.7-3.8 s with two threads beside busy processes, 0.9-1.1
# s with one)
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

from graphpe.datasets.published import PUBLISHED  # noqa: E402

HERE = Path(__file__).resolve().parent
SHARED = Path(os.environ.get("GRAPHPE_SHARED_DATA", HERE.parents[1] / "shared" / "data"))
OUT = HERE / "results" / "heterophilous"
MERGED = HERE / "results" / "heterophilous.json"
PROVENANCE = OUT / "published.json"
SETTINGS = {"protocol": "configs/heterophilous_gcn.toml",
            "tuned": "configs/heterophilous_tuned.toml",
            "polynormer": "configs/heterophilous_polynormer.toml",
            "polynormer-short": "configs/heterophilous_polynormer_short.toml",
            "tuned-2000": "configs/heterophilous_tuned.toml"}
#: settings that run their config file at other epochs: ``tuned-2000`` is Luo et al.'s budget
SETTING_EPOCHS = {"tuned-2000": 2000}


def prepared_root(root: Path, dataset: str) -> Path:
    """``root`` holding ``dataset``'s archive in PyG's layout, copied from the shared data."""
    folder = dataset.lower().replace("-", "_")
    if not (root / folder / "raw" / f"{folder}.npz").exists():
        source = SHARED / "heterophilous" / folder
        if not source.is_dir():
            sys.exit(f"{source} not found: this benchmark reads the authors' {folder}.npz "
                     "(set GRAPHPE_SHARED_DATA, or give --root a folder in PyG's layout)")
        shutil.copytree(source, root / folder, dirs_exist_ok=True)
    return root


def grid_dir(out: Path, dataset: str, setting: str) -> Path:
    return out / f"{dataset.lower()}-{setting}"


def run_grid(dataset: str, setting: str, models: str, pes: str, splits: str, root: Path,
             out: Path, epochs: int | None = None) -> None:
    """One ``graphpe compare`` (resumable) into :func:`grid_dir`; ``epochs`` overrides the
    setting's (a smoke run)."""
    from graphpe.cli import main

    argv = ["compare", "--dataset", dataset, "--root", str(prepared_root(root, dataset)),
            "--config", str(HERE.parent / SETTINGS[setting]), "--model", models, "--pe", pes,
            "--splits", splits, "--out", str(grid_dir(out, dataset, setting))]
    epochs = SETTING_EPOCHS.get(setting) if epochs is None else epochs
    argv += [] if epochs is None else ["--epochs", str(epochs)]
    print("graphpe " + " ".join(argv), flush=True)
    main(argv)


def merge(out: Path = OUT, merged_path: Path = MERGED) -> dict:
    """``heterophilous.json``: every grid's rows with its setting, and the published numbers."""
    grids = []
    for path in sorted(out.glob("*/compare.json")):
        grid = json.loads(path.read_text())
        setting = path.parent.name.removeprefix(grid["dataset"].lower() + "-")
        grids.append({"dataset": grid["dataset"], "setting": setting,
                      "config_file": SETTINGS.get(setting), "channels": grid["channels"],
                      "layers": grid["layers"], "epochs": grid["config"]["epochs"],
                      "lr": grid["config"]["lr"], "splits": grid["splits"],
                      "rows": [{k: row.get(k) for k in (
                          "model", "pe", "runs", "test_mean", "test_std", "val_mean",
                          "val_std", "diff", "diff_se", "significant", "pe_seconds",
                          "seconds_per_epoch", "test", "run_names")}
                               | ({"refused": row["refused"]} if row.get("refused") else {})
                               for row in grid["rows"]]})
    provenance = json.loads(PROVENANCE.read_text())
    published = {"metric": provenance["metric"], "unit": provenance["unit"], "entries": [
        {**dataclasses.asdict(entry), **provenance["notes"].get(f"{entry.dataset}/{entry.model}",
                                                                 {})}
        for entry in PUBLISHED]}
    merged = {"command": "python benchmarks/heterophilous.py --dataset D --setting S "
                         "--models M --pes P", "grids": grids, "published": published}
    merged_path.write_text(json.dumps(merged, indent=1))
    return merged


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", choices=("Minesweeper", "Tolokers"))
    parser.add_argument("--setting", choices=tuple(SETTINGS), default="protocol")
    parser.add_argument("--models", default="res-gcn,res-sage")
    parser.add_argument("--pes", default="none,lap,rwse")
    parser.add_argument("--splits", default="all")
    parser.add_argument("--root", type=Path,
                        default=Path.home() / ".cache" / "graphpe" / "heterophilous")
    parser.add_argument("--merge", action="store_true",
                        help="only rebuild heterophilous.json from the grids run so far")
    parser.add_argument("--out", type=Path, default=OUT, help="the grids' folder")
    parser.add_argument("--json", type=Path, default=MERGED, help="the merged JSON")
    parser.add_argument("--epochs", type=int, default=None,
                        help="override the setting's epochs (a smoke run)")
    args = parser.parse_args()
    if not args.merge:
        if args.dataset is None:
            parser.error("--dataset is required unless --merge")
        import torch

        torch.set_num_threads(1)
        run_grid(args.dataset, args.setting, args.models, args.pes, args.splits, args.root,
                 args.out, args.epochs)
    merged = merge(args.out, args.json)
    print(f"{args.json}: {len(merged['grids'])} grids")


if __name__ == "__main__":
    main()
