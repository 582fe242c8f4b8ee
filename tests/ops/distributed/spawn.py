"""Run a function in ``world`` spawned processes of one gloo group (a free port on 127.0.0.1,
one thread each) and collect what each returns."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _entry(rank: int, fn: Callable, world: int, port: int, out: str, args: tuple) -> None:
    os.environ.pop("WORLD_SIZE", None)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world)
    try:
        result = fn(rank, world, *args)
        torch.save(result, Path(out) / f"result{rank}.pt")
    finally:
        dist.destroy_process_group()


def run_ranks(fn: Callable, world: int, out: Path, *args: Any) -> list[Any]:
    """``[fn(rank, world, *args) for each rank]``, each run in its own process of a gloo
    group of ``world`` ranks; ``fn`` must be importable (a module-level function)."""
    mp.spawn(_entry, args=(fn, world, free_port(), str(out), args), nprocs=world, join=True)
    return [torch.load(Path(out) / f"result{rank}.pt", weights_only=False)
            for rank in range(world)]
