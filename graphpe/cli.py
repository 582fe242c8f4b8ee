"""The ``graphpe`` command line."""

from __future__ import annotations

import argparse
import runpy
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _run_benchmark(name: str, extra: list[str]) -> None:
    script = BENCHMARKS / f"{name}.py"
    if not script.exists():
        available = sorted(p.stem for p in BENCHMARKS.glob("*.py"))
        raise SystemExit(f"no benchmark {name!r}; available: {', '.join(available)}")
    sys.argv = [str(script), *extra]
    runpy.run_path(str(script), run_name="__main__")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="graphpe", description="Positional encodings for GNNs")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser(
        "demo",
        help="encode bundled molecule-like graphs (and ZINC-12k where present) with LapPE and "
        "RWSE, against PyG's transforms, and print the table",
    )
    bench = sub.add_parser("bench", help="run a benchmark script from benchmarks/")
    bench.add_argument("name", help="benchmark name, e.g. precompute")
    bench.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the script")
    args = parser.parse_args(argv)
    if args.command == "demo":
        _run_benchmark("precompute", ["--synthetic", "5000", "--repeats", "2"])
    elif args.command == "bench":
        _run_benchmark(args.name, args.args)


if __name__ == "__main__":
    main()
