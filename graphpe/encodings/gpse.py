r"""GPSE (Cantürk et al., "Graph Positional and Structural Encoder", ICML 2024): the encoding is
the output of a pretrained :class:`graphpe.nn.GPSE` run on random node features: its
checkpoints, transform, encoder and declaration. Its pretraining (``graphpe pretrain-gpse``) is
:mod:`graphpe.pretrain`.
"""

from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from graphpe.encodings.registry import Encoding, register, setting, setting_of
from graphpe.encodings.transform import PETransform, check_attr_names, option
from graphpe.layers.common import read_attribute
from graphpe.layers.gpse import GPSE as GPSEModel
from graphpe.layers.gpse import GPSEConfig
from graphpe.ops.checks import (
    check_number,
    check_optional_positive_int,
    check_positive_int,
    check_seed,
)
from graphpe.ops.files import load_torch_file
from graphpe.ops.graph import single_graph_ptr, validate_graph

CHECKPOINT_FORMAT = "graphpe-gpse-1"


# ------------------------------------------------------------------------------ checkpoints
def save_gpse(model: GPSEModel, path: str | Path, **extra: Any) -> None:
    """Write ``model`` (its architecture and weights; ``extra``: JSON-able metadata such as the
    pretraining config and curve) to ``path``, for :func:`load_gpse` and the ``gpse``
    encoding."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    torch.save({"format": CHECKPOINT_FORMAT, "config": model.config.to_dict(),
                "state_dict": model.state_dict(), **extra}, path)


def load_gpse(path: str | Path) -> GPSEModel:
    """The :class:`~graphpe.nn.GPSE` stored at ``path``, in eval mode: a checkpoint of
    :func:`save_gpse` (``graphpe pretrain-gpse``), the ``state_dict`` of a PyG
    ``torch_geometric.nn.GPSE`` saved with ``torch.save``, or a GPSE repository checkpoint
    (the files of PyG's ``GPSE.from_pretrained``). A missing file is a ValueError."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"GPSE checkpoint {str(path)!r} not found")
    state = load_torch_file(path, "a GPSE checkpoint")
    if not isinstance(state, dict):
        raise ValueError(f"{path} is not a GPSE checkpoint (a {type(state).__name__})")
    if state.get("format") == CHECKPOINT_FORMAT:
        model = GPSEModel(GPSEConfig(**state["config"]))
        model.load_state_dict(state["state_dict"])
    else:
        model = GPSEModel.from_pyg_state_dict(state)
    return model.eval()


def _file_digest(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:16]


def _check_checkpoint(name: str, value: object) -> object:
    if value is None or isinstance(value, GPSEModel):
        return value
    if not isinstance(value, (str, Path)) or not str(value):
        raise ValueError(f"{name} must be a path or a graphpe.nn.GPSE, got {value!r}")
    if not Path(value).is_file():
        raise ValueError(f"GPSE checkpoint {str(value)!r} not found")
    return str(value)


NO_CHECKPOINT = ("GPSE encodes with a pretrained model and graphpe ships none: give its "
                 "checkpoint (gpse:checkpoint=PATH; `graphpe pretrain-gpse` writes one, and a "
                 "PyG GPSE state_dict saved with torch.save or a GPSE repository checkpoint "
                 "load too). Random weights would give features that mean nothing.")


# ------------------------------------------------------------------------------ transform
@dataclass(eq=False, repr=False)
class GPSEPE(PETransform):
    r"""The GPSE encoding (Cantürk et al., ICML 2024): a pretrained :class:`graphpe.nn.GPSE`'s
    output :math:`z = \mathrm{GPSE}(X, G)` ``[N, dim_inner]`` on node features :math:`X_{ij}
    \sim \mathcal N(0, 1)` ``[N, dim_in]`` drawn afresh for every call (seeded by ``seed``),
    each graph with its virtual node (features 0) when the model reads them, in eval mode; as
    PyG's ``AddGPSE`` / ``precompute_GPSE`` with ``rand_type='NormalSE'``. Messages follow
    ``edge_index`` as given (both directions of an undirected graph, as the model was
    trained on). Graphs are run ``batch_nodes`` nodes at a time (whole graphs), on the
    device of the data (``precompute(..., device='cuda')`` runs it on a GPU). Writes ``gpse``
    ``[N, dim_inner]``.

    Args:
        checkpoint: the model: a path (see :func:`load_gpse`; a missing file is a ValueError)
            or a :class:`graphpe.nn.GPSE`. Required: without it the transform refuses to
            encode (a ValueError; graphpe ships no weights, and random ones encode nothing).
        dim: the encoding's expected width (None: the model's); a checkpoint of another
            width is a ValueError.
        seed: seed of the random input features.
        attr_name: attribute written.
        batch_nodes: most nodes per forward pass (memory, not the output).
    """

    checkpoint: str | GPSEModel | None = option(None, _check_checkpoint)
    dim: int | None = option(None, check_optional_positive_int)
    seed: int | None = option(0, lambda name, value: check_seed(value, name))
    attr_name: str = option("gpse")
    batch_nodes: int = option(1 << 16, check_positive_int, key=False)

    def validate(self) -> None:
        check_attr_names({"attr_name": self.attr_name})
        self._models: dict[torch.device, GPSEModel] = {}
        self._digest: str | None = None

    @property
    def draws_random(self) -> bool:
        return True

    def settings(self) -> dict[str, Any]:
        """The options, the checkpoint as its path (or ``"<module>"``) and a digest of its
        weights, so that a cache is not reused after the weights change."""
        out = super().settings()
        if self._digest is None and self.checkpoint is not None:
            self._digest = (_file_digest(self.checkpoint) if isinstance(self.checkpoint, str)
                            else _state_digest(self.checkpoint))
        if isinstance(self.checkpoint, GPSEModel):
            out["checkpoint"] = "<module>"
        out["weights"] = self._digest
        return out

    def model(self, device: torch.device | str = "cpu") -> GPSEModel:
        """The model in eval mode on ``device`` (loaded once, copied once per device)."""
        device = torch.device(device)
        if self.checkpoint is None:
            raise ValueError(NO_CHECKPOINT)
        if device not in self._models:
            # a module given is copied: moving it or setting eval mode is not ours to do
            base = (load_gpse(self.checkpoint) if isinstance(self.checkpoint, str)
                    else copy.deepcopy(self.checkpoint))
            width = base.config.dim_inner
            if self.dim is not None and width != self.dim:
                raise ValueError(f"the GPSE checkpoint encodes {width} columns, dim={self.dim} "
                                 f"was given: set gpse:dim={width}")
            self._models[device] = base.to(device).eval()
        return self._models[device]

    def compute(self, edge_index, num_nodes, ptr, edge_weight=None) -> dict[str, Tensor]:
        validate_graph(edge_index, num_nodes, None, ptr)
        device = edge_index.device
        model = self.model(device)
        ptr = single_graph_ptr(num_nodes, device) if ptr is None else ptr
        # drawn on the host: the same features whatever the device
        x = torch.randn(num_nodes, model.config.dim_in, generator=self.draw_generator())
        return {self.attr_name: encode_in_chunks(model, x.to(device), edge_index, ptr,
                                                 self.batch_nodes)}


def _state_digest(model: nn.Module) -> str:
    digest = hashlib.sha256()
    for name, value in model.state_dict().items():
        digest.update(name.encode())
        digest.update(value.detach().cpu().contiguous().view(-1).view(torch.uint8).numpy())
    return digest.hexdigest()[:16]


@torch.no_grad()
def encode_in_chunks(model: GPSEModel, x: Tensor, edge_index: Tensor, ptr: Tensor,
                     batch_nodes: int) -> Tensor:
    """:meth:`GPSE.encode` over runs of whole graphs of at most ``batch_nodes`` nodes (a
    larger graph alone): ``x [N, dim_in]`` -> ``[N, dim_inner]`` float32."""
    out = x.new_empty(x.size(0), model.config.dim_inner)
    starts = ptr.tolist()
    first = 0
    while first < len(starts) - 1:
        last = first + 1
        while last < len(starts) - 1 and starts[last + 1] - starts[first] <= batch_nodes:
            last += 1
        lo, hi = starts[first], starts[last]
        inside = (edge_index[0] >= lo) & (edge_index[0] < hi)
        out[lo:hi] = model.encode(x[lo:hi], edge_index[:, inside] - lo, ptr[first:last + 1] - lo)
        first = last
    return out


# ------------------------------------------------------------------------------ encoder
class GPSEEncoder(nn.Module):
    """``gpse`` ``[N, dim]`` -> ``[N, channels]`` as the GPSE paper's downstream encoder (its
    ``GPSENodeEncoder`` with ``raw_norm_type: BatchNorm``, a 2-layer ``mlp``): dropout on the
    input, BatchNorm, ``Linear(dim, 2 channels) -> ReLU -> Linear(2 channels, channels) ->
    ReLU``. graphpe adds the result to the node embedding where the paper concatenates it.

    Args:
        dim: width of the encoding (the GPSE model's ``dim_inner``).
        channels: output channels.
        dropout: dropout on the input encoding (the paper's ``input_dropout_be``, 0.5).
        attr_name: attribute read.
    """

    producer = "GPSEPE of graphpe.encodings.gpse"

    def __init__(self, dim: int, channels: int, dropout: float = 0.5,
                 attr_name: str = "gpse") -> None:
        super().__init__()
        self.dim, self.channels = check_positive_int("dim", dim), check_positive_int(
            "channels", channels)
        self.attr_name, self.dropout = attr_name, dropout
        self.norm = nn.BatchNorm1d(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * channels), nn.ReLU(),
                                 nn.Linear(2 * channels, channels), nn.ReLU())

    def forward(self, batch) -> Tensor:
        """``batch`` (reads ``batch[attr_name]``) or that tensor -> ``[N, channels]``."""
        x = batch if isinstance(batch, Tensor) else read_attribute(batch, self.attr_name,
                                                                   self.producer)
        if x.dim() != 2 or x.size(1) != self.dim:
            raise ValueError(f"expected {self.attr_name} [N, {self.dim}], got {list(x.shape)}")
        x = F.dropout(x.to(self.norm.weight.dtype), self.dropout, self.training)
        return self.mlp(self.norm(x))


