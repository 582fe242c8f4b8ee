"""README tables from benchmark JSON: no number in the README is typed by hand.

    python benchmarks/tables.py                       # print every table it can build
    python benchmarks/tables.py --write README.md     # replace the marked blocks in place

A block in the README sits between ``<!-- table:NAME -->`` and ``<!-- /table:NAME -->``;
``NAME`` is a key of :data:`TABLES`, which says which JSON file it is built from.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _rate(value: float | None) -> str:
    return "" if value is None else f"{value:,.0f}"


def precompute_table(data: dict) -> str:
    """Encoding throughput per path against PyG (from ``benchmarks/precompute.py``)."""
    lines = [
        f"`python benchmarks/precompute.py --threads {data['threads']}` (graphpe "
        f"{data['graphpe']}, PyG {data['pyg']}, torch {data['torch']}; best of "
        f"{data['repeats']}):",
        "",
        "| dataset | encoding | path | graphpe graphs/s | PyG graphs/s | vs PyG | target |",
        "| --- | --- | --- | ---: | ---: | ---: | --- |",
    ]
    for r in data["rows"]:
        ratio = "" if r["ratio"] is None else f"{r['ratio']:.1f}x"
        target = ""
        if "target" in r:
            target = f"{r['target']} {'met' if r['met'] else '**not met**'}"
        lines.append(f"| {r['dataset']} | {r['encoding']} | {r['path']} | "
                     f"{_rate(r['graphpe_graphs_per_s'])} | {_rate(r['pyg_graphs_per_s'])} | "
                     f"{ratio} | {target} |")
    errors = []
    for r in data["rows"]:
        if r["path"] == "dataset" and r["max_error"] is not None:
            if r["pyg_max_error"] is not None:
                errors.append(f"{r['dataset']} {r['encoding']}: largest projector difference "
                              f"to a float64 numpy eigh {r['max_error']:.1e} (PyG "
                              f"{r['pyg_max_error']:.1e})")
            else:
                errors.append(f"{r['dataset']} {r['encoding']}: largest difference to PyG "
                              f"{r['max_error']:.1e}")
    lines += ["", "Accuracy: " + "; ".join(errors) + "."]
    failed = {(r["dataset"], r["encoding"]): r["pyg_failed_graphs"] for r in data["rows"]
              if r["pyg_failed_graphs"]}
    for (dataset, encoding), count in failed.items():
        lines.append(f"PyG raised on {count} graphs of {dataset} ({encoding}); graphpe encodes "
                     "every graph.")
    return "\n".join(lines)


def rfp_large_table(data: dict) -> str:
    """Graph preparation and propagation on one large graph (from ``benchmarks/rfp.py``)."""
    lines = ["| step | time | vs a bare SpMM step or trajectory |", "| --- | ---: | ---: |"]
    for r in data["rows"]:
        if r.get("part") != "large":
            continue
        if r["method"] == "operator build":
            lines.append(f"| operator build ({r['nodes']:,} nodes, {r['input_edges']:,} input "
                         f"edges, {r['nnz']:,} nonzeros) | {r['seconds']:.2f} s | "
                         f"{r['ratio_to_bare_trajectory']:.2f}x a trajectory |")
        else:
            ratio = f"{r['ratio_to_bare']:.2f}x" if "ratio_to_bare" in r else "1x"
            lines.append(f"| {r['method']}, d = {r['dim']} | "
                         f"{r['seconds_per_step'] * 1e3:.0f} ms per step | {ratio} |")
    return "\n".join(lines)


TABLES = {
    "precompute": ("benchmarks/results/precompute.json", precompute_table),
    "rfp_large": ("benchmarks/results/rfp_large.json", rfp_large_table),
}


def build(name: str, root: Path = ROOT) -> str | None:
    path, make = TABLES[name]
    source = root / path
    if not source.exists():
        return None
    return make(json.loads(source.read_text()))


def write(readme: Path, root: Path = ROOT) -> list[str]:
    """Replace every marked block of ``readme`` whose JSON exists; the names replaced."""
    text = readme.read_text()
    done = []
    for name in TABLES:
        table = build(name, root)
        pattern = re.compile(rf"(<!-- table:{name} -->\n).*?(<!-- /table:{name} -->)", re.S)
        if table is None or not pattern.search(text):
            continue
        text = pattern.sub(lambda m, t=table: m.group(1) + t + "\n" + m.group(2), text)
        done.append(name)
    readme.write_text(text)
    return done


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", type=Path, help="README to update in place")
    parser.add_argument("--root", type=Path, default=ROOT, help="where results/ lives")
    args = parser.parse_args(argv)
    if args.write:
        print("updated:", ", ".join(write(args.write, args.root)) or "nothing")
        return
    for name in TABLES:
        table = build(name, args.root)
        print(f"## {name}\n\n{table or '(no results yet)'}\n")


if __name__ == "__main__":
    main()
