"""graphpe.ops.distributed.eigen: LapPE by distributed Lanczos on 2 gloo ranks against the
single process's LaplacianPE."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from graphpe.ops.distributed import (
    distributed_laplacian_eigenpairs,
    halo_exchange,
    local_rows,
    row_partition,
)
from graphpe.ops.host import simple_csr
from graphpe.transforms import LaplacianPE
from tests.ops.distributed.graphs import two_components
from tests.ops.distributed.spawn import run_ranks

CASES = {"sym": dict(normalization="sym"), "rw_trivial": dict(normalization="rw",
                                                               keep_trivial=True),
         "none": dict(normalization="none")}


def _eigenpairs(rank: int, world: int) -> dict:
    graph = two_components()
    part = row_partition(graph.num_nodes, world, rank)
    rows = local_rows(simple_csr(graph.edge_index, graph.num_nodes), part)
    exchange = halo_exchange(rows)
    out = {}
    for name, options in CASES.items():
        pairs = distributed_laplacian_eigenpairs(rows, exchange, 6, **options)
        out[name] = pairs._asdict()
    lonely = two_components(isolated=9)  # 11 components, 9 of them isolated nodes
    part = row_partition(lonely.num_nodes, world, rank)
    lonely_rows = local_rows(simple_csr(lonely.edge_index, lonely.num_nodes), part)
    lonely_exchange = halo_exchange(lonely_rows)
    out["isolated"] = distributed_laplacian_eigenpairs(lonely_rows, lonely_exchange,
                                                       6)._asdict()
    from graphpe.ops.distributed import laplacian_operator, null_space

    _, deg = laplacian_operator(lonely_rows, lonely_exchange)
    null = null_space(lonely_rows, lonely_exchange, deg, "sym")
    out["null"] = (null.count, null.num_shared)
    try:
        distributed_laplacian_eigenpairs(rows, exchange, graph.num_nodes - 3)
    except ValueError as error:
        out["error"] = str(error)
    return out


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    return run_ranks(_eigenpairs, 2, tmp_path_factory.mktemp("eigen"))


@pytest.mark.parametrize("case", sorted(CASES))
def test_distributed_lanczos_equals_laplacian_pe(ranks, case):
    graph = two_components()
    want = LaplacianPE(k=6, **CASES[case])(graph.clone())
    vecs = torch.cat([r[case]["eigvecs"] for r in ranks])
    for r in ranks:
        np.testing.assert_allclose(r[case]["eigvals"].numpy(), want.lap_eigvals[0].double(),
                                   atol=1e-6)  # (the transform writes float32)
        assert r[case]["mask"].tolist() == want.lap_mask[0].tolist()
        assert r[case]["residual"] <= 1e-8
    first = 0
    if CASES[case].get("keep_trivial"):
        # two components: a two-fold eigenvalue 0, whose basis the dense solver picks freely
        first = 2
        got, ref = vecs[:, :2].double(), want.lap_pe[:, :2].double()
        assert float(torch.dist(got @ got.T, ref @ ref.T)) <= 1e-6
    np.testing.assert_allclose(vecs[:, first:].float().numpy(), want.lap_pe[:, first:].numpy(),
                               atol=1e-6)
    # both components: the path's (7 nodes) smallest, 1 - cos(pi / 6), comes first
    if case == "sym":
        assert abs(float(ranks[0][case]["eigvals"][0]) - (1.0 - np.cos(np.pi / 6))) <= 1e-12


def test_eigenvalues_to_1e8_of_the_float64_solver(ranks):
    from graphpe.ops.eigen import laplacian_eigenpairs

    graph = two_components()
    want = laplacian_eigenpairs(graph.edge_index, graph.num_nodes, 6, dtype=torch.float64)
    np.testing.assert_allclose(ranks[0]["sym"]["eigvals"].numpy(), want.eigvals[0].numpy(),
                               rtol=0, atol=1e-8)
    vecs = torch.cat([r["sym"]["eigvecs"] for r in ranks])
    v1 = want.eigvecs  # ||P1 - P2||_F = sqrt(2) ||(I - P1) V2||_F, without n x n
    distance = 2**0.5 * (vecs - v1 @ (v1.T @ vecs)).norm()
    assert float(distance) <= 1e-6


def test_too_few_eigenpairs_for_lanczos_is_a_clear_error(ranks):
    assert ranks[0]["error"] == ("k=124: the distributed LapPE needs more than k + 1 "
                                 "eigenpairs outside the null space (125 here); encode a "
                                 "graph this small in one process")


def test_isolated_nodes_are_deflated_without_communication(ranks):
    graph = two_components(isolated=9)
    want = LaplacianPE(k=6)(graph.clone())
    vecs = torch.cat([r["isolated"]["eigvecs"] for r in ranks])
    np.testing.assert_allclose(ranks[0]["isolated"]["eigvals"].numpy(),
                               want.lap_eigvals[0].double(), atol=1e-6)
    np.testing.assert_allclose(vecs.float().numpy(), want.lap_pe.numpy(), atol=1e-6)
    # 11 components; only the random part spans both ranks (the path and the isolated
    # nodes are rank 1's): one sum all-reduced per projection
    assert [r["null"] for r in ranks] == [(11, 1), (11, 1)]
