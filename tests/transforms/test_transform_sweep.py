"""Reliability sweep of every transform over awkward but valid graphs.

Graphs: 0 edges, 0/1/2 nodes, isolated nodes, self loops, duplicate edges, one-direction
edges, components of different sizes, a star, a 200-node path, K_8, weights and ``edge_attr``,
``num_nodes`` without ``x``; all of them in one ``Batch`` (a 0-node graph inside it).

For each transform (small settings, a pairwise-covering choice of its options):

- documented names, shapes, dtypes, finiteness (``inf`` only where RD documents it) and
  value ranges;
- the per-graph call, the call on the ``Batch``, ``precompute`` over the list and over an
  ``InMemoryDataset``, and ``OnTheFlyPE`` (train and eval) agree graph by graph (random
  transforms: a fresh seeded transform on one chunk, as their docs promise);
- permutation equivariance (pairs mapped through the permutation; LapPE: eigenvalues, and
  eigenvectors of simple eigenvalues whose canonical sign is defined);
- invariance to edge direction, duplicates and (where documented) self loops, and the
  documented identities between transforms (RRWP's diagonal is RWSE, HeatKernel's is
  HKdiagSE, local pairs are a subset of all pairs);
- ``ExecPlan(kernel="compiled")`` against ``ExecPlan(kernel="tensor")`` for every op that takes
  a plan;
- ``repr`` round trip and ``cache_key``: equal settings, equal keys; different, different;
- invalid settings and graphs raise ``ValueError``.

The tests at the end of the file pin the bugs this sweep found, fixed since.
"""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from scipy.sparse.csgraph import connected_components as scipy_components
from torch_geometric.data import Batch, Data, InMemoryDataset

from graphpe.ops import (
    laplacian_eigenpairs,
    local_curvature_profile,
    random_feature_propagation,
    random_walk_landing_probs,
)
from graphpe.ops.plan import ExecPlan
from graphpe.ops.walk import relative_random_walk_probs, shortest_paths
from graphpe.transforms import (
    LCP,
    RFP,
    RRWP,
    RWSE,
    SPD,
    ElstaticSE,
    HeatKernel,
    HKdiagSE,
    LaplacianPE,
    OnTheFlyPE,
    ResistanceDistance,
    precompute,
)
from graphpe.transforms.cache import cache_key

# ----------------------------------------------------------------------------- graphs


def undirected(pairs: list[tuple[int, int]]) -> torch.Tensor:
    ei = torch.tensor(pairs, dtype=torch.long).reshape(-1, 2).t()
    return torch.cat([ei, ei.flip(0)], 1)


def no_edges() -> torch.Tensor:
    return torch.zeros(2, 0, dtype=torch.long)


def awkward_graphs() -> dict[str, Data]:
    """Unweighted graphs with ``num_nodes`` set and no ``x``."""
    loops = torch.tensor([[0, 2], [0, 2]])
    edges = {
        "no_edges": (no_edges(), 5),
        "empty": (no_edges(), 0),
        "one_node": (no_edges(), 1),
        "two_nodes": (undirected([(0, 1)]), 2),
        "isolated": (undirected([(0, 1), (1, 2)]), 6),
        "self_loops": (torch.cat([undirected([(0, 1), (1, 2), (2, 3)]), loops], 1), 4),
        "multi_edges": (torch.cat([undirected([(0, 1), (1, 2), (2, 0), (2, 3)]),
                                   undirected([(0, 1), (2, 3)]), torch.tensor([[3], [2]])], 1),
                        4),
        "directed": (torch.tensor([[0, 1, 2, 3, 1], [1, 2, 3, 4, 4]]), 5),
        "components": (torch.cat([undirected([(0, 1), (1, 2), (2, 0)]), undirected([(3, 4)]),
                                  undirected([(5, 6), (6, 7), (7, 8), (8, 9), (9, 5)])], 1), 10),
        "star": (undirected([(0, i) for i in range(1, 13)]), 13),
        "path200": (undirected([(i, i + 1) for i in range(199)]), 200),
        "k8": (undirected([(i, j) for i in range(8) for j in range(i + 1, 8)]), 8),
        "house": (undirected([(0, 1), (1, 2), (2, 3), (3, 4), (4, 0), (0, 2)]), 5),
    }
    return {name: Data(edge_index=ei, num_nodes=n) for name, (ei, n) in edges.items()}


GRAPHS = awkward_graphs()
NAMES = list(GRAPHS)


def weighted(graphs: dict[str, Data]) -> dict[str, Data]:
    """The same graphs with positive weights and an ``edge_attr`` (which nothing reads)."""
    out = {}
    for i, (name, g) in enumerate(graphs.items()):
        gen = torch.Generator().manual_seed(i)
        e = g.edge_index.size(1)
        out[name] = Data(edge_index=g.edge_index, num_nodes=g.num_nodes,
                         edge_weight=torch.rand(e, generator=gen) * 2 + 0.1,
                         edge_attr=torch.randn(e, 3, generator=gen))
    return out


WEIGHTED = weighted(GRAPHS)
GRAPH_SETS = {"plain": GRAPHS, "weighted": WEIGHTED}

# ----------------------------------------------------------------------------- transforms

TRANSFORMS = {
    "lap": lambda: LaplacianPE(3),
    "lap_rw_trivial": lambda: LaplacianPE(4, normalization="rw", keep_trivial=True,
                                          pad_value=-1.0),
    "lap_none_random": lambda: LaplacianPE(3, normalization="none", sign="random", seed=7),
    "rwse": lambda: RWSE(5),
    "rwse_no_loops": lambda: RWSE(5, self_loops=False),
    "rfp": lambda: RFP(4, 2, num_draws=2, seed=3),
    "rfp_rw_l2": lambda: RFP(3, 2, operator="rw", normalization="l2", seed=1),
    "lcp": lambda: LCP(edge_attr_name="curv"),
    "lcp_bounds": lambda: LCP("orc_bounds", alpha=0.5, stats=("median", "min"),
                              edge_attr_name="curv"),
    "afrc": lambda: LCP("afrc"),
    "hkdiag": lambda: HKdiagSE([0.5, 2.0]),
    "hkdiag_sym": lambda: HKdiagSE(1.0, normalization="sym", keep_trivial=True),
    "elstatic": lambda: ElstaticSE(),
    "elstatic_cc": lambda: ElstaticSE("elc", per_component=True),
    "rrwp": lambda: RRWP(4),
    "rrwp_hops": lambda: RRWP(4, hops=2),
    "spd": lambda: SPD(3, path_hops=2),
    "spd_local": lambda: SPD(2, local=True, path_hops=1),
    "rd": lambda: ResistanceDistance(),
    "heat": lambda: HeatKernel([0.5, 2.0]),
    "heat_sym": lambda: HeatKernel(1.0, normalization="sym", keep_trivial=True),
}
RANDOM = {"lap_none_random", "rfp", "rfp_rw_l2"}
IGNORES_WEIGHTS = {"lcp", "lcp_bounds", "afrc", "spd", "spd_local"}  # documented
DETERMINISTIC = [n for n in TRANSFORMS if n not in RANDOM]


