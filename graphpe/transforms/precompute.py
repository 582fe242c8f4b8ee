"""Dataset-level precompute: every graph of a dataset through the batched kernels, with an
optional on-disk cache."""

from __future__ import annotations

import contextlib
import copy
import gc
import hashlib
import io
import json
import logging
import os
import re
import socket
import tempfile
import time
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor
from torch.utils.data import Subset
from torch_geometric.data import Data, InMemoryDataset
from torch_geometric.transforms import BaseTransform, Compose
from tqdm.auto import tqdm

from graphpe.encodings.transform import PETransform, concat_to_x, fields, node_count, set_fields
from graphpe.ops.checks import check_positive_int
from graphpe.ops.graph import INDEX_DTYPES, validate_graph

CACHE_FORMAT = 1
_MAGIC = b"GRAPHPE1"


class _Structure:
    """The concatenated structure of a whole dataset: node offsets ``ptr`` ``[G + 1]``, edge
    offsets ``eptr`` ``[G + 1]``, ``edge_index`` with global node ids, optional weights."""

    def __init__(self, ptr: Tensor, eptr: Tensor, edge_index: Tensor, edge_weight: Tensor | None):
        self.ptr, self.eptr, self.edge_index, self.edge_weight = ptr, eptr, edge_index, edge_weight

    @property
    def num_graphs(self) -> int:
        return self.ptr.numel() - 1

    def chunk(self, lo: int, hi: int, device: torch.device | str | None):
        n0, n1 = int(self.ptr[lo]), int(self.ptr[hi])
        e0, e1 = int(self.eptr[lo]), int(self.eptr[hi])
        ei = (self.edge_index[:, e0:e1] - n0).to(device)
        ew = None if self.edge_weight is None else self.edge_weight[e0:e1].to(device)
        return ei, n1 - n0, (self.ptr[lo : hi + 1] - n0).to(device), ew

    def fingerprint(self) -> str:
        h = hashlib.sha256()
        for t in (self.ptr, self.eptr, self.edge_index, self.edge_weight):
            if t is not None:
                h.update(str(t.dtype).encode())
                h.update(t.contiguous().numpy().tobytes())
        return h.hexdigest()


def _structure_of_in_memory(dataset: InMemoryDataset) -> _Structure | None:
    """Read the structure straight from an ``InMemoryDataset``'s collated storage (no per-graph
    ``Data`` objects); None where the storage does not allow it."""
    if dataset.transform is not None or getattr(dataset, "_indices", None) is not None:
        return None  # (a view is first gathered by _stored_graphs)
    data, slices = dataset._data, dataset.slices
    if slices is None or "edge_index" not in slices or "x" not in slices:
        return None
    if data.x.size(0) != int(slices["x"][-1]):
        return None
    if data.edge_index.dtype not in INDEX_DTYPES:
        # validate before any cast: a bool or float index must not be silently converted
        validate_graph(data.edge_index, int(slices["x"][-1]))
    ptr = slices["x"].long()
    eptr = slices["edge_index"].long()
    local = data.edge_index.long()
    edge_graph = torch.repeat_interleave(torch.arange(ptr.numel() - 1), eptr[1:] - eptr[:-1])
    _check_local_ids(local.numpy(), (ptr[1:] - ptr[:-1]).numpy(), eptr.numpy(),
                     edge_graph.numpy())
    edge_index = local + ptr[edge_graph].unsqueeze(0)
    weight = None
    if "edge_weight" in slices:
        if not torch.equal(slices["edge_weight"].long(), eptr):
            g = int(torch.nonzero(slices["edge_weight"].long() != eptr)[0]) - 1
            raise ValueError(f"graph {max(g, 0)}: edge_weight must have one entry per edge")
        weight = _host_weight(data.edge_weight)
    return _Structure(ptr, eptr, edge_index, weight)


