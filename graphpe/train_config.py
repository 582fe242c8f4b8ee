"""The settings of a training run, declared once: :class:`TrainConfig`'s fields, each with its
default, its help and how the command line spells it (:func:`train_setting`). ``graphpe
train``'s flags, the keys of its config files and the record's ``config`` all come from these
fields (:func:`cli_settings`); nothing else lists them. Light on purpose: the command line
builds its parser from it without importing torch."""

from __future__ import annotations

import argparse
import dataclasses
import math
from dataclasses import dataclass
from typing import Any

#: the optimizers (``torch.optim.AdamW``, ``torch.optim.Adam``: graphpe.train maps them)
OPTIMIZER_NAMES = ("adamw", "adam")
#: the learning rate's schedules (graphpe.train.make_schedule)
SCHEDULES = ("cosine", "plateau", "constant")
#: fp32, or mixed precision in bfloat16 / float16 (graphpe.runtime.PRECISIONS)
PRECISION_NAMES = ("fp32", "bf16", "fp16")


def fanouts(value: str | list[int] | tuple[int, ...]) -> tuple[int, ...]:
    """``--num-neighbors``: ``"15,10,5"`` (or a config file's list ``[15, 10, 5]``) as a
    tuple of ints."""
    parts = value.split(",") if isinstance(value, str) else list(value)
    try:
        if any(isinstance(p, (bool, float)) for p in parts):
            raise ValueError
        return tuple(int(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected ints like 15,10,5 (in-edges per node in each hop, -1 all), got "
            f"{value!r}") from None


def train_setting(default: Any, help: str | None = None, flag: str | None = None,
                  choices: tuple[str, ...] | None = None, parse: Any = None,
                  cli_default: Any = dataclasses.MISSING, shared_flag: bool = False) -> Any:
    """A :class:`TrainConfig` field: its ``default`` and, where ``help`` is given, its flag of
    ``graphpe train`` (``--<flag>``, default the field's name with ``-`` for ``_``; the
    config file's key is the flag's name), parsed by ``parse`` (default: from the field's
    type; a bool is a ``--x / --no-x`` switch) among ``choices``. ``cli_default``: the flag's
    default where it differs (``progress``: None, decided by the terminal).
    ``shared_flag``: the flag is declared with the dataset's flags, shared with other
    commands (``--cache-dir``)."""
    metadata = {"help": help, "flag": flag, "choices": choices, "parse": parse,
                "cli_default": cli_default, "shared_flag": shared_flag}
    if isinstance(default, (list, tuple)):
        return dataclasses.field(default_factory=lambda: type(default)(default),
                                 metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


@dataclass
class TrainConfig:
    """The settings of :func:`graphpe.train.fit` (each field's default and meaning beside it,
    the same text ``graphpe train --help`` shows); checked when created."""

    epochs: int = train_setting(100, "most training epochs")
    batch_size: int = train_setting(64, "graphs per batch (seed nodes with --num-neighbors)")
    lr: float = train_setting(1e-3, "learning rate")
    weight_decay: float = train_setting(1e-5, "weight decay")
    optimizer: str = train_setting(
        "adamw", "adamw (decoupled weight decay, as GraphGPS's adamW) or adam (the weight decay "
        "added to the gradient, as torch.optim.Adam in PyG's examples)",
        choices=OPTIMIZER_NAMES)
    schedule: str = train_setting(
        "cosine", "the learning rate's schedule: cosine (after --warmup epochs of linear "
        "warm-up, a cosine decay to 0 at the last epoch) or plateau (multiplied by "
        "--plateau-factor after --plateau-patience epochs without a better validation metric, "
        "not below --min-lr; torch's ReduceLROnPlateau, GraphGPS's reduce_on_plateau; no "
        "warm-up) or constant (after --warmup epochs of warm-up; Platonov et al.'s "
        "heterophilous baselines warm up for none)", choices=SCHEDULES)
    warmup_epochs: int = train_setting(
        5, "--schedule cosine or constant: epochs of linear learning-rate warm-up",
        flag="warmup")
    plateau_factor: float = train_setting(0.1, "--schedule plateau: the rate's factor on a "
                                               "plateau")
    plateau_patience: int = train_setting(10, "--schedule plateau: epochs without "
                                              "improvement before a cut")
    min_lr: float = train_setting(0.0, "--schedule plateau: the lowest learning rate")
    clip_norm: float = train_setting(5.0, "clip the gradients' total norm to this (0: no "
                                          "clipping)")
    patience: int = train_setting(30, "stop after this many epochs without validation "
                                      "improvement")
    seed: int = train_setting(0, "seed of split, model and draws")
    device: str = train_setting("cpu", "cpu, cuda or cuda:N")
    progress: bool = train_setting(
        True, "progress bars: the epochs, and the batches inside each (default: where stderr "
        "is a terminal; without one, an epoch line at most every 30 s)", cli_default=None)
    checkpoint: str | None = train_setting(
        None, "best model with its config (graphpe.nn.build.load_model reads it); the state "
        "to resume from is kept beside it as <file>.state")
    results: str | None = train_setting(
        None, "JSON record: metrics, curve, PE specs, model and train config, versions")
    resample_pe: bool = train_setting(True)  # fresh random PE draws (random features, signs)
    compile: bool = train_setting(
        False, "run the model through torch.compile (ignored where unsupported)")
    # GPS only: train on fixed-shape batches (graphpe.nn.static): one shape for the whole run,
    # so with compile the step is one graph (on CUDA, CUDA graphs: mode='reduce-overhead')
    static_shapes: bool = train_setting(
        False, "gps only: train on fixed-shape batches (every graph padded to the largest, one "
        "shape for the run); with --compile on CUDA the step runs as CUDA graphs")
    shuffle: bool = train_setting(True)  # shuffle the training graphs every epoch
    # under torchrun: BatchNorm statistics over all processes
    sync_batchnorm: bool = train_setting(False)
    resume: str | None = train_setting(None, "continue a run from its <checkpoint>.state file")
    cache_dir: str | None = train_setting(
        None, "precompute's cache of the encoded splits: written once, reused by precompute "
        "and train while data and settings are unchanged", shared_flag=True)
    num_workers: int = train_setting(
        0, "DataLoader worker processes preparing the training batches (collation, static "
        "padding) while the step runs; on a GPU they prepare the next batches while the "
        "step runs")
    precision: str = train_setting(
        "fp32", "bf16/fp16: mixed precision (the forward under torch.autocast; parameters, "
        "optimizer and PEs stay float32; fp16 scales the loss). Pays on GPUs; on CPUs only "
        "with bfloat16 hardware", choices=PRECISION_NAMES)
    num_neighbors: tuple[int, ...] = train_setting(
        (), "node-level tasks on one graph: train on mini-batches of --batch-size seed nodes "
        "and their sampled in-neighbourhoods, e.g. 15,10,5 (in-edges per node in each hop, -1 "
        "all; PyG's NeighborLoader with graphpe's sampler); val/test the same way. Default: "
        "the whole graph in one batch", parse=fanouts)
    subgraph_pe: bool = train_setting(
        False, "with --num-neighbors: compute the encodings of each sampled subgraph in the "
        "loader, on the subgraph's own edges, instead of the whole graph's once, cut to each "
        "batch's nodes (the default)")
    class_weights: bool = train_setting(
        False, "classification: weigh each class by its rarity in the batch, (n - n_c) / n "
        "(GraphGPS's weighted cross-entropy, for PATTERN, CLUSTER, PascalVOC-SP and COCO-SP)")
    undirected: bool = train_setting(
        False, "node-level datasets on one graph: add each edge's reverse before encoding and "
        "training (OGB's baselines on ogbn-arxiv, whose citations are directed); the record's "
        "graph entry says what the model saw")

    def __post_init__(self) -> None:
        for name, allowed in (("precision", PRECISION_NAMES), ("optimizer", OPTIMIZER_NAMES),
                              ("schedule", SCHEDULES)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got "
                                 f"{getattr(self, name)!r}")
        for name, low in (("epochs", 1), ("batch_size", 1), ("patience", 0),
                          ("warmup_epochs", 0), ("plateau_patience", 0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
        if not (isinstance(self.plateau_factor, (int, float)) and 0 < self.plateau_factor < 1):
            raise ValueError(f"plateau_factor must be in (0, 1), got {self.plateau_factor!r}")
        for name in ("lr", "weight_decay", "min_lr", "clip_norm"):
            # (lr 0: a frozen model, for checks)
            value = getattr(self, name)
            number = not isinstance(value, bool) and isinstance(value, (int, float))
            if not (number and math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        self.num_neighbors = tuple(self.num_neighbors)
        if any(isinstance(k, bool) or not isinstance(k, int) or k == 0 or k < -1
               for k in self.num_neighbors):
            raise ValueError("num_neighbors must be ints >= 1 or -1 (all), got "
                             f"{self.num_neighbors!r}")
        if self.subgraph_pe and not self.num_neighbors:
            raise ValueError("subgraph_pe encodes each sampled subgraph: it needs "
                             "num_neighbors (sampled mini-batches)")


@dataclass(frozen=True)
class CliSetting:
    """How ``graphpe train`` spells one :class:`TrainConfig` field."""

    field: str  # the TrainConfig field
    flag: str  # --<flag>; the config file's key and the argparse dest (with _ for -)
    help: str
    default: Any
    choices: tuple[str, ...] | None
    parse: Any  # argparse's type (None: a string; a bool field is a switch)
    switch: bool
    shared_flag: bool

    @property
    def dest(self) -> str:
        return self.flag.replace("-", "_")


def cli_settings() -> list[CliSetting]:
    """The fields of :class:`TrainConfig` that ``graphpe train`` takes, in declaration order."""
    out = []
    for f in dataclasses.fields(TrainConfig):
        meta = f.metadata
        if not meta.get("help"):
            continue
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        cli_default = meta["cli_default"]
        kind = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
        switch = kind == "bool"
        parse = meta["parse"] or {"int": int, "float": float}.get(kind)
        out.append(CliSetting(
            f.name, meta["flag"] or f.name.replace("_", "-"), meta["help"],
            default if cli_default is dataclasses.MISSING else cli_default, meta["choices"],
            parse, switch, meta["shared_flag"]))
    return out


def add_config_flags(parser: argparse.ArgumentParser, shared: bool = False) -> None:
    """``parser`` gets a flag for each of :func:`cli_settings` (with ``shared``, only the
    flags shared with other commands; without, all others)."""
    for s in cli_settings():
        if s.shared_flag != shared:
            continue
        if s.switch:
            parser.add_argument(f"--{s.flag}", dest=s.dest, default=s.default, help=s.help,
                                action=argparse.BooleanOptionalAction)
        else:
            parser.add_argument(f"--{s.flag}", dest=s.dest, default=s.default, help=s.help,
                                type=s.parse, choices=s.choices)


def config_from_args(args: argparse.Namespace, **overrides: Any) -> TrainConfig:
    """The :class:`TrainConfig` of parsed flags (:func:`add_config_flags`); ``overrides``
    set fields directly (``progress`` decided by the terminal)."""
    values = {s.field: getattr(args, s.dest) for s in cli_settings()}
    return TrainConfig(**{**values, **overrides})