def is_lap(t) -> bool:
    return isinstance(t, LaplacianPE)


def pair_names(t) -> set[str]:
    return t.pair_attributes() if hasattr(t, "pair_attributes") else set()


def index_name(t) -> str | None:
    return f"{t.attr_name}_index" if pair_names(t) else None


def encode(t, g: Data) -> dict[str, torch.Tensor]:
    """The attributes ``t`` adds to ``g`` (``g`` untouched)."""
    out = t(g.clone())
    return {k: out[k] for k in out.keys() if k not in g.keys()}


def components(g: Data) -> np.ndarray:
    """Connected-component label of every node (edges of weight 0 connect nothing)."""
    n = g.num_nodes
    ei = g.edge_index.numpy()
    if g.get("edge_weight") is not None:
        ei = ei[:, g.edge_weight.numpy() > 0]
    adj = sp.coo_matrix((np.ones(ei.shape[1]), (ei[0], ei[1])), shape=(n, n))
    return scipy_components(adj, directed=False)[1] if n else np.zeros(0, dtype=int)


def full_spectrum(t: LaplacianPE, g: Data) -> np.ndarray:
    n = g.num_nodes
    pairs = laplacian_eigenpairs(g.edge_index, n, max(n, 1), edge_weight=g.get("edge_weight"),
                                 normalization=t.normalization, keep_trivial=True,
                                 dtype=torch.float64)
    return pairs.eigvals[0][pairs.mask[0]].numpy()


def stable_columns(t: LaplacianPE, g: Data, vals: torch.Tensor, mask: torch.Tensor,
                   vecs: torch.Tensor | None = None) -> list[int]:
    """Columns whose eigenvector is defined up to sign (a simple eigenvalue), and with
    ``vecs``, also whose canonical sign is independent of node order (``sum v^3`` not ~0;
    documented: an antisymmetric vector's sign no permutation-invariant rule can fix)."""
    if g.num_nodes == 0:
        return []
    spectrum = full_spectrum(t, g)
    cols = []
    for j in range(vals.size(1)):
        if not bool(mask[0, j]):
            continue
        if int((np.abs(spectrum - float(vals[0, j])) < 1e-5).sum()) != 1:
            continue
        if vecs is not None:
            v = vecs[:, j].double()
            if abs(float(v.pow(3).sum())) <= 1e-3 * float(v.abs().max()) ** 3:
                continue
        cols.append(j)
    return cols


def split_batch(t, out: dict[str, torch.Tensor], graphs: list[Data],
                ptr: torch.Tensor) -> list[dict[str, torch.Tensor]]:
    """Per-graph views of outputs computed on a Batch, with graph-local pair ids."""
    pairs, edges = pair_names(t), t.edge_attributes()
    counts = torch.tensor([g.edge_index.size(1) for g in graphs])
    eptr = torch.cat([counts.new_zeros(1), counts.cumsum(0)])
    if pairs:
        index = out[index_name(t)]
        owner = torch.searchsorted(ptr, index[0], right=True) - 1
        pcounts = torch.bincount(owner, minlength=len(graphs))
        pptr = torch.cat([pcounts.new_zeros(1), pcounts.cumsum(0)])
    result = []
    for i in range(len(graphs)):
        part = {}
        for name, value in out.items():
            if name == index_name(t):
                part[name] = value[:, pptr[i]:pptr[i + 1]] - ptr[i]
            elif name in pairs:
                part[name] = value[pptr[i]:pptr[i + 1]]
            elif name in edges:
                part[name] = value[eptr[i]:eptr[i + 1]]
            else:
                part[name] = value[ptr[i]:ptr[i + 1]]
        result.append(part)
    return result


def assert_same(t, g: Data, got: dict, want: dict, where: str, atol: float = 1e-6) -> None:
    """Equal outputs; for LapPE the eigenvectors only where they are defined (simple
    eigenvalues), the eigenvalues and mask everywhere."""
    assert got.keys() == want.keys(), where
    skip = set()
    if is_lap(t):
        vec, val, mask = t.attr_names
        skip = {vec}
        cols = stable_columns(t, g, want[val], want[mask])
        torch.testing.assert_close(got[vec][:, cols], want[vec][:, cols], atol=atol, rtol=0,
                                   msg=lambda m: f"{where}: {vec}: {m}")
    for name in want.keys() - skip:
        a, b = got[name], want[name]
        assert a.shape == b.shape and a.dtype == b.dtype, (where, name, a.shape, b.shape)
        if a.is_floating_point():
            torch.testing.assert_close(a, b, atol=atol, rtol=0, equal_nan=True,
                                       msg=lambda m, name=name: f"{where}: {name}: {m}")
        else:
            assert torch.equal(a, b), (where, name)


# ----------------------------------------------------------------------------- shapes


