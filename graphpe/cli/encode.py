"""``graphpe encode``: the node encodings of one graph, written to files."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from graphpe.cli.options import PE_HELP


def add_encode_arguments(p: argparse.ArgumentParser) -> None:
    """``graphpe encode``: the graph (a file, or a dataset of one graph), the encodings and
    the folder they go to."""
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--graph", type=Path,
                        help="a graph file: an .npz adjacency (scipy.sparse.save_npz), an edge "
                             "list (two node ids a line), a GraphSAINT folder, or a PyG Data "
                             "saved with torch.save (.pt)")
    source.add_argument("--dataset", help="a dataset of one graph (ogbn-arxiv, Cora, "
                                          "graph:PATH, ...), read from --root")
    p.add_argument("--root", default=".", help="the dataset's folder (with --dataset)")
    p.add_argument("--pe", required=True, help=PE_HELP)
    p.add_argument("--out", required=True, type=Path,
                   help="folder receiving NAME.pt (the encoding's attributes) and NAME.json "
                        "(its settings, the graph's digest, the seconds) per encoding")
    p.add_argument("--reorder", choices=("none", "rcm"), default="none",
                   help="under torchrun: the rows' order before they are split over the ranks "
                        "(rcm: reverse Cuthill-McKee, smaller halos, less sent per product; "
                        "rank 0 reads the whole graph once to order it)")


def run_encode(args: argparse.Namespace) -> dict:
    """``graphpe encode``: :func:`graphpe.encode.encode_graph`; prints what was written.
    Under ``torchrun`` (``WORLD_SIZE`` > 1), every process encodes its rows of the graph
    (:func:`graphpe.encode_distributed.encode_graph_distributed`, gloo) and rank 0 prints."""
    from graphpe.encode import encode_graph

    distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
    if args.graph is not None:
        from graphpe.datasets import read_graph

        if not args.graph.exists():
            raise FileNotFoundError(f"--graph {args.graph}: not found")
        if distributed:  # each rank reads its rows of an adjacency file
            return _run_distributed(args.graph, args)
        graph = read_graph(args.graph)
    else:
        from graphpe.datasets import load_dataset

        bundle = load_dataset(args.dataset, args.root)
        if len(bundle.train) != 1 or not (bundle.train is bundle.val is bundle.test):
            raise ValueError(f"{args.dataset} is a dataset of many graphs: graphpe encode "
                             "writes the encodings of one graph (graphpe precompute encodes "
                             "datasets)")
        graph = bundle.train[0]
    if distributed:
        return _run_distributed(graph, args)
    written = encode_graph(graph, args.pe, args.out)
    report = {name: json.loads(path.with_suffix(".json").read_text())
              for name, path in written.items()}
    summary = {name: {"file": str(written[name]), "attributes": r["attributes"],
                      "seconds": round(r["seconds"], 3)} for name, r in report.items()}
    print(json.dumps(summary, indent=2))
    return summary


def _run_distributed(graph, args: argparse.Namespace) -> dict:
    """This process's rows of the encodings of ``graph`` (a ``Data``, or a graph file whose
    adjacency each rank reads its rows of) in a torchrun process; rank 0 prints the
    records."""
    import torch.distributed as dist

    from graphpe.encode_distributed import encode_file_distributed, encode_graph_distributed
    from graphpe.runtime import distributed_setup

    rank, world, _ = distributed_setup("cpu")
    try:
        if isinstance(graph, Path):
            written = encode_file_distributed(graph, args.pe, args.out,
                                              reorder=args.reorder)
        else:
            written = encode_graph_distributed(graph, args.pe, args.out, reorder=args.reorder)
    finally:
        dist.destroy_process_group()
    summary = {}
    for name in written:
        record = json.loads((args.out / f"{name}.json").read_text())
        summary[name] = {"files": [str(args.out / f) for f in record["partition"]["files"]],
                         "attributes": record["attributes"],
                         "seconds": round(record["seconds"], 3), "ranks": world}
    if rank == 0:
        print(json.dumps(summary, indent=2))
    return summary
