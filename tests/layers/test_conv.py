import pytest
import torch
from torch import nn
from torch_geometric.nn import GINConv, GINEConv, MessagePassing
from torch_geometric.utils import scatter

from graphpe.layers.conv import GatedGCNLayer, GINLayer, gin_aggregate


@pytest.mark.parametrize("edges", [True, False])
@pytest.mark.parametrize("train_eps", [False, True])
def test_gin_layer_matches_pyg(edges, train_eps):
    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 8))
    ref = (GINEConv if edges else GINConv)(mlp, eps=0.3, train_eps=train_eps)
    ours = GINLayer(nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 8)), eps=0.1,
                    train_eps=train_eps)
    ours.load_state_dict(ref.state_dict())
    x = torch.randn(10, 8, requires_grad=True)
    edge_index = torch.randint(0, 10, (2, 30))
    args = (torch.randn(30, 8),) if edges else ()
    want, got = ref(x, edge_index, *args), ours(x, edge_index, *args)
    assert torch.allclose(got, want, atol=1e-6)
    grad = torch.randn_like(got)
    for a, b in zip(torch.autograd.grad(want, [x, *ref.parameters()], grad),
                    torch.autograd.grad(got, [x, *ours.parameters()], grad), strict=True):
        assert torch.allclose(a, b, atol=1e-5)


def test_gin_layer_rejects_edge_features_of_the_wrong_width():
    layer = GINLayer(nn.Linear(4, 4))
    with pytest.raises(ValueError, match=r"edge_attr must have shape \(3, 4\)"):
        layer(torch.randn(5, 4), torch.tensor([[0, 1, 2], [1, 2, 3]]), torch.randn(3, 2))


def _both_paths(layer, x, edge_index, edge_attr):
    """Outputs and gradients (x, edge_attr, parameters) of the compiled and torch paths."""
    results = []
    for use_kernels in (True, False):
        layer.use_kernels = use_kernels
        out = layer(x, edge_index, edge_attr)
        grad = torch.ones_like(out) * torch.linspace(-1, 1, out.numel(),
                                                     dtype=out.dtype).view_as(out)
        results.append((out, torch.autograd.grad(out, [x, edge_attr, *layer.parameters()],
                                                 grad)))
    layer.use_kernels = True
    return results


@pytest.mark.parametrize("dtype,tol", [(torch.float64, 1e-12), (torch.float32, 2e-5)])
def test_compiled_gine_aggregation_equals_the_torch_path(dtype, tol):
    torch.manual_seed(1)
    # isolated nodes (8, 9), repeated edges, self loops and messages that the ReLU drops
    edge_index = torch.tensor([[0, 1, 2, 2, 3, 4, 4, 5, 6, 7, 0, 3],
                               [1, 0, 3, 3, 2, 5, 4, 4, 7, 6, 7, 0]])
    layer = GINLayer(nn.Sequential(nn.Linear(6, 6), nn.ReLU(), nn.Linear(6, 6)), eps=0.25).to(
        dtype)
    x = torch.randn(10, 6, dtype=dtype, requires_grad=True)
    edge_attr = torch.randn(12, 6, dtype=dtype, requires_grad=True)
    (got, got_grads), (want, want_grads) = _both_paths(layer, x, edge_index, edge_attr)
    assert torch.allclose(got, want, atol=tol, rtol=0)
    for a, b in zip(got_grads, want_grads, strict=True):
        assert torch.allclose(a, b, atol=tol, rtol=0)


def test_compiled_gine_aggregation_passes_gradcheck():
    from graphpe.layers.conv import _GINEAggregate

    torch.manual_seed(2)
    x = torch.randn(7, 3, dtype=torch.float64, requires_grad=True)
    # away from the ReLU's kink, where finite differences are not a gradient
    edge_attr = (torch.rand(9, 3, dtype=torch.float64) + 0.5) * torch.sign(torch.randn(9, 3))
    edge_attr = (edge_attr * 3).requires_grad_()
    edge_index = torch.randint(0, 7, (2, 9))
    assert torch.autograd.gradcheck(
        lambda a, b: _GINEAggregate.apply(a, b, edge_index[0], edge_index[1], 1.5),
        (x, edge_attr))


