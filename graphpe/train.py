"""The training and evaluation loop used by the command line and the benchmark scripts.

One readable loop for graph regression and classification (single- and multi-label) and node
classification (single- and multi-label; one graph, split by node masks): seeds,
AdamW with linear warm-up and cosine decay, early stopping on the validation metric, the
official metrics (OGB's ``Evaluator`` for ogbg-* and ogbn-*, MAE for ZINC, accuracy for
CSL/EXP/TU), progress bars, a JSON record and the best checkpoint.

The pieces around the loop: :mod:`graphpe.encode` (the run's encodings),
:mod:`graphpe.records` (the record, checkpoints and the training state to resume from) and
:mod:`graphpe.runtime` (processes under torchrun, precision, ``torch.compile``).
"""

from __future__ import annotations

import copy
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.data import Batch
from torch_geometric.loader import DataLoader
from torch_geometric.transforms import Compose
from tqdm.auto import tqdm

from graphpe.datasets import DatasetBundle
from graphpe.datasets.bundle import graph_summary, undirected_bundle
from graphpe.encode import encode_bundle, encoding_bytes_per_node, redraw_random_pes
from graphpe.encodings import pair_model_config, pe_model_config, resolve_pe, transforms_of
from graphpe.evaluation import evaluate as evaluate  # (graphpe.cli's and users' import)
from graphpe.evaluation import node_mask, predicted_classes, predictions, score
from graphpe.nn.build import MODELS, build_model, model_names
from graphpe.ops.checks import check_non_negative_int
from graphpe.ops.progress import duration_text
from graphpe.records import (
    Progress,
    restore_training_state,
    run_record,
    save_training_state,
    training_state,
    training_state_path,
    write_run_files,
)
from graphpe.records import versions as versions  # (graphpe.pretrain's import)
from graphpe.run_log import (
    LOG,
    EpochLines,
    batch_bar,
    batch_count,
    interrupted_message,
    logged_batches,
)
from graphpe.runtime import (
    autocast,
    distribute,
    distributed_setup,
    maybe_compile,
    shard,
    sum_over_processes,
)
from graphpe.train_config import TrainConfig

OPTIMIZERS = {"adamw": torch.optim.AdamW, "adam": torch.optim.Adam}
Schedule = torch.optim.lr_scheduler.LambdaLR | torch.optim.lr_scheduler.ReduceLROnPlateau


def _train_loader(graphs: Any, config: TrainConfig, rank: int, world: int,
                  shapes: dict[str, int] | None = None,
                  subgraph_transform: Callable[[Any], Any] | None = None) -> Any:
    """The training batches: PyG ``Batch`` objects, or with ``shapes`` (static shapes)
    :class:`~graphpe.nn.static.StaticBatch` objects padded by the loader
    (:class:`~graphpe.nn.static.StaticCollate`), in ``config.num_workers`` worker processes
    (pinned for asynchronous copies to a GPU)."""
    check_non_negative_int("num_workers", config.num_workers)
    if config.num_neighbors:
        return _node_loader(graphs, config, "train", rank, world, subgraph_transform)
    sampler = None
    if world > 1:
        from torch.utils.data.distributed import DistributedSampler

        sampler = DistributedSampler(graphs, num_replicas=world, rank=rank,
                                     shuffle=config.shuffle, seed=config.seed)
    options = {"batch_size": config.batch_size, "num_workers": config.num_workers,
               "shuffle": config.shuffle if sampler is None else None, "sampler": sampler,
               "pin_memory": config.num_workers > 0 and str(config.device).startswith("cuda")}
    if shapes is None:
        return DataLoader(graphs, **options)
    from graphpe.nn.static import StaticCollate

    return torch.utils.data.DataLoader(graphs, collate_fn=StaticCollate(**shapes), **options)


def _node_loader(graphs: Any, config: TrainConfig, split: str, rank: int = 0,
                 world: int = 1, subgraph_transform: Callable[[Any], Any] | None = None) -> Any:
    """Sampled mini-batches of the one graph of ``graphs`` (``config.num_neighbors``): the
    nodes of ``split`` as seeds, ``config.batch_size`` per training batch (this process's
    share of them under torchrun), in a fresh order and sample every epoch; for val/test
    batches of at least 1,024 seeds with a sample fixed by ``config.seed``. With
    ``subgraph_transform`` (``config.subgraph_pe``), each batch's encodings computed on it."""
    from graphpe.sampling import neighbor_loader

    graph = graphs[0]
    seeds = graph[f"{split}_mask"].nonzero().view(-1)[rank::world]
    training = split == "train"
    return neighbor_loader(
        graph, config.num_neighbors, input_nodes=seeds,
        batch_size=config.batch_size if training else max(config.batch_size, 1024),
        shuffle=training and config.shuffle, seed=None if training else config.seed,
        num_workers=config.num_workers, transform=subgraph_transform,
        pin_memory=config.num_workers > 0 and str(config.device).startswith("cuda"))


