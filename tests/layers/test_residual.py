"""Platonov et al.'s residual blocks against dense references of their modules.py (MIT
licence: the maths re-derived here on dense matrices, not copied), and the propagation
operators against PyG's aggregations."""

from __future__ import annotations

import pytest
import torch
from torch_geometric.nn import SAGEConv
from torch_geometric.nn.conv.gcn_conv import gcn_norm
from torch_geometric.utils import to_undirected

from graphpe.layers.conv import propagate
from graphpe.layers.residual import ResidualBlock


def random_graph(n=40, edges=120, seed=0):
    g = torch.Generator().manual_seed(seed)
    ei = torch.randint(0, n, (2, edges), generator=g)
    ei = ei[:, ei[0] != ei[1]]
    return to_undirected(ei, num_nodes=n)


def dense_adjacency(edge_index, n):
    a = torch.zeros(n, n, dtype=torch.float64)
    a.index_put_((edge_index[1], edge_index[0]), torch.ones(edge_index.size(1),
                                                            dtype=torch.float64),
                  accumulate=True)
    return a  # a[i, j]: edges j -> i


def feed_forward(block, z):
    ff = block.feed_forward
    return ff.linear_2(torch.nn.functional.gelu(ff.linear_1(z)))


def test_propagate_equals_pygs_gcn_norm_and_mean_with_gradients():
    n = 40
    ei = random_graph(n)
    h = torch.randn(n, 5, dtype=torch.float64, requires_grad=True)
    (loops, weight) = gcn_norm(ei, None, n, add_self_loops=True, dtype=torch.float64)
    s = torch.zeros(n, n, dtype=torch.float64).index_put_((loops[1], loops[0]), weight,
                                                          accumulate=True)
    assert torch.allclose(propagate(h, ei, "gcn"), s @ h, atol=1e-12)
    conv = SAGEConv(5, 5, root_weight=False, bias=False).double()
    torch.nn.init.eye_(conv.lin_l.weight)
    assert torch.allclose(propagate(h, ei, "mean"), conv(h, ei), atol=1e-12)
    a = dense_adjacency(ei, n)
    mean = a / a.sum(1, keepdim=True).clamp_min(1)
    torch.autograd.gradcheck(lambda x: propagate(x, ei, "mean"), (h,))
    grad, = torch.autograd.grad(propagate(h, ei, "mean").square().sum(), h)
    assert torch.allclose(grad, 2 * mean.t() @ (mean @ h), atol=1e-12)
    with pytest.raises(ValueError, match=r"kind must be one of \('gcn', 'mean'\), got 'max'"):
        propagate(h, ei, "max")


@pytest.mark.parametrize("module", ["gcn", "sage", "gat", "gat-sep", "gt", "gt-sep", "ffn"])
def test_blocks_equal_dense_references(module):
    torch.manual_seed(0)
    n, dim, heads = 40, 16, 4
    ei = random_graph(n)
    block = ResidualBlock(dim, module, dropout=0.0, heads=heads).double().eval()
    h = torch.randn(n, dim, dtype=torch.float64)
    z = block.norm(h)
    a = dense_adjacency(ei, n)
    if module == "gcn":
        loops = a + torch.eye(n, dtype=torch.float64)
        d = loops.sum(1).rsqrt()
        message = d[:, None] * loops * d[None, :] @ z
    elif module == "sage":
        message = torch.cat([z, a / a.sum(1, keepdim=True).clamp_min(1) @ z], -1)
    elif module == "ffn":
        message = z
    elif module.startswith("gt"):
        adjacency = a + torch.eye(n, dtype=torch.float64) if module == "gt" else a
        d = dim // heads
        q, k, v = (f(z).view(n, heads, d) for f in (block.query, block.key, block.value))
        # edge j -> i scored by the sender's query and the receiver's key (their code)
        scores = torch.einsum("jhd,ihd->ijh", q, k) / d ** 0.5
        scores = scores.masked_fill(adjacency[..., None] == 0, float("-inf"))
        weights = torch.softmax(scores, 1).nan_to_num(0.0)
        out = torch.einsum("ijh,jhd->ihd", weights, v).reshape(n, dim)
        out = torch.cat([z, out], -1) if module == "gt-sep" else out
        assert torch.allclose(block(h, ei), h + block.output_linear(out), atol=1e-10)
        return
    else:
        x = block.input_linear(z)
        adjacency = a + torch.eye(n, dtype=torch.float64) if module == "gat" else a
        src_scores = block.attention_source(x)  # [n, heads], at the sending node j
        dst_scores = block.attention_target(x)  # at the receiving node i
        scores = torch.nn.functional.leaky_relu(dst_scores[:, None, :] + src_scores[None],
                                                0.2)  # [i, j, heads]
        scores = scores.masked_fill(adjacency[..., None] == 0, float("-inf"))
        weights = torch.softmax(scores, 1).nan_to_num(0.0)
        per_head = x.view(n, dim // heads, heads)  # channel c in head c mod heads
        out = torch.einsum("ijh,jch->ich", weights, per_head).reshape(n, dim)
        message = torch.cat([x, out], -1) if module == "gat-sep" else out
    expected = h + feed_forward(block, message)
    assert torch.allclose(block(h, ei), expected, atol=1e-10)


def test_gt_model_alternates_attention_and_feed_forward_blocks():
    from graphpe.nn.build import build_model

    model = build_model({"model": "res-gt-sep", "channels": 16, "layers": 3, "out_dim": 1,
                         "task": "node_classification", "node_dim": 4, "heads": 4})
    assert [b.module for b in model.blocks] == ["gt-sep", "ffn"] * 3
    mlp = build_model({"model": "res-mlp", "channels": 16, "layers": 2, "out_dim": 1,
                       "task": "node_classification", "node_dim": 4})
    assert [b.module for b in mlp.blocks] == ["ffn", "ffn"]


def test_block_checks_its_settings():
    with pytest.raises(ValueError, match=r"module must be one of .*got 'gin'"):
        ResidualBlock(8, "gin")
    with pytest.raises(ValueError, match="heads must divide the width: 10 channels, 4 heads"):
        ResidualBlock(10, "gat", heads=4)
