"""ogbn-arxiv's encodings computed once, each in a fresh one-thread process: the seconds of the
transform call, the process's peak resident memory, and the same encoding through
``precompute``'s on-disk cache (written once, then read back by a later process).

    python benchmarks/arxiv_encodings.py                       # ../shared/data/ogbn-arxiv-graph
    python benchmarks/arxiv_encodings.py --encodings rwse,maglap --no-cache
    python benchmarks/arxiv_encodings.py --graph some/graph.npz --json /tmp/a.json

The graph is GraphSAINT's ogbn-arxiv (169,343 nodes, 1,166,243 directed citations ``i -> j``)
in ``--root``/``ogbn-arxiv-graph`` (default the project machines' shared data,
``$GRAPHPE_SHARED_DATA`` or ``../shared/data`` beside the checkout), read by
:func:`graphpe.datasets.read_graph` as the file holds it: directed. LapPE, RWSE and RFP work
on the undirected simple graph underlying the edges (they symmetrize it themselves); the
magnetic Laplacian reads the direction. ``--graph`` reads any other graph file or folder
instead (the test's small directed graph). Where the graph is absent the script says why,
writes the JSON with the reason, and exits 0.

The encodings (``--encodings``, default all; the settings are the transforms' ``repr`` in the
rows):

- ``lap``: ``LaplacianPE(k=16)`` (``--pe lap:k=16``);
- ``rwse``: ``RWSE(walk_length=16, estimate=E, max_exact_seconds=60.0,
  stderr_name='rwse_stderr')``, ``E`` from ``--rwse-estimate`` (default ``auto``: arxiv's
  exact values are predicted past 60 s, about 1,100 s on one thread, so they are estimated
  from ``--rwse-walks`` random walks per node (default 256), the standard error beside;
  ``sampled`` always estimates, ``exact`` never does). Checked against exact values ``P^t
  e_j`` (scipy, float64) on ``--check-nodes`` sampled nodes: the share within 3 and 4
  standard errors, the root mean square and largest error;
- ``rfp``: ``RFP(dim=16, steps=8)`` (4 draws, seed 0, the ``gcn`` operator and ``qr``);
- ``maglap``: ``MagneticLaplacianPE(k=16)`` (``q = 0.1``) on the directed graph.

Each measurement is its own subprocess (``OMP``/``MKL``/``OPENBLAS``/``NUMBA`` threads 1,
``torch.set_num_threads(1)``; stopped after ``--timeout`` seconds; address space capped at
``--memory-gb``): imports, the graph's load (timed apart), the transform on a 2,000-node
directed graph first (graphpe's kernels loaded; timed apart), then the call on the graph,
timed alone (wall and CPU seconds: CPU well below wall means the core was shared). Peak
memory is the process's high-water resident size (``VmHWM``) right after the call: the
interpreter, torch, the graph and the encodings together. The cached path, per encoding:
one process runs ``precompute([graph], [transform], cache_dir=...)`` on an empty cache (a
miss: the encoding and the file's write), a second process the same call again, which must
be a hit (graphpe logs ``cache hit``): its seconds (the file's read and check), its peak
memory, and whether its outputs are the direct call's bit for bit (SHA-256 of each tensor).

Targets (issue 52): every encoding within 60 s and 4 GB (decimal: 4e9 bytes). Rows go to
``--json`` (default ``benchmarks/results/arxiv_encodings.json``) as they are measured, with
the load average at the start and end: on a machine shared with other work the seconds are
an upper bound of the one-thread time.
"""

from __future__ import annotations

import os
import sys

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import platform  # noqa: E402
import resource  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DEFAULT_SHARED, exact_landing_on_nodes, write_json_atomic  # noqa: E402

DEFAULT_JSON = Path("benchmarks/results/arxiv_encodings.json")
GRAPH_DIR = "ogbn-arxiv-graph"
TARGET_SECONDS = 60.0
TARGET_BYTES = 4e9
CHECK_NODES = 256
# above every dense limit and graphpe.ops.host.COMPILED_MAX_NODES (1,024): the large-graph paths
WARM_NODES = 2000
# name -> (label, the transform as Python, filled in by the options)
ENCODINGS = {
    "lap": ("LapPE k=16", "LaplacianPE(k=16)"),
    "rwse": ("RWSE T=16", "RWSE(walk_length=16, estimate={rwse_estimate!r}, walks={rwse_walks}, "
                          "max_exact_seconds=60.0, stderr_name='rwse_stderr')"),
    "rfp": ("RFP(16 dims, 8 steps)", "RFP(dim=16, steps=8)"),
    "maglap": ("MagLap k=16 (directed)", "MagneticLaplacianPE(k=16)"),
}