def check_documented_outputs(t, g: Data, out: dict[str, torch.Tensor]) -> None:
    n, e = g.num_nodes, g.edge_index.size(1)
    f32 = torch.float32
    if is_lap(t):
        vec, val, mask = t.attr_names
        assert out.keys() == {vec, val, mask}
        for name, dtype in ((vec, f32), (val, f32), (mask, torch.bool)):
            assert out[name].shape == (n, t.k) and out[name].dtype == dtype, name
        assert bool(torch.isfinite(out[vec]).all() and torch.isfinite(out[val]).all())
        if n:
            comps = len(set(components(g).tolist()))
            valid = min(t.k, n if t.keep_trivial else n - comps)
            assert out[mask][0].tolist() == [True] * valid + [False] * (t.k - valid)
            assert bool((out[val] == out[val][:1]).all())  # graph-level values on every node
            assert bool((out[val][:, valid:] == t.pad_value).all())
            assert not bool(out[vec][:, valid:].any())
            norms = out[vec][:, :valid].double().norm(dim=0)
            torch.testing.assert_close(norms, torch.ones_like(norms), atol=1e-5, rtol=0)
        return
    if isinstance(t, RWSE):
        x = out[t.attr_name]
        assert out.keys() == {t.attr_name} and x.shape == (n, t.walk_length) and x.dtype == f32
        assert bool(((x >= -1e-6) & (x <= 1 + 1e-6)).all())
        return
    if isinstance(t, RFP):
        x = out[t.attr_name]
        assert x.shape == (n, t.num_draws, t.dim * (t.steps + 1)) and x.dtype == f32
        assert bool(torch.isfinite(x).all())
        return
    if isinstance(t, LCP):
        names = {t.attr_name} | t.edge_attributes()
        assert out.keys() == names
        assert out[t.attr_name].shape == (n, len(t.stats)) and out[t.attr_name].dtype == f32
        if t.edge_attr_name:
            shape = (e, 2) if t.curvature == "orc_bounds" else (e,)
            assert out[t.edge_attr_name].shape == shape
        assert all(bool(torch.isfinite(v).all()) for v in out.values())
        return
    if isinstance(t, (HKdiagSE, ElstaticSE)):
        x = out[t.attr_name]
        width = len(t.times) if isinstance(t, HKdiagSE) else 10
        assert out.keys() == {t.attr_name} and x.shape == (n, width) and x.dtype == f32
        assert bool(torch.isfinite(x).all())
        if isinstance(t, HKdiagSE):
            assert bool((x >= -1e-6).all())  # sums of e^{-t lambda} v_i^2
        return
    # pairwise
    index = out[index_name(t)]
    assert out.keys() == t.pair_attributes()
    assert index.dtype == torch.long and index.dim() == 2 and index.size(0) == 2
    p = index.size(1)
    local = getattr(t, "hops", None) is not None or getattr(t, "local", False)
    assert p <= n * n if local else p == n * n
    if p:
        assert int(index.min()) >= 0 and int(index.max()) < n
    assert len(set(map(tuple, index.t().tolist()))) == p  # no pair twice
    x = out[t.attr_name]
    assert x.size(0) == p
    diag = index[0] == index[1]
    if isinstance(t, RRWP):
        assert x.shape == (p, t.num_steps) and x.dtype == f32
        assert bool(((x >= -1e-6) & (x <= 1 + 1e-6)).all())
        assert torch.equal(x[:, 0], diag.float())  # M^0 = I
    elif isinstance(t, SPD):
        assert x.shape == (p,) and x.dtype == torch.long
        assert bool(((x >= 0) & (x <= t.max_dist + 1)).all()) and torch.equal(x == 0, diag)
        if t.path_hops:
            path = out[f"{t.attr_name}_path"]
            assert path.shape == (p, t.path_hops) and path.dtype == torch.long
            assert bool(((path >= -1) & (path < e)).all())
            # min(d, path_hops) edges, then -1; none for i == j or across components
            labels = torch.from_numpy(components(g))
            apart = labels[index[0]] != labels[index[1]] if p else diag
            hops = (path >= 0).sum(1)
            assert torch.equal(hops, x.clamp(max=t.path_hops).masked_fill(apart, 0))
            ended = path < 0
            assert bool(ended[:, :-1].le(ended[:, 1:]).all())  # -1 only past the end
    elif isinstance(t, ResistanceDistance):
        assert x.shape == (p,) and x.dtype == f32
        labels = torch.from_numpy(components(g))
        apart = labels[index[0]] != labels[index[1]] if p else diag
        assert torch.equal(torch.isinf(x), apart)  # the documented sentinel, nowhere else
        assert bool((x[~apart] >= 0).all()) and bool((x[diag] == 0).all())
    elif isinstance(t, HeatKernel):
        assert x.shape == (p, len(t.times)) and x.dtype == f32
        assert bool(torch.isfinite(x).all())


@pytest.mark.parametrize("kind", sorted(GRAPH_SETS))
@pytest.mark.parametrize("tname", list(TRANSFORMS))
def test_documented_names_shapes_dtypes_and_ranges(tname, kind):
    for gname, g in GRAPH_SETS[kind].items():
        t = TRANSFORMS[tname]()
        before = g.clone()
        out = encode(t, g)
        try:
            check_documented_outputs(t, g, out)
        except AssertionError as err:
            raise AssertionError(f"{tname} on {gname} ({kind}): {err}") from err
        for key in before.keys():  # the input is untouched
            assert torch.equal(g[key], before[key]) if isinstance(g[key], torch.Tensor) \
                else g[key] == before[key]


def test_x_and_edge_attr_are_kept_and_do_not_change_the_encoding():
    g = WEIGHTED["house"]
    with_x = g.clone()
    with_x.x = torch.randn(g.num_nodes, 3)
    del with_x.num_nodes
    for tname, make in TRANSFORMS.items():
        a, b = encode(make(), g), encode(make(), with_x)
        assert_same(make(), g, b, a, tname)
        out = make()(with_x.clone())
        assert torch.equal(out.x, with_x.x) and torch.equal(out.edge_attr, with_x.edge_attr)


# ----------------------------------------------------------------------------- entry points


class Graphs(InMemoryDataset):
    def __init__(self, graphs):
        super().__init__()
        self.data, self.slices = self.collate(graphs)


