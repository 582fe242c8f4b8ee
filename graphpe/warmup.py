"""Compile graphpe's CPU kernels ahead of use (``graphpe warmup``).

The CPU paths of the encodings and of the fused GPS layer are numba kernels, compiled on their
first call and cached on disk (next to the package's sources, or under ``NUMBA_CACHE_DIR``). In
a fresh environment that first call pays the compile (seconds per encoding); later processes
load the cache. :func:`warm_up` pays it once, ahead of time (e.g. while building a container
image or before a job array), in several processes at once: kernels are grouped by family
(:func:`families`) and each family compiles in its own process, so the wall time is about that
of the slowest family instead of the sum.

Each family runs the public calls a user makes (a transform on one ``Data``, on a ``Batch``,
through :func:`~graphpe.transforms.precompute`; a training step and an evaluation pass of the
models), so the signatures compiled are the ones those calls need: after :func:`warm_up` such a
workload compiles nothing more.
"""

from __future__ import annotations

import copy
import dataclasses
import importlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

from graphpe.encodings.registry import FAMILIES, encodings
from graphpe.ops.checks import check_positive_int


def families() -> dict[str, tuple[str, ...]]:
    """Encoding names by the kernel family that compiles their kernels (each encoding
    declares its ``family``); ``models`` holds the models' kernels (fused GPS layer, GINE
    aggregation, attention and pair biases) and the encodings learned inside a model. In
    :data:`~graphpe.encodings.registry.FAMILIES` order, slowest first, so processes that take
    them in turn finish together."""
    return {family: tuple(name for name, cls in encodings().items() if cls.family == family)
            for family in FAMILIES}


def _graphs() -> list:
    """Two small molecule-like graphs with atom and bond types (a 6-ring with a tail, and a
    path with an isolated node), the shapes the kernels see in practice, and a 100-node ring
    with chords (past the eigensolver's small-graph limit, ``SMALL_EIGH_MAX``: its LAPACK
    path); each also as read from an ``InMemoryDataset`` (whose graphs' ``edge_index`` are
    non-contiguous views, a kernel signature of their own)."""
    import torch
    from torch_geometric.data import Data, InMemoryDataset

    def undirected(pairs):
        src, dst = zip(*pairs, strict=True)
        return torch.tensor([src + dst, dst + src])

    ring = undirected([(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 0), (5, 6), (6, 7)])
    path = undirected([(0, 1), (1, 2), (2, 3)])
    large = undirected([(i, (i + 1) % 100) for i in range(100)]
                       + [(i, (i + 37) % 100) for i in range(0, 100, 5)])
    graphs = []
    for edge_index, n in ((ring, 8), (path, 5), (large, 100)):
        graphs.append(Data(edge_index=edge_index, num_nodes=n,
                           x=torch.arange(n) % 3,
                           edge_attr=torch.arange(edge_index.size(1)) % 2,
                           y=torch.tensor([[0.5]])))
    stored = InMemoryDataset()
    stored.data, stored.slices = InMemoryDataset.collate(graphs)
    return graphs + [stored[i] for i in range(len(graphs))]


def _encode(pe: str, graphs: list) -> None:
    """Every CPU path of one PE's transform: per ``Data``, per ``Batch``, ``precompute``."""
    from torch_geometric.data import Batch

    from graphpe.encodings import pe_spec
    from graphpe.transforms import precompute

    declared = encodings()[pe]
    transforms = []
    for spec in [pe_spec(pe), *(pe_spec(pe, **s) for s in declared.warmup_variants)]:
        if any(getattr(spec, name) is None for name in spec.requires):
            continue  # (a pretrained model's encoding: no kernels, and no weights here)
        transforms.append(spec.transform())
    if transforms and transforms[0] is not None:  # the transform's own variants
        transforms += [dataclasses.replace(transforms[0], **options)
                       for options in declared.warmup_transform_variants]
    for transform in transforms:
        if transform is None:  # learned inside the model: nothing to precompute
            continue
        for g in graphs:
            transform(copy.copy(g))  # (a clone would make the views contiguous)
        transform(Batch.from_data_list([g.clone() for g in graphs]))
        precompute([g.clone() for g in graphs], [transform], progress=False)


def _sparse_factor_analysis(graph) -> None:
    """The kernels of the large-graph eigensolver's choice (the minimum degree ordering and
    the factor's column counts, :mod:`graphpe.ops.eigen.ordering`), which only graphs past
    the dense limit reach: on ``graph``'s pattern."""
    import numpy as np
    import scipy.sparse as sp

    from graphpe.ops.eigen.ordering import symbolic_cholesky

    row, col = graph.edge_index.numpy()
    n = int(graph.num_nodes)
    pattern = sp.csr_matrix((np.ones(row.size), (row, col)), shape=(n, n))
    symbolic_cholesky(pattern.indptr.astype(np.int64), pattern.indices.astype(np.int64))


