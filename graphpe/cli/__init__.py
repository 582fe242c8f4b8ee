"""The ``graphpe`` command line: ``demo``, ``precompute``, ``encode``, ``train``, ``compare``,
``evaluate``, ``warmup``, ``encodings``, ``pretrain-gpse``, ``bench``.

Each command is one entry of :data:`COMMANDS`: its help line, the function that adds its
arguments to its parser (``add_<command>_arguments``) and the function that runs it on the
parsed arguments (``run_<command>``); :func:`build_parser` and :func:`main` read the table."""

from __future__ import annotations

import argparse
import json
import logging
import runpy
import signal
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from graphpe.cli.encode import add_encode_arguments, run_encode
from graphpe.cli.options import add_data_arguments, check_device, load_config, typed_config
from graphpe.cli.train import (
    add_compare_arguments,
    add_train_arguments,
    run_compare,
    run_train,
)

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@dataclass(frozen=True)
class Command:
    """One sub-command of ``graphpe``: its line in ``graphpe --help``, the function adding its
    arguments to its parser, the function running it, and how it reports."""

    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], object]
    list_defaults: bool = True  # its --help lists each flag's default
    logs: bool = False  # graphpe's info messages (cache hits and writes) go to stderr


class PrefixFormatter(logging.Formatter):
    """``graphpe: <message>``, once: a message that names graphpe itself (for Python users,
    whose logging prints the bare message) is not prefixed again."""

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        return text if text.startswith("graphpe: ") else f"graphpe: {text}"


def _log_to_stderr() -> None:
    """graphpe's info messages (cache hits and writes) as ``graphpe: ...`` lines on stderr."""
    log = logging.getLogger("graphpe")
    log.setLevel(logging.INFO)
    for handler in [h for h in log.handlers if getattr(h, "_graphpe_cli", False)]:
        log.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(PrefixFormatter())
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


def _parse_with_config_file(parser: argparse.ArgumentParser, argv: list[str] | None,
                            path: str, command: str = "train") -> argparse.Namespace:
    """``graphpe train --config path``: the file's values become the defaults of train's
    flags (checked as the flags are), then the command line is parsed again, so that flags
    given there override the file. A bad file exits with code 2."""
    train_parser = command_parser(parser, command)
    try:
        values = load_config(path)
    except (OSError, ValueError) as err:
        parser.exit(2, f"graphpe: error: --config {path}: {err}\n")
    actions = {a.dest: a for a in train_parser._actions}
    unknown = sorted(set(values) - set(actions))
    if unknown:
        parser.exit(2, f"graphpe: error: --config {path}: unknown option(s) "
                       f"{unknown}\n")
    try:
        values = typed_config(values, actions)
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
    from torch_geometric.loader import DataLoader

    from graphpe.datasets import load_dataset
    from graphpe.encode import encode_bundle
    from graphpe.encodings import resolve_pe, transforms_of
    from graphpe.nn.build import load_model
    from graphpe.ops.files import load_torch_file
    from graphpe.train import evaluate

    check_device(args.device)
    model = load_model(args.checkpoint).to(args.device)
    ckpt = load_torch_file(args.checkpoint, "a graphpe checkpoint (train --checkpoint)")
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

    values = {} if args.config is None else load_config(args.config)
    known = {f.name for f in dataclasses.fields(PretrainConfig)}
    if set(values) - known:
        raise ValueError(f"--config {args.config}: unknown option(s) "
                         f"{sorted(set(values) - known)}; allowed: {sorted(known)}")
    for name in ("epochs", "batch_size", "lr", "seed", "device"):
        if getattr(args, name) is not None:
            values[name] = getattr(args, name)
    config = PretrainConfig(**values)
    check_device(config.device)
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
    "encode": Command("write the node encodings of one large graph to files (NAME.pt, "
                      "NAME.json)", add_encode_arguments, run_encode, logs=True),
    "train": Command("train a model with the given PEs", add_train_arguments, run_train,
                     logs=True),
    "compare": Command("which encoding for my graph? a grid of models x encodings over the "
                       "dataset's splits (or seeds), resumable, as a table and a plot",
                       add_compare_arguments, run_compare, logs=True),
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
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="also show third-party warnings graphpe hides by default "
                             "(torch.load's weights_only notices, read-only arrays)")
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


#: third-party warnings a user of the command line cannot act on (shown with -v): OGB's and
#: PyG's torch.load calls and the switch graphpe sets for them, and torch on read-only arrays
#: (memory-mapped files)
THIRD_PARTY_WARNINGS = (
    (r".*weights_only", Warning),
    (r"Environment variable TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", Warning),
    (r"The given NumPy array is not writable", UserWarning),
)


def quiet_third_party_warnings() -> None:
    """Hide :data:`THIRD_PARTY_WARNINGS` (graphpe's own warnings stay)."""
    for message, category in THIRD_PARTY_WARNINGS:
        warnings.filterwarnings("ignore", message=message, category=category)


def main(argv: list[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.verbose:
        quiet_third_party_warnings()
    if args.command in ("train", "compare") and args.config:
        args = _parse_with_config_file(parser, argv, args.config, args.command)
    command = COMMANDS[args.command]
    if command.logs:
        _log_to_stderr()
    if args.command in ("train", "compare"):  # a kill ends a run as Ctrl-C does
        signal.signal(signal.SIGTERM, _interrupt)
    try:
        command.run(args)
    except (ValueError, FileNotFoundError, ImportError, ConnectionError) as err:
        # a wrong input (or a download that cannot reach its server) is one clear line and
        # exit code 2, not a traceback
        parser.exit(2, f"graphpe: error: {err}\n")
    except KeyboardInterrupt:
        parser.exit(130, "graphpe: interrupted\n")


def _interrupt(signum: int, frame: object) -> None:
    """SIGTERM as Ctrl-C: a training run keeps what finished (see graphpe.train.fit)."""
    raise KeyboardInterrupt


if __name__ == "__main__":
    main()
