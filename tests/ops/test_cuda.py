"""Every kernel on a CUDA device matches its CPU result (skipped without a GPU)."""

import pytest
import torch
from torch_geometric.data import Batch

from graphpe.ops import laplacian_eigenpairs, random_walk_landing_probs
from graphpe.ops.curvature import curvature_bounds, forman_curvature, node_profile
from graphpe.ops.propagate import propagate, propagation_operator

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")]


@pytest.fixture()
def batch(families):
    return Batch.from_data_list([g for g in families.values() if g.num_nodes > 0])


def test_rwse_and_lappe_on_cuda(batch):
    cuda = batch.to("cuda")
    cpu_rw = random_walk_landing_probs(batch.edge_index, batch.num_nodes, 8, ptr=batch.ptr)
    gpu_rw = random_walk_landing_probs(cuda.edge_index, cuda.num_nodes, 8, ptr=cuda.ptr)
    assert torch.allclose(gpu_rw.cpu(), cpu_rw, atol=1e-5)
    cpu = laplacian_eigenpairs(batch.edge_index, batch.num_nodes, 4, ptr=batch.ptr)
    gpu = laplacian_eigenpairs(cuda.edge_index, cuda.num_nodes, 4, ptr=cuda.ptr)
    assert torch.allclose(gpu.eigvals.cpu(), cpu.eigvals, atol=1e-4)
    assert torch.equal(gpu.mask.cpu(), cpu.mask)


@pytest.mark.parametrize("normalization", ["qr", "l2"])
def test_rfp_on_cuda(batch, normalization):
    x0 = torch.randn(batch.num_nodes, 2, 4)
    op = propagation_operator(batch.edge_index, batch.num_nodes, "gcn")
    cpu = propagate(op, x0, 4, normalization, ptr=batch.ptr)
    cuda = batch.to("cuda")
    op_gpu = propagation_operator(cuda.edge_index, cuda.num_nodes, "gcn")
    gpu = propagate(op_gpu, x0.cuda(), 4, normalization, ptr=cuda.ptr)
    assert torch.allclose(gpu.cpu(), cpu, atol=1e-5)


def test_curvature_fast_tier_on_cuda(batch):
    cuda = batch.to("cuda")
    for fn in (lambda e, n: curvature_bounds(e, n)[0], lambda e, n: forman_curvature(e, n, True)):
        cpu = fn(batch.edge_index, batch.num_nodes)
        gpu = fn(cuda.edge_index, cuda.num_nodes)
        assert torch.allclose(gpu.cpu(), cpu, atol=1e-5)
        prof = node_profile(cuda.edge_index, cuda.num_nodes, gpu)
        assert torch.allclose(prof.cpu(), node_profile(batch.edge_index, batch.num_nodes, cpu),
                              atol=1e-5)
