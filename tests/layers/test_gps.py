"""GPSLayer over the modules it is given: the branch contract (what a module declares decides
how it is called and what the layer returns), one return type, and a fast path that says why
it declines."""

from __future__ import annotations

import copy
import logging
import warnings

import pytest
import torch
from torch import nn
from torch_geometric.nn import GCNConv

from graphpe.layers.attention import MultiheadGraphAttention, layout_from_batch
from graphpe.layers.conv import GatedGCNLayer, GINLayer
from graphpe.layers.gps import GPSLayer, GPSOutput
from graphpe.layers.grit import GRITAttention
from graphpe.layers.linear_attention import LinearAttention, PerformerAttention

FUSED = "_FusedGPSLayerBackward"


def _graphs(sizes=(5, 7, 4), channels=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    ptr = torch.tensor([0, *sizes]).cumsum(0)
    batch = torch.repeat_interleave(torch.arange(len(sizes)), torch.tensor(sizes))
    edges = [torch.randint(int(a), int(b), (2, 2 * (int(b) - int(a))), generator=g)
             for a, b in zip(ptr[:-1], ptr[1:], strict=True)]
    edge_index = torch.cat(edges, 1)
    x = torch.randn(int(ptr[-1]), channels, generator=g)
    edge_attr = torch.randn(edge_index.size(1), channels, generator=g)
    return x, edge_index, batch, edge_attr


def _gine(channels=8):
    return GINLayer(nn.Sequential(nn.Linear(channels, channels), nn.ReLU(),
                                  nn.Linear(channels, channels)))


def _reference(layer, x, edge_index, batch, edge_attr):
    """The layer's maths written out over its submodules, module by module (no GPSLayer code):
    norm3(h + mlp(h)), h = norm1(x + conv(x)) + norm2(x + attn(x))."""
    h_m = layer.norm1(x + layer.conv(x, edge_index, edge_attr))
    h_a = layer.norm2(x + layer.attn(x, layout_from_batch(batch, x.size(0))))
    h = h_m + h_a
    return layer.norm3(h + layer.mlp(h))


def test_a_changed_activation_declines_the_fused_path_says_why_and_trains_module_by_module(
        caplog):
    torch.manual_seed(0)
    x, edge_index, batch, edge_attr = _graphs()
    layer = GPSLayer(8, _gine(), MultiheadGraphAttention(8, 2))
    # the layer as built runs fused
    assert layer(x.requires_grad_(), edge_index, batch, edge_attr).x.grad_fn.name() == FUSED
    layer.mlp[1] = nn.GELU()  # the feed-forward block's activation changed
    with caplog.at_level(logging.DEBUG, logger="graphpe.layers.fused"):
        out = layer(x, edge_index, batch, edge_attr).x
    assert out.grad_fn.name() != FUSED
    reasons = [r.getMessage() for r in caplog.records if r.name == "graphpe.layers.fused"]
    assert reasons and "mlp[1] is GELU, not ReLU" in reasons[0], reasons

    target = torch.randn(x.shape, generator=torch.Generator().manual_seed(1))
    x = x.detach()
    reference = copy.deepcopy(layer)
    opt = torch.optim.Adam(layer.parameters(), lr=1e-2)
    ref_opt = torch.optim.Adam(reference.parameters(), lr=1e-2)
    losses = []
    for _ in range(8):
        opt.zero_grad()
        ref_opt.zero_grad()
        loss = (layer(x, edge_index, batch, edge_attr).x - target).square().mean()
        ref_loss = (_reference(reference, x, edge_index, batch, edge_attr)
                    - target).square().mean()
        loss.backward()
        ref_loss.backward()
        torch.testing.assert_close(loss, ref_loss, rtol=1e-5, atol=1e-6)
        for (name, p), q in zip(layer.named_parameters(), reference.parameters(), strict=True):
            torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-6, msg=name)
        opt.step()
        ref_opt.step()
        losses.append(loss.item())
    for a, b in zip(layer.buffers(), reference.buffers(), strict=True):
        torch.testing.assert_close(a, b)
    assert losses[-1] < 0.7 * losses[0], losses


