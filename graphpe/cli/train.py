"""``graphpe train``: its flags (the model, the fit, the run) and the run on a dataset."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING

from graphpe.cli.options import add_data_arguments, check_device, fanouts, widths

if TYPE_CHECKING:  # (the command imports what it runs when it runs)
    from graphpe.train import TrainConfig


#: the --model names (graphpe.nn.build.MODELS' keys; tests/cli check that the two agree)
MODEL_NAMES = ("gine", "gps", "grit", "gcn", "sage", "gin", "gatedgcn", "graphormer",
               "sgformer", "polynormer", "res-gcn", "res-sage", "res-gat", "res-gat-sep",
               "res-gt", "res-gt-sep", "res-mlp")


GRID_PE_HELP = ("comma-separated encoding sets of the grid, each a --pe of train with '+' "
                "joining the encodings of one set: e.g. none,lap,rwse,lap+rwse")


def add_train_arguments(p: argparse.ArgumentParser, grid: bool = False) -> None:
    """``graphpe train``'s flags, in the order its ``--help`` lists them: the data, a config
    file, the model, the fit, the run. With ``grid`` (``graphpe compare``), ``--model`` and
    ``--pe`` are lists, the grid's rows and columns."""
    add_data_arguments(p, pe_help=GRID_PE_HELP if grid else None)
    p.add_argument("--config", default=None,
                   help="TOML/JSON file of these options (flags given here override it)")
    _add_model_args(p, grid)
    _add_fit_args(p)
    _add_run_args(p)


def _add_model_args(p_train: argparse.ArgumentParser, grid: bool = False) -> None:
    """``graphpe train``: the model (with ``grid`` a list of them), its attention and message
    passing, and its sizes."""
    model = {"type": model_list, "default": ("gcn",)} if grid else {
        "choices": MODEL_NAMES, "default": "gine"}
    p_train.add_argument("--model", **model,
                         help="GINE stack, GPS (GINE + multi-head attention), GRIT (attention "
                              "over pair features, e.g. --pe rrwp), GCN, GraphSAGE, GIN, GatedGCN "
                              "(residual gated convolutions updating the edge features), "
                              "Graphormer (a transformer with its graph token; its encodings: "
                              "--pe degree,spd:path_hops=5), or for node classification on "
                              "large graphs SGFormer or Polynormer (linear-time attention; "
                              "--layers counts their GCN layers); res-gcn, res-sage, res-gat, "
                              "res-gat-sep, res-gt, res-gt-sep, res-mlp: Platonov et al.'s "
                              "residual models with LayerNorm (the heterophilous benchmarks' "
                              "baselines)")
    p_train.add_argument("--attention",
                         choices=["auto", "multihead", "linear", "performer", "none"],
                         default="auto",
                         help="gps: the global attention (auto: multihead, over each graph's "
                              "nodes; linear and performer (GraphGPS's Performer, FAVOR+) are "
                              "linear-time, for large graphs)")
    p_train.add_argument("--mpnn", choices=["auto", "gine", "gin", "gatedgcn", "none"],
                         default="auto",
                         help="gps, grit: the local message passing beside the attention "
                              "(auto: gine with edge features, else gin, for gps; none for "
                              "grit); gatedgcn is GraphGPS's GatedGCN")
    p_train.add_argument("--residual", action=argparse.BooleanOptionalAction, default=None,
                         help="gcn, sage: a linear skip in every layer (Luo et al.'s tuned "
                              "classic GNNs)")
    p_train.add_argument("--norm", choices=["batch", "layer"], default=None,
                         help="gcn, sage: a normalization in every layer, before the ReLU")
    p_train.add_argument("--channels", type=int, default=64, help="hidden width")
    p_train.add_argument("--layers", type=int, default=4, help="number of layers")
    p_train.add_argument("--dropout", type=float, default=0.0,
                         help="dropout in the layers and the head")
    p_train.add_argument("--heads", type=int, default=None,
                         help="attention heads (gps, grit: default 4; graphormer: 8; "
                              "sgformer, polynormer: 1)")
    p_train.add_argument("--local-epochs", type=int, default=None,
                         help="polynormer: epochs of its local layers alone before the global "
                              "attention joins (default 0: global throughout)")
    p_train.add_argument("--attn-dropout", type=float, default=None,
                         help="dropout on the attention weights (gps, grit: default 0; "
                              "graphormer: 0.1)")
    p_train.add_argument("--pe-combine", choices=["sum", "concat", "split"], default=None,
                         help="how the node embedding takes the encodings (default sum: each "
                              "encoder --channels wide, added); concat: concatenated, then "
                              "projected; split: the channels split, --pe-channels per "
                              "encoder and the rest for the node embedding (GraphGPS's "
                              "dim_pe, PyG's examples/graph_gps.py)")
    p_train.add_argument("--pe-channels", type=int, default=None,
                         help="each node encoder's width (default --channels)")
    p_train.add_argument("--head-hidden", type=widths, default=None,
                         help="graph- and node-level heads: the hidden widths of the output "
                              "MLP, e.g. 32,16 (default: one layer of --channels)")


