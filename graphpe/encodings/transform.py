"""The common shape of graphpe's transforms.

A :class:`PETransform` is a PyG ``BaseTransform`` whose work is done by :meth:`compute`, which
takes the structure of a whole batch (``edge_index``, ``num_nodes``, ``ptr``, ``edge_weight``)
and returns node-level tensors. ``forward`` calls it on a ``Data`` (one graph) or a ``Batch``
(all graphs at once); :func:`graphpe.transforms.precompute` calls it on chunks of a dataset
without building ``Batch`` objects at all.
"""

from __future__ import annotations

import contextlib
import dataclasses
import warnings
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import torch
from torch import Tensor
from torch_geometric.data import Data
from torch_geometric.transforms import BaseTransform

from graphpe.ops.checks import check_flag, check_seed, check_size_limit, checked_fields
from graphpe.ops.progress import elapsed_bar

__all__ = ["PETransform", "check_attr_names", "check_flag", "check_seed", "check_size_limit",
           "option"]


def fields(data: Data) -> dict[str, Any]:
    """The attribute dict of a ``Data``/``Batch`` (its storage's mapping), read directly:
    ``data.get(name)`` goes through a Mapping and a caught ``KeyError`` for every missing
    attribute, several microseconds each, and this runs once per graph."""
    store = getattr(data, "_store", None)
    mapping = getattr(store, "_mapping", None)
    return mapping if isinstance(mapping, dict) else data.to_dict()


def concat_to_x(x: Tensor | None, value: Tensor) -> Tensor:
    """The node features with ``value`` appended as extra columns: what PyG's transforms do
    for ``attr_name=None``. Refused for integer (categorical) ``x``, which PyG would silently
    truncate the encoding into."""
    value = value.reshape(value.size(0), -1)
    if x is None:
        return value
    if not x.is_floating_point():
        raise ValueError(f"attr_name=None appends the encoding to x, but x is {x.dtype} "
                         "(categorical features): the encoding would be truncated; give the "
                         "encoding its own attr_name")
    x = x.view(-1, 1) if x.dim() == 1 else x
    return torch.cat([x, value.to(x.device, x.dtype)], dim=-1)


def set_fields(data: Data, values: dict[str | None, Tensor]) -> None:
    """``data[name] = value`` for every item, writing the storage's mapping directly (not
    through PyG's ``__setitem__``). The storage's attribute-kind caches are cleared for those
    names, as ``__setitem__`` does. The name None appends the value to ``data.x``
    (:func:`concat_to_x`)."""
    if None in values:
        values = dict(values)
        values["x"] = concat_to_x(fields(data).get("x"), values.pop(None))
    store = getattr(data, "_store", None)
    mapping = getattr(store, "_mapping", None)
    if not isinstance(mapping, dict):
        for name, value in values.items():
            data[name] = value
        return
    caches = store.__dict__.get("_cached_attr")
    for name, value in values.items():
        if caches:
            for cache in caches.values():
                cache.discard(name)
        mapping[name] = value


class without_autocast:  # noqa: N801 - used as a function: ``with without_autocast():``
    """Turn ``torch.autocast`` off (CPU and CUDA) for the block: an encoding is computed in its
    own precision (float64 or float32) even when it is called inside a mixed-precision
    training step, where autocast would run its products in bfloat16/float16. (A class, not a
    generator: a transform called per graph enters it once per graph.)"""

    __slots__ = ("_stack",)

    def __enter__(self) -> None:
        self._stack = None
        for device_type in ("cpu", "cuda"):
            if torch.is_autocast_enabled(device_type):
                if self._stack is None:
                    self._stack = contextlib.ExitStack()
                self._stack.enter_context(torch.autocast(device_type, enabled=False))

    def __exit__(self, *exc: object) -> None:
        if self._stack is not None:
            self._stack.close()


def node_count(data: Data, store: dict[str, Any] | None = None) -> int | None:
    """``data.num_nodes``, read first from an explicit ``num_nodes`` or from ``x`` (PyG's own
    order of preference) before PyG's general inference, which scans every attribute."""
    store = fields(data) if store is None else store
    n = store.get("num_nodes")
    if n is not None:
        return int(n)
    x = store.get("x")
    if isinstance(x, Tensor) and x.dim() > 0:
        return x.size(0)
    return data.num_nodes