def test_gine_layer_takes_the_torch_path_where_the_kernel_does_not_apply():
    torch.manual_seed(3)
    x = torch.randn(5, 4, requires_grad=True)
    edge_index = torch.tensor([[0, 1, 2, 3], [1, 2, 3, 4]])
    edge_attr = torch.randn(4, 4)
    # a trainable eps gets its gradient, an edge weight scales the messages
    layer = GINLayer(nn.Linear(4, 4), eps=0.1, train_eps=True)
    layer(x, edge_index, edge_attr).sum().backward()
    assert layer.eps.grad is not None
    layer = GINLayer(nn.Identity())
    weight = torch.full((4, 1), 0.5)
    halved = layer(x, edge_index, edge_attr, weight) - x
    full = layer(x, edge_index, edge_attr) - x
    assert torch.allclose(halved, 0.5 * full)


def test_compiled_gine_aggregation_rejects_node_ids_out_of_range():
    layer = GINLayer(nn.Identity())
    with pytest.raises(ValueError, match=r"edge_index holds node ids outside \[0, 3\)"):
        layer(torch.randn(3, 2), torch.tensor([[0, 3], [1, 0]]), torch.randn(2, 2))


@pytest.mark.parametrize("shape", [(9, 5), (9, 3, 4)])
def test_gin_aggregate_equals_its_formula_with_gradients_for_eps(shape):
    """The compiled CPU path of ``gin_aggregate`` (a signal with extra axes, a directed edge
    list with repeats and self loops, a learned eps) against the formula in torch ops, values
    and gradients of x and eps in float64; and gradcheck."""
    torch.manual_seed(0)
    x = torch.randn(*shape, dtype=torch.float64, requires_grad=True)
    eps = torch.tensor([0.3], dtype=torch.float64, requires_grad=True)
    edge_index = torch.randint(0, shape[0], (2, 25))
    got = gin_aggregate(x, edge_index, eps)
    want = (1 + eps) * x + torch.zeros_like(x).index_add(0, edge_index[1], x[edge_index[0]])
    assert torch.allclose(got, want, atol=1e-12)
    grad = torch.randn_like(got)
    for a, b in zip(torch.autograd.grad(got, [x, eps], grad),
                    torch.autograd.grad(want, [x, eps], grad), strict=True):
        assert torch.allclose(a, b, atol=1e-12)
    assert torch.autograd.gradcheck(lambda x, eps: gin_aggregate(x, edge_index, eps), (x, eps))
    # a fixed eps (a buffer) takes the same path without its gradient
    fixed = gin_aggregate(x, edge_index, eps.detach())
    assert torch.allclose(fixed, want, atol=1e-12)


def test_gin_aggregate_rejects_node_ids_out_of_range():
    with pytest.raises(ValueError, match=r"edge_index holds node ids outside \[0, 3\)"):
        gin_aggregate(torch.randn(3, 2), torch.tensor([[0, 3], [1, 0]]), torch.zeros(1))


def test_gin_layer_takes_the_compiled_aggregation_unless_told_not_to(monkeypatch):
    """GIN (no edge features, learned eps) runs gin_aggregate's compiled loop on the CPU;
    ``use_kernels = False`` and edge weights take the torch formulation, with equal outputs."""
    import graphpe.layers.conv as conv

    calls = []
    apply = conv._GINAggregate.apply
    monkeypatch.setattr(conv._GINAggregate, "apply",
                        lambda *args: calls.append(1) or apply(*args))
    torch.manual_seed(0)
    layer = GINLayer(nn.Linear(6, 6), eps=0.2, train_eps=True)
    x, edge_index = torch.randn(8, 6), torch.randint(0, 8, (2, 20))
    compiled = layer(x, edge_index)
    assert calls == [1]
    layer.use_kernels = False
    assert torch.allclose(layer(x, edge_index), compiled, atol=1e-6)
    layer.use_kernels = True
    layer(x, edge_index, edge_weight=torch.ones(20, 1))
    assert calls == [1]


