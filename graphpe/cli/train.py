"""``graphpe train``: its flags (the model, the fit, the run) and the run on a dataset."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from typing import TYPE_CHECKING

from graphpe.cli.options import add_data_arguments, check_device, widths
from graphpe.nn.build import MODELS
from graphpe.ops.link_features import DEFAULT_PAIR_FEATURES, PAIR_FEATURES
from graphpe.train_config import add_config_flags, config_from_args

if TYPE_CHECKING:
    from graphpe.train_config import TrainConfig


#: the --model names, as graphpe.nn.build.MODELS declares them
MODEL_NAMES = tuple(MODELS)


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
    p_train.add_argument("--global-layers", type=int, default=None,
                         help="polynormer: attention layers of its global stage (default 2)")
    p_train.add_argument("--in-dropout", type=float, default=None,
                         help="polynormer: dropout on the embedded nodes (default 0.15)")
    p_train.add_argument("--attn-dropout", type=float, default=None,
                         help="dropout on the attention weights (gps, grit: default 0; "
                              "graphormer: 0.1)")
    p_train.add_argument("--hops", type=int, default=None,
                         help="seal (--task link): the enclosing subgraphs' radius (default 2)")
    p_train.add_argument("--labels", choices=["drnl", "de", "de+"], default=None,
                         help="seal (--task link): the subgraphs' node labels (default drnl, "
                              "SEAL's; de, de+: distance encoding)")
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
    """``graphpe train``: the settings of the run (:class:`graphpe.train_config.TrainConfig`'s
    fields, one flag each: epochs, batches, the optimizer and its schedule, early stopping,
    the seed, the device, the run's files), the readout (``--pool``, ``--graph-token``) and
    ``--splits``."""
    add_config_flags(p_train)
    p_train.add_argument("--pool", choices=["sum", "mean", "max", "token"], default=None,
                         help="graph pooling (graph-level tasks; default sum, graphormer: "
                              "token); token: the final state of the graph token "
                              "(--graph-token)")
    p_train.add_argument("--graph-token", action=argparse.BooleanOptionalAction, default=False,
                         help="gps: add Graphormer's graph token to every graph (attends to "
                              "and from every node, with a learned bias per head); read it "
                              "out with --pool token")
    p_train.add_argument("--task", choices=["auto", "link"], default="auto",
                         help="auto: the dataset's own task; link: link prediction on its "
                              "graph (Cora, CiteSeer, PubMed: the edges split 85/5/10 by "
                              "--seed, scored by ROC-AUC, AP and Hits@K; ogbl-collab, -ddi, "
                              "-ppa, -citation2: OGB's split, negatives and metric)")
    p_train.add_argument("--pair-pe", default=",".join(DEFAULT_PAIR_FEATURES),
                         help="--task link: the pair features the decoder also reads, "
                              f"comma-separated ({', '.join(PAIR_FEATURES)}; none: the node "
                              "embeddings alone); none reads the pair's own edge")
    p_train.add_argument("--pair-max-dist", type=int, default=3,
                         help="--task link: spd's cap in hops")
    p_train.add_argument("--link-negatives", choices=["random", "heart"], default="random",
                         help="--task link on Cora, CiteSeer, PubMed: the held-out edges' "
                              "negatives: random (one random non-edge each, scored by "
                              "ROC-AUC) or heart (HeaRT's 500 hard negatives each, Li et al. "
                              "2023, scored by each edge's rank among its own: MRR)")
    p_train.add_argument("--decoder", choices=["mlp", "dot"], default="mlp",
                         help="--task link: an MLP of the embeddings' product (and the pair "
                              "features), or their inner product (the graph autoencoder's)")
    p_train.add_argument("--splits", default=None,
                         help="datasets with fixed splits (the heterophilous sets' ten): 'all' "
                              "or indices like 0,3,7, one model per split from seed --seed + "
                              "split, reported as mean ± std; each split's record kept "
                              "(beside --results), a finished split not run again")


def _add_run_args(p_train: argparse.ArgumentParser) -> None:
    """``graphpe train``: how the process keeps its memory."""
    p_train.add_argument("--retain-memory", action=argparse.BooleanOptionalAction, default=True,
                         help="on the CPU, keep freed memory for reuse rather than returning "
                              "it to the OS (faster steps with large tensors; the process "
                              "keeps its peak memory)")


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
    if args.task == "link":
        run_train_link(args)
        return
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


def run_train_link(args: argparse.Namespace) -> None:
    """``graphpe train --task link``: :func:`graphpe.link.fit_link` on the dataset's edges
    split by ``--seed``; prints the record's summary and writes the record to ``--results``."""
    from graphpe.datasets.link import OGB_LINK_NAMES, PLANETOID_LINK_NAMES, load_link_dataset
    from graphpe.link import fit_link, fit_seal
    from graphpe.ops.link_features import PairFeatureSet

    if args.splits is not None:
        raise ValueError("--task link splits the graph's edges by --seed; --splits picks the "
                         "fixed node splits of a node-level dataset")
    pair_features = PairFeatureSet.parse(args.pair_pe, args.pair_max_dist)
    options = model_options(args)
    seal = MODELS[args.model].link_only
    if seal and args.pe not in ("", "none"):
        raise ValueError(f"--model {args.model} reads no encodings: its subgraphs' nodes carry "
                         f"their labels (--labels), got --pe {args.pe}")
    if args.link_negatives == "heart" and args.dataset in OGB_LINK_NAMES:
        raise ValueError(f"--link-negatives heart builds HeaRT's negatives for the random "
                         f"splits of {', '.join(PLANETOID_LINK_NAMES)}; {args.dataset} comes "
                         "with OGB's own negatives")
    split = load_link_dataset(args.dataset, args.root, seed=args.seed, download=args.download)
    if args.link_negatives == "heart":
        from graphpe.datasets.heart import heart_split

        split = heart_split(split, seed=args.seed)
    if seal:
        record = fit_seal(split, hops=options.get("hops", 2),
                          labels=options.get("labels", "drnl"), channels=args.channels,
                          layers=args.layers, dropout=options["dropout"],
                          config=train_config(args))
    else:
        record = fit_link(split, args.pe, args.model, args.channels, args.layers,
                          pair_features=pair_features, decoder=args.decoder,
                          config=train_config(args), **options)
    if args.results:
        with open(args.results, "w") as f:
            json.dump(record, f, indent=2)
    summary = {k: record[k] for k in ("dataset", "model", "pe", "pair_features", "val", "test",
                                      "best_epoch", "params", "pe_seconds",
                                      "seconds_per_epoch")}
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
    from graphpe.compare import ModelShape, RunSet, summarize, train_runs
    from graphpe.datasets.published import published_results

    if args.checkpoint or args.resume:
        raise ValueError("--splits keeps each split's state itself (a stopped run resumes "
                         "when run again); --checkpoint and --resume apply to one run")
    folder = splits_folder(args)
    runs = RunSet(args.dataset, args.root, splits=args.splits, download=args.download)
    shape = ModelShape(args.channels, args.layers, model_options(args))
    config = train_config(args)
    records = train_runs(runs, args.model, args.pe, shape, config, folder,
                         report=lambda line: print(line, flush=True))
    summary = summarize(records)
    published = published_results(args.dataset, args.model)
    result = {"dataset": args.dataset, "model": args.model, "pe": args.pe,
              "splits": args.splits, "runs_folder": folder, "config_file": args.config,
              "channels": shape.channels, "layers": shape.layers, "epochs": config.epochs,
              **summary, "published": [dataclasses.asdict(entry) for entry in published]}
    if args.results:
        with open(args.results, "w") as f:
            json.dump(result, f, indent=2)
    print(f"{args.dataset} {args.model} pe={args.pe}: test {summary['metric']} "
          f"{summary['test_mean']:.4f} ± {summary['test_std']:.4f} over {summary['runs']} "
          f"splits (val {summary['val_mean']:.4f} ± {summary['val_std']:.4f}); "
          f"{sum(summary['run_seconds']) / 60:.1f} min of training and encoding in all; "
          f"records in {folder}")
    budget = (f"{shape.channels} channels, {shape.layers} layers, "
              f"{config.epochs} steps")
    for entry in published:
        print(f"  beside {entry.paper}'s {entry.model}: {entry.value_text()} "
              f"({entry.protocol}); this run, {budget}: {100 * summary['test_mean']:.2f} ± "
              f"{100 * summary['test_std']:.2f}")


def add_compare_arguments(p: argparse.ArgumentParser) -> None:
    """``graphpe compare``: train's flags, with ``--model`` and ``--pe`` lists of the grid's
    rows and columns, ``--seeds`` and ``--out``."""
    add_train_arguments(p, grid=True)
    p.add_argument("--seeds", type=int, default=None,
                   help="repeated runs from seeds --seed, --seed + 1, ... (datasets without "
                        "fixed splits; graph-level sets)")
    p.add_argument("--out", required=True,
                   help="folder of the grid: each run's record (runs/), compare.json, "
                        "compare.md and compare.png; a stopped grid continues from it, and "
                        "a grid run again with other models or encodings keeps the earlier "
                        "cells of the same settings in its table")


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
    from graphpe.compare import ModelShape, RunSet, compare

    if args.checkpoint or args.resume or args.results:
        raise ValueError("compare keeps every run's record and state under --out; "
                         "--results, --checkpoint and --resume apply to train")
    if args.task == "link":
        raise ValueError("compare runs node- and graph-level grids; --task link trains with "
                         "graphpe train (benchmarks/link_planetoid.py runs a link grid)")
    check_settings(args, args.pe.split(","))
    options = {m: model_options(argparse.Namespace(**{**vars(args), "model": m}))
               for m in args.model}
    shared = options[args.model[0]]
    if any(o != shared for o in options.values()):
        raise ValueError("the grid's models take different flags (e.g. --heads); run them "
                         "in separate grids with the same --out")
    runs = RunSet(args.dataset, args.root, splits=args.splits, seeds=args.seeds,
                  download=args.download)
    result = compare(runs, args.model, args.pe.split(","),
                     ModelShape(args.channels, args.layers, shared), train_config(args),
                     args.out, report=lambda line: print(line, flush=True))
    from pathlib import Path

    print(Path(args.out, "compare.md").read_text(), end="")
    if result.get("plot"):
        print(f"plot: {Path(args.out, 'compare.png')}")


def train_config(args: argparse.Namespace) -> TrainConfig:
    """The :class:`graphpe.train_config.TrainConfig` of ``graphpe train``'s flags (progress
    bars by default where stderr is a terminal)."""
    progress = sys.stderr.isatty() if args.progress is None else args.progress
    return config_from_args(args, progress=progress)


def model_options(args: argparse.Namespace) -> dict:
    """The model's keyword arguments beyond model, channels and layers, from the flags; a flag
    the chosen model does not take is an error."""
    extra = {"dropout": args.dropout}
    for name in ("pool", "pe_combine", "pe_channels", "head_hidden"):
        if getattr(args, name) is not None:
            extra[name] = getattr(args, name)
    takes = MODELS[args.model].takes if args.model in MODELS else ()
    # the model flags, each with its value where given (None / "auto" / False: not given)
    given = {"heads": args.heads, "attn_dropout": args.attn_dropout,
             "local_epochs": args.local_epochs, "global_layers": args.global_layers,
             "in_dropout": args.in_dropout, "residual": args.residual, "norm": args.norm,
             "mpnn": None if args.mpnn == "auto" else args.mpnn,
             "attention": None if args.attention == "auto" else args.attention,
             "graph_token": True if args.graph_token else None, "hops": args.hops,
             "labels": args.labels}
    for name, value in given.items():
        if value is None:
            continue
        if name not in takes:
            takers = [n for n, kind in MODELS.items() if name in kind.takes]
            models = " or ".join([", ".join(takers[:-1]), takers[-1]]) if len(takers) > 1 \
                else takers[0]
            raise ValueError(f"--{name.replace('_', '-')} sets {MODEL_FLAGS[name]} of --model "
                             f"{models}, not {args.model}")
        extra[name] = None if value == "none" else value
    return extra


#: what each model flag sets (graphpe.nn.build.MODELS declares which models take it)
MODEL_FLAGS = {"heads": "the attention heads", "attn_dropout": "the attention dropout",
               "local_epochs": "the local warm-up", "global_layers": "the global stage's layers",
               "in_dropout": "the input dropout", "residual": "a linear skip in the layers",
               "norm": "a normalization in the layers", "mpnn": "the local MPNN",
               "attention": "the global attention", "graph_token": "a graph token",
               "hops": "the enclosing subgraphs' radius", "labels": "the subgraphs' labels"}
