"""Speed of one commit against another: the same benchmarks run on both, alternately.

    python benchmarks/regression.py 74f7423 HEAD                     # precompute and train_step
    python benchmarks/regression.py 74f7423 HEAD --rounds 4 --tree 74f7423=/path/to/checkout

Each revision is checked out in a worktree of its own (``git worktree add --detach``) and its
compiled kernels built there (``python -m graphpe.ops.aot_build``), unless ``--tree REV=PATH``
names a checkout that has them. Then, round after round, each benchmark runs in a fresh
process from each tree with that tree's own script (the order of the two trees alternating
between rounds: A B, B A, ...), so a drift of the machine's speed falls on both alike. The
table gives each row's median over the rounds for both revisions and their ratio
(``after / before`` of throughput: above 1 is faster); rows slower by more than
``--tolerance`` are marked. Run it alone on the machine, with explicit threads (the
benchmarks' ``--threads``, default 1). Writes JSON (``--json``).

Benchmarks and the rows compared:
- ``precompute``: ``benchmarks/precompute.py --quick`` (``--precompute-args``): graphs/s of
  graphpe for every (dataset, encoding, path) row.
- ``train_step``: ``benchmarks/train_step.py --rounds 3`` (``--train-step-args``): ms per
  training step of every graphpe model row (and PyG's, as a control that should not move).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BENCH_RESULTS = REPO / "benchmarks" / "results"


def checkout(rev: str, trees: dict[str, Path], workdir: Path) -> Path:
    """A checkout of ``rev`` with its kernels built: ``trees[rev]`` if given, else a new
    detached worktree under ``workdir``."""
    if rev in trees:
        return trees[rev]
    path = workdir / rev.replace("/", "_")
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(path), rev],
                   check=True, capture_output=True)
    print(f"{rev}: building its kernels in {path} ...", flush=True)
    subprocess.run([sys.executable, "-m", "graphpe.ops.aot_build"], cwd=path, check=True,
                   env=dict(os.environ, PYTHONPATH=str(path)), capture_output=True)
    return path


def run_benchmark(tree: Path, script: str, args: list[str], out: Path) -> dict:
    """One run of ``benchmarks/<script>.py`` from ``tree`` (its package first on the path)."""
    command = [sys.executable, str(tree / "benchmarks" / f"{script}.py"), *args,
               "--json", str(out)]
    subprocess.run(command, cwd=tree, check=True, env=dict(os.environ, PYTHONPATH=str(tree)),
                   stdout=subprocess.DEVNULL)
    return json.loads(out.read_text())


def precompute_rows(result: dict) -> dict[str, float]:
    """graphpe's graphs/s by row."""
    return {f"precompute {r['dataset']} | {r['encoding']} | {r['path']}":
            r["graphpe_graphs_per_s"] for r in result["rows"]}


def train_step_rows(result: dict) -> dict[str, float]:
    """Steps/s by model (the inverse of ms per step, so that higher is faster throughout)."""
    return {f"train_step {r['model']}": 1000.0 / r["ms_per_step"] for r in result["rows"]
            if r.get("ms_per_step")}


BENCHMARKS = {"precompute": precompute_rows, "train_step": train_step_rows}


def compare(before: dict[str, list[float]], after: dict[str, list[float]],
            tolerance: float) -> list[dict]:
    rows = []
    for name in sorted(set(before) & set(after)):
        b, a = statistics.median(before[name]), statistics.median(after[name])
        ratio = a / b if b else float("nan")
        rows.append({"row": name, "before": b, "after": a, "ratio": ratio,
                     "before_runs": before[name], "after_runs": after[name],
                     "slower": ratio < 1.0 - tolerance})
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--benchmarks", default="precompute,train_step")
    parser.add_argument("--precompute-args", default="--quick --threads 1")
    parser.add_argument("--train-step-args", default="--threads 1 --rounds 3")
    parser.add_argument("--tree", action="append", default=[],
                        help="REV=PATH: a checkout of REV with its kernels built")
    parser.add_argument("--tolerance", type=float, default=0.05,
                        help="a row slower by more than this fraction is marked")
    parser.add_argument("--json", type=Path, default=BENCH_RESULTS / "regression.json")
    args = parser.parse_args(argv)
    trees = {rev: Path(path).resolve() for rev, _, path in
             (item.partition("=") for item in args.tree)}
    extra = {"precompute": shlex.split(args.precompute_args),
             "train_step": shlex.split(args.train_step_args)}
    names = [n.strip() for n in args.benchmarks.split(",") if n.strip()]
    with tempfile.TemporaryDirectory(prefix="graphpe-regression-") as tmp:
        workdir = Path(tmp)
        revs = {"before": checkout(args.before, trees, workdir),
                "after": checkout(args.after, trees, workdir)}
        samples: dict[str, dict[str, list[float]]] = {"before": {}, "after": {}}
        for round_ in range(args.rounds):
            order = ("before", "after") if round_ % 2 == 0 else ("after", "before")
            for name in names:
                for side in order:
                    out = workdir / f"{side}-{name}-{round_}.json"
                    result = run_benchmark(revs[side], name, extra[name], out)
                    for row, value in BENCHMARKS[name](result).items():
                        samples[side].setdefault(row, []).append(value)
            print(f"round {round_ + 1}/{args.rounds} done", flush=True)
        for rev in (args.before, args.after):
            if rev not in trees:
                subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force",
                                str(workdir / rev.replace("/", "_"))], check=False)
    rows = compare(samples["before"], samples["after"], args.tolerance)
    width = max(len(r["row"]) for r in rows) if rows else 10
    print(f"\n{'row':<{width}}  {'before':>10}  {'after':>10}  after/before")
    for r in rows:
        mark = "  slower" if r["slower"] else ""
        print(f"{r['row']:<{width}}  {r['before']:>10.1f}  {r['after']:>10.1f}  "
              f"{r['ratio']:>8.3f}{mark}")
    print("(graphs/s for precompute rows, steps/s for train_step rows; medians of "
          f"{args.rounds} alternating rounds)")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({
        "command": "python benchmarks/regression.py " + " ".join(argv or sys.argv[1:]),
        "before": args.before, "after": args.after, "rounds": args.rounds,
        "tolerance": args.tolerance, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
