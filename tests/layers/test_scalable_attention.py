"""SGFormer's and Polynormer's attentions and SGFormer's two branches against PyG's modules
(their state_dicts loaded as they are), the per-graph kernel sums they share with
LinearAttention, and what PyG's padding does not give: a graph's output independent of the
other graphs of its batch."""

from __future__ import annotations

import pytest
import torch
from torch_geometric.nn.attention import PolynormerAttention as PyGPolynormerAttention
from torch_geometric.nn.attention import SGFormerAttention as PyGSGFormerAttention
from torch_geometric.nn.models.sgformer import GraphModule, SGModule
from torch_geometric.utils import to_dense_batch

import graphpe.layers.linear_attention as linear_attention
from graphpe.layers.gps import GPSLayer
from graphpe.layers.linear_attention import graph_kernel_sums
from graphpe.layers.polynormer import PolynormerAttention
from graphpe.layers.sgformer import SGFormerAttention, SGFormerGlobal, SGFormerGNN

TOL = {"rtol": 1e-5, "atol": 1e-5}


def _batch(sizes):
    return torch.repeat_interleave(torch.arange(len(sizes)), torch.tensor(sizes))


def _naive_sums(q, k, v, batch):
    num, den = torch.empty(q.shape[:2] + v.shape[2:], dtype=q.dtype), torch.empty(q.shape[:2],
                                                                                  dtype=q.dtype)
    for g in batch.unique():
        rows = batch == g
        kv = torch.einsum("nhd,nhe->hde", k[rows], v[rows])
        num[rows] = torch.einsum("nhd,hde->nhe", q[rows], kv)
        den[rows] = (q[rows] * k[rows].sum(0)).sum(-1)
    return num, den


@pytest.mark.parametrize("chunk", [None, 7])
def test_graph_kernel_sums_equal_each_graphs_own_sums(chunk, monkeypatch):
    """Per graph, in chunks of nodes or not, and one graph (with or without ``batch``)."""
    if chunk is not None:  # chunks of one node: the chunked path's boundaries everywhere
        monkeypatch.setattr(linear_attention, "OUTER_PRODUCT_ELEMENTS", chunk)
    g = torch.Generator().manual_seed(0)
    batch = _batch([5, 1, 9, 3])[torch.randperm(18, generator=g)]  # unsorted graphs too
    q, k = torch.rand(18, 2, 3, generator=g), torch.rand(18, 2, 3, generator=g)
    v = torch.randn(18, 2, 4, generator=g)
    for got, want in zip(graph_kernel_sums(q, k, v, batch, 4), _naive_sums(q, k, v, batch),
                         strict=True):
        torch.testing.assert_close(got, want)
    one = torch.zeros(18, dtype=torch.long)
    for got, want in zip(graph_kernel_sums(q, k, v, None, 1), _naive_sums(q, k, v, one),
                         strict=True):
        torch.testing.assert_close(got, want)
    num, den = graph_kernel_sums(q[:0], k[:0], v[:0], batch[:0], 3)
    assert num.shape == (0, 2, 4) and den.shape == (0, 2)


@pytest.mark.parametrize("heads, head_channels, bias", [(1, 16, False), (2, 8, True),
                                                        (4, 16, False)])
def test_sgformer_attention_equals_pyg(heads, head_channels, bias):
    """One graph, and graphs of equal size (PyG's padding then adds nothing), with an exact
    zero in the queries (replaced by 1e-6 before the norm, as PyG)."""
    torch.manual_seed(0)
    pyg = PyGSGFormerAttention(16, heads, head_channels, qkv_bias=bias)
    ours = SGFormerAttention(16, heads, head_channels, qkv_bias=bias)
    ours.load_state_dict(pyg.state_dict())
    with torch.no_grad():
        pyg.q.weight[0] = 0  # query channel 0 is exactly 0 (without a bias)
        ours.q.weight[0] = 0
    x = torch.randn(3, 13, 16)
    torch.testing.assert_close(ours(x[0]), pyg(x[:1])[0], **TOL)
    torch.testing.assert_close(ours(x.reshape(39, 16), _batch([13] * 3), 3),
                               pyg(x).reshape(39, -1), **TOL)
    assert ours(x[0]).shape == (13, head_channels)


@pytest.mark.parametrize("heads, qk_shared, bias", [(1, True, False), (1, False, True),
                                                    (3, False, False), (2, True, True)])
