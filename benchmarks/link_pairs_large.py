"""Pair encodings of a million link-prediction query pairs on ogbn-arxiv's graph, on one
thread: the capped shortest-path distance, the common-neighbourhood scores (CN, Adamic-Adar,
resource allocation) and the personalized PageRank by push of ``graphpe.ops.link``, each with
and without the pair's own edge set aside where it has that option.

The graph: ``adj_full.npz`` of ``../shared/data/ogbn-arxiv-graph`` (GraphSAINT's layout, a
scipy CSR of 169,343 nodes), read as undirected. The pairs (seeded): half edges drawn
uniformly from the graph's edges (with replacement, either orientation), half uniform
non-edges (``u != v``, not joined), shuffled together.

Each round times every encoding at ``--pairs`` pairs, then, for distances and scores, the
scipy reference (``reference_pair_distances``, ``reference_neighbourhood_scores``: the sparse
products graphpe used before its compiled kernels) and the compiled call on the first
``--reference-pairs`` pairs, interleaved, in one process; rows give the median and spread
(min - max) over the rounds, wall and CPU seconds. Before timing, the compiled results are
checked equal to the reference's (distances, scores) and the PageRank of ``--check-ppr``
pairs within the push's bound of the exact values (power iteration). Peak memory: the rise of
the process's peak resident set (``VmHWM``, reset through ``/proc/self/clear_refs``) over one
call, with glibc's large blocks returned to the system when freed (``mallopt``), so a call's
peak is its own.

    python benchmarks/link_pairs_large.py                         # 10^6 pairs, 3 rounds
    python benchmarks/link_pairs_large.py --pairs 100000 --rounds 3

Target (issue 66): 10^6 pairs well under a minute for each encoding, on one thread. RRWP at
the pairs (``--encodings rrwp,rrwp_own_edge``) has no target and is not in the default run.
"""

from __future__ import annotations

import os

for _name in ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"

import argparse  # noqa: E402
import ctypes  # noqa: E402
import platform  # noqa: E402
import resource  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DEFAULT_SHARED, write_json_atomic  # noqa: E402

from graphpe.datasets.graph_files import read_adjacency  # noqa: E402
from graphpe.ops.host import simple_csr  # noqa: E402
from graphpe.ops.link import (  # noqa: E402
    pair_distances,
    pair_neighbourhood_scores,
    pair_ppr,
    reference_neighbourhood_scores,
    reference_pair_distances,
)
from graphpe.ops.pair_walk import pair_walks  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "link_pairs_large.json"
GRAPH = DEFAULT_SHARED / "ogbn-arxiv-graph" / "adj_full.npz"
TARGET_SECONDS = 60.0
ENCODINGS = ("spd", "spd_own_edge", "scores", "ppr", "ppr_own_edge")
# asked for by name (--encodings): the random walk's landing probabilities at the pairs, whose
# balls around both ends cost far more than the others' on a graph with hubs
OTHER_ENCODINGS = ("rrwp", "rrwp_own_edge")
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