def _check_dropout(name: str, value: object) -> float:
    value = check_number(name, value, low=0.0)
    if value >= 1.0:
        raise ValueError(f"{name} must be in [0, 1), got {value!r}")
    return value


@register
class GPSESpec(Encoding):
    name = "gpse"
    summary = ("a pretrained GPSE's output on random node features (needs checkpoint=PATH; "
               "graphpe pretrain-gpse trains one)")
    paper = "Cantürk et al., Graph Positional and Structural Encoder, ICML 2024"
    # no kernels of its own (torch only); warm-up skips it without a checkpoint
    family = "propagate"
    reference_test = "tests/encodings/test_gpse.py::test_transform_equals_pygs_gpse"

    transform_class = GPSEPE
    encoder_class = GPSEEncoder

    checkpoint: str | None = setting_of(GPSEPE, "checkpoint")
    # the encoder's input width; the transform reads it from the checkpoint
    dim: int = setting(512, check_positive_int)
    seed: int | None = setting_of(GPSEPE, "seed")
    dropout: float = setting(0.5, _check_dropout)

    requires = ("checkpoint",)

    def transform(self) -> GPSEPE:
        return GPSEPE(self.checkpoint, dim=self.dim, seed=self.seed)

    def encoder(self, channels: int) -> nn.Module:
        return GPSEEncoder(self.dim, channels, dropout=self.dropout)