def test_the_activation_is_an_argument_as_in_gpsconv(caplog):
    x, edge_index, batch, edge_attr = _graphs()
    layer = GPSLayer(8, _gine(), MultiheadGraphAttention(8, 2), act="gelu")
    assert isinstance(layer.mlp[1], nn.GELU)
    with caplog.at_level(logging.DEBUG, logger="graphpe.layers.fused"):
        layer(x, edge_index, batch, edge_attr)
    assert any("mlp[1] is GELU" in r.getMessage() for r in caplog.records)


def test_every_declined_setting_is_named(caplog):
    x, edge_index, batch, edge_attr = _graphs()

    def reason(layer, **kwargs):
        caplog.clear()
        args = dict(x=x, edge_index=edge_index, batch=batch, edge_attr=edge_attr)
        args.update(kwargs)
        with caplog.at_level(logging.DEBUG, logger="graphpe.layers.fused"):
            layer(**args)
        return " | ".join(r.getMessage() for r in caplog.records)

    gin = GINLayer(nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 8)),
                   edge_features=False)
    assert "conv is GIN" in reason(GPSLayer(8, gin, MultiheadGraphAttention(8, 2)),
                                   edge_attr=None)
    assert "attn is LinearAttention" in reason(GPSLayer(8, _gine(), LinearAttention(8, 2)))
    assert "conv is None" in reason(GPSLayer(8, None, MultiheadGraphAttention(8, 2)))
    assert "branch dropout 0.1" in reason(GPSLayer(8, _gine(), MultiheadGraphAttention(8, 2),
                                                   dropout=0.1))
    assert "norm1: the norm is LayerNorm" in reason(
        GPSLayer(8, _gine(), MultiheadGraphAttention(8, 2), norm="layer_norm"))
    layer = GPSLayer(8, _gine(), MultiheadGraphAttention(8, 2))
    layer.conv.nn[1] = nn.Tanh()
    assert "conv.nn[1] is Tanh, not ReLU" in reason(layer)
    layer = GPSLayer(8, _gine(), MultiheadGraphAttention(8, 2))
    layer.fused = False
    assert "fused is False" in reason(layer)
    layer.fused = True
    assert "evaluation under autograd" in reason(layer.eval())
    assert "x and edge_attr are not CPU float32" in reason(
        copy.deepcopy(layer).train().double(), x=x.double(), edge_attr=edge_attr.double())


def test_the_fused_gine_model_layer_says_why_it_declines(caplog):
    from torch_geometric.data import Batch, Data

    from graphpe.nn import GINE

    x, edge_index, _, _ = _graphs(channels=1)
    data = Data(x=(x.abs() * 5).long() % 4, edge_index=edge_index,
                edge_attr=torch.zeros(edge_index.size(1), dtype=torch.long))
    model = GINE(8, 2, 1, node_vocab=4, edge_vocab=2)
    model.convs[0].nn[2] = nn.GELU()
    with caplog.at_level(logging.DEBUG, logger="graphpe.layers.fused_gine"):
        model(Batch.from_data_list([data]))
    reasons = [r.getMessage() for r in caplog.records]
    assert any("conv.nn[2] is GELU, not ReLU" in r for r in reasons), reasons


def test_static_shapes_log_why_they_decline(caplog):
    from graphpe.nn import GPS, StaticGPS

    model = GPS(8, 1, 1, node_vocab=4, attention="linear", heads=2)
    with caplog.at_level(logging.DEBUG, logger="graphpe.nn.static"), \
            pytest.raises(ValueError, match="LinearAttention"):
        StaticGPS(model)
    assert any("LinearAttention" in r.getMessage() for r in caplog.records)


class EdgeMLP(nn.Module):
    """A message-passing module outside graphpe that follows the contract: it reads
    ``edge_index`` and ``edge_attr`` and sums ``MLP(x_j + e_ji)`` into each node."""

    reads = ("edge_index", "edge_attr")

    def __init__(self, channels):
        super().__init__()
        self.lin = nn.Linear(channels, channels)

    def forward(self, x, edge_index, edge_attr):
        msg = self.lin(x[edge_index[0]] + edge_attr)
        return torch.zeros_like(x).index_add(0, edge_index[1], msg)