def _add_fit_args(p_train: argparse.ArgumentParser) -> None:
    """``graphpe train``: epochs, batches, the optimizer and its schedule, the readout
    (``--pool``, ``--graph-token``), early stopping and the seed."""
    p_train.add_argument("--epochs", type=int, default=100, help="most training epochs")
    p_train.add_argument("--batch-size", type=int, default=64,
                         help="graphs per batch (seed nodes with --num-neighbors)")
    p_train.add_argument("--num-neighbors", type=fanouts, default=(),
                         help="node-level tasks on one graph: train on mini-batches of "
                              "--batch-size seed nodes and their sampled in-neighbourhoods, "
                              "e.g. 15,10,5 (in-edges per node in each hop, -1 all; PyG's "
                              "NeighborLoader with graphpe's sampler); val/test the same way. "
                              "Default: the whole graph in one batch")
    p_train.add_argument("--subgraph-pe", action=argparse.BooleanOptionalAction, default=False,
                         help="with --num-neighbors: compute the encodings of each sampled "
                              "subgraph in the loader, on the subgraph's own edges, instead of "
                              "the whole graph's once, cut to each batch's nodes (the default)")
    p_train.add_argument("--undirected", action=argparse.BooleanOptionalAction, default=False,
                         help="node-level datasets on one graph: add each edge's reverse "
                              "before encoding and training (OGB's baselines on ogbn-arxiv, "
                              "whose citations are directed); the record's graph entry says "
                              "what the model saw")
    p_train.add_argument("--class-weights", action=argparse.BooleanOptionalAction,
                         default=False,
                         help="classification: weigh each class by its rarity in the batch, "
                              "(n - n_c) / n (GraphGPS's weighted cross-entropy, for PATTERN, "
                              "CLUSTER, PascalVOC-SP and COCO-SP)")
    p_train.add_argument("--optimizer", choices=["adamw", "adam"], default="adamw",
                         help="adamw (decoupled weight decay) or adam (the weight decay added "
                              "to the gradient, as torch.optim.Adam in PyG's examples)")
    p_train.add_argument("--lr", type=float, default=1e-3, help="learning rate")
    p_train.add_argument("--weight-decay", type=float, default=1e-5, help="weight decay")
    p_train.add_argument("--schedule", choices=["cosine", "plateau", "constant"],
                         default="cosine",
                         help="the learning rate's schedule: cosine (after --warmup epochs of "
                              "linear warm-up) or plateau (multiplied by --plateau-factor "
                              "after --plateau-patience epochs without a better validation "
                              "metric, not below --min-lr; no warm-up) or constant (after "
                              "--warmup epochs of warm-up)")
    p_train.add_argument("--plateau-factor", type=float, default=0.1,
                         help="--schedule plateau: the rate's factor on a plateau")
    p_train.add_argument("--plateau-patience", type=int, default=10,
                         help="--schedule plateau: epochs without improvement before a cut")
    p_train.add_argument("--min-lr", type=float, default=0.0,
                         help="--schedule plateau: the lowest learning rate")
    p_train.add_argument("--clip-norm", type=float, default=5.0,
                         help="clip the gradients' total norm to this (0: no clipping)")
    p_train.add_argument("--pool", choices=["sum", "mean", "max", "token"], default=None,
                         help="graph pooling (graph-level tasks; default sum, graphormer: "
                              "token); token: the final state of the graph token "
                              "(--graph-token)")
    p_train.add_argument("--graph-token", action=argparse.BooleanOptionalAction, default=False,
                         help="gps: add Graphormer's graph token to every graph (attends to "
                              "and from every node, with a learned bias per head); read it "
                              "out with --pool token")
    p_train.add_argument("--warmup", type=int, default=5,
                         help="--schedule cosine: epochs of linear learning-rate warm-up "
                              "before the cosine decay")
    p_train.add_argument("--patience", type=int, default=30,
                         help="stop after this many epochs without validation improvement")
    p_train.add_argument("--seed", type=int, default=0, help="seed of split, model and draws")
    p_train.add_argument("--splits", default=None,
                         help="datasets with fixed splits (the heterophilous sets' ten): 'all' "
                              "or indices like 0,3,7, one model per split from seed --seed + "
                              "split, reported as mean ± std; each split's record kept "
                              "(beside --results), a finished split not run again")


