"""Which encodings tell apart directed graphs that differ only in the direction of their edges.

    python benchmarks/directed_pairs.py [--random-pairs 100] [--seed 0]

Every pair below has one underlying undirected graph (the two graphs join the same node pairs)
and is not isomorphic as directed graphs (``nx.is_isomorphic`` on ``nx.DiGraph``). So LapPE
of the symmetrized graph, cycle counts and every other undirected encoding see the two graphs
as one graph: refined over the undirected edges they separate no pair, by construction (the
columns are computed all the same, as checks); refined over the directed edges they separate
what that refinement does from their colours.

An encoding *separates* a pair when colour refinement seeded by it gives different colour
histograms on the two graphs (the refinement, tolerance and quantization of
``benchmarks/expressivity_pairs.py``, whose functions this reuses), in two settings:

- ``undirected``: refinement over the underlying undirected edges, ``c_i <- (c_i, {{c_j : j ~
  i}})``: the encoding is the only carrier of direction (an undirected GNN with the PE);
- ``directed``: refinement over the directed edges both ways, ``c_i <- (c_i, {{(c_j, out) :
  i -> j}} + {{(c_j, in) : j -> i}})``: in- and out-neighbour multisets, as a GNN that reads
  the direction. The column ``none`` (constant initial colours) is this refinement alone.

How each encoding enters:

- node encodings seed the colours: ``drwse`` (DirectedRWSE, T = 16), ``cycles``
  (CycleCounts 3..8);
- eigen encodings are used through what does not depend on their arbitrary bases (signs,
  phases, bases of repeated eigenvalues), as their stable encoders read them: the whole
  spectrum (k = n, so no eigenspace is cut) is every node's initial colour, and the pair
  ``(i, j)`` of every two nodes is labelled by the entries ``(i, j)`` of each eigenspace's
  projector, refined over all pairs (the generalized-distance WL of
  ``expressivity_pairs.py``; in the two settings the pair label also carries the edge between
  ``i`` and ``j``, undirected or both directions). ``LapPE``: the projectors of ``L_sym`` of
  the symmetrized graph; ``MagLap``: real and imaginary parts of the projectors of the
  magnetic Laplacian ``L_q`` (MagneticLaplacianPE) for q = 0.25, and for the five potentials
  q = 0.05, 0.1, ..., 0.25 at once (multi-q: the single q is one of them); ``SVD``: for each
  singular value, ``U U^T``, ``V V^T`` and ``U V^T`` (both ways) of its singular vectors
  (SVDPE), which a joint rotation of the pairs leaves alone.

Pair families (generated, seeded):
- a directed cycle ``C_n`` against the same cycle with one edge reversed (n = 3..12);
- random orientations: two coin-flip orientations of one connected G(n, p), n = 6..10;
- Eulerian orientations of circulants: ``i -> i + a, i -> i + b`` against ``i -> i + a,
  i -> i - b`` over ``C_n(a, b)`` (n = 7..16, one jump set per multiplier class): every node
  has in-degree = out-degree = 2 in both and both are vertex-transitive, so the directed
  refinement alone (``none``) separates nothing;
- Eulerian orientations of random 4-regular graphs (n = 8..16): two orientations along two
  Euler circuits, in = out = 2 at every node: again nothing for ``none``.

A control compares every graph with a random relabelling of itself: an encoding that
"separates" those is numerically unsound, and the run says so.
"""

from __future__ import annotations

import argparse
import itertools
import math
import random
import sys
import time
from pathlib import Path

import networkx as nx
import numpy as np
import torch
from torch_geometric.data import Data

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import write_json_atomic  # noqa: E402
from expressivity_pairs import TOLERANCE, permuted, quantize, refine  # noqa: E402

from graphpe.encodings.cycles import CycleCounts  # noqa: E402
from graphpe.encodings.directed_walk import DirectedRWSE  # noqa: E402
from graphpe.ops.eigen import laplacian_eigenpairs  # noqa: E402
from graphpe.ops.eigen.magnetic import magnetic_eigenpairs  # noqa: E402
from graphpe.ops.eigen.svd import svd_encoding  # noqa: E402