def _fused_lanczos(graph) -> None:
    """The compiled steps of the large-graph Lanczos (:mod:`graphpe.ops.eigen.lanczos`) on
    ``graph``'s normalized Laplacian (the pattern product) and on a weighted one (the CSR
    product), with and without a null vector, for scipy's 32- and 64-bit indices."""
    import numpy as np
    import scipy.sparse as sp

    from graphpe.ops.eigen.lanczos import thick_restart_lanczos

    row, col = graph.edge_index.numpy()
    n = int(graph.num_nodes)
    scale = np.bincount(row, minlength=n).clip(1) ** -0.5
    null = np.full((n, 1), n**-0.5)
    for weights in (scale[row] * scale[col], np.full(row.size, 0.2)):
        lap = sp.identity(n, format="csr") - sp.csr_matrix((weights, (row, col)), shape=(n, n))
        for index in (np.int32, np.int64):  # scipy takes 64-bit indices past 2^31 entries
            csr = lap.copy()
            csr.indices, csr.indptr = lap.indices.astype(index), lap.indptr.astype(index)
            for deflate in (None, null):
                thick_restart_lanczos(csr, n, 2, null=deflate, ncv=8, max_products=16)


def _large_graph_walk_paths(graph) -> None:
    """The kernels of RWSE's exact paths for graphs past its dense limit (the path chooser's
    ball profile and each of :data:`~graphpe.ops.walk.large.LANDING_PATHS`), which only such
    graphs reach (a TU set's largest graphs do): each path on ``graph``, into float32 and
    float64 outputs."""
    import numpy as np

    from graphpe.ops.host import simple_csr
    from graphpe.ops.walk.large import LANDING_PATHS, choose_landing_path, large_landing_probs

    csr = simple_csr(graph.edge_index, int(graph.num_nodes))
    for dtype in (np.float32, np.float64):
        out = np.empty((int(graph.num_nodes), 4), dtype=dtype)
        choose_landing_path(csr, 4, 2**30, itemsize=out.itemsize)
        for path in LANDING_PATHS:
            large_landing_probs(csr, 4, out, budget=2**30, path=path, components=False)


def _stand_in_eigenpairs(batch, transform) -> None:
    """Random eigenpair attributes of the shapes ``transform`` (a ``LaplacianPE``) writes
    (the encoders' kernels do not depend on the values), so that this family does not compile
    the eigensolver, which the ``eigen`` family compiles in its own process."""
    import torch

    k, names = transform.k, transform.attr_names
    n = batch.num_nodes
    for name, value in zip(names, (torch.randn(n, k), torch.rand(n, k).sort(1).values,
                                   torch.ones(n, k, dtype=torch.bool)), strict=True):
        batch[name] = value


def _train_models(graphs: list) -> None:
    """A training step and an evaluation pass of every model an encoding names in its
    ``warmup_models`` (GPS with fused layers and attention dropout, GRIT, GINE, GatedGCN),
    with that encoding, on a batch of ``graphs``."""
    from graphpe.encodings import pe_spec

    for name, cls in encodings().items():
        for model_name in cls.warmup_models:
            _train_model(model_name, pe_spec(name), graphs)


def _train_model(model_name: str, spec, graphs: list) -> None:
    import torch
    from torch_geometric.data import Batch

    from graphpe.encodings import pair_model_config, pe_model_config
    from graphpe.nn.build import build_model
    from graphpe.transforms import LaplacianPE

    batch = Batch.from_data_list([g.clone() for g in graphs])
    transform = spec.transform()
    if isinstance(transform, LaplacianPE):
        _stand_in_eigenpairs(batch, transform)
    elif transform is not None:
        batch = transform(batch)
    config = {"model": model_name, "channels": 16, "layers": 2, "out_dim": 1,
              "node_vocab": 4, "edge_vocab": 4, "pe": pe_model_config([spec])}
    pair = pair_model_config([spec])
    if pair:
        config["pair"] = pair
    if model_name == "gps":
        config.update(heads=2, attn_dropout=0.1)
    model = build_model(config)
    optimizer = torch.optim.Adam(model.parameters())
    model.train()
    loss = model(batch).square().mean()
    loss.backward()
    optimizer.step()
    model.eval()
    with torch.no_grad():
        model(batch)


def _one_thread() -> None:
    """A compiling child's set-up: one torch thread, so the processes run side by side."""
    import torch

    torch.set_num_threads(1)


def warm_family(family: str, pes: Sequence[str] | None = None) -> float:
    """Compile one family's kernels in this process (``pes`` restricts it to those PEs);
    returns the seconds it took."""
    if family not in FAMILIES:
        raise ValueError(f"unknown kernel family {family!r}; choose from {sorted(FAMILIES)}")
    names = families()[family] if pes is None else pes
    from graphpe.ops.aot import FIRST_COMPILE_NOTICE

    FIRST_COMPILE_NOTICE.enabled = False  # compiling is what was asked for
    start = time.perf_counter()
    graphs = _graphs()
    if family == "models":
        _train_models(graphs)
    if family == "eigen" and pes is None:
        _sparse_factor_analysis(graphs[2])
        _fused_lanczos(graphs[2])
    if family == "walk" and (pes is None or "rwse" in pes):
        _large_graph_walk_paths(graphs[2])
    for pe in names:
        _encode(pe, graphs)
    return time.perf_counter() - start


