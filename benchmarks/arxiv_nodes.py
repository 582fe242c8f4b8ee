"""Node classification on ogbn-arxiv from its structure alone: does an encoding help, and what
does carrying it cost against PyG's own models.

    python benchmarks/arxiv_nodes.py --timing                  # epoch time and peak memory
    python benchmarks/arxiv_nodes.py --accuracy --epochs 100   # the accuracy table
    python benchmarks/arxiv_nodes.py --accuracy --models gcn --pes none,lap --seeds 0

The graph: ``../shared/data/ogbn-arxiv-graph`` (OGB's arxiv citations, labels and time split
in GraphSAINT's layout, ``--root``), without OGB's word-embedding features (they could not be
staged): every node's input is the same constant, so whatever a model learns beyond the
degree comes from the encoding. The encodings are computed on the directed citation graph
(the magnetic Laplacian reads the direction; LapPE, RWSE and RFP symmetrize it), cached by
precompute's cache (``--cache-dir``), then the models pass messages over the undirected graph
(OGB's examples' ``to_undirected``).

Encodings (``--pes``): ``none``; ``lap`` (LapPE, k = 16, its DeepSets 16 wide as GraphGPS's);
``rwse`` (RWSE, 16 steps, estimated by 64 random walks per node: the exact landing probabilities
of arxiv are past a minute); ``rfp`` (RFP, 16 dimensions, 8 steps, one draw); ``maglap``
(magnetic Laplacian, k = 16, q = 0.1, through the node-wise encoder ``maglap:nodewise=true``:
the default stable encoder relates every pair of a graph's nodes and would need terabytes on
arxiv's one graph). Models
(``--models``): ``gcn`` (3 layers, 128 wide) and ``sgformer`` (3 GCN layers and one linear-
attention layer, 128 wide), each the graphpe model fed by the encoding's encoder, trained full-
batch (AdamW, lr 0.01, dropout 0.5, ``--epochs``, the best validation epoch's test accuracy).

``--localization``: how many nodes each LapPE eigenvector lives on (the inverse participation
ratio ``1 / sum_i v_i^4`` of the unit column), written beside the accuracy rows.

``--timing``: one epoch's time (mean of ``--rounds`` after one warm-up) and the process's peak
memory (the graph and the encodings included), each model in its own process on one thread:
graphpe's GCN and SGFormer with LapPE and RWSE as inputs beside PyG's ``GCN`` and
``SGFormer`` (``torch_geometric.nn.models``) at the same width and depth without them. The
issue's target: graphpe's epoch with the encodings no slower than PyG's without.

Rows go to ``--json`` (default ``benchmarks/results/arxiv_nodes.json``) as they finish.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_ROOT = Path(os.environ.get("GRAPHPE_SHARED_DATA", HERE.parents[1] / "shared" / "data"))
GRAPH = "ogbn-arxiv-graph"
CHANNELS, LAYERS = 128, 3
LAP_HIDDEN = 16  # LapPE's DeepSets width, as GraphGPS's (the model's 128 would be 8x the rows)


def encoding_transforms(name: str) -> list:
    """The transforms of ``--pes``'s ``name`` (see the module docstring)."""
    from graphpe.transforms import RFP, RWSE, LaplacianPE, MagneticLaplacianPE

    return {"none": [], "lap": [LaplacianPE(k=16)],
            "rwse": [RWSE(walk_length=16, estimate="sampled", walks=64)],
            "rfp": [RFP(dim=16, steps=8, num_draws=1)],
            "maglap": [MagneticLaplacianPE(k=16, q=(0.1,))]}[name]


def encoding_specs(name: str) -> list:
    """The registry's declarations whose encoders read ``name``'s attributes."""
    from graphpe.encodings import resolve_pe

    pe = {"none": "none", "lap": f"lap:k=16:hidden={LAP_HIDDEN}", "rwse": "rwse:walk_length=16",
          "rfp": "rfp:dim=16:steps=8:num_draws=1",
          "maglap": "maglap:k=16:q=0.1:nodewise=true"}[name]
    return resolve_pe(pe)


