"""graphpe.ops.distributed.propagate: RFP by distributed propagation and CholeskyQR2 on 2
gloo ranks against the single process's RFP for the same seed."""

from __future__ import annotations

import pytest
import torch

from graphpe.ops.distributed import halo_exchange, local_rows, row_partition
from graphpe.ops.distributed.propagate import distributed_rfp, own_draws
from graphpe.ops.host import simple_csr
from graphpe.ops.plan import execution_plan
from graphpe.ops.propagate import random_feature_propagation
from graphpe.transforms import RFP
from tests.ops.distributed.graphs import two_components
from tests.ops.distributed.spawn import run_ranks

CASES = {"gcn_qr": dict(operator="gcn", normalization="qr", num_draws=3, dim=5),
         "adj_qr_one_draw": dict(operator="adj", normalization="qr", num_draws=1, dim=4),
         "rw_l2": dict(operator="rw", normalization="l2", num_draws=2, dim=3),
         "lap_shift_qr": dict(operator="lap_shift", normalization="qr", num_draws=2, dim=4)}


def _rfp(rank: int, world: int) -> dict:
    graph = two_components(weighted=True)
    part = row_partition(graph.num_nodes, world, rank)
    rows = local_rows(simple_csr(graph.edge_index, graph.num_nodes, graph.edge_weight), part)
    exchange = halo_exchange(rows)
    out = {}
    for name, c in CASES.items():
        x0 = own_draws(torch.Generator().manual_seed(7), part, c["num_draws"], c["dim"])
        out[name] = distributed_rfp(rows, exchange, x0, 5, c["operator"], c["normalization"])
    # a block of more columns than nodes is rank-deficient: the gathered fallback
    x0 = own_draws(torch.Generator().manual_seed(7), part, 1, 130)
    out["deficient"] = distributed_rfp(rows, exchange, x0, 2, "gcn", "qr")
    return out


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    return run_ranks(_rfp, 2, tmp_path_factory.mktemp("rfp"))


def _single(graph, case: dict, kernel: str, steps: int = 5) -> torch.Tensor:
    x0 = torch.randn(graph.num_nodes, case["num_draws"], case["dim"],
                     generator=torch.Generator().manual_seed(7))
    return random_feature_propagation(graph.edge_index, graph.num_nodes, x0, steps,
                                      case["operator"], case["normalization"],
                                      edge_weight=graph.edge_weight,
                                      plan=execution_plan(kernel=kernel))


@pytest.mark.parametrize("case", sorted(CASES))
def test_distributed_rfp_equals_the_single_process(ranks, case):
    graph = two_components(weighted=True)
    got = torch.cat([r[case] for r in ranks])
    # the torch kernel (the one of graphs above 1024 nodes) to the Gram sums' rounding
    torch.testing.assert_close(got, _single(graph, CASES[case], "tensor"), rtol=0, atol=1e-6)
    # and the transform (the compiled float64 kernel on a graph this small)
    c = CASES[case]
    want = RFP(dim=c["dim"], steps=5, num_draws=c["num_draws"], operator=c["operator"],
               normalization=c["normalization"], seed=7)(graph.clone()).rfp
    torch.testing.assert_close(got, want, rtol=0, atol=1e-5)


def test_a_rank_deficient_block_is_orthonormalized_whole(ranks):
    graph = two_components(weighted=True)
    got = torch.cat([r["deficient"] for r in ranks])
    case = {"operator": "gcn", "normalization": "qr", "num_draws": 1, "dim": 130}
    torch.testing.assert_close(got, _single(graph, case, "tensor", steps=2), rtol=0, atol=1e-6)


def test_own_draws_are_the_rows_of_one_stream():
    full = torch.randn(100, 2, 3, generator=torch.Generator().manual_seed(3))
    import graphpe.ops.distributed.propagate as module

    order = torch.randperm(100, generator=torch.Generator().manual_seed(4)).numpy()
    saved = module.DRAW_CHUNK_ROWS
    module.DRAW_CHUNK_ROWS = 16
    try:
        parts = [own_draws(torch.Generator().manual_seed(3), row_partition(100, 3, r), 2, 3)
                 for r in range(3)]
        # reordered rows: row i draws what the input's node order[i] draws
        reordered = [own_draws(torch.Generator().manual_seed(3),
                               row_partition(100, 3, r, order), 2, 3) for r in range(3)]
    finally:
        module.DRAW_CHUNK_ROWS = saved
    assert torch.equal(torch.cat(parts), full)
    assert torch.equal(torch.cat(reordered), full[torch.from_numpy(order)])
