"""What a training run leaves behind: its record (metrics, timings, configs, versions, the
curve), the checkpoint of its best model, and after every epoch the training state that
``--resume`` continues from (weights, optimizer, schedule, loss scale, random generators)."""

from __future__ import annotations

import json
import os
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from graphpe.datasets import DatasetBundle
from graphpe.nn.build import normalize_model_config
from graphpe.ops.files import load_torch_file

CHECKPOINT_FORMAT = "graphpe-checkpoint-1"
TRAINING_STATE_FORMAT = "graphpe-training-state-1"


def versions() -> dict[str, str | None]:
    """Versions of graphpe and its stack, and the git commit of a source checkout (None when
    graphpe is not run from one)."""
    import platform
    import subprocess

    import torch_geometric

    import graphpe

    commit = None
    try:
        root = Path(graphpe.__file__).resolve().parents[1]
        if (root / ".git").exists():
            commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"],
                                    capture_output=True, text=True, timeout=10,
                                    check=True).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        commit = None
    return {"graphpe": graphpe.__version__, "torch": str(torch.__version__),
            "torch_geometric": str(torch_geometric.__version__), "numpy": str(np.__version__),
            "python": platform.python_version(), "git_commit": commit}


@dataclass
class Progress:
    """Where the epochs stand: what the training state saves and a resumed run restores."""

    best: dict[str, Any]  # {"epoch", "val"}: the best validation metric so far
    best_state: dict[str, Any] | None  # the model's weights after that epoch
    history: list[dict[str, Any]]  # {"epoch", "train_loss", "val", "lr"} per epoch run
    waited: int = 0  # epochs since the best one (early stopping)
    first: int = 0  # the first epoch still to run
    earlier_seconds: float = 0.0  # training time before an interruption
    # the seconds of each epoch's training pass: timings, kept out of the history, which the
    # seed alone determines
    epoch_seconds: list[float] = field(default_factory=list)


def run_record(bundle: DatasetBundle, config: Any, progress: Progress, test: float,
               train_seconds: float, *, params: int, world: int,
               model_config: dict[str, Any] | None,
               metadata: dict[str, Any] | None) -> dict[str, Any]:
    """The run's record: metrics, timings, configs (``config``: the run's
    :class:`~graphpe.train.TrainConfig`), ``metadata``, versions and the curve."""
    epochs_run = len(progress.history)
    return {
        "dataset": bundle.name, "metric": bundle.metric, "best_epoch": progress.best["epoch"],
        "val": progress.best["val"], "test": test, "epochs_run": epochs_run,
        "train_seconds": train_seconds, "seconds_per_epoch": train_seconds / max(epochs_run, 1),
        "params": params,
        "config": asdict(config), "model_config": model_config, **(metadata or {}),
        "versions": versions(), "history": progress.history,
        "epoch_train_seconds": progress.epoch_seconds, "world_size": world,
    }


def write_run_files(record: dict[str, Any], model: nn.Module, checkpoint: str | None,
                    results: str | None, model_config: dict[str, Any] | None) -> None:
    """The checkpoint (weights, build config and the record without its curve) at
    ``checkpoint`` and the results JSON at ``results``, each where given."""
    if checkpoint:
        Path(checkpoint).parent.mkdir(parents=True, exist_ok=True)
        torch.save({"format": CHECKPOINT_FORMAT, "model_config": model_config,
                    "state_dict": model.state_dict(),
                    # plain JSON types only, so the file loads with weights_only=True
                    "record": json.loads(json.dumps(
                        {k: v for k, v in record.items() if k != "history"}, default=str))},
                   checkpoint)
    if results:
        Path(results).parent.mkdir(parents=True, exist_ok=True)
        Path(results).write_text(json.dumps(record, indent=2))


def training_state_path(checkpoint: str) -> Path:
    """Where :func:`~graphpe.train.fit` keeps the state to resume from: beside the
    checkpoint."""
    return Path(f"{checkpoint}.state")