class _GraphGPSGatedGCN(MessagePassing):
    """GraphGPS's GatedGCNLayer maths as a PyG MessagePassing, the reference for
    GatedGCNLayer: message e_ij = D x_i + E x_j + C e (i the target), sigma = sigmoid(e_ij)
    times an optional gate, sum-aggregated numerator and denominator, update A x + num /
    (den + 1e-6), then BN, ReLU, dropout and the residuals on nodes and edges."""

    def __init__(self, channels, dropout=0.0):
        super().__init__()
        self.A, self.B, self.C, self.D, self.E = (nn.Linear(channels, channels)
                                                  for _ in range(5))
        self.bn_node_x = nn.BatchNorm1d(channels)
        self.bn_edge_e = nn.BatchNorm1d(channels)
        self.dropout = dropout

    def forward(self, x, edge_index, e, gate=None):
        x_new, e_new = self.propagate(edge_index, Bx=self.B(x), Dx=self.D(x), Ex=self.E(x),
                                      Ce=self.C(e), Ax=self.A(x), gate=gate)
        x_new = torch.nn.functional.relu(self.bn_node_x(x_new))
        e_new = torch.nn.functional.relu(self.bn_edge_e(e_new))
        return x + x_new, e + e_new

    def message(self, Dx_i, Ex_j, Ce, gate):
        e_ij = Dx_i + Ex_j + Ce
        sigma = torch.sigmoid(e_ij)
        if gate is not None:
            sigma = sigma * gate
        self._e = e_ij
        return sigma

    def aggregate(self, sigma, index, Bx_j, Bx):
        num = scatter(sigma * Bx_j, index, 0, dim_size=Bx.size(0), reduce="sum")
        den = scatter(sigma, index, 0, dim_size=Bx.size(0), reduce="sum")
        return num / (den + 1e-6)

    def update(self, aggr_out, Ax):
        return Ax + aggr_out, self._e


@pytest.mark.parametrize("kernels", [True, False])
@pytest.mark.parametrize("gated", [False, True])
def test_gatedgcn_layer_equals_graphgps_maths_with_gradients(gated, kernels):
    """Both paths, the compiled loops (CPU) and the torch formulation, against GraphGPS's
    maths: outputs, input, gate and parameter gradients (float64)."""
    torch.manual_seed(0)
    channels = 8
    # a directed multigraph with an isolated node (6) and a self loop (2 -> 2)
    edge_index = torch.tensor([[0, 1, 1, 2, 3, 4, 4, 2, 5, 0],
                               [1, 0, 2, 1, 4, 3, 5, 2, 4, 1]])
    ref = _GraphGPSGatedGCN(channels).double()
    ours = GatedGCNLayer(channels).double()
    ours.use_kernels = kernels
    ours.load_state_dict(ref.state_dict())  # GraphGPS's parameter names
    x = torch.randn(7, channels, dtype=torch.float64)
    e = torch.randn(edge_index.size(1), channels, dtype=torch.float64)
    gate = torch.rand(edge_index.size(1), 1, dtype=torch.float64) if gated else None
    inputs = []
    for model in (ref, ours):
        xi, ei = x.clone().requires_grad_(), e.clone().requires_grad_()
        gi = gate.clone().requires_grad_() if gated else None
        out_x, out_e = model(xi, edge_index, ei, gi)
        (out_x.sin().sum() + out_e.cos().sum()).backward()
        inputs.append((out_x, out_e, xi.grad, ei.grad, gi.grad if gated else xi.grad,
                       {n: p.grad for n, p in model.named_parameters()}))
    (rx, re, rgx, rge, rgg, rgp), (ox, oe, ogx, oge, ogg, ogp) = inputs
    for a, b in ((rx, ox), (re, oe), (rgx, ogx), (rge, oge), (rgg, ogg)):
        torch.testing.assert_close(b, a, rtol=1e-10, atol=1e-10)
    assert rgp.keys() == ogp.keys()
    for name in rgp:
        torch.testing.assert_close(ogp[name], rgp[name], rtol=1e-10, atol=1e-10, msg=name)
    # the isolated node gets A x alone: its sum is 0 over 1e-6
    assert torch.isfinite(ox).all()
    # running statistics follow the same batch statistics
    torch.testing.assert_close(ours.bn_edge_e.running_var, ref.bn_edge_e.running_var)


