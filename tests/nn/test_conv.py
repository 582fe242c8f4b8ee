import pytest
import torch
from torch import nn
from torch_geometric.nn import GINConv, GINEConv

from graphpe.nn.conv import GINLayer


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
