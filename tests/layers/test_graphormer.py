"""Graphormer (graphpe.nn.transformers.Graphormer, graphpe.layers.graphormer.GraphormerLayer)
against its formulation graph by graph, as microsoft/Graphormer computes it on a padded
batch."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.data import Batch, Data

from graphpe.nn import (
    GraphormerLayer,
    PairFeatureEncoder,
    StaticGPS,
    build_model,
    graph_layout,
)
from graphpe.nn.transformers import Graphormer
from graphpe.transforms import SPD

SIZES = (5, 1, 7, 3, 2)


def _graph(n: int, seed: int) -> Data:
    gen = torch.Generator().manual_seed(seed)
    pairs = [(i, i + 1) for i in range(n - 1)]
    if n > 3:
        pairs.append((0, n - 1))  # a ring: several shortest paths
    ei = torch.tensor(pairs, dtype=torch.long).t().reshape(2, -1)
    ei = torch.cat([ei, ei.flip(0)], 1)
    data = Data(x=torch.randint(0, 5, (n, 2), generator=gen), edge_index=ei,
                edge_attr=torch.randint(0, 3, (ei.size(1), 1), generator=gen),
                y=torch.randn(1, generator=gen), num_nodes=n)
    return SPD(4, path_hops=2)(data)


@pytest.fixture
def graphs():
    return [_graph(n, seed) for seed, n in enumerate(SIZES)]


def _model(**overrides) -> Graphormer:
    config = {"model": "graphormer", "channels": 16, "layers": 2, "out_dim": 1,
              "node_vocab": 5, "edge_vocab": 3, "heads": 4, "pe": {"degree": {}},
              "pair": {"spd": {"max_dist": 4, "path_hops": 2}}}
    config.update(overrides)
    torch.manual_seed(0)
    return build_model(config)


def _dense_attention(attn, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """Softmax attention over the rows ``x [n, C]`` with the logit bias ``[heads, n, n]``."""
    out, _ = F.multi_head_attention_forward(
        x[:, None], x[:, None], x[:, None], x.size(1), attn.heads, attn.in_proj_weight,
        attn.in_proj_bias, None, None, False, 0.0, attn.out_proj.weight, attn.out_proj.bias,
        training=False, need_weights=False, attn_mask=bias)
    return out[:, 0]


def _dense_layer(layer: GraphormerLayer, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """GraphormerGraphEncoderLayer's forward (post- or pre-norm), in evaluation."""
    def ffn(h):
        return layer.fc2(F.gelu(layer.fc1(h)))

    if layer.pre_norm:
        x = x + _dense_attention(layer.attn, layer.attn_norm(x), bias)
        return x + ffn(layer.ffn_norm(x))
    x = layer.attn_norm(x + _dense_attention(layer.attn, x, bias))
    return layer.ffn_norm(x + ffn(x))


@pytest.mark.parametrize("pre_norm", [False, True])
def test_layer_equals_graphormers_layer_graph_by_graph(pre_norm):
    torch.manual_seed(0)
    layer = GraphormerLayer(16, heads=4, ffn_channels=24, pre_norm=pre_norm).eval()
    sizes = [4, 1, 6]
    ptr = torch.tensor([0, 4, 5, 11])
    graph = torch.repeat_interleave(torch.arange(3), torch.tensor(sizes))
    x = torch.randn(11, 16)
    # a bias on every pair of each graph
    pairs = torch.cat([torch.cartesian_prod(torch.arange(a, b), torch.arange(a, b)).t()
                       for a, b in zip(ptr[:-1].tolist(), ptr[1:].tolist(), strict=True)], 1)
    bias = torch.randn(pairs.size(1), 4)
    with torch.no_grad():
        got = layer(x, graph_layout(ptr), bias, pairs)
        for g, (a, b) in enumerate(zip(ptr[:-1].tolist(), ptr[1:].tolist(), strict=True)):
            dense = torch.zeros(4, b - a, b - a)
            mine = graph[pairs[0]] == g
            dense[:, pairs[0, mine] - a, pairs[1, mine] - a] = bias[mine].t()
            torch.testing.assert_close(got[a:b], _dense_layer(layer, x[a:b], dense),
                                       rtol=1e-5, atol=1e-5)


def _dense_model(model: Graphormer, batch: Batch) -> torch.Tensor:
    """GraphormerGraphEncoder + the graph-prediction head, graph by graph: the token in front
    of the node features (atom embeddings plus the degree encoding), the spatial and edge
    encodings as a dense bias with the virtual distance on the token's row and column, the
    input layer norm, the layers, the head on the token's final state."""
    h0 = model.node_input(batch.x) + model.encode_pe(batch)
    bias, pair_index = model.pair_encoder(batch)
    t = model.graph_token.virtual_distance
    outs = []
    for g in range(batch.num_graphs):
        lo, hi = int(batch.ptr[g]), int(batch.ptr[g + 1])
        n = hi - lo
        dense = torch.zeros(t.numel(), n + 1, n + 1)
        mine = (pair_index[0] >= lo) & (pair_index[0] < hi)
        dense[:, pair_index[0, mine] - lo + 1, pair_index[1, mine] - lo + 1] = bias[mine].t()
        dense[:, 0, :] += t[:, None]
        dense[:, 1:, 0] += t[:, None]
        x = model.input_norm(torch.cat([model.graph_token.embedding[None], h0[lo:hi]]))
        for layer in model.layers:
            x = _dense_layer(layer, x, dense)
        outs.append(x[0])
    return model.head(torch.stack(outs))