def _add_run_args(p_train: argparse.ArgumentParser) -> None:
    """``graphpe train``: the device, the speed settings (memory, compile, static shapes,
    precision, workers) and the run's files (results, checkpoint, resume)."""
    p_train.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    p_train.add_argument("--retain-memory", action=argparse.BooleanOptionalAction, default=True,
                         help="on the CPU, keep freed memory for reuse rather than returning "
                              "it to the OS (faster steps with large tensors; the process "
                              "keeps its peak memory)")
    p_train.add_argument("--compile", action=argparse.BooleanOptionalAction, default=False,
                         help="run the model through torch.compile (ignored where unsupported)")
    p_train.add_argument("--static-shapes", action=argparse.BooleanOptionalAction, default=False,
                         help="gps only: train on fixed-shape batches (every graph padded to "
                              "the largest, one shape for the run); with --compile on CUDA the "
                              "step runs as CUDA graphs")
    p_train.add_argument("--precision", choices=("fp32", "bf16", "fp16"), default="fp32",
                         help="bf16/fp16: mixed precision (the forward under torch.autocast; "
                              "parameters, optimizer and PEs stay float32; fp16 scales the "
                              "loss). Pays on GPUs; on CPUs only with bfloat16 hardware")
    p_train.add_argument("--num-workers", type=int, default=0,
                         help="DataLoader worker processes preparing the training batches "
                              "(collation, static padding) while the step runs")
    p_train.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                         help="progress bars (default: where stderr is a terminal; a log file "
                              "gets none)")
    p_train.add_argument("--results", default=None,
                         help="JSON record: metrics, curve, PE specs, model and train config, "
                              "versions")
    p_train.add_argument("--checkpoint", default=None,
                         help="best model with its config (graphpe.nn.build.load_model reads it); "
                              "the state to resume from is kept beside it as <file>.state")
    p_train.add_argument("--resume", default=None,
                         help="continue a run from its <checkpoint>.state file")


def run_train(args: argparse.Namespace) -> None:
    """``graphpe train``: :func:`graphpe.train.run` on the dataset (with ``--splits``, once per
    split: :func:`graphpe.compare.train_runs`); prints a summary of the record (once under
    torchrun)."""
    from graphpe.datasets import load_dataset
    from graphpe.runtime import retain_freed_host_memory
    from graphpe.train import run

    check_device(args.device)
    check_settings(args, [args.pe])
    model_options(args)
    if args.retain_memory and str(args.device) == "cpu":
        retain_freed_host_memory()
    if args.splits is not None:
        run_train_splits(args)
        return
    bundle = load_dataset(args.dataset, args.root, seed=args.seed, download=args.download)
    bundle.model_kwargs()  # a dataset graphpe cannot train (PCQM-Contact, ...) stops here
    config = train_config(args)
    record = run(bundle, args.pe, model=args.model, channels=args.channels,
                 layers=args.layers, config=config, **model_options(args))
    summary = {k: record[k] for k in ("dataset", "model", "pe", "metric", "val", "test",
                                      "best_epoch", "params", "pe_seconds",
                                      "seconds_per_epoch", "world_size")}
    if int(os.environ.get("RANK", "0")) == 0:  # under torchrun: one report
        print(json.dumps(summary, indent=2))