MODES = ("undirected", "directed")
MULTI_Q = (0.05, 0.1, 0.15, 0.2, 0.25)
GROUP_TOL = 1e-6  # eigenvalues closer than this are one eigenspace (float64 solves)
SVD_GROUP_TOL = 1e-4  # singular values from SVDPE's float32 output, relative to the largest


# ------------------------------------------------------------------------------ encodings


def _groups(values: np.ndarray, tol: float) -> list[np.ndarray]:
    """Indices of ascending ``values`` split where neighbours differ by more than ``tol``."""
    order = np.argsort(values, kind="stable")
    cuts = np.flatnonzero(np.diff(values[order]) > tol) + 1
    return np.split(order, cuts)


def projector_features(vals: np.ndarray, vecs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(spectrum, pair labels [n, n, f])`` of one Hermitian eigen-decomposition
    (``vals [k]``, ``vecs [n, k]``): per eigenspace in ascending order, the real and imaginary
    parts of its projector."""
    feats = []
    for idx in _groups(vals, GROUP_TOL):
        p = vecs[:, idx] @ vecs[:, idx].conj().T
        feats += [p.real, p.imag]
    return vals, np.stack(feats, -1)


def lap_view(data: Data) -> tuple[np.ndarray, np.ndarray]:
    ei = data.edge_index
    n = data.num_nodes
    both = torch.cat([ei, ei.flip(0)], 1)  # LapPE reads the symmetrized graph
    pairs = laplacian_eigenpairs(both, n, n, keep_trivial=True, dtype=torch.float64)
    return projector_features(pairs.eigvals[0].numpy(), pairs.eigvecs.numpy())


def maglap_view(qs: tuple[float, ...]):
    def view(data: Data) -> tuple[np.ndarray, np.ndarray]:
        n = data.num_nodes
        pairs = magnetic_eigenpairs(data.edge_index, n, n, qs)
        spectra, labels = [], []
        for slot in range(len(qs)):
            vals, feats = projector_features(pairs.eigvals[0, slot].numpy(),
                                             pairs.eigvecs[:, slot].numpy())
            spectra.append(vals)
            labels.append(feats)
        return np.concatenate(spectra), np.concatenate(labels, -1)
    return view


def svd_view(data: Data) -> tuple[np.ndarray, np.ndarray]:
    n = data.num_nodes
    pe = svd_encoding(data.edge_index, n, n).double().numpy()  # [U sqrt(S), V sqrt(S)]
    x, y = pe[:, :n], pe[:, n:]
    sigma = (x ** 2).sum(0)  # u has unit norm: the column's squared norm is its singular value
    kept = np.flatnonzero(sigma > 0)  # SVDPE writes 0 past the rank
    feats = []
    for idx in _groups(sigma[kept], SVD_GROUP_TOL * max(float(sigma.max()), 1e-12)):
        cols = kept[idx]
        xy = x[:, cols] @ y[:, cols].T
        feats += [x[:, cols] @ x[:, cols].T, y[:, cols] @ y[:, cols].T, xy, xy.T]
    labels = np.stack(feats, -1) if feats else np.zeros((n, n, 0))
    return np.sort(sigma), labels


def drwse_view(data: Data) -> np.ndarray:
    return DirectedRWSE(16)(data.clone()).drwse.double().numpy()


def cycles_view(data: Data) -> np.ndarray:
    return CycleCounts(8)(data.clone()).cycle_counts.double().numpy()


def none_view(data: Data) -> np.ndarray:
    return np.zeros((data.num_nodes, 0))


# column -> ("node", features) or ("pair", (spectrum, pair labels))
ENCODINGS = {
    "none": ("node", none_view),
    "LapPE": ("pair", lap_view),
    "cycles": ("node", cycles_view),
    "SVD": ("pair", svd_view),
    "drwse": ("node", drwse_view),
    "MagLap q=0.25": ("pair", maglap_view((0.25,))),
    "MagLap multi-q": ("pair", maglap_view(MULTI_Q)),
}


# ------------------------------------------------------------------------------ views


def _edges(data: Data) -> set[tuple[int, int]]:
    return {(u, v) for u, v in data.edge_index.t().tolist() if u != v}


def node_view(data: Data, feats: np.ndarray, mode: str) -> dict:
    """Colours from ``feats``, refined over the edges (``mode``: undirected or directed)."""
    n = data.num_nodes
    edges = _edges(data)
    nbrs = [[] for _ in range(n)]
    if mode == "undirected":
        for u, v in {(min(e), max(e)) for e in edges}:
            nbrs[u].append((v, ()))
            nbrs[v].append((u, ()))
    else:
        for u, v in edges:
            nbrs[u].append((v, (1.0,)))  # out-neighbour
            nbrs[v].append((u, (-1.0,)))  # in-neighbour
    return {"n": n, "init": [tuple(row.tolist()) for row in feats], "nbrs": nbrs}


def pair_view(data: Data, spectrum: np.ndarray, labels: np.ndarray, mode: str) -> dict:
    """The spectrum as every node's colour, refined over all pairs labelled by ``labels``
    and the edge between the two nodes (``mode``)."""
    n = data.num_nodes
    adj = np.zeros((n, n))
    for u, v in _edges(data):
        adj[u, v] = 1.0
    flags = (np.maximum(adj, adj.T)[..., None] if mode == "undirected"
             else np.stack([adj, adj.T], -1))
    full = np.concatenate([labels, flags], -1)
    init = tuple(spectrum.tolist())
    nbrs = [[(j, tuple(full[i, j].tolist())) for j in range(n)] for i in range(n)]
    return {"n": n, "init": [init] * n, "nbrs": nbrs}


def separates(pair: tuple[Data, Data], name: str, mode: str) -> bool:
    kind, fn = ENCODINGS[name]
    if kind == "node":
        views = [node_view(g, fn(g), mode) for g in pair]
    else:
        views = [pair_view(g, *fn(g), mode) for g in pair]
    quantize(views)
    return refine(views)


# ------------------------------------------------------------------------------ pair families


def to_data(g: nx.DiGraph) -> Data:
    ei = torch.tensor(list(g.edges()), dtype=torch.long).reshape(-1, 2).t().contiguous()
    return Data(edge_index=ei, num_nodes=g.number_of_nodes())


def _underlying(g: nx.DiGraph) -> set[frozenset]:
    return {frozenset(e) for e in g.edges()}


def _keep(a: nx.DiGraph, b: nx.DiGraph) -> bool:
    """Same node pairs joined, not isomorphic as directed graphs."""
    return _underlying(a) == _underlying(b) and not nx.is_isomorphic(a, b)


def cycle_pairs() -> list[tuple[nx.DiGraph, nx.DiGraph]]:
    out = []
    for n in range(3, 13):
        a = nx.DiGraph([(i, (i + 1) % n) for i in range(n)])
        b = nx.DiGraph([(i, (i + 1) % n) for i in range(1, n)] + [(1, 0)])
        out.append((a, b))
    return out


def random_orientation_pairs(count: int, rng: random.Random) -> list:
    out, tries = [], 0
    while len(out) < count and tries < 50 * count:
        tries += 1
        n = rng.randint(6, 10)
        g = nx.gnp_random_graph(n, rng.uniform(0.3, 0.5), seed=rng.randrange(2**31))
        if not nx.is_connected(g):
            continue
        a, b = (nx.DiGraph([(u, v) if rng.random() < 0.5 else (v, u) for u, v in g.edges()])
                for _ in range(2))
        a.add_nodes_from(range(n))
        b.add_nodes_from(range(n))
        if _keep(a, b):
            out.append((a, b))
    return out


def circulant_pairs(max_nodes: int = 16) -> list:
    """``Cay(Z_n, {a, b})`` against ``Cay(Z_n, {a, -b})``: the least jump set of each class
    under the multipliers of ``Z_n`` (which map a pair to an isomorphic pair)."""
    out = []
    for n in range(7, max_nodes + 1):
        units = [u for u in range(1, n) if math.gcd(u, n) == 1]
        for a, b in itertools.combinations(range(1, (n - 1) // 2 + 1), 2):
            if math.gcd(n, a, b) != 1:
                continue  # disconnected
            if any(tuple(sorted(min(u * x % n, n - u * x % n) for x in (a, b))) < (a, b)
                   for u in units):
                continue
            one = nx.DiGraph([(i, (i + a) % n) for i in range(n)] +
                             [(i, (i + b) % n) for i in range(n)])
            two = nx.DiGraph([(i, (i + a) % n) for i in range(n)] +
                             [(i, (i - b) % n) for i in range(n)])
            if _keep(one, two):
                out.append((one, two))
    return out


def eulerian_pairs(count: int, rng: random.Random) -> list:
    """Two orientations of a random connected 4-regular graph along two Euler circuits (the
    edges listed in two random orders, two random start nodes)."""
    out, tries = [], 0
    while len(out) < count and tries < 50 * count:
        tries += 1
        n = rng.randint(8, 16)
        g = nx.random_regular_graph(4, n, seed=rng.randrange(2**31))
        if not nx.is_connected(g):
            continue
        orientations = []
        for _ in range(2):
            edges = list(g.edges())
            rng.shuffle(edges)
            h = nx.MultiGraph(edges)
            orientations.append(nx.DiGraph(list(nx.eulerian_circuit(h, rng.randrange(n)))))
        if _keep(*orientations):
            out.append(tuple(orientations))
    return out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--random-pairs", type=int, default=100,
                    help="pairs of each random family (random orientations, Eulerian)")
    ap.add_argument("--circulant-nodes", type=int, default=16)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, default=Path("benchmarks/results/directed_pairs.json"))
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    rng = random.Random(args.seed)
    families = {
        "directed cycle vs one edge reversed (n = 3..12)": cycle_pairs(),
        "random orientations of G(n, p) (n = 6..10)": random_orientation_pairs(
            args.random_pairs, rng),
        f"Eulerian circulants {{a, b}} vs {{a, -b}} (n = 7..{args.circulant_nodes})":
            circulant_pairs(args.circulant_nodes),
        "Eulerian orientations of 4-regular graphs (n = 8..16)": eulerian_pairs(
            args.random_pairs, rng),
    }
    labels = list(ENCODINGS)
    rows = []
    start = time.perf_counter()
    for family, pairs in families.items():
        data = [(to_data(a), to_data(b)) for a, b in pairs]
        for mode in MODES:
            row = {"family": family, "refinement": mode, "pairs": len(data)}
            for name in labels:
                row[name] = sum(separates(p, name, mode) for p in data)
            rows.append(row)
            print(f"{family:<58} {mode:<10} {len(data):>4} pairs  " +
                  "  ".join(f"{lab} {row[lab]}" for lab in labels), flush=True)
    # control: a graph against a relabelled copy of itself is never separated
    control = [(to_data(a), None) for pairs in families.values() for a, _ in pairs[:20]]
    control = [(g, permuted(g, rng)) for g, _ in control]
    false = {f"{name} ({mode})": sum(separates(p, name, mode) for p in control)
             for mode in MODES for name in labels}
    total = {mode: {name: sum(r[name] for r in rows if r["refinement"] == mode)
                    for name in labels} for mode in MODES}
    total_pairs = sum(len(p) for p in families.values())
    for mode in MODES:
        print(f"{'total':<58} {mode:<10} {total_pairs:>4} pairs  " +
              "  ".join(f"{lab} {total[mode][lab]}" for lab in labels))
    print(f"control (graph vs relabelled copy, {len(control)} pairs, both settings): "
          f"{sum(false.values())} false separations  [{time.perf_counter() - start:.0f} s]")
    result = {"rows": rows, "total": total, "pairs": total_pairs, "labels": labels,
              "modes": list(MODES), "control_pairs": len(control),
              "control_false_separations": false, "tolerance": TOLERANCE,
              "multi_q": list(MULTI_Q), "seed": args.seed,
              "random_pairs": args.random_pairs, "circulant_nodes": args.circulant_nodes}
    write_json_atomic(args.json, result)
    print(f"wrote {args.json}")
    return result


if __name__ == "__main__":
    main()
