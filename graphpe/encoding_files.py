"""The files of one graph's encodings, written by ``graphpe encode`` in one process
(:func:`graphpe.encode.encode_graph`) or by the ranks of a torch.distributed group
(:mod:`graphpe.encode_distributed`), and read back (:func:`read_encodings`): the one place that
knows their format.

For each encoding ``NAME`` of a folder: ``NAME.json``, the record (``format``, the encoding's
settings and transform, its attributes, the graph's digest, node and edge counts, the
seconds, the versions, and for the ranks their ``partition``), and the attributes
``{attribute: tensor}`` saved with ``torch.save``: ``NAME.pt`` from one process, or one file of
rows per rank (:func:`shard_name`), with the input's node ids of each rank's rows
(:func:`nodes_name`) where the rows were reordered.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import torch
from torch import Tensor
from torch_geometric.data import Data

from graphpe.ops.files import load_torch_file
from graphpe.records import versions
from graphpe.transforms.cache import fingerprint_of

ENCODINGS_FORMAT = "graphpe-encodings-1"
ENCODINGS_WHAT = "the node encodings graphpe encode writes (NAME.pt beside NAME.json)"


def graph_digest(graph: Data) -> str:
    """The digest of ``graph``'s structure (node count, ``edge_index`` and any
    ``edge_weight``): what written encodings are checked against."""
    count = torch.tensor([graph.num_nodes], dtype=torch.int64)
    return fingerprint_of([count, graph.edge_index, graph.get("edge_weight")])


def shard_name(name: str, rank: int, world: int) -> str:
    """The file of rank ``rank``'s rows of encoding ``name``."""
    return f"{name}.rank{rank}of{world}.pt"


def nodes_name(name: str, rank: int, world: int) -> str:
    """The file of the input's node ids of rank ``rank``'s rows of encoding ``name``, where
    the rows were reordered."""
    return f"{name}.rank{rank}of{world}.nodes.pt"


def encoding_record(spec: Any, transform: Any, tensors: dict[str, Tensor],
                    graph: dict[str, Any], seconds: float, **extra: Any) -> dict[str, Any]:
    """The record ``NAME.json`` of an encoding: ``graph`` the graph's digest and counts;
    ``extra`` (the ranks' ``partition``) joins it."""
    return {"format": ENCODINGS_FORMAT, "encoding": spec.to_dict(),
            "transform": repr(transform), "attributes": sorted(tensors), "graph": graph,
            "seconds": seconds, "versions": versions(), **extra}


def write_record(out: Path, name: str, record: dict[str, Any]) -> None:
    (out / f"{name}.json").write_text(json.dumps(record, indent=1) + "\n")


def write_encoding(out: Path, spec: Any, transform: Any, tensors: dict[str, Tensor],
                   graph: dict[str, Any], seconds: float) -> Path:
    """One process's encoding: ``out/NAME.pt`` and its record; returns the ``.pt``'s path."""
    path = out / f"{spec.name}.pt"
    torch.save(tensors, path)
    write_record(out, spec.name, encoding_record(spec, transform, tensors, graph, seconds))
    return path


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