def plan(pes: Sequence[str] | None = None, models: bool = True
         ) -> list[tuple[str, tuple[str, ...] | None]]:
    """The ``(family, PEs)`` tasks :func:`warm_up` runs, slowest family first: every family
    for ``pes=None``, else the families of those PE names (plus ``models`` if asked, or for a
    PE learned inside the model such as ``pearl``)."""
    if pes is None:
        return [(family, None) for family in FAMILIES if models or family != "models"]
    owner = {pe: cls.family for pe, cls in encodings().items()}
    unknown = [pe for pe in pes if pe not in owner]
    if unknown:
        raise ValueError(f"unknown PE name(s) {unknown}; choose from {sorted(owner)}")
    tasks = []
    for family in FAMILIES:
        if family == "models":
            if models or any(owner[pe] == "models" for pe in pes):
                tasks.append(("models", None))
            continue
        names = tuple(dict.fromkeys(pe for pe in pes if owner[pe] == family))
        if names:
            tasks.append((family, names))
    return tasks


def warm_up(pes: Sequence[str] | None = None, models: bool = True,
            processes: int | None = None) -> dict[str, float]:
    """Compile graphpe's CPU kernels into numba's on-disk cache, so that later processes
    load them instead of compiling on first use.

    Args:
        pes: encoding names (as :mod:`graphpe.encodings`, e.g. ``["lap", "rwse"]``) whose kernels to
            compile; ``None`` (default) for all of them.
        models: also compile the models' kernels (fused GPS layer, GINE aggregation,
            attention softmax, dropout and pair biases). Default ``True``.
        processes: processes compiling side by side, each one family; default one per
            family up to ``os.cpu_count()``. ``1`` compiles in this process. The others are
            spawned, so they import the calling script: call this under
            ``if __name__ == "__main__":`` there (or use the ``graphpe warmup`` command).

    Returns:
        Seconds per family (each measured in the process that compiled it).
    """
    tasks = plan(pes, models)
    if processes is None:
        processes = min(len(tasks), os.cpu_count() or 1)
    processes = check_positive_int("processes", processes)
    if processes == 1 or len(tasks) == 1:
        return {family: warm_family(family, names) for family, names in tasks}
    # spawn, not fork: a forked copy of a process with torch's thread pools can deadlock
    with ProcessPoolExecutor(min(processes, len(tasks)), mp_context=get_context("spawn"),
                             initializer=_one_thread) as pool:
        futures = {family: pool.submit(warm_family, family, names) for family, names in tasks}
        return {family: future.result() for family, future in futures.items()}


def cache_location() -> str:
    """The folder numba caches ``graphpe.ops``' kernels in
    (:func:`graphpe.ops.graph.kernel_cache_location`)."""
    from graphpe.ops.graph import kernel_cache_location

    return kernel_cache_location()


def record_signatures(workload_families: list[str] | None = None) -> dict:
    """Run ``graphpe warmup``'s workload in this process with every kernel call from Python
    logged, and write the signatures (argument and return types) to ``aot_signatures.json``."""
    from graphpe.ops import aot_build

    aot = aot_build.aot_module()
    if os.environ.get(aot.ENV_SWITCH) != "record":  # the kernels are bound at import: rerun
        env = dict(os.environ, **{aot.ENV_SWITCH: "record"})
        command = [sys.executable, "-m", "graphpe.warmup", "--record"]
        subprocess.run(command, env=env, check=True)
        return json.loads(aot.SIGNATURES_PATH.read_text())
    from graphpe.ops import aot as bound_aot

    for family in workload_families or list(families()):
        warm_family(family)
    signatures: dict[str, list] = {}
    for module_name, name, args in sorted(bound_aot.recorded(), key=str):
        dispatcher = getattr(importlib.import_module(module_name), name).dispatcher
        returns = dispatcher.overloads[args].signature.return_type
        try:
            entry = {"args": [aot_build.type_source(t) for t in args],
                     "returns": aot_build.type_source(returns)}
        except TypeError as error:
            print(f"skipped {module_name}:{name}{args}: {error}", file=sys.stderr)
            continue
        signatures.setdefault(f"{module_name}:{name}", []).append(entry)
    aot.SIGNATURES_PATH.write_text(json.dumps(signatures, indent=1, sort_keys=True) + "\n")
    return signatures


def main(argv: list[str] | None = None) -> None:
    """``python -m graphpe.warmup --record``: rewrite the kernels' ahead-of-time signatures
    (``graphpe/ops/aot_signatures.json``) from the workload; ``graphpe warmup`` compiles."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--record", action="store_true", required=True,
                        help="rewrite aot_signatures.json from warmup's workload")
    parser.parse_args(argv)
    start = time.perf_counter()
    signatures = record_signatures()
    count = sum(len(v) for v in signatures.values())
    print(f"{count} signatures of {len(signatures)} kernels ({time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    main()