def test_polynormer_attention_equals_pyg(heads, qk_shared, bias):
    """Eval and train mode (dropout 0), one graph and graphs of equal size, and the input's
    gradient; PyG's head-minor channel layout included (heads > 1)."""
    torch.manual_seed(0)
    pyg = PyGPolynormerAttention(12, heads, 8, beta=0.7, qkv_bias=bias, qk_shared=qk_shared)
    ours = PolynormerAttention(12, heads, 8, beta=0.7, qkv_bias=bias, qk_shared=qk_shared)
    ours.load_state_dict(pyg.state_dict())
    x = torch.randn(2, 17, 12)
    for mode in (False, True):
        pyg.train(mode), ours.train(mode)
        torch.testing.assert_close(ours(x[0]), pyg(x[:1])[0], **TOL)
        torch.testing.assert_close(ours(x.reshape(34, 12), _batch([17, 17]), 2),
                                   pyg(x).reshape(34, -1), **TOL)
    a, b = x[:1].clone().requires_grad_(), x[0].clone().requires_grad_()
    pyg(a).square().sum().backward()
    ours(b).square().sum().backward()
    torch.testing.assert_close(b.grad, a.grad[0], **TOL)
    assert ours(x[0]).abs().sum() > 0


@pytest.mark.parametrize("make", [lambda: SGFormerAttention(8, 2, 8),
                                  lambda: PolynormerAttention(8, 2, 4, qk_shared=False)])
def test_each_graphs_output_is_its_own(make):
    """A batch of graphs of different sizes gives each graph its output alone (PyG pads them
    to the largest, and its padding enters the smaller graphs' sums)."""
    torch.manual_seed(0)
    attn = make().eval()
    sizes = [6, 1, 11]
    x, batch = torch.randn(18, 8), _batch(sizes)
    out = attn(x, batch, 3)
    for part, rows in zip(out.split(sizes), x.split(sizes), strict=True):
        torch.testing.assert_close(part, attn(rows), **TOL)
    assert attn(x, batch).shape == out.shape  # the graph count counted when not given


def test_sgformer_branches_equal_pygs():
    """SGFormerGlobal and SGFormerGNN with the state of PyG's SGModule and GraphModule: eval
    and train mode (dropout 0, batch norm statistics updated alike)."""
    torch.manual_seed(0)
    pyg_global, pyg_gnn = SGModule(10, 16, 2, 2, 0.0), GraphModule(10, 16, 3, 0.0)
    ours_global, ours_gnn = SGFormerGlobal(10, 16, 2, 2, 0.0), SGFormerGNN(10, 16, 3, 0.0)
    ours_global.load_state_dict(pyg_global.state_dict())
    ours_gnn.load_state_dict(pyg_gnn.state_dict())
    x, edge_index = torch.randn(30, 10), torch.randint(0, 30, (2, 90))
    batch = torch.zeros(30, dtype=torch.long)
    for mode in (True, False):
        for module in (pyg_global, pyg_gnn, ours_global, ours_gnn):
            module.train(mode)
        torch.testing.assert_close(ours_global(x), pyg_global(x, batch), **TOL)
        torch.testing.assert_close(ours_gnn(x, edge_index), pyg_gnn(x, edge_index), **TOL)
    for ours, pyg in zip(ours_gnn.bns, pyg_gnn.bns, strict=True):
        torch.testing.assert_close(ours.running_var, pyg.running_var, **TOL)


def test_sgformer_global_pads_as_pyg_only_for_equal_sizes():
    """PyG's SGModule over graphs of equal size equals ours; of different sizes it differs
    (its padding rows), and ours equals each graph alone."""
    torch.manual_seed(0)
    pyg, ours = SGModule(6, 8, 1, 1, 0.0).eval(), SGFormerGlobal(6, 8, 1, 1, 0.0).eval()
    ours.load_state_dict(pyg.state_dict())
    x = torch.randn(14, 6)
    equal, unequal = _batch([7, 7]), _batch([3, 11])
    torch.testing.assert_close(ours(x, equal), pyg(x, equal), **TOL)
    assert not torch.allclose(ours(x, unequal), pyg(x, unequal), atol=1e-4)
    torch.testing.assert_close(ours(x, unequal)[:3], ours(x[:3]), **TOL)
    dense, mask = to_dense_batch(x, unequal)
    assert mask.sum() == 14 and dense.shape == (2, 11, 6)  # PyG's view: 8 padding rows


@pytest.mark.parametrize("attn", [SGFormerAttention(8, 2, 8), PolynormerAttention(8, 2, 4)])
def test_scalable_attentions_are_gps_branches(attn):
    """Both declare GPSLayer's contract (reads batch, num_graphs) and run as its attention."""
    layer = GPSLayer(8, None, attn).eval()
    x, edge_index = torch.randn(9, 8), torch.randint(0, 9, (2, 20))
    out = layer(x, edge_index, _batch([4, 5]))
    assert out.x.shape == (9, 8) and torch.isfinite(out.x).all()


def test_bad_arguments_are_value_errors():
    with pytest.raises(ValueError, match="divisible by heads"):
        SGFormerAttention(10, 3, None)
    with pytest.raises(ValueError, match="dropout must be in"):
        SGFormerGlobal(4, 4, dropout=1.0)
    with pytest.raises(ValueError, match="num_layers must be a positive int"):
        SGFormerGNN(4, 4, num_layers=0)
    with pytest.raises(ValueError, match="dropout must be in"):
        PolynormerAttention(4, 1, 4, dropout=-0.1)
