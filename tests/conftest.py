"""Shared fixtures: small graphs generated in the tests themselves, and the offline datasets
(copied out of ../shared/data, never written there; skipped when absent)."""

from __future__ import annotations

import os
import shutil
import tarfile
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
import torch
from torch_geometric.data import Data

SHARED_DATA = Path(
    os.environ.get("GRAPHPE_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")
)


def nx_to_data(g: nx.Graph) -> Data:
    g = nx.convert_node_labels_to_integers(g)
    edges = np.array(list(g.edges()), dtype=np.int64).reshape(-1, 2).T
    ei = torch.from_numpy(np.concatenate([edges, edges[::-1]], axis=1)).long()
    return Data(edge_index=ei, num_nodes=g.number_of_nodes())


def graph_families(seed: int = 0) -> dict[str, nx.Graph]:
    """Graphs covering the eigen-solver's hard cases: repeated eigenvalues, disconnected
    graphs, isolated nodes, tiny graphs."""
    rng = np.random.default_rng(seed)
    fams = {
        "path7": nx.path_graph(7),
        "cycle8": nx.cycle_graph(8),
        "cycle9": nx.cycle_graph(9),
        "complete6": nx.complete_graph(6),
        "star7": nx.star_graph(6),
        "petersen": nx.petersen_graph(),
        "paley13": nx.paley_graph(13).to_undirected(),
        "grid3x4": nx.grid_2d_graph(3, 4),
        "hypercube3": nx.hypercube_graph(3),
        "two_triangles": nx.disjoint_union(nx.cycle_graph(3), nx.cycle_graph(3)),
        "with_isolated": nx.disjoint_union(nx.path_graph(5), nx.empty_graph(2)),
        "single_node": nx.empty_graph(1),
        "two_isolated": nx.empty_graph(2),
        "edge": nx.path_graph(2),
        "tree": nx.random_labeled_tree(15, seed=seed),
    }
    for i, (n, p) in enumerate([(10, 0.3), (23, 0.15), (31, 0.1), (40, 0.08)]):
        fams[f"er{n}"] = nx.gnp_random_graph(n, p, seed=int(rng.integers(1 << 30)) + i)
    fams["regular3_16"] = nx.random_regular_graph(3, 16, seed=seed)
    return fams


@pytest.fixture(scope="session")
def families() -> dict[str, Data]:
    return {name: nx_to_data(g) for name, g in graph_families().items()}


@pytest.fixture(scope="session")
def zinc_root(tmp_path_factory) -> Path:
    """ZINC-12k (subset) extracted into a temp dir from ../shared/data."""
    archive = SHARED_DATA / "zinc12k-subset-raw.tar.xz"
    if not archive.exists():
        pytest.skip(f"offline ZINC copy not found at {archive}")
    root = tmp_path_factory.mktemp("zinc")
    (root / "raw").mkdir()
    with tarfile.open(archive) as tar:
        tar.extractall(root / "raw", filter="data")
    return root


def bench_module(name: str):
    """benchmarks/<name>.py as a module (the scripts import their siblings by name)."""
    import importlib
    import sys

    bench = str(Path(__file__).resolve().parents[1] / "benchmarks")
    sys.path.insert(0, bench)
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(bench)


def copy_shared(rel: str, dest: Path) -> Path:
    src = SHARED_DATA / rel
    if not src.exists():
        pytest.skip(f"offline dataset not found at {src}")
    shutil.copytree(src, dest, dirs_exist_ok=True)
    return dest