@pytest.mark.parametrize("pre_norm", [False, True])
def test_model_equals_graphormers_formulation(graphs, pre_norm):
    model = _model(pre_norm=pre_norm).eval()
    batch = Batch.from_data_list(graphs)
    with torch.no_grad():
        torch.testing.assert_close(model(batch), _dense_model(model, batch), rtol=1e-5,
                                   atol=1e-5)


def test_graphs_do_not_see_each_other_and_node_order_does_not_matter(graphs):
    model = _model().eval()
    batch = Batch.from_data_list(graphs)
    with torch.no_grad():
        full = model(batch)
        alone = torch.cat([model(Batch.from_data_list([g])) for g in graphs])
        torch.testing.assert_close(full, alone, rtol=1e-5, atol=1e-5)
        permuted = []
        for seed, g in enumerate(graphs[::-1]):
            perm = torch.randperm(g.num_nodes, generator=torch.Generator().manual_seed(seed))
            inv = torch.empty_like(perm)
            inv[perm] = torch.arange(g.num_nodes)
            edge_perm = torch.randperm(g.num_edges,
                                       generator=torch.Generator().manual_seed(seed))
            # (path edges are positions in the graph's edge_index: recomputed by SPD)
            p = Data(x=g.x[perm], edge_index=inv[g.edge_index][:, edge_perm],
                     edge_attr=g.edge_attr[edge_perm], y=g.y, num_nodes=g.num_nodes)
            permuted.append(SPD(4, path_hops=2)(p))
        out = model(Batch.from_data_list(permuted))
    torch.testing.assert_close(out, full.flip(0), rtol=1e-5, atol=1e-5)


def test_training_step_reaches_every_parameter(graphs):
    model = _model(dropout=0.1).train()
    out = model(Batch.from_data_list(graphs))
    out.square().sum().backward()
    missing = [n for n, p in model.named_parameters() if p.grad is None]
    assert not missing
    assert model.edge_input is None  # the edges enter through the path encoding only
    assert all(torch.isfinite(p.grad).all() for p in model.parameters())


def test_graphormer_init_and_slim_shape():
    model = build_model({"model": "graphormer", "channels": 80, "layers": 12, "out_dim": 1,
                         "node_vocab": 28, "pe": {"degree": {}}, "pair": {"spd": {}},
                         "dropout": 0.0})
    assert isinstance(model, Graphormer) and len(model.layers) == 12
    layer = model.layers[0]
    assert layer.attn.heads == 8 and layer.fc1.out_features == 80  # graphormer_slim
    weights = torch.cat([p.detach().flatten() for n, p in model.named_parameters()
                         if n.endswith("weight") and p.dim() == 2 and not n.startswith("head")
                         and "norm" not in n])
    assert abs(weights.std().item() - 0.02) < 0.002
    biases = [p for n, p in model.named_parameters() if n.endswith("bias")
              and not n.startswith("head") and "norm" not in n]
    assert all(torch.count_nonzero(b) == 0 for b in biases)
    # the head keeps torch's initialization (outside Graphormer's encoder)
    assert model.head[0].weight.std().item() > 0.05
    plain = build_model({"model": "graphormer", "channels": 80, "layers": 1, "out_dim": 1,
                         "node_vocab": 28, "graphormer_init": False})
    assert plain.layers[0].fc1.weight.std().item() > 0.05


def test_options_and_exact_errors(graphs):
    batch = Batch.from_data_list(graphs)
    no_token = _model(graph_token=False).eval()
    assert no_token.pool == "sum" and no_token.graph_token is None
    with torch.no_grad():
        assert no_token(batch).shape == (len(SIZES), 1)
    assert _model().pool == "token"
    with pytest.raises(ValueError, match=r"^pool='token' reads the graph token: it needs "
                                         r"graph_token=True$"):
        _model(graph_token=False, pool="token")
    with pytest.raises(ValueError, match=r"^Graphormer's pair_encoder gives attention biases "
                                         r"\(a PairBiasEncoder\), got PairFeatureEncoder$"):
        Graphormer(16, 1, 1, heads=4, node_vocab=5,
                   pair_encoder=PairFeatureEncoder(16, 5, "rrwp"))
    with pytest.raises(ValueError, match=r"^ffn_channels must be a positive int, got 0$"):
        _model(ffn_channels=0)
    with pytest.raises(ValueError, match=r"^act_dropout must be in \[0, 1\), got 1.0$"):
        _model(act_dropout=1.0)
    with pytest.raises(ValueError, match=r"^StaticGPS runs a GPS model, got Graphormer$"):
        StaticGPS(_model())
    node = _model(task="node_classification", out_dim=3).eval()
    with torch.no_grad():
        assert node(batch).shape == (sum(SIZES), 3)


def test_float64_and_layer_norm_per_node(graphs):
    model = _model().double().eval()
    with torch.no_grad():
        assert model(Batch.from_data_list(graphs)).dtype == torch.float64
    assert all(type(m) is nn.LayerNorm for layer in model.layers
               for m in (layer.attn_norm, layer.ffn_norm))