@pytest.mark.parametrize("kind", sorted(GRAPH_SETS))
@pytest.mark.parametrize("tname", list(TRANSFORMS))
def test_entry_points_agree_graph_by_graph(tname, kind):
    """Data, Batch (a 0-node graph inside), precompute over a list (chunked) and over an
    InMemoryDataset, and OnTheFlyPE in train and eval mode give each graph the same values.
    Random transforms: a fresh seeded transform over one chunk draws the same numbers in
    each entry point (precompute restarts the stream; eval mode draws from a generator
    seeded afresh); per graph only their deterministic parts are compared."""
    make = TRANSFORMS[tname]
    graphs = [g.clone() for g in GRAPH_SETS[kind].values()]
    batch = Batch.from_data_list([g.clone() for g in graphs])
    on_batch = split_batch(make(), encode(make(), batch), graphs, batch.ptr)
    fly_train = OnTheFlyPE([make()])(batch)
    fly_eval = OnTheFlyPE([make()]).eval()
    fly_eval_out = fly_eval(batch)
    assert set(batch.keys()) == set(Batch.from_data_list(graphs).keys())  # caller's untouched
    for name in on_batch[0]:
        assert torch.equal(fly_eval(batch)[name], fly_eval_out[name]), name  # eval: fixed
    chunked = 1 if tname in RANDOM else 3  # random draws follow the chunks
    listed = precompute([g.clone() for g in graphs], make(),
                        batch_size=len(graphs) if chunked == 1 else 3, progress=False)
    with_x = [Data(x=torch.zeros(g.num_nodes, 1), **{k: g[k] for k in g.keys()
                                                     if k != "num_nodes"}) for g in graphs]
    dataset = precompute(Graphs(with_x), make(), batch_size=len(graphs) if chunked == 1 else 4,
                         progress=False)
    fly_parts = {
        mode: split_batch(make(), {k: out[k] for k in out.keys() if k not in batch.keys()},
                          graphs, batch.ptr)
        for mode, out in (("fly-train", fly_train), ("fly-eval", fly_eval_out))}
    for i, (gname, g) in enumerate(zip(GRAPH_SETS[kind], graphs, strict=True)):
        want = on_batch[i]
        got_list = {k: listed[i][k] for k in want}
        got_ds = {k: dataset[i][k] for k in want}
        for where, got in (("precompute(list)", got_list), ("precompute(dataset)", got_ds),
                           *((m, parts[i]) for m, parts in fly_parts.items())):
            assert_same(make(), g, got, want, f"{tname}/{gname}: {where} vs Batch")
        alone = encode(make(), g)
        if tname not in RANDOM:
            assert_same(make(), g, alone, want, f"{tname}/{gname}: Data vs Batch")
        elif is_lap(make()):  # random signs flip the canonical vectors, nothing else
            t = make()
            canonical = encode(LaplacianPE(t.k, normalization=t.normalization), g)
            vec, val, mask = t.attr_names
            assert torch.equal(alone[mask], canonical[mask])
            torch.testing.assert_close(alone[val], canonical[val], atol=1e-6, rtol=0)
            cols = stable_columns(t, g, canonical[val], canonical[mask])
            torch.testing.assert_close(alone[vec][:, cols].abs(), canonical[vec][:, cols].abs(),
                                       atol=1e-6, rtol=0)


def test_precompute_of_random_transforms_is_reproducible_and_chunk_independent_of_workers():
    graphs = list(GRAPHS.values())
    for make in (TRANSFORMS["rfp"], TRANSFORMS["lap_none_random"]):
        t = make()
        name = t.attr_name if isinstance(t, RFP) else t.attr_names[0]
        a = precompute(graphs, t, batch_size=4, progress=False)
        b = precompute(graphs, t, batch_size=4, progress=False, num_workers=2)
        assert all(torch.equal(x[name], y[name]) for x, y in zip(a, b, strict=True))


# ----------------------------------------------------------------------------- permutations


def permuted(g: Data, perm: torch.Tensor) -> Data:
    """``g`` with node ``perm[i]`` renamed ``i`` (edge order and weights kept)."""
    inverse = torch.empty_like(perm)
    inverse[perm] = torch.arange(perm.numel())
    out = Data(edge_index=inverse[g.edge_index], num_nodes=g.num_nodes)
    if g.get("edge_weight") is not None:
        out.edge_weight = g.edge_weight
    return out


@pytest.mark.parametrize("kind", sorted(GRAPH_SETS))
@pytest.mark.parametrize("tname", [n for n in DETERMINISTIC])
def test_permutation_equivariance(tname, kind):
    make = TRANSFORMS[tname]
    for gname, g in GRAPH_SETS[kind].items():
        n = g.num_nodes
        perm = torch.randperm(n, generator=torch.Generator().manual_seed(n))
        inverse = torch.empty_like(perm)
        inverse[perm] = torch.arange(n)
        t = make()
        a, b = encode(t, g), encode(make(), permuted(g, perm))
        where = f"{tname}/{gname}"
        if is_lap(t):
            vec, val, mask = t.attr_names
            assert torch.equal(a[mask], b[mask]), where
            torch.testing.assert_close(a[val], b[val], atol=1e-5, rtol=0)
            cols = stable_columns(t, g, a[val], a[mask], a[vec])
            torch.testing.assert_close(a[vec][perm][:, cols], b[vec][:, cols], atol=1e-5,
                                       rtol=0, msg=lambda m, w=where: f"{w}: {m}")
            continue
        if pair_names(t):
            idx = index_name(t)
            # pair (i, j) of g is pair (inverse[i], inverse[j]) of the permuted graph
            key_a = (inverse[a[idx][0]] * max(n, 1) + inverse[a[idx][1]]).tolist()
            key_b = (b[idx][0] * max(n, 1) + b[idx][1]).tolist()
            assert sorted(key_a) == sorted(key_b), where
            pos = {k: p for p, k in enumerate(key_a)}
            order = torch.tensor([pos[k] for k in key_b], dtype=torch.long)
            for name in pair_names(t) - {idx, f"{t.attr_name}_path"}:  # paths: node-id ties
                # float32 sums in another order: a few ulps of large values (resistances)
                torch.testing.assert_close(a[name][order], b[name], atol=2e-6, rtol=1e-6,
                                           msg=lambda m, w=where: f"{w}: {m}")
            continue
        for name in a.keys() - t.edge_attributes():
            torch.testing.assert_close(a[name][perm], b[name], atol=2e-6, rtol=0,
                                       msg=lambda m, w=where: f"{w}: {m}")
        for name in t.edge_attributes():  # edges keep their order
            torch.testing.assert_close(a[name], b[name], atol=2e-6, rtol=0)


BASE = undirected([(0, 1), (1, 2), (2, 0), (2, 3), (3, 4)])
SAME_GRAPH = {
    "one direction": torch.tensor([[0, 1, 2, 2, 3], [1, 2, 0, 3, 4]]),
    "other direction": torch.tensor([[1, 2, 0, 3, 4], [0, 1, 2, 2, 3]]),
    "duplicates": torch.cat([BASE, BASE[:, :4]], 1),
    "shuffled": BASE[:, torch.randperm(BASE.size(1), generator=torch.Generator().manual_seed(0))],
    "self loop": torch.cat([BASE, torch.tensor([[1], [1]])], 1),
}
KEEPS_SELF_LOOPS = {"rwse", "rrwp", "rrwp_hops"}  # documented: a walk may stay on a loop


