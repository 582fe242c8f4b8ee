"""RFP's compiled host kernel (``ExecPlan(kernel="compiled")``) against the batched tensor kernel
(``ExecPlan(kernel="tensor")``), on generated batches of awkward graphs and rank-deficient
blocks."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from graphpe.ops import random_feature_propagation
from graphpe.ops.plan import ExecPlan
from tests.ops.strategies import batch_of, raw_graph


@settings(max_examples=50, deadline=None)
@given(st.lists(raw_graph(weighted=True), min_size=1, max_size=5),
       st.sampled_from(["gcn", "adj", "rw", "lap_shift"]), st.sampled_from(["qr", "l2"]),
       st.integers(1, 5), st.integers(0, 4), st.integers(0, 2**16))
def test_propagation_compiled_equals_tensor(graphs, operator, normalization, dim, steps, seed):
    """In float64 both paths agree to rounding on every block: Cholesky-QR gives Gram-Schmidt's
    Q for a full-rank block, and a rank-deficient block goes through the same rank-cutting
    Gram-Schmidt in both (zero columns where the rank does not grow)."""
    batch = batch_of(graphs)
    x0 = torch.randn(batch.num_nodes, 2, dim, generator=torch.Generator().manual_seed(seed),
                     dtype=torch.float64)
    kw = dict(ptr=batch.ptr, edge_weight=batch.get("edge_weight"), dtype=torch.float64)
    args = (batch.edge_index, batch.num_nodes, x0, steps, operator, normalization)
    ours = random_feature_propagation(*args, **kw, plan=ExecPlan(kernel="compiled"))
    ref = random_feature_propagation(*args, **kw, plan=ExecPlan(kernel="tensor"))
    assert ours.shape == (batch.num_nodes, 2, (steps + 1) * dim)
    torch.testing.assert_close(ours, ref, atol=1e-6 if normalization == "qr" else 1e-9, rtol=0)


def test_propagation_rank_deficient_blocks_agree_across_kernels():
    """A star's GCN operator has rank 2, so after one step every 4-column block is
    rank-deficient: the tensor path (Gram-Schmidt with the rank cut) gives the compiled
    kernel's columns, zeros included, and not a Householder completion."""
    ei = torch.tensor([[0, 0, 0, 0, 0, 1, 2, 3, 4, 5], [1, 2, 3, 4, 5, 0, 0, 0, 0, 0]])
    x0 = torch.randn(6, 3, 4, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    kw = dict(dtype=torch.float64)
    ours = random_feature_propagation(ei, 6, x0, 3, "adj", **kw, plan=ExecPlan(kernel="compiled"))
    ref = random_feature_propagation(ei, 6, x0, 3, "adj", **kw, plan=ExecPlan(kernel="tensor"))
    norms = ref.reshape(6, 3, 4, 4).norm(dim=0)  # [draws, steps + 1, columns]
    assert bool((norms[:, 1:] < 1e-12).any())  # the cut happened
    torch.testing.assert_close(ours, ref, atol=1e-10, rtol=0)


def test_propagation_qr_zeroes_columns_beyond_the_rank():
    """n = 3 nodes, d = 5 columns: 3 orthonormal columns and 2 zero ones, in every block."""
    ei = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])
    x0 = torch.randn(3, 1, 5, generator=torch.Generator().manual_seed(0))
    out = random_feature_propagation(ei, 3, x0, 3,
        plan=ExecPlan(kernel="compiled")).reshape(3, 4, 5)
    norms = out.norm(dim=0)
    assert torch.allclose(norms[:, :3], torch.ones(4, 3), atol=1e-6)
    assert bool((norms[:, 3:] == 0).all())


@pytest.mark.parametrize("kernel", ["compiled", "tensor"])
def test_rank_cut_does_not_depend_on_node_order(kernel):
    # blocks whose second column's remainder is the rank cut itself (1e-6 of the block's
    # scale): summed in node order, rounding moves it to either side, so relabelling the
    # nodes used to change whether the column was kept (in ~70% of such blocks)
    gen = torch.Generator().manual_seed(0)
    n = 40
    path = torch.stack([torch.arange(n - 1), torch.arange(1, n)])
    path = torch.cat([path, path.flip(0)], 1)
    plan = ExecPlan(kernel=kernel)
    for _ in range(20):
        u, w = torch.randn(n, dtype=torch.float64, generator=gen), torch.randn(
            n, dtype=torch.float64, generator=gen)
        w = w - u * (u @ w) / (u @ u)
        x0 = torch.stack([u, u + 1e-6 * u.norm() * w / w.norm()], 1).unsqueeze(1)
        want = random_feature_propagation(path, n, x0, 0, "rw", dtype=torch.float64,
                                          plan=ExecPlan(kernel="compiled"))
        for _ in range(5):
            perm = torch.randperm(n, generator=gen)
            inv = torch.empty_like(perm)
            inv[perm] = torch.arange(n)
            got = random_feature_propagation(inv[path], n, x0[perm], 0, "rw",
                                             dtype=torch.float64, plan=plan)
            torch.testing.assert_close(got, want[perm], atol=1e-9, rtol=0)