def make_optimizer(model: nn.Module, lr: float, weight_decay: float,
                   kind: str = "adamw") -> torch.optim.Optimizer:
    """``OPTIMIZERS[kind]`` (AdamW or Adam) over the trainable parameters, fused into one
    kernel per step where PyTorch has it for the parameters' device (the same update as the
    per-parameter loop, in a fraction of the calls)."""
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = OPTIMIZERS[kind]
    try:
        return optimizer(params, lr=lr, weight_decay=weight_decay, fused=True)
    except (RuntimeError, ValueError):
        return optimizer(params, lr=lr, weight_decay=weight_decay)


def make_schedule(opt: torch.optim.Optimizer, config: TrainConfig,
                  higher_is_better: bool) -> Schedule:
    """``config.schedule``'s learning-rate schedule on ``opt``, stepped once per epoch after
    validation by :func:`step_schedule`: ``cosine`` (:func:`lr_lambda` over
    ``config.epochs``) or ``plateau`` (torch's ``ReduceLROnPlateau`` on the validation metric,
    maximized where ``higher_is_better``)."""
    if config.schedule == "plateau":
        return torch.optim.lr_scheduler.ReduceLROnPlateau(
            opt, mode="max" if higher_is_better else "min", factor=config.plateau_factor,
            patience=config.plateau_patience, min_lr=config.min_lr)
    if config.schedule == "constant":
        return torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda(config.warmup_epochs, None))
    return torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda(config.warmup_epochs, config.epochs))


def step_schedule(sched: Schedule, val: float) -> None:
    """The schedule's step at the end of an epoch whose validation metric is ``val``."""
    if isinstance(sched, torch.optim.lr_scheduler.ReduceLROnPlateau):
        sched.step(val)
    else:
        sched.step()