def _stored_graphs(dataset: object) -> InMemoryDataset | None:
    """``dataset``'s graphs as one ``InMemoryDataset`` read from collated storage: a whole
    dataset as it is; a view of one (``dataset[idx]``, ``dataset[a:b]``, an OGB split) or a
    ``torch.utils.data.Subset`` of either as a copy holding just those graphs, in order, every
    stored attribute gathered in one pass per attribute (no per-graph ``Data``). None where the
    graphs are not read from storage as stored (a ``transform`` is set) or ``dataset`` is none
    of these."""
    picks: list[np.ndarray] = []
    while isinstance(dataset, Subset):
        pick = dataset.indices
        picks.append(pick.numpy().reshape(-1) if isinstance(pick, Tensor)
                     else np.fromiter(pick, dtype=np.int64, count=len(pick)))
        dataset = dataset.dataset
    if not isinstance(dataset, InMemoryDataset) or dataset.transform is not None:
        return None
    if getattr(dataset, "_indices", None) is None and not picks:
        return dataset
    view = getattr(dataset, "_indices", None)
    index = (np.arange(dataset.len()) if view is None
             else view.numpy() if isinstance(view, Tensor)
             else np.arange(dataset.len())[view] if isinstance(view, slice)
             else np.fromiter(view, dtype=np.int64, count=len(view)))
    for pick in reversed(picks):  # the innermost Subset picks first
        index = index[pick]  # negative and out-of-range picks behave as Subset's do
    return _gather_storage(dataset, torch.from_numpy(index))


def _gather_storage(dataset: InMemoryDataset, index: Tensor) -> InMemoryDataset | None:
    """A shallow copy of ``dataset`` whose storage holds only its stored graphs ``index``, in
    that order (no view left); None where an attribute is neither a tensor nor a per-graph
    list (the per-graph path handles it). A run of consecutive graphs is a view of the
    storage, not a copy."""
    data, slices = dataset._data, dataset.slices
    if not isinstance(data, Data) or slices is None:
        return None
    index_np = index.numpy()
    if index_np.size == 0:
        return None
    consecutive = bool((np.diff(index_np) == 1).all())
    gathered, new_slices = Data(), {}
    rows: list[tuple[Tensor, tuple]] = []  # per distinct slices: (first, rows, new offsets)
    for key, value in data.items():
        if key == "num_nodes":  # kept per graph beside the storage (below)
            continue
        if key not in slices:
            return None
        bounds = slices[key].long()
        known = next((r for r in rows if r[0] is bounds or torch.equal(r[0], bounds)), None)
        if known is None:
            b = bounds.numpy()
            starts = b[:-1][index_np]
            counts = b[1:][index_np] - starts
            picked = None if consecutive else _ranges(starts, counts)
            offsets = np.zeros(counts.size + 1, dtype=np.int64)
            np.cumsum(counts, out=offsets[1:])
            known = (bounds, (int(starts[0]) if consecutive else 0, picked,
                              torch.from_numpy(offsets)))
            rows.append(known)
        first, picked, offsets = known[1]
        if isinstance(value, Tensor):
            dim = data.__cat_dim__(key, value)
            dim = dim + value.dim() if dim < 0 else dim
            if picked is None:
                gathered[key] = value.narrow(dim, first, int(offsets[-1]))
            elif value.device.type == "cpu" and value.dtype in _NUMPY_DTYPES:
                gathered[key] = torch.from_numpy(np.take(value.numpy(), picked, axis=dim))
            else:
                gathered[key] = value.index_select(dim, torch.from_numpy(picked).to(value.device))
        elif isinstance(value, list) and len(value) == bounds.numel() - 1:
            gathered[key] = [value[i] for i in index_np.tolist()]
        else:
            return None
        new_slices[key] = offsets.clone()
    counts_per_graph = getattr(data._store, "_num_nodes", None)
    if counts_per_graph is not None:
        gathered._store._num_nodes = [counts_per_graph[i] for i in index_np.tolist()]
        gathered.num_nodes = sum(gathered._store._num_nodes)
    out = copy.copy(dataset)
    out._indices = None
    out._data, out.slices, out._data_list = gathered, new_slices, None
    return out


_NUMPY_DTYPES = (torch.float16, torch.float32, torch.float64, torch.int8, torch.int16,
                 torch.int32, torch.int64, torch.uint8, torch.bool)


