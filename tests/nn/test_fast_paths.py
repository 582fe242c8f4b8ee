"""The GPS layer's fast paths against the reference: every configuration each path declares to
cover (``graphpe.layers.fused.fused_covers``, ``StaticGPS.unsupported``) runs it and gives the
reference's outputs, gradients and running statistics; every other configuration falls back
to the reference (the fused CPU layer) or is refused with the declared reason (static shapes).

The reference is the module-by-module ``GPSLayer`` (``layer.fused = False``)."""

import copy
import itertools

import pytest
import torch

import graphpe.layers.fused as fused_module
from graphpe.encodings import resolve_pe, transforms_of
from graphpe.layers.fused import fused_covers
from graphpe.nn import StaticGPS, static_batch
from graphpe.nn.build import build_model
from graphpe.synthetic import molecule_like_graphs

MPNNS = ["gine", "gin", "gatedgcn", None]
ATTENTIONS = ["multihead", "linear", None]
NORMS = ["batch_norm", "layer_norm", None]
PAIRS = [None, "rrwp", "spd"]
GRID = [dict(zip(("mpnn", "attention", "norm", "pair"), values, strict=True))
        for values in itertools.product(MPNNS, ATTENTIONS, NORMS, PAIRS)
        if values[:2] != (None, None) and not (values[1] != "multihead" and values[3])]
# the settings besides the layer's kinds that a path's declaration reads, on the covered base
BASE = {"mpnn": "gine", "attention": "multihead", "norm": "batch_norm", "pair": None}
GRID += [{**BASE, **extra} for extra in (
    {"dropout": 0.1}, {"reinject_pe": True}, {"pe_combine": "concat", "reinject_pe": True},
    {"graph_token": True, "pool": "token"}, {"pair": "rrwp", "reinject_pe": True},
    {"pool": "mean"}, {"pool": "max"})]


def _id(config) -> str:
    return "-".join(f"{k}={v}" for k, v in config.items())


def _batch(pair):
    graphs = molecule_like_graphs(5, min_nodes=4, max_nodes=11, seed=7)
    gen = torch.Generator().manual_seed(7)
    for g in graphs:
        g.x = torch.randint(0, 4, (g.num_nodes, 1), generator=gen)
        g.edge_attr = torch.randint(0, 3, (g.edge_index.size(1),), generator=gen)
        g.y = torch.randn(1, generator=gen)
    specs = resolve_pe("rwse:walk_length=4" + ("" if pair is None else f",{pair}"))
    from torch_geometric.data import Batch

    batch = Batch.from_data_list(graphs)
    for t in transforms_of(specs):
        batch = t(batch)
    return batch, specs


def _model(config, specs, **extra):
    from graphpe.encodings import pair_model_config, pe_model_config

    torch.manual_seed(0)
    model_config = {"model": "gps", "channels": 16, "layers": 2, "out_dim": 1,
                    "node_vocab": 4, "edge_vocab": 3, "heads": 4,
                    "pe": pe_model_config(specs), **extra,
                    **{k: v for k, v in config.items() if k != "pair"}}
    if config["pair"] is not None:
        model_config["pair"] = pair_model_config(specs)
    return build_model(model_config)


def _reference(model):
    ref = copy.deepcopy(model)
    for layer in ref.layers:
        layer.fused = False
    return ref


def _step(model, batch):
    model.train()
    model.zero_grad()
    torch.manual_seed(1)  # attention dropout keys: the same on both paths
    out = model(batch)
    out.square().sum().backward()
    return out


def _assert_same(model, ref, out, out_ref, rtol=1e-4, atol=1e-5):
    torch.testing.assert_close(out, out_ref, rtol=rtol, atol=atol)
    for (name, p), q in zip(ref.named_parameters(), model.parameters(), strict=True):
        if p.grad is None:
            assert q.grad is None, name
        else:
            torch.testing.assert_close(q.grad, p.grad, rtol=1e-3, atol=1e-4, msg=name)
    for (name, p), q in zip(ref.named_buffers(), model.buffers(), strict=True):
        torch.testing.assert_close(q, p, rtol=1e-5, atol=1e-6, msg=name)


@pytest.fixture
def fused_calls(monkeypatch):
    """How often the fused layer ran (training: its autograd function; evaluation without
    autograd: its inference function)."""
    calls = {"train": 0, "eval": 0}
    apply, inference = fused_module._FusedGPSLayer.apply, fused_module.fused_inference

    def counted_apply(*args):
        calls["train"] += 1
        return apply(*args)

    def counted_inference(*args, **kwargs):
        calls["eval"] += 1
        return inference(*args, **kwargs)

    monkeypatch.setattr(fused_module._FusedGPSLayer, "apply", counted_apply)
    monkeypatch.setattr(fused_module, "fused_inference", counted_inference)
    return calls


@pytest.mark.parametrize("attn_dropout", [0.0, 0.3])
@pytest.mark.parametrize("config", GRID, ids=_id)
def test_the_fused_cpu_layer_runs_what_it_covers_and_equals_the_reference(config, attn_dropout,
                                                                          fused_calls):
    if attn_dropout and config["attention"] != "multihead":
        pytest.skip("attention dropout is refused without multihead attention")
    batch, specs = _batch(config["pair"])
    model = _model(config, specs, attn_dropout=attn_dropout)
    ref = _reference(model)
    covered = all(fused_covers(layer) for layer in model.train().layers)
    out, out_ref = _step(model, batch), _step(ref, batch)
    assert fused_calls["train"] == (len(model.layers) if covered else 0)
    _assert_same(model, ref, out, out_ref)
    model.eval()
    ref.eval()
    covered = all(fused_covers(layer) for layer in model.layers)
    with torch.no_grad():
        out, out_ref = model(batch), ref(batch)
    assert fused_calls["eval"] == (len(model.layers) if covered else 0)
    torch.testing.assert_close(out, out_ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("config", GRID, ids=_id)
def test_static_shapes_run_what_they_cover_and_equal_the_reference(config):
    batch, specs = _batch(config["pair"])
    model = _model(config, specs, attn_dropout=0.0)
    reason = StaticGPS.unsupported(model)
    if reason is not None:
        with pytest.raises(ValueError, match=f"^{reason.split(':')[0]}"):
            StaticGPS(model)
        assert (config["attention"] == "linear" or config["norm"] == "layer_norm"
                or config.get("graph_token"))
        return
    static_model = copy.deepcopy(model)
    sb = static_batch(batch, num_graphs=8, graph_size=16, num_edges=512)
    if config.get("dropout"):  # the two paths draw their dropout masks in other shapes
        model.eval()
        static_model.eval()
        with torch.no_grad():
            torch.testing.assert_close(StaticGPS(static_model)(sb)[: batch.num_graphs],
                                       model(batch), rtol=1e-4, atol=1e-5)
        return
    out = _step(model, batch)
    static_model.train()
    static_model.zero_grad()
    out_static = StaticGPS(static_model)(sb)[: batch.num_graphs]
    out_static.square().sum().backward()
    _assert_same(static_model, model, out_static, out)
