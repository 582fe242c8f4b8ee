"""``graphpe train``: its flags (the model, the fit, the run) and the run on a dataset."""

from __future__ import annotations

import argparse
import json
import os
from typing import TYPE_CHECKING

from graphpe.cli.options import add_data_arguments, check_device, fanouts, widths

if TYPE_CHECKING:  # (the command imports what it runs when it runs)
    from graphpe.train import TrainConfig


def add_train_arguments(p: argparse.ArgumentParser) -> None:
    """``graphpe train``'s flags, in the order its ``--help`` lists them: the data, a config
    file, the model, the fit, the run."""
    add_data_arguments(p)
    p.add_argument("--config", default=None,
                   help="TOML/JSON file of these options (flags given here override it)")
    _add_model_args(p)
    _add_fit_args(p)
    _add_run_args(p)


def _add_model_args(p_train: argparse.ArgumentParser) -> None:
    """``graphpe train``: the model, its attention and message passing, and its sizes."""
    p_train.add_argument("--model", choices=["gine", "gps", "grit", "gcn", "sage", "gin",
                                             "gatedgcn", "graphormer", "sgformer",
                                             "polynormer"],
                         default="gine",
                         help="GINE stack, GPS (GINE + multi-head attention), GRIT (attention "
                              "over pair features, e.g. --pe rrwp), GCN, GraphSAGE, GIN, GatedGCN "
                              "(residual gated convolutions updating the edge features), "
                              "Graphormer (a transformer with its graph token; its encodings: "
                              "--pe degree,spd:path_hops=5), or for node classification on "
                              "large graphs SGFormer or Polynormer (linear-time attention; "
                              "--layers counts their GCN layers)")
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
    p_train.add_argument("--schedule", choices=["cosine", "plateau"], default="cosine",
                         help="the learning rate's schedule: cosine (after --warmup epochs of "
                              "linear warm-up) or plateau (multiplied by --plateau-factor "
                              "after --plateau-patience epochs without a better validation "
                              "metric, not below --min-lr; no warm-up)")
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
    p_train.add_argument("--results", default=None,
                         help="JSON record: metrics, curve, PE specs, model and train config, "
                              "versions")
    p_train.add_argument("--checkpoint", default=None,
                         help="best model with its config (graphpe.nn.build.load_model reads it); "
                              "the state to resume from is kept beside it as <file>.state")
    p_train.add_argument("--resume", default=None,
                         help="continue a run from its <checkpoint>.state file")


def run_train(args: argparse.Namespace) -> None:
    """``graphpe train``: :func:`graphpe.train.run` on the dataset; prints a summary of the
    record (once under torchrun)."""
    from graphpe.datasets import load_dataset
    from graphpe.runtime import retain_freed_host_memory
    from graphpe.train import run

    check_device(args.device)
    if args.retain_memory and str(args.device) == "cpu":
        retain_freed_host_memory()
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
                       subgraph_pe=args.subgraph_pe, class_weights=args.class_weights)


def model_options(args: argparse.Namespace) -> dict:
    """The model's keyword arguments beyond model, channels and layers, from the flags; a flag
    the chosen model does not take is an error."""
    extra = {"dropout": args.dropout}
    for name in ("pool", "pe_combine", "pe_channels", "head_hidden"):
        if getattr(args, name) is not None:
            extra[name] = getattr(args, name)
    attention = ("heads", "attn_dropout")
    takes = {"gps": attention, "grit": attention, "graphormer": attention,
             "sgformer": ("heads",), "polynormer": ("heads", "local_epochs")}.get(args.model, ())
    for name in ("heads", "attn_dropout", "local_epochs"):
        if getattr(args, name) is not None and name not in takes:
            what = ("the local warm-up of --model polynormer" if name == "local_epochs" else
                    "the attention of --model gps, grit or graphormer")
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
