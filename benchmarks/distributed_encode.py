"""ogbn-arxiv's encodings computed by 1, 2 and 4 gloo ranks (graphpe.ops.distributed, each rank
a contiguous block of rows, of the file's node order or, with ``--reorder rcm``, of its reverse
Cuthill-McKee order) against one process: the equality figures, the peak memory per rank, the
communication per product against the halo, and the seconds.

    python benchmarks/distributed_encode.py                       # ../shared/data/ogbn-arxiv-graph
    python benchmarks/distributed_encode.py --ranks 2 --encodings lap --timeout 900
    python benchmarks/distributed_encode.py --reorder rcm         # distributed_encode_rcm.json

Encodings (``--encodings``, default ``lap,rfp,rwse,lcp``):

- ``lap``: the 16 smallest non-trivial eigenpairs of ``L_sym`` (LapPE ``k=16``): one process
  by :func:`graphpe.ops.eigen.laplacian_eigenpairs` (float64 output; the solver LaplacianPE
  runs, at its default residual (:data:`graphpe.ops.eigen.lanczos.SPARSE_TOL`), timed, and
  again converged further, to ``CONVERGED_TOL`` (``1e-11``), untimed: ``*_tight``), the ranks
  by distributed thick-restart Lanczos at its default residual
  (:data:`graphpe.ops.distributed.eigen.DISTRIBUTED_TOL`). Figures against both: the largest
  eigenvalue error, the projector distance
  ``||V1 V1^T - V2 V2^T||_F = sqrt(2) ||V2 - V1 (V1^T V2)||_F`` (never forming ``n x n``)
  and the largest entry error of the canonically signed vectors;
- ``rfp``: ``RFP()`` (16 dims, 8 steps, 4 draws, seed 0): the largest entry error;
- ``rwse``: ``RWSE(16, estimate="sampled", walks=W)`` (``--walks``, default 32, seed 0; the
  distributed path is the estimate): the largest error of the estimate and of its standard
  error. Reordered, the ranks' walks are those of the reordered graph (they draw by row
  number), so the one process's reference is RWSE of the graph relabeled by the same order,
  its rows put back in the file's order.

- ``lcp``: ``LCP(curvature="orc_bounds")`` (the midpoint of the Jost-Liu and triangle bounds
  on Ollivier-Ricci curvature: each rank receives its halo's rows in rounds of about its own
  rows' entries; exact ``orc`` on arxiv is
  past the default transport budget, 2.9e10 cells): the largest error of the profile, and
  the rows and values the ranks fetched.

With ``--reorder rcm`` rank 0 reads the whole file once, orders it
(:func:`graphpe.ops.distributed.partition.bandwidth_order`) and broadcasts the order: that is
timed with the rank's read, and counted in rank 0's peak.

Each measurement is its own set of processes (one thread each; the ranks started by
``torch.distributed.run``): imports, a warm-up call on a 2,000-node graph (kernels loaded,
numba's compiled on first use), then the *baseline*, the resident size at that point, after
which the peak is reset (``/proc/self/clear_refs``); then the graph's structure is read (the
one process: ``adj_full.npz`` as an edge list; each rank: its rows of it,
:func:`graphpe.datasets.graph_files.adjacency_rows`, without the digest, which
``graphpe encode`` computes on rank 0), the encoding computed and the peak (``VmHWM``) read;
a rank's seconds include its read. ``peak_rss_gb`` is that peak: interpreter, torch, the
graph and the encodings together; ``peak_above_baseline_gb`` the peak less the baseline.
Ratios are per rank against the one process. Communication: the values each rank sends per
product (its peers' halos, times the columns), summed over the ranks, against the halo sizes'
sum; the walks' traffic for RWSE. Rows go to ``--json`` (default
``benchmarks/results/distributed_encode.json``) as they are measured, with the load average:
the machine may be shared, so the seconds are an upper bound.
"""

from __future__ import annotations

import os
import sys

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
from benchmarks.common import write_json_atomic  # noqa: E402

DEFAULT_GRAPH = Path(os.environ.get("GRAPHPE_SHARED_DATA", ROOT.parent / "shared" / "data")
                     ) / "ogbn-arxiv-graph"
K = 16
# the residual of the one process's second, converged reference of LapPE
CONVERGED_TOL = 1e-11
LCP_CURVATURE = "orc_bounds"
WARM_NODES = 2000


