"""Shared pieces of the training benchmarks: placing the offline datasets in a cache root,
and writing the table, the JSON and the plot."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path

DEFAULT_SHARED = Path(os.environ.get(
    "GRAPHPE_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
DEFAULT_ROOT = Path(tempfile.gettempdir()) / "graphpe-data"

# dataset -> where its offline copy is, relative to the shared folder, and where it goes
OFFLINE = {
    "ZINC": ("zinc12k-subset-raw.tar.xz", "ZINC/raw"),
    "CSL": ("csl/CSL", "CSL"),
    "EXP": ("exp/EXP", "EXP"),
    "MUTAG": ("tu/MUTAG", "MUTAG"),
    "PROTEINS": ("tu/PROTEINS", "PROTEINS"),
    "NCI1": ("tu/NCI1", "NCI1"),
    "IMDB-BINARY": ("tu/IMDB-BINARY", "IMDB-BINARY"),
    **{f"ogbg-{n}": (f"ogb/ogbg_{n}", f"ogbg_{n}")
       for n in ("molhiv", "molesol", "molfreesolv", "molbace", "molbbbp")},
    "Peptides-func": ("lrgb/peptides-functional", "peptides-functional"),
    "Minesweeper": ("heterophilous/minesweeper", "minesweeper"),
    "Tolokers": ("heterophilous/tolokers", "tolokers"),
}


def place(name: str, root: Path, shared: Path = DEFAULT_SHARED) -> bool:
    """Copy the offline copy of ``name`` into ``root`` (once); False if there is none."""
    src_rel, dest_rel = OFFLINE[name]
    src, dest = shared / src_rel, root / dest_rel
    if dest.exists():
        return True
    if not src.exists():
        print(f"[skip] {name}: {src} not found", file=sys.stderr)
        return False
    if src.suffix == ".xz":
        dest.mkdir(parents=True, exist_ok=True)
        with tarfile.open(src) as tar:
            tar.extractall(dest, filter="data")
    else:
        shutil.copytree(src, dest)
    return True


def report(rows: list[dict], columns: list[tuple[str, str, str]], title: str, json_path: Path,
           plot_key: str | None = None, plot_label: str = "") -> None:
    """Print ``rows`` as a table (``columns``: key, header, format), write JSON, and a bar plot
    of ``plot_key`` next to the JSON when matplotlib is available."""
    print(f"\n{title}")
    header = "  ".join(f"{h:>{max(len(h), 10)}}" for _, h, _ in columns)
    print(header)
    print("-" * len(header))
    for r in rows:
        cells = []
        for key, head, fmt in columns:
            value = r.get(key)
            text = "-" if value is None else format(value, fmt)
            cells.append(text.rjust(max(len(head), 10)))
        print("  ".join(cells))
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(rows, indent=2))
    print(f"\nwrote {json_path}")
    if plot_key is None:
        return
    plt = pyplot()
    if plt is None:
        return
    labels = [f"{r.get('dataset', '')} {r.get('model', '')} {r.get('pe_label', '')}".strip()
              for r in rows]
    fig, ax = plt.subplots(figsize=(max(6, 0.5 * len(rows)), 4))
    ax.bar(range(len(rows)), [r.get(plot_key) or 0 for r in rows])
    ax.set_xticks(range(len(rows)), labels, rotation=60, ha="right", fontsize=8)
    ax.set_ylabel(plot_label or plot_key)
    ax.set_title(title)
    fig.tight_layout()
    png = json_path.with_suffix(".png")
    fig.savefig(png, dpi=120)
    print(f"wrote {png}")


def pyplot():
    """matplotlib's pyplot on the Agg backend, or None (with a line saying so) without it."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib not installed: no plot)")
        return None
    return plt


def replace_row(rows: list[dict], row: dict, key: tuple[str, ...]) -> list[dict]:
    """``rows`` with the row of ``row``'s ``key`` fields replaced by ``row`` (or it added):
    how the paper scripts build one table over several invocations."""
    ident = tuple(row[k] for k in key)
    return [r for r in rows if tuple(r[k] for k in key) != ident] + [row]


def write_json_atomic(path: Path, data: dict) -> None:
    """Write ``data`` as JSON through a temporary file, so an interrupted run never leaves a
    half-written results file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1))
    os.replace(tmp, path)


def exact_landing_on_nodes(csr, nodes, steps: int):
    """``(P^t)_jj``, ``t = 1..steps``, of ``nodes`` by ``steps`` sparse products (scipy, float64)
    with their columns of the identity, ``P = D^-1 (A + L)`` on ``csr`` (a
    ``graphpe.ops.host.HostCSR``: the undirected simple graph) and its self loops ``L`` counted
    once in the degree, as RWSE defines it: independent of graphpe's walk kernels."""
    import numpy as np
    import scipy.sparse as sp

    n = csr.indptr.shape[0] - 1
    adj = sp.csr_matrix((csr.weight, csr.indices, csr.indptr), shape=(n, n)) + sp.diags(
        csr.loops)
    deg = np.asarray(adj.sum(axis=1)).ravel()
    walk = (sp.diags(1.0 / np.maximum(deg, 1e-300)) @ adj).tocsr()
    x = np.zeros((n, nodes.shape[0]))
    cols = np.arange(nodes.shape[0])
    x[nodes, cols] = 1.0
    out = np.empty((nodes.shape[0], steps))
    for t in range(steps):
        x = walk @ x
        out[:, t] = x[nodes, cols]
    return out
