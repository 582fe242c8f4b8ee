"""Every kernel on a CUDA device matches its CPU result (skipped without a GPU)."""

import copy

import pytest
import torch
from torch_geometric.data import Batch

from graphpe.ops import laplacian_eigenpairs, random_walk_landing_probs
from graphpe.ops.curvature import curvature_bounds, forman_curvature, node_profile
from graphpe.ops.plan import ExecPlan
from graphpe.ops.propagate import propagate, propagation_operator

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")]


@pytest.fixture()
def batch(families):
    return Batch.from_data_list([g for g in families.values() if g.num_nodes > 0])


def test_rwse_and_lappe_on_cuda(batch):
    cuda = batch.clone().to("cuda")  # Batch.to works in place
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
    cuda = batch.clone().to("cuda")  # Batch.to works in place
    op_gpu = propagation_operator(cuda.edge_index, cuda.num_nodes, "gcn")
    gpu = propagate(op_gpu, x0.cuda(), 4, normalization, ptr=cuda.ptr)
    assert torch.allclose(gpu.cpu(), cpu, atol=1e-5)


def test_curvature_fast_tier_on_cuda(batch):
    cuda = batch.clone().to("cuda")  # Batch.to works in place
    for fn in (lambda e, n: curvature_bounds(e, n)[0], lambda e, n: forman_curvature(e, n, True)):
        cpu = fn(batch.edge_index, batch.num_nodes)
        gpu = fn(cuda.edge_index, cuda.num_nodes)
        assert torch.allclose(gpu.cpu(), cpu, atol=1e-5)
        prof = node_profile(cuda.edge_index, cuda.num_nodes, gpu)
        assert torch.allclose(prof.cpu(), node_profile(batch.edge_index, batch.num_nodes, cpu),
                              atol=1e-5)


def test_exact_orc_and_profiles_on_cuda(batch):
    from graphpe.ops.curvature import ollivier_ricci

    cuda = batch.clone().to("cuda")  # Batch.to works in place
    cpu = ollivier_ricci(batch.edge_index, batch.num_nodes)
    gpu = ollivier_ricci(cuda.edge_index, cuda.num_nodes)
    assert gpu.device.type == "cuda"
    assert torch.allclose(gpu.cpu(), cpu, atol=1e-6)


@pytest.mark.parametrize("backend", ["auto", "torch", "host", "cupy"])
def test_batched_eigh_backends_match_cpu(backend):
    from graphpe.ops.eigen import dense as be

    if backend == "cupy" and not be.cupy_available():
        pytest.skip("CuPy not installed")
    gen = torch.Generator().manual_seed(0)
    mats = []
    for b, n in ((64, 20), (64, 38), (8, 100)):
        a = torch.randn(b, n, n, generator=gen)
        mats.append((a + a.transpose(1, 2)) / n)
    cpu = be.batched_eigh([m.double() for m in mats])
    gpu = be.batched_eigh([m.cuda() for m in mats], backend)
    for (cv, _), (gv, gu), m in zip(cpu, gpu, mats, strict=True):
        assert gv.device.type == "cuda" and gu.shape == m.shape
        assert torch.allclose(gv.cpu().double(), cv, atol=1e-4)
        res = m.cuda() @ gu - gu * gv.unsqueeze(1)
        assert res.abs().max() < 1e-4