def check_attr_names(names: dict[str, object], optional: tuple[str, ...] = ()) -> None:
    """The attribute names a transform writes: non-empty strings (None where ``optional``
    allows it: PyG's "append to ``x``"), no two the same (one output would overwrite the
    other)."""
    seen: dict[str, str] = {}
    for arg, value in names.items():
        if value is None and arg in optional:
            continue
        if not isinstance(value, str) or not value:
            raise ValueError(f"{arg} must be a non-empty str, got {value!r}")
        if value in seen:
            raise ValueError(f"{seen[value]} and {arg} both name {value!r}: one output would "
                             "overwrite the other")
        seen[value] = arg


def graph_structure(data: Data) -> tuple[Tensor, int, Tensor | None, Tensor | None]:
    """``(edge_index, num_nodes, ptr, edge_weight)`` of a ``Data`` or ``Batch``; ``ptr`` is
    None for a single graph (the kernels then skip all batch bookkeeping). Edge weights are
    read from ``edge_weight`` only (as PyG's transforms read them); a one-dimensional float
    ``edge_attr`` beside no ``edge_weight`` is not read, and a warning says so."""
    store = fields(data)
    num_nodes = node_count(data, store)
    if num_nodes is None:
        raise ValueError("data has no nodes: set data.num_nodes or data.x")
    edge_index = store.get("edge_index")
    for name, value, shape in (("edge_index", edge_index, "[2, num_edges]"),
                               ("edge_weight", store.get("edge_weight"), "[num_edges]")):
        if value is not None and not isinstance(value, Tensor):
            raise ValueError(f"{name} must be a torch.Tensor {shape}, got a "
                             f"{type(value).__name__}")
    if edge_index is None:
        x = store.get("x")
        device = x.device if isinstance(x, Tensor) else "cpu"
        edge_index = torch.zeros(2, 0, dtype=torch.long, device=device)
    ptr = store.get("ptr")
    if ptr is None:
        batch = store.get("batch")
        if isinstance(batch, Tensor) and batch.numel() == num_nodes and num_nodes > 0:
            counts = torch.bincount(batch, minlength=int(batch.max()) + 1)
            ptr = torch.cat([counts.new_zeros(1), counts.cumsum(0)])
    if ptr is not None and ptr.device != edge_index.device:
        ptr = ptr.to(edge_index.device)
    edge_weight = store.get("edge_weight")
    edge_attr = store.get("edge_attr")
    if (edge_weight is None and isinstance(edge_attr, Tensor) and edge_attr.dim() == 1
            and edge_attr.is_floating_point()):
        warnings.warn(EDGE_ATTR_NOT_READ, stacklevel=3)
    return edge_index, int(num_nodes), ptr, edge_weight


# graphs (or batches) from this many nodes on run under an elapsed-time bar (which appears only
# past graphpe.ops.progress.PROGRESS_DELAY_SECONDS): no per-graph cost for molecules
WATCHED_NODES = 10_000

EDGE_ATTR_NOT_READ = (
    "the graph has a one-dimensional float edge_attr and no edge_weight: graphpe's encodings "
    "read edge weights from edge_weight only, so they treat this graph as unweighted; set "
    "data.edge_weight = data.edge_attr to weight it")


_FIXED = object()


def option(default: Any, check: Callable[[str, Any], Any] | None = None, *,
           key: bool | str = True, kw_only: bool = False) -> Any:
    """An option of a transform declared as a dataclass: its default, the check that validates
    and normalizes a value (``check(name, value)``, run when the transform is made), and
    whether it enters :meth:`PETransform.settings` (and so the ``repr`` and cache keys):
    ``True``; ``False`` for what cannot change an output (a size limit that only refuses
    larger graphs); ``"if_set"`` only where it differs from the default."""
    return dataclasses.field(default=default, kw_only=kw_only,
                             metadata={"check": check, "key": key})


