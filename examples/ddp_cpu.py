"""Data-parallel training with 2 processes on the CPU (gloo): the same code torchrun runs on
several GPUs or machines.

    torchrun --nproc-per-node 2 examples/ddp_cpu.py

Each process trains on its half of every epoch's shuffle; gradients are averaged, metrics are
computed over all processes' predictions, and only rank 0 reports.
"""

import os

import torch
from own_dataset import build  # examples/own_dataset.py

from graphpe.train import TrainConfig, run

torch.set_num_threads(1)  # one core per process
record = run(build("/tmp/graphpe-own"), {"rwse": {"walk_length": 8}}, model="gps", channels=32,
             layers=2, config=TrainConfig(epochs=5, batch_size=16, progress=False))
if int(os.environ.get("RANK", "0")) == 0:
    print(f"{record['world_size']} processes: test accuracy {record['test']:.3f}, "
          f"{record['seconds_per_epoch']:.2f} s per epoch")
