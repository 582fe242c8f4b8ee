"""graphpe.ops.distributed.walk: RWSE's random-walk estimate with walks crossing the
partition, on 2 gloo ranks, against the single process's estimate for the same seed."""

from __future__ import annotations

import pytest
import torch

from graphpe.ops.distributed import halo_exchange, local_rows, row_partition
from graphpe.ops.distributed.walk import distributed_sampled_landing_probs
from graphpe.ops.host import simple_csr
from graphpe.transforms import RWSE
from tests.ops.distributed.graphs import two_components
from tests.ops.distributed.spawn import run_ranks

CASES = {"unweighted_loops": dict(weighted=False, walk_length=7, walks=12, seed=3),
         "weighted_loops": dict(weighted=True, walk_length=8, walks=10, seed=5),
         "two_steps": dict(weighted=True, walk_length=2, walks=4, seed=0)}


def _graph(weighted: bool):
    graph = two_components(weighted=weighted)
    loops = torch.tensor([[3, 50, 121], [3, 50, 121]])  # self loops: a walk may stay
    graph.edge_index = torch.cat([graph.edge_index, loops], dim=1)
    if weighted:
        graph.edge_weight = torch.cat([graph.edge_weight, torch.tensor([1.5, 0.7, 2.0])])
    return graph


def _walks(rank: int, world: int) -> dict:
    import graphpe.ops.distributed.walk as module

    module.ROUND_POSITIONS = 500  # several rounds, some ranks with no source left
    out = {}
    for name, c in CASES.items():
        graph = _graph(c["weighted"])
        part = row_partition(graph.num_nodes, world, rank)
        rows = local_rows(simple_csr(graph.edge_index, graph.num_nodes, graph.get("edge_weight")),
                          part)
        exchange = halo_exchange(rows)
        out[name] = distributed_sampled_landing_probs(rows, exchange, c["walk_length"],
                                                      c["walks"], c["seed"])
    try:
        distributed_sampled_landing_probs(rows, exchange, 4, 8, 0, estimator="transition")
    except ValueError as error:
        out["error"] = str(error)
    return out


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    return run_ranks(_walks, 2, tmp_path_factory.mktemp("walk"))


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_distributed_estimate_is_the_single_process_estimate(ranks, case):
    c = CASES[case]
    want = RWSE(c["walk_length"], estimate="sampled", walks=c["walks"],
                walk_seed=c["seed"])(_graph(c["weighted"]))
    got = torch.cat([torch.from_numpy(r[case][0]) for r in ranks]).float()
    err = torch.cat([torch.from_numpy(r[case][1]) for r in ranks]).float()
    torch.testing.assert_close(got, want.rwse, rtol=0, atol=1e-6)
    torch.testing.assert_close(err, want.rwse_stderr, rtol=0, atol=1e-6)
    assert float(want.rwse[:, 2:].abs().sum()) > 0 or c["walk_length"] <= 2
    if c["walk_length"] > 2:  # walks crossed: both ranks sent some
        assert all(r[case][2]["walk_values_sent"] > 0 for r in ranks)


def test_other_estimators_are_refused(ranks):
    assert ranks[0]["error"] == ("estimator='transition' has no distributed path "
                                 "(collision only)")