def seed_everything(seed: int) -> None:
    """Seeds Python's, NumPy's and PyTorch's random generators with ``seed``."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def lr_lambda(warmup: int, total: int | None):
    """Linear warm-up over ``warmup`` epochs, then cosine decay to 0 at ``total``: the factor
    of the base learning rate in epoch ``e`` is ``(e + 1) / warmup`` while ``e < warmup``, then
    ``(1 + cos(pi * min(1, (e - warmup) / max(1, total - warmup)))) / 2``; with ``total``
    None, 1 after the warm-up (a constant rate)."""

    def factor(epoch: int) -> float:
        if epoch < warmup:
            return (epoch + 1) / warmup
        if total is None:
            return 1.0
        progress = (epoch - warmup) / max(1, total - warmup)
        return 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))

    return factor


def loss_fn(task: str, out: torch.Tensor, y: torch.Tensor,
            class_weights: bool = False) -> torch.Tensor:
    """The training loss of ``task``: L1 (mean absolute error) for graph regression, binary
    cross-entropy on the logits of the labelled entries for multi-label classification, and
    cross-entropy otherwise. With ``class_weights`` (classification), class ``c`` is
    weighted by ``(n - n_c) / n`` over the ``n`` labels of the batch, ``n_c`` of them ``c``
    (GraphGPS's ``weighted_cross_entropy``, for PATTERN, CLUSTER and LRGB's superpixel
    sets): the rarer a class in the batch, the more its errors count."""
    if task == "graph_regression":
        return F.l1_loss(out.view(-1), y.view(-1).float()) if out.size(-1) == 1 \
            else F.l1_loss(out, y.float())
    if task.endswith("_multilabel"):  # graph_multilabel, node_multilabel
        y = y.view(out.shape).float()
        labelled = ~torch.isnan(y)  # OGB marks missing labels with NaN
        return F.binary_cross_entropy_with_logits(out[labelled], y[labelled])
    y = y.view(-1).long()
    if not class_weights:
        return F.cross_entropy(out, y)
    counts = torch.bincount(y, minlength=out.size(-1)).to(out.dtype)
    weight = (y.numel() - counts) / y.numel()
    # the weighted mean; a batch of one class weighs nothing, its loss is 0 (not 0 / 0)
    total = F.cross_entropy(out, y, weight=weight, reduction="sum")
    return total / weight[y].sum().clamp_min(torch.finfo(out.dtype).tiny)


@dataclass
class _Setup:
    """What :func:`fit` trains with (built by :func:`_set_up`)."""

    model: nn.Module  # the model whose weights are trained, saved and returned
    forward: Callable[[Any], torch.Tensor]  # the training step's forward (see _set_up)
    evaluator: Callable[[Any], torch.Tensor]  # the validation forward (see _set_up)
    opt: torch.optim.Optimizer
    sched: Schedule
    scaler: torch.amp.GradScaler
    train_loader: Any
    val_loader: DataLoader
    test_loader: DataLoader
    shapes: dict[str, int] | None  # static_shapes: the padded batch shape of the whole run
    rank: int
    world: int
    device: str
    shard_eval: bool  # each process scores a shard of val/test and the metrics are gathered


def fit(
    model: nn.Module,
    bundle: DatasetBundle,
    config: TrainConfig,
    train_split: Callable[[int], Any] | None = None,
    model_config: dict[str, Any] | None = None,
    metadata: dict[str, Any] | None = None,
    subgraph_transform: Callable[[Any], Any] | None = None,
) -> dict[str, Any]:
    """Train ``model`` on ``bundle.train``, select on ``bundle.val``, report ``bundle.test``;
    returns the record (also written to ``config.results``).

    Every epoch is one pass over the training batches (``config.optimizer``, gradients clipped
    to norm ``config.clip_norm``; first ``model.set_epoch(epoch)`` where the model has it, as
    :class:`~graphpe.nn.scalable.Polynormer`'s stages), then the validation metric, the
    learning rate's schedule step (:func:`make_schedule`), then, with
    ``config.checkpoint``, the state to resume from
    (:func:`~graphpe.records.training_state_path`). Training stops after ``config.epochs``
    epochs or ``config.patience`` epochs without improvement; the best epoch's weights are then
    loaded back into the model, scored on the test split and saved to ``config.checkpoint``.
    Under torchrun (``WORLD_SIZE`` > 1) the model trains with ``DistributedDataParallel`` and
    every process gets the metrics of the whole splits.

    ``train_split(epoch)``, if given, supplies the training graphs of each epoch (e.g. to draw
    fresh random PEs every epoch). ``model_config`` (the ``build_model`` config of ``model``)
    goes into the checkpoint, so :func:`graphpe.nn.load_model` rebuilds the model from the file
    alone; ``metadata`` (PE specs, ...) joins the record before it is written. With
    ``config.subgraph_pe``, ``subgraph_transform`` computes every sampled batch's encodings."""
    seed_everything(config.seed)
    setup = _set_up(model, bundle, config, subgraph_transform)
    if config.resume:  # continue where the state left off, as if never stopped
        progress = restore_training_state(config.resume, setup.model, setup.opt, setup.sched,
                                          setup.scaler, model_config)
    else:
        worst = -math.inf if bundle.higher_is_better else math.inf
        progress = Progress(best={"epoch": -1, "val": worst}, best_state=None, history=[])
    start = time.perf_counter()
    try:
        _epochs(setup, bundle, config, progress, train_split, model_config, start)
        interrupted = None
    except KeyboardInterrupt:  # (and a SIGTERM under graphpe train): keep what finished
        if not progress.history or setup.world > 1:
            if setup.rank == 0 and not progress.history:
                LOG.warning(interrupted_message(-1, config.epochs, -1, None, None))
            raise
        interrupted = progress.history[-1]["epoch"]
        state = training_state_path(config.checkpoint) if config.checkpoint else None
        LOG.warning(interrupted_message(interrupted, config.epochs, progress.best["epoch"],
                                        state, config.results))
    train_seconds = progress.earlier_seconds + time.perf_counter() - start
    if progress.best_state is not None:
        setup.model.load_state_dict(progress.best_state)
    test_pred, test_y = predictions(setup.model, setup.test_loader, bundle, setup.device,
                                    "test", gather=setup.shard_eval,
                                    precision=config.precision,
                                    progress=config.progress and setup.rank == 0)
    test = score(bundle, test_pred, test_y)
    record = run_record(bundle, config, progress, test, train_seconds,
                        params=sum(p.numel() for p in setup.model.parameters()),
                        world=setup.world, model_config=model_config, metadata=metadata)
    record["test_predicted_classes"] = predicted_classes(bundle, test_pred)
    if interrupted is not None:
        record["interrupted_after_epoch"] = interrupted
    if setup.rank == 0:  # one writer
        write_run_files(record, setup.model, config.checkpoint, config.results, model_config)
    return record


def _epochs(setup: _Setup, bundle: DatasetBundle, config: TrainConfig, progress: Progress,
            train_split: Callable[[int], Any] | None, model_config: dict[str, Any] | None,
            start: float) -> None:
    """The epochs of :func:`fit` from ``progress.first``: train, validate, step the
    schedule, keep the best, save the state to resume from; stops early after
    ``config.patience`` epochs without improvement."""
    shown = config.progress and setup.rank == 0
    bar = tqdm(range(progress.first, config.epochs), desc=f"{bundle.name}", disable=not shown)
    lines = EpochLines(bundle.name, config.epochs, not config.progress and setup.rank == 0)
    lines.start(progress.first, batch_count(setup.train_loader),
                sum(p.numel() for p in setup.model.parameters()))
    for epoch in bar:
        if hasattr(setup.model, "set_epoch"):  # a model whose training has stages (Polynormer)
            setup.model.set_epoch(epoch)
        if train_split is not None and epoch > 0:
            setup.train_loader = _train_loader(train_split(epoch), config, setup.rank,
                                               setup.world, setup.shapes)
        lr, epoch_start = setup.opt.param_groups[0]["lr"], time.perf_counter()
        train_loss = _train_epoch(setup, bundle, config, epoch)
        progress.epoch_seconds.append(time.perf_counter() - epoch_start)
        val = evaluate(setup.evaluator, setup.val_loader, bundle, setup.device, "val",
                       gather=setup.shard_eval, precision=config.precision, progress=shown)
        step_schedule(setup.sched, val)
        _update_progress(progress, setup.model, {"epoch": epoch, "train_loss": train_loss,
                                                 "val": val, "lr": lr},
                         bundle.higher_is_better)
        bar.set_postfix(loss=f"{train_loss:.4f}", val=f"{val:.4f}",
                        best=f"{progress.best['val']:.4f}",
                        s_epoch=f"{progress.epoch_seconds[-1]:.3g}")
        lines(epoch, train_loss, val, progress.best["val"], progress.epoch_seconds[-1])
        if config.checkpoint and setup.rank == 0:  # everything needed to resume after this epoch
            seconds = progress.earlier_seconds + time.perf_counter() - start
            save_training_state(training_state_path(config.checkpoint), training_state(
                progress, epoch, setup.model, setup.opt, setup.sched, setup.scaler,
                model_config, seconds))
        if progress.waited >= config.patience:
            break


def _set_up(model: nn.Module, bundle: DatasetBundle, config: TrainConfig,
            subgraph_transform: Callable[[Any], Any] | None = None) -> _Setup:
    """The model on this process's device, its optimizer, schedule and loss scaler, the
    training forward and the loaders of the three splits."""
    rank, world, device = distributed_setup(config.device)
    model = model.to(device)
    model, train_model = distribute(model, device, world, config.sync_batchnorm)
    # node-level tasks: one graph shared by the splits, evaluated whole by every process
    shard_eval = world > 1 and not bundle.task.startswith("node_")
    eval_split = (lambda split: shard(split, rank, world)) if shard_eval else (lambda s: s)
    if config.class_weights and (bundle.task.endswith(("regression", "multilabel"))):
        raise ValueError(f"class_weights weighs the classes of a classification task; "
                         f"{bundle.name} is {bundle.task}")
    if config.num_neighbors:
        if not bundle.task.startswith("node_"):
            raise ValueError("num_neighbors (sampled mini-batches) is for node-level tasks on "
                             f"one graph; {bundle.name} is {bundle.task}")
        val_loader = _node_loader(bundle.val, config, "val", subgraph_transform=subgraph_transform)
        test_loader = _node_loader(bundle.test, config, "test",
                                   subgraph_transform=subgraph_transform)
    elif _one_graph(bundle, world, config):
        # one graph, whole: collated once for every split and epoch (its tensors stay the
        # same objects, so what a model derives from them, e.g. GCN's operator, is kept)
        val_loader = test_loader = [Batch.from_data_list([bundle.val[0]])]
    else:
        val_loader = DataLoader(eval_split(bundle.val), batch_size=max(config.batch_size, 256))
        test_loader = DataLoader(eval_split(bundle.test),
                                 batch_size=max(config.batch_size, 256))
    opt = make_optimizer(model, config.lr, config.weight_decay, config.optimizer)
    # fp16: the loss scaled up before backward, the gradients unscaled before clipping, and a
    # step with inf/nan gradients skipped (the scale then halves); a no-op otherwise
    scaler = torch.amp.GradScaler(torch.device(device).type,
                                  enabled=config.precision == "fp16")
    forward, shapes = _training_forward(model, train_model, bundle, config, device, world)
    if _one_graph(bundle, world, config) and bundle.train is bundle.val:
        train_loader = val_loader
    else:
        train_loader = _train_loader(bundle.train, config, rank, world, shapes,
                                     subgraph_transform)
    sched = make_schedule(opt, config, bundle.higher_is_better)
    # validation: the plain model under torchrun (the processes score their shards on their
    # own, with no DistributedDataParallel in between) and with static shapes (StaticGPS takes
    # padded batches); otherwise the training forward, compiled or not
    evaluator = model if world > 1 or shapes is not None else forward
    return _Setup(model=model, forward=forward, evaluator=evaluator, opt=opt, sched=sched,
                  scaler=scaler, train_loader=train_loader, val_loader=val_loader,
                  test_loader=test_loader, shapes=shapes, rank=rank, world=world,
                  device=device, shard_eval=shard_eval)


def _one_graph(bundle: DatasetBundle, world: int, config: TrainConfig) -> bool:
    """A node-level task on one graph, trained whole in one process."""
    return (bundle.task.startswith("node_") and len(bundle.train) == 1 and world == 1
            and not config.num_neighbors and not config.static_shapes)


def _training_forward(model: nn.Module, train_model: nn.Module, bundle: DatasetBundle,
                      config: TrainConfig, device: str,
                      world: int) -> tuple[Callable[[Any], torch.Tensor], dict[str, int] | None]:
    """``(forward, shapes)``: what the training step calls (through :func:`maybe_compile`),
    and with ``config.static_shapes`` the one batch shape of the run (None otherwise)."""
    if not config.static_shapes:
        return maybe_compile(train_model, config.compile, device), None
    # one shape for the run: a single compiled graph
    from graphpe.nn.static import StaticGPS, static_shapes

    if world > 1:
        raise ValueError("static_shapes runs in one process (not under torchrun)")
    if torch.device(device).type == "cpu":
        import warnings

        warnings.warn("static_shapes pads every graph to the largest: on the CPU that is "
                      "slower than the default (bucketed) path; it is meant for GPUs "
                      "(CUDA graphs with compile=True)", stacklevel=4)  # (fit's caller)
    shapes = static_shapes(bundle.train, config.batch_size)
    return maybe_compile(StaticGPS(model), config.compile, device, static=True), shapes


def _train_epoch(setup: _Setup, bundle: DatasetBundle, config: TrainConfig, epoch: int) -> float:
    """One pass over the training batches, then one step of the learning-rate schedule;
    returns the mean training loss per graph, or per seed node of sampled mini-batches (over
    all processes)."""
    if hasattr(getattr(setup.train_loader, "sampler", None), "set_epoch"):
        setup.train_loader.sampler.set_epoch(epoch)  # a new shuffle per epoch, the same on all
    setup.model.train()
    # the loss summed on the device and read once per epoch: no host sync per step
    total, count = torch.zeros((), dtype=torch.float64, device=setup.device), 0
    shown = config.progress and setup.rank == 0
    batches = batch_bar(setup.train_loader, f"epoch {epoch + 1}", shown) if shown else \
        logged_batches(setup.train_loader, bundle.name, epoch, config.epochs, setup.rank == 0)
    for batch in batches:
        setup.opt.zero_grad()
        with autocast(setup.device, config.precision):
            out, y = _forward_batch(setup, bundle, config, batch)
        # in float32 under mixed precision
        loss = loss_fn(bundle.task, out.float(), y, config.class_weights)
        setup.scaler.scale(loss).backward()
        setup.scaler.unscale_(setup.opt)  # clip the true gradients
        if config.clip_norm:
            nn.utils.clip_grad_norm_(setup.model.parameters(), config.clip_norm)
        setup.scaler.step(setup.opt)
        setup.scaler.update()
        graphs = batch.graph_count if setup.shapes is not None else (
            batch.batch_size if config.num_neighbors else batch.num_graphs)  # (seed nodes)
        total += loss.detach().double() * graphs
        count += graphs
    total = float(total)
    if setup.world > 1:
        total, count = sum_over_processes(total, count, setup.device)
    return total / max(count, 1)


def _forward_batch(setup: _Setup, bundle: DatasetBundle, config: TrainConfig,
                   batch: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """The training forward's outputs on one batch and their targets (node classification:
    the training nodes only; static shapes: the real graphs, not the padding)."""
    if setup.shapes is not None:  # a StaticBatch, padded by the loader
        sb = batch.to(setup.device, non_blocking=True)
        if config.compile:  # a new iteration for CUDA graphs ('reduce-overhead')
            torch.compiler.cudagraph_mark_step_begin()
        return setup.forward(sb)[: sb.graph_count], sb.y[: sb.graph_count]
    batch = batch.to(setup.device)
    out, y = setup.forward(batch), batch.y
    mask = node_mask(batch, bundle, "train")
    if mask is not None:
        out, y = out[mask], y[mask]
    return out, y


def _update_progress(progress: Progress, model: nn.Module, entry: dict[str, Any],
                     higher_is_better: bool) -> None:
    """Adds the epoch's ``entry`` (its number, training loss, validation metric and learning
    rate) to the history; keeps the weights of a better validation
    metric, or counts one more epoch without improvement."""
    progress.history.append(entry)
    best, val = progress.best["val"], entry["val"]
    if (val > best) if higher_is_better else (val < best):
        progress.best = {"epoch": entry["epoch"], "val": val}
        progress.best_state = copy.deepcopy(model.state_dict())
        progress.waited = 0
    else:
        progress.waited += 1


def run(bundle: DatasetBundle, pe: Any = (), model: str = "gine", channels: int = 64,
        layers: int = 4, config: TrainConfig | None = None, **model_kwargs: Any) -> dict:
    """Encode ``bundle`` with the PEs ``pe`` (names, or names with settings: anything
    :func:`graphpe.encodings.resolve_pe` takes), build the matching model and fit it. The record
    (and the ``results`` JSON) holds the resolved PE specs, the model config and the training
    config, so it says how to reproduce the run."""
    config = config or TrainConfig()
    specs = resolve_pe(pe)
    if config.undirected:
        bundle = undirected_bundle(bundle)
    transforms = transforms_of(specs)
    subgraph_transform = Compose(transforms) if config.subgraph_pe and transforms else None
    if config.subgraph_pe:  # each sampled batch encoded by its loader
        encoded, pe_seconds = bundle, 0.0
    else:
        if transforms and not config.progress:  # no bars: say what runs before it runs
            LOG.info("%s: computing %s for every graph", bundle.name,
                     ", ".join(spec.name for spec in specs))
        encoded, pe_seconds = encode_bundle(bundle, transforms, progress=config.progress,
                                            cache_dir=config.cache_dir)
        if transforms and not config.progress:
            LOG.info("%s: encodings computed in %s", bundle.name, duration_text(pe_seconds))
    seed_everything(config.seed)
    model_config = {"model": model, "channels": channels, "layers": layers,
                    "pe": pe_model_config(specs), **bundle.model_kwargs(), **model_kwargs}
    pair = pair_model_config(specs)
    if pair is not None:
        if model not in MODELS or not MODELS[model].pairs:
            raise ValueError(f"pairwise encodings ({sorted(pair)}) are attention biases or "
                             f"GRIT's pair features: use model={model_names('pairs')}")
        model_config["pair"] = pair
    net = build_model(model_config)
    train_split = (redraw_random_pes(encoded.train, transforms, config.seed)
                   if config.resample_pe and not config.subgraph_pe else None)
    metadata = {"model": model, "pe": [s.to_dict() for s in specs], "pe_seconds": pe_seconds,
                "pe_bytes_per_node": encoding_bytes_per_node(bundle.train, encoded.train),
                "graph": graph_summary(bundle, config.undirected)}
    return fit(net, encoded, config, train_split, model_config=model_config, metadata=metadata,
               subgraph_transform=subgraph_transform)