def test_any_module_following_the_contract_is_a_branch():
    torch.manual_seed(0)
    x, edge_index, batch, edge_attr = _graphs()
    layer = GPSLayer(8, EdgeMLP(8), PerformerAttention(8, 2), norm=None).eval()
    out = layer(x, edge_index, batch, edge_attr)
    assert isinstance(out, GPSOutput) and out.edge_attr is None and out.pair_attr is None
    expected = x + layer.conv(x, edge_index, edge_attr) + x + layer.attn(x, batch, 3)
    torch.testing.assert_close(out.x, expected + layer.mlp(expected))
    # a PyG convolution declares nothing: it is called as conv(x, edge_index)
    pyg = GPSLayer(8, GCNConv(8, 8), None, norm=None).eval()
    h = x + pyg.conv(x, edge_index)
    with pytest.warns(UserWarning, match=r"^GPSLayer: edge_attr is given, but the conv "
                                         r"declares no `reads` and is called as conv\(x, "
                                         r"edge_index\), so the edge features are unused"):
        torch.testing.assert_close(pyg(x, edge_index, batch, edge_attr).x, h + pyg.mlp(h))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # without edge_attr, or with a conv that reads it
        pyg(x, edge_index, batch)
        layer(x, edge_index, batch, edge_attr)


def test_bad_branches_are_refused():
    class Silent(nn.Module):
        def forward(self, x):
            return x

    with pytest.raises(ValueError, match="needs an MPNN, an attention, or both"):
        GPSLayer(8, None, None)
    with pytest.raises(ValueError, match="attn Silent must declare `reads`"):
        GPSLayer(8, None, Silent())
    Silent.reads = ("nodes",)
    with pytest.raises(ValueError, match=r"Silent.reads names \['nodes'\]"):
        GPSLayer(8, Silent(), None)
    x, edge_index, batch, edge_attr = _graphs()
    layer = GPSLayer(8, _gine(), LinearAttention(8, 2))
    with pytest.raises(ValueError, match=r"pair biases \(pair_bias\) need a branch that reads"):
        layer(x, edge_index, batch, edge_attr, pair_bias=torch.zeros(2, 2),
              pair_index=torch.tensor([[0, 1], [1, 0]]))
    with pytest.raises(ValueError, match=r"edge weights \(edge_weight\) need a branch"):
        GPSLayer(8, None, LinearAttention(8, 2))(x, edge_index, batch,
                                                 edge_weight=torch.ones(edge_index.size(1), 1))


def test_edge_and_pair_updates_come_back_in_their_fields():
    """GatedGCN updates the edges (its own residual), GRIT the pairs (the layer's residual and
    norm_pair): both in one layer, each in its field; a last layer's modules compute none."""
    torch.manual_seed(0)
    x, edge_index, batch, edge_attr = _graphs()
    pair_index = torch.cat([edge_index, edge_index.flip(0)], 1)
    pair_attr = torch.randn(pair_index.size(1), 8)
    layer = GPSLayer(8, GatedGCNLayer(8), GRITAttention(8, 2))
    assert layer.norm_pair is not None
    out = layer(x, edge_index, batch, edge_attr, pair_attr=pair_attr, pair_index=pair_index)
    assert out.edge_attr.shape == edge_attr.shape and out.pair_attr.shape == pair_attr.shape
    last = GPSLayer(8, GatedGCNLayer(8, update_edges=False),
                    GRITAttention(8, 2, update_pairs=False))
    assert last.norm_pair is None
    out = last(x, edge_index, batch, edge_attr, pair_attr=pair_attr, pair_index=pair_index)
    assert out.edge_attr is None and out.pair_attr is None


def test_reset_parameters_reinitializes_every_part():
    torch.manual_seed(0)
    layer = GPSLayer(8, GCNConv(8, 8), PerformerAttention(8, 2), norm="batch_norm")
    with torch.no_grad():
        for p in layer.parameters():
            p.fill_(0.5)
    layer.norm3.module.running_mean.fill_(3.0)
    layer.reset_parameters()
    assert not torch.all(layer.mlp[0].weight == 0.5)
    assert not torch.all(layer.conv.lin.weight == 0.5)
    assert torch.all(layer.norm1.module.weight == 1) and torch.all(layer.norm3.module.bias == 0)
    assert torch.all(layer.norm3.module.running_mean == 0)