def encodings(args) -> dict[str, tuple[str, str, Callable, Callable | None]]:
    """``name -> (label, call as text, call(ei, n, pairs), the scipy reference or None)``."""
    d, a, e = args.max_dist, args.alpha, args.eps
    return {
        "spd": (f"capped SPD <= {d}", f"pair_distances(max_dist={d})",
                lambda ei, n, p: pair_distances(ei, n, p, d),
                lambda ei, n, p: reference_pair_distances(ei, n, p, d)),
        "spd_own_edge": (f"capped SPD <= {d}, own edge set aside",
                         f"pair_distances(max_dist={d}, without_own_edge=True)",
                         lambda ei, n, p: pair_distances(ei, n, p, d, without_own_edge=True),
                         lambda ei, n, p: reference_pair_distances(ei, n, p, d, True)),
        "scores": ("CN / AA / RA", "pair_neighbourhood_scores()", pair_neighbourhood_scores,
                   reference_neighbourhood_scores),
        "ppr": (f"PPR by push (alpha {a:g}, eps {e:g})", f"pair_ppr(alpha={a:g}, eps={e:g})",
                lambda ei, n, p: pair_ppr(ei, n, p, a, e), None),
        "ppr_own_edge": (f"PPR by push (alpha {a:g}, eps {e:g}), own edge set aside",
                         f"pair_ppr(alpha={a:g}, eps={e:g}, without_own_edge=True)",
                         lambda ei, n, p: pair_ppr(ei, n, p, a, e, without_own_edge=True),
                         None),
        "rrwp": ("RRWP, 1 .. 4 steps both ways", "pair_walks(steps=4)",
                 lambda ei, n, p: pair_walks(ei, n, p, 4), None),
        "rrwp_own_edge": ("RRWP, 1 .. 4 steps both ways, own edge set aside",
                          "pair_walks(steps=4, without_own_edge=True)",
                          lambda ei, n, p: pair_walks(ei, n, p, 4, without_own_edge=True),
                          None),
    }


def query_pairs(csr, count: int, seed: int) -> torch.Tensor:
    """``[2, count]``: half edges of ``csr`` drawn uniformly (either orientation), half
    uniform non-edges, shuffled together (seeded)."""
    rng = np.random.default_rng(seed)
    n = csr.indptr.shape[0] - 1
    rows = np.repeat(np.arange(n), np.diff(csr.indptr))
    upper = rows < csr.indices
    src, dst = rows[upper], csr.indices[upper]
    half = count // 2
    pick = rng.integers(0, src.shape[0], half)
    flip = rng.random(half) < 0.5
    edges = np.stack([np.where(flip, dst[pick], src[pick]), np.where(flip, src[pick], dst[pick])])
    keys = rows * n + csr.indices  # sorted: the CSR's rows are
    found = np.empty((2, 0), np.int64)
    while found.shape[1] < count - half:
        draw = rng.integers(0, n, (2, 2 * (count - half)))
        key = draw[0] * n + draw[1]
        at = np.minimum(np.searchsorted(keys, key), keys.shape[0] - 1)
        found = np.concatenate([found, draw[:, (draw[0] != draw[1]) & (keys[at] != key)]], 1)
    pairs = np.concatenate([edges, found[:, :count - half]], 1)
    return torch.from_numpy(pairs[:, rng.permutation(count)].copy())


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise OSError(f"no {field} in /proc/self/status")


def peak_memory_mb(call: Callable[[], object]) -> tuple[float | None, str]:
    """The rise of the peak resident set over ``call()`` (MB) and how it was read."""
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")  # resets VmHWM to the current resident set
        before = _status_kb("VmRSS")
        call()
        return (_status_kb("VmHWM") - before) / 1024, "VmHWM - VmRSS before"
    except OSError:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        call()
        rise = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
        return rise / 1024, "ru_maxrss rise (a lower bound: the process's earlier peak hides it)"


def timed(call: Callable[[], object]) -> tuple[float, float]:
    """Wall and CPU seconds of ``call()``."""
    wall, cpu = time.perf_counter(), time.process_time()
    call()
    return time.perf_counter() - wall, time.process_time() - cpu


def exact_ppr(csr, sources: np.ndarray, alpha: float) -> np.ndarray:
    """``[n, len(sources)]``: ``alpha sum_k (1 - alpha)^k (P^T)^k e_s`` by power iteration
    (scipy), summed until the terms left hold less than ``1e-11`` (``P = D^-1 A``)."""
    import scipy.sparse as sp

    n = csr.indptr.shape[0] - 1
    adj = sp.csr_matrix((np.ones(csr.indices.shape[0]), csr.indices, csr.indptr), shape=(n, n))
    inv_degree = 1.0 / np.maximum(np.diff(csr.indptr), 1)
    term = np.zeros((n, sources.shape[0]))
    term[sources, np.arange(sources.shape[0])] = alpha
    total = term.copy()
    for _ in range(int(np.ceil(np.log(1e-11) / np.log(1 - alpha)))):
        term = (1 - alpha) * (adj @ (inv_degree[:, None] * term))
        total += term
    return total