@pytest.mark.parametrize("tname", list(TRANSFORMS))
def test_undirected_simple_graph_is_what_counts(tname):
    """Documented: every transform reads the undirected simple graph underlying edge_index
    (RWSE and RRWP keep self loops). Per-edge outputs and SPD's path ids follow edge_index,
    so they are left out."""
    make = TRANSFORMS[tname]
    ref = encode(make(), Data(edge_index=BASE, num_nodes=6))
    for variant, ei in SAME_GRAPH.items():
        if variant == "self loop" and tname in KEEPS_SELF_LOOPS:
            continue
        got = encode(make(), Data(edge_index=ei, num_nodes=6))
        for name in ref.keys() - make().edge_attributes() - {"spd_path"}:
            a, b = ref[name], got[name]
            if is_lap(make()) and name == "lap_pe":
                a, b = a.abs(), b.abs()  # (the graph's spectrum is simple)
            torch.testing.assert_close(b, a, atol=1e-5, rtol=0, equal_nan=True,
                                       msg=lambda m, v=variant: f"{tname} {v}: {m}")


def test_documented_identities_between_transforms():
    for gname, g in {**GRAPHS, **{f"w_{k}": v for k, v in WEIGHTED.items()}}.items():
        for norm in ("none", "sym"):
            for keep in (False, True):
                hk = encode(HKdiagSE([0.0, 0.5, 3.0], normalization=norm, keep_trivial=keep),
                            g)["hkdiag"]
                heat = encode(HeatKernel([0.0, 0.5, 3.0], normalization=norm,
                                         keep_trivial=keep), g)
                diag = heat["heat"][heat["heat_index"][0] == heat["heat_index"][1]]
                torch.testing.assert_close(diag, hk, atol=1e-6, rtol=0)
        rwse = encode(RWSE(5), g)["rwse"]
        rrwp = encode(RRWP(6), g)
        diag = rrwp["rrwp"][rrwp["rrwp_index"][0] == rrwp["rrwp_index"][1]]
        torch.testing.assert_close(diag[:, 1:], rwse, atol=1e-6, rtol=0)
        # local pairs (hops >= K - 1 for RRWP): exactly the listed ones of all pairs, and
        # every pair left out is all-zero (RRWP) or farther than max_dist (SPD)
        for full_t, local_t in ((RRWP(4), RRWP(4, hops=3)),
                                (SPD(2, path_hops=2), SPD(2, local=True, path_hops=2))):
            full, part = encode(full_t, g), encode(local_t, g)
            idx = index_name(full_t)
            n = max(g.num_nodes, 1)
            pos = {k: p for p, k in enumerate((full[idx][0] * n + full[idx][1]).tolist())}
            rows = torch.tensor([pos[k] for k in (part[idx][0] * n + part[idx][1]).tolist()],
                                dtype=torch.long)
            for name in pair_names(full_t) - {idx}:
                assert torch.equal(full[name][rows], part[name]) or torch.allclose(
                    full[name][rows], part[name], atol=1e-6), (gname, name)
            rest = torch.ones(full[idx].size(1), dtype=torch.bool)
            rest[rows] = False
            value = full[full_t.attr_name][rest]
            assert bool((value == 0).all()) if isinstance(full_t, RRWP) else \
                bool((value == full_t.max_dist + 1).all()), gname
        # ElstaticSE: per_component changes nothing on a connected graph
        if len(set(components(g).tolist())) == 1:
            torch.testing.assert_close(encode(ElstaticSE(per_component=True), g)["elstatic"],
                                       encode(ElstaticSE(), g)["elstatic"], atol=1e-6, rtol=0)


# ----------------------------------------------------------------------------- kernels


def kernel_cases():
    for kind, graphs in GRAPH_SETS.items():
        batch = Batch.from_data_list(list(graphs.values()))
        yield f"{kind}-batch", batch.edge_index, batch.num_nodes, batch.ptr, \
            batch.get("edge_weight")


@pytest.mark.parametrize("case", list(kernel_cases()), ids=lambda c: c[0])
def test_compiled_and_tensor_kernels_agree(case):
    _, ei, n, ptr, w = case

    def both(fn, *args, **kw):
        return (fn(*args, plan=ExecPlan(kernel="compiled"), **kw),
                fn(*args, plan=ExecPlan(kernel="tensor"), **kw))

    # (a batch mixing graphs above and below dense_max_nodes: see the end of the file)
    a, b = both(random_walk_landing_probs, ei, n, 5, ptr=ptr, edge_weight=w)
    torch.testing.assert_close(a, b, atol=1e-5, rtol=0)
    for norm in ("sym", "rw", "none"):
        for keep in (False, True):
            a, b = both(laplacian_eigenpairs, ei, n, 4, ptr=ptr, edge_weight=w,
                        normalization=norm, keep_trivial=keep, dtype=torch.float64)
            assert torch.equal(a.mask, b.mask)
            torch.testing.assert_close(a.eigvals, b.eigvals, atol=1e-8, rtol=0)
            t = LaplacianPE(4, normalization=norm, keep_trivial=keep)
            for g in range(ptr.numel() - 1):
                lo, hi = int(ptr[g]), int(ptr[g + 1])
                sub = (ei >= lo) & (ei < hi)
                keep_e = sub[0] & sub[1]
                data = Data(edge_index=ei[:, keep_e] - lo, num_nodes=hi - lo)
                if w is not None:
                    data.edge_weight = w[keep_e]
                cols = stable_columns(t, data, a.eigvals[g:g + 1], a.mask[g:g + 1],
                                      a.eigvecs[lo:hi])
                torch.testing.assert_close(a.eigvecs[lo:hi, cols], b.eigvecs[lo:hi, cols],
                                           atol=1e-6, rtol=0)
    x0 = torch.randn(n, 2, 3, generator=torch.Generator().manual_seed(0))
    for op in ("gcn", "adj", "rw", "lap_shift"):
        for norm in ("qr", "l2"):
            a, b = both(random_feature_propagation, ei, n, x0, 3, op, norm, ptr=ptr,
                        edge_weight=w)
            torch.testing.assert_close(a, b, atol=1e-4, rtol=0)
    a, b = both(relative_random_walk_probs, ei, n, 4, ptr=ptr, edge_weight=w)
    assert torch.equal(a.pair_index, b.pair_index) and torch.equal(a.pair_ptr, b.pair_ptr)
    torch.testing.assert_close(a.values, b.values, atol=1e-6, rtol=0)
    for curvature in ("orc", "orc_bounds", "forman", "afrc"):
        a, b = both(local_curvature_profile, ei, n, curvature, ptr=ptr)
        torch.testing.assert_close(a[0], b[0], atol=1e-6, rtol=0)
        torch.testing.assert_close(a[1], b[1], atol=1e-6, rtol=0)
    for max_dist in (1, 3):
        (ea, pa), (eb, pb) = both(shortest_paths, ei, n, max_dist, 2, ptr=ptr)
        assert torch.equal(ea.pair_index, eb.pair_index) and torch.equal(ea.values, eb.values)
        assert torch.equal(pa, pb)


