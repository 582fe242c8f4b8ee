"""Synthetic graphs generated in code, so that demos, examples and benchmarks run without any
download: molecule-like graphs (trees of max degree 4 with a few ring closures), and stand-ins
for large real graphs of three kinds (road networks, power-law social graphs, co-authorship
graphs)."""

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


# ----------------------------------------------------------------------------- large graphs
# Stand-ins for the kinds of real large graph whose spectra and walk balls differ most (road
# networks, power-law social graphs, co-authorship graphs of many dense components): the tests
# of the large-graph solvers run on these, the benchmark on real graphs where it finds them.


def _undirected(edges: np.ndarray, num_nodes: int) -> Data:
    """``Data`` of an undirected simple graph from ``[m, 2]`` node pairs: self loops and
    repeated pairs dropped, both directions stored, rows sorted."""
    edges = np.sort(edges.astype(np.int64), axis=1)
    edges = edges[edges[:, 0] != edges[:, 1]]
    edges = np.unique(edges, axis=0)
    both = np.concatenate([edges, edges[:, ::-1]])
    both = both[np.lexsort((both[:, 1], both[:, 0]))]
    return Data(edge_index=torch.from_numpy(np.ascontiguousarray(both.T)), num_nodes=num_nodes)


def road_like_graph(num_junctions: int = 20_000, extra_edge_frac: float = 0.1,
                    mean_chain: float = 4.0, seed: int = 0) -> Data:
    """A road-network-like graph: junctions at uniform random points of the unit square joined
    by the Euclidean minimum spanning tree of their Delaunay triangulation plus a random
    ``extra_edge_frac`` of its other edges (the loops of a street grid), each road subdivided
    into a chain of degree-2 nodes (geometric length, mean ``mean_chain``). Mean degree near 2,
    diameter in the hundreds and spectral gaps near 0 of order 1e-6, as in real road
    networks. One connected component."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import minimum_spanning_tree
    from scipy.spatial import Delaunay

    rng = np.random.default_rng(seed)
    points = rng.random((num_junctions, 2))
    tri = Delaunay(points).simplices
    pairs = np.concatenate([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [0, 2]]])
    pairs = np.unique(np.sort(pairs, axis=1), axis=0)
    length = np.linalg.norm(points[pairs[:, 0]] - points[pairs[:, 1]], axis=1)
    graph = coo_matrix((length, (pairs[:, 0], pairs[:, 1])), shape=(num_junctions,) * 2)
    tree = minimum_spanning_tree(graph).tocoo()
    roads = np.stack([tree.row, tree.col], 1)
    in_tree = set(map(tuple, np.sort(roads, axis=1).tolist()))
    rest = np.array([p for p in pairs.tolist() if tuple(p) not in in_tree], dtype=np.int64)
    extra = rest[rng.random(len(rest)) < extra_edge_frac]
    roads = np.concatenate([roads, extra])
    inner = rng.geometric(1.0 / mean_chain, size=len(roads)) - 1  # degree-2 nodes per road
    first = num_junctions + np.concatenate([[0], np.cumsum(inner)[:-1]])
    edges = []
    for (u, v), count, start in zip(roads.tolist(), inner.tolist(), first.tolist(), strict=True):
        chain = [u, *range(start, start + count), v]
        edges.extend(zip(chain[:-1], chain[1:], strict=True))
    return _undirected(np.array(edges, dtype=np.int64), num_junctions + int(inner.sum()))


def social_like_graph(num_nodes: int = 20_000, mean_degree: float = 10.0,
                      exponent: float = 2.3, seed: int = 0, max_weight: float | None = None,
                      connected: bool = False) -> Data:
    """A power-law social graph (Chung-Lu): each node draws an expected degree from a Pareto
    law of tail ``exponent`` (capped at ``max_weight``, default ``sqrt(n * mean_degree)``),
    and ``n * mean_degree / 2`` edges join endpoints drawn in proportion to those weights.
    One giant component holding most nodes, hubs of degree in the hundreds to thousands,
    isolated leftovers; with ``connected`` every node spends one of its edges on an endpoint
    drawn by weight instead, so that no node is left alone and the graph is (almost surely)
    one component. ``social_like_graph(89_250, 10.1, max_weight=3_000, connected=True)``
    resembles GraphSAINT's Flickr graph: about 440k edges, one component, the largest degree
    about 5,200 (Flickr: 449,878 edges, one component, 5,425)."""
    rng = np.random.default_rng(seed)
    weight = rng.pareto(exponent - 1.0, num_nodes) + 1.0
    cap = np.sqrt(num_nodes * mean_degree) if max_weight is None else max_weight
    weight = np.minimum(weight, cap)
    p = weight / weight.sum()
    m = int(num_nodes * mean_degree / 2)
    if not connected:
        return _undirected(rng.choice(num_nodes, size=(m, 2), p=p), num_nodes)
    edges = rng.choice(num_nodes, size=(max(m - num_nodes, 0), 2), p=p)
    ties = np.stack([np.arange(num_nodes), rng.choice(num_nodes, size=num_nodes, p=p)], 1)
    return _undirected(np.concatenate([edges, ties]), num_nodes)


def coauthor_like_graph(num_nodes: int = 20_000, mean_team: float = 4.0,
                        papers_per_author: float = 6.0, seed: int = 0) -> Data:
    """A co-authorship-like graph: authors fall into groups of power-law sizes (2 to ~1,000),
    each paper is a clique over a team drawn from one group (team size 2 plus a geometric
    tail of mean ``mean_team``; a few prolific authors sit on many papers), and a few papers
    join two groups. Many connected components, dense cliques, eigenvalue 0 of high
    multiplicity and degrees up to the hundreds."""
    rng = np.random.default_rng(seed)
    sizes = []
    while sum(sizes) < num_nodes:
        sizes.append(int(min(2 + rng.pareto(1.2) * 3, 1_000)))
    sizes[-1] -= sum(sizes) - num_nodes
    sizes = [s for s in sizes if s > 0]
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    activity = rng.pareto(1.5, num_nodes) + 1.0  # prolific authors join many papers
    edges = []
    num_papers = int(num_nodes * papers_per_author / mean_team)
    groups = rng.choice(len(sizes), size=num_papers, p=np.array(sizes) / num_nodes)
    for g in groups.tolist():
        lo, size = int(starts[g]), sizes[g]
        team = min(size, 2 + int(rng.geometric(1.0 / max(mean_team - 1.0, 1.0))) - 1)
        if team < 2:
            continue
        w = activity[lo:lo + size]
        members = lo + rng.choice(size, size=team, replace=False, p=w / w.sum())
        if rng.random() < 0.02:  # a paper across two groups
            members[-1] = int(rng.integers(num_nodes))
        a, b = np.triu_indices(len(members), 1)
        edges.append(np.stack([members[a], members[b]], 1))
    return _undirected(np.concatenate(edges), num_nodes)