def _ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The concatenation of ``arange(s, s + c)`` for each start ``s`` and count ``c``."""
    offsets = np.cumsum(counts) - counts
    return np.repeat(starts - offsets, counts) + np.arange(int(counts.sum()))


def _check_local_ids(local: np.ndarray, sizes: np.ndarray, eptr: np.ndarray,
                     edge_graph: np.ndarray) -> None:
    """Every graph's edges within its own nodes ``[0, sizes[g])``, checked before the graphs'
    offsets are added: after them an edge past its graph's last node would silently land in
    the next graph."""
    if local.shape[1] == 0:
        return
    bound = sizes[edge_graph]
    bad = ((local < 0) | (local >= bound)).any(0)
    if bad.any():  # the message a call on that graph alone gives
        g = int(edge_graph[int(np.argmax(bad))])
        try:
            validate_graph(torch.from_numpy(np.ascontiguousarray(local[:, eptr[g]:eptr[g + 1]])),
                           int(sizes[g]))
        except ValueError as err:
            raise ValueError(f"graph {g}: {err}") from None


def _host_weight(weight: Tensor) -> Tensor:
    """Edge weights on the host in a dtype numpy holds (bfloat16 widened exactly)."""
    weight = weight.detach().cpu()
    return weight.float() if weight.dtype == torch.bfloat16 else weight


def _structure_of_list(graphs: Sequence[Data]) -> _Structure:
    """The structure of a list of graphs: one pass reading each graph's ``num_nodes``,
    ``edge_index`` and ``edge_weight`` as numpy views, then a few whole-array operations
    (no per-graph tensor work)."""
    count = len(graphs)
    sizes = np.empty(count, dtype=np.int64)
    esizes = np.empty(count, dtype=np.int64)
    edges: list[np.ndarray] = []
    weights: list[np.ndarray | None] = []
    for i, data in enumerate(graphs):
        if not isinstance(data, Data):
            raise ValueError(f"graph {i} is a {type(data).__name__}, not a torch_geometric Data")
        store = fields(data)
        n = node_count(data, store)
        if n is None:
            raise ValueError(f"graph {i} has no nodes: set num_nodes or x")
        ei = store.get("edge_index")
        if ei is None:
            ei_np = np.zeros((2, 0), dtype=np.int64)
        else:
            if not isinstance(ei, Tensor) or ei.dtype not in INDEX_DTYPES \
                    or ei.dim() != 2 or ei.size(0) != 2:
                # validate_graph names the problem (it only sees the concatenated edges)
                try:
                    validate_graph(ei, int(n))
                except ValueError as err:
                    raise ValueError(f"graph {i}: {err}") from None
            ei_np = ei.detach().cpu().numpy()
        w = store.get("edge_weight")
        if w is not None and not isinstance(w, Tensor):
            raise ValueError(f"graph {i}: edge_weight must be a torch.Tensor [num_edges], got a "
                             f"{type(w).__name__}")
        if w is not None and tuple(w.shape) != (ei_np.shape[1],):
            # (checked per graph: concatenated, a surplus here would fill a gap further on)
            raise ValueError(f"graph {i}: edge_weight must have shape [{ei_np.shape[1]}] (one "
                             f"per edge), got {list(w.shape)}")
        sizes[i] = n
        esizes[i] = ei_np.shape[1]
        edges.append(ei_np)
        weights.append(None if w is None else _host_weight(w).numpy())
    ptr = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(sizes, out=ptr[1:])
    eptr = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(esizes, out=eptr[1:])
    edge_index = (np.concatenate(edges, axis=1).astype(np.int64, copy=False) if edges
                  else np.zeros((2, 0), dtype=np.int64))
    edge_graph = np.repeat(np.arange(count), esizes)
    _check_local_ids(edge_index, sizes, eptr, edge_graph)
    edge_index = edge_index + ptr[:-1][edge_graph]  # local -> global node ids
    has_weight = [w is not None for w in weights]
    if any(has_weight) and not all(has_weight):
        raise ValueError("some graphs have edge_weight and others do not")
    weight = (torch.from_numpy(np.concatenate(weights)) if weights and all(has_weight)
              else None)
    return _Structure(torch.from_numpy(ptr), torch.from_numpy(eptr),
                      torch.from_numpy(edge_index), weight)


def _as_list(transforms: BaseTransform | Sequence[BaseTransform]) -> list[BaseTransform]:
    if transforms is None or isinstance(transforms, (str, bytes)):
        raise ValueError("transforms must be a transform, a Compose or a list of transforms, "
                         f"got {transforms!r}")
    if isinstance(transforms, Compose):
        return list(transforms.transforms)
    if isinstance(transforms, BaseTransform):
        return [transforms]
    out = list(transforms)
    for t in out:
        if not callable(t):
            raise ValueError(f"not a transform: {t!r}")
    return out


def cache_key(transforms: Sequence[BaseTransform], fingerprint: str) -> str:
    """The cache key: the transforms' settings (their ``repr``) and the data's fingerprint."""
    payload = json.dumps([CACHE_FORMAT, [repr(t) for t in transforms], fingerprint])
    return hashlib.sha256(payload.encode()).hexdigest()


LOG = logging.getLogger("graphpe")

# A temporary cache file is named <final name>.<host tag>-<pid>-<random>.tmp, so a later run can
# tell that its writer died (SIGKILL, power loss) before the atomic rename.
STALE_TEMP_SECONDS = 24 * 3600
_TEMP_NAME = re.compile(r"\.([0-9a-f]{8})-(\d+)-[^.]*\.tmp$")


def _host_tag() -> str:
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: existence check only (POSIX)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def remove_stale_temps(cache_dir: str | os.PathLike, now: float | None = None) -> list[Path]:
    """Delete the temporary files of cache writes that never finished: those whose writer
    process on this host is gone, and any older than :data:`STALE_TEMP_SECONDS` (writers on
    other hosts of a shared folder). Returns the files removed."""
    now = time.time() if now is None else now
    host, removed = _host_tag(), []
    for tmp in Path(cache_dir).glob("*.tmp"):
        match = _TEMP_NAME.search(tmp.name)
        if match is None:
            continue
        try:
            age = now - tmp.stat().st_mtime
        except FileNotFoundError:  # its writer just renamed or removed it
            continue
        dead = (os.name == "posix" and match.group(1) == host
                and not _pid_alive(int(match.group(2))))
        if dead or age > STALE_TEMP_SECONDS:
            tmp.unlink(missing_ok=True)
            removed.append(tmp)
    return removed


def _save_atomic(path: Path, obj: dict[str, Any]) -> None:
    buf = io.BytesIO()
    torch.save(obj, buf)
    payload = buf.getvalue()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f"{path.name}.{_host_tag()}-{os.getpid()}-",
                               suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(_MAGIC + hashlib.sha256(payload).digest() + payload)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _load_verified(path: Path, key: str) -> dict[str, Any] | None:
    """The cached outputs, or None if the file is absent, damaged or for another key."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    head = len(_MAGIC) + 32
    if len(raw) < head or raw[: len(_MAGIC)] != _MAGIC:
        warnings.warn(f"cache file {path} is damaged (bad header); recomputing", stacklevel=3)
        return None
    payload = raw[head:]
    if hashlib.sha256(payload).digest() != raw[len(_MAGIC) : head]:
        warnings.warn(f"cache file {path} is damaged (checksum mismatch); recomputing",
                      stacklevel=3)
        return None
    obj = torch.load(io.BytesIO(payload), weights_only=True)
    if obj.get("key") != key or obj.get("format") != CACHE_FORMAT:
        return None
    return obj


