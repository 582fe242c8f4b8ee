"""Sampled mini-batches of ogbn-arxiv in the two modes of carrying encodings: the whole graph's
encodings computed once and cut to each batch's nodes (the default), or each sampled
subgraph's own encodings computed by the loader (``graphpe train --subgraph-pe``,
OnTheFlyPE's mode). What each costs, and what each is worth.

    python benchmarks/subgraph_pe.py --timing                       # seconds per batch
    python benchmarks/subgraph_pe.py --accuracy --epochs 5 --seeds 0,1,2

The graph: ``../shared/data/ogbn-arxiv-graph`` (``--root``; structure only, as
``arxiv_nodes.py``), made undirected. The encodings: LapPE (k = 16) and RWSE (16 steps,
estimated by 64 random walks per node: arxiv's exact values are past a minute, and so are
those of many of its 2-hop subgraphs). Batches: 1,024 training nodes with fan-outs 10 and 5
(graphpe's sampler, the sample fixed by seed 0), one thread.

``--timing``: the encodings of the whole graph once (seconds), then the same ``--batches``
batches (after two warm-up ones) loaded in turn without encodings, with the whole graph's rows
and with their own subgraph's encodings: the median seconds per batch of each and the
subgraphs' sizes. ``--accuracy``: GraphSAGE (2 layers, 64 wide, LapPE's DeepSets 16 wide)
trained on the batches for ``--epochs`` (AdamW, lr 0.01, dropout 0.5; val/test on fixed
samples of the same fan-outs, encoded the same way), the best validation epoch's test
accuracy, per mode and seed. Rows go to ``--json`` (default
``benchmarks/results/subgraph_pe.json``) as they finish.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_ROOT = Path(os.environ.get("GRAPHPE_SHARED_DATA", HERE.parents[1] / "shared" / "data"))
GRAPH = "ogbn-arxiv-graph"
FANOUTS, BATCH = (10, 5), 1024
PE = "lap:k=16:hidden=16,rwse:walk_length=16:estimate=sampled:walks=64"
MODES = ("none", "whole graph", "each subgraph")


def arxiv_bundle(root: Path):
    """arxiv's bundle with its one graph's edges made undirected."""
    from torch_geometric.utils import to_undirected

    from graphpe.datasets import load_dataset

    if not (root / GRAPH).is_dir():
        sys.exit(f"{root / GRAPH} not found: this benchmark reads the arxiv graph staged in "
                 "../shared/data (--root)")
    bundle = load_dataset(f"graph:{GRAPH}", root)
    graph = bundle.train[0]
    graph.edge_index = to_undirected(graph.edge_index, num_nodes=graph.num_nodes)
    return bundle


def timing(args: argparse.Namespace) -> dict:
    import torch
    from torch_geometric.transforms import Compose

    from graphpe.encodings import resolve_pe, transforms_of
    from graphpe.sampling import neighbor_loader

    torch.set_num_threads(1)
    graph = arxiv_bundle(args.root).train[0]
    pipeline = Compose(transforms_of(resolve_pe(PE)))
    start = time.perf_counter()
    encoded = pipeline(graph.clone())
    whole_seconds = time.perf_counter() - start
    seeds = graph.train_mask.nonzero().view(-1)
    loaders = {"none": neighbor_loader(graph, FANOUTS, input_nodes=seeds, batch_size=BATCH,
                                       seed=0),
               "whole graph": neighbor_loader(encoded, FANOUTS, input_nodes=seeds,
                                              batch_size=BATCH, seed=0),
               "each subgraph": neighbor_loader(graph, FANOUTS, input_nodes=seeds,
                                                batch_size=BATCH, seed=0, transform=pipeline)}
    iterators = {mode: iter(loader) for mode, loader in loaders.items()}
    seconds: dict[str, list[float]] = {mode: [] for mode in MODES}
    sizes = []
    total = min(args.batches + 2, len(loaders["none"]))  # (a small stand-in has fewer)
    warm = min(2, total - 1)
    for i in range(total):
        for mode in MODES:  # the same batch in each mode, in turn
            start = time.perf_counter()
            batch = next(iterators[mode])
            if i >= warm:
                seconds[mode].append(time.perf_counter() - start)
        if i >= warm:
            sizes.append(batch.num_nodes)
    per_batch = {mode: statistics.median(values) for mode, values in seconds.items()}
    return {"whole_graph_encoding_seconds": whole_seconds, "batch_seconds": per_batch,
            "batches": len(sizes), "train_batches_per_epoch": len(loaders["none"]),
            "subgraph_nodes_median": statistics.median(sizes),
            "subgraph_nodes_max": max(sizes), "num_nodes": graph.num_nodes,
            "threads": torch.get_num_threads()}


def accuracy_row(args: argparse.Namespace, mode: str, seed: int) -> dict:
    import torch

    from graphpe.train import TrainConfig, run

    torch.set_num_threads(1)
    bundle = arxiv_bundle(args.root)
    config = TrainConfig(epochs=args.epochs, batch_size=BATCH, lr=0.01, weight_decay=0.0,
                         warmup_epochs=0, patience=args.epochs, seed=seed, progress=False,
                         num_neighbors=FANOUTS, subgraph_pe=mode == "each subgraph")
    start = time.perf_counter()
    record = run(bundle, "none" if mode == "none" else PE, model="sage", channels=64,
                 layers=2, dropout=0.5, config=config)
    return {"mode": mode, "seed": seed, "epochs": args.epochs, "val": record["val"],
            "test": record["test"], "best_epoch": record["best_epoch"],
            "pe_seconds": record["pe_seconds"],
            "seconds_per_epoch": record["seconds_per_epoch"],
            "seconds": time.perf_counter() - start}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    p.add_argument("--timing", action="store_true")
    p.add_argument("--accuracy", action="store_true")
    p.add_argument("--batches", type=int, default=10)
    p.add_argument("--modes", default=",".join(MODES))
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--json", type=Path, default=HERE / "results" / "subgraph_pe.json")
    args = p.parse_args(argv)
    saved = json.loads(args.json.read_text()) if args.json.exists() else {"rows": []}
    saved.update(graph=GRAPH, fanouts=list(FANOUTS), batch_size=BATCH, pe=PE)

    def write() -> None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(saved, indent=1) + "\n")

    if args.timing:
        saved["timing"] = timing(args)
        print(json.dumps(saved["timing"], indent=1), flush=True)
        write()
    if args.accuracy:
        done = {(r["mode"], r["seed"], r["epochs"]) for r in saved["rows"]}
        for mode in args.modes.split(","):
            for seed in (int(s) for s in args.seeds.split(",")):
                if (mode, seed, args.epochs) not in done:
                    saved["rows"].append(accuracy_row(args, mode, seed))
                    print(saved["rows"][-1], flush=True)
                    write()


if __name__ == "__main__":
    main()
