import networkx as nx
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from graphpe.ops.curvature import (
    curvature_bounds,
    forman_curvature,
    node_profile,
    ollivier_ricci,
)
from tests.conftest import nx_to_data


def reference_orc(g: nx.Graph, alpha: float) -> dict:
    from GraphRicciCurvature.OllivierRicci import OllivierRicci

    orc = OllivierRicci(g.copy(), alpha=alpha, method="OTD", verbose="ERROR", proc=1)
    out = orc.compute_ricci_curvature_edges()
    return {frozenset(e): v for e, v in out.items()}


def curvature_families(count: int, seed: int = 0) -> list[nx.Graph]:
    """Varied families: trees, cycles, grids, complete, random regular, Erdos-Renyi, plus
    wheels, barbells and ladders (dense triangles, bridges)."""
    rng = np.random.default_rng(seed)
    makers = [
        lambda s: nx.random_labeled_tree(int(rng.integers(5, 25)), seed=s),
        lambda s: nx.cycle_graph(int(rng.integers(3, 20))),
        lambda s: nx.grid_2d_graph(int(rng.integers(2, 5)), int(rng.integers(2, 6))),
        lambda s: nx.complete_graph(int(rng.integers(2, 9))),
        lambda s: nx.random_regular_graph(3, 2 * int(rng.integers(3, 10)), seed=s),
        lambda s: nx.gnp_random_graph(int(rng.integers(6, 25)), float(rng.uniform(0.1, 0.5)),
                                      seed=s),
        lambda s: nx.wheel_graph(int(rng.integers(4, 12))),
        lambda s: nx.barbell_graph(int(rng.integers(3, 6)), int(rng.integers(0, 3))),
        lambda s: nx.ladder_graph(int(rng.integers(2, 8))),
    ]
    graphs = []
    for i in range(count):
        g = makers[i % len(makers)](int(rng.integers(1 << 30)))
        g = nx.convert_node_labels_to_integers(g)
        if g.number_of_edges() > 0:
            graphs.append(g)
    return graphs


def edge_index_of(g: nx.Graph) -> torch.Tensor:
    return nx_to_data(g).edge_index


# alpha 0.5 (~30 s alone) runs under `make test-slow`; alpha 0 covers the solver by default
@pytest.mark.parametrize("alpha", [0.0, pytest.param(0.5, marks=pytest.mark.slow)])
def test_exact_orc_matches_graph_ricci_curvature(alpha):
    graphs = curvature_families(220, seed=int(alpha * 10))
    assert len(graphs) >= 200
    worst = 0.0
    for g in graphs:
        ei = edge_index_of(g)
        ours = ollivier_ricci(ei, g.number_of_nodes(), alpha, dtype=torch.float64)
        ref = reference_orc(g, alpha)
        expected = torch.tensor([ref[frozenset((u, v))] for u, v in ei.T.tolist()],
                                dtype=torch.float64)
        worst = max(worst, float((ours - expected).abs().max()))
        lower, upper = curvature_bounds(ei, g.number_of_nodes(), alpha, dtype=torch.float64)
        assert torch.all(lower <= ours + 1e-9) and torch.all(ours <= upper + 1e-9)
    assert worst <= 1e-6


def test_exact_orc_on_zinc_molecules(zinc_root):
    from torch_geometric.datasets import ZINC
    from torch_geometric.utils import to_networkx

    ds = ZINC(str(zinc_root), subset=True, split="test")
    for i in range(0, 1000, 20):
        data = ds[i]
        g = to_networkx(data, to_undirected=True)
        for alpha in (0.0, 0.5):
            ours = ollivier_ricci(data.edge_index, data.num_nodes, alpha, dtype=torch.float64)
            ref = reference_orc(g, alpha)
            expected = torch.tensor(
                [ref[frozenset((u, v))] for u, v in data.edge_index.T.tolist()],
                dtype=torch.float64,
            )
            assert torch.allclose(ours, expected, atol=1e-6)


def test_known_values():
    # complete graph K_n, alpha = 0: kappa = (n - 2) / (n - 1); trees: negative; C_n (n >= 6): 0
    ei = edge_index_of(nx.complete_graph(5))
    assert torch.allclose(ollivier_ricci(ei, 5), torch.full((ei.size(1),), 3 / 4))
    ei = edge_index_of(nx.cycle_graph(8))
    assert torch.allclose(ollivier_ricci(ei, 8), torch.zeros(ei.size(1)), atol=1e-7)


