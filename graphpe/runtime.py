"""Where and how a training run executes: its processes under ``torchrun`` (the process
group, the model in ``DistributedDataParallel``, the shards and sums across processes),
mixed precision, ``torch.compile``, and the host's allocator."""

from __future__ import annotations

import contextlib
import os
from typing import Any

import torch
from torch import nn

from graphpe.ops.memory import retain_freed_host_memory as retain_freed_host_memory

# TrainConfig.precision -> the dtype torch.autocast runs the products in (None: no autocast).
# fp16 also scales the loss (torch.amp.GradScaler): float16 gradients underflow otherwise.
PRECISIONS: dict[str, torch.dtype | None] = {
    "fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}


def autocast(device: str | torch.device, precision: str) -> contextlib.AbstractContextManager:
    """``torch.autocast`` for ``precision`` on ``device``'s type (a no-op for fp32)."""
    dtype = PRECISIONS[precision]
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(torch.device(device).type, dtype=dtype)


def distributed_setup(device: str) -> tuple[int, int, str]:
    """``(rank, world size, device)``: under ``torchrun`` (``WORLD_SIZE`` > 1) the process group
    is initialized (NCCL on CUDA, gloo on the CPU) and a CUDA device becomes this process's
    ``cuda:LOCAL_RANK``; otherwise ``(0, 1, device)``."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return 0, 1, device
    import torch.distributed as dist

    cuda = str(device).startswith("cuda")
    if cuda:
        device = f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}"
        torch.cuda.set_device(device)
    if not dist.is_initialized():
        dist.init_process_group("nccl" if cuda else "gloo")
    return dist.get_rank(), dist.get_world_size(), device


def shard(split: Any, rank: int, world: int) -> Any:
    """Rank ``rank``'s contiguous share of an evaluation split (no padding, unlike
    ``DistributedSampler``, so gathered metrics are exact)."""
    n = len(split)
    lo, hi = n * rank // world, n * (rank + 1) // world
    return split[lo:hi]


def distribute(model: nn.Module, device: str, world: int,
               sync_batchnorm: bool = False) -> tuple[nn.Module, nn.Module]:
    """``(model, the module the training step calls)``: under torchrun (``world`` > 1) the
    model in ``DistributedDataParallel``, its BatchNorms made ``SyncBatchNorm`` first with
    ``sync_batchnorm`` (and with ``find_unused_parameters`` where the model's
    ``ddp_find_unused_parameters`` says some parameters go without gradients, as
    Polynormer's stages); otherwise the model twice."""
    if world <= 1:
        return model, model
    from torch.nn.parallel import DistributedDataParallel

    if sync_batchnorm:
        model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    return model, DistributedDataParallel(
        model, device_ids=[torch.device(device).index] if "cuda" in str(device) else None,
        find_unused_parameters=bool(getattr(model, "ddp_find_unused_parameters", False)))


def sum_over_processes(total: float, count: int, device: str) -> tuple[float, int]:
    """The training loss and graph count summed over all processes (sums, not averages, so
    the mean is over all graphs)."""
    import torch.distributed as dist

    sums = torch.tensor([total, float(count)], dtype=torch.float64,
                        device=device if "cuda" in str(device) else "cpu")
    dist.all_reduce(sums)
    return float(sums[0]), int(sums[1])


def compile_support(device: str | torch.device) -> str | None:
    """Why ``torch.compile`` cannot run here, or None when it can (a C++ compiler is needed for
    CPU code)."""
    import shutil

    if not torch._dynamo.is_dynamo_supported():
        return "torch.compile is not supported on this Python/PyTorch"
    if torch.device(device).type == "cpu" and not any(
            shutil.which(c) for c in ("g++", "c++", "clang++")):
        return "torch.compile on the CPU needs a C++ compiler (g++, c++ or clang++)"
    return None


def maybe_compile(model: nn.Module, enabled: bool, device: str | torch.device,
                  static: bool = False) -> nn.Module:
    """``torch.compile(model, dynamic=True)`` if ``enabled`` and supported, else ``model``
    (with a warning saying why). Node and edge counts vary from batch to batch, so shapes are
    dynamic; the host-side parts (the attention layout, the bucket loop) stay eager. With
    ``static`` (a :class:`~graphpe.nn.static.StaticGPS` on fixed-shape batches): one whole
    graph, ``fullgraph=True, dynamic=False``, and on CUDA ``mode='reduce-overhead'`` (CUDA
    graphs: the step replays instead of launching its kernels one by one)."""
    if not enabled:
        return model
    reason = compile_support(device)
    if reason is not None:
        import warnings

        warnings.warn(f"compile=True ignored: {reason}", stacklevel=2)
        return model
    if static:
        mode = "reduce-overhead" if torch.device(device).type == "cuda" else None
        return torch.compile(model, fullgraph=True, dynamic=False, mode=mode)
    return torch.compile(model, dynamic=True)

