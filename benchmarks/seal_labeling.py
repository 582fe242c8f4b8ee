"""SEAL's enclosing subgraphs with DRNL labels on Cora: graphpe's compiled extraction
(``graphpe.ops.labeling.enclosing_subgraphs``: all pairs in two compiled passes) against PyG's
SEAL example's Python path (``examples/seal_link_pred.py``: per pair ``k_hop_subgraph``, the
target edge masked out, ``drnl_node_labeling`` with scipy's ``shortest_path``), written below
as that example does.

The pairs are SEAL's training pairs: Cora split by ``RandomLinkSplit(num_val=0.05,
num_test=0.1, is_undirected=True, split_labels=True)`` (the example's split), its training
positives and as many sampled negatives, on the training graph. Before timing, both sides'
subgraphs are checked equal pair by pair (node sets, edge counts and each node's label).
Rounds alternate the two sides in one process, on one thread; the table gives each side's
median and spread (min - max) over the rounds and the ratio of the medians.

    python benchmarks/seal_labeling.py --sizes 2000,all --rounds 5

Target (issue 66): >= 10x PyG's example path.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

for _name in ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from scipy.sparse.csgraph import shortest_path  # noqa: E402
from torch_geometric.utils import k_hop_subgraph, to_scipy_sparse_matrix  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DEFAULT_SHARED  # noqa: E402

from graphpe.ops.labeling import enclosing_subgraphs  # noqa: E402

TARGET_SPEEDUP = 10.0
RESULTS = Path(__file__).resolve().parent / "results" / "seal_labeling.json"


# --- PyG's examples/seal_link_pred.py (SEALDataset.extract_enclosing_subgraphs and
# drnl_node_labeling), https://github.com/pyg-team/pytorch_geometric, MIT licence,
# Copyright (c) 2023 PyG Team: made functions of their arguments (k_hop_subgraph given
# num_nodes, the Data objects and the node features left out), the rest unchanged.
def drnl_node_labeling(edge_index, src, dst, num_nodes=None):
    # Double-radius node labeling (DRNL).
    src, dst = (dst, src) if src > dst else (src, dst)
    adj = to_scipy_sparse_matrix(edge_index, num_nodes=num_nodes).tocsr()

    idx = list(range(src)) + list(range(src + 1, adj.shape[0]))
    adj_wo_src = adj[idx, :][:, idx]

    idx = list(range(dst)) + list(range(dst + 1, adj.shape[0]))
    adj_wo_dst = adj[idx, :][:, idx]

    dist2src = shortest_path(adj_wo_dst, directed=False, unweighted=True, indices=src)
    dist2src = np.insert(dist2src, dst, 0, axis=0)
    dist2src = torch.from_numpy(dist2src)

    dist2dst = shortest_path(adj_wo_src, directed=False, unweighted=True, indices=dst - 1)
    dist2dst = np.insert(dist2dst, src, 0, axis=0)
    dist2dst = torch.from_numpy(dist2dst)

    dist = dist2src + dist2dst
    dist_over_2, dist_mod_2 = dist // 2, dist % 2

    z = 1 + torch.min(dist2src, dist2dst)
    z += dist_over_2 * (dist_over_2 + dist_mod_2 - 1)
    z[src] = 1.
    z[dst] = 1.
    z[torch.isnan(z)] = 0.

    return z.to(torch.long)


def extract_enclosing_subgraphs(edge_index, edge_label_index, num_hops, num_nodes):
    data_list = []
    for src, dst in edge_label_index.t().tolist():
        sub_nodes, sub_edge_index, mapping, _ = k_hop_subgraph(
            [src, dst], num_hops, edge_index, relabel_nodes=True, num_nodes=num_nodes)
        src, dst = mapping.tolist()

        # Remove target link from the subgraph.
        mask1 = (sub_edge_index[0] != src) | (sub_edge_index[1] != dst)
        mask2 = (sub_edge_index[0] != dst) | (sub_edge_index[1] != src)
        sub_edge_index = sub_edge_index[:, mask1 & mask2]

        # Calculate node labeling.
        z = drnl_node_labeling(sub_edge_index, src, dst, num_nodes=sub_nodes.size(0))
        data_list.append((sub_nodes, sub_edge_index, z))
    return data_list
# --- end of PyG's example


def load_cora(shared: Path, root: Path):
    """Cora through PyG's Planetoid from a copy of the offline files; None where absent."""
    from torch_geometric.datasets import Planetoid

    src = shared / "planetoid" / "Cora"
    if not (src / "raw").is_dir():
        print(f"[skip] Cora: {src / 'raw'} not found (the offline Planetoid copy)",
              file=sys.stderr)
        return None
    dest = root / "Cora"
    if not dest.exists():
        shutil.copytree(src, dest)
    return Planetoid(str(root), "Cora")[0]