# ----------------------------------------------------------------------------- the child


def _status_bytes(field: str) -> int:
    """``field`` (``VmHWM``, ``VmRSS``) of /proc/self/status in bytes; ru_maxrss without it."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _transform(code: str):
    import graphpe.transforms as transforms

    names = {n: getattr(transforms, n) for n in ("LaplacianPE", "RWSE", "RFP",
                                                  "MagneticLaplacianPE")}
    return eval(code, {"__builtins__": {}}, names)  # the script's own table, not user input


def warm_graph():
    """A directed graph of :data:`WARM_NODES` nodes (a ring and seeded chords): its call loads
    the kernels of the large-graph paths."""
    import torch
    from torch_geometric.data import Data

    g = torch.Generator().manual_seed(0)
    ring = torch.arange(WARM_NODES)
    src = torch.cat([ring, torch.randint(WARM_NODES, (2 * WARM_NODES,), generator=g)])
    dst = torch.cat([(ring + 1) % WARM_NODES,
                     torch.randint(WARM_NODES, (2 * WARM_NODES,), generator=g)])
    return Data(edge_index=torch.stack([src, dst]), num_nodes=WARM_NODES)


def digests(data, names) -> dict[str, str]:
    """SHA-256 of each output tensor's dtype, shape and bytes."""
    out = {}
    for name in sorted(names):
        t = data[name].contiguous()
        h = hashlib.sha256(f"{t.dtype}{tuple(t.shape)}".encode())
        h.update(t.numpy().tobytes())
        out[name] = h.hexdigest()
    return out


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def child(spec: dict) -> dict:
    """One measurement (``spec["mode"]``: ``direct``, ``cache``), in this process."""
    start = time.perf_counter()
    import torch

    torch.set_num_threads(1)
    from graphpe.datasets import read_graph
    from graphpe.transforms import precompute

    records = _Records()
    logging.getLogger("graphpe").addHandler(records)
    logging.getLogger("graphpe").setLevel(logging.INFO)
    result = {"import_seconds": time.perf_counter() - start}
    t0 = time.perf_counter()
    data = read_graph(Path(spec["graph"]))
    result["load_seconds"] = time.perf_counter() - t0
    result["rss_after_load_gb"] = _status_bytes("VmRSS") / 1e9
    transform = _transform(spec["code"])
    result["settings"] = repr(transform)
    before = set(data.keys())
    t0 = time.perf_counter()
    warm = warm_graph()
    if spec["mode"] == "direct":
        transform(warm)
    else:
        precompute([warm], [transform], progress=False)
    result["warm_seconds"] = time.perf_counter() - t0
    transform = _transform(spec["code"])  # afresh: the warm call drew from RFP's generator
    records.messages.clear()
    cpu0, t0 = time.process_time(), time.perf_counter()
    if spec["mode"] == "direct":
        out = transform(data)
    else:
        out = precompute([data], [transform], cache_dir=spec["cache_dir"], progress=False)[0]
    result["seconds"] = time.perf_counter() - t0
    result["cpu_seconds"] = time.process_time() - cpu0
    result["peak_rss_gb"] = _status_bytes("VmHWM") / 1e9
    names = sorted(set(out.keys()) - before)
    result["outputs"] = {n: [str(out[n].dtype).replace("torch.", ""), list(out[n].shape)]
                         for n in names}
    result["digests"] = digests(out, names)
    result["log"] = [m[:400] for m in records.messages]
    if spec["mode"] == "cache":
        result["hit"] = any(m.startswith("cache hit") for m in records.messages)
        result["cache_mb"] = sum(p.stat().st_size for p in Path(spec["cache_dir"]).glob("*.pt")
                                 ) / 1e6
    elif "rwse_stderr" in names:
        result.update(rwse_check(data, out, spec["check_nodes"]))
    return result