def check_settings(args: argparse.Namespace, pe_sets: list[str]) -> None:
    """The settings checked before any data loads: each encoding set of ``pe_sets`` (``+``
    or ``,`` joining encodings) and the training settings."""
    from graphpe.encodings import resolve_pe

    for pe in pe_sets:
        resolve_pe(pe.replace("+", ","))
    train_config(args)


def splits_folder(args: argparse.Namespace) -> str:
    """Where ``train --splits`` keeps each split's record: ``<results>.splits/`` beside
    ``--results``, else ``results/<dataset>-<model>-<pe>/`` (``/`` and ``:`` in the names
    replaced)."""
    if args.results:
        return f"{os.path.splitext(args.results)[0]}.splits"
    name = f"{args.dataset}-{args.model}-{args.pe}".replace("/", "_").replace(":", "_")
    return os.path.join("results", name.replace(",", "+"))


def run_train_splits(args: argparse.Namespace) -> None:
    """``graphpe train --splits``: one run per split, then the mean ± std over them, printed
    and written to ``--results``."""
    from graphpe.compare import summarize, train_runs

    if args.checkpoint or args.resume:
        raise ValueError("--splits keeps each split's state itself (a stopped run resumes "
                         "when run again); --checkpoint and --resume apply to one run")
    folder = splits_folder(args)
    records = train_runs(args.dataset, args.root, args.pe, args.model, args.channels,
                         args.layers, train_config(args), model_options(args), folder,
                         splits=args.splits, download=args.download,
                         report=lambda line: print(line, flush=True))
    summary = summarize(records)
    result = {"dataset": args.dataset, "model": args.model, "pe": args.pe,
              "splits": args.splits, "runs_folder": folder, **summary}
    if args.results:
        with open(args.results, "w") as f:
            json.dump(result, f, indent=2)
    print(f"{args.dataset} {args.model} pe={args.pe}: test {summary['metric']} "
          f"{summary['test_mean']:.4f} ± {summary['test_std']:.4f} over {summary['runs']} "
          f"splits (val {summary['val_mean']:.4f} ± {summary['val_std']:.4f}); records in "
          f"{folder}")


def add_compare_arguments(p: argparse.ArgumentParser) -> None:
    """``graphpe compare``: train's flags, with ``--model`` and ``--pe`` lists of the grid's
    rows and columns, ``--seeds`` and ``--out``."""
    add_train_arguments(p, grid=True)
    p.add_argument("--seeds", type=int, default=None,
                   help="repeated runs from seeds --seed, --seed + 1, ... (datasets without "
                        "fixed splits; graph-level sets)")
    p.add_argument("--out", required=True,
                   help="folder of the grid: each run's record (runs/), compare.json, "
                        "compare.md and compare.png; a stopped grid continues from it")


