"""Graphormer's graph token (graphpe.layers.graph_token) and GPS(graph_token=True)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch_geometric.data import Batch, Data

from graphpe.layers.graph_token import GraphToken
from graphpe.nn import GPS, StaticGPS, build_model
from graphpe.transforms import RWSE, SPD


def _graph(n: int, seed: int, extra: int = 2) -> Data:
    """A path of ``n`` nodes plus a few random chords, undirected, with categorical
    features."""
    gen = torch.Generator().manual_seed(seed)
    pairs = [(i, i + 1) for i in range(n - 1)]
    for _ in range(extra if n > 2 else 0):
        i, j = torch.randint(0, n, (2,), generator=gen).tolist()
        if i != j:
            pairs.append((i, j))
    ei = torch.tensor(pairs, dtype=torch.long).t().reshape(2, -1)
    ei = torch.cat([ei, ei.flip(0)], 1)
    data = Data(x=torch.randint(0, 5, (n, 1), generator=gen), edge_index=ei,
                edge_attr=torch.randint(0, 3, (ei.size(1), 1), generator=gen),
                y=torch.randn(1, generator=gen), num_nodes=n)
    return SPD(4)(RWSE(4)(data))


SIZES = (5, 1, 7, 3, 2)


@pytest.fixture
def graphs():
    return [_graph(n, seed) for seed, n in enumerate(SIZES)]


def _model(**overrides) -> GPS:
    config = {"model": "gps", "channels": 16, "layers": 2, "out_dim": 1, "node_vocab": 5,
              "edge_vocab": 3, "pe": {"rwse": {"walk_length": 4}},
              "pair": {"spd": {"max_dist": 4}}, "graph_token": True, "pool": "token"}
    config.update(overrides)
    torch.manual_seed(0)
    return build_model(config)


def test_token_rows_edges_and_pairs_are_renumbered_graph_by_graph():
    token = GraphToken(4, heads=2)
    ptr = torch.tensor([0, 2, 3, 6])
    graph = torch.tensor([0, 0, 1, 2, 2, 2])
    edge_index = torch.tensor([[0, 1, 3, 4], [1, 0, 4, 5]])
    pair_index = torch.tensor([[0, 3], [1, 5]])
    pair_bias = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    h = torch.arange(24.0).view(6, 4)
    out, lay = token(h, edge_index, graph, ptr, pair_bias, pair_index)
    assert lay.node_rows.tolist() == [1, 2, 4, 6, 7, 8]
    assert lay.token_rows.tolist() == [0, 3, 5]
    assert lay.ptr.tolist() == [0, 3, 5, 9]
    assert lay.graph.tolist() == [0, 0, 0, 1, 1, 2, 2, 2, 2]
    assert lay.edge_index.tolist() == [[1, 2, 6, 7], [2, 1, 7, 8]]
    assert torch.equal(out[lay.node_rows], h)
    assert torch.equal(out[lay.token_rows], token.embedding.detach().expand(3, -1))
    # the given pairs renumbered with their biases, then every token pair with t
    pairs = list(zip(*lay.pair_index.tolist(), strict=True))
    assert pairs[:2] == [(1, 2), (6, 8)]
    assert torch.equal(lay.pair_bias[:2], pair_bias)
    expected = {(t, t) for t in (0, 3, 5)}
    for t, rows in ((0, (1, 2)), (3, (4,)), (5, (6, 7, 8))):
        expected |= {(t, r) for r in rows} | {(r, t) for r in rows}
    assert len(pairs[2:]) == len(expected) == 3 + 2 * 6
    assert set(pairs[2:]) == expected
    assert torch.equal(lay.pair_bias[2:], token.virtual_distance.detach().expand(15, -1))


def test_one_graph_without_batch_vector_or_ptr():
    token = GraphToken(4, heads=1)
    out, lay = token(torch.randn(3, 4), torch.tensor([[0, 1], [1, 2]]), None, None)
    assert lay.node_rows.tolist() == [1, 2, 3] and lay.token_rows.tolist() == [0]
    assert lay.ptr.tolist() == [0, 4] and out.shape == (4, 4)
    assert lay.pair_bias.shape == (1 + 2 * 3, 1)


def _dense_reference(model: GPS, batch: Batch) -> torch.Tensor:
    """Graphormer's formulation graph by graph (``mpnn=None``, no norms, eval mode): the
    token prepended to the graph's nodes, a dense ``[heads, n + 1, n + 1]`` bias holding the
    SPD bias on the node pairs and ``t`` on the token's row and column, softmax attention with
    the layer's weights, the residuals and the FFN; the head on the token's final state."""
    h0 = model.node_input(batch.x) + model.encode_pe(batch)
    bias, pair_index = model.pair_encoder(batch)
    t = model.graph_token.virtual_distance
    heads = model.graph_token.heads
    outs = []
    for g in range(batch.num_graphs):
        lo, hi = int(batch.ptr[g]), int(batch.ptr[g + 1])
        n = hi - lo
        dense = torch.zeros(heads, n + 1, n + 1)
        mine = (pair_index[0] >= lo) & (pair_index[0] < hi)
        i, j = pair_index[0, mine] - lo + 1, pair_index[1, mine] - lo + 1
        dense[:, i, j] = bias[mine].t()
        dense[:, 0, :] += t[:, None]
        dense[:, 1:, 0] += t[:, None]
        x = torch.cat([model.graph_token.embedding[None], h0[lo:hi]])
        for layer in model.layers:
            attn = layer.attn
            a, _ = F.multi_head_attention_forward(
                x[:, None], x[:, None], x[:, None], x.size(1), heads, attn.in_proj_weight,
                attn.in_proj_bias, None, None, False, 0.0, attn.out_proj.weight,
                attn.out_proj.bias, training=False, need_weights=False, attn_mask=dense)
            x = x + a[:, 0]
            x = x + layer.mlp(x)
        outs.append(x[0])
    return model.head(torch.stack(outs))


def test_gps_with_graph_token_equals_graphormers_dense_formulation(graphs):
    model = _model(mpnn=None, norm=None).eval()
    batch = Batch.from_data_list(graphs)
    with torch.no_grad():
        torch.testing.assert_close(model(batch), _dense_reference(model, batch),
                                   rtol=1e-5, atol=1e-5)


def test_the_token_changes_the_output_and_its_bias_matters(graphs):
    batch = Batch.from_data_list(graphs)
    model = _model(mpnn=None, norm=None).eval()
    with torch.no_grad():
        before = model(batch)
        model.graph_token.virtual_distance.add_(1.0)
        after = model(batch)
    assert not torch.allclose(before, after)
    plain = _model(mpnn=None, norm=None, graph_token=False, pool="sum").eval()
    assert sum(p.numel() for p in model.parameters()) - sum(
        p.numel() for p in plain.parameters()) == 16 + 4  # the token and t per head


@pytest.mark.parametrize("overrides", [{}, {"pool": "mean"}, {"mpnn": "gatedgcn"},
                                       {"pair": None}, {"reinject_pe": True}])
def test_graphs_do_not_see_each_other_and_node_order_does_not_matter(graphs, overrides):
    model = _model(**overrides).eval()
    batch = Batch.from_data_list(graphs)
    with torch.no_grad():
        full = model(batch)
        alone = torch.cat([model(Batch.from_data_list([g])) for g in graphs])
        torch.testing.assert_close(full, alone, rtol=1e-5, atol=1e-5)
        # relabel the nodes of every graph (and the graphs' order)
        permuted = []
        for seed, g in enumerate(graphs[::-1]):
            perm = torch.randperm(g.num_nodes, generator=torch.Generator().manual_seed(seed))
            inv = torch.empty_like(perm)
            inv[perm] = torch.arange(g.num_nodes)
            p = g.clone()
            p.x, p.rwse = g.x[perm], g.rwse[perm]
            p.edge_index = inv[g.edge_index]
            p.spd_index = inv[g.spd_index]
            permuted.append(p)
        out = model(Batch.from_data_list(permuted))
    torch.testing.assert_close(out, full.flip(0), rtol=1e-5, atol=1e-5)


def test_fused_layers_equal_the_module_path_with_every_gradient(graphs):
    batch = Batch.from_data_list(graphs)
    results = []
    for fused in (True, False):
        model = _model(attn_dropout=0.0).train()
        for layer in model.layers:
            layer.fused = fused
        out = model(batch)
        out.square().sum().backward()
        results.append((out.detach(), {k: p.grad for k, p in model.named_parameters()}))
    (out_f, grads_f), (out_m, grads_m) = results
    torch.testing.assert_close(out_f, out_m, rtol=1e-5, atol=1e-5)
    assert grads_f.keys() == grads_m.keys()
    for name, grad in grads_f.items():
        assert grad is not None, name
        torch.testing.assert_close(grad, grads_m[name], rtol=1e-4, atol=1e-5)
    assert grads_f["graph_token.embedding"].abs().sum() > 0
    assert grads_f["graph_token.virtual_distance"].abs().sum() > 0


def test_node_classification_returns_the_nodes_only(graphs):
    model = _model(task="node_classification", pool="sum", out_dim=3).eval()
    batch = Batch.from_data_list(graphs)
    with torch.no_grad():
        assert model(batch).shape == (sum(SIZES), 3)


def test_float64(graphs):
    model = _model().double().eval()
    batch = Batch.from_data_list(graphs)
    with torch.no_grad():
        assert model(batch).dtype == torch.float64


def test_bad_settings_raise_exact_errors():
    with pytest.raises(ValueError, match=r"^graph_token needs attention='multihead' \(its "
                                         r"pairs carry a learned attention bias\), got "
                                         r"attention='performer'$"):
        _model(attention="performer", pair=None)
    with pytest.raises(ValueError, match=r"^pool='token' reads the graph token: it needs "
                                         r"graph_token=True$"):
        _model(graph_token=False)
    with pytest.raises(ValueError, match=r"^pool='token' reads Graphormer's graph token, which "
                                         r"GINE has not \(model='gps' with graph_token=True\)$"):
        build_model({"model": "gine", "node_vocab": 5, "edge_vocab": 3, "pool": "token"})
    with pytest.raises(ValueError, match=r"^StaticGPS does not support the graph token$"):
        StaticGPS(_model())
    with pytest.raises(ValueError, match=r"^pool must be one of \('sum', 'mean', 'max', "
                                         r"'token'\), got 'first'$"):
        _model(pool="first")


def test_init_matches_graphormers():
    token = GraphToken(4096, heads=4096)
    for p in (token.embedding, token.virtual_distance):
        assert abs(p.std().item() - 0.02) < 0.002 and abs(p.mean().item()) < 0.002


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_matches_cpu(graphs):
    batch = Batch.from_data_list(graphs)
    model = _model().eval()
    with torch.no_grad():
        cpu = model(batch)
        gpu = model.cuda()(batch.cuda()).cpu()
    torch.testing.assert_close(gpu, cpu, atol=1e-4, rtol=1e-4)
    model.train()(batch.cuda()).sum().backward()
    assert all(p.grad is not None for p in model.parameters())