def rwse_check(data, out, check_nodes: int) -> dict:
    """RWSE's standard errors, and its values against exact ones on sampled nodes."""
    import numpy as np

    est = out["rwse"].double().numpy()
    se = out["rwse_stderr"].double().numpy()
    n, steps = est.shape
    nodes = np.sort(np.random.default_rng(0).choice(n, min(n, check_nodes), replace=False))
    from graphpe.ops.host import simple_csr

    want = exact_landing_on_nodes(simple_csr(data.edge_index, n), nodes, steps)
    diff = np.abs(est[nodes] - want)
    estimated = bool(se.any())
    return {"estimated": estimated, "mean_stderr": float(se.mean()),
            "median_stderr": float(np.median(se)), "max_stderr": float(se.max()),
            "checked_nodes": int(nodes.shape[0]),
            "within_3se": float((diff <= 3 * se[nodes] + 1e-6).mean()),
            "within_4se": float((diff <= 4 * se[nodes] + 1e-6).mean()),
            "rmse": float(np.sqrt((diff ** 2).mean())), "max_error": float(diff.max())}


# ----------------------------------------------------------------------------- the parent


def run_child(spec: dict, timeout: float, memory_gb: float) -> dict:
    """:func:`child` in a fresh interpreter, stopped after ``timeout`` seconds and limited to
    ``memory_gb`` GB of address space: its result, or ``{"status": "timeout" | "failed"}``."""
    limit = int(memory_gb * 1e9)

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (root, os.environ.get("PYTHONPATH", "")) if p)}
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(spec)]
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              preexec_fn=cap, env=env)
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "error": f"> {timeout:g} s"}
    wall = time.perf_counter() - start
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode == 0 and lines:
        return {"status": "ok", "process_seconds": wall, **json.loads(lines[-1])}
    err = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
    return {"status": "failed", "error": (err[-1] if err else f"exit {proc.returncode}")[-300:]}


def judge(result: dict) -> tuple[bool, str]:
    """Met when the call finished within :data:`TARGET_SECONDS` and the process's peak within
    :data:`TARGET_BYTES`."""
    if result.get("status") != "ok":
        return False, result.get("error", result.get("status", "?"))
    why = []
    if result["seconds"] > TARGET_SECONDS:
        why.append(f"{result['seconds']:.1f} s > {TARGET_SECONDS:g} s")
    if result["peak_rss_gb"] * 1e9 > TARGET_BYTES:
        why.append(f"peak {result['peak_rss_gb']:.2f} GB > {TARGET_BYTES / 1e9:g} GB")
    return not why, "; ".join(why)


def measure(name: str, args, graph: Path, cache_root: Path) -> dict:
    """The row of one encoding: the direct call, then the cache's miss and hit."""
    label, code = ENCODINGS[name]
    code = code.format(rwse_estimate=args.rwse_estimate, rwse_walks=args.rwse_walks)
    base = {"graph": str(graph), "code": code, "check_nodes": args.check_nodes}
    direct = run_child({**base, "mode": "direct"}, args.timeout, args.memory_gb)
    row = {"encoding": label, "name": name, "settings": direct.get("settings", code),
           "target_seconds": TARGET_SECONDS, "target_peak_gb": TARGET_BYTES / 1e9,
           "direct": direct}
    row["met"], row["why"] = judge(direct)
    for key in ("seconds", "cpu_seconds", "peak_rss_gb", "load_seconds"):
        row[key] = direct.get(key)
    print(f"  {label}: {_cell(direct)}", flush=True)
    if args.no_cache:
        return row
    cache_dir = cache_root / name  # this script's own folder: the first process must miss
    for old in cache_dir.glob("*.pt"):
        old.unlink()
    cache = {}
    for phase in ("miss", "hit"):
        r = run_child({**base, "mode": "cache", "cache_dir": str(cache_dir)}, args.timeout,
                      args.memory_gb)
        cache[phase] = r
        print(f"    precompute cache {phase}: {_cell(r)}", flush=True)
    hit = cache["hit"]
    cache["hit_was_hit"] = bool(hit.get("hit")) and not cache["miss"].get("hit", True)
    cache["hit_equals_direct"] = (hit.get("digests") is not None
                                  and hit.get("digests") == direct.get("digests"))
    row["cache"] = cache
    row["cache_hit_seconds"] = hit.get("seconds")
    row["cache_hit_peak_rss_gb"] = hit.get("peak_rss_gb")
    return row


def _cell(r: dict) -> str:
    if r.get("status") != "ok":
        return f"{r.get('status')}: {r.get('error', '')}"
    return (f"{r['seconds']:.2f} s (cpu {r['cpu_seconds']:.2f} s), peak "
            f"{r['peak_rss_gb']:.2f} GB, load {r['load_seconds']:.2f} s")