def model_list(value: str | list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """``--model`` of compare: ``"gcn,res-sage"`` (or a config file's list) as checked
    names."""
    names = tuple(p.strip() for p in (value.split(",") if isinstance(value, str) else value))
    unknown = [n for n in names if n not in MODEL_NAMES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown model {unknown[0] if unknown else ''!r}; "
                                         f"choose from {', '.join(MODEL_NAMES)}")
    return names


def run_compare(args: argparse.Namespace) -> None:
    """``graphpe compare``: the grid of :func:`graphpe.compare.compare`, then its table."""
    from graphpe.compare import compare

    if args.checkpoint or args.resume or args.results:
        raise ValueError("compare keeps every run's record and state under --out; "
                         "--results, --checkpoint and --resume apply to train")
    check_settings(args, args.pe.split(","))
    options = {m: model_options(argparse.Namespace(**{**vars(args), "model": m}))
               for m in args.model}
    shared = options[args.model[0]]
    if any(o != shared for o in options.values()):
        raise ValueError("the grid's models take different flags (e.g. --heads); run them "
                         "in separate grids with the same --out")
    result = compare(args.dataset, args.root, args.model, args.pe.split(","),
                     train_config(args), args.out, channels=args.channels,
                     layers=args.layers, model_options=shared, splits=args.splits,
                     seeds=args.seeds, download=args.download,
                     report=lambda line: print(line, flush=True))
    from pathlib import Path

    print(Path(args.out, "compare.md").read_text(), end="")
    if result.get("plot"):
        print(f"plot: {Path(args.out, 'compare.png')}")


def train_config(args: argparse.Namespace) -> TrainConfig:
    """The :class:`graphpe.train.TrainConfig` of ``graphpe train``'s flags."""
    from graphpe.train import TrainConfig

    return TrainConfig(epochs=args.epochs, batch_size=args.batch_size, lr=args.lr,
                       weight_decay=args.weight_decay, optimizer=args.optimizer,
                       schedule=args.schedule, plateau_factor=args.plateau_factor,
                       plateau_patience=args.plateau_patience, min_lr=args.min_lr,
                       clip_norm=args.clip_norm, warmup_epochs=args.warmup,
                       patience=args.patience, seed=args.seed,
                       device=args.device, checkpoint=args.checkpoint,
                       results=args.results, compile=args.compile,
                       static_shapes=args.static_shapes, num_workers=args.num_workers,
                       cache_dir=args.cache_dir, resume=args.resume,
                       precision=args.precision, num_neighbors=args.num_neighbors,
                       subgraph_pe=args.subgraph_pe, class_weights=args.class_weights,
                       undirected=args.undirected,
                       progress=sys.stderr.isatty() if args.progress is None else args.progress)


def model_options(args: argparse.Namespace) -> dict:
    """The model's keyword arguments beyond model, channels and layers, from the flags; a flag
    the chosen model does not take is an error."""
    extra = {"dropout": args.dropout}
    for name in ("pool", "pe_combine", "pe_channels", "head_hidden"):
        if getattr(args, name) is not None:
            extra[name] = getattr(args, name)
    attention = ("heads", "attn_dropout")
    takes = {"gps": attention, "grit": attention, "graphormer": attention,
             "sgformer": ("heads",), "polynormer": ("heads", "local_epochs"),
             "res-gat": ("heads",), "res-gat-sep": ("heads",), "res-gt": ("heads",),
             "res-gt-sep": ("heads",), "gcn": ("residual", "norm"),
             "sage": ("residual", "norm")}.get(args.model, ())
    what_sets = {"local_epochs": "the local warm-up of --model polynormer",
                 "residual": "the layers of --model gcn or sage",
                 "norm": "the layers of --model gcn or sage"}
    for name in ("heads", "attn_dropout", "local_epochs", "residual", "norm"):
        if getattr(args, name) is not None and name not in takes:
            what = what_sets.get(name, "the attention of --model gps, grit or graphormer")
            raise ValueError(f"--{name.replace('_', '-')} sets {what}, not {args.model}")
        if getattr(args, name) is not None:
            extra[name] = getattr(args, name)
    if args.model in ("gps", "grit"):
        if args.mpnn != "auto":
            extra["mpnn"] = None if args.mpnn == "none" else args.mpnn
    elif args.mpnn != "auto":
        raise ValueError(f"--mpnn sets the local MPNN of --model gps or grit, not "
                         f"{args.model}")
    if args.attention != "auto":
        if args.model != "gps":
            raise ValueError(f"--attention sets the global attention of --model gps, not "
                             f"{args.model}")
        extra["attention"] = None if args.attention == "none" else args.attention
    if args.graph_token:  # (graphormer has it by default)
        if args.model not in ("gps", "graphormer"):
            raise ValueError(f"--graph-token adds a token to --model gps, not {args.model}")
        extra["graph_token"] = True
    return extra
