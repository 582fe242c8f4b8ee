"""Equal-budget parity on ZINC: PyG's ``examples/graph_gps.py`` against graphpe's GPS of the
same shape trained by ``graphpe.train``, the same settings on both sides.

    python benchmarks/zinc_parity.py --side pyg --seeds 0,1,2        # PyG's example
    python benchmarks/zinc_parity.py --side graphpe --seeds 0,1,2    # graphpe train
    python benchmarks/zinc_parity.py --table                         # the parity table

Both sides (PyG's example, as published):
- ZINC-12k, random-walk PE of 20 steps (PyG's ``AddRandomWalkPE`` / graphpe's ``rwse``),
  BatchNorm of the 20 return probabilities and a linear map to 8 channels, concatenated with
  a 56-channel embedding of the atom type (graphpe: ``pe_combine='split'``);
- 10 GPS layers of 64 channels: GINE (Linear, ReLU, Linear) + multi-head attention, 4 heads,
  attention dropout 0.5, BatchNorm; sum pooling; head 64 -> 32 -> 16 -> 1
  (graphpe: ``head_hidden=(32, 16)``);
- L1 loss, batch 32, Adam (lr 1e-3, weight decay 1e-5, coupled as ``torch.optim.Adam``),
  ReduceLROnPlateau on the validation MAE (factor 0.5, patience 20, min lr 1e-5), no gradient
  clipping, ``--epochs`` epochs (the example's 100), no early stopping.

Each side reports the test MAE at the epoch of best validation MAE (the protocol of GraphGPS;
PyG's example prints every epoch's test MAE, which the PyG rows keep too) and the seconds of
each epoch's training pass. Every epoch writes the run's state to ``--state-dir`` (default
``~/.cache/graphpe/zinc_parity``) and its JSON to ``--json-dir``
(``benchmarks/results/zinc_parity``), so a stopped run continues where it stopped when
started again with the same arguments. Each process uses one thread (``--threads``); run the
two sides as two processes, one per core, or one after the other.

``--table`` reads the JSONs: test MAE mean and standard deviation per side over the finished
seeds, the difference against two standard errors of it, and the median training seconds per
epoch (``pyg / graphpe``: how many times faster graphpe is). The target (issue 53): graphpe's
mean within two standard errors of PyG's, and at least 1.8x faster per epoch.

The long runs' seconds depend on what else the machine ran meanwhile. ``--speed R`` measures
the speed alone: in one process, ``R`` rounds of one training epoch of each side in turn (a
fresh model of seed 0 each, the same thread count), so that both sides meet the same load;
the medians and their ratio go to ``--json-dir``'s ``speed.json``, which the table reports
beside the long runs' figure. Run it on an otherwise idle machine:

    python benchmarks/zinc_parity.py --speed 3
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DEFAULT_SHARED, place  # noqa: E402

STATE_DIR = Path.home() / ".cache" / "graphpe" / "zinc_parity"
JSON_DIR = Path("benchmarks/results/zinc_parity")
TARGET_SPEEDUP = 1.8
# the example's settings
WALK, PE_DIM, CHANNELS, LAYERS, HEADS, ATTN_DROPOUT = 20, 8, 64, 10, 4, 0.5
LR, WEIGHT_DECAY, FACTOR, PLATEAU_PATIENCE, MIN_LR = 1e-3, 1e-5, 0.5, 20, 1e-5
BATCH, EVAL_BATCH = 32, 64
# graphpe's GPS of the example's shape (graphpe.train.run's model arguments)
GRAPHPE_MODEL = {"model": "gps", "channels": CHANNELS, "layers": LAYERS, "heads": HEADS,
                 "attn_dropout": ATTN_DROPOUT, "pe_channels": PE_DIM, "pe_combine": "split",
                 "head_hidden": (CHANNELS // 2, CHANNELS // 4)}
GRAPHPE_PE = f"rwse:walk_length={WALK}"


def seed_all(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


class PygGPS(torch.nn.Module):
    """PyG's ``examples/graph_gps.py`` model (``attn_type='multihead'``), its maths verbatim
    (PyTorch Geometric, MIT licence; the Performer's projection redraw left out)."""

    def __init__(self) -> None:
        super().__init__()
        from torch.nn import BatchNorm1d, Embedding, Linear, ModuleList, ReLU, Sequential
        from torch_geometric.nn import GINEConv, GPSConv

        self.node_emb = Embedding(28, CHANNELS - PE_DIM)
        self.pe_lin = Linear(WALK, PE_DIM)
        self.pe_norm = BatchNorm1d(WALK)
        self.edge_emb = Embedding(4, CHANNELS)
        self.convs = ModuleList()
        for _ in range(LAYERS):
            mlp = Sequential(Linear(CHANNELS, CHANNELS), ReLU(), Linear(CHANNELS, CHANNELS))
            self.convs.append(GPSConv(CHANNELS, GINEConv(mlp), heads=HEADS,
                                      attn_type="multihead",
                                      attn_kwargs={"dropout": ATTN_DROPOUT}))
        self.mlp = Sequential(Linear(CHANNELS, CHANNELS // 2), ReLU(),
                              Linear(CHANNELS // 2, CHANNELS // 4), ReLU(),
                              Linear(CHANNELS // 4, 1))

    def forward(self, x, pe, edge_index, edge_attr, batch):
        from torch_geometric.nn import global_add_pool

        x = torch.cat((self.node_emb(x.squeeze(-1)), self.pe_lin(self.pe_norm(pe))), 1)
        edge_attr = self.edge_emb(edge_attr)
        for conv in self.convs:
            x = conv(x, edge_index, batch, edge_attr=edge_attr)
        return self.mlp(global_add_pool(x, batch))


def pyg_splits(root: Path) -> dict:
    """ZINC-12k's three splits with PyG's random-walk PE in ``pe``, as the example loads them."""
    import torch_geometric.transforms as T
    from torch_geometric.datasets import ZINC

    transform = T.AddRandomWalkPE(walk_length=WALK, attr_name="pe")
    return {split: ZINC(str(root), subset=True, split=split, pre_transform=transform)
            for split in ("train", "val", "test")}


def run_pyg(root: Path, seed: int, epochs: int, state_path: Path, json_path: Path,
            limit: int | None = None, epochs_now: int | None = None) -> dict:
    """PyG's example loop for one seed, resumable after any epoch: the state holds the model,
    optimizer, schedule, the loader's shuffle generator and PyTorch's random state. At most
    ``epochs_now`` epochs run in this call (None: to the end)."""
    from torch.optim.lr_scheduler import ReduceLROnPlateau
    from torch_geometric.loader import DataLoader

    splits = pyg_splits(root)
    seed_all(seed)
    model = PygGPS()
    optimizer = torch.optim.Adam(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)
    scheduler = ReduceLROnPlateau(optimizer, mode="min", factor=FACTOR,
                                  patience=PLATEAU_PATIENCE, min_lr=MIN_LR)
    shuffle = torch.Generator().manual_seed(seed)
    history: list[dict] = []
    if state_path.exists():
        state = torch.load(state_path, weights_only=False)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        shuffle.set_state(state["shuffle"])
        torch.set_rng_state(state["rng"])
        history = state["history"]
    train = splits["train"] if limit is None else splits["train"][:limit]
    train_loader = DataLoader(train, batch_size=BATCH, shuffle=True, generator=shuffle)
    val_loader = DataLoader(splits["val"], batch_size=EVAL_BATCH)
    test_loader = DataLoader(splits["test"], batch_size=EVAL_BATCH)

    def train() -> float:
        model.train()
        total = 0.0
        for data in train_loader:
            optimizer.zero_grad()
            out = model(data.x, data.pe, data.edge_index, data.edge_attr, data.batch)
            loss = (out.squeeze() - data.y).abs().mean()
            loss.backward()
            total += loss.item() * data.num_graphs
            optimizer.step()
        return total / len(train_loader.dataset)

    @torch.no_grad()
    def test(loader) -> float:
        model.eval()
        error = 0.0
        for data in loader:
            out = model(data.x, data.pe, data.edge_index, data.edge_attr, data.batch)
            error += (out.squeeze() - data.y).abs().sum().item()
        return error / len(loader.dataset)

    last = epochs if epochs_now is None else min(epochs, len(history) + epochs_now)
    for epoch in range(len(history), last):
        start = time.perf_counter()
        loss = train()
        train_seconds = time.perf_counter() - start
        val_mae, test_mae = test(val_loader), test(test_loader)
        lr = optimizer.param_groups[0]["lr"]
        scheduler.step(val_mae)
        history.append({"epoch": epoch, "train_loss": loss, "val": val_mae, "test": test_mae,
                        "lr": lr, "train_seconds": train_seconds,
                        "seconds": time.perf_counter() - start})
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "scheduler": scheduler.state_dict(), "shuffle": shuffle.get_state(),
                    "rng": torch.get_rng_state(), "history": history}, state_path)
        best = min(history, key=lambda h: h["val"])
        record = {"side": "pyg", "seed": seed, "epochs": epochs, "epochs_done": len(history),
                  "done": len(history) == epochs, "test_mae": best["test"],
                  "best_val_mae": best["val"], "best_epoch": best["epoch"],
                  "final_test_mae": test_mae,
                  "params": sum(p.numel() for p in model.parameters()), "history": history}
        write_json(json_path, record)
        print(f"pyg seed {seed} epoch {epoch}: loss {loss:.4f} val {val_mae:.4f} "
              f"test {test_mae:.4f} ({train_seconds:.1f} s train)", flush=True)
    return json.loads(json_path.read_text())


def run_graphpe(root: Path, seed: int, epochs: int, state_path: Path, json_path: Path,
                limit: int | None = None) -> dict:
    """The same model and settings through ``graphpe.train.run`` for one seed; resumable from
    the training state ``fit`` writes beside the checkpoint every epoch."""
    from graphpe.datasets import load_dataset
    from graphpe.records import training_state_path
    from graphpe.train import TrainConfig, run

    checkpoint = state_path.with_suffix(".model.pt")
    state = training_state_path(str(checkpoint))
    config = TrainConfig(
        epochs=epochs, batch_size=BATCH, lr=LR, weight_decay=WEIGHT_DECAY, optimizer="adam",
        schedule="plateau", plateau_factor=FACTOR, plateau_patience=PLATEAU_PATIENCE,
        min_lr=MIN_LR, clip_norm=0.0, patience=epochs, seed=seed, progress=False,
        checkpoint=str(checkpoint), resume=str(state) if state.exists() else None,
        cache_dir=str(state_path.parent / "graphpe_cache"))
    bundle = load_dataset("ZINC", str(root.parent))
    if limit is not None:
        bundle.train = bundle.train[:limit]
    record = run(bundle, GRAPHPE_PE, config=config, **GRAPHPE_MODEL)
    # each epoch's training seconds beside its curve (the last epochs' where a state written
    # before graphpe kept them was resumed)
    history, seconds = record["history"], record["epoch_train_seconds"]
    offset = len(history) - len(seconds)
    history = [{**h, **({"train_seconds": seconds[i - offset]} if i >= offset else {})}
               for i, h in enumerate(history)]
    out = {"side": "graphpe", "seed": seed, "epochs": epochs,
           "epochs_done": len(record["history"]), "done": True, "test_mae": record["test"],
           "best_val_mae": record["val"], "best_epoch": record["best_epoch"],
           "params": record["params"], "history": history}
    write_json(json_path, out)
    return out


def print_table(json_dir: Path) -> None:
    """The parity table of the finished runs in ``json_dir``, also written to
    ``json_dir/summary.json``."""
    sides = {}
    for side in ("pyg", "graphpe"):
        runs = [json.loads(p.read_text()) for p in sorted(json_dir.glob(f"{side}_seed*.json"))]
        done = [r for r in runs if r.get("done")]
        maes = [r["test_mae"] for r in done]
        seconds = [h["train_seconds"] for r in done for h in r["history"]
                   if h.get("train_seconds") is not None]
        sides[side] = {
            "seeds": [r["seed"] for r in done], "epochs": sorted({r["epochs"] for r in done}),
            "unfinished": {r["seed"]: r["epochs_done"] for r in runs if not r.get("done")},
            "test_mae": maes,
            "mean": statistics.mean(maes) if maes else None,
            "std": statistics.stdev(maes) if len(maes) > 1 else None,
            "train_seconds_per_epoch": statistics.median(seconds) if seconds else None}
    pyg, ours = sides["pyg"], sides["graphpe"]
    summary = {"sides": sides, "target_speedup": TARGET_SPEEDUP}
    speed_path = json_dir / "speed.json"
    if speed_path.exists():
        summary["speed"] = json.loads(speed_path.read_text())
        speed = summary["speed"]
        print(f"interleaved ({speed['rounds']} rounds, one process): PyG "
              f"{speed['median_seconds']['pyg']:.1f} s, graphpe "
              f"{speed['median_seconds']['graphpe']:.1f} s per training epoch: graphpe "
              f"{speed['speedup']:.2f}x")
    for side, row in sides.items():
        mean = "-" if row["mean"] is None else f"{row['mean']:.4f}"
        std = "-" if row["std"] is None else f"{row['std']:.4f}"
        sec = row["train_seconds_per_epoch"]
        print(f"{side:8s} seeds {row['seeds']} epochs {row['epochs']}: test MAE {mean} +- "
              f"{std}; {'-' if sec is None else f'{sec:.1f}'} s per training epoch"
              + (f"; unfinished (seed: epochs) {row['unfinished']}" if row["unfinished"] else ""))
    if pyg["std"] is not None and ours["std"] is not None:
        # the standard error of the difference of the two means
        se = math.sqrt(pyg["std"] ** 2 / len(pyg["test_mae"])
                       + ours["std"] ** 2 / len(ours["test_mae"]))
        diff = ours["mean"] - pyg["mean"]
        speedup = pyg["train_seconds_per_epoch"] / ours["train_seconds_per_epoch"]
        summary.update(difference=diff, two_standard_errors=2 * se,
                       within_two_se=abs(diff) <= 2 * se, speedup=speedup)
        print(f"graphpe - pyg: {diff:+.4f} (two standard errors of the difference: "
              f"{2 * se:.4f}): {'within' if abs(diff) <= 2 * se else 'NOT within'}; "
              f"graphpe {speedup:.2f}x faster per training epoch (target {TARGET_SPEEDUP}x)")
    write_json(json_dir / "summary.json", summary)


def measure_speed(root: Path, rounds: int, state_dir: Path, json_dir: Path,
                  threads: int, limit: int | None = None) -> dict:
    """``rounds`` rounds of one training epoch of PyG's example, then graphpe's, each from a
    fresh model (seed 0, its state in a scratch folder); the seconds of each training pass."""
    import os
    import tempfile

    times: dict[str, list[float]] = {"pyg": [], "graphpe": []}
    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory(dir=state_dir) as scratch:
        for r in range(rounds):
            for side in ("pyg", "graphpe"):
                state = Path(scratch) / f"{side}_round{r}.pt"
                out = Path(scratch) / f"{side}_round{r}.json"
                data = root / side / "ZINC"
                run = run_pyg if side == "pyg" else run_graphpe
                record = run(data, 0, 1, state, out, limit)
                times[side].append(record["history"][0]["train_seconds"])
                print(f"speed round {r} {side}: {times[side][-1]:.1f} s", flush=True)
            load.append(os.getloadavg()[0])
    medians = {side: statistics.median(t) for side, t in times.items()}
    command = f"python benchmarks/zinc_parity.py --speed {rounds}"
    result = {"command": command + ("" if limit is None else f" --limit {limit}"),
              "rounds": rounds, "threads": threads, "seconds": times,
              "median_seconds": medians, "speedup": medians["pyg"] / medians["graphpe"],
              "load_average_1min": load, "cpu_count": os.cpu_count()}
    write_json(json_dir / "speed.json", result)
    return result


def write_json(path: Path, record: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=1))
    tmp.replace(path)  # a reader never sees half a file


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--side", choices=("pyg", "graphpe"))
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--epochs", type=int, default=100)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--state-dir", type=Path, default=STATE_DIR)
    ap.add_argument("--json-dir", type=Path, default=JSON_DIR)
    ap.add_argument("--shared", type=Path, default=DEFAULT_SHARED)
    ap.add_argument("--limit", type=int, default=None,
                    help="train on the first N training graphs (a smoke test, not the parity)")
    ap.add_argument("--epochs-now", type=int, default=None,
                    help="pyg: run at most this many epochs now, then stop (a run split over "
                         "several sittings; started again, it continues)")
    ap.add_argument("--table", action="store_true", help="print the parity table of the JSONs")
    ap.add_argument("--speed", type=int, default=None, metavar="ROUNDS",
                    help="time ROUNDS rounds of one training epoch of each side in turn, in "
                         "this process (speed.json); trains nothing to the end")
    args = ap.parse_args(argv)
    if args.table:
        print_table(args.json_dir)
        return
    if args.side is None and args.speed is None:
        ap.error("give --side pyg or --side graphpe (or --table, or --speed)")
    torch.set_num_threads(args.threads)
    if args.speed is not None:
        for side in ("pyg", "graphpe"):
            if not place("ZINC", args.state_dir / "data" / side, args.shared):
                print("[skip] no offline ZINC copy: nothing timed", file=sys.stderr)
                return
        args.state_dir.mkdir(parents=True, exist_ok=True)
        result = measure_speed(args.state_dir / "data", args.speed, args.state_dir,
                               args.json_dir, args.threads, args.limit)
        print(f"median training seconds per epoch: PyG {result['median_seconds']['pyg']:.1f}, "
              f"graphpe {result['median_seconds']['graphpe']:.1f}: graphpe "
              f"{result['speedup']:.2f}x")
        return
    root = args.state_dir / "data" / args.side  # each side its own processed files
    if not place("ZINC", root, args.shared):
        print("[skip] no offline ZINC copy: nothing trained", file=sys.stderr)
        return
    args.state_dir.mkdir(parents=True, exist_ok=True)
    for seed in (int(s) for s in args.seeds.split(",")):
        json_path = args.json_dir / f"{args.side}_seed{seed}.json"
        if json_path.exists() and json.loads(json_path.read_text()).get("done"):
            print(f"{args.side} seed {seed}: done already ({json_path})")
            continue
        state_path = args.state_dir / f"{args.side}_seed{seed}_epochs{args.epochs}.pt"
        if args.side == "pyg":
            record = run_pyg(root / "ZINC", seed, args.epochs, state_path, json_path,
                             args.limit, args.epochs_now)
        else:
            record = run_graphpe(root / "ZINC", seed, args.epochs, state_path, json_path,
                                 args.limit)
        print(f"{args.side} seed {seed}: test MAE {record['test_mae']:.4f} at epoch "
              f"{record['best_epoch']} ({record['epochs_done']} of {args.epochs} epochs)",
              flush=True)


if __name__ == "__main__":
    main()
