import pytest
import torch
from torch_geometric.data import Batch, Data
from torch_geometric.transforms import AddRandomWalkPE

from graphpe.ops import random_walk_landing_probs
from graphpe.ops.plan import ExecPlan


def pyg_rwse(data: Data, steps: int) -> torch.Tensor:
    return AddRandomWalkPE(steps)(data.clone()).random_walk_pe


@pytest.mark.parametrize("steps", [1, 2, 7, 16, 21])
def test_equals_pyg_per_graph(families, steps):
    for name, data in families.items():
        ours = random_walk_landing_probs(data.edge_index, data.num_nodes, steps)
        ref = pyg_rwse(data, steps)
        assert ours.shape == (data.num_nodes, steps)
        assert torch.allclose(ours, ref, atol=1e-6), name


@pytest.mark.parametrize("dense_max_nodes", [512, 6, 0])
def test_batch_equals_per_graph_dense_and_sparse(families, dense_max_nodes):
    graphs = list(families.values())
    batch = Batch.from_data_list(graphs)
    ours = random_walk_landing_probs(
        batch.edge_index, batch.num_nodes, 16, ptr=batch.ptr,
            plan=ExecPlan(dense_max_nodes=dense_max_nodes)
    )
    ref = torch.cat([pyg_rwse(g, 16) for g in graphs])
    assert torch.allclose(ours, ref, atol=1e-6)


def test_weighted_graph_matches_dense_reference():
    torch.manual_seed(0)
    n = 9
    a = torch.rand(n, n, dtype=torch.float64) * (torch.rand(n, n) < 0.4)
    a = torch.triu(a, 1)
    a = a + a.T
    ei = a.nonzero().T
    w = a[ei[0], ei[1]]
    deg = a.sum(1)
    p = a / torch.where(deg > 0, deg, 1.0)[:, None]
    ref, m = [], torch.eye(n, dtype=torch.float64)
    for _ in range(6):
        m = m @ p
        ref.append(m.diagonal())
    ref = torch.stack(ref, 1)
    for dmax in (512, 0):
        ours = random_walk_landing_probs(ei, n, 6, edge_weight=w.float(),
            plan=ExecPlan(dense_max_nodes=dmax))
        assert torch.allclose(ours.double(), ref, atol=1e-6)


def test_directed_input_is_symmetrized():
    directed = torch.tensor([[0, 1, 2], [1, 2, 3]])
    undirected = torch.cat([directed, directed.flip(0)], 1)
    a = random_walk_landing_probs(directed, 4, 5)
    b = random_walk_landing_probs(undirected, 4, 5)
    assert torch.equal(a, b)


def test_empty_and_isolated():
    out = random_walk_landing_probs(torch.zeros(2, 0, dtype=torch.long), 0, 4)
    assert out.shape == (0, 4)
    out = random_walk_landing_probs(torch.zeros(2, 0, dtype=torch.long), 3, 4)
    assert torch.equal(out, torch.zeros(3, 4))


def test_bad_walk_length():
    with pytest.raises(ValueError, match="walk_length must be a positive int"):
        random_walk_landing_probs(torch.zeros(2, 0, dtype=torch.long), 3, 0)


def test_memory_bounded_groups_give_the_same_result(families):
    graphs = list(families.values())
    batch = Batch.from_data_list(graphs)
    full = random_walk_landing_probs(batch.edge_index, batch.num_nodes, 6, ptr=batch.ptr)
    small = random_walk_landing_probs(batch.edge_index, batch.num_nodes, 6, ptr=batch.ptr,
        plan=ExecPlan(max_dense_bytes=2000))
    assert torch.equal(full, small)


@pytest.mark.parametrize("self_loops", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_one_graph_call_equals_the_batched_kernel(families, self_loops, dtype):
    # a single graph without ptr takes one fused compiled call; with ptr, the batched path
    for name, data in families.items():
        loops = torch.arange(min(3, data.num_nodes)).repeat(2, 1)
        ei = torch.cat([data.edge_index, loops], 1)
        one_ptr = torch.tensor([0, data.num_nodes])
        ref = random_walk_landing_probs(ei, data.num_nodes, 9, ptr=one_ptr, dtype=dtype,
                                        self_loops=self_loops)
        # contiguous, and a strided view as a dataset's graph is
        wide = torch.cat([ei, torch.zeros_like(ei)], 1)[:, : ei.size(1)]
        for edges in (ei, wide):
            ours = random_walk_landing_probs(edges, data.num_nodes, 9, dtype=dtype,
                                             self_loops=self_loops)
            assert ours.dtype == dtype
            assert torch.equal(ours, ref), name


@pytest.mark.parametrize("bad", [5, -1])
def test_one_graph_call_refuses_an_index_out_of_range(bad):
    ei = torch.tensor([[0, 1, 2], [1, 2, bad]])
    with pytest.raises(ValueError, match=rf"edge_index contains node index {bad}, out of "
                                         r"range for num_nodes=5"):
        random_walk_landing_probs(ei, 5, 4)