def distributed_rank() -> int | None:
    """This process's rank in an initialized ``torch.distributed`` run of several processes,
    else None."""
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        return dist.get_rank()
    return None


def _mix_seeds(base: int, worker_seed: int) -> int:
    """A 63-bit seed from two (an odd multiplier spreads the worker seed over all bits)."""
    return (base ^ (worker_seed * 0x9E3779B97F4A7C15)) & ((1 << 63) - 1)


class PETransform(BaseTransform):
    """Base class: subclasses implement :meth:`compute` and declare their options once, as
    the fields of a dataclass (``@dataclass(eq=False, repr=False)``, each field an
    :func:`option`): the signature, the attributes, the checks, :meth:`settings`, ``repr``
    and cache keys all come from them. Checks across options go in :meth:`validate`.

    Transforms that draw random numbers keep a ``seed`` and one CPU generator: successive calls
    draw successive numbers, :meth:`reset_generator` restarts the stream (precompute does, so a
    dataset precompute is reproducible), and a draw never depends on the device. In a
    ``DataLoader`` worker process (a dataset's ``transform``) each worker draws its own stream
    (:meth:`draw_generator`), not a copy of the others', and so does each process of a
    distributed run (except inside :meth:`shared_stream`, as ``precompute`` runs).
    """

    seed: int | None = None
    # what the generator's stream was derived for: (DataLoader worker seed, distributed
    # rank), (None, None) for the transform's own stream; _FIXED inside fixed_draws
    _stream: tuple[int | None, int | None] | object = (None, None)
    # inside shared_stream: the same draws in every process of a distributed run
    _shared: bool = False

    def reset_generator(self) -> None:
        """Restart the stream of random draws from ``seed`` (a fresh random one if None)."""
        self._generator = torch.Generator()
        self._stream = (None, None)
        if self.seed is not None:
            self._generator.manual_seed(self.seed)
        else:
            self._generator.seed()
        self._base_seed = self._generator.initial_seed()

    @contextlib.contextmanager
    def shared_stream(self) -> Iterator[None]:
        """Inside the block, every process of a distributed run draws the same numbers (the
        transform's own stream, not one derived from the process's rank): ``precompute``
        runs in it, so that every process encodes a dataset alike."""
        saved = self._shared
        self._shared = True
        try:
            yield
        finally:
            self._shared = saved

    def draw_generator(self) -> torch.Generator:
        """The generator :meth:`compute` draws from. In the main process, the transform's one
        stream. In a ``torch.utils.data.DataLoader`` worker, every worker holds a copy of the
        transform made when the workers started, so every copy would draw the same numbers
        (identical random features for the graphs the workers load side by side); there the
        stream is derived once per worker from the transform's seed and the worker's seed
        (``get_worker_info().seed``: distinct per worker and per epoch, and fixed by
        ``torch.manual_seed`` in the main process, so runs stay reproducible). In a
        ``torch.distributed`` run of several processes, each holding the same seeded transform,
        the process's rank enters the derivation as well, so the graphs one process encodes do
        not get the draws the others give theirs (outside :meth:`shared_stream`)."""
        if self._stream is _FIXED:
            return self._generator
        info = torch.utils.data.get_worker_info()
        stream = (None if info is None else info.seed,
                  None if self._shared else distributed_rank())
        if stream != self._stream:
            seed = self.__dict__.get("_base_seed")
            if seed is None:  # a transform unpickled without a _base_seed
                seed = self.seed if self.seed is not None else self._generator.initial_seed()
            if stream[1] is not None:
                seed = _mix_seeds(seed, stream[1] + 1)
            if stream[0] is not None:
                seed = _mix_seeds(seed, stream[0])
            self._generator = torch.Generator().manual_seed(seed)
            self._stream = stream
        return self._generator

    @contextlib.contextmanager
    def fixed_draws(self) -> Iterator[None]:
        """Inside the block, draws come from a generator seeded afresh (``seed``, or 0 without
        one), in any process: the same features on every call (evaluation); the transform's
        stream is left where it was."""
        saved = self.__dict__.get("_generator"), self._stream
        self._generator = torch.Generator().manual_seed(0 if self.seed is None else self.seed)
        self._stream = _FIXED
        try:
            yield
        finally:
            self._generator, self._stream = saved

    #: what the transform's distributed path computes, in words (None: it has none): one
    #: graph's rows over the ranks of a torch.distributed group (:meth:`compute_rows`)
    distributed_path: ClassVar[str | None] = None

    def distributed_form(self, name: str) -> PETransform:
        """The transform the ranks of one graph compute for the encoding ``name`` (``graphpe
        encode`` under torchrun; :mod:`graphpe.encode_distributed`): itself by default, or
        one whose outputs its distributed path gives; a ValueError naming ``name`` where a
        setting has no distributed path."""
        return self

    def compute_rows(self, rows: Any, exchange: Any) -> tuple[dict[str, Tensor], dict[str, Any]]:
        """This rank's rows of the outputs of :meth:`compute` on one graph partitioned by rows
        (``rows``: :class:`~graphpe.ops.distributed.LocalRows`, ``exchange`` its
        :class:`~graphpe.ops.distributed.HaloExchange`; collective: every rank calls it), and
        what the computation measured (``method``, counts). Only where
        :attr:`distributed_path` is set."""
        raise NotImplementedError(f"{type(self).__name__} has no distributed path")

    def shared_generator(self, group: Any = None) -> torch.Generator:
        """A generator of the transform's own stream (its seed, or rank 0's draw where it has
        none), the same on every rank of ``group``: the draws of a distributed path are the
        single process's."""
        from graphpe.ops.distributed import broadcast_first

        with self.shared_stream():
            seed = self.draw_generator().initial_seed()
        # (a drawn seed is any uint64: rank 0's, folded into int64 for the broadcast; a given
        # seed is below 2^63 and stays itself)
        seed = int(broadcast_first(torch.tensor([seed % 2**63], dtype=torch.int64), group)[0])
        return torch.Generator().manual_seed(seed)

    def compute(
        self,
        edge_index: Tensor,
        num_nodes: int,
        ptr: Tensor | None,
        edge_weight: Tensor | None = None,
    ) -> dict[str, Tensor]:
        """Outputs ``{attribute name: [num_nodes, ...]}`` for a batch of graphs (or
        ``[num_edges, ...]`` for the names in :meth:`edge_attributes`); ``ptr`` ``[G + 1]``
        marks where each graph's nodes start, None meaning one graph."""
        raise NotImplementedError

    @property
    def draws_random(self) -> bool:
        """Whether the outputs use random draws (then they depend on the order of calls)."""
        return False

    def edge_attributes(self) -> set[str]:
        """Names among :meth:`compute`'s outputs that are per edge (aligned with
        ``edge_index``) rather than per node."""
        return set()

    def __post_init__(self) -> None:
        for name, value in checked_fields(self).items():
            setattr(self, name, value)
        self.validate()
        if any(f.name == "seed" for f in dataclasses.fields(self)):
            self.reset_generator()

    def validate(self) -> None:
        """Checks across options, after each option's own (none by default)."""

    def settings(self) -> dict[str, Any]:
        """Every option that changes the output (see :func:`option`); shown by ``repr`` and
        hashed into cache keys."""
        out = {}
        for f in dataclasses.fields(self):
            key, value = f.metadata.get("key", True), getattr(self, f.name)
            if key is True or (key == "if_set" and value != f.default):
                out[f.name] = value
        return out

    def forward(self, data: Data) -> Data:
        edge_index, num_nodes, ptr, edge_weight = graph_structure(data)
        if num_nodes < WATCHED_NODES:  # the per-graph pre_transform path: nothing added
            with without_autocast():
                set_fields(data, self.compute(edge_index, num_nodes, ptr, edge_weight))
            return data
        # a large graph (or batch) shows that it runs once it passes the progress delay
        with without_autocast(), elapsed_bar(f"{self!r} on {num_nodes:,} nodes"):
            set_fields(data, self.compute(edge_index, num_nodes, ptr, edge_weight))
        return data

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.settings().items())
        return f"{type(self).__name__}({args})"
