"""Encodings computed ahead of use: a training run's (the transforms of its PE specs, its
dataset's splits encoded through :func:`~graphpe.transforms.precompute` and its cache, the
random PEs of the training graphs drawn anew every epoch), and one large graph's written to
files (:func:`encode_graph`, ``graphpe encode``) and read back (:func:`read_encodings`)."""

from __future__ import annotations

import copy
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import Tensor
from torch_geometric.data import Data
from torch_geometric.transforms import Compose

from graphpe.datasets import DatasetBundle
from graphpe.encodings import pe_model_config, resolve_pe, transforms_of
from graphpe.ops.files import load_torch_file
from graphpe.records import versions
from graphpe.transforms import PETransform, precompute
from graphpe.transforms.cache import fingerprint_of

ENCODINGS_FORMAT = "graphpe-encodings-1"
ENCODINGS_WHAT = "the node encodings graphpe encode writes (NAME.pt beside NAME.json)"


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


def graph_digest(graph: Data) -> str:
    """The digest of ``graph``'s structure (node count, ``edge_index`` and any
    ``edge_weight``): what encodings written by :func:`encode_graph` are checked against."""
    count = torch.tensor([graph.num_nodes], dtype=torch.int64)
    return fingerprint_of([count, graph.edge_index, graph.get("edge_weight")])


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
        torch.save(tensors, out / f"{spec.name}.pt")
        record = {"format": ENCODINGS_FORMAT, "encoding": spec.to_dict(),
                  "transform": repr(transform), "attributes": sorted(tensors),
                  "graph": {"digest": digest, "num_nodes": graph.num_nodes,
                            "num_edges": int(graph.edge_index.size(1))},
                  "seconds": seconds, "versions": versions()}
        (out / f"{spec.name}.json").write_text(json.dumps(record, indent=1) + "\n")
        written[spec.name] = out / f"{spec.name}.pt"
    return written


def read_encodings(out_dir: str | os.PathLike, graph: Data | None = None) -> dict[str, Tensor]:
    """The attributes of every encoding :func:`encode_graph` wrote to ``out_dir`` (or the
    ranks of :func:`graphpe.encode_distributed.encode_graph_distributed`, their rows
    assembled); with ``graph``, checked to be of that graph (its digest) first, and attached
    to it."""
    out = Path(out_dir)
    records = sorted(out.glob("*.json"))
    if not records:
        raise FileNotFoundError(f"{out}: no encodings (graphpe encode writes NAME.pt and "
                                "NAME.json there)")
    tensors: dict[str, Tensor] = {}
    digest = None if graph is None else graph_digest(graph)
    for path in records:
        record = json.loads(path.read_text())
        if record.get("format") != ENCODINGS_FORMAT:
            raise ValueError(f"{path}: not graphpe's encodings (format "
                             f"{record.get('format')!r})")
        if digest is not None and record["graph"]["digest"] != digest:
            raise ValueError(f"{path}: encodings of another graph (digest "
                             f"{record['graph']['digest'][:12]}..., this graph's "
                             f"{digest[:12]}...)")
        if "partition" in record:  # written by the ranks of graphpe.encode_distributed
            tensors.update(assemble_ranks(path, record))
        else:
            tensors.update(load_torch_file(path.with_suffix(".pt"), ENCODINGS_WHAT))
    if graph is not None:
        for key, value in tensors.items():
            graph[key] = value
    return tensors


def assemble_ranks(record_path: Path, record: dict[str, Any]) -> dict[str, Tensor]:
    """The whole graph's attributes from the ranks' files ``record`` names (rows in rank
    order, or, where the rows were reordered, each rank's rows put at the input's nodes its
    node file names), checked to cover the graph's nodes."""
    partition = record["partition"]
    node_files = partition.get("node_files")
    files = [record_path.parent / name for name in partition["files"] + (node_files or [])]
    missing = [f.name for f in files if not f.exists()]
    if missing:
        raise FileNotFoundError(f"{record_path}: missing the rows of {', '.join(missing)}")
    world = len(partition["files"])
    parts = [load_torch_file(f, ENCODINGS_WHAT) for f in files[:world]]
    whole = {key: torch.cat([p[key] for p in parts]) for key in parts[0]}
    n = record["graph"]["num_nodes"]
    for key, value in whole.items():
        if value.size(0) != n:
            raise ValueError(f"{record_path}: the ranks' rows of {key} cover {value.size(0)} "
                             f"of the graph's {n} nodes")
    if node_files:
        nodes = torch.cat([load_torch_file(f, ENCODINGS_WHAT) for f in files[world:]])
        if (nodes.numel() != n or int(nodes.min()) < 0 or int(nodes.max()) >= n
                or not bool(torch.bincount(nodes, minlength=n).eq(1).all())):
            raise ValueError(f"{record_path}: the ranks' node files do not name each of the "
                             f"graph's {n} nodes once")
        for key, value in whole.items():
            placed = torch.empty_like(value)
            placed[nodes] = value
            whole[key] = placed
    return whole
