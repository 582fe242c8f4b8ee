r"""GPSE's pretraining (Cantürk et al., "Graph Positional and Structural Encoder", ICML 2024):
graphpe's encodings of a dataset's graphs as the targets (:class:`GPSETargets`), the loss and
the loop that trains a :class:`graphpe.nn.GPSE` on them (``graphpe pretrain-gpse``); the
checkpoint it writes is what :class:`graphpe.transforms.GPSEPE` encodes with.
"""


import math
import time
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from graphpe.encodings.cycles import CycleCounts
from graphpe.encodings.gpse import save_gpse
from graphpe.encodings.laplacian import LaplacianPE
from graphpe.encodings.spectral import ElstaticSE, HKdiagSE, times_option
from graphpe.encodings.transform import PETransform, check_attr_names, option
from graphpe.encodings.walk import RWSE
from graphpe.layers.gpse import GPSE as GPSEModel
from graphpe.layers.gpse import GPSEConfig, add_virtual_nodes, gpse_loss
from graphpe.ops.checks import (
    check_positive_int,
)
from graphpe.ops.cycles import check_max_length
from graphpe.ops.graph import batch_from_ptr, single_graph_ptr
from graphpe.train import lr_lambda, make_optimizer, seed_everything, versions
from graphpe.transforms import precompute

ELSTATIC_COLUMNS = (0, 2, 3, 4, 7, 8, 9)


@dataclass(eq=False, repr=False)
class GPSETargets(PETransform):
    r"""GPSE's pretraining targets (Cantürk et al., ICML 2024; ``output_node_encoders:
    ElstaticPE+LapPE+RWSE+HKdiagSE`` and ``output_graph_encoders: EigVals+CycleGE`` of its
    pretraining configs), computed for whole batches by graphpe's transforms. Per node, in
    this order:

    - 7 electrostatic features (:class:`~graphpe.transforms.ElstaticSE`'s columns
      :data:`ELSTATIC_COLUMNS`, the 7 GPSE keeps);
    - :math:`|v_j|` of the ``k`` first non-trivial eigenvectors of :math:`I - D^{-1/2} A
      D^{-1/2}` (:class:`~graphpe.transforms.LaplacianPE`; the absolute values make the target
      independent of the eigenvectors' signs, GPSE's ``eigvec_abs``; 0 past a graph's size);
    - random-walk return probabilities of steps ``2..walk_length``
      (:class:`~graphpe.transforms.RWSE`; step 1 is 0 without self loops);
    - heat kernel diagonals at ``times`` (:class:`~graphpe.transforms.HKdiagSE`, ``D - A``,
      eigenvalue-0 pairs left out);

    each column standardized per graph, as GPSE's ``GraphNormalizer`` (a fresh ``GraphNorm``):
    :math:`(y - \bar y) / \sqrt{\overline{(y - \bar y)^2} + 10^{-5}}` over the graph's nodes,
    0 where the column's (Bessel-corrected) variance in the graph is below ``1e-5``. Written
    to ``node_attr`` ``[N, 7 + k + walk_length - 1 + len(times)]`` (51 by default). Per graph,
    written on each of its nodes (``batch[graph_attr][batch.ptr[:-1]]`` is ``[G, ...]``): the
    ``k`` eigenvalues (0 past the graph's size) and the counts of cycles of length
    ``2..max_length`` (:func:`~graphpe.ops.cycles.graph_cycle_counts`, GPSE's
    ``CycleGE``), not standardized: ``[N, k + max_length - 1]`` (11).

    Args:
        k: eigenpairs (4).
        walk_length: the last random-walk step (21).
        times: diffusion times (1..20).
        max_length: the longest cycle counted (8).
        node_attr, graph_attr: attributes written (``gpse_y``, ``gpse_y_graph``).
    """

    k: int = option(4, check_positive_int)
    walk_length: int = option(21, check_positive_int)
    times: tuple[float, ...] = option(tuple(range(1, 21)), times_option)
    max_length: int = option(8, check_max_length)
    node_attr: str = option("gpse_y")
    graph_attr: str = option("gpse_y_graph")

    def validate(self) -> None:
        if self.walk_length < 2:
            raise ValueError(f"walk_length must be >= 2 (steps 2..walk_length), got "
                             f"{self.walk_length}")
        check_attr_names({"node_attr": self.node_attr, "graph_attr": self.graph_attr})

    @property
    def num_node_targets(self) -> int:
        return len(ELSTATIC_COLUMNS) + self.k + self.walk_length - 1 + len(self.times)

    @property
    def num_graph_targets(self) -> int:
        return self.k + self.max_length - 1

    def compute(self, edge_index, num_nodes, ptr, edge_weight=None) -> dict[str, Tensor]:
        args = (edge_index, num_nodes, ptr)
        lap = LaplacianPE(self.k, sign="none", attr_names=("v", "val", "mask")).compute(*args)
        elstatic = ElstaticSE(attr_name="e").compute(*args)["e"]
        walk = RWSE(self.walk_length, attr_name="w").compute(*args)["w"]
        heat = HKdiagSE(self.times, attr_name="h").compute(*args)["h"]
        cycles = CycleCounts(self.max_length, graph_attr_name="c").compute(*args)["c"]
        node = torch.cat([elstatic[:, list(ELSTATIC_COLUMNS)], lap["v"].abs(), walk[:, 1:],
                          heat], dim=1).float()
        ptr = single_graph_ptr(num_nodes, node.device) if ptr is None else ptr
        return {self.node_attr: standardize_per_graph(node, ptr),
                self.graph_attr: torch.cat([lap["val"].float(), cycles.float()], dim=1)}