def precompute(
    dataset: InMemoryDataset | Sequence[Data],
    transforms: BaseTransform | Sequence[BaseTransform],
    batch_size: int = 4096,
    cache_dir: str | os.PathLike | None = None,
    device: torch.device | str | None = None,
    progress: bool = True,
    num_workers: int = 1,
) -> InMemoryDataset | list[Data]:
    """Encode every graph of ``dataset`` with ``transforms`` through the batched kernels.

    Graphs are processed ``batch_size`` at a time: each chunk's structure goes through every
    transform's batched :meth:`~PETransform.compute` in one call, on ``device`` (default: where
    the data is). Other (non-graphpe) transforms are applied graph by graph, in order.

    Returns a copy of an ``InMemoryDataset`` with the new node attributes added to its storage
    (the original is untouched), or a list of shallow-copied ``Data`` for any other sequence.
    A view of an ``InMemoryDataset`` (``dataset[idx]``, ``dataset[a:b]``, an OGB split) or a
    ``torch.utils.data.Subset`` of one takes the whole dataset's path: the result is an
    ``InMemoryDataset`` holding just those graphs, in that order, read from the storage
    without building a ``Data`` per graph.

    ``num_workers`` > 1 encodes contiguous shards of the dataset in that many threads (the
    compiled CPU kernels release the GIL); the outputs, and the cache, are bit for bit those of
    one worker. Transforms with random draws (RFP, random LapPE signs) keep their chunks in
    order, so they gain nothing from it.

    With ``cache_dir``, the outputs are stored in ``cache_dir/<key>.pt`` where the key hashes the
    transforms' settings and the graphs' structure, so a different setting or different data
    never reuses a cache. A random transform with ``seed=None`` (RFP, random LapPE signs) is
    cached as well: a later run then reuses the first run's draws, and warns that it does.
    Files are written atomically and checksummed (the temporary file of a
    write that was killed is removed by a later run); a damaged file is
    detected, reported and recomputed.
    """
    batch_size = check_positive_int("batch_size", batch_size)
    num_workers = check_positive_int("num_workers", num_workers)
    if isinstance(dataset, (str, bytes, Data)) or not (
            hasattr(dataset, "__len__") and hasattr(dataset, "__getitem__")):
        raise ValueError("dataset must be a sequence of Data (a list, an InMemoryDataset or "
                         f"another PyG dataset), got {type(dataset).__name__}")
    tlist = _as_list(transforms)
    pe = [t for t in tlist if isinstance(t, PETransform)]
    others = [t for t in tlist if not isinstance(t, PETransform)]
    if others and tlist[: len(pe)] != pe:
        raise ValueError(
            "graphpe transforms must come before other transforms in precompute; "
            f"got order {[type(t).__name__ for t in tlist]}"
        )
    if others and cache_dir is not None:
        raise ValueError(
            "cache_dir caches graphpe transforms only; apply "
            f"{[type(t).__name__ for t in others]} separately"
        )

    with _gc_paused():
        return _precompute(dataset, tlist, batch_size, cache_dir, device, progress,
                           num_workers)