# ----------------------------------------------------------------------------- settings


VARIANTS = {  # per transform: settings that change the output, each a different cache key
    "LaplacianPE": [lambda: LaplacianPE(3), lambda: LaplacianPE(4),
                    lambda: LaplacianPE(3, normalization="rw"),
                    lambda: LaplacianPE(3, keep_trivial=True),
                    lambda: LaplacianPE(3, sign="none"),
                    lambda: LaplacianPE(3, sign="random", seed=1),
                    lambda: LaplacianPE(3, sign="random", seed=2),
                    lambda: LaplacianPE(3, pad_value=-1.0),
                    lambda: LaplacianPE(3, attr_name="pe"),
                    lambda: LaplacianPE(3, dense_max_nodes=8)],
    "RWSE": [lambda: RWSE(4), lambda: RWSE(5), lambda: RWSE(4, self_loops=False),
             lambda: RWSE(4, attr_name="r"), lambda: RWSE(4, attr_name=None)],
    "RFP": [lambda: RFP(4, 2, seed=None), lambda: RFP(4, 2, seed=0), lambda: RFP(4, 2, seed=1),
            lambda: RFP(5, 2, seed=0), lambda: RFP(4, 3, seed=0),
            lambda: RFP(4, 2, num_draws=2, seed=0), lambda: RFP(4, 2, operator="rw", seed=0),
            lambda: RFP(4, 2, normalization="l2", seed=0)],
    "LCP": [lambda: LCP(), lambda: LCP("forman"), lambda: LCP(alpha=0.5),
            lambda: LCP(stats=("max", "min")), lambda: LCP(stats=("min", "max")),
            lambda: LCP(edge_attr_name="c")],
    "HKdiagSE": [lambda: HKdiagSE([1, 2]), lambda: HKdiagSE([2, 1]), lambda: HKdiagSE([1]),
                 lambda: HKdiagSE([1, 2], normalization="sym"),
                 lambda: HKdiagSE([1, 2], keep_trivial=True)],
    "ElstaticSE": [lambda: ElstaticSE(), lambda: ElstaticSE(per_component=True),
                   lambda: ElstaticSE("e")],
    "RRWP": [lambda: RRWP(3), lambda: RRWP(4), lambda: RRWP(3, hops=1), lambda: RRWP(3, hops=2)],
    "SPD": [lambda: SPD(3), lambda: SPD(4), lambda: SPD(3, local=True),
            lambda: SPD(3, path_hops=1), lambda: SPD(3, attr_name="d")],
    "ResistanceDistance": [lambda: ResistanceDistance(), lambda: ResistanceDistance("r")],
    "HeatKernel": [lambda: HeatKernel([1]), lambda: HeatKernel([1, 2]),
                   lambda: HeatKernel([1], normalization="sym"),
                   lambda: HeatKernel([1], keep_trivial=True)],
}
SAME_SETTINGS = [  # spelled differently, equal settings: equal cache keys
    (lambda: HKdiagSE([1, 2]), lambda: HKdiagSE((1.0, 2.0))),
    (lambda: HeatKernel(2), lambda: HeatKernel([2.0])),
    (lambda: HeatKernel(torch.tensor([1.0, 2.0])), lambda: HeatKernel([1, 2])),
    (lambda: LCP(alpha=0), lambda: LCP(alpha=0.0)),
    (lambda: LCP(stats=["min", "max"]), lambda: LCP(stats=("min", "max"))),
    (lambda: RFP(4, 2, seed=np.int64(3)), lambda: RFP(4, 2, seed=3)),
    (lambda: RRWP(3, max_nodes=50), lambda: RRWP(3)),  # a size limit, not an output change
    (lambda: SPD(3, local=False, path_hops=0), lambda: SPD(3)),
    (lambda: LaplacianPE(3, attr_name="lap_pe"), lambda: LaplacianPE(3)),
]
CLASSES = {c.__name__: c for c in (LaplacianPE, RWSE, RFP, LCP, HKdiagSE, ElstaticSE, RRWP, SPD,
                                   ResistanceDistance, HeatKernel)}


@pytest.mark.parametrize("cls", sorted(VARIANTS))
def test_repr_round_trips_and_cache_keys_follow_settings(cls):
    keys = set()
    for make in VARIANTS[cls]:
        t = make()
        r = repr(t)
        again = eval(r, dict(CLASSES))  # noqa: S307 - our own repr
        assert repr(again) == r and again.settings() == t.settings()
        assert repr(pickle.loads(pickle.dumps(t))) == r
        assert cache_key([make()], "fp") == cache_key([make()], "fp")  # stable
        keys.add(cache_key([t], "fp"))
    assert len(keys) == len(VARIANTS[cls])
    assert cache_key([VARIANTS[cls][0]()], "fp") != cache_key([VARIANTS[cls][0]()], "other")


def test_equal_settings_give_equal_cache_keys():
    for a, b in SAME_SETTINGS:
        assert cache_key([a()], "fp") == cache_key([b()], "fp"), repr(a())
    # the order of the transforms is part of the key
    assert cache_key([RWSE(3), LCP()], "fp") != cache_key([LCP(), RWSE(3)], "fp")


