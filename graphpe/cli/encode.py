"""``graphpe encode``: the node encodings of one graph, written to files."""

from __future__ import annotations

import argparse
import json
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


def run_encode(args: argparse.Namespace) -> dict:
    """``graphpe encode``: :func:`graphpe.encode.encode_graph`; prints what was written."""
    from graphpe.encode import encode_graph

    if args.graph is not None:
        from graphpe.datasets import read_graph

        if not args.graph.exists():
            raise FileNotFoundError(f"--graph {args.graph}: not found")
        graph = read_graph(args.graph)
    else:
        from graphpe.datasets import load_dataset

        bundle = load_dataset(args.dataset, args.root)
        if len(bundle.train) != 1 or not (bundle.train is bundle.val is bundle.test):
            raise ValueError(f"{args.dataset} is a dataset of many graphs: graphpe encode "
                             "writes the encodings of one graph (graphpe precompute encodes "
                             "datasets)")
        graph = bundle.train[0]
    written = encode_graph(graph, args.pe, args.out)
    report = {name: json.loads(path.with_suffix(".json").read_text())
              for name, path in written.items()}
    summary = {name: {"file": str(written[name]), "attributes": r["attributes"],
                      "seconds": round(r["seconds"], 3)} for name, r in report.items()}
    print(json.dumps(summary, indent=2))
    return summary