def print_table(rows: list[dict]) -> None:
    head = (f"{'encoding':<24} {'seconds':>8} {'cpu s':>8} {'peak GB':>8} {'load s':>7} "
            f"{'hit s':>7} {'hit GB':>7}  target {TARGET_SECONDS:g} s / "
            f"{TARGET_BYTES / 1e9:g} GB")
    print("\n" + head)
    print("-" * len(head))

    def num(v, width):
        return ("-" if v is None else f"{v:.2f}").rjust(width)

    for r in rows:
        mark = "met" if r["met"] else f"NOT met ({r['why']})"
        print(f"{r['encoding']:<24} {num(r['seconds'], 8)} {num(r['cpu_seconds'], 8)} "
              f"{num(r['peak_rss_gb'], 8)} {num(r['load_seconds'], 7)} "
              f"{num(r.get('cache_hit_seconds'), 7)} "
              f"{num(r.get('cache_hit_peak_rss_gb'), 7)}  {mark}")
        d = r["direct"]
        if "mean_stderr" in d:
            print(f"{'':<24} {'estimated' if d['estimated'] else 'exact'}: mean standard "
                  f"error {d['mean_stderr']:.2e}; {d['checked_nodes']} nodes against exact "
                  f"values: {d['within_4se']:.1%} within 4 se, rmse {d['rmse']:.2e}")


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) == 2 and argv[0] == "--child":
        print(json.dumps(child(json.loads(argv[1]))), flush=True)
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, default=DEFAULT_SHARED,
                    help=f"the shared data folder holding {GRAPH_DIR}/")
    ap.add_argument("--graph", type=Path, default=None,
                    help="another graph (file or GraphSAINT folder) in place of ogbn-arxiv")
    ap.add_argument("--encodings", default=",".join(ENCODINGS),
                    help=f"comma-separated subset of {','.join(ENCODINGS)}")
    ap.add_argument("--rwse-estimate", default="auto", choices=("auto", "sampled", "exact"))
    ap.add_argument("--rwse-walks", type=int, default=256)
    ap.add_argument("--check-nodes", type=int, default=CHECK_NODES,
                    help="nodes whose RWSE is checked against exact values")
    ap.add_argument("--no-cache", action="store_true", help="skip precompute's cached path")
    ap.add_argument("--cache-dir", type=Path, default=None,
                    help="the cache's folder (default a temporary one, removed after)")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per process")
    ap.add_argument("--memory-gb", type=float, default=12.0,
                    help="address-space limit of each process (GB)")
    ap.add_argument("--note", default="", help="a note kept in the JSON (e.g. the machine's load)")
    ap.add_argument("--json", type=Path, default=DEFAULT_JSON)
    args = ap.parse_args(argv)
    names = args.encodings.split(",")
    for n in names:
        if n not in ENCODINGS:
            ap.error(f"unknown encoding {n!r}; choose from {', '.join(ENCODINGS)}")
    graph = args.graph if args.graph is not None else args.root / GRAPH_DIR
    meta = {"graph": str(graph), "threads": 1, "cpu_count": os.cpu_count(),
            "python": platform.python_version(), "target_seconds": TARGET_SECONDS,
            "target_peak_gb": TARGET_BYTES / 1e9, "rwse_estimate": args.rwse_estimate,
            "rwse_walks": args.rwse_walks, "timeout": args.timeout,
            "memory_gb": args.memory_gb, "note": args.note,
            "command": "python benchmarks/arxiv_encodings.py " + " ".join(argv),
            "load_average_start": list(os.getloadavg())}
    if not graph.exists():
        reason = f"{graph} not found (ogbn-arxiv in GraphSAINT's layout: adj_full.npz)"
        print(f"[skip] {reason}", flush=True)
        write_json_atomic(args.json, {**meta, "skipped": reason, "rows": []})
        return
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        cache_root = args.cache_dir if args.cache_dir is not None else Path(tmp)
        print(f"{graph}: one thread per process; encodings {', '.join(names)}", flush=True)
        for name in names:
            rows.append(measure(name, args, graph, cache_root))
            write_json_atomic(args.json, {**meta, "load_average_end": list(os.getloadavg()),
                                          "rows": rows})
    print_table(rows)
    print(f"\n{sum(r['met'] for r in rows)} of {len(rows)} encodings meet the targets; "
          f"wrote {args.json}")


if __name__ == "__main__":
    main()
