"""RFP's compiled host kernel (``ExecPlan(kernel="compiled")``) against the batched tensor kernel
(``ExecPlan(kernel="tensor")``), on generated batches of awkward graphs and rank-deficient
blocks."""

from __future__ import annotations

import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from torch_geometric.data import Batch, Data

from graphpe.ops import random_feature_propagation
from graphpe.ops.plan import ExecPlan
from graphpe.ops.propagate import propagate, propagation_operator
from graphpe.transforms import RFP
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


# the 9-node star of the reliability sweep's last failure (centre 8, edges in this order)
SWEEP_STAR = torch.tensor([[2, 5, 8, 0, 8, 8, 8, 8, 1, 6, 4, 3, 8, 8, 7, 8],
                           [8, 8, 6, 8, 5, 3, 7, 4, 8, 8, 8, 8, 2, 1, 8, 0]])


def _reference(edge_index, ptr, num_nodes, x0, steps, operator, dtype):
    """:func:`propagate` on the transform's draws cast to the trajectory's dtype, laid out as
    the transform writes it, ``[N, draws, (steps + 1) d]``."""
    op = propagation_operator(edge_index, num_nodes, operator, None, dtype=dtype)
    traj = propagate(op, x0.to(dtype), steps, "qr", ptr=ptr)
    return traj.permute(1, 2, 0, 3).reshape(num_nodes, x0.size(1), -1)


def test_rfp_equals_propagate_on_the_sweep_star():
    """After one step the random-walk operator of a star leaves a rank-2 block whose second
    column's remainder (3e-5 of the block) is noise in float32 and rank in float64: the
    compiled kernel used float64's cut for a float32 trajectory, the tensor path float32's,
    and the trajectories differed by 0.99. Both now cut at the trajectory's precision."""
    data = Data(edge_index=SWEEP_STAR, num_nodes=9)
    out = RFP(8, 4, num_draws=1, operator="rw", seed=7)(data).rfp
    x0 = torch.randn(9, 1, 8, generator=torch.Generator().manual_seed(7))
    want = _reference(SWEEP_STAR, torch.tensor([0, 9]), 9, x0, 4, "rw", torch.float32)
    torch.testing.assert_close(out, want, atol=1e-5, rtol=0)
    tensor = random_feature_propagation(SWEEP_STAR, 9, x0, 4, "rw",
                                        plan=ExecPlan(kernel="tensor"))
    torch.testing.assert_close(out, tensor, atol=1e-5, rtol=0)


def _low_rank_graph(kind: str, a: int, b: int) -> tuple[torch.Tensor, int]:
    """Graphs whose operators have low rank or repeated eigenvalues: a star, a complete
    bipartite graph, a path, a cycle, a complete graph, and a star with a path hanging off."""
    if kind == "star":
        pairs, n = [(0, i) for i in range(1, a + 2)], a + 2
    elif kind == "bipartite":
        pairs, n = [(i, a + j) for i in range(a) for j in range(b)], a + b
    elif kind == "path":
        pairs, n = [(i, i + 1) for i in range(a + b)], a + b + 1
    elif kind == "cycle":
        n = a + b + 2
        pairs = [(i, (i + 1) % n) for i in range(n)]
    elif kind == "complete":
        n = a + 1
        pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    else:  # a star whose last leaf starts a path
        pairs = [(0, i) for i in range(1, a + 2)] + [(a + 1 + i, a + 2 + i) for i in range(b)]
        n = a + b + 2
    src = torch.tensor([p[0] for p in pairs] + [p[1] for p in pairs])
    dst = torch.tensor([p[1] for p in pairs] + [p[0] for p in pairs])
    return torch.stack([src, dst]), n


low_rank_graphs = st.tuples(
    st.sampled_from(["star", "bipartite", "path", "cycle", "complete", "broom"]),
    st.integers(1, 6), st.integers(1, 6))


@settings(max_examples=60, deadline=None)
@given(st.lists(low_rank_graphs, min_size=1, max_size=4),
       st.sampled_from(["gcn", "adj", "rw", "lap_shift"]), st.integers(1, 8),
       st.integers(1, 4), st.integers(0, 299))
def test_rfp_transform_equals_propagate_on_low_rank_operators(specs, operator, dim, steps,
                                                              seed):
    """The transform (compiled kernel) equals :func:`propagate` (tensor kernels) on its own
    draws, graph by graph and in a batch, on operators whose blocks lose rank."""
    graphs = [Data(edge_index=ei, num_nodes=n) for ei, n in
              (_low_rank_graph(*spec) for spec in specs)]
    transform = RFP(dim, steps, num_draws=1, operator=operator, seed=seed)
    for graph in graphs:
        out = RFP(dim, steps, num_draws=1, operator=operator, seed=seed)(graph.clone()).rfp
        x0 = torch.randn(graph.num_nodes, 1, dim, generator=torch.Generator().manual_seed(seed))
        want = _reference(graph.edge_index, torch.tensor([0, graph.num_nodes]),
                          graph.num_nodes, x0, steps, operator, torch.float32)
        torch.testing.assert_close(out, want, atol=2e-4, rtol=0)
    batch = Batch.from_data_list(graphs)
    out = transform(batch.clone()).rfp
    x0 = torch.randn(batch.num_nodes, 1, dim, generator=torch.Generator().manual_seed(seed))
    want = _reference(batch.edge_index, batch.ptr, batch.num_nodes, x0, steps, operator,
                      torch.float32)
    torch.testing.assert_close(out, want, atol=2e-4, rtol=0)


@settings(max_examples=60, deadline=None)
@given(st.lists(low_rank_graphs, min_size=1, max_size=3),
       st.sampled_from(["gcn", "adj", "rw", "lap_shift"]), st.integers(2, 6),
       st.integers(0, 3), st.integers(0, 2**16), st.floats(-7.0, -2.0))
def test_compiled_rank_cut_equals_propagate_on_nearly_dependent_draws(
        specs, operator, dim, steps, seed, log_gap):
    """Draws whose second column lies ``10^log_gap`` off the first's span put a block's
    remainder anywhere from below float64's cut to above float32's: the compiled kernel
    (float64 iterates, float32 trajectory) keeps exactly the columns float32 ``propagate``
    keeps."""
    # a remainder within float32's rounding of the cut (1e-4) may go either way
    assume(abs(log_gap + 4.0) > 0.3)
    graphs = [Data(edge_index=ei, num_nodes=n) for ei, n in
              (_low_rank_graph(*spec) for spec in specs)]
    batch = Batch.from_data_list(graphs)
    n = batch.num_nodes
    gen = torch.Generator().manual_seed(seed)
    x0 = torch.randn(n, 1, dim, generator=gen, dtype=torch.float64)
    noise = torch.randn(n, 1, generator=gen, dtype=torch.float64)
    x0[:, :, 1] = x0[:, :, 0] + 10.0**log_gap * noise * x0[:, :, 0].norm() / noise.norm()
    x0 = x0.float()
    out = random_feature_propagation(batch.edge_index, n, x0, steps, operator, ptr=batch.ptr,
                                     plan=ExecPlan(kernel="compiled"))
    want = _reference(batch.edge_index, batch.ptr, n, x0, steps, operator, torch.float32)
    # float32 propagate's rounding grows as 1 / remainder: up to ~1e-3 for a column kept just
    # above the cut (a column cut on one side and kept on the other differs by ~1)
    torch.testing.assert_close(out, want, atol=5e-3, rtol=0)
