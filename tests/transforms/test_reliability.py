"""Regression tests for the failure classes of the reliability sweep (issue 13) that the
CPU paths now handle: one reproduction each, with the exact error where the input is wrong."""

from __future__ import annotations

import re

import pytest
import torch
from torch_geometric.data import Batch, Data

from graphpe.ops.plan import ExecPlan
from graphpe.transforms import LCP, RFP, RWSE, LaplacianPE, OnTheFlyPE, precompute


def path_plus_isolated() -> Data:
    return Data(edge_index=torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]]), num_nodes=4)


def test_rfp_qr_columns_are_orthonormal_or_zero():
    """Class 1: columns past the numerical rank of a block were noise (norm 17.9 here)."""
    n = 9
    ei = torch.tensor([[i, (i + 1) % n] for i in range(n)]).t()
    ei = torch.cat([ei, ei.flip(0)], 1)
    out = RFP(8, 4, num_draws=1, seed=17)(Data(edge_index=ei, num_nodes=n)).rfp.reshape(n, 5, 8)
    norms = out.norm(dim=0)
    assert bool(((norms - 1).abs() < 1e-5).logical_or(norms == 0).all())
    path = torch.tensor([[0, 1, 1, 2, 2, 3], [1, 0, 2, 1, 3, 2]])
    small = RFP(8, 2, num_draws=1, seed=0)(Data(edge_index=path, num_nodes=4)).rfp.reshape(4, 3, 8)
    norms = small.norm(dim=0)  # 4 nodes, 8 columns: 4 orthonormal and 4 zero per block
    assert torch.allclose(norms[:, :4], torch.ones(3, 4), atol=1e-5)
    assert bool((norms[:, 4:] == 0).all())


def test_rw_trivial_vector_of_an_isolated_node():
    """Class 2: with normalization='rw' and keep_trivial, an isolated node's trivial
    eigenvector was all zeros while the mask said valid."""
    out = LaplacianPE(4, normalization="rw", keep_trivial=True)(path_plus_isolated())
    assert bool(out.lap_mask.all())
    torch.testing.assert_close(out.lap_pe.norm(dim=0), torch.ones(4))


def test_zero_weight_edges_connect_nothing():
    """Class 3: an edge of weight 0 made eigenvalue 0 look non-trivial."""
    data = path_plus_isolated()
    data.num_nodes = 3
    data.edge_index = data.edge_index[:, :4]
    data.edge_weight = torch.tensor([1.0, 1.0, 0.0, 0.0])
    out = LaplacianPE(2)(data)  # components {0, 1} and {2}: one non-trivial pair
    assert out.lap_mask[0].tolist() == [True, False]
    assert float(out.lap_eigvals[0, 0]) == pytest.approx(2.0)  # the single edge's
    data.edge_weight = torch.zeros(4)
    assert not bool(LaplacianPE(2)(data).lap_mask.any())


@pytest.mark.parametrize("weight", [1e300, 3e38])
def test_huge_weights_do_not_overflow(weight):
    """Class 4: float64 weights of 1e300 gave NaN, float32 3e38 gave zeros."""
    data = path_plus_isolated()
    dtype = torch.float64 if weight > 1e38 else torch.float32
    data.edge_weight = torch.full((4,), weight, dtype=dtype)
    plain = path_plus_isolated()
    torch.testing.assert_close(RWSE(4)(data.clone()).rwse, RWSE(4)(plain.clone()).rwse)
    assert bool(torch.isfinite(RFP(2, 3, seed=0)(data.clone()).rfp).all())
    # D^-1/2 A D^-1/2 does not change when every weight is scaled (GCN's self loop of weight
    # 1 does, so compare that one for finiteness only)
    rfp = RFP(2, 3, operator="adj", seed=0)(data.clone()).rfp
    ref = RFP(2, 3, operator="adj", seed=0)(plain.clone()).rfp
    torch.testing.assert_close(rfp, ref, atol=1e-5, rtol=0)


@pytest.mark.parametrize("transform", [LCP(), RFP(4, 2, seed=0), RWSE(3), LaplacianPE(2)])
def test_edges_across_graphs_of_a_batch_are_refused(transform):
    """Class 5: LCP and RFP joined graphs silently when an edge crossed the boundary."""
    batch = Batch.from_data_list([path_plus_isolated(), path_plus_isolated()])
    batch.edge_index = torch.cat([batch.edge_index, torch.tensor([[0], [5]])], dim=1)
    with pytest.raises(ValueError, match="edges between different graphs of the batch"):
        transform(batch)