def check_ppr(ei, csr, pairs, args) -> dict:
    """The PageRank of the first ``args.check_ppr`` pairs (a mix of edges and non-edges,
    read on the whole graph) against :func:`exact_ppr`: the error over its bound
    ``eps d(t)``."""
    sample = pairs[:, :args.check_ppr]
    got = pair_ppr(ei, csr.indptr.shape[0] - 1, sample, args.alpha, args.eps).numpy()
    u, v = sample.numpy()
    exact = exact_ppr(csr, np.concatenate([u, v]), args.alpha)
    k = u.shape[0]
    degree = np.diff(csr.indptr)
    errors = np.concatenate([exact[v, np.arange(k)] - got[:, 0],
                             exact[u, k + np.arange(k)] - got[:, 1]])
    bound = args.eps * np.concatenate([degree[v], degree[u]])
    within = bool((errors >= -1e-10).all() and (errors <= bound + 1e-10).all())
    return {"pairs_checked": int(k), "within_bound": within,
            "max_error_over_bound": float((errors / bound).max()),
            "max_abs_error": float(np.abs(errors).max())}


def summary(values: list[float], key: str) -> dict:
    return {f"{key}_s": statistics.median(values), f"{key}_min_s": min(values),
            f"{key}_max_s": max(values)}


def measure(ei, n: int, pairs, args, calls) -> list[dict]:
    """Every encoding's rows: parity with the reference, timed rounds, peak memory."""
    small = pairs[:, :args.reference_pairs]
    first = {}
    for name, (_, _, call, reference) in calls.items():
        first[name] = timed(lambda call=call: call(ei, n, pairs[:, :1000]))[0]
        if reference is not None:
            assert torch.equal(call(ei, n, small), reference(ei, n, small)), name
    times = {name: {"wall": [], "cpu": [], "ref": [], "small": []} for name in calls}
    for r in range(args.rounds):
        for name, (_, _, call, reference) in calls.items():
            wall, cpu = timed(lambda call=call: call(ei, n, pairs))
            times[name]["wall"].append(wall)
            times[name]["cpu"].append(cpu)
            if reference is not None:
                times[name]["ref"].append(timed(lambda f=reference: f(ei, n, small))[0])
                times[name]["small"].append(timed(lambda call=call: call(ei, n, small))[0])
            print(f"round {r + 1}/{args.rounds} {name}: {wall:.2f} s", flush=True)
    rows = []
    for name, (label, text, call, reference) in calls.items():
        t = times[name]
        peak, how = peak_memory_mb(lambda call=call: call(ei, n, pairs))
        row = {"encoding": name, "label": label, "call": text, "pairs": pairs.size(1),
               "rounds": args.rounds, **summary(t["wall"], "wall"), "cpu_s":
               statistics.median(t["cpu"]), "first_call_s": first[name],
               "peak_rss_rise_mb": peak, "memory_read_by": how,
               "met": statistics.median(t["wall"]) < TARGET_SECONDS}
        if reference is not None:
            row.update({"reference_pairs": small.size(1), "equal_to_reference": True,
                        **summary(t["ref"], "reference"), **summary(t["small"], "compiled"),
                        "speedup": statistics.median(t["ref"]) / statistics.median(t["small"])})
        rows.append(row)
    return rows


def print_rows(rows: list[dict]) -> None:
    print(f"\n{'encoding':<58} {'pairs':>9} {'s (min - max)':>22} {'MB':>7} {'vs scipy':>9}")
    for r in rows:
        spread = f"{r['wall_s']:.2f} ({r['wall_min_s']:.2f} - {r['wall_max_s']:.2f})"
        ratio = f"{r['speedup']:.0f}x" if "speedup" in r else "-"
        print(f"{r['label']:<58} {r['pairs']:>9,} {spread:>22} {r['peak_rss_rise_mb']:>7.0f} "
              f"{ratio:>9}")