BAD_SETTINGS = [
    (lambda: LaplacianPE(0), "k must be a positive int"),
    (lambda: LaplacianPE(2.0), "k must be a positive int"),
    (lambda: LaplacianPE(2, normalization="L"), "normalization must be one of"),
    (lambda: LaplacianPE(2, sign="flip"), "sign must be one of"),
    (lambda: LaplacianPE(2, seed="1"), "seed must be an int or None"),
    (lambda: LaplacianPE(2, attr_names=("a", "b")), "attr_names must name"),
    (lambda: RWSE(0), "walk_length must be a positive int"),
    (lambda: RWSE(True), "walk_length must be a positive int"),
    (lambda: RWSE(3, self_loops=1), "self_loops must be True or False"),
    (lambda: RFP(0), "dim must be an int >= 1"),
    (lambda: RFP(4, -1), "steps must be an int >= 0"),
    (lambda: RFP(4, 2, num_draws=0), "num_draws must be an int >= 1"),
    (lambda: RFP(4, 2, operator="lap"), "operator must be one of"),
    (lambda: RFP(4, 2, normalization="qr2"), "normalization must be one of"),
    (lambda: RFP(4, 2, seed=1.0), "seed must be an int or None"),
    (lambda: LCP("ricci"), "curvature must be one of"),
    (lambda: LCP(alpha=1.0), r"alpha must be a number in \[0, 1\)"),
    (lambda: LCP(alpha=float("nan")), r"alpha must be a number in \[0, 1\)"),
    (lambda: LCP("afrc", alpha=0.5), "alpha applies to Ollivier-Ricci"),
    (lambda: LCP(stats=("min", "range")), "unknown statistic"),
    (lambda: HKdiagSE([]), "times must not be empty"),
    (lambda: HKdiagSE([1, float("inf")]), "times must be finite and non-negative"),
    (lambda: HKdiagSE([-1]), "times must be finite and non-negative"),
    (lambda: HKdiagSE("1,2"), "times must be a sequence"),
    (lambda: HKdiagSE([1], normalization="rw"), "normalization must be one of"),
    (lambda: HKdiagSE([1], keep_trivial="False"), "keep_trivial must be True or False"),
    (lambda: ElstaticSE(per_component="False"), "per_component must be True or False"),
    (lambda: RRWP(0), "num_steps must be a positive int"),
    (lambda: RRWP(3, hops=-1), "hops must be None or a non-negative int"),
    (lambda: RRWP(3, hops=1.5), "hops must be None or a non-negative int"),
    (lambda: SPD(0), "max_dist must be a positive int"),
    (lambda: SPD(3, path_hops=-1), "path_hops must be a non-negative int"),
    (lambda: HeatKernel([1], keep_trivial=1), "keep_trivial must be True or False"),
    (lambda: HeatKernel([float("nan")]), "times must be finite and non-negative"),
    (lambda: OnTheFlyPE([RWSE(3)], compute_on="cuda"), "compute_on must be one of"),
    (lambda: OnTheFlyPE(RWSE(3)), "OnTheFlyPE takes a list"),
    (lambda: LCP(stats=()), "stats must name at least one statistic"),
    (lambda: LaplacianPE(2, pad_value="0"), "pad_value must be a number"),
]


def test_equal_settings_spelled_differently_share_a_cache_key():
    assert cache_key([LaplacianPE(2, pad_value=0)], "fp") == cache_key(
        [LaplacianPE(2, pad_value=0.0)], "fp")


