"""Encodings computed ahead of use: a training run's (the transforms of its PE specs, its
dataset's splits encoded through :func:`~graphpe.transforms.precompute` and its cache, the
random PEs of the training graphs drawn anew every epoch), and one large graph's written to
files (:func:`encode_graph`, ``graphpe encode``) and read back (:func:`read_encodings`)."""

from __future__ import annotations

import copy
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch_geometric.data import Data
from torch_geometric.transforms import Compose

from graphpe.datasets import DatasetBundle
from graphpe.encoding_files import graph_digest as graph_digest  # (users' import)
from graphpe.encoding_files import read_encodings as read_encodings  # (users' import)
from graphpe.encoding_files import write_encoding
from graphpe.encodings import pe_model_config, resolve_pe, transforms_of
from graphpe.transforms import PETransform, precompute


def pe_transforms(pe: Any) -> tuple[list[PETransform], dict[str, dict[str, Any]]]:
    """The transforms and the ``pe`` config of :func:`graphpe.nn.build.build_model` for PEs given in
    any form :func:`graphpe.encodings.resolve_pe` takes (names, or names with settings)."""
    specs = resolve_pe(pe)
    return transforms_of(specs), pe_model_config(specs)


def encode_bundle(bundle: DatasetBundle, transforms: list[PETransform],
                  progress: bool = False,
                  cache_dir: str | None = None) -> tuple[DatasetBundle, float]:
    """Precompute PEs on every split (batched, through ``precompute``'s cache when
    ``cache_dir`` is given); returns the new bundle and the seconds spent. Splits that are
    one object (a node set's one graph) are encoded once and stay one object."""
    if not transforms:
        return bundle, 0.0
    start = time.perf_counter()
    pipeline = Compose(transforms)
    encoded: dict[int, Any] = {}
    for split in (bundle.train, bundle.val, bundle.test):
        if id(split) not in encoded:
            encoded[id(split)] = precompute(split, pipeline, progress=progress,
                                            cache_dir=cache_dir)
    splits = [encoded[id(split)] for split in (bundle.train, bundle.val, bundle.test)]
    seconds = time.perf_counter() - start
    out = copy.copy(bundle)
    out.train, out.val, out.test = splits
    return out, seconds


def encoding_bytes_per_node(before: Any, after: Any) -> float | None:
    """The memory the encodings add per node: the bytes of the tensors ``after``'s first
    graph holds that ``before``'s first graph does not, over its nodes (None for an empty
    split or a graph without nodes)."""
    if len(before) == 0 or len(after) == 0:
        return None
    plain, encoded = before[0], after[0]
    if not encoded.num_nodes:
        return None
    added = sum(value.numel() * value.element_size() for key, value in encoded.items()
                if key not in plain and isinstance(value, torch.Tensor))
    return added / encoded.num_nodes


def redraw_random_pes(train: Any, transforms: list[PETransform],
                      seed: int) -> Callable[[int], Any] | None:
    """``train_split`` of :func:`~graphpe.train.fit`: the encoded training graphs ``train``
    with the random PEs among ``transforms`` (random features, random signs) drawn anew every epoch,
    seeded by ``seed`` and the epoch; None where none of ``transforms`` is random."""
    random_pe = [t for t in transforms if t.draws_random]
    if not random_pe:
        return None

    def train_split(epoch: int):
        # the random PEs of the training graphs drawn anew (seeded by epoch); the others
        # (and val/test) keep their precomputed values
        fresh = [copy.copy(t) for t in random_pe]
        for t in fresh:
            t.seed = seed * 100_003 + epoch
        return precompute(train, fresh, progress=False)

    return train_split


def encode_graph(graph: Data, pe: Any, out_dir: str | os.PathLike) -> dict[str, Path]:
    """Compute the node encodings ``pe`` (anything :func:`graphpe.encodings.resolve_pe`
    takes) of the one graph ``graph`` and write each to ``out_dir/<name>.pt`` (its attributes,
    ``{attribute: tensor}``), with ``out_dir/<name>.json`` beside it: the format, the
    encoding's settings and transform, the graph's digest, node and edge counts, the seconds
    and the versions. Returns ``{name: path of its .pt}``. Encodings learned inside a model
    (no transform) are refused."""
    specs = resolve_pe(pe)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    digest = graph_digest(graph)
    written = {}
    for spec in specs:
        transform = spec.transform()
        if transform is None:
            raise ValueError(f"{spec.name} is learned inside the model: it has nothing to "
                             "compute ahead")
        start = time.perf_counter()
        encoded = transform(graph.clone())
        seconds = time.perf_counter() - start
        tensors = {k: encoded[k] for k in encoded.keys() if k not in graph}
        written[spec.name] = write_encoding(
            out, spec, transform, tensors, {"digest": digest, "num_nodes": graph.num_nodes,
                                            "num_edges": int(graph.edge_index.size(1))},
            seconds)
    return written