def test_lappe_cupy_and_host_paths_agree_on_mid_sized_graphs():
    import networkx as nx

    from tests.conftest import nx_to_data

    graphs = [nx_to_data(nx.connected_watts_strogatz_graph(n, 4, 0.3, seed=n))
              for n in (40, 40, 57, 120)]
    batch = Batch.from_data_list(graphs)
    cpu = laplacian_eigenpairs(batch.edge_index, batch.num_nodes, 6, ptr=batch.ptr)
    cuda = batch.clone().to("cuda")  # Batch.to works in place
    for backend in ("auto", "host"):
        gpu = laplacian_eigenpairs(cuda.edge_index, cuda.num_nodes, 6, ptr=cuda.ptr,
            plan=ExecPlan(eigh_backend=backend))
        assert torch.allclose(gpu.eigvals.cpu(), cpu.eigvals, atol=1e-4)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_chebyshev_sparse_path_on_cuda(dtype):
    import networkx as nx

    from tests.conftest import nx_to_data

    data = nx_to_data(nx.disjoint_union(nx.grid_2d_graph(40, 41), nx.cycle_graph(100)))
    n = data.num_nodes
    cpu = laplacian_eigenpairs(data.edge_index, n, 8, dtype=torch.float64,
                               plan=ExecPlan(dense_max_nodes=64, sparse_solver="chebyshev"))
    gpu = laplacian_eigenpairs(data.edge_index.cuda(), n, 8, dtype=torch.float64,
                               plan=ExecPlan(dense_max_nodes=64, sparse_solver="chebyshev",
                                             compute_dtype=dtype))
    assert gpu.eigvecs.device.type == "cuda"
    assert torch.allclose(gpu.eigvals.cpu(), cpu.eigvals, atol=1e-6)


@pytest.mark.parametrize("normalization", ["sym", "rw", "none"])
def test_graph_structure_kernels_on_cuda(batch, normalization):
    from graphpe.ops import connected_components, degree, laplacian, undirected_simple

    cuda = batch.clone().to("cuda")  # Batch.to works in place
    n = batch.num_nodes
    cpu_lap = laplacian(batch.edge_index, n, normalization=normalization).to_dense()
    gpu_lap = laplacian(cuda.edge_index, n, normalization=normalization).to_dense()
    assert torch.allclose(gpu_lap.cpu(), cpu_lap, atol=1e-6)
    assert torch.equal(connected_components(cuda.edge_index, n).cpu(),
                       connected_components(batch.edge_index, n))
    cpu_g, gpu_g = undirected_simple(batch.edge_index, n), undirected_simple(cuda.edge_index, n)
    assert torch.equal(gpu_g.edge_index.cpu(), cpu_g.edge_index)
    assert torch.allclose(degree(gpu_g.edge_index, n).cpu(), degree(cpu_g.edge_index, n))


def test_normalization_and_orthonormalize_on_cuda(batch):
    from graphpe.ops import normalize_per_graph, orthonormalize

    x = torch.randn(batch.num_nodes, 12, dtype=torch.float64)
    for mode in ("qr", "l2"):
        cpu = normalize_per_graph(x, batch.ptr, mode, 4)
        gpu = normalize_per_graph(x.cuda(), batch.ptr.cuda(), mode, 4)
        assert torch.allclose(gpu.cpu(), cpu, atol=1e-8)
    tall = torch.randn(5000, 16, dtype=torch.float64)
    assert torch.allclose(orthonormalize(tall.cuda()).cpu(), orthonormalize(tall), atol=1e-8)


def test_augmented_forman_on_cuda(batch):
    cuda = batch.clone().to("cuda")  # Batch.to works in place
    for augmented in (False, True):
        cpu = forman_curvature(batch.edge_index, batch.num_nodes, augmented)
        gpu = forman_curvature(cuda.edge_index, cuda.num_nodes, augmented)
        assert torch.allclose(gpu.cpu(), cpu, atol=1e-5)


