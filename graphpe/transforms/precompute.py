"""Dataset-level precompute: every graph of a dataset through the batched kernels, in chunks
(optionally in worker threads), with an optional on-disk cache. The dataset's storage is read
and written by :mod:`graphpe.transforms.storage`, the cache by :mod:`graphpe.transforms.cache`."""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import warnings
from collections.abc import Iterator, Sequence

import torch
from torch import Tensor
from torch_geometric.data import Data, InMemoryDataset
from torch_geometric.transforms import BaseTransform, Compose
from tqdm.auto import tqdm

from graphpe.encodings.transform import PETransform, concat_to_x
from graphpe.ops.checks import check_positive_int
from graphpe.transforms.cache import (
    cache_key,
    cache_path,
    fingerprint_of,
    load_outputs,
    remove_stale_temps,
    save_outputs,
)
from graphpe.transforms.storage import (
    Structure,
    attach_to_list,
    attach_to_storage,
    stored_graphs,
    structure_of_in_memory,
    structure_of_list,
)

LOG = logging.getLogger("graphpe")


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
    one worker. Transforms with random draws (random features, random LapPE signs) keep their
    chunks in order, so they gain nothing from it.

    With ``cache_dir``, the outputs are stored in ``cache_dir/<key>.pt`` where the key hashes the
    transforms' settings and the graphs' structure, so a different setting or different data
    never reuses a cache. A random transform with ``seed=None`` (random features, random LapPE
    signs) is cached as well: a later run then reuses the first run's draws, and warns that it
    does. Files are written atomically and checksummed (the temporary file of a write that was
    killed is removed by a later run); a damaged file is detected, reported and recomputed.
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
    stored = stored_graphs(dataset)
    if stored is not None:
        structure = structure_of_in_memory(stored)
        if structure is not None:
            dataset = stored
    graphs: list[Data] | None = None
    if structure is None:
        graphs = [dataset[i] for i in range(len(dataset))]
        structure = structure_of_list(graphs)

    outputs = None
    path = None
    if cache_dir is not None:
        key = cache_key(pe, fingerprint_of(structure.tensors()))
        path = cache_path(cache_dir, key)
        if path.parent.is_dir():
            remove_stale_temps(path.parent)
        outputs = load_outputs(path, key)
        if outputs is not None:
            LOG.info("cache hit: %s", path)
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
            save_outputs(path, key, outputs)
            LOG.info("cache written: %s", path)
    outputs = dict(outputs)
    pair_level = _pair_offsets(structure, pe, outputs)

    if graphs is None:
        return attach_to_storage(dataset, structure, outputs, edge_level, others, pair_level)
    return attach_to_list(graphs, structure, outputs, edge_level, others, pair_level)


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
    structure: Structure,
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


def _pair_offsets(structure: Structure, transforms: list[PETransform],
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


