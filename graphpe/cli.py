"""The ``graphpe`` command line: ``demo``, ``precompute``, ``train``, ``evaluate``, ``warmup``,
``encodings``, ``pretrain-gpse``, ``bench``.

Each command is one entry of :data:`COMMANDS`: its help line, the function that adds its
arguments to its parser (``add_<command>_arguments``) and the function that runs it on the
parsed arguments (``run_<command>``); :func:`build_parser` and :func:`main` read the table."""

from __future__ import annotations

import argparse
import json
import os
import runpy
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # (the commands import what they run when they run)
    from graphpe.train import TrainConfig

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
PE_HELP = ("comma-separated encodings, each a name with optional settings, e.g. "
           "'rwse:walk_length=20,lap:k=4', lists with '/': 'hkdiag:times=1/2/4'; 'none' for "
           "no PE; `graphpe encodings` lists the encodings with their settings")


@dataclass(frozen=True)
class Command:
    """One sub-command of ``graphpe``: its line in ``graphpe --help``, the function adding its
    arguments to its parser, the function running it, and how it reports."""

    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], object]
    list_defaults: bool = True  # its --help lists each flag's default
    logs: bool = False  # graphpe's info messages (cache hits and writes) go to stderr


def add_data_arguments(p: argparse.ArgumentParser) -> None:
    """The dataset, its folder, the PEs and precompute's cache (``precompute``, ``train``)."""
    from graphpe.datasets import DATASET_HELP
    p.add_argument("--dataset", required=True, help=DATASET_HELP)
    p.add_argument("--root", required=True, help="folder holding (or receiving) the "
                                                 "dataset's files")
    p.add_argument("--pe", default="none", help=PE_HELP)
    p.add_argument("--download", action=argparse.BooleanOptionalAction, default=False,
                   help="let the dataset's loader download missing files")
    p.add_argument("--cache-dir", default=None,
                   help="precompute's cache of the encoded splits: written once, reused "
                        "by precompute and train while data and settings are unchanged")


def _load_config(path: str) -> dict:
    """A TOML (or JSON) file of ``train`` options, keys spelled as the flags
    (``batch-size`` or ``batch_size``)."""
    text = Path(path).read_text()
    if path.endswith(".json"):
        values = json.loads(text)
    else:
        import tomllib

        values = tomllib.loads(text)
    if not isinstance(values, dict):
        raise ValueError(f"expected a table of options (a JSON object), got a "
                         f"{type(values).__name__}")
    return {k.replace("-", "_"): v for k, v in values.items()}


def _typed_config(values: dict, actions: dict[str, argparse.Action]) -> dict:
    """The file's values checked as the command line checks its flags: through each option's
    ``type`` and ``choices`` (a file's ``epochs = 1.5`` must not reach the training loop);
    switches take true or false."""
    typed = {}
    for key, value in values.items():
        action = actions[key]
        if action.nargs == 0 or isinstance(action, argparse.BooleanOptionalAction):
            if not isinstance(value, bool):
                raise ValueError(f"{key} takes true or false, got {value!r}")
        elif value is not None and action.type is not None:
            if isinstance(value, bool) or (action.type is int and isinstance(value, float)):
                raise ValueError(f"{key}: invalid {action.type.__name__} value {value!r}")
            try:
                value = action.type(value)
            except (TypeError, ValueError):
                raise ValueError(f"{key}: invalid {action.type.__name__} value "
                                 f"{value!r}") from None
        if action.choices is not None and value not in action.choices:
            raise ValueError(f"{key}: {value!r} is not one of {list(action.choices)}")
        typed[key] = value
    return typed


def _check_device(device: str) -> None:
    import torch

    if str(device).startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"--device {device}, but this PyTorch sees no CUDA device "
                         f"(torch {torch.__version__})")


def _log_to_stderr() -> None:
    """graphpe's info messages (cache hits and writes) as ``graphpe: ...`` lines on stderr."""
    import logging

    log = logging.getLogger("graphpe")
    log.setLevel(logging.INFO)
    for handler in [h for h in log.handlers if getattr(h, "_graphpe_cli", False)]:
        log.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("graphpe: %(message)s"))
    handler._graphpe_cli = True
    log.addHandler(handler)
    log.propagate = False


def add_demo_arguments(p: argparse.ArgumentParser) -> None:
    """``graphpe demo``: epochs, seed and progress bars of the demo runs."""
    p.add_argument("--epochs", type=int, default=100, help="training epochs per PE")
    p.add_argument("--seed", type=int, default=0, help="seed of data, split and model")
    p.add_argument("--progress", action="store_true", help="show progress bars")


