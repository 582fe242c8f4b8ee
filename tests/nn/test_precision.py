"""Every model in other precisions than float32: under ``torch.autocast`` (mixed precision)
and converted whole (``model.double()``, ``model.to(torch.bfloat16)``). The forward and
backward run, the gradients are finite, and the output stays close to the float32 one.

On the CPU the layers' compiled host kernels are float32/float64: under autocast a layer whose
products come out in bfloat16/float16 takes its torch formulation (``use_host_kernels``), and
the fused GPS layer steps aside. The same tests with the host kernels switched off run the
torch formulations everywhere, which is what a CUDA device runs.
"""

from __future__ import annotations

import pytest
import torch
from torch_geometric.data import Batch

import graphpe.layers.attention
import graphpe.layers.conv
import graphpe.layers.fused
import graphpe.layers.grit
from graphpe.encodings import pair_model_config, pe_model_config, resolve_pe, transforms_of
from graphpe.layers.fused import may_fuse
from graphpe.layers.grit import signed_sqrt
from graphpe.nn import (
    LearnedRFP,
    RFPEncoder,
    StaticGPS,
    build_model,
    static_batch,
    static_shapes,
)
from graphpe.synthetic import molecule_like_graphs

# every node encoding at once (the spectral ones write their own attributes)
NODE_PE = ("lap:k=4,signnet:k=4,spe:k=4,rwse:walk_length=8,lcp,rfp:dim=4:steps=2,hkdiag,"
           "elstatic,pearl:num_samples=8:layers=2")
CASES = {  # id: (build_model settings, PEs)
    "gine": ({"model": "gine"}, NODE_PE),
    "gps": ({"model": "gps"}, NODE_PE),
    "gps-peg": ({"model": "gps"}, "peg:k=4,rwse:walk_length=8"),
    "gps-linear": ({"model": "gps", "attention": "linear"}, "rwse:walk_length=8"),
    "gps-performer": ({"model": "gps", "attention": "performer"}, "rwse:walk_length=8"),
    "gps-rrwp-bias": ({"model": "gps"}, "rwse:walk_length=8,rrwp:num_steps=4"),
    "gps-spd-bias": ({"model": "gps"}, "rwse:walk_length=8,spd:max_dist=4"),
    "gps-grit-attention": ({"model": "gps", "attention": "grit"}, "rrwp:num_steps=4"),
    "grit-rrwp": ({"model": "grit"}, "rrwp:num_steps=4"),
    "grit-rd": ({"model": "grit"}, "rd"),
    "gcn": ({"model": "gcn"}, "rwse:walk_length=8"),
    "gin": ({"model": "gin"}, "lap:k=4"),
    "gatedgcn": ({"model": "gatedgcn"}, "rwse:walk_length=8"),
    "gps-gatedgcn-peg": ({"model": "gps", "mpnn": "gatedgcn"}, "peg:k=4,rwse:walk_length=8"),
}
# largest |out - out_fp32| / max |out_fp32| measured over these cases: ~0.03 (bfloat16),
# ~0.005 (float16); the bounds leave 2x
TOLERANCE = {torch.bfloat16: 0.06, torch.float16: 0.01}
HOST_KERNEL_USERS = (graphpe.layers.attention, graphpe.layers.conv, graphpe.layers.fused,
                     graphpe.layers.grit)


def _batch(pe: str) -> tuple[Batch, list]:
    specs = resolve_pe(pe)
    transforms = transforms_of(specs)
    gen = torch.Generator().manual_seed(0)
    graphs = []
    for g in molecule_like_graphs(6, min_nodes=6, max_nodes=14, seed=0):
        g.x = torch.randint(0, 5, (g.num_nodes, 1), generator=gen)
        g.edge_attr = torch.randint(0, 3, (g.edge_index.size(1),), generator=gen)
        g.y = torch.randn(1, generator=gen)
        for t in transforms:
            g = t(g)
        graphs.append(g)
    return Batch.from_data_list(graphs), specs


def _model(settings: dict, specs: list) -> torch.nn.Module:
    config = {"channels": 32, "layers": 2, "out_dim": 1, "node_vocab": 5, "edge_vocab": 3,
              "pe": pe_model_config(specs), **settings}
    pair = pair_model_config(specs)
    if pair is not None:
        config["pair"] = pair
    torch.manual_seed(0)
    return build_model(config)


@pytest.fixture(params=[True, False], ids=["host-kernels", "torch-formulations"])
def host_kernels(request, monkeypatch):
    if not request.param:
        for module in HOST_KERNEL_USERS:
            monkeypatch.setattr(module, "use_host_kernels", lambda *tensors: False)
    return request.param


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("case", list(CASES))
def test_training_step_under_autocast(case, dtype, host_kernels):
    settings, pe = CASES[case]
    batch, specs = _batch(pe)
    model = _model(settings, specs).train()
    with torch.autocast("cpu", dtype=dtype):
        out = model(batch)
    assert out.dtype in (dtype, torch.float32)
    loss = (out.float().squeeze(-1) - batch.y).abs().mean()
    loss.backward()
    assert torch.isfinite(loss)
    for name, p in model.named_parameters():
        assert p.grad is None or torch.isfinite(p.grad).all(), name
    assert sum(p.grad is not None for p in model.parameters()) > 0.9 * len(list(
        model.parameters()))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("case", list(CASES))