def test_values_align_with_input_edges():
    # a directed edge, its duplicate, the reverse, and a self loop
    ei = torch.tensor([[0, 0, 1, 1, 2, 3], [1, 1, 0, 1, 3, 0]])
    k = ollivier_ricci(ei, 4)
    assert k[0] == k[1] == k[2]
    assert k[3] == 0.0  # self loop
    simple = edge_index_of(nx.Graph([(0, 1), (2, 3), (3, 0)]))
    ks = ollivier_ricci(simple, 4)
    lookup = {tuple(e): float(v) for e, v in zip(simple.T.tolist(), ks, strict=True)}
    assert float(k[0]) == pytest.approx(lookup[(0, 1)])
    assert float(k[4]) == pytest.approx(lookup[(2, 3)])


def test_forman_and_augmented_forman():
    g = nx.gnp_random_graph(15, 0.4, seed=4)
    ei = edge_index_of(g)
    deg = dict(g.degree())
    f = forman_curvature(ei, 15)
    af = forman_curvature(ei, 15, augmented=True)
    for idx, (u, v) in enumerate(ei.T.tolist()):
        t = len(set(g[u]) & set(g[v]))
        assert f[idx] == 4 - deg[u] - deg[v]
        assert af[idx] == 4 - deg[u] - deg[v] + 3 * t


def test_node_profile_matches_numpy():
    g = nx.gnp_random_graph(20, 0.25, seed=5)
    g.add_node(20)  # isolated
    ei = edge_index_of(g)
    values = torch.randn(ei.size(1), dtype=torch.float64)
    # make the value symmetric per undirected edge, as curvature is
    lookup = {}
    for idx, (u, v) in enumerate(ei.T.tolist()):
        lookup.setdefault(frozenset((u, v)), float(values[idx]))
    values = torch.tensor([lookup[frozenset(e)] for e in ei.T.tolist()], dtype=torch.float64)
    prof = node_profile(ei, 21, values)
    for v in range(21):
        vals = np.array([lookup[frozenset((v, u))] for u in g[v]])
        if len(vals) == 0:
            assert torch.all(prof[v] == 0)
            continue
        ref = [vals.min(), vals.max(), vals.mean(), vals.std(ddof=0), np.median(vals)]
        assert np.allclose(prof[v].numpy(), ref)
    sub = node_profile(ei, 21, values, stats=("median", "min"))
    assert torch.equal(sub, prof[:, [4, 0]])


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(4, 25))
def test_lcp_is_permutation_equivariant(seed, n):
    g = nx.gnp_random_graph(n, 0.3, seed=seed)
    ei = edge_index_of(g)
    perm = torch.from_numpy(np.random.default_rng(seed).permutation(n))
    for curv in ("orc", "bounds", "afrc"):
        def profile(edges, curv=curv):
            if curv == "orc":
                vals = ollivier_ricci(edges, n, dtype=torch.float64)
            elif curv == "bounds":
                vals = sum(curvature_bounds(edges, n, dtype=torch.float64))
            else:
                vals = forman_curvature(edges, n, augmented=True, dtype=torch.float64)
            return node_profile(edges, n, vals)

        base, permuted = profile(ei), profile(perm[ei])
        assert torch.allclose(permuted[perm], base, atol=1e-12)


def test_bad_input():
    ei = torch.tensor([[0, 1], [1, 0]])
    with pytest.raises(ValueError, match="alpha must be in"):
        ollivier_ricci(ei, 2, alpha=1.0)
    with pytest.raises(ValueError, match="alpha must be in"):
        curvature_bounds(ei, 2, alpha=-0.1)
    with pytest.raises(ValueError, match="out of range"):
        ollivier_ricci(torch.tensor([[0], [5]]), 2)
    with pytest.raises(ValueError, match="unknown statistic"):
        node_profile(ei, 2, torch.zeros(2), stats=("mode",))
    with pytest.raises(ValueError, match="edge_values must have shape"):
        node_profile(ei, 2, torch.zeros(3))


def test_empty_graphs():
    empty = torch.zeros(2, 0, dtype=torch.long)
    assert ollivier_ricci(empty, 0).shape == (0,)
    assert ollivier_ricci(empty, 3).shape == (0,)
    lo, up = curvature_bounds(empty, 3)
    assert lo.shape == up.shape == (0,)
    assert torch.equal(node_profile(empty, 3, torch.zeros(0)), torch.zeros(3, 5))