@contextlib.contextmanager
def _gc_paused():
    """Pause Python's cyclic garbage collector: the per-graph loops below allocate a few
    objects per graph, and with tens of thousands of ``Data`` alive every generation-2
    collection they trigger walks all of them. Collection is deferred to the end, not
    skipped."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _precompute(
    dataset: InMemoryDataset | Sequence[Data],
    tlist: list[BaseTransform],
    batch_size: int,
    cache_dir: str | os.PathLike | None,
    device: torch.device | str | None,
    progress: bool,
    num_workers: int = 1,
) -> InMemoryDataset | list[Data]:
    pe = [t for t in tlist if isinstance(t, PETransform)]
    others = [t for t in tlist if not isinstance(t, PETransform)]
    structure = None
    stored = _stored_graphs(dataset)
    if stored is not None:
        structure = _structure_of_in_memory(stored)
        if structure is not None:
            dataset = stored
    graphs: list[Data] | None = None
    if structure is None:
        graphs = [dataset[i] for i in range(len(dataset))]
        structure = _structure_of_list(graphs)

    outputs = None
    path = None
    if cache_dir is not None:
        key = cache_key(pe, structure.fingerprint())
        path = Path(cache_dir) / f"{key}.pt"
        if path.parent.is_dir():
            remove_stale_temps(path.parent)
        cached = _load_verified(path, key)
        if cached is not None:
            LOG.info("cache hit: %s", path)
            outputs = cached["outputs"]
            unseeded = [t for t in pe if t.draws_random and getattr(t, "seed", 0) is None]
            if unseeded:
                # seed=None promises fresh draws, which a cache cannot keep: say so
                warnings.warn(f"precompute: {', '.join(type(t).__name__ for t in unseeded)} "
                              "with seed=None reuse the random draws cached by an earlier "
                              f"run ({path.name}); pass seed= to make the draws reproducible, "
                              "or drop cache_dir for fresh ones", stacklevel=2)
    edge_level = set().union(*(t.edge_attributes() for t in pe))
    if outputs is None:
        with _reproducible_draws(pe):
            outputs = _run(structure, pe, batch_size, device, progress, num_workers)
        if path is not None:
            _save_atomic(path, {"format": CACHE_FORMAT, "key": key, "outputs": outputs})
            LOG.info("cache written: %s", path)
    outputs = dict(outputs)
    pair_level = _pair_offsets(structure, pe, outputs)

    if graphs is None:
        return _attach_to_storage(dataset, structure, outputs, edge_level, others, pair_level)
    return _attach_to_list(graphs, structure, outputs, edge_level, others, pair_level)


@contextlib.contextmanager
def _reproducible_draws(transforms: list[PETransform]) -> Iterator[None]:
    """Random transforms restarted from their seeds, drawing the same stream in every process
    of a distributed run (which all encode the dataset alike) while the block runs."""
    with contextlib.ExitStack() as stack:
        for t in transforms:
            if getattr(t, "_generator", None) is not None:
                t.reset_generator()  # the same seed gives the same result on every run
                stack.enter_context(t.shared_stream())
        yield


def _run(
    structure: _Structure,
    transforms: list[PETransform],
    batch_size: int,
    device: torch.device | str | None,
    progress: bool,
    num_workers: int = 1,
) -> dict[str, Tensor]:
    total = structure.num_graphs
    on_cpu = device is None or torch.device(device).type == "cpu"
    # Shards: the compiled CPU kernels release the GIL, so threads encode contiguous shards
    # in parallel. A graph's encoding does not depend on the graphs beside it, so the result is
    # the single worker's bit for bit. Random draws do depend on the order of calls: with a
    # random transform the chunks stay sequential, as with one worker.
    parallel = num_workers > 1 and on_cpu and not any(t.draws_random for t in transforms)
    # a few shards per worker, so that one slow shard does not leave the other threads idle
    size = min(batch_size, -(-total // (4 * num_workers))) if parallel and total else batch_size
    bounds = [(lo, min(lo + size, total)) for lo in range(0, total, size)]

    def encode(bound: tuple[int, int]) -> list[tuple[str, Tensor]]:
        ei, n, ptr, ew = structure.chunk(bound[0], bound[1], device)
        out = []
        for t in transforms:
            values = t.compute(ei, n, ptr, ew)
            pair_names = t.pair_attributes() if hasattr(t, "pair_attributes") else set()
            for name, value in values.items():
                if name in pair_names and name.endswith("_index"):
                    # stored per graph, as edge_index is: node ids local to the pair's graph.
                    # Pairs come graph by graph; how many each graph has is read off the index
                    # (all pairs: n^2; pairs within some hops: whatever the graph has).
                    chunk_ptr = ptr.cpu()
                    value = value.cpu()
                    graph = torch.searchsorted(chunk_ptr, value[0], right=True) - 1
                    out.append((f"{name}{PAIR_COUNTS}",
                                torch.bincount(graph, minlength=chunk_ptr.numel() - 1)))
                    value = value - chunk_ptr[graph]
                if name is None:
                    # attr_name=None of several transforms: columns of one block for x, in
                    # the transforms' order (as applying them one after another would give)
                    earlier = [i for i, (other, _) in enumerate(out) if other is None]
                    if earlier:
                        value = concat_to_x(out.pop(earlier[0])[1], value)
                out.append((name, value.cpu()))
        return out

    parts: dict[str, list[Tensor]] = {}
    with tqdm(total=total, desc="precompute", unit="graph", disable=not progress) as bar:
        if parallel:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(num_workers) as pool:
                results = pool.map(encode, bounds)  # in order
                for bound, result in zip(bounds, results, strict=True):
                    for name, value in result:
                        parts.setdefault(name, []).append(value)
                    bar.update(bound[1] - bound[0])
        else:
            for bound in bounds:
                for name, value in encode(bound):
                    parts.setdefault(name, []).append(value)
                bar.update(bound[1] - bound[0])
    pair_index = set().union(*(
        {n for n in t.pair_attributes() if n.endswith("_index")}
        for t in transforms if hasattr(t, "pair_attributes")))
    return {name: torch.cat(values, dim=-1 if name in pair_index else 0)
            for name, values in parts.items()}


# suffix of the per-graph pair counts that _run writes beside a pair index (not an attribute)
PAIR_COUNTS = ":pair_counts"


def _pair_offsets(structure: _Structure, transforms: list[PETransform],
                  outputs: dict[str, Tensor]) -> dict[str, Tensor]:
    """Per pair-level output name: where each graph's pairs start (``[G + 1]``), from the
    counts ``_run`` stored (taken out of ``outputs``), else (a cache file without those counts)
    from the transform's own count of all pairs."""
    sizes = structure.ptr[1:] - structure.ptr[:-1]
    out = {}
    for t in transforms:
        if hasattr(t, "pair_attributes"):
            stored = outputs.pop(f"{t.attr_name}_index{PAIR_COUNTS}", None)
            counts = stored if stored is not None else t.pair_counts(sizes)
            pptr = torch.cat([counts.new_zeros(1), counts.cumsum(0)])
            out.update({name: pptr for name in t.pair_attributes()})
    return out


