"""The one-node GPS layer (graphpe.layers.fused) against the module-by-module path."""

from __future__ import annotations

import copy

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import graphpe.layers.fused as fused_module
from graphpe.layers.attention import graph_layout
from graphpe.layers.gps import GPSLayer
from graphpe.nn import GPS
from graphpe.nn.transformers import gps_branches


def _layer(channels: int = 8, heads: int = 2, attn_dropout: float = 0.0, mpnn: str = "gine",
           **kwargs) -> GPSLayer:
    """A GPS layer of GINE (or ``mpnn``) and multi-head attention, as the GPS model builds."""
    return GPSLayer(channels, *gps_branches(channels, mpnn, "multihead", heads=heads,
                                            attn_dropout=attn_dropout), **kwargs)


def _graphs(sizes: list[int], channels: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    ptr = torch.tensor([0, *sizes]).cumsum(0)
    batch = torch.repeat_interleave(torch.arange(len(sizes)), torch.tensor(sizes))
    src, dst = [], []
    for a, b in zip(ptr[:-1].tolist(), ptr[1:].tolist(), strict=True):
        count = 2 * (b - a)
        src.append(torch.randint(a, b, (count,), generator=g))
        dst.append(torch.randint(a, b, (count,), generator=g))
    edge_index = torch.stack([torch.cat(src), torch.cat(dst)])
    x = torch.randn(int(ptr[-1]), channels, generator=g)
    edge_attr = torch.randn(edge_index.size(1), channels, generator=g)
    return x, edge_index, batch, edge_attr, ptr


def _run(layer, x, edge_index, batch, edge_attr, layout, grad, seed=0, pairs=None):
    x = x.clone().requires_grad_()
    edge_attr = edge_attr.clone().requires_grad_()
    bias, index = (None, None) if pairs is None else (pairs[0].clone().requires_grad_(),
                                                      pairs[1])
    torch.manual_seed(seed)  # the attention dropout's keys
    out = layer(x, edge_index, batch, edge_attr, layout, pair_bias=bias, pair_index=index).x
    inputs = [x, edge_attr, *([] if bias is None else [bias]), *layer.parameters()]
    grads = torch.autograd.grad(out, inputs, grad)
    return out, grads


def _pairs(ptr, heads: int, seed: int):
    """Pair biases on most ordered pairs of each graph (some left out), ``[P, heads]``."""
    g = torch.Generator().manual_seed(seed)
    pairs = [(a + i, a + j) for a, b in zip(ptr[:-1].tolist(), ptr[1:].tolist(), strict=True)
             for i in range(b - a) for j in range(b - a) if (i + 2 * j) % 5]
    index = torch.tensor(pairs, dtype=torch.long).reshape(-1, 2).t()
    return torch.randn(index.size(1), heads, generator=g), index


@settings(max_examples=25, deadline=None)
@given(sizes=st.lists(st.integers(1, 12), min_size=1, max_size=6).filter(lambda s: sum(s) > 1),
       max_buckets=st.integers(1, 3), heads=st.sampled_from([1, 2, 4]),
       attn_dropout=st.sampled_from([0.0, 0.5]), eps=st.sampled_from([0.0, 0.25]),
       seed=st.integers(0, 2**16), with_pairs=st.booleans())
def test_fused_layer_equals_the_module_path(sizes, max_buckets, heads, attn_dropout, eps, seed,
                                            with_pairs):
    """Output, the gradients of x, edge_attr, the pair biases (with_pairs) and every
    parameter, and the norms' running statistics are those of the module path (the same
    dropout masks: the same keys)."""
    channels = 8
    x, edge_index, batch, edge_attr, ptr = _graphs(sizes, channels, seed)
    torch.manual_seed(seed)
    fused = _layer(channels, heads, attn_dropout)
    fused.conv.eps.fill_(eps)
    plain = copy.deepcopy(fused)
    plain.fused = False
    layout = graph_layout(ptr, max_buckets=max_buckets, bucket_overhead=0)
    grad = torch.randn(x.shape, generator=torch.Generator().manual_seed(seed + 1))
    pairs = _pairs(ptr, heads, seed) if with_pairs else None
    got, got_grads = _run(fused, x, edge_index, batch, edge_attr, layout, grad, pairs=pairs)
    want, want_grads = _run(plain, x, edge_index, batch, edge_attr, layout, grad, pairs=pairs)
    assert got.grad_fn.name() == "_FusedGPSLayerBackward"
    assert want.grad_fn.name() != "_FusedGPSLayerBackward"
    assert torch.allclose(got, want, atol=1e-5)
    names = ["x", "edge_attr", *(["pair_bias"] if with_pairs else []),
             *(n for n, _ in fused.named_parameters())]
    exact = None
    for name, a, b in zip(names, got_grads, want_grads, strict=True):
        if torch.allclose(a, b, atol=2e-4, rtol=1e-4):
            continue
        # an ill-conditioned case (batch norms over two rows amplify float32 rounding): the
        # fused gradient must then be as close to the float64 module path as the float32
        # module path is
        if exact is None:
            reference = copy.deepcopy(plain).double()
            exact = dict(zip(names, _run(reference, x.double(), edge_index, batch,
                                         edge_attr.double(), layout, grad.double(),
                                         pairs=None if pairs is None else (
                                             pairs[0].double(), pairs[1]))[1], strict=True))
        fused_error = (a.double() - exact[name]).abs().max()
        module_error = (b.double() - exact[name]).abs().max()
        assert fused_error <= 4 * module_error + 1e-6, name
    for (name, a), b in zip(fused.named_buffers(), plain.buffers(), strict=True):
        assert torch.allclose(a.double(), b.double(), atol=1e-6), name


@settings(max_examples=25, deadline=None)
@given(sizes=st.lists(st.integers(1, 12), min_size=1, max_size=6).filter(lambda s: sum(s) > 1),
       max_buckets=st.integers(1, 3), heads=st.sampled_from([1, 2, 4]),
       eps=st.sampled_from([0.0, 0.25]), inference_mode=st.booleans(),
       seed=st.integers(0, 2**16), with_pairs=st.booleans())
def test_fused_inference_equals_the_module_path(sizes, max_buckets, heads, eps,
                                                inference_mode, seed, with_pairs):
    """Evaluation without autograd: the output of the module path (running statistics from
    a few training steps), and the running statistics left unchanged."""
    channels = 8
    x, edge_index, batch, edge_attr, ptr = _graphs(sizes, channels, seed)
    torch.manual_seed(seed)
    fused = _layer(channels, heads, 0.5)
    fused.conv.eps.fill_(eps)
    layout = graph_layout(ptr, max_buckets=max_buckets, bucket_overhead=0)
    for _ in range(3):  # running statistics away from their initial 0 and 1
        fused(x * 2 + 1, edge_index, batch, edge_attr, layout)
    fused.eval()
    plain = copy.deepcopy(fused)
    plain.fused = False
    buffers = [b.clone() for b in fused.buffers()]
    bias, index = _pairs(ptr, heads, seed) if with_pairs else (None, None)
    with torch.inference_mode() if inference_mode else torch.no_grad():
        got = fused(x, edge_index, batch, edge_attr, layout, pair_bias=bias,
                    pair_index=index).x
        want = plain(x, edge_index, batch, edge_attr, layout, pair_bias=bias,
                     pair_index=index).x
    assert torch.allclose(got, want, atol=1e-5, rtol=1e-5)
    assert all(torch.equal(a, b) for a, b in zip(fused.buffers(), buffers, strict=True))


def test_fused_gps_training_matches_the_module_path_against_float64():
    """A 3-layer GPS, one forward and backward on 40 small graphs: every float32 gradient of
    the fused path is as close to the float64 module path as the float32 module path is."""
    torch.manual_seed(0)
    from torch_geometric.data import Batch, Data

    graphs = []
    for i in range(40):
        x, edge_index, _, edge_attr, _ = _graphs([3 + i % 9], 1, i)
        graphs.append(Data(x=(x.abs() * 5).long() % 6, edge_index=edge_index,
                           edge_attr=(edge_attr.abs() * 5).long().squeeze(-1) % 3,
                           y=torch.randn(1)))
    batch = Batch.from_data_list(graphs)
    fused = GPS(16, 3, 1, node_vocab=6, edge_vocab=3, heads=4, attn_dropout=0.0)
    plain = copy.deepcopy(fused)
    for layer in plain.layers:
        layer.fused = False
    exact = copy.deepcopy(plain).double()
    grads = []
    for model in (fused, plain, exact):
        model.train()
        model(batch).square().sum().backward()
        grads.append([p.grad.double() for p in model.parameters()])
    for name, f, p, e in zip((n for n, _ in fused.named_parameters()), *grads, strict=True):
        assert (f - e).abs().max() <= 2 * (p - e).abs().max() + 1e-5, name
    # evaluation without autograd (the fused inference) after that step: the same output
    with torch.no_grad():
        outs = [model.eval()(batch).double() for model in (fused, plain, exact)]
    assert (outs[0] - outs[2]).abs().max() <= 2 * (outs[1] - outs[2]).abs().max() + 1e-5


def test_fused_path_runs_only_where_it_computes_the_layer():
    x, edge_index, batch, edge_attr, ptr = _graphs([5, 7], 8, 0)
    layout = graph_layout(ptr)

    def path(layer, **kwargs):
        args = dict(x=x.clone().requires_grad_(), edge_index=edge_index, batch=batch,
                    edge_attr=edge_attr, layout=layout)
        args.update(kwargs)
        return layer(**args).x.grad_fn.name()

    fused = "_FusedGPSLayerBackward"
    layer = _layer()
    assert path(layer) == fused
    assert path(layer, layout=None) == fused  # the layout built from batch
    assert path(layer.eval()) != fused  # evaluation under autograd: the module path
    calls = []
    real = fused_module.fused_inference

    def counted(*args):
        calls.append(1)
        return real(*args)

    fused_module.fused_inference = counted
    try:
        with torch.no_grad():
            layer(x, edge_index, batch, edge_attr, layout)
        assert calls == [1]  # evaluation without autograd: fused
        layer.norm1.module.track_running_stats = False  # batch statistics in eval: module path
        layer.norm1.module.running_mean = layer.norm1.module.running_var = None
        with torch.no_grad():
            layer(x, edge_index, batch, edge_attr, layout)
        assert calls == [1]
    finally:
        fused_module.fused_inference = real
    layer = _layer()
    layer.train()
    layer.fused = False
    assert path(layer) != fused
    layer.fused = True
    seen = []
    handle = layer.mlp.register_forward_hook(lambda *args: seen.append(1))
    assert path(layer) != fused and seen  # a hook on a submodule runs
    handle.remove()
    assert path(copy.deepcopy(layer).double(), x=x.double().requires_grad_(),
                edge_attr=edge_attr.double()) != fused
    assert path(_layer(dropout=0.1)) != fused
    assert path(_layer(norm="layer_norm")) != fused
    assert path(_layer(mpnn="gin"), edge_attr=None) != fused
    pairs = torch.tensor([[0, 1], [1, 0]])
    # pair biases: fused in float32 (checked against the module path above)
    assert path(layer, pair_bias=torch.zeros(2, 2), pair_index=pairs) == fused
    assert path(layer, pair_bias=torch.zeros(2, 2, dtype=torch.float64),
                pair_index=pairs) != fused
    assert path(layer, edge_weight=torch.ones(edge_index.size(1), 1)) != fused
    # a linear map without its bias, or one under a parametrization: the module path
    no_bias = _layer()
    no_bias.mlp[0] = torch.nn.Linear(8, 16, bias=False)
    assert path(no_bias) != fused
    from torch.nn.utils import parametrize

    param = _layer()
    parametrize.register_parametrization(param.conv.nn[0], "weight", torch.nn.Identity())
    assert path(param) != fused


def test_fused_path_follows_the_forms_the_modules_declare(caplog):
    """The fused layer runs a conv or attention by the form it declares, not by its class: a
    subclass that keeps the forward is fused (equal to the module path), one that overrides
    it declares no form and runs module by module, and says why."""
    from graphpe.layers.attention import MultiheadGraphAttention
    from graphpe.layers.common import form_of
    from graphpe.layers.conv import GINLayer

    class Tagged(GINLayer):  # the same maths: the same form
        pass

    class Doubled(GINLayer):  # another function
        def forward(self, x, edge_index, edge_attr=None, edge_weight=None):
            return 2.0 * super().forward(x, edge_index, edge_attr, edge_weight)

    class Declared(Doubled):  # claims a form: its author vouches for it
        form = "gin"

    class Scaled(MultiheadGraphAttention):
        def forward(self, x, *args, **kwargs):
            return 0.5 * super().forward(x, *args, **kwargs)

    assert (Tagged.form, Doubled.form, Declared.form, Scaled.form) == ("gin", None, "gin", None)
    assert form_of(torch.nn.Linear(2, 2)) is None
    x, edge_index, batch, edge_attr, ptr = _graphs([5, 7], 8, 0)
    layout = graph_layout(ptr)
    reference = _layer()
    for kind, swap, fused in ((Tagged, "conv", True), (Doubled, "conv", False),
                              (Scaled, "attn", False)):
        layer = copy.deepcopy(reference)
        module = getattr(layer, swap)
        module.__class__ = kind
        assert fused_module.fused_covers(layer) is fused
        out = layer(x.clone().requires_grad_(), edge_index, batch, edge_attr, layout).x
        assert (out.grad_fn.name() == "_FusedGPSLayerBackward") is fused
        layer.fused = False  # the module path, the reference
        expected = layer(x, edge_index, batch, edge_attr, layout).x
        torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-5)
    layer = copy.deepcopy(reference)
    layer.conv.__class__ = Doubled
    assert form_of(layer.conv) is None and form_of(layer.attn) == "multihead"
    with caplog.at_level("DEBUG", logger="graphpe.layers.fused"):
        layer(x.clone().requires_grad_(), edge_index, batch, edge_attr, layout)
    assert "conv is Doubled, which does not declare GINLayer's form 'gin' (GINE)" in caplog.text