def _status_bytes(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def _reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def warm_graph():
    from graphpe.synthetic import social_like_graph

    return social_like_graph(WARM_NODES, mean_degree=5.0)


def single(encoding: str, graph_path: Path, walks: int, out: Path, reorder: str) -> dict:
    """The one-process reference of ``encoding``, in this process."""
    import torch

    torch.set_num_threads(1)
    from torch_geometric.data import Data

    from graphpe.datasets.graph_files import read_adjacency
    from graphpe.ops.eigen import laplacian_eigenpairs
    from graphpe.ops.plan import execution_plan
    from graphpe.transforms import LCP, RFP, RWSE

    def compute(graph, tol: float | None = None):
        if encoding == "lap":
            pairs = laplacian_eigenpairs(graph.edge_index, graph.num_nodes, K,
                                         dtype=torch.float64,
                                         plan=execution_plan(sparse_tol=tol))
            return {"vecs": pairs.eigvecs, "vals": pairs.eigvals[0]}
        if encoding == "rfp":
            return {"rfp": RFP()(graph.clone()).rfp}
        if encoding == "lcp":
            return {"lcp": LCP(curvature=LCP_CURVATURE)(graph.clone()).lcp}
        if reorder == "none":
            done = RWSE(16, estimate="sampled", walks=walks)(graph.clone())
            return {"rwse": done.rwse, "stderr": done.rwse_stderr}
        from graphpe.encode_distributed import graph_order

        order = torch.from_numpy(graph_order(graph, reorder))
        row_of = torch.empty_like(order)
        row_of[order] = torch.arange(order.numel())
        done = RWSE(16, estimate="sampled", walks=walks)(
            Data(edge_index=row_of[graph.edge_index], num_nodes=graph.num_nodes))
        return {"rwse": done.rwse[row_of], "stderr": done.rwse_stderr[row_of]}

    compute(warm_graph())
    baseline = _status_bytes("VmRSS")
    _reset_peak()
    start = time.perf_counter()
    edge_index, num_nodes = read_adjacency(graph_path / "adj_full.npz")
    graph = Data(edge_index=edge_index, num_nodes=num_nodes)
    load = time.perf_counter() - start
    start = time.perf_counter()
    result = compute(graph)
    seconds = time.perf_counter() - start
    peak = _status_bytes("VmHWM")
    torch.save(result, out / f"single_{encoding}.pt")
    if encoding == "lap":  # the same solver, converged further (untimed)
        torch.save(compute(graph, CONVERGED_TOL), out / "single_lap_tight.pt")
    return {"seconds": seconds, "load_seconds": load, "baseline_gb": baseline / 1e9,
            "peak_rss_gb": peak / 1e9, "peak_above_baseline_gb": (peak - baseline) / 1e9}


def rank(encoding: str, graph_path: Path, walks: int, out: Path, reorder: str) -> dict:
    """One rank's rows of ``encoding`` (inside ``torch.distributed.run``)."""
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    from graphpe.datasets.graph_files import adjacency_rows
    from graphpe.encode_distributed import graph_rows, shared_file_order, shared_graph_order
    from graphpe.ops.distributed import (
        distributed_laplacian_eigenpairs,
        distributed_lcp,
        distributed_rfp,
        distributed_sampled_landing_probs,
        halo_exchange,
        own_draws,
    )

    world, me = dist.get_world_size(), dist.get_rank()

    def compute(graph):
        if isinstance(graph, Path):
            order = shared_file_order(graph, reorder)
            rows = adjacency_rows(graph, world, me, digest=False, order=order)[0]
        else:
            order = shared_graph_order(graph, reorder)
            rows = graph_rows(graph, world, me, order)
        del graph, order
        exchange = halo_exchange(rows)
        exchange.reset_counts()
        if encoding == "lap":
            pairs = distributed_laplacian_eigenpairs(rows, exchange, K)
            result = {"vecs": pairs.eigvecs, "vals": pairs.eigvals,
                      "products": pairs.products}
        elif encoding == "rfp":
            x0 = own_draws(torch.Generator().manual_seed(0), rows.partition, 4, 16)
            result = {"rfp": distributed_rfp(rows, exchange, x0, 8), "products": 8}
        elif encoding == "lcp":
            profile, info = distributed_lcp(rows, LCP_CURVATURE)
            result = {"lcp": profile.float(), "lcp_info": info}
        else:
            est, err, stats = distributed_sampled_landing_probs(rows, exchange, 16, walks, 0)
            result = {"rwse": torch.from_numpy(est).float(),
                      "stderr": torch.from_numpy(err).float(), **stats}
        result.update(halo=exchange.size, halo_sent_rows=exchange.send_size(),
                      values_sent=exchange.values_sent, bytes_sent=exchange.bytes_sent,
                      exchanges=exchange.calls, rows=rows.rows,
                      nodes=torch.from_numpy(rows.partition.input_ids()))
        return result

    compute(warm_graph())
    dist.barrier()
    baseline = _status_bytes("VmRSS")
    _reset_peak()
    start = time.perf_counter()
    result = compute(graph_path / "adj_full.npz")  # (the read of the rows timed with it)
    seconds = time.perf_counter() - start
    load = 0.0
    peak = _status_bytes("VmHWM")
    torch.save(result, out / f"rank{me}of{world}_{encoding}.pt")
    dist.barrier()
    dist.destroy_process_group()
    return {"rank": me, "seconds": seconds, "load_seconds": load,
            "baseline_gb": baseline / 1e9, "peak_rss_gb": peak / 1e9,
            "peak_above_baseline_gb": (peak - baseline) / 1e9}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(args: list[str], ranks: int | None, timeout: float, out: Path,
        encoding: str) -> tuple[list[dict], str]:
    """This script as ``--child ...`` (under torch.distributed.run with ``ranks``); what its
    processes wrote, and why it failed ('' when it did not)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("WORLD_SIZE", None)
    head = [sys.executable]
    if ranks is not None:
        head += ["-m", "torch.distributed.run", "--nproc-per-node", str(ranks),
                 "--master-port", str(_free_port())]
    try:
        done = subprocess.run(head + [str(Path(__file__).resolve()), *args], env=env,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return [], f"timed out after {timeout:.0f} s"
    # (its processes' stdout and stderr are not kept: torch.distributed.run interleaves them)
    child = "single" if ranks is None else "rank"
    lines = []
    for path in sorted(out.glob(f"result_{encoding}_{child}*.json")):
        lines.append(json.loads(path.read_text()))
        path.unlink()
    if done.returncode != 0:
        return lines, f"exit {done.returncode}: {done.stderr[-1500:]}"
    return lines, ""


def compare(encoding: str, out: Path, world: int) -> dict:
    """The ranks' rows assembled and compared with the one process's."""
    import torch

    want = torch.load(out / f"single_{encoding}.pt")
    parts = [torch.load(out / f"rank{r}of{world}_{encoding}.pt") for r in range(world)]
    nodes = torch.cat([p["nodes"] for p in parts])

    def whole(key: str):
        """The ranks' rows of ``key`` in the file's node order."""
        rows = torch.cat([p[key] for p in parts])
        placed = torch.empty_like(rows)
        placed[nodes] = rows
        return placed

    figures: dict = {}
    if encoding == "lap":
        v2 = whole("vecs").double()
        tight = torch.load(out / "single_lap_tight.pt")
        for suffix, ref in (("", want), ("_tight", tight)):
            v1 = ref["vecs"].double()
            # ||P1 - P2||_F = sqrt(2) ||(I - P1) V2||_F (equal dimensions), without n x n
            # and without the cancellation of 2k - 2 ||V1^T V2||_F^2
            rest = v2 - v1 @ (v1.T @ v2)
            figures["eigval_max_error" + suffix] = float(
                (ref["vals"] - parts[0]["vals"]).abs().max())
            figures["projector_distance" + suffix] = 2**0.5 * float(rest.norm())
            figures["vector_max_error" + suffix] = float((v1 - v2).abs().max())
        figures["converged_tol"] = CONVERGED_TOL
        figures["eigvals"] = [float(x) for x in want["vals"]]
        figures["products"] = parts[0]["products"]
    else:
        keys = {"rfp": ("rfp",), "lcp": ("lcp",)}.get(encoding, ("rwse", "stderr"))
        for key in keys:
            got = whole(key)
            figures[f"{key}_max_error"] = float((got - want[key]).abs().max())
        if encoding == "rwse":
            figures["walk_values_sent"] = sum(p["walk_values_sent"] for p in parts)
            figures["rounds"] = parts[0]["rounds"]
        if encoding == "lcp":
            figures["lcp_rows_fetched"] = sum(p["lcp_info"]["rows_fetched"] for p in parts)
            figures["lcp_values_sent"] = sum(p["lcp_info"]["values_sent"] for p in parts)
            figures["lcp_ball_nodes"] = [p["lcp_info"]["ball_nodes"] for p in parts]
            figures["lcp_fetch_rounds"] = [p["lcp_info"]["fetch_rounds"] for p in parts]
            figures["lcp_ball_entries"] = [p["lcp_info"]["ball_entries"] for p in parts]
    halo = sum(p["halo"] for p in parts)
    per_product = sum(p["halo_sent_rows"] for p in parts)
    figures["communication"] = {
        "halo_rows": [p["halo"] for p in parts], "rows": [p["rows"] for p in parts],
        "halo_rows_total": halo, "rows_sent_per_product_total": per_product,
        "values_sent_total": sum(p["values_sent"] for p in parts),
        "bytes_sent_total": sum(p["bytes_sent"] for p in parts),
        "exchanges": parts[0]["exchanges"]}
    return figures


def lifted_graph(source: Path, copies: int, cache: Path) -> Path:
    """A random cyclic ``copies``-lift of the adjacency ``source / adj_full.npz``, written once
    to ``cache / arxiv_lift<copies> / adj_full.npz`` (canonical CSR); returns its folder.

    Node ``v`` becomes the nodes ``v c + i`` (``i < c = copies``: a node's copies are
    neighbours in the order, so a row block keeps the source's locality) and each stored
    entry ``u -> v`` the ``c`` entries ``u c + i -> v c + (i + s_uv) mod c``, the shift
    ``s_uv = -s_vu`` a hash (SplitMix64) of the unordered pair, signed from the lower end to
    the upper, so both directions of an edge lift to the same edges (a self loop stays one).
    Degrees are kept, every eigenvalue of the source's Laplacians is one of the lift's (its
    eigenvectors repeated on the copies), and the rest of the spectrum is the twisted
    copies': a graph ``c`` times larger with the source's local structure."""
    import numpy as np
    import scipy.sparse as sp

    folder = cache / f"arxiv_lift{copies}"
    path = folder / "adj_full.npz"
    if path.exists():
        return folder
    adj = sp.csr_matrix(sp.load_npz(source / "adj_full.npz"))
    adj.sum_duplicates()
    adj.eliminate_zeros()
    coo = adj.tocoo()
    u, v = coo.row.astype(np.uint64), coo.col.astype(np.uint64)
    key = np.minimum(u, v) * np.uint64(adj.shape[0]) + np.maximum(u, v)
    with np.errstate(over="ignore"):  # SplitMix64 wraps
        z = key + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
    # + s from the lower end to the upper, - s back: the two directions are one lifted edge
    shift = (z % np.uint64(copies)).astype(np.int64) * np.sign(
        coo.col.astype(np.int64) - coo.row.astype(np.int64))
    c = np.int64(copies)
    layer = np.arange(copies, dtype=np.int64)[:, None]
    rows = (coo.row.astype(np.int64) * c + layer).ravel()
    cols = (coo.col.astype(np.int64) * c + (layer + shift) % c).ravel()
    n = adj.shape[0] * copies
    lifted = sp.csr_matrix((np.ones(rows.size, dtype=adj.dtype), (rows, cols)), shape=(n, n))
    lifted.sum_duplicates()
    lifted.sort_indices()
    folder.mkdir(parents=True, exist_ok=True)
    partial = folder / "adj_full.partial.npz"
    sp.save_npz(partial, lifted)
    partial.replace(path)
    return folder


def graph_stats(path: Path) -> dict:
    """Nodes, the file's edges and the undirected simple CSR's stored entries of the
    adjacency at ``path`` (the cost model's sizes)."""
    import numpy as np
    import scipy.sparse as sp

    adj = sp.csr_matrix(sp.load_npz(path / "adj_full.npz"))
    adj.sum_duplicates()
    adj.eliminate_zeros()
    edges = int(adj.nnz)
    sym = (adj + adj.T).tocsr()
    sym.setdiag(0)
    sym.eliminate_zeros()
    return {"num_nodes": int(adj.shape[0]), "file_edges": edges,
            "csr_entries": int(sym.nnz), "self_loops": int(np.count_nonzero(adj.diagonal()))}


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--graph", type=Path, default=DEFAULT_GRAPH)
    p.add_argument("--ranks", default="1,2,4")
    p.add_argument("--encodings", default="lap,rfp,rwse,lcp")
    p.add_argument("--walks", type=int, default=32)
    p.add_argument("--timeout", type=float, default=1800.0)
    p.add_argument("--reorder", choices=("none", "rcm"), default="none")
    p.add_argument("--lift", type=int, default=1,
                   help="run on a random cyclic LIFT-lift of the graph (LIFT times its nodes, "
                        "its degrees; built once into ~/.cache/graphpe); 1: the graph itself")
    p.add_argument("--json", type=Path, default=None,
                   help="default: benchmarks/results/distributed_encode.json, "
                        "distributed_encode_rcm.json with --reorder rcm")
    p.add_argument("--merge", action="store_true",
                   help="keep --json's rows of the encodings not measured now")
    p.add_argument("--child", choices=("single", "rank"))
    p.add_argument("--encoding")
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    if args.json is None:
        suffix = ("" if args.reorder == "none" else f"_{args.reorder}") + (
            "" if args.lift == 1 else f"_lift{args.lift}")
        args.json = HERE / "results" / f"distributed_encode{suffix}.json"
    if args.child:
        fn = single if args.child == "single" else rank
        result = fn(args.encoding, args.graph, args.walks, args.out, args.reorder)
        name = f"result_{args.encoding}_{args.child}{result.get('rank', '')}.json"
        (args.out / name).write_text(json.dumps(result))
        return
    command = "python benchmarks/distributed_encode.py " + " ".join(argv or sys.argv[1:])
    record = {"graph": str(args.graph), "command": command.strip(), "walks": args.walks,
              "cpu_count": os.cpu_count(), "threads_per_process": 1,
              "reordering": None if args.reorder == "none" else args.reorder,
              "load_average_start": _load(), "rows": []}
    if not (args.graph / "adj_full.npz").exists():
        record["skipped"] = f"{args.graph} not found (ogbn-arxiv in GraphSAINT's layout)"
        write_json_atomic(args.json, record)
        print(record["skipped"])
        return
    if args.lift > 1:
        record["lift"] = args.lift
        args.graph = lifted_graph(args.graph, args.lift,
                                  Path.home() / ".cache" / "graphpe")
    record["graph_stats"] = graph_stats(args.graph)
    if args.merge and args.json.exists():
        earlier = json.loads(args.json.read_text())
        kept = [r for r in earlier["rows"] if r["encoding"] not in args.encodings.split(",")]
        record["rows"] = kept
        record["merged"] = sorted({r["encoding"] for r in kept})
        # the commands of the earlier runs, among which those that measured the kept rows
        record["merged_commands"] = earlier.get("merged_commands", []) + [earlier["command"]]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        for encoding in args.encodings.split(","):
            measure(encoding, args, out, record)
    record["load_average_end"] = _load()
    write_json_atomic(args.json, record)


def measure(encoding: str, args, out: Path, record: dict) -> None:
    """The one process, then each rank count, for ``encoding``; rows appended and written."""
    common = ["--encoding", encoding, "--graph", str(args.graph), "--walks", str(args.walks),
              "--out", str(out), "--reorder", args.reorder]
    lines, why = run(["--child", "single", *common], None, args.timeout, out, encoding)
    one = {"encoding": encoding, "ranks": 0, "processes": lines, "failed": why,
           "load_average": _load()}
    record["rows"].append(one)
    write_json_atomic(args.json, record)
    print(json.dumps(one)[:600], flush=True)
    if why:
        return
    for world in (int(r) for r in args.ranks.split(",")):
        lines, why = run(["--child", "rank", *common], world, args.timeout, out, encoding)
        row = {"encoding": encoding, "ranks": world, "processes": sorted(
            lines, key=lambda x: x["rank"]), "failed": why, "load_average": _load()}
        if not why:
            row.update(compare(encoding, out, world))
            ref = one["processes"][0]
            row["peak_ratio"] = max(x["peak_rss_gb"] for x in lines) / ref["peak_rss_gb"]
            row["peak_above_baseline_ratio"] = max(
                x["peak_above_baseline_gb"] for x in lines) / ref["peak_above_baseline_gb"]
            row["seconds"] = max(x["seconds"] for x in lines)
        record["rows"].append(row)
        write_json_atomic(args.json, record)
        print(json.dumps({k: v for k, v in row.items() if k != "processes"})[:900],
              flush=True)


if __name__ == "__main__":
    main()