def standardize_per_graph(y: Tensor, ptr: Tensor, eps: float = 1e-5,
                          min_var: float = 1e-5) -> Tensor:
    r"""Each column of ``y [N, C]`` standardized over the nodes of each graph (``ptr``), as a
    fresh PyG ``GraphNorm`` (GPSE's ``GraphNormalizer``): :math:`(y - \bar y) /
    \sqrt{\overline{(y - \bar y)^2} + \text{eps}}`; 0 where the column's Bessel-corrected
    variance in the graph is below ``min_var`` (a one-node graph's column is 0 anyway)."""
    graph = batch_from_ptr(ptr, y.size(0))
    counts = ptr.diff().to(y.dtype).clamp(min=1).unsqueeze(1)
    sums = y.new_zeros(ptr.numel() - 1, y.size(1))
    mean = sums.index_add(0, graph, y) / counts
    centered = y - mean[graph]
    squares = sums.index_add(0, graph, centered.square())
    out = centered / (squares / counts + eps).sqrt()[graph]
    flat = squares / (counts - 1) < min_var  # (n = 1: 0/0, NaN, not flat, and centered is 0)
    return out.masked_fill(flat[graph], 0.0)


@dataclass
class PretrainConfig:
    """GPSE pretraining; the defaults are the paper's setup (``configs/pretrain/
    gpse_molpcba.yaml`` and ``gpse_zinc.yaml`` of the GPSE code, Cantürk et al., ICML 2024).
    ``configs/pretrain/gpse.toml`` spells them out; ``graphpe pretrain-gpse --config`` reads
    such a file (keys as these fields)."""

    # the network: graphpe.nn.GPSEConfig's settings, with its defaults (the paper's)
    dim_in: int = GPSEConfig.dim_in  # random input features per node, N(0, 1)
    dim_inner: int = GPSEConfig.dim_inner
    layers_pre_mp: int = GPSEConfig.layers_pre_mp
    layers_mp: int = GPSEConfig.layers_mp
    head_layers: int = GPSEConfig.head_layers
    head_hidden: int = GPSEConfig.head_hidden
    dropout: float = GPSEConfig.dropout
    virtual_node: bool = GPSEConfig.virtual_node
    # the targets (GPSETargets)
    lap_k: int = 4
    walk_length: int = 21
    heat_times: tuple[float, ...] = tuple(range(1, 21))
    cycle_max_length: int = 8
    # the optimization: AdamW, linear warm-up then cosine decay, gradients clipped to norm 1
    epochs: int = 120
    batch_size: int = 1024
    lr: float = 0.005
    weight_decay: float = 1e-4
    warmup_epochs: int = 5
    seed: int = 0
    device: str = "cpu"

    def __post_init__(self) -> None:
        self.heat_times = times_option("heat_times", self.heat_times)
        for name in ("epochs", "batch_size"):
            check_positive_int(name, getattr(self, name))
        self.model_config()  # checks the network's settings
        self.targets()  # and the targets'

    def targets(self) -> GPSETargets:
        return GPSETargets(self.lap_k, self.walk_length, self.heat_times,
                           self.cycle_max_length)

    def model_config(self) -> GPSEConfig:
        targets = self.targets()
        return GPSEConfig(dim_in=self.dim_in, dim_inner=self.dim_inner,
                          layers_pre_mp=self.layers_pre_mp, layers_mp=self.layers_mp,
                          dropout=self.dropout, virtual_node=self.virtual_node,
                          num_node_targets=targets.num_node_targets,
                          num_graph_targets=targets.num_graph_targets,
                          head_layers=self.head_layers, head_hidden=self.head_hidden)


