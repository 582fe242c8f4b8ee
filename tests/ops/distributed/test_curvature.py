"""graphpe.ops.distributed.curvature: LCP of a graph partitioned over 2 (and 3) gloo ranks
against the single process's LCP of the same graph, every curvature, and the transport
budget's error raised on every rank."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.distributed as dist
from torch_geometric.data import Data

from graphpe.ops.curvature import (
    TransportBudgetError,
    local_curvature_profile,
    orc_transport_cost,
)
from graphpe.ops.distributed import curvature as curvature_module
from graphpe.ops.distributed import distributed_lcp, local_rows, row_partition
from graphpe.ops.distributed.curvature import fetch_rows
from graphpe.ops.distributed.partition import bandwidth_order
from graphpe.ops.host import simple_csr
from graphpe.transforms import LCP
from tests.ops.distributed.graphs import two_components
from tests.ops.distributed.spawn import run_ranks

# (curvature, alpha, stats)
CONFIGS = {"orc": ("orc", 0.0, None), "orc_lazy": ("orc", 0.5, None),
           "orc_stats": ("orc", 0.0, ("median", "std", "min")),
           "orc_bounds": ("orc_bounds", 0.0, None), "orc_bounds_lazy": ("orc_bounds", 0.5, None),
           "forman": ("forman", 0.0, None), "afrc": ("afrc", 0.0, None)}

# the curvatures whose halo rows come in rounds
ROUNDS = ("afrc", "orc_bounds_lazy")


def _graph(name: str):
    """``random``: two components, two isolated nodes, self loops (one on an isolated node);
    ``hub``: a node joined to 40 others (the solver's hub search and merged problems);
    ``sparse``: a triangle and a pendant edge, then isolated nodes."""
    if name == "sparse":  # 3 ranks: 0-1 | 2-3 | 4 5 6, the last rank's nodes isolated
        return Data(edge_index=torch.tensor([[0, 1, 2, 1], [1, 2, 3, 3]]), num_nodes=7)
    if name == "random":
        graph = two_components(n=60, path=6, degree=5.0, seed=1, isolated=2)
        extra = torch.tensor([[3, 30, 67], [3, 30, 67]])  # self loops: ignored by LCP
    else:
        graph = two_components(n=50, path=5, degree=3.0, seed=2)
        extra = torch.stack([torch.full((40,), 7), torch.arange(10, 50)])
    graph.edge_index = torch.cat([graph.edge_index, extra], dim=1)
    return graph


GRAPHS = ("random", "hub")


def _rows(graph, world: int, rank: int, order: np.ndarray | None = None):
    ei = graph.edge_index
    if order is not None:  # row i is node order[i]
        inverse = np.empty_like(order)
        inverse[order] = np.arange(order.size)
        ei = torch.from_numpy(inverse)[ei]
    return local_rows(simple_csr(ei, graph.num_nodes), row_partition(graph.num_nodes, world,
                                                                      rank, order))


def _config(name: str) -> dict:
    curvature, alpha, stats = CONFIGS[name]
    return {"curvature": curvature, "alpha": alpha,
            **({} if stats is None else {"stats": stats})}


def _order(graph) -> np.ndarray:
    csr = simple_csr(graph.edge_index, graph.num_nodes)
    return bandwidth_order(csr.indptr, csr.indices, graph.num_nodes)


def _profiles(rank: int, world: int, reordered: bool,
              group: dist.ProcessGroup | None = None) -> dict:
    out = {}
    for g in GRAPHS if not reordered else ("random", "sparse"):
        graph = _graph(g)
        order = _order(graph) if reordered and g == "random" else None
        rows = _rows(graph, world, rank, order)
        for c in CONFIGS:
            out[g, c] = distributed_lcp(rows, **_config(c), group=group)
        for c in ROUNDS:  # the halo rows in rounds of a few entries
            out[g, c, "rounds"] = distributed_lcp(rows, **_config(c), round_entries=5,
                                                  group=group)
        # the default: rounds of the ranks' mean own entries (which differ from rank to
        # rank); the formulas over blocks of 7 entries
        floor, block = curvature_module.MIN_ROUND_ENTRIES, curvature_module.FORMULA_BLOCK
        curvature_module.MIN_ROUND_ENTRIES, curvature_module.FORMULA_BLOCK = 1, 7
        out[g, "afrc", "mean"] = distributed_lcp(rows, "afrc", group=group)
        out[g, "orc_bounds", "mean"] = distributed_lcp(rows, "orc_bounds", group=group)
        curvature_module.MIN_ROUND_ENTRIES, curvature_module.FORMULA_BLOCK = floor, block
        try:  # a round's size differs between the ranks: refused on every rank
            distributed_lcp(rows, "afrc", round_entries=5 + rows.partition.rank, group=group)
        except ValueError as error:
            out[g, "unequal_rounds"] = str(error)
    if reordered:
        return out
    graph = _graph("random")
    rows = _rows(graph, world, rank)
    cells = orc_transport_cost(graph.edge_index, graph.num_nodes, 0.5).cells
    try:
        distributed_lcp(rows, "orc", 0.5, max_transport_cells=cells - 1, group=group)
    except TransportBudgetError as error:
        out["budget"] = (str(error), tuple(error.cost))
    out["at_budget"] = distributed_lcp(rows, "orc", 0.5, max_transport_cells=cells,
                                       group=group)[0]
    # every row of the other ranks, fetched
    n, part = graph.num_nodes, rows.partition
    others = np.setdiff1d(np.arange(n), np.arange(part.lo, part.hi))
    out["fetched"] = (others, *fetch_rows(rows, others, group))
    return out


def _ranks(rank: int, world: int) -> dict:
    """The 3-rank cases on all three ranks (the random graph's rows reordered), then the
    2-rank cases on the group of ranks 1 and 2 (its ranks 0 and 1: not the default group)."""
    out = {"three": _profiles(rank, world, True)}
    pair = dist.new_group([1, 2])
    if rank in (1, 2):
        out["two"] = _profiles(rank - 1, 2, False, pair)
    return out


@pytest.fixture(scope="module")
def spawned(tmp_path_factory):
    # one spawn (its start, three interpreters importing torch, is most of the time)
    return run_ranks(_ranks, 3, tmp_path_factory.mktemp("lcp"))


@pytest.fixture(scope="module")
def ranks(spawned):
    return [r["two"] for r in spawned[1:]]


@pytest.fixture(scope="module")
def three_ranks(spawned):
    return [r["three"] for r in spawned]


def _single(graph, config: str) -> torch.Tensor:
    return local_curvature_profile(graph.edge_index, graph.num_nodes, **_config(config))[0]


@pytest.mark.parametrize("graph", GRAPHS)
@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_the_ranks_rows_are_the_single_process_profile(ranks, graph, config):
    got = torch.cat([r[graph, config][0] for r in ranks])
    want = _single(_graph(graph), config)
    assert got.dtype == torch.float64 and got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=0, atol=1e-12)
    # the same transport problems, entry for entry: the same bits
    assert torch.equal(got, want)


def test_the_profile_is_the_lcp_transforms(ranks):
    graph = _graph("random")
    got = torch.cat([r["random", "orc_lazy"][0] for r in ranks])
    want = LCP(curvature="orc", alpha=0.5)(graph.clone()).lcp
    torch.testing.assert_close(got.float(), want, rtol=0, atol=0)
    # an isolated node (one with a self loop only, too) has zeros; edges cross the ranks
    assert float(got[-2:].abs().sum()) == 0.0
    assert all(r["random", "orc"][1]["rows_fetched"] > 0 for r in ranks)


@pytest.mark.parametrize("graph_name", ("random", "sparse"))
@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_three_ranks(three_ranks, graph_name, config):
    graph = _graph(graph_name)
    got = torch.cat([r[graph_name, config][0] for r in three_ranks])
    want = _single(graph, config)
    if graph_name == "random":  # reordered: row i is node order[i]
        want = want[torch.from_numpy(_order(graph))]
    torch.testing.assert_close(got, want, rtol=0, atol=1e-12)


@pytest.mark.parametrize("graph", GRAPHS)
def test_orc_solves_every_edge_once_and_counts_the_budget_of_the_whole_graph(ranks, graph):
    g = _graph(graph)
    for config, alpha in (("orc", 0.0), ("orc_lazy", 0.5)):
        infos = [r[graph, config][1] for r in ranks]
        cost = orc_transport_cost(g.edge_index, g.num_nodes, alpha)
        assert sum(i["edges_solved"] for i in infos) == cost.edges
        assert sum(i["cells_solved"] for i in infos) == cost.cells
        for info in infos:
            assert (info["transport_edges"], info["transport_cells"],
                    info["transport_largest"]) == (cost.edges, cost.cells, cost.largest)
            assert info["values_sent"] > 0 and info["bytes_sent"] == 8 * info["values_sent"]
        # boundary edges are shared: each rank solves some
        assert all(i["edges_solved"] > 0 for i in infos)


@pytest.mark.parametrize("graph", GRAPHS)
@pytest.mark.parametrize("config", ROUNDS)
def test_the_halo_rows_in_rounds_give_the_same_profile(ranks, three_ranks, graph, config):
    got = torch.cat([r[graph, config, "rounds"][0] for r in ranks])
    assert torch.equal(got, _single(_graph(graph), config))
    # the rounds are many, the same on every rank, and each holds fewer entries than all
    infos = [r[graph, config, "rounds"][1] for r in ranks]
    whole = [r[graph, config][1] for r in ranks]
    assert infos[0]["fetch_rounds"] > 2
    assert len({i["fetch_rounds"] for i in infos}) == 1
    assert all(w["fetch_rounds"] == 1 for w in whole)
    for i, w in zip(infos, whole, strict=True):
        assert i["rows_fetched"] == w["rows_fetched"]
        assert i["ball_entries"] < w["ball_entries"]
    # the default rounds: each rank's own entries differ, the round size does not
    mean = [r[graph, "afrc", "mean"] for r in ranks]
    assert torch.equal(torch.cat([m[0] for m in mean]), _single(_graph(graph), "afrc"))
    assert torch.equal(torch.cat([r[graph, "orc_bounds", "mean"][0] for r in ranks]),
                       _single(_graph(graph), "orc_bounds"))
    assert {m[1]["fetch_rounds"] for m in mean} == {mean[0][1]["fetch_rounds"]}
    assert mean[0][1]["fetch_rounds"] >= 1
    assert [r[graph, "unequal_rounds"] for r in ranks] == [
        "round_entries must be the same on every rank, got 5 to 6"] * 2
    # 3 ranks, reordered rows, a rank whose nodes are isolated (no halo, no rounds of its own)
    for name in ("random", "sparse"):
        g = _graph(name)
        want = _single(g, config)
        if name == "random":
            want = want[torch.from_numpy(_order(g))]
        assert torch.equal(torch.cat([r[name, config, "rounds"][0] for r in three_ranks]),
                           want)


def test_forman_fetches_degrees_only_and_afrc_the_halo_rows(ranks):
    for r in ranks:
        forman, afrc, orc = (r["random", c][1] for c in ("forman", "afrc", "orc"))
        assert forman["rows_fetched"] == 0 and forman["values_sent"] > 0
        assert 0 < afrc["rows_fetched"] < orc["rows_fetched"]
        assert afrc["ball_nodes"] < orc["ball_nodes"]


def test_the_budget_error_is_raised_on_every_rank_with_the_single_process_message(ranks):
    graph = _graph("random")
    cells = orc_transport_cost(graph.edge_index, graph.num_nodes, 0.5).cells
    with pytest.raises(TransportBudgetError) as single:
        local_curvature_profile(graph.edge_index, graph.num_nodes, "orc", 0.5,
                                max_transport_cells=cells - 1)
    for r in ranks:
        assert r["budget"] == (str(single.value), tuple(single.value.cost))
    # at the budget exactly, it solves
    torch.testing.assert_close(torch.cat([r["at_budget"] for r in ranks]),
                               _single(graph, "orc_lazy"), rtol=0, atol=0)


def test_fetch_rows_returns_the_owners_rows(ranks):
    graph = _graph("random")
    csr = simple_csr(graph.edge_index, graph.num_nodes)
    for r in ranks:
        nodes, indptr, indices, traffic = r["fetched"]
        lengths = csr.indptr[nodes + 1] - csr.indptr[nodes]
        np.testing.assert_array_equal(np.diff(indptr), lengths)
        np.testing.assert_array_equal(
            indices, np.concatenate([csr.indices[csr.indptr[v] : csr.indptr[v + 1]]
                                     for v in nodes]))
        assert traffic["values_sent"] > 0


def test_bad_arguments_are_refused_before_any_message():
    graph = _graph("random")
    rows = _rows(graph, 1, 0)  # no process group: the checks come first
    with pytest.raises(ValueError, match="curvature must be one of"):
        distributed_lcp(rows, "ricci")
    with pytest.raises(ValueError, match="alpha must be in"):
        distributed_lcp(rows, "orc", 1.0)
    with pytest.raises(ValueError, match="unknown statistic"):
        distributed_lcp(rows, "forman", stats=("mode",))
    with pytest.raises(ValueError, match="max_transport_cells"):
        distributed_lcp(rows, "orc", max_transport_cells=-1)
    with pytest.raises(ValueError, match=r"^round_entries must be a positive int, got 0$"):
        distributed_lcp(rows, "afrc", round_entries=0)