@pytest.mark.parametrize("dtype", [torch.bool, torch.float32])
def test_precompute_validates_before_casting(dtype):
    """Class 6: a bool edge_index gave wrong RWSE, a float index was truncated."""
    bad = path_plus_isolated()
    bad.edge_index = bad.edge_index.to(dtype)
    with pytest.raises(ValueError, match="graph 0: edge_index must have an integer dtype"):
        precompute([bad], RWSE(3), progress=False)


def test_rfp_on_graphs_without_nodes():
    """Class 7: RFP raised 'cannot reshape tensor of 0 elements'."""
    empty = Data(edge_index=torch.zeros(2, 0, dtype=torch.long), num_nodes=0)
    assert RFP(4, 2, num_draws=3)(empty).rfp.shape == (0, 3, 12)
    batch = Batch.from_data_list([empty, empty])
    assert RFP(4, 2)(batch).rfp.shape == (0, 4, 12)


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int16])
def test_narrow_integer_indices_are_refused(dtype):
    """Class 8: uint8/int8/int16 indices passed validation (uint8 even acted as a mask)."""
    data = path_plus_isolated()
    data.edge_index = data.edge_index.to(dtype)
    with pytest.raises(ValueError, match=r"edge_index must have an integer dtype \(torch.int64 "
                                         r"or torch.int32\), got torch\."):
        RWSE(3)(data)


@pytest.mark.parametrize("kernel", ["compiled", "tensor"])
def test_rank_deficient_rfp_blocks_on_both_kernels(kernel):
    """Class 1 on the batched tensor path (the GPU's) as on the compiled CPU one."""
    from graphpe.ops.propagate import random_feature_propagation

    n = 9
    ei = torch.tensor([[i, (i + 1) % n] for i in range(n)]).t()
    ei = torch.cat([ei, ei.flip(0)], 1)
    x0 = torch.randn(n, 2, 8, generator=torch.Generator().manual_seed(17))
    out = random_feature_propagation(ei, n, x0, 4, plan=ExecPlan(kernel=kernel)).reshape(n, 2, 5, 8)
    norms = out.norm(dim=0)
    assert bool(((norms - 1).abs() < 1e-5).logical_or(norms == 0).all())
    assert bool((norms[:, 1:, -1] == 0).all())  # C_9's propagated blocks have rank 7


@pytest.mark.parametrize("kernel", ["compiled", "tensor"])
@pytest.mark.parametrize(("weight", "dtype"), [(1e300, torch.float64), (1e-300, torch.float64),
                                               (3e38, torch.float32)])
def test_extreme_weights_give_the_unweighted_walk_on_both_kernels(kernel, weight, dtype):
    """Class 4 on both paths, and for a large graph on the sparse path: a graph whose
    weights are all equal has the unweighted graph's random walk, whatever their size."""
    from graphpe.ops import random_walk_landing_probs

    path = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])
    plain = random_walk_landing_probs(path, 4, 4, plan=ExecPlan(kernel=kernel))
    for dense_max_nodes in (512, 2):  # 2: the graph takes the sparse path
        got = random_walk_landing_probs(
            path, 4, 4, edge_weight=torch.full((4,), weight, dtype=dtype),
            plan=ExecPlan(kernel=kernel, dense_max_nodes=dense_max_nodes))
        torch.testing.assert_close(got, plain, atol=1e-6, rtol=0)


@pytest.mark.parametrize("kernel", ["compiled", "tensor"])
@pytest.mark.parametrize("dense_max_nodes", [512, 1])
def test_rwse_walks_take_self_loops_as_pyg(kernel, dense_max_nodes):
    """PyG parity: a walk may stay on a self loop (PyG's test graph gives [1, 1, 1])."""
    from torch_geometric.transforms import AddRandomWalkPE

    from graphpe.ops import random_walk_landing_probs

    cases = [(torch.tensor([[0, 1, 2], [0, 1, 2]]), 4),
             (torch.tensor([[0, 1, 1, 2, 0, 2, 3, 3], [1, 0, 2, 1, 0, 2, 3, 2]]), 4)]
    for ei, n in cases:
        sym = torch.cat([ei, ei.flip(0)], 1).unique(dim=1)  # PyG reads edges as given
        want = AddRandomWalkPE(5)(Data(edge_index=sym, num_nodes=n)).random_walk_pe
        got = random_walk_landing_probs(ei, n, 5,
            plan=ExecPlan(kernel=kernel, dense_max_nodes=dense_max_nodes))
        torch.testing.assert_close(got, want, atol=1e-6, rtol=0)
    ei, n = cases[0]
    assert RWSE(3)(Data(edge_index=ei, num_nodes=n)).rwse[:3].tolist() == [[1.0] * 3] * 3
    dropped = RWSE(3, self_loops=False)(Data(edge_index=ei, num_nodes=n)).rwse
    assert not bool(dropped.any())
    assert repr(RWSE(3)) != repr(RWSE(3, self_loops=False))  # the cache key is the repr