def pretraining_loss(model: GPSEModel, batch, generator: torch.Generator,
                     device: torch.device | str) -> Tensor:
    """:func:`~graphpe.layers.gpse.gpse_loss` of ``model`` on a batch carrying
    :class:`GPSETargets`, from fresh random inputs (drawn on the host from ``generator``)."""
    batch = batch.to(device)
    ptr, n = batch.ptr, batch.num_nodes
    x = torch.randn(n, model.config.dim_in, generator=generator).to(device)
    edge_index, graph = batch.edge_index, batch.batch
    if model.config.virtual_node:
        x, edge_index, graph = add_virtual_nodes(x, edge_index, ptr)
    node, graph_pred = model.head(model(x, edge_index), graph, batch.num_graphs)
    return gpse_loss(node[:n], batch.gpse_y, graph_pred, batch.gpse_y_graph[ptr[:-1]],
                     batch.batch, batch.num_graphs)


def pretrain_gpse(train: Any, val: Any, config: PretrainConfig, out: str | Path | None = None,
                  progress: bool = False, cache_dir: str | None = None) -> dict[str, Any]:
    """Pretrain a :class:`~graphpe.nn.GPSE` on the graphs ``train`` (a dataset or list of
    ``Data``; only their structure is read), selecting on ``val``'s loss; writes the best
    epoch's model to ``out`` (:func:`save_gpse`, with the config and the curve) and returns
    the record.

    The targets (:class:`GPSETargets`) are precomputed once for both splits, in batches
    (through ``precompute``'s cache with ``cache_dir``); every epoch draws fresh random
    inputs. The loss is :func:`~graphpe.layers.gpse.gpse_loss`; AdamW with ``lr`` and
    ``weight_decay``, ``warmup_epochs`` of linear warm-up then cosine decay
    (:func:`graphpe.train.lr_lambda`), gradients clipped to norm 1, as the paper."""
    from torch_geometric.loader import DataLoader


    seed_everything(config.seed)
    targets = config.targets()
    start = time.perf_counter()
    train, val = (precompute(split, [targets], progress=progress, cache_dir=cache_dir)
                  for split in (train, val))
    target_seconds = time.perf_counter() - start
    model = GPSEModel(config.model_config()).to(config.device)
    opt = make_optimizer(model, config.lr, config.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda(config.warmup_epochs,
                                                             config.epochs))
    generator = torch.Generator().manual_seed(config.seed)
    history, best, best_state = [], math.inf, None
    for epoch in range(config.epochs):
        model.train()
        total, count = 0.0, 0
        for batch in DataLoader(train, batch_size=config.batch_size, shuffle=True):
            opt.zero_grad()
            loss = pretraining_loss(model, batch, generator, config.device)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            total, count = total + float(loss.detach()) * batch.num_graphs, count + batch.num_graphs
        sched.step()
        val_loss = _mean_loss(model, val, config)
        history.append({"epoch": epoch, "train_loss": total / max(count, 1),
                        "val_loss": val_loss})
        if progress:
            print(f"epoch {epoch}: train loss {history[-1]['train_loss']:.4f}, val loss "
                  f"{val_loss:.4f}", flush=True)
        if val_loss < best or best_state is None:
            best = val_loss
            best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    model.load_state_dict(best_state)
    record = {"config": _plain_config(config), "history": history,
              "best_epoch": min(history, key=lambda h: h["val_loss"])["epoch"],
              "val_loss": best, "target_seconds": target_seconds,
              "train_seconds": time.perf_counter() - start - target_seconds,
              "versions": versions()}
    if out is not None:
        save_gpse(model.cpu(), out, pretrain=record)
    return record


@torch.no_grad()
def _mean_loss(model: GPSEModel, graphs: Any, config: PretrainConfig) -> float:
    """The loss on ``graphs`` in eval mode, on the same random inputs at every epoch."""
    from torch_geometric.loader import DataLoader

    model.eval()
    generator = torch.Generator().manual_seed(config.seed)
    total, count = 0.0, 0
    for batch in DataLoader(graphs, batch_size=config.batch_size):
        total += float(pretraining_loss(model, batch, generator, config.device)) * \
            batch.num_graphs
        count += batch.num_graphs
    return total / max(count, 1)


def _plain_config(config: PretrainConfig) -> dict[str, Any]:
    return {f.name: (list(v) if isinstance(v := getattr(config, f.name), tuple) else v)
            for f in fields(config)}
