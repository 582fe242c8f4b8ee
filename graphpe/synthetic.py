"""Synthetic graphs generated in code, so that demos, examples and benchmarks run without any
download: molecule-like graphs (trees of max degree 4 with a few ring closures)."""

from __future__ import annotations

import numpy as np
import torch
from torch_geometric.data import Data


def peptide_like_graphs(num_graphs: int, seed: int = 0) -> list[Data]:
    """Molecule-like graphs of peptide size (long-range graph benchmark scale): 100 to 400
    nodes, mean about 150 (:func:`molecule_like_graphs` with an exponential size tail)."""
    return molecule_like_graphs(num_graphs, min_nodes=100, max_nodes=400, mean_nodes=150,
                                seed=seed)


def molecule_like_graphs(
    num_graphs: int,
    min_nodes: int = 9,
    max_nodes: int = 38,
    ring_prob: float = 0.12,
    seed: int = 0,
    mean_nodes: float | None = None,
) -> list[Data]:
    """Random graphs shaped like ZINC molecules: a random tree whose nodes have degree at most 4
    (valence), plus ring closures between nodes 4-6 hops apart with probability ``ring_prob``
    per node. Sizes are uniform in ``[min_nodes, max_nodes]``, or with ``mean_nodes``
    ``min_nodes`` plus an exponential tail of that mean, cut at ``max_nodes`` (the shape of
    peptide sets: most graphs near the smallest size, a few far larger)."""
    rng = np.random.default_rng(seed)
    graphs = []
    for _ in range(num_graphs):
        if mean_nodes is None:
            n = int(rng.integers(min_nodes, max_nodes + 1))
        else:
            tail = rng.exponential(max(mean_nodes - min_nodes, 1e-9))
            n = int(min(max_nodes, min_nodes + round(tail)))
        deg = np.zeros(n, dtype=np.int64)
        parent = np.full(n, -1)
        edges = []
        for v in range(1, n):
            candidates = np.nonzero(deg[:v] < 4)[0]
            u = int(rng.choice(candidates))
            edges.append((u, v))
            deg[u] += 1
            deg[v] += 1
            parent[v] = u
        for v in range(n):
            if rng.random() < ring_prob and deg[v] < 3:
                # walk up 4-5 ancestors to close a 5- or 6-ring
                u, hops = v, int(rng.integers(4, 6))
                for _ in range(hops):
                    u = parent[u] if parent[u] >= 0 else u
                if u != v and deg[u] < 3 and (u, v) not in edges and (v, u) not in edges:
                    edges.append((u, v))
                    deg[u] += 1
                    deg[v] += 1
        e = torch.tensor(edges, dtype=torch.long).T
        graphs.append(
            Data(x=torch.zeros(n, 1, dtype=torch.long), edge_index=torch.cat([e, e.flip(0)], 1),
                 num_nodes=n)
        )
    return graphs


CSL_SKIPS = (2, 3, 4, 5, 6, 9, 11, 12, 13, 16)


def csl_graphs(num_nodes: int = 41, per_class: int = 15, seed: int = 0) -> list[Data]:
    """Circular Skip Link graphs (Murphy et al., 2019), generated in code: a cycle of
    ``num_nodes`` nodes plus chords ``i ~ i + s (mod n)`` for a skip ``s`` in
    ``(2, 3, 4, 5, 6, 9, 11, 12, 13, 16)``; the class is the skip. All graphs are 4-regular, so
    1-WL (and a plain MPNN) cannot tell the classes apart. Each graph's nodes are randomly
    relabelled. ``x`` is a constant categorical feature, ``y`` the class index."""
    rng = np.random.default_rng(seed)
    graphs = []
    for label, skip in enumerate(CSL_SKIPS):
        base = np.arange(num_nodes)
        rows = np.concatenate([base, base])
        cols = np.concatenate([(base + 1) % num_nodes, (base + skip) % num_nodes])
        for _ in range(per_class):
            perm = rng.permutation(num_nodes)
            r, c = perm[rows], perm[cols]
            ei = torch.from_numpy(np.stack([np.concatenate([r, c]), np.concatenate([c, r])]))
            graphs.append(Data(x=torch.zeros(num_nodes, 1, dtype=torch.long), edge_index=ei,
                               y=torch.tensor([label]), num_nodes=num_nodes))
    return graphs