@pytest.mark.parametrize("max_buckets", [1, 3])
def test_gps_attention_and_step_on_cuda(max_buckets):
    """The bucketed attention core and a GPS training step give the CPU's numbers on CUDA."""
    from graphpe.layers.attention import _GraphAttentionCore
    from graphpe.nn import GPS, graph_layout

    sizes = torch.tensor([7, 3, 12, 5, 9])
    ptr = torch.cat([torch.zeros(1, dtype=torch.long), sizes.cumsum(0)])
    qkv = torch.randn(int(sizes.sum()), 24, dtype=torch.float64, requires_grad=True)
    outs = []
    for device in ("cpu", "cuda"):
        layout = graph_layout(ptr.to(device), max_buckets=max_buckets, bucket_overhead=0,
                              dtype=torch.float64)
        x = qkv.detach().to(device).requires_grad_()
        out = _GraphAttentionCore.apply(x, None, layout, 2, 0.0, None)
        (grad,) = torch.autograd.grad(out.square().sum(), x)
        outs.append((out.detach().cpu(), grad.cpu()))
    assert torch.allclose(outs[0][0], outs[1][0], atol=1e-10)
    assert torch.allclose(outs[0][1], outs[1][1], atol=1e-10)
    torch.manual_seed(0)
    model = GPS(16, 2, 1, node_vocab=5, edge_vocab=3, attention_buckets=max_buckets)
    from tests.nn.test_models import make_batch

    batch = make_batch()
    losses = []
    for device in ("cpu", "cuda"):
        m = copy.deepcopy(model).to(device).eval()
        losses.append(float(m(batch.to(device)).sum()))
    assert losses[0] == pytest.approx(losses[1], rel=1e-4, abs=1e-4)


def test_spectral_kernels_on_cuda(batch):
    """Heat kernels, HKdiagSE, ElstaticSE and resistance (one float64 eigendecomposition per
    graph through batched_eigh) on CUDA equal the CPU result."""
    from graphpe.ops.spectral import electrostatic_encoding, heat_kernel_diagonals
    from graphpe.ops.walk import heat_kernels, resistance_distances

    cuda = batch.clone().to("cuda")  # Batch.to works in place
    for fn, kwargs in ((heat_kernel_diagonals, {"times": [0.5, 2.0]}),
                       (electrostatic_encoding, {"per_component": True}),
                       (electrostatic_encoding, {})):
        cpu = fn(batch.edge_index, batch.num_nodes, ptr=batch.ptr, **kwargs)
        gpu = fn(cuda.edge_index, cuda.num_nodes, ptr=cuda.ptr, **kwargs)
        assert gpu.device.type == "cuda"
        torch.testing.assert_close(gpu.cpu(), cpu, atol=1e-5, rtol=1e-5)
    for fn, args in ((heat_kernels, ([0.5, 2.0],)), (resistance_distances, ())):
        cpu = fn(batch.edge_index, batch.num_nodes, *args, ptr=batch.ptr)
        gpu = fn(cuda.edge_index, cuda.num_nodes, *args, ptr=cuda.ptr)
        assert torch.equal(gpu.pair_index.cpu(), cpu.pair_index)
        torch.testing.assert_close(gpu.values.cpu(), cpu.values, atol=1e-5, rtol=1e-5)


def test_rrwp_and_spd_on_cuda(batch):
    """RRWP (the batched tensor kernel CUDA takes) and SPD on CUDA equal the CPU result."""
    from graphpe.ops.walk import relative_random_walk_probs, shortest_path_distances

    cuda = batch.clone().to("cuda")  # Batch.to works in place
    cpu = relative_random_walk_probs(batch.edge_index, batch.num_nodes, 6, ptr=batch.ptr)
    gpu = relative_random_walk_probs(cuda.edge_index, cuda.num_nodes, 6, ptr=cuda.ptr)
    assert gpu.values.device.type == "cuda"
    assert torch.equal(gpu.pair_index.cpu(), cpu.pair_index)
    torch.testing.assert_close(gpu.values.cpu(), cpu.values, atol=1e-5, rtol=1e-5)
    for local in (False, True):  # local: pairs within 4 hops, computed on the host
        cpu = shortest_path_distances(batch.edge_index, batch.num_nodes, 4, ptr=batch.ptr,
                                      local=local)
        gpu = shortest_path_distances(cuda.edge_index, cuda.num_nodes, 4, ptr=cuda.ptr,
                                      local=local)
        assert gpu.values.device.type == "cuda"
        assert torch.equal(gpu.pair_index.cpu(), cpu.pair_index)
        assert torch.equal(gpu.values.cpu(), cpu.values)
    cpu = relative_random_walk_probs(batch.edge_index, batch.num_nodes, 4, ptr=batch.ptr, hops=2)
    gpu = relative_random_walk_probs(cuda.edge_index, cuda.num_nodes, 4, ptr=cuda.ptr, hops=2)
    assert gpu.values.device.type == "cuda" and torch.equal(gpu.values.cpu(), cpu.values)


