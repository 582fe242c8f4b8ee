"""The sparse operators (graphpe.ops.spmm): the product with a constant operator and its
gradient against dense references, in both float precisions, duplicates and empty rows
included."""

import pytest
import torch

from graphpe.ops.spmm import gcn_operator, mean_operator, operator_product


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("build", [gcn_operator, mean_operator])
def test_operator_product_and_its_gradient_equal_the_dense_ones(dtype, build):
    gen = torch.Generator().manual_seed(0)
    n = 40
    edge_index = torch.randint(0, n - 4, (2, 200), generator=gen)  # 4 nodes get no edges
    edge_index = torch.cat([edge_index, edge_index[:, :15]], 1)  # duplicates
    operator, transpose = build(edge_index, n, dtype)
    dense = operator.to_dense()
    torch.testing.assert_close(transpose.to_dense(), dense.t())
    x = torch.randn(n, 6, dtype=dtype, generator=gen, requires_grad=True)
    grad = torch.randn(n, 6, dtype=dtype, generator=gen)
    out = operator_product(operator, transpose, x)
    out.backward(grad)
    torch.testing.assert_close(out, dense @ x.detach())
    torch.testing.assert_close(x.grad, dense.t() @ grad)