def test_output_close_to_float32(case, dtype, host_kernels):
    settings, pe = CASES[case]
    batch, specs = _batch(pe)
    model = _model(settings, specs).eval()
    with torch.no_grad():
        ref = model(batch)
        with torch.autocast("cpu", dtype=dtype):
            out = model(batch).float()
    assert ref.dtype == torch.float32
    err = (out - ref).abs().max() / ref.abs().max()
    assert err <= TOLERANCE[dtype], float(err)


def _cast(batch: Batch, dtype: torch.dtype) -> Batch:
    """The batch's float inputs (not the targets) in ``dtype``."""
    batch = batch.clone()
    for key in batch.keys():
        value = batch[key]
        if torch.is_tensor(value) and value.is_floating_point() and key != "y":
            batch[key] = value.to(dtype)
    return batch


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16], ids=["float64", "bfloat16"])
@pytest.mark.parametrize("case", list(CASES))
def test_model_converted_to_another_dtype(case, dtype, host_kernels):
    """``model.to(dtype)`` on inputs of that dtype: computed in it (sparse products in float32
    at least), output of that dtype, close to float32's."""
    settings, pe = CASES[case]
    batch, specs = _batch(pe)
    model = _model(settings, specs).eval()
    with torch.no_grad():
        ref = model(batch)
    model = model.to(dtype)
    with torch.no_grad():
        out = model(_cast(batch, dtype))
    assert out.dtype == dtype
    bound = 1e-5 if dtype == torch.float64 else TOLERANCE[torch.bfloat16]
    assert (out.float() - ref).abs().max() <= bound * ref.abs().max()
    model.train()
    loss = (model(_cast(batch, dtype)).float().squeeze(-1) - batch.y).abs().mean()
    loss.backward()
    assert torch.isfinite(loss)
    assert all(p.grad is None or torch.isfinite(p.grad).all() for p in model.parameters())


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
def test_learned_rfp_under_autocast(dtype):
    """LearnedRFP (propagation inside the model, for users' own GNNs) with its encoder."""
    batch = Batch.from_data_list(molecule_like_graphs(6, min_nodes=6, max_nodes=20, seed=0))
    h = torch.randn(batch.num_nodes, 6)
    model = LearnedRFP(6, dim=4, steps=3, num_draws=2, resample="fixed")
    encoder = RFPEncoder(5, dim=4, steps=3, readout="trajectory")
    ref = encoder(model(h, batch.edge_index, batch.ptr))
    with torch.autocast("cpu", dtype=dtype):
        out = encoder(model(h, batch.edge_index, batch.ptr)).float()
    assert (out - ref).abs().max() <= TOLERANCE[dtype] * ref.abs().max()
    out.sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


def test_static_gps_under_autocast():
    batch, specs = _batch("rwse:walk_length=8")
    model = _model({"model": "gps", "attn_dropout": 0.0}, specs).train()
    graphs = batch.to_data_list()
    sb = static_batch(batch, **static_shapes(graphs, len(graphs)))
    static = StaticGPS(model)
    ref = static(sb)[: sb.graph_count]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = static(sb)[: sb.graph_count]
    out.float().sum().backward()
    assert torch.isfinite(out.float()).all()
    assert (out.float() - ref).abs().max() <= TOLERANCE[torch.bfloat16] * ref.abs().max()


def test_fused_layer_steps_aside_under_autocast():
    batch, specs = _batch("rwse:walk_length=8")
    model = _model({"model": "gps"}, specs).train()
    layer = model.layers[0]
    x = torch.randn(batch.num_nodes, 32)
    edge_attr = torch.randn(batch.num_edges, 32)
    assert may_fuse(layer, x, edge_attr, None, None)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert not may_fuse(layer, x, edge_attr, None, None)
    assert may_fuse(layer, x, edge_attr, None, None)


def test_signed_sqrt_has_a_finite_gradient_at_zero_in_float16():
    x = torch.tensor([0.0, 1e-6, -4.0, 9.0], dtype=torch.float16, requires_grad=True)
    y = signed_sqrt(x)
    y.sum().backward()
    assert y.dtype == torch.float16
    assert torch.isfinite(x.grad).all()
    assert torch.allclose(y[2:].float(), torch.tensor([-2.0, 3.0]), atol=1e-3)


CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


@pytest.mark.gpu
@CUDA
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("case", ["gps", "gps-spd-bias", "gps-linear", "grit-rrwp", "gine"])
def test_cuda_step_under_autocast(case, dtype):
    """What a mixed-precision GPU run does: the step on CUDA under autocast, close to the
    float32 output there, with finite gradients."""
    settings, pe = CASES[case]
    batch, specs = _batch(pe)
    batch = batch.to("cuda")
    model = _model(settings, specs).to("cuda").eval()
    with torch.no_grad():
        ref = model(batch)
        with torch.autocast("cuda", dtype=dtype):
            out = model(batch).float()
    assert (out - ref).abs().max() <= TOLERANCE[dtype] * ref.abs().max()
    model.train()
    with torch.autocast("cuda", dtype=dtype):
        loss = (model(batch).float().squeeze(-1) - batch.y).abs().mean()
    loss.backward()
    assert torch.isfinite(loss)
    assert all(p.grad is None or torch.isfinite(p.grad).all() for p in model.parameters())
