"""Sharded precompute: ``precompute(num_workers=N)`` against one worker on ZINC-12k (the
train, val and test ``InMemoryDataset``s, as a user encodes them), LapPE(8) + RWSE(16) + LCP,
after a warm-up call, the two settings taking turns, best of ``--repeats``. The outputs are
checked equal bit for bit.

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
    ap.add_argument("--repeats", type=int, default=5)
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

    splits = [ZINC(str(args.root / "ZINC"), subset=True, split=split)
              for split in ("train", "val", "test")]
    if args.limit is not None:
        splits = [s[: args.limit] for s in splits]
    count = sum(len(s) for s in splits)
    transforms = [LaplacianPE(8), RWSE(16), LCP()]

    def run(workers: int):
        start = time.perf_counter()
        out = [precompute(s, transforms, progress=False, num_workers=workers) for s in splits]
        return time.perf_counter() - start, out

    run(1)  # warm-up: compiled kernels loaded, caches filled
    one = many = float("inf")
    for _ in range(args.repeats):
        seconds, ref = run(1)
        one = min(one, seconds)
        seconds, got = run(args.workers)
        many = min(many, seconds)
    same = all(torch.equal(a[k], b[k]) for ra, ga in zip(ref, got, strict=True)
               for a, b in zip(ra, ga, strict=True)
               for k in ("lap_pe", "lap_eigvals", "rwse", "lcp"))
    ratio = one / many
    graphs = range(count)
    print(f"precompute of {count:,} ZINC graphs (train, val, test), LapPE(8) + RWSE(16) + LCP, "
          f"best of {args.repeats}:")
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