def run_demo(args: argparse.Namespace) -> list[dict]:
    """``graphpe demo``: :func:`graphpe.demo.demo`."""
    from graphpe.demo import demo

    return demo(args.epochs, args.seed, args.progress)


def run_precompute(args: argparse.Namespace) -> None:
    """``graphpe precompute``: the dataset's three splits encoded into ``--cache-dir``."""
    from graphpe.datasets import load_dataset
    from graphpe.encodings import resolve_pe, transforms_of
    from graphpe.transforms import precompute

    if args.cache_dir is None:
        raise ValueError("precompute writes a cache: give --cache-dir")
    specs = resolve_pe(args.pe)
    if not specs:
        raise ValueError("nothing to precompute: give --pe")
    transforms = transforms_of(specs)
    if not transforms:
        raise ValueError(f"nothing to precompute: {args.pe} is learned inside the model")
    bundle = load_dataset(args.dataset, args.root, download=args.download)
    start = time.perf_counter()
    for split in ("train", "val", "test"):
        precompute(getattr(bundle, split), transforms,
                   cache_dir=args.cache_dir)
    print(f"encoded {args.dataset} with {args.pe} in {time.perf_counter() - start:.2f} s; "
          f"cache in {args.cache_dir}")


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
    p_train.add_argument("--model", choices=["gine", "gps", "grit", "gcn", "gin", "gatedgcn",
                                             "graphormer", "sgformer", "polynormer"],
                         default="gine",
                         help="GINE stack, GPS (GINE + multi-head attention), GRIT (attention "
                              "over pair features, e.g. --pe rrwp), GCN, GIN, GatedGCN "
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


def _add_fit_args(p_train: argparse.ArgumentParser) -> None:
    """``graphpe train``: epochs, batches, AdamW, the readout (``--pool``,
    ``--graph-token``), warm-up, early stopping and the seed."""
    p_train.add_argument("--epochs", type=int, default=100, help="most training epochs")
    p_train.add_argument("--batch-size", type=int, default=64, help="graphs per batch")
    p_train.add_argument("--lr", type=float, default=1e-3, help="AdamW learning rate")
    p_train.add_argument("--weight-decay", type=float, default=1e-5, help="AdamW weight decay")
    p_train.add_argument("--pool", choices=["sum", "mean", "max", "token"], default=None,
                         help="graph pooling (graph-level tasks; default sum, graphormer: "
                              "token); token: the final state of the graph token "
                              "(--graph-token)")
    p_train.add_argument("--graph-token", action=argparse.BooleanOptionalAction, default=False,
                         help="gps: add Graphormer's graph token to every graph (attends to "
                              "and from every node, with a learned bias per head); read it "
                              "out with --pool token")
    p_train.add_argument("--warmup", type=int, default=5,
                         help="epochs of linear learning-rate warm-up before cosine decay")
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

    _check_device(args.device)
    if args.retain_memory and str(args.device) == "cpu":
        retain_freed_host_memory()
    bundle = load_dataset(args.dataset, args.root, seed=args.seed, download=args.download)
    bundle.model_kwargs()  # a dataset graphpe cannot train (PCQM-Contact, ...) stops here
    config = _train_config(args)
    record = run(bundle, args.pe, model=args.model, channels=args.channels,
                 layers=args.layers, config=config, **_model_options(args))
    summary = {k: record[k] for k in ("dataset", "model", "pe", "metric", "val", "test",
                                      "best_epoch", "params", "pe_seconds",
                                      "seconds_per_epoch", "world_size")}
    if int(os.environ.get("RANK", "0")) == 0:  # under torchrun: one report
        print(json.dumps(summary, indent=2))


def _train_config(args: argparse.Namespace) -> TrainConfig:
    """The :class:`graphpe.train.TrainConfig` of ``graphpe train``'s flags."""
    from graphpe.train import TrainConfig

    return TrainConfig(epochs=args.epochs, batch_size=args.batch_size, lr=args.lr,
                       weight_decay=args.weight_decay, warmup_epochs=args.warmup,
                       patience=args.patience, seed=args.seed,
                       device=args.device, checkpoint=args.checkpoint,
                       results=args.results, compile=args.compile,
                       static_shapes=args.static_shapes, num_workers=args.num_workers,
                       cache_dir=args.cache_dir, resume=args.resume,
                       precision=args.precision)


def _model_options(args: argparse.Namespace) -> dict:
    """The model's keyword arguments beyond model, channels and layers, from the flags; a flag
    the chosen model does not take is an error."""
    extra = {"dropout": args.dropout}
    if args.pool is not None:
        extra["pool"] = args.pool
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


def _parse_with_config_file(parser: argparse.ArgumentParser, argv: list[str] | None,
                            path: str) -> argparse.Namespace:
    """``graphpe train --config path``: the file's values become the defaults of train's
    flags (checked as the flags are), then the command line is parsed again, so that flags
    given there override the file. A bad file exits with code 2."""
    train_parser = command_parser(parser, "train")
    try:
        values = _load_config(path)
    except (OSError, ValueError) as err:
        parser.exit(2, f"graphpe: error: --config {path}: {err}\n")
    actions = {a.dest: a for a in train_parser._actions}
    unknown = sorted(set(values) - set(actions))
    if unknown:
        parser.exit(2, f"graphpe: error: --config {path}: unknown option(s) "
                       f"{unknown}\n")
    try:
        values = _typed_config(values, actions)
    except ValueError as err:
        parser.exit(2, f"graphpe: error: --config {path}: {err}\n")
    train_parser.set_defaults(**values)
    return parser.parse_args(argv)


def add_evaluate_arguments(p: argparse.ArgumentParser) -> None:
    """``graphpe evaluate``: a checkpoint scored on a split of a dataset."""
    from graphpe.datasets import DATASET_HELP
    p.add_argument("--checkpoint", required=True, help="file written by train")
    p.add_argument("--dataset", required=True, help=DATASET_HELP)
    p.add_argument("--root", required=True, help="folder holding the dataset's files")
    p.add_argument("--split", choices=["train", "val", "test"], default="test")
    p.add_argument("--seed", type=int, default=None,
                   help="seed of the split (TU, CSL, EXP); default: the training run's")
    p.add_argument("--precision", choices=("fp32", "bf16", "fp16"), default=None,
                   help="precision of the forward; default: the training run's")
    p.add_argument("--device", default="cpu")
    p.add_argument("--download", action="store_true")


def run_evaluate(args: argparse.Namespace) -> None:
    """``graphpe evaluate``: the metric of a checkpoint's model on a split, its PEs recomputed
    from the specs the checkpoint carries."""
    import torch
    from torch_geometric.loader import DataLoader

    from graphpe.datasets import load_dataset
    from graphpe.encode import encode_bundle
    from graphpe.encodings import resolve_pe, transforms_of
    from graphpe.nn.build import load_model
    from graphpe.train import evaluate

    _check_device(args.device)
    model = load_model(args.checkpoint).to(args.device)
    ckpt = torch.load(args.checkpoint, map_location="cpu", weights_only=True)
    record = ckpt.get("record", {})
    trained = record.get("config", {})  # the run's TrainConfig: its split seed and precision
    seed = trained.get("seed", 0) if args.seed is None else args.seed
    precision = trained.get("precision", "fp32") if args.precision is None else args.precision
    bundle = load_dataset(args.dataset, args.root, seed=seed, download=args.download)
    # the dataset must be one the model was built for (task, outputs, input features)
    model_config = ckpt.get("model_config") or {}
    differ = {k: (model_config[k], v) for k, v in bundle.model_kwargs().items()
              if k in model_config and _plain(model_config[k]) != _plain(v)}
    if differ:
        detail = ", ".join(f"{k} {a!r} (model) vs {b!r} ({args.dataset})"
                           for k, (a, b) in differ.items())
        raise ValueError(f"{args.checkpoint} was not trained for {args.dataset}: {detail}")
    specs = resolve_pe(record.get("pe", []))
    encoded, _ = encode_bundle(bundle, transforms_of(specs))
    loader = DataLoader(getattr(encoded, args.split), batch_size=256)
    value = evaluate(model, loader, encoded, args.device, args.split, precision=precision)
    print(json.dumps({"dataset": args.dataset, "split": args.split, "metric": bundle.metric,
                      "value": value, "checkpoint": args.checkpoint,
                      "trained_test": record.get("test")}, indent=2))


def _plain(value):
    """Lists and tuples compared alike (a checkpoint's config has been through storage)."""
    return list(value) if isinstance(value, (list, tuple)) else value


def add_warmup_arguments(p: argparse.ArgumentParser) -> None:
    """``graphpe warmup``: the kernels to compile ahead of use."""
    p.add_argument("--pe", default=None,
                   help="the PEs whose kernels to compile, as train's --pe (e.g. "
                        "'lap,rwse:walk_length=20'; settings do not change the kernels); "
                        "default: all")
    p.add_argument("--no-models", action="store_true",
                   help="skip the models' kernels (fused GPS layer, GINE, attention)")
    p.add_argument("--processes", type=int, default=None,
                   help="processes compiling side by side (default: one per kernel "
                        "family, up to the CPU count)")


def run_warmup(args: argparse.Namespace) -> None:
    """``graphpe warmup``: compiles the kernels; prints the seconds per kernel family."""
    from graphpe.encodings import parse_pe
    from graphpe.warmup import cache_location, warm_up

    # the --pe of `graphpe train` works here too: the kernels depend on the names only
    pes = None if args.pe is None else [item["name"] for item in parse_pe(args.pe)]
    start = time.perf_counter()
    seconds = warm_up(pes, models=not args.no_models, processes=args.processes)
    for family, s in seconds.items():
        print(f"  {family:<10} {s:6.1f} s")
    print(f"compiled in {time.perf_counter() - start:.1f} s; numba's cache: "
          f"{cache_location()}")


def add_encodings_arguments(p: argparse.ArgumentParser) -> None:
    """``graphpe encodings``: the registered encodings, or the docs table written."""
    p.add_argument("--write-docs", metavar="PATH", default=None,
                   help="rewrite the generated table of encodings in this markdown file "
                        "(docs/encodings.md) instead of printing the list")


def run_encodings(args: argparse.Namespace) -> None:
    """``graphpe encodings``: lists the encodings with their settings, or with
    ``--write-docs`` rewrites the table of the docs."""
    from graphpe.encodings import encodings
    from graphpe.encodings.registry import settings_text, write_docs_table

    if args.write_docs is not None:
        write_docs_table(args.write_docs)
        print(f"wrote the table of {len(encodings())} encodings into {args.write_docs}")
        return
    for name, cls in encodings().items():
        learned = ", learned in the model" if cls.family == "models" else ""
        print(f"{name} ({cls.kind}{learned}): {cls.summary}\n    "
              f"{settings_text(cls) or 'no settings'}\n    {cls.paper}")


def add_pretrain_gpse_arguments(p: argparse.ArgumentParser) -> None:
    """``graphpe pretrain-gpse``: GPSE pretrained on a dataset's graphs (the paper's setup,
    overridden by a config file and the flags)."""
    from graphpe.datasets import DATASET_HELP
    p.add_argument("--dataset", required=True, help=DATASET_HELP)
    p.add_argument("--root", required=True, help="folder holding the dataset's files")
    p.add_argument("--out", required=True, help="checkpoint written (the best epoch's model)")
    p.add_argument("--config", default=None,
                   help="TOML/JSON file of graphpe.pretrain.PretrainConfig fields (e.g. "
                        "configs/pretrain/gpse.toml); default: the paper's setup")
    p.add_argument("--epochs", type=int, default=None, help="override the config's epochs")
    p.add_argument("--batch-size", type=int, default=None, help="override: graphs per batch")
    p.add_argument("--lr", type=float, default=None, help="override: the learning rate")
    p.add_argument("--seed", type=int, default=None, help="override: the seed")
    p.add_argument("--device", default=None, help="override: cpu, cuda or cuda:N")
    p.add_argument("--max-graphs", type=int, default=None,
                   help="train on the first N training graphs only (and N / 10 for val)")
    p.add_argument("--cache-dir", default=None, help="precompute's cache of the targets")
    p.add_argument("--download", action="store_true",
                   help="let the dataset's loader download missing files")
    p.add_argument("--progress", action="store_true", help="print the loss of every epoch")


def run_pretrain_gpse(args: argparse.Namespace) -> dict:
    """``graphpe pretrain-gpse``: the config (file, then flags), the dataset's train and val
    splits, :func:`graphpe.pretrain.pretrain_gpse`; prints a summary."""
    import dataclasses

    from graphpe.datasets import load_dataset
    from graphpe.ops.checks import check_positive_int
    from graphpe.pretrain import PretrainConfig, pretrain_gpse

    values = {} if args.config is None else _load_config(args.config)
    known = {f.name for f in dataclasses.fields(PretrainConfig)}
    if set(values) - known:
        raise ValueError(f"--config {args.config}: unknown option(s) "
                         f"{sorted(set(values) - known)}; allowed: {sorted(known)}")
    for name in ("epochs", "batch_size", "lr", "seed", "device"):
        if getattr(args, name) is not None:
            values[name] = getattr(args, name)
    config = PretrainConfig(**values)
    _check_device(config.device)
    bundle = load_dataset(args.dataset, args.root, seed=config.seed, download=args.download)
    train, val = bundle.train, bundle.val
    if args.max_graphs is not None:
        n = check_positive_int("--max-graphs", args.max_graphs)
        train, val = train[:n], val[:max(1, n // 10)]
    record = pretrain_gpse(train, val, config, out=args.out, progress=args.progress,
                           cache_dir=args.cache_dir)
    summary = {"dataset": args.dataset, "checkpoint": args.out, "train_graphs": len(train),
               "best_epoch": record["best_epoch"], "val_loss": record["val_loss"],
               "target_seconds": record["target_seconds"],
               "train_seconds": record["train_seconds"]}
    print(json.dumps(summary, indent=2))
    return record


def add_bench_arguments(p: argparse.ArgumentParser) -> None:
    """``graphpe bench``: a script of benchmarks/ and its own arguments."""
    p.add_argument("name", help="benchmark name, e.g. precompute, curvature, rfp")
    p.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the script")


def run_bench(args: argparse.Namespace) -> None:
    """``graphpe bench NAME ARGS``: runs ``benchmarks/NAME.py`` with ``ARGS`` in this
    process."""
    if not BENCHMARKS.is_dir():
        raise SystemExit(f"{BENCHMARKS} not found: `graphpe bench` runs the scripts of a source "
                         "checkout (pip install -e .)")
    script = BENCHMARKS / f"{args.name}.py"
    if not script.exists():
        available = sorted(p.stem for p in BENCHMARKS.glob("*.py") if p.stem != "common")
        raise SystemExit(f"no benchmark {args.name!r}; available: {', '.join(available)}")
    sys.argv = [str(script), *args.args]
    runpy.run_path(str(script), run_name="__main__")


# graphpe's commands, in the order of graphpe --help
COMMANDS: dict[str, Command] = {
    "demo": Command("GINE with and without each PE on CSL generated in code (no download); "
                    "prints a table", add_demo_arguments, run_demo),
    "precompute": Command("encode a dataset's splits into --cache-dir", add_data_arguments,
                          run_precompute, logs=True),
    "train": Command("train a model with the given PEs", add_train_arguments, run_train,
                     logs=True),
    "evaluate": Command("evaluate a checkpoint written by train --checkpoint",
                        add_evaluate_arguments, run_evaluate, logs=True),
    "warmup": Command("compile the CPU kernels into numba's on-disk cache ahead of use (e.g. "
                      "while building a container image)", add_warmup_arguments, run_warmup),
    "encodings": Command("list the encodings --pe takes, with their settings and defaults",
                         add_encodings_arguments, run_encodings),
    "pretrain-gpse": Command("pretrain GPSE on a dataset's graphs, with graphpe's encodings as "
                             "targets; the checkpoint is what --pe gpse:checkpoint=PATH reads",
                             add_pretrain_gpse_arguments, run_pretrain_gpse, logs=True),
    "bench": Command("run a benchmark script from benchmarks/", add_bench_arguments, run_bench,
                     list_defaults=False),
}


def build_parser() -> argparse.ArgumentParser:
    """The ``graphpe`` parser, one sub-command parser per entry of :data:`COMMANDS`
    (``graphpe <command> --help`` lists each one's flags and, but for bench's, their
    defaults)."""
    from graphpe import __version__

    parser = argparse.ArgumentParser(prog="graphpe", description="Positional and structural "
                                     "encodings for graph neural networks.")
    parser.add_argument("--version", action="version", version=f"graphpe {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, command in COMMANDS.items():
        options = {"formatter_class": argparse.ArgumentDefaultsHelpFormatter} \
            if command.list_defaults else {}
        command.add_arguments(sub.add_parser(name, help=command.help, **options))
    return parser


def command_parser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    """The parser of the sub-command ``name`` in ``parser`` (one :func:`build_parser` made)."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[name]


def main(argv: list[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "train" and args.config:
        args = _parse_with_config_file(parser, argv, args.config)
    command = COMMANDS[args.command]
    if command.logs:
        _log_to_stderr()
    try:
        command.run(args)
    except (ValueError, FileNotFoundError, ImportError, ConnectionError) as err:
        # a wrong input (or a download that cannot reach its server) is one clear line and
        # exit code 2, not a traceback
        parser.exit(2, f"graphpe: error: {err}\n")


if __name__ == "__main__":
    main()
