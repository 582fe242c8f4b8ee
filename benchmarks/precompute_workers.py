"""Sharded precompute: ``precompute(num_workers=N)`` against one worker on ZINC-12k (train +
val + test as one InMemoryDataset-backed list), LapPE(8) + RWSE(16) + LCP, best of
``--repeats``. The outputs are checked equal bit for bit.

    python benchmarks/precompute_workers.py --workers 2

Target (issue 16): 2 workers >= 1.7x one worker on a 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DEFAULT_ROOT, DEFAULT_SHARED, place  # noqa: E402

from graphpe.transforms import LCP, RWSE, LaplacianPE, precompute  # noqa: E402

TARGET = 1.7


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--limit", type=int, default=None, help="use only the first N graphs")
    ap.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    ap.add_argument("--shared", type=Path, default=DEFAULT_SHARED)
    ap.add_argument("--json", type=Path, default=Path("benchmarks/results/precompute_workers.json"))
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    if not place("ZINC", args.root, args.shared):
        print("[skip] no offline ZINC copy: nothing measured", file=sys.stderr)
        return
    from torch_geometric.datasets import ZINC

    graphs = [g for split in ("train", "val", "test")
              for g in ZINC(str(args.root / "ZINC"), subset=True, split=split)]
    graphs = graphs[: args.limit]
    transforms = [LaplacianPE(8), RWSE(16), LCP()]

    def run(workers: int):
        best, out = float("inf"), None
        for _ in range(args.repeats):
            start = time.perf_counter()
            out = precompute(graphs, transforms, progress=False, num_workers=workers)
            best = min(best, time.perf_counter() - start)
        return best, out

    one, ref = run(1)
    many, got = run(args.workers)
    same = all(torch.equal(a[k], b[k]) for a, b in zip(ref, got, strict=True)
               for k in ("lap_pe", "lap_eigvals", "rwse", "lcp"))
    ratio = one / many
    print(f"precompute of {len(graphs):,} ZINC graphs, LapPE(8) + RWSE(16) + LCP, best of "
          f"{args.repeats}:")
    print(f"  1 worker:  {one:.3f} s ({len(graphs) / one:,.0f} graphs/s)")
    print(f"  {args.workers} workers: {many:.3f} s ({len(graphs) / many:,.0f} graphs/s), "
          f"{ratio:.2f}x (target >= {TARGET}x: {'met' if ratio >= TARGET else 'NOT met'}); "
          f"outputs bit-identical: {same}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({
        "graphs": len(graphs), "workers": args.workers, "seconds_1": round(one, 4),
        "seconds_n": round(many, 4), "speedup": round(ratio, 3), "identical": same,
        "target": TARGET}, indent=2))
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