def seal_pairs(data, seed: int):
    """The SEAL example's split: the training graph and its positives, negatives ``[2, P]``."""
    from torch_geometric.transforms import RandomLinkSplit

    torch.manual_seed(seed)
    split = RandomLinkSplit(num_val=0.05, num_test=0.1, is_undirected=True, split_labels=True)
    train, _, _ = split(data)
    return train.edge_index, train.pos_edge_label_index, train.neg_edge_label_index


def check_equal(ours, theirs) -> None:
    """Pair by pair: the same node set, edge count and label per node (an AssertionError
    naming the first pair that differs)."""
    for i, (nodes, edges, z) in enumerate(theirs):
        our_nodes, our_edges, our_z = ours.subgraph(i)
        want = dict(zip(nodes.tolist(), z.tolist(), strict=True))
        got = dict(zip(our_nodes.tolist(), our_z.tolist(), strict=True))
        assert got == want and our_edges.size(1) == edges.size(1), f"pair {i} differs"


def time_rounds(rounds: int, calls: dict) -> dict[str, list[float]]:
    """Seconds of each call per round, the calls alternating within each round."""
    times = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            times[name].append(time.perf_counter() - start)
    return times


def measure(edge_index, num_nodes: int, pairs, hops: int, rounds: int) -> dict:
    """One row: both sides checked equal, then timed over ``rounds`` alternating rounds."""
    ours = enclosing_subgraphs(edge_index, num_nodes, pairs, hops)  # (compiles on first use)
    check_equal(ours, extract_enclosing_subgraphs(edge_index, pairs, hops, num_nodes))
    times = time_rounds(rounds, {
        "graphpe": lambda: enclosing_subgraphs(edge_index, num_nodes, pairs, hops),
        "pyg": lambda: extract_enclosing_subgraphs(edge_index, pairs, hops, num_nodes),
    })
    row = {"dataset": "Cora", "pairs": pairs.size(1), "hops": hops, "labels": "drnl",
           "rounds": rounds, "threads": torch.get_num_threads(),
           "subgraph_nodes": int(ours.ptr[-1]), "subgraph_edges": ours.edge_index.size(1),
           "labels_equal": True}
    for name, values in times.items():
        row[f"{name}_s"] = statistics.median(values)
        row[f"{name}_min_s"], row[f"{name}_max_s"] = min(values), max(values)
    row["speedup"] = row["pyg_s"] / row["graphpe_s"]
    row["met"] = row["speedup"] >= TARGET_SPEEDUP
    return row


def print_rows(rows: list[dict]) -> None:
    print(f"\n{'pairs':>6} {'hops':>4} {'graphpe s (min-max)':>26} {'PyG SEAL s (min-max)':>26}"
          f" {'ratio':>7}")
    for r in rows:
        ours = f"{r['graphpe_s']:.4f} ({r['graphpe_min_s']:.4f}-{r['graphpe_max_s']:.4f})"
        theirs = f"{r['pyg_s']:.3f} ({r['pyg_min_s']:.3f}-{r['pyg_max_s']:.3f})"
        print(f"{r['pairs']:>6} {r['hops']:>4} {ours:>26} {theirs:>26} {r['speedup']:>6.1f}x")


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="2000",
                        help="pair counts, comma separated; 'all': every training positive "
                             "and negative (half positives, half negatives each)")
    parser.add_argument("--hops", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--shared", type=Path, default=DEFAULT_SHARED)
    parser.add_argument("--json", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as root:
        data = load_cora(args.shared, Path(root))
        if data is None:
            return []
        edge_index, positives, negatives = seal_pairs(data, args.seed)
        rows = []
        for size in args.sizes.split(","):
            half = positives.size(1) if size == "all" else int(size) // 2
            pairs = torch.cat([positives[:, :half], negatives[:, :half]], 1)
            rows.append(measure(edge_index, data.num_nodes, pairs, args.hops, args.rounds))
            print_rows(rows[-1:])
    setup = {"graph": f"Cora training graph ({data.num_nodes} nodes, {edge_index.size(1)} "
                      "directed edges)", "split": "RandomLinkSplit(0.05, 0.1), seed "
                      f"{args.seed}", "target_speedup": TARGET_SPEEDUP,
             "cpu_count": os.cpu_count()}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"setup": setup, "rows": rows}, indent=2) + "\n")
    print(f"\nwrote {args.json}")
    return rows


if __name__ == "__main__":
    main()
