"""Directed-graph encodings and cycle counts against their reference code, in the same run.

    python benchmarks/directed.py                  # ZINC-12k train (from ../shared/data)
    python benchmarks/directed.py --quick          # 500 synthetic molecule-like graphs
    python benchmarks/directed.py --threads 2

Graphs: ZINC-12k train (10,000 molecules, 9-37 nodes) from the offline copy, or with
``--quick`` graphpe's synthetic molecule-like graphs. ZINC is undirected; the directed
encodings get a **directed** copy of every graph: each undirected edge ``{u, v}`` is kept in
one direction only, ``u -> v`` or ``v -> u`` by a seeded coin (``--seed``), so no edge is
reciprocal (the bond features are dropped: the encodings read ``edge_index`` alone). Cycle
counts read the undirected graphs as they are.

What is timed, each end to end and best of ``--repeats`` (after one warm-up call):

- the reference, graph by graph, on the same list of graphs (its input arrays are taken from
  each ``Data`` inside the timing, as a ``pre_transform`` would):

  - ``maglap`` (MagneticLaplacianPE, k = 8, q = 0.25, ``sym`` normalization) against
    ``eigv_magnetic_laplacian_numba`` of google-deepmind/digraph_transformer (copied below,
    Apache License 2.0), called as its authors do, with ``k_excl=0``, ``q_absolute=True``,
    ``l2_norm=True``, ``sign_rotate=True``, ``use_symmetric_norm=True``. The reference runs
    ``@numba.njit``-compiled as in its repository and as the plain numpy body; the ratio is
    against the faster of the two;
  - ``maglap multi-q`` (q = 0.05, 0.1, 0.15, 0.2, 0.25 in one transform) against the same
    reference called once per potential (the digraph_transformer code takes one q);
  - ``drwse`` (DirectedRWSE, T = 16, sinks stay) against numpy: the dense
    ``P = D_out^-1 A`` (sinks get ``P_ii = 1``) and ``T`` matrix products, reading each
    diagonal;
  - ``svd`` (SVDPE, k = 8) against DGL's ``svd_pe`` (dmlc/dgl, Apache License 2.0; copied
    below for a dense adjacency, DGL is not installed): ``scipy.linalg.svd`` of the dense
    adjacency;
  - ``cycles`` (CycleCounts, lengths 3..8) against networkx: ``nx.simple_cycles(G,
    length_bound=8)`` on the undirected graph, each cycle counted on its nodes;
- graphpe on three paths: ``per-graph`` (``t(data)`` for every ``Data``: the ``pre_transform``
  path), ``list`` (``precompute(list_of_data, t)``) and ``dataset`` (``precompute`` on an
  ``InMemoryDataset``).

``ratio`` is the reference's time over graphpe's on the same graphs. The issue's targets
(>= 10x for maglap and for cycle counts) are marked on every path. Every row also checks the
outputs against the reference: eigenvalues (maglap, graphs of at least k nodes), singular
values (svd), the return probabilities (drwse), exact counts (cycles). Prints a table and writes
JSON (``--json``, default ``benchmarks/results/directed.json``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

# One thread means one thread for every library: BLAS/LAPACK (numpy's eigh), numba and torch
# read these before they are first imported.
if "--threads" in sys.argv[:-1]:
    _threads = sys.argv[sys.argv.index("--threads") + 1]
else:
    _threads = "1"
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, _threads)

import networkx as nx  # noqa: E402
import numba  # noqa: E402
import numpy as np  # noqa: E402
import scipy.linalg  # noqa: E402
import torch  # noqa: E402
from torch_geometric.data import Data  # noqa: E402

import graphpe  # noqa: E402
from graphpe.encodings.cycles import CycleCounts  # noqa: E402
from graphpe.encodings.directed_walk import DirectedRWSE  # noqa: E402
from graphpe.encodings.maglap import MagneticLaplacianPE  # noqa: E402
from graphpe.encodings.svd import SVDPE  # noqa: E402
from graphpe.synthetic import molecule_like_graphs  # noqa: E402
from graphpe.transforms import precompute  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DEFAULT_SHARED, write_json_atomic  # noqa: E402
from precompute import GraphList, best_time, load_zinc  # noqa: E402

BENCH_RESULTS = Path(__file__).resolve().parent / "results"
K = 8
Q = 0.25
MULTI_Q = (0.05, 0.1, 0.15, 0.2, 0.25)
WALK = 16
MAX_LENGTH = 8
# encoding -> minimum ratio to the reference (issue 40's targets, one CPU thread)
TARGETS = {"maglap": 10.0, "cycles": 10.0}
PATHS = ("per-graph", "list", "dataset")


# ---------------------------------------------------------------------------------------------
# References, copied (not imported at run time)


def digraph_transformer_eigv_magnetic_laplacian(
        senders, receivers, n_node, padded_nodes_size, k, k_excl, q, q_absolute,
        norm_comps_sep, l2_norm, sign_rotate, use_symmetric_norm):
    """``eigv_magnetic_laplacian_numba`` of google-deepmind/digraph_transformer, ``utils.py``
    (Apache License 2.0, Copyright 2022 DeepMind Technologies Limited), as
    tests/encodings/test_maglap.py copies it. Changes: the ``@numba.njit`` decorator is applied
    by the caller (:data:`REFERENCES`), and the ``norm_comps_sep`` and max-norm branches, which
    call two numba helpers, are left out: the benchmark calls it with ``norm_comps_sep=False,
    l2_norm=True`` (unit-norm eigenvectors), where those branches do not run."""
    assert not norm_comps_sep and l2_norm
    # Handle -1 padding
    edges_padding_mask = senders >= 0

    adj = np.zeros(int(padded_nodes_size * padded_nodes_size), dtype=np.float64)
    linear_index = receivers + (senders * padded_nodes_size).astype(senders.dtype)
    adj[linear_index] = edges_padding_mask.astype(adj.dtype)
    adj = adj.reshape(padded_nodes_size, padded_nodes_size)
    adj = np.where(adj > 1, 1, adj)

    symmetric_adj = adj + adj.T
    symmetric_adj = np.where((adj != 0) & (adj.T != 0), symmetric_adj / 2,
                             symmetric_adj)

    symmetric_deg = symmetric_adj.sum(-2)

    if not q_absolute:
        m_imag = (adj != adj.T).sum() / 2
        m_imag = min(m_imag, n_node[0])
        q = q / (m_imag if m_imag > 0 else 1)

    theta = 1j * 2 * np.pi * q * (adj - adj.T)

    if use_symmetric_norm:
        inv_deg = np.zeros((padded_nodes_size, padded_nodes_size), dtype=np.float64)
        np.fill_diagonal(
            inv_deg, 1. / np.sqrt(np.where(symmetric_deg < 1, 1, symmetric_deg)))
        eye = np.eye(padded_nodes_size)
        inv_deg = inv_deg.astype(adj.dtype)
        deg = inv_deg @ symmetric_adj.astype(adj.dtype) @ inv_deg
        laplacian = eye - deg * np.exp(theta)

        mask = np.arange(padded_nodes_size) < n_node[:1]
        mask = np.expand_dims(mask, -1) & np.expand_dims(mask, 0)
        laplacian = mask.astype(adj.dtype) * laplacian
    else:
        deg = np.zeros((padded_nodes_size, padded_nodes_size), dtype=np.float64)
        np.fill_diagonal(deg, symmetric_deg)
        laplacian = deg - symmetric_adj * np.exp(theta)

    if q == 0:
        laplacian_r = np.real(laplacian)
        assert (laplacian_r == laplacian_r.T).all()
        # Avoid rounding errors of any sort
        eigenvalues, eigenvectors = np.linalg.eigh(laplacian_r)
        eigenvalues = eigenvalues[..., k_excl:k_excl + k]
        eigenvectors = eigenvectors[..., :, k_excl:k_excl + k]
        return eigenvalues.real, eigenvectors.astype(np.complex128), laplacian

    eigenvalues, eigenvectors = np.linalg.eigh(laplacian)

    eigenvalues = eigenvalues[..., k_excl:k_excl + k]
    eigenvectors = eigenvectors[..., k_excl:k_excl + k]

    if sign_rotate:
        sign = np.zeros((eigenvectors.shape[1],), dtype=eigenvectors.dtype)
        for i in range(eigenvectors.shape[1]):
            argmax_i = np.abs(eigenvectors[:, i].real).argmax()
            sign[i] = np.sign(eigenvectors[argmax_i, i].real)
        eigenvectors = np.expand_dims(sign, 0) * eigenvectors

        argmax_imag_0 = eigenvectors[:, 0].imag.argmax()
        rotation = np.angle(eigenvectors[argmax_imag_0:argmax_imag_0 + 1])
        eigenvectors = eigenvectors * np.exp(-1j * rotation)

    return eigenvalues.real, eigenvectors, laplacian


def dgl_svd_pe(adjacency: np.ndarray, k: int) -> np.ndarray:
    """DGL's ``svd_pe`` with ``random_flip=False`` (dmlc/dgl, python/dgl/transforms/
    functional.py, Apache License 2.0), on a dense adjacency instead of a DGLGraph (as
    tests/encodings/test_svd.py copies it)."""
    n = adjacency.shape[0]
    u, d, vh = scipy.linalg.svd(adjacency)
    v = vh.transpose()
    m = min(n, k)
    topm_sqrt_d = np.diag(np.sqrt(d[0:m]))
    encoding = np.concatenate((u[:, 0:m] @ topm_sqrt_d, v[:, 0:m] @ topm_sqrt_d), axis=1)
    if n < k:
        encoding = np.concatenate([encoding, np.zeros((n, 2 * (k - n)))], axis=1)
    return encoding


# ---------------------------------------------------------------------------------------------
# The references graph by graph: Data -> the reference's output for it


def maglap_reference(fn: Callable, qs: tuple[float, ...]) -> Callable[[Data], list]:
    def run(data: Data) -> list:
        ei = data.edge_index.numpy()
        n = data.num_nodes
        return [fn(ei[0], ei[1], np.array([n, 0]), n, K, 0, q, True, False, True, True, True)[0]
                for q in qs]
    return run


def drwse_reference(data: Data) -> np.ndarray:
    n = data.num_nodes
    ei = data.edge_index.numpy()
    a = np.zeros((n, n))
    a[ei[0], ei[1]] = 1.0
    out = a.sum(1)
    p = np.divide(a, out[:, None], out=np.zeros_like(a), where=out[:, None] > 0)
    sinks = np.flatnonzero(out == 0)
    p[sinks, sinks] = 1.0  # the walker stays on a sink (DirectedRWSE's default)
    x = p
    rows = [np.diag(x)]
    for _ in range(WALK - 1):
        x = x @ p
        rows.append(np.diag(x))
    return np.stack(rows, 1)


def svd_reference(data: Data) -> np.ndarray:
    n = data.num_nodes
    ei = data.edge_index.numpy()
    a = np.zeros((n, n))
    a[ei[0], ei[1]] = 1.0
    return dgl_svd_pe(a, K)


def cycles_reference(data: Data) -> np.ndarray:
    n = data.num_nodes
    g = nx.Graph()
    g.add_nodes_from(range(n))
    g.add_edges_from((a, b) for a, b in data.edge_index.t().tolist() if a != b)
    counts = np.zeros((n, MAX_LENGTH - 2), dtype=np.int64)
    for cycle in nx.simple_cycles(g, length_bound=MAX_LENGTH):
        if len(cycle) >= 3:
            counts[cycle, len(cycle) - 3] += 1
    return counts


# ---------------------------------------------------------------------------------------------
# Output checks: (worst difference, graphs compared)


def maglap_error(ours: list[Data], refs: list[list], qs: tuple[float, ...]) -> tuple[float, int]:
    """Largest eigenvalue difference over the graphs of at least k nodes."""
    worst, compared = 0.0, 0
    for o, r in zip(ours, refs, strict=True):
        if o.num_nodes < K:
            continue
        vals = o.maglap_eigvals[0].double().numpy()  # [Q, k], every node holds them
        for slot in range(len(qs)):
            worst = max(worst, float(np.abs(vals[slot] - r[slot]).max()))
        compared += 1
    return worst, compared


def svd_error(ours: list[Data], refs: list[np.ndarray]) -> tuple[float, int]:
    """Largest difference of the singular values (squared column norms of U sqrt(S))."""
    worst = 0.0
    for o, r in zip(ours, refs, strict=True):
        m = min(K, o.num_nodes)
        ours_s = (o.svd_pe[:, :m].double().numpy() ** 2).sum(0)
        worst = max(worst, float(np.abs(ours_s - (r[:, :m] ** 2).sum(0)).max()))
    return worst, len(ours)


def drwse_error(ours: list[Data], refs: list[np.ndarray]) -> tuple[float, int]:
    return max(float(np.abs(o.drwse.double().numpy() - r).max())
               for o, r in zip(ours, refs, strict=True)), len(ours)


def cycles_error(ours: list[Data], refs: list[np.ndarray]) -> tuple[float, int]:
    return max(float(np.abs(o.cycle_counts.numpy() - r).max())
               for o, r in zip(ours, refs, strict=True)), len(ours)


# ---------------------------------------------------------------------------------------------


def orient(graphs: list[Data], seed: int) -> list[Data]:
    """Each graph with every undirected edge kept in one direction, chosen by a seeded coin."""
    gen = torch.Generator().manual_seed(seed)
    out = []
    for g in graphs:
        src, dst = g.edge_index
        pairs = torch.stack([src, dst])[:, src < dst]  # each undirected edge once
        flip = torch.rand(pairs.size(1), generator=gen) < 0.5
        ei = torch.where(flip, pairs.flip(0), pairs)
        out.append(Data(edge_index=ei.contiguous(), num_nodes=g.num_nodes))
    return out


def undirected(graphs: list[Data]) -> list[Data]:
    return [Data(edge_index=g.edge_index, num_nodes=g.num_nodes) for g in graphs]


def references(numba_maglap: Callable | None) -> dict:
    """encoding -> (transform, uses directed graphs, [(name, reference)], check)."""
    def maglap_refs(qs):
        refs = [("digraph_transformer (numpy)",
                 maglap_reference(digraph_transformer_eigv_magnetic_laplacian, qs))]
        if numba_maglap is not None:
            refs.insert(0, ("digraph_transformer (numba)", maglap_reference(numba_maglap, qs)))
        return refs

    per_q = f"{len(MULTI_Q)} calls" if len(MULTI_Q) > 1 else "1 call"
    return {
        "maglap": (f"MagLap k={K} q={Q}", MagneticLaplacianPE(K, (Q,)), True, maglap_refs((Q,)),
                   lambda o, r: maglap_error(o, r, (Q,)), "eigenvalues, max |diff|"),
        "maglap-multi-q": (f"MagLap k={K} q={','.join(f'{q:g}' for q in MULTI_Q)}",
                           MagneticLaplacianPE(K, MULTI_Q), True, maglap_refs(MULTI_Q),
                           lambda o, r: maglap_error(o, r, MULTI_Q),
                           f"eigenvalues, max |diff| (reference: {per_q} per graph)"),
        "drwse": (f"DirectedRWSE T={WALK}", DirectedRWSE(WALK), True,
                  [("numpy matrix powers", drwse_reference)], drwse_error, "max |diff|"),
        "svd": (f"SVDPE k={K}", SVDPE(K), True, [("DGL svd_pe (scipy)", svd_reference)],
                svd_error, "singular values, max |diff|"),
        "cycles": (f"CycleCounts 3..{MAX_LENGTH}", CycleCounts(MAX_LENGTH), False,
                   [("networkx simple_cycles", cycles_reference)], cycles_error,
                   "counts, max |diff|"),
    }


def compiled_reference() -> tuple[Callable | None, str]:
    """The reference under ``numba.njit`` as its repository runs it, or None and why not."""
    fn = numba.njit(digraph_transformer_eigv_magnetic_laplacian)
    try:
        fn(np.array([0, 1]), np.array([1, 2]), np.array([3, 0]), 3, K, 0, Q, True, False, True,
           True, True)
    except Exception as error:  # noqa: BLE001 - any compile failure: time numpy alone
        return None, f"{type(error).__name__}: {str(error).splitlines()[0][:200]}"
    return fn, ""


def bench(name: str, spec: tuple, directed: list[Data], plain: list[Data], repeats: int,
          dataset_name: str) -> list[dict]:
    label, transform, is_directed, refs, check, metric = spec
    graphs = directed if is_directed else plain
    count = len(graphs)
    ref_rates, ref_out = {}, None
    for ref_name, fn in refs:
        seconds, out = best_time(lambda f=fn: [f(g) for g in graphs], repeats)
        ref_rates[ref_name] = count / seconds
        ref_out = out if ref_out is None else ref_out
        print(f"  {label:<34} {ref_name:<30} {count / seconds:>10,.0f} graphs/s", flush=True)
    best_ref = max(ref_rates, key=ref_rates.get)
    dataset = GraphList(graphs)
    runs = {
        "per-graph": lambda: [transform(g) for g in graphs],
        "list": lambda: precompute(graphs, transform, progress=False),
        "dataset": lambda: precompute(dataset, transform, progress=False),
    }
    rows = []
    for path in PATHS:
        seconds, out = best_time(runs[path], repeats)
        ours = [out[i] for i in range(count)]
        err, compared = check(ours, ref_out)
        rate = count / seconds
        row = {"encoding": name, "label": label, "dataset": dataset_name, "path": path,
               "graphs": count, "directed": is_directed, "graphpe_graphs_per_s": rate,
               "reference": best_ref, "reference_graphs_per_s": ref_rates[best_ref],
               "references_graphs_per_s": ref_rates, "ratio": rate / ref_rates[best_ref],
               "max_error": err, "graphs_compared": compared, "error_metric": metric}
        bound = TARGETS.get(name.removesuffix("-multi-q"))
        if bound is not None:
            row.update(target=f">= {bound:g}x", met=bool(row["ratio"] >= bound))
        rows.append(row)
        print(f"  {label:<34} graphpe {path:<22} {rate:>10,.0f} graphs/s  "
              f"{row['ratio']:6.1f}x  err {err:.1e}", flush=True)
    return rows


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared-data", type=Path, default=Path(os.environ.get(
        "GRAPHPE_SHARED_DATA", DEFAULT_SHARED)))
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "graphpe-bench")
    parser.add_argument("--quick", action="store_true",
                        help="synthetic molecule-like graphs instead of ZINC")
    parser.add_argument("--graphs", type=int, default=None,
                        help="use the first N graphs (default: all of ZINC train; 500 with "
                             "--quick)")
    parser.add_argument("--encodings", default="maglap,maglap-multi-q,drwse,svd,cycles")
    parser.add_argument("--seed", type=int, default=0, help="seed of the edge orientations")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path, default=BENCH_RESULTS / "directed.json")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)

    if args.quick:
        base = molecule_like_graphs(args.graphs or 500, seed=0)
        dataset_name = f"synthetic molecules ({len(base)})"
    else:
        zinc = load_zinc(args.shared_data, args.cache)
        if zinc is None:
            raise SystemExit("no offline ZINC copy: run with --quick")
        count = min(args.graphs or len(zinc), len(zinc))
        base = [zinc[i] for i in range(count)]
        dataset_name = f"ZINC-12k train ({count})" if args.graphs else "ZINC-12k train"
    plain, directed = undirected(base), orient(base, args.seed)
    numba_maglap, numba_failure = compiled_reference()
    specs = references(numba_maglap)
    print(f"graphs/s, one process, threads = {args.threads}, {dataset_name}", flush=True)
    rows = []
    for name in [e for e in args.encodings.split(",") if e]:
        rows += bench(name, specs[name], directed, plain, args.repeats, dataset_name)

    print(f"\ngraphpe vs the reference code graph by graph, threads = {args.threads}")
    header = (f"{'encoding':<36} {'path':<9} {'graphpe g/s':>11} {'ref g/s':>9} {'ratio':>7} "
              f"{'error':>8}  reference / target")
    print(header)
    print("-" * len(header))
    for r in rows:
        target = "" if "target" not in r else \
            f"; {r['target']}: {'met' if r['met'] else 'NOT met'}"
        print(f"{r['label']:<36} {r['path']:<9} {r['graphpe_graphs_per_s']:>11,.0f} "
              f"{r['reference_graphs_per_s']:>9,.0f} {r['ratio']:>6.1f}x "
              f"{r['max_error']:>8.1e}  {r['reference']}{target}")
    if numba_failure:
        print(f"note: the reference did not compile under numba ({numba_failure}); timed as "
              "numpy only")
    meta = {"threads": args.threads, "repeats": args.repeats, "seed": args.seed,
            "dataset": dataset_name, "torch": torch.__version__, "graphpe": graphpe.__version__,
            "numpy": np.__version__, "numba": numba.__version__, "networkx": nx.__version__,
            "numba_reference_failure": numba_failure or None,
            "orientation": "each undirected edge kept in one direction by a seeded coin"}
    write_json_atomic(args.json, {**meta, "rows": rows})
    print(f"\nwrote {args.json}")
    return rows


if __name__ == "__main__":
    main()