def test_fused_layer_rejects_node_ids_out_of_range():
    x, edge_index, batch, edge_attr, ptr = _graphs([5, 7], 8, 0)
    bad = edge_index.clone()
    bad[0, 0] = 12
    layer = _layer()
    with pytest.raises(ValueError, match=r"edge_index holds node ids outside \[0, 12\)"):
        layer(x, bad, batch, edge_attr, graph_layout(ptr))


@pytest.mark.slow
def test_compiled_gps_runs_the_fused_layers_eagerly(monkeypatch):
    """Under ``torch.compile`` the fused layers run eagerly (a graph break each) and the step
    is the eager one: the same loss and gradients."""
    from graphpe.runtime import compile_support

    if compile_support("cpu") is not None:
        pytest.skip(compile_support("cpu"))
    from torch_geometric.data import Batch, Data

    graphs = []
    for i in range(12):
        x, edge_index, _, edge_attr, _ = _graphs([4 + i % 5], 1, i)
        graphs.append(Data(x=(x.abs() * 5).long() % 6, edge_index=edge_index,
                           edge_attr=(edge_attr.abs() * 5).long().squeeze(-1) % 3))
    batch = Batch.from_data_list(graphs)
    torch.manual_seed(0)
    eager = GPS(16, 2, 1, node_vocab=6, edge_vocab=3, heads=2)
    compiled = copy.deepcopy(eager)
    import graphpe.layers.gps as gps

    fused_outputs = []

    def counted(*args):
        out = real(*args)
        fused_outputs.append(out is not None)
        return out

    real = gps.fused_forward
    monkeypatch.setattr(gps, "fused_forward", counted)
    out = torch.compile(compiled, dynamic=True)(batch)
    assert fused_outputs == [True, True]  # both layers fused, each run once
    want = eager(batch)
    assert torch.allclose(out, want, atol=1e-5)
    out.sum().backward()
    want.sum().backward()
    for (name, a), b in zip(compiled.named_parameters(), eager.parameters(), strict=True):
        assert torch.allclose(a.grad, b.grad, atol=1e-4, rtol=1e-4), name