@pytest.mark.parametrize("spec", [
    {"pair": {"rrwp": {"num_steps": 5}}},
    {"model": "grit", "pair": {"rrwp": {"num_steps": 5}}},
    {"pe": {"spe": {"k": 6, "m": 4, "rho_hidden": 8, "rho_layers": 2}}},
    {"pe": {"pearl": {"variant": "basis", "layers": 2, "hidden": 8, "pe_dim": 8}}},
    {"pe": {"pearl": {"variant": "random", "num_samples": 8, "layers": 2, "hidden": 8,
                      "pe_dim": 8}}},
    {"mpnn": "gatedgcn"},
    {"model": "gatedgcn"},
    {"attention": "performer"},
])
def test_pair_bias_spe_and_pearl_models_on_cuda(spec):
    """GPS with an RRWP attention bias, GRIT and GatedGCN (alone and in GPS; the torch
    formulations on CUDA against the compiled kernels on the CPU), and models with SPE (masked
    BatchNorm in rho) and PEARL encoders: eval outputs on CUDA equal the CPU's, and a training
    step runs there."""
    from graphpe.nn import build_model
    from graphpe.transforms import RRWP
    from tests.nn.test_models import make_batch

    batch = make_batch()
    if "pair" in spec:
        batch = RRWP(5)(batch)
    torch.manual_seed(0)
    attention = {} if spec.get("model") == "gatedgcn" else {"heads": 2}
    model = build_model({"model": "gps", "channels": 16, "layers": 2, "out_dim": 1,
                         "node_vocab": 5, "edge_vocab": 3, **attention, **spec})
    outs = []
    for device in ("cpu", "cuda"):
        m = copy.deepcopy(model).to(device).eval()
        with torch.no_grad():
            outs.append(m(batch.to(device)).cpu())
    torch.testing.assert_close(outs[1], outs[0], atol=1e-4, rtol=1e-4)
    m = copy.deepcopy(model).to("cuda").train()
    m(batch.to("cuda")).square().sum().backward()
    assert all(p.grad is not None for p in m.parameters() if p.requires_grad)


@pytest.mark.parametrize("compute_on", ["auto", "host", "device"])
def test_on_the_fly_pe_host_and_device_paths_on_cuda(batch, compute_on):
    """OnTheFlyPE on a CUDA batch: ``host`` (and ``auto`` for these small graphs) computes by
    the CPU kernels, exactly the CPU result, and returns CUDA tensors; ``device`` computes on
    the GPU and agrees within float32 tolerance (RWSE, eigenvalues; RFP's float32 rank cut may
    decide a borderline column differently from the host's float64 one, so only its shape)."""
    from graphpe.transforms import RFP, RWSE, LaplacianPE, OnTheFlyPE

    def transforms():
        return [RWSE(8), LaplacianPE(4), RFP(4, 3, seed=3)]

    ref = OnTheFlyPE(transforms())(batch)
    cuda = batch.clone().to("cuda")  # Batch.to works in place
    out = OnTheFlyPE(transforms(), compute_on=compute_on)(cuda)
    for name in ("rwse", "lap_pe", "lap_eigvals", "lap_mask", "rfp"):
        assert out[name].device.type == "cuda"
        assert out[name].dtype == ref[name].dtype
        if compute_on != "device":
            assert torch.equal(out[name].cpu(), ref[name])
    assert torch.allclose(out.rwse.cpu(), ref.rwse, atol=1e-5)
    assert torch.allclose(out.lap_eigvals.cpu(), ref.lap_eigvals, atol=1e-4)
    assert torch.equal(out.lap_mask.cpu(), ref.lap_mask)
    assert out.rfp.shape == ref.rfp.shape and bool(out.rfp.isfinite().all())