def _attach_to_storage(
    dataset: InMemoryDataset,
    structure: _Structure,
    outputs: dict[str, Tensor],
    edge_level: set[str],
    others: list[BaseTransform],
    pair_level: dict[str, Tensor] | None = None,
) -> InMemoryDataset:
    out = copy.copy(dataset)
    data = copy.copy(dataset._data)
    slices = dict(dataset.slices)
    for name, value in outputs.items():
        if name is None:  # attr_name=None: extra columns of x (rows already sliced by ptr)
            data.x = concat_to_x(data.x if "x" in data else None, value)
            slices.setdefault("x", structure.ptr.clone())
            continue
        data[name] = value
        if pair_level and name in pair_level:
            slices[name] = pair_level[name].clone()
        else:
            slices[name] = (structure.eptr if name in edge_level else structure.ptr).clone()
    out._data, out.slices = data, slices
    out._data_list = None
    if others:
        out.transform = Compose([*(out.transform and [out.transform] or []), *others])
        warnings.warn(
            "non-graphpe transforms were attached as the dataset's transform (applied on access)",
            stacklevel=3,
        )
    return out


def _attach_to_list(
    graphs: list[Data],
    structure: _Structure,
    outputs: dict[str, Tensor],
    edge_level: set[str],
    others: list[BaseTransform],
    pair_level: dict[str, Tensor] | None = None,
) -> list[Data]:
    # Each graph gets views of the concatenated outputs (as InMemoryDataset.get gives), cut
    # by numpy slicing: torch.split costs ~20 us per piece, numpy ~1.
    ptr, eptr = structure.ptr.tolist(), structure.eptr.tolist()
    pair_level = pair_level or {}
    arrays = [(name, value.numpy() if name not in pair_level or not name.endswith("_index")
               else value.numpy().T,  # [P, 2] rows, sliced like the others, turned back below
               pair_level[name].tolist() if name in pair_level
               else eptr if name in edge_level else ptr)
              for name, value in outputs.items()]
    turned = {name for name in pair_level if name.endswith("_index")}
    result = []
    for i, data in enumerate(graphs):
        data = copy.copy(data)
        set_fields(data, {name: (torch.from_numpy(array[offsets[i] : offsets[i + 1]]).T
                                 if name in turned
                                 else torch.from_numpy(array[offsets[i] : offsets[i + 1]]))
                          for name, array, offsets in arrays})
        for t in others:
            data = t(data)
        result.append(data)
    return result