@pytest.mark.parametrize(("make", "match"), BAD_SETTINGS, ids=[m for _, m in BAD_SETTINGS])
def test_invalid_settings_raise_value_error(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_size_limits_raise_value_error_naming_the_limit():
    g = GRAPHS["k8"]
    for t in (HKdiagSE([1], max_nodes=7), ElstaticSE(max_nodes=7), RRWP(3, max_nodes=7),
              SPD(3, max_nodes=7), ResistanceDistance(max_nodes=7), HeatKernel(1, max_nodes=7)):
        with pytest.raises(ValueError, match="a graph has 8 nodes: .* and max_nodes=7"):
            t(g.clone())
    assert encode(RRWP(3, hops=1, max_nodes=7), g)["rrwp"].shape == (64, 3)  # any size


# ----------------------------------------------------------------------------- bad graphs

PATH = undirected([(0, 1), (1, 2)])
BAD_GRAPHS = {
    "index out of range": (Data(edge_index=torch.tensor([[0, 1], [1, 3]]), num_nodes=3),
                           "out of range for num_nodes=3"),
    "negative index": (Data(edge_index=torch.tensor([[0, -1], [1, 0]]), num_nodes=3),
                       "node index -1, out of range"),
    "float index": (Data(edge_index=PATH.float(), num_nodes=3), "integer dtype"),
    "3-row index": (Data(edge_index=torch.zeros(3, 2, dtype=torch.long), num_nodes=3),
                    r"shape \[2, num_edges\]"),
    "1-D index": (Data(edge_index=torch.zeros(4, dtype=torch.long), num_nodes=3),
                  r"shape \[2, num_edges\]"),
    "negative weight": (Data(edge_index=PATH, num_nodes=3,
                             edge_weight=torch.tensor([1.0, -1.0, 1.0, 1.0])), "negative"),
    "NaN weight": (Data(edge_index=PATH, num_nodes=3,
                        edge_weight=torch.tensor([1.0, math.nan, 1.0, 1.0])), "NaN or infinite"),
    "inf weight": (Data(edge_index=PATH, num_nodes=3,
                        edge_weight=torch.tensor([1.0, math.inf, 1.0, 1.0])), "NaN or infinite"),
    "short weight": (Data(edge_index=PATH, num_nodes=3, edge_weight=torch.ones(3)),
                     r"edge_weight must have shape \[4\]"),
    "2-D weight": (Data(edge_index=PATH, num_nodes=3, edge_weight=torch.ones(4, 1)),
                   r"edge_weight must have shape \[4\]"),
    "integer weight": (Data(edge_index=PATH, num_nodes=3,
                            edge_weight=torch.ones(4, dtype=torch.long)), "floating dtype"),
}
WEIGHT_CASES = {k for k in BAD_GRAPHS if "weight" in k}


@pytest.mark.parametrize("bad", sorted(BAD_GRAPHS))
@pytest.mark.parametrize("tname", list(TRANSFORMS))
def test_invalid_graphs_raise_value_error(tname, bad):
    """Per graph, through precompute and through OnTheFlyPE. LCP and SPD ignore weights
    (documented), so they are not asked to check them."""
    if bad in WEIGHT_CASES and tname in IGNORES_WEIGHTS:
        pytest.skip("weights are documented as ignored")
    data, match = BAD_GRAPHS[bad]
    make = TRANSFORMS[tname]
    with pytest.raises(ValueError, match=match):
        make()(data.clone())
    with pytest.raises(ValueError, match=match):
        precompute([data.clone()], make(), progress=False)
    with pytest.raises(ValueError, match=match):
        OnTheFlyPE([make()])(data.clone())


# ----------------------------------------------------------------------------- bugs found
# Each test below is a minimal reproduction of a real bug this sweep found (fixed since).


def _two_graph_batch_with_a_large_graph():
    """A 2-node edge and a 10-node path (node ids global), as a Batch would hold them."""
    path = torch.tensor([list(range(2, 11)), list(range(3, 12))])
    ei = torch.cat([torch.tensor([[0, 1], [1, 0]]), path, path.flip(0)], 1)
    return ei, 12, torch.tensor([0, 2, 12])


@pytest.mark.parametrize("op", ["rwse", "lap"])
def test_tensor_kernels_with_a_graph_above_dense_max_nodes(op):
    ei, n, ptr = _two_graph_batch_with_a_large_graph()
    if op == "rwse":
        want = random_walk_landing_probs(ei, n, 3, ptr=ptr,
            plan=ExecPlan(dense_max_nodes=5, kernel="compiled"))
        got = random_walk_landing_probs(ei, n, 3, ptr=ptr,
            plan=ExecPlan(dense_max_nodes=5, kernel="tensor"))
        torch.testing.assert_close(got, want, atol=1e-5, rtol=0)
    else:
        want = laplacian_eigenpairs(ei, n, 2, ptr=ptr,
            plan=ExecPlan(dense_max_nodes=5, kernel="compiled"))
        got = laplacian_eigenpairs(ei, n, 2, ptr=ptr,
            plan=ExecPlan(dense_max_nodes=5, kernel="tensor"))
        torch.testing.assert_close(got.eigvals, want.eigvals, atol=1e-5, rtol=0)


@pytest.mark.parametrize("where", ["list", "dataset"])
def test_precompute_refuses_edge_ids_beyond_their_graph(where):
    bad = Data(edge_index=torch.tensor([[2, 3], [3, 2]]), num_nodes=2)  # ids 2, 3 don't exist
    fine = Data(edge_index=no_edges(), num_nodes=2)
    with pytest.raises(ValueError, match="out of range"):
        RWSE(2)(bad.clone())
    graphs = [bad, fine]
    if where == "dataset":
        graphs = Graphs([Data(x=torch.zeros(2, 1), edge_index=g.edge_index) for g in graphs])
    # (before the fix: no error, and the isolated nodes of graph 1 got the edge 0-1)
    with pytest.raises(ValueError, match=r"^graph 0: .*out of range for num_nodes=2"):
        precompute(graphs, RWSE(2), progress=False)


def test_precompute_refuses_per_graph_weight_length_mismatch():
    ei = torch.tensor([[0, 1], [1, 2]])
    a = Data(edge_index=ei, num_nodes=3, edge_weight=torch.tensor([1.0, 5.0, 9.0]))
    b = Data(edge_index=ei, num_nodes=3, edge_weight=torch.tensor([1.0]))
    with pytest.raises(ValueError, match="edge_weight must have shape"):
        RWSE(2)(a.clone())
    with pytest.raises(ValueError, match=r"^graph 0: edge_weight must have shape \[2\] "
                                         r"\(one per edge\), got \[3\]$"):
        precompute([a, b], RWSE(2), progress=False)


def test_spd_local_flag_is_validated():
    from graphpe.encodings import resolve_pe, transforms_of

    (t,) = transforms_of(resolve_pe("spd:local=False"))  # Python's spelling, as JSON's
    assert t.local is False
    (t,) = transforms_of(resolve_pe("spd:local=true"))
    assert t.local is True
    with pytest.raises(ValueError, match=r"^local must be True or False, got 'no'$"):
        SPD(3, local="no")


def test_laplacian_keep_trivial_is_validated():
    with pytest.raises(ValueError, match="keep_trivial must be True or False"):
        LaplacianPE(2, keep_trivial="no")


@pytest.mark.parametrize("make", [lambda: SPD(3, attr_name=None), lambda: RRWP(3, attr_name=None),
                                  lambda: ResistanceDistance(attr_name=None),
                                  lambda: HeatKernel(1, attr_name=None)],
                         ids=["spd", "rrwp", "rd", "heat"])
def test_pairwise_transforms_refuse_attr_name_none(make):
    # (before the fix: x of 25 rows on a 5-node graph)
    with pytest.raises(ValueError, match=r"^attr_name must be a non-empty str, got None$"):
        make()


@pytest.mark.parametrize("make", [lambda: LCP(attr_name="c", edge_attr_name="c"),
                                  lambda: LaplacianPE(2, attr_names=("a", "a", "m"))],
                         ids=["lcp", "lap"])
def test_colliding_attribute_names_are_refused(make):
    with pytest.raises(ValueError, match=r"both name '(c|a)': one output would overwrite the "
                                         r"other$"):
        make()


@pytest.mark.parametrize("make", [lambda: RWSE(3, dense_max_nodes="64"),
                                  lambda: LaplacianPE(2, dense_max_nodes="64"),
                                  lambda: HKdiagSE(1, max_nodes="64"),
                                  lambda: RRWP(3, max_nodes="64")],
                         ids=["rwse", "lap", "hkdiag", "rrwp"])
def test_size_limits_are_validated(make):
    with pytest.raises(ValueError, match=r"max_nodes must be an int >= 0, got '64'$"):
        make()


@pytest.mark.parametrize("where", ["rwse", "lap", "precompute-lcp"])
def test_bfloat16_weights(where):
    g = Data(edge_index=PATH, num_nodes=3, edge_weight=torch.tensor([1.0, 1.0, 2.0, 2.0]))
    half = g.clone()
    half.edge_weight = g.edge_weight.bfloat16()
    if where == "rwse":
        torch.testing.assert_close(encode(RWSE(3), half), encode(RWSE(3), g))
    elif where == "lap":
        torch.testing.assert_close(encode(LaplacianPE(2), half)["lap_eigvals"],
                                   encode(LaplacianPE(2), g)["lap_eigvals"])
    else:
        precompute([half], LCP(), progress=False)  # LCP does not even read the weights


def test_rwse_cache_key_holds_dense_max_nodes():
    g = Data(edge_index=GRAPHS["house"].edge_index, num_nodes=5,
             edge_weight=torch.rand(12, dtype=torch.float64,
                                    generator=torch.Generator().manual_seed(2)))
    dense, sparse = RWSE(12), RWSE(12, dense_max_nodes=2)
    # both paths are exact in float64 on the CPU, but round in their own order (and the
    # tensor kernel's blocked path is float32), so a cache must not mix them
    torch.testing.assert_close(encode(dense, g)["rwse"], encode(sparse, g)["rwse"])
    assert cache_key([dense], "fp") != cache_key([sparse], "fp")