def test_gatedgcn_layer_dropout_and_residual_options():
    torch.manual_seed(0)
    layer = GatedGCNLayer(4, dropout=0.5, residual=False).eval()
    x, e = torch.randn(3, 4), torch.randn(2, 4)
    edge_index = torch.tensor([[0, 1], [1, 2]])
    out_x, out_e = layer(x, edge_index, e)
    assert (out_x >= 0).all() and (out_e >= 0).all()  # ReLU outputs, no residual added
    layer.train()
    torch.manual_seed(1)
    a = layer(x, edge_index, e)[0]
    torch.manual_seed(2)
    assert not torch.equal(a, layer(x, edge_index, e)[0])  # dropout draws in training


def test_gatedgcn_layer_rejects_bad_inputs():
    layer = GatedGCNLayer(4)
    edge_index = torch.tensor([[0, 1], [1, 0]])
    with pytest.raises(ValueError, match=r"GatedGCNLayer needs edge_attr \[num_edges, 4\] "
                                         r"= \[2, 4\], got None"):
        layer(torch.randn(2, 4), edge_index, None)
    with pytest.raises(ValueError, match=r"= \[2, 4\], got \(2, 3\)"):
        layer(torch.randn(2, 4), edge_index, torch.randn(2, 3))
    with pytest.raises(ValueError, match="channels must be a positive int, got 0"):
        GatedGCNLayer(0)
    with pytest.raises(ValueError, match=r"dropout must be in \[0, 1\), got 1.0"):
        GatedGCNLayer(4, dropout=1.0)


def test_gatedgcn_last_layer_computes_no_edge_update():
    torch.manual_seed(0)
    full = GatedGCNLayer(4)
    last = GatedGCNLayer(4, update_edges=False)
    state = {k: v for k, v in full.state_dict().items() if not k.startswith("bn_edge_e")}
    last.load_state_dict(state)
    x, e = torch.randn(3, 4), torch.randn(2, 4)
    edge_index = torch.tensor([[0, 1], [1, 2]])
    out, none = last(x, edge_index, e)
    assert none is None and last.bn_edge_e is None
    torch.testing.assert_close(out, full(x, edge_index, e)[0])


@pytest.mark.parametrize("update_edges", [True, False])
def test_gatedgcn_compiled_loops_equal_the_torch_path_in_float32(update_edges, monkeypatch):
    """float32 (the sigmoid a polynomial in the compiled loops): values and gradients agree
    to float32 rounding; the compiled loops ran."""
    from graphpe.ops import message

    calls = []
    original = message.gated_aggregate
    monkeypatch.setattr(message, "gated_aggregate",
                        lambda *a: calls.append(1) or original(*a))
    torch.manual_seed(0)
    n, channels = 40, 16
    edge_index = torch.randint(0, n, (2, 150))
    layer = GatedGCNLayer(channels, update_edges=update_edges)
    torch_path = GatedGCNLayer(channels, update_edges=update_edges)
    torch_path.load_state_dict(layer.state_dict())
    torch_path.use_kernels = False
    x = torch.randn(n, channels) * 3  # logits out to |e_hat| ~ 30: saturated gates too
    e = torch.randn(150, channels) * 3
    grads = []
    for model in (layer, torch_path):
        xi, ei = x.clone().requires_grad_(), e.clone().requires_grad_()
        out_x, out_e = model(xi, edge_index, ei)
        loss = out_x.square().sum() + (out_e.square().sum() if update_edges else 0)
        loss.backward()
        grads.append([out_x, out_e, xi.grad, ei.grad,
                      *[p.grad for p in model.parameters()]])
    assert calls == [1]
    for a, b in zip(*grads, strict=True):
        if a is None:
            assert b is None
            continue
        torch.testing.assert_close(a, b, rtol=2e-4, atol=2e-4)


