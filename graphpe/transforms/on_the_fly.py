"""Positional encodings computed inside the training step."""

from __future__ import annotations

import copy
from collections.abc import Sequence

import torch
from torch import Tensor, nn
from torch_geometric.data import Data

from graphpe.encodings.transform import (
    PETransform,
    graph_structure,
    set_fields,
    without_autocast,
)
from graphpe.ops.checks import check_non_negative_int

COMPUTE_ON = ("auto", "device", "host")
# The largest graph ``compute_on="auto"`` sends to the host. Measured: OnTheFlyPE(RWSE(16),
# LaplacianPE(8), random features (16, 8 steps, 4 draws)) on 256 ZINC graphs (9-38 nodes) took 131
# ms on an H200 (torch formulation: thousands of small kernel launches and dozens of host syncs per
# call) against 51 ms for the compiled host kernels on one CPU thread and 29 ms on two (they split
# the graphs over torch's threads). Per graph the host cost grows with its size (LapPE's dense eigh
# as n^3) while the GPU's launches do not, so larger graphs stay on the device until measured
# otherwise.
HOST_MAX_NODES = 64


class OnTheFlyPE(nn.Module):
    """Computes the given PEs for every ``Batch`` inside ``forward`` (the results on the batch's
    device), so training needs no precompute pass. In ``train()`` mode random encodings (random
    feature draws, random LapPE signs) are drawn anew at every call; in ``eval()`` mode every call
    draws them from a generator seeded afresh (the transform's ``seed``, or 0 without one), so
    evaluating the same batch twice gives the same features, and the training stream is left
    where it was. Put it in front of a model::

        model = torch.nn.Sequential(OnTheFlyPE([RWSE(16), LaplacianPE(8)]), gps)

    The encodings are inputs, not learned: they are computed without gradient. Returns the
    batch (a shallow copy) with the attributes added.

    Where a GPU batch's encodings are computed is ``compute_on``: on a GPU, batches of small
    graphs are launch-bound (each size bucket, propagation step and Gram-Schmidt column is a
    few kernel launches of microseconds of work), so they may go to the compiled CPU kernels
    (one loop over the graphs) instead, the results then copied to the batch's device.

    Args:
        transforms: any of graphpe's transforms (``RWSE``, ``LaplacianPE``, ...).
        compute_on: ``device`` (the batch's device), ``host`` (the CPU, results copied to the
            batch's device) or ``auto``: the host for a batch on an accelerator whose largest
            graph has at most ``host_max_nodes`` nodes, else the batch's device. CPU batches
            are always computed where they are.
        host_max_nodes: the largest graph ``auto`` sends to the host.
    """

    def __init__(self, transforms: Sequence[PETransform], compute_on: str = "auto",
                 host_max_nodes: int = HOST_MAX_NODES) -> None:
        super().__init__()
        if transforms is None or isinstance(transforms, (str, bytes, PETransform)):
            raise ValueError("OnTheFlyPE takes a list of graphpe transforms, got "
                             f"{transforms!r}")
        self.transforms = list(transforms)
        for t in self.transforms:
            if not isinstance(t, PETransform):
                raise ValueError(f"OnTheFlyPE takes graphpe transforms, got {type(t).__name__}")
        if compute_on not in COMPUTE_ON:
            raise ValueError(f"compute_on must be one of {COMPUTE_ON}, got {compute_on!r}")
        host_max_nodes = check_non_negative_int("host_max_nodes", host_max_nodes)
        self.compute_on = compute_on
        self.host_max_nodes = host_max_nodes

    def _on_host(self, num_nodes: int, ptr_host: Tensor | None) -> bool:
        """Whether an accelerator's batch is computed on the host: ``compute_on``, and for
        ``auto`` the largest graph's size (``ptr_host``: the batch's ``ptr`` on the CPU)."""
        if self.compute_on != "auto":
            return self.compute_on == "host"
        if ptr_host is None:
            return num_nodes <= self.host_max_nodes
        largest = int((ptr_host[1:] - ptr_host[:-1]).max()) if ptr_host.numel() > 1 else 0
        return largest <= self.host_max_nodes

    @torch.no_grad()
    def forward(self, batch: Data) -> Data:
        batch = copy.copy(batch)  # the caller's batch keeps its attributes
        edge_index, num_nodes, ptr, edge_weight = graph_structure(batch)
        device = None
        if edge_index.device.type != "cpu" and self.compute_on != "device":
            ptr_host = None if ptr is None else ptr.cpu()  # one read of the sizes
            if self._on_host(num_nodes, ptr_host):
                device = edge_index.device
                edge_index, ptr = edge_index.cpu(), ptr_host
                edge_weight = None if edge_weight is None else edge_weight.cpu()
        for t in self.transforms:
            # in the encodings' own precision, also inside a mixed-precision step
            with without_autocast():
                if self.training or getattr(t, "_generator", None) is None:
                    out = t.compute(edge_index, num_nodes, ptr, edge_weight)
                else:
                    with t.fixed_draws():
                        out = t.compute(edge_index, num_nodes, ptr, edge_weight)
            if device is not None:
                out = {name: value.to(device) for name, value in out.items()}
            set_fields(batch, out)
        return batch

    def collate(self, graphs: Sequence[Data]) -> Data:
        """``collate_fn`` for ``torch.utils.data.DataLoader``: the graphs as one ``Batch``
        with the encodings computed, so with ``num_workers > 0`` they are computed in the
        loader's worker processes while the model trains on the previous batch::

            loader = torch.utils.data.DataLoader(train_graphs, batch_size=32, shuffle=True,
                                                 collate_fn=on_the_fly.collate, num_workers=4)

        Random encodings are drawn in train mode (each worker its own stream) and fixed in
        eval mode, as :meth:`forward`; the mode is the one the module had when the loader's
        workers started."""
        from torch_geometric.data import Batch

        return self(Batch.from_data_list(list(graphs)))

    def extra_repr(self) -> str:
        settings = "" if self.compute_on == "auto" and self.host_max_nodes == HOST_MAX_NODES \
            else f", compute_on={self.compute_on!r}, host_max_nodes={self.host_max_nodes}"
        return ", ".join(repr(t) for t in self.transforms) + settings