@pytest.mark.parametrize(("call", "message"), [
    (lambda: precompute(None, RWSE(3), progress=False),
     "dataset must be a sequence of Data (a list, an InMemoryDataset or another PyG dataset), "
     "got NoneType"),
    (lambda: precompute("graphs", RWSE(3), progress=False),
     "dataset must be a sequence of Data"),
    (lambda: precompute([path_plus_isolated()], None, progress=False),
     "transforms must be a transform, a Compose or a list of transforms, got None"),
    (lambda: precompute([Data()], RWSE(3), progress=False),
     "graph 0 has no nodes: set num_nodes or x"),
    (lambda: precompute([path_plus_isolated()], RWSE(3), batch_size=0, progress=False),
     "batch_size must be a positive int, got 0"),
    (lambda: precompute([Data(edge_index=[[0, 1], [1, 0]], num_nodes=2)], RWSE(3),
                        progress=False),
     "graph 0: edge_index must be a torch.Tensor, got list"),
    (lambda: precompute([Data(edge_index=torch.tensor([[0, 1], [1, 0]]), edge_weight=[1, 2],
                              num_nodes=2)], RWSE(3), progress=False),
     "graph 0: edge_weight must be a torch.Tensor [num_edges], got a list"),
    (lambda: RWSE(3)(Data(edge_index=[[0, 1], [1, 0]], num_nodes=2)),
     "edge_index must be a torch.Tensor [2, num_edges], got a list"),
    (lambda: LCP(alpha=None), "alpha must be a number in [0, 1), got None"),
    (lambda: RFP(4, 2, seed="a"), "seed must be an int or None, got 'a'"),
    (lambda: LaplacianPE(4, sign="random", seed=1.5), "seed must be an int or None, got 1.5"),
    (lambda: OnTheFlyPE(None),
     "OnTheFlyPE takes a list of graphpe transforms, got None"),
])
def test_bad_arguments_name_what_is_allowed(call, message):
    """Class 9: each bad input raises a ValueError naming the argument and what is allowed."""
    with pytest.raises(ValueError) as err:
        call()
    assert message in str(err.value)


def test_temporary_files_of_killed_cache_writes_are_removed(tmp_path):
    """A SIGKILLed precompute left its temporary file behind forever."""
    import os
    import subprocess
    import sys
    import time

    from graphpe.transforms.cache import STALE_TEMP_SECONDS, host_tag

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # its pid is now free: a writer that died
    host = host_tag()
    dead = tmp_path / f"k.pt.{host}-{child.pid}-abc.tmp"
    alive = tmp_path / f"k.pt.{host}-{os.getpid()}-abc.tmp"
    old_elsewhere = tmp_path / "k.pt.00000000-1-abc.tmp"
    unrelated = tmp_path / "notes.tmp"
    for f in (dead, alive, old_elsewhere, unrelated):
        f.write_bytes(b"partial")
    stamp = time.time() - STALE_TEMP_SECONDS - 10
    os.utime(old_elsewhere, (stamp, stamp))
    out = precompute([path_plus_isolated()], RWSE(3), cache_dir=tmp_path, progress=False)
    assert out[0].rwse.shape == (4, 3)
    assert not dead.exists() and not old_elsewhere.exists()
    assert alive.exists() and unrelated.exists()  # a live writer's file, and not ours
    assert len(list(tmp_path.glob("*.pt"))) == 1


def test_a_float_edge_attr_is_not_read_as_weights_and_a_warning_says_so():
    import warnings

    from graphpe.encodings.transform import EDGE_ATTR_NOT_READ
    from graphpe.transforms import RWSE

    edge_index = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])
    weighted = Data(edge_index=edge_index, num_nodes=3,
                    edge_attr=torch.tensor([1.0, 1.0, float("nan"), float("nan")]))
    with pytest.warns(UserWarning, match="^" + re.escape(EDGE_ATTR_NOT_READ) + "$"):
        out = RWSE(walk_length=3)(weighted.clone()).rwse
    assert torch.equal(out, RWSE(walk_length=3)(Data(edge_index=edge_index,
                                                      num_nodes=3)).rwse)
    with warnings.catch_warnings():  # categorical edge features, or weights given: no warning
        warnings.simplefilter("error")
        RWSE(walk_length=3)(Data(edge_index=edge_index, num_nodes=3,
                                 edge_attr=torch.tensor([0, 0, 1, 1])))
        RWSE(walk_length=3)(Data(edge_index=edge_index, num_nodes=3,
                                 edge_attr=torch.ones(4), edge_weight=torch.ones(4)))