def encoded_graph(root: Path, names: list[str], cache_dir: Path | None):
    """arxiv with ``names``' encodings attached (computed on the directed graph, through the
    cache), then its edges made undirected; and the encoding seconds (0 on a cache hit)."""
    import torch
    from torch_geometric.utils import to_undirected

    from graphpe.datasets import load_dataset
    from graphpe.transforms import precompute

    bundle = load_dataset(f"graph:{GRAPH}", root)
    graph = bundle.train[0]
    seconds = {}
    for name in names:
        transforms = encoding_transforms(name)
        if not transforms:
            continue
        start = time.perf_counter()
        encoded = precompute([graph.clone()], transforms, progress=False,
                             cache_dir=None if cache_dir is None else str(cache_dir))[0]
        seconds[name] = time.perf_counter() - start
        for key in encoded.keys():
            if key not in graph:
                graph[key] = encoded[key]
    graph.edge_index = to_undirected(graph.edge_index, num_nodes=graph.num_nodes)
    torch.set_num_threads(1)
    return bundle, graph, seconds


def graphpe_model(kind: str, bundle, names: list[str]):
    from graphpe.encodings import pe_model_config
    from graphpe.nn import build_model

    specs = [s for name in names for s in encoding_specs(name)]
    config = {"model": kind, "channels": CHANNELS, "layers": LAYERS, "dropout": 0.5,
              "pe": pe_model_config(specs), **bundle.model_kwargs()}
    if kind == "sgformer":
        config["trans_num_layers"] = 1
    return build_model(config), config


def pyg_model(kind: str, out_dim: int):
    from torch_geometric.nn.models import GCN, SGFormer

    if kind == "gcn":
        return GCN(1, CHANNELS, LAYERS, out_dim, dropout=0.5)
    return SGFormer(1, CHANNELS, out_dim, trans_num_layers=1, gnn_num_layers=LAYERS)


def time_epochs(args: argparse.Namespace) -> dict:
    """One ``--timing`` row in this process: ``args.library``'s ``args.model``."""
    import torch
    import torch.nn.functional as F

    names = ["lap", "rwse"] if args.library == "graphpe" else []
    bundle, graph, _ = encoded_graph(args.root, names, args.cache_dir)
    mask, y = graph.train_mask, graph.y
    if args.library == "graphpe":
        model, _ = graphpe_model(args.model, bundle, names)
        forward = lambda: model(graph)  # noqa: E731
    else:
        model = pyg_model(args.model, bundle.out_dim)
        x = torch.ones(graph.num_nodes, 1)
        inputs = (x, graph.edge_index) if args.model == "gcn" else (
            x, graph.edge_index, torch.zeros(graph.num_nodes, dtype=torch.long))
        forward = lambda: model(*inputs)  # noqa: E731
    opt = torch.optim.AdamW(model.parameters(), lr=0.01)
    model.train()
    seconds = []
    for _ in range(args.rounds + 1):
        start = time.perf_counter()
        opt.zero_grad()
        loss = F.cross_entropy(forward()[mask], y[mask])
        loss.backward()
        opt.step()
        seconds.append(time.perf_counter() - start)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    return {"library": args.library, "model": args.model, "encodings": names,
            "epoch_seconds": statistics.mean(seconds[1:]), "rounds": args.rounds,
            "peak_rss_gb": peak, "threads": torch.get_num_threads()}


def accuracy_row(args: argparse.Namespace, model_kind: str, name: str, seed: int) -> dict:
    from graphpe.train import TrainConfig, fit

    names = [] if name == "none" else [name]
    bundle, graph, pe_seconds = encoded_graph(args.root, names, args.cache_dir)
    bundle.train = bundle.val = bundle.test = [graph]
    config = TrainConfig(epochs=args.epochs, lr=0.01, weight_decay=0.0, warmup_epochs=0,
                         patience=args.epochs, seed=seed, progress=False)
    import torch

    torch.manual_seed(seed)
    model, model_config = graphpe_model(model_kind, bundle, names)
    record = fit(model, bundle, config, model_config=model_config)
    return {"model": model_kind, "encoding": name, "seed": seed, "epochs": args.epochs,
            "val": record["val"], "test": record["test"], "best_epoch": record["best_epoch"],
            "seconds_per_epoch": record["seconds_per_epoch"], "pe_seconds": pe_seconds}