def _rng_states() -> dict[str, Any]:
    np_state = np.random.get_state()
    return {"torch": torch.get_rng_state(), "python": random.getstate(),
            "numpy": [np_state[0], torch.from_numpy(np_state[1].astype(np.int64)),
                      int(np_state[2]), int(np_state[3]), float(np_state[4])]}


def _set_rng_states(states: dict[str, Any]) -> None:
    torch.set_rng_state(states["torch"])
    random.setstate(states["python"])
    name, keys, pos, has_gauss, gauss = states["numpy"]
    np.random.set_state((name, keys.numpy().astype(np.uint32), pos, has_gauss, gauss))


def training_state(progress: Progress, epoch: int, model: nn.Module,
                   opt: torch.optim.Optimizer, sched: torch.optim.lr_scheduler.LRScheduler,
                   scaler: torch.amp.GradScaler, model_config: dict[str, Any] | None,
                   seconds: float) -> dict[str, Any]:
    """Everything :func:`restore_training_state` needs to continue after ``epoch``."""
    return {"format": TRAINING_STATE_FORMAT, "epoch": epoch, "model": model.state_dict(),
            "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
            "scaler": scaler.state_dict(), "best": progress.best,
            "best_state": progress.best_state, "history": progress.history,
            "waited": progress.waited, "epoch_seconds": progress.epoch_seconds,
            "rng": _rng_states(), "model_config": model_config,
            "train_seconds": seconds}


def save_training_state(path: Path, state: dict[str, Any]) -> None:
    """Written to a temporary file and renamed: a run killed mid-write keeps the last state."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)


def restore_training_state(path: str, model: nn.Module, opt: torch.optim.Optimizer,
                           sched: torch.optim.lr_scheduler.LRScheduler,
                           scaler: torch.amp.GradScaler,
                           model_config: dict[str, Any] | None) -> Progress:
    """Loads the training state at ``path`` into ``model``, ``opt``, ``sched`` and ``scaler``
    and the RNGs; returns its progress. Refuses a state of another model."""
    state = load_torch_file(path, "a graphpe training state (<checkpoint>.state)")
    if not isinstance(state, dict) or state.get("format") != TRAINING_STATE_FORMAT:
        raise ValueError(f"{path} is not a graphpe training state (written "
                         "beside --checkpoint as <checkpoint>.state)")
    saved = state.get("model_config")
    if saved is not None and model_config is not None:  # (a saved config in any accepted form)
        saved, current = map(normalize_model_config, (saved, model_config))
    if saved is not None and model_config is not None and saved != current:
        changed = sorted(k for k in set(saved) | set(current)
                         if saved.get(k) != current.get(k))
        raise ValueError(f"{path} was written by another model: its settings "
                         f"differ in {changed}; resume with the run's own settings")
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["optimizer"])
    sched.load_state_dict(state["scheduler"])
    if isinstance(sched, torch.optim.lr_scheduler.LambdaLR):
        # the learning rate from this run's schedule (a resumed run may be given more epochs;
        # a plateau schedule's rate is the optimizer's own, restored above)
        for group, base, factor in zip(opt.param_groups, sched.base_lrs, sched.lr_lambdas,
                                       strict=True):
            group["lr"] = base * factor(sched.last_epoch)
    if state.get("scaler") and scaler.is_enabled():  # an fp16 run's loss scale
        scaler.load_state_dict(state["scaler"])
    progress = Progress(best=state["best"], best_state=state["best_state"],
                        history=state["history"], waited=state["waited"],
                        first=state["epoch"] + 1,
                        epoch_seconds=list(state.get("epoch_seconds", [])))
    _set_rng_states(state["rng"])
    # the epochs before the interruption, in the run's timings
    progress.earlier_seconds = float(state.get("train_seconds", 0.0))
    return progress