def parse(argv: list[str] | None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=1_000_000)
    parser.add_argument("--reference-pairs", type=int, default=100_000,
                        help="pairs of the side-by-side run against the scipy reference")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--encodings", default=",".join(ENCODINGS),
                        help=f"comma separated, of {', '.join(ENCODINGS + OTHER_ENCODINGS)}")
    parser.add_argument("--max-dist", type=int, default=3)
    parser.add_argument("--alpha", type=float, default=0.15)
    parser.add_argument("--eps", type=float, default=1e-4)
    parser.add_argument("--check-ppr", type=int, default=8,
                        help="pairs whose PageRank is checked against power iteration")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--graph", type=Path, default=GRAPH)
    parser.add_argument("--note", default="", help="kept in the JSON (e.g. the machine's load)")
    parser.add_argument("--json", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    unknown = set(args.encodings.split(",")) - set(ENCODINGS + OTHER_ENCODINGS)
    if unknown:
        parser.error(f"unknown encodings {sorted(unknown)}; choose from "
                     f"{', '.join(ENCODINGS + OTHER_ENCODINGS)}")
    args.reference_pairs = min(args.reference_pairs, args.pairs)
    return args


def main(argv: list[str] | None = None) -> dict:
    args = parse(argv)
    torch.set_num_threads(1)
    try:  # freed large blocks go back to the system: each call's peak is its own
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(_M_MMAP_THRESHOLD, 1 << 16)
        libc.mallopt(_M_TRIM_THRESHOLD, 1 << 16)
    except (OSError, AttributeError):
        pass
    command = " ".join(["python benchmarks/link_pairs_large.py",
                        *(sys.argv[1:] if argv is None else argv)])
    setup = {"graph": str(args.graph), "command": command, "threads": 1,
             "cpu_count": os.cpu_count(), "python": platform.python_version(),
             "torch": torch.__version__, "target_seconds": TARGET_SECONDS, "seed": args.seed,
             "load_average_start": list(os.getloadavg()), "note": args.note or (
                 "measured while other benchmark processes ran on the same machine: the "
                 "load averages show how busy it was; wall times are inflated by it")}
    if not args.graph.exists():
        reason = f"{args.graph} not found (ogbn-arxiv in GraphSAINT's layout: adj_full.npz)"
        print(f"[skip] {reason}")
        result = {"setup": {**setup, "skipped": reason}, "rows": []}
        write_json_atomic(args.json, result)
        return result
    ei, n = read_adjacency(args.graph)
    csr = simple_csr(ei, n)
    setup["graph_to_csr_s"] = statistics.median(  # every call starts with it
        timed(lambda: simple_csr(ei, n))[0] for _ in range(3))
    pairs = query_pairs(csr, args.pairs, args.seed)
    setup.update({"nodes": n, "undirected_edges": int(csr.indices.shape[0] // 2),
                  "pairs": args.pairs, "pairs_made_of": "half edges drawn uniformly, half "
                  "uniform non-edges, shuffled", "ppr_check": check_ppr(ei, csr, pairs, args)})
    print(f"{args.graph}: {n:,} nodes, {setup['undirected_edges']:,} edges; {args.pairs:,} "
          f"pairs; PageRank check {setup['ppr_check']}", flush=True)
    chosen = {k: v for k, v in encodings(args).items() if k in args.encodings.split(",")}
    rows = measure(ei, n, pairs, args, chosen)
    setup["load_average_end"] = list(os.getloadavg())
    setup["process_peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result = {"setup": setup, "rows": rows}
    write_json_atomic(args.json, result)
    print_rows(rows)
    print(f"\nwrote {args.json}")
    return result


if __name__ == "__main__":
    main()