def lap_localization(args: argparse.Namespace) -> dict:
    """LapPE's eigenvalues and each eigenvector's effective number of nodes on arxiv."""
    _, graph, _ = encoded_graph(args.root, ["lap"], args.cache_dir)
    vectors = graph.lap_pe.double()
    vectors = vectors / vectors.norm(dim=0)
    effective = 1.0 / (vectors ** 4).sum(0)
    return {"eigenvalues": graph.lap_eigvals[0].tolist(),
            "effective_nodes": [round(float(v), 1) for v in effective],
            "num_nodes": graph.num_nodes}


def write(rows: list[dict], path: Path, meta: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**meta, "rows": rows}, indent=1) + "\n")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    p.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache" / "graphpe" /
                   "arxiv_nodes")
    p.add_argument("--timing", action="store_true")
    p.add_argument("--accuracy", action="store_true")
    p.add_argument("--localization", action="store_true")
    p.add_argument("--models", default="gcn,sgformer")
    # (maglap's encoder relates every pair of a graph's nodes: it does not fit arxiv's one
    # graph, so it is not in the default list)
    p.add_argument("--pes", default="none,lap,rwse,rfp,maglap")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--epochs", type=int, default=100)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--json", type=Path, default=None)
    # (one --timing row in a child process)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--library", default="graphpe", help=argparse.SUPPRESS)
    p.add_argument("--model", default="gcn", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if not (args.root / GRAPH).exists():
        print(f"[skip] {args.root / GRAPH} not found (the ogbn-arxiv graph of the project's "
              "shared data)")
        return
    if args.child:
        print(json.dumps(time_epochs(args)))
        return
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "NUMBA_NUM_THREADS": "1"}
    meta = {"graph": GRAPH, "channels": CHANNELS, "layers": LAYERS, "threads": 1}
    if args.timing:
        path = args.json or HERE / "results" / "arxiv_nodes_timing.json"
        rows = []
        for model in args.models.split(","):
            for library in ("pyg", "graphpe"):
                out = subprocess.run(
                    [sys.executable, __file__, "--child", "--library", library, "--model",
                     model, "--root", str(args.root), "--cache-dir", str(args.cache_dir),
                     "--rounds", str(args.rounds)], env=env, capture_output=True, text=True,
                    check=True)
                rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
                print(rows[-1], flush=True)
                write(rows, path, meta)
            pyg, ours = rows[-2], rows[-1]
            print(f"{model}: graphpe with LapPE + RWSE {ours['epoch_seconds']:.2f} s/epoch, "
                  f"PyG without {pyg['epoch_seconds']:.2f} s: ratio "
                  f"{pyg['epoch_seconds'] / ours['epoch_seconds']:.2f}x (target >= 1); peak "
                  f"{ours['peak_rss_gb']:.2f} GB vs {pyg['peak_rss_gb']:.2f} GB")
    if args.localization:
        path = args.json or HERE / "results" / "arxiv_nodes.json"
        saved = json.loads(path.read_text()) if path.exists() else {**meta, "rows": []}
        saved["lap_localization"] = lap_localization(args)
        print(saved["lap_localization"])
        path.write_text(json.dumps(saved, indent=1) + "\n")
    if args.accuracy:
        import torch

        torch.set_num_threads(1)
        path = args.json or HERE / "results" / "arxiv_nodes.json"
        rows = json.loads(path.read_text())["rows"] if path.exists() else []
        done = {(r["model"], r["encoding"], r["seed"], r["epochs"]) for r in rows}
        for model in args.models.split(","):
            for name in args.pes.split(","):
                for seed in (int(s) for s in args.seeds.split(",")):
                    if (model, name, seed, args.epochs) in done:
                        continue
                    rows.append(accuracy_row(args, model, name, seed))
                    print(rows[-1], flush=True)
                    write(rows, path, {**meta, "epochs": args.epochs,
                                       "command": "python benchmarks/arxiv_nodes.py "
                                       + " ".join(argv if argv is not None else sys.argv[1:])})


if __name__ == "__main__":
    main()