def test_gcn_conv_by_its_operator_equals_pygs_gcnconv(monkeypatch):
    """graphpe.layers.conv.gcn_conv: S (h W) + b with GCNConv's operator, values and
    gradients equal to GCNConv's message passing on a directed graph with duplicate edges and
    self loops; the operator is built once per edge_index tensor and again after the tensor
    changes in place."""
    from torch_geometric.nn import GCNConv

    from graphpe.layers import conv as conv_module

    monkeypatch.setattr(conv_module, "GCN_OPERATOR_MIN_EDGES", 0)
    monkeypatch.setattr(conv_module, "_gcn_operators", type(conv_module._gcn_operators)())
    torch.manual_seed(0)
    n = 60
    edge_index = torch.randint(0, n, (2, 300))
    edge_index = torch.cat([edge_index, edge_index[:, :20], torch.arange(5).repeat(2, 1)], 1)
    conv = GCNConv(8, 8)
    x = torch.randn(n, 8, requires_grad=True)
    grad = torch.randn(n, 8)
    results = []
    for function in (conv, lambda h, e: conv_module.gcn_conv(conv, h, e)):
        x.grad = None
        conv.zero_grad()
        out = function(x, edge_index)
        out.backward(grad)
        results.append((out.detach(), x.grad.clone(), conv.lin.weight.grad.clone(),
                        conv.bias.grad.clone()))
    for want, got in zip(*results, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    assert len(conv_module._gcn_operators) == 1
    first = conv_module._cached_gcn_operator(edge_index, n, torch.float32)
    assert conv_module._cached_gcn_operator(edge_index, n, torch.float32) is first
    edge_index[0, 0] = (edge_index[0, 0] + 1) % n  # in place: a new graph
    assert conv_module._cached_gcn_operator(edge_index, n, torch.float32) is not first
    torch.testing.assert_close(conv_module.gcn_conv(conv, x, edge_index), conv(x, edge_index),
                               rtol=1e-5, atol=1e-5)


def test_sage_conv_by_the_mean_operator_equals_pygs_sageconv(monkeypatch):
    """graphpe.layers.conv.sage_conv (also reached through gcn_conv): W_l (M h) + b + W_r h
    with the mean operator, values and gradients equal to SAGEConv's message passing on a
    directed graph with duplicate edges, self loops and nodes without in-edges; a SAGEConv
    with other settings goes through the module."""
    from torch_geometric.nn import SAGEConv

    from graphpe.layers import conv as conv_module

    monkeypatch.setattr(conv_module, "GCN_OPERATOR_MIN_EDGES", 0)
    monkeypatch.setattr(conv_module, "_gcn_operators", type(conv_module._gcn_operators)())
    torch.manual_seed(0)
    n = 60
    edge_index = torch.randint(0, n - 5, (2, 300))  # the last five nodes get no messages
    edge_index = torch.cat([edge_index, edge_index[:, :20], torch.arange(5).repeat(2, 1)], 1)
    conv = SAGEConv(8, 6)
    x = torch.randn(n, 8, requires_grad=True)
    grad = torch.randn(n, 6)
    results = []
    for function in (conv, lambda h, e: conv_module.sage_conv(conv, h, e),
                     lambda h, e: conv_module.gcn_conv(conv, h, e)):
        x.grad = None
        conv.zero_grad()
        out = function(x, edge_index)
        out.backward(grad)
        results.append((out.detach(), x.grad.clone(), conv.lin_l.weight.grad.clone(),
                        conv.lin_l.bias.grad.clone(), conv.lin_r.weight.grad.clone()))
    for got in results[1:]:
        for want, value in zip(results[0], got, strict=True):
            torch.testing.assert_close(value, want, rtol=1e-5, atol=1e-5)
    assert len(conv_module._gcn_operators) == 1
    other = SAGEConv(8, 6, aggr="max")
    calls = []
    monkeypatch.setattr(other, "forward", lambda h, e: calls.append(1) or h[:, :6])
    conv_module.sage_conv(other, x, edge_index)
    assert calls == [1]
