"""The compiled GINE aggregation's backward (graphpe.ops.message) into a given gradient."""

from __future__ import annotations

import numpy as np
import pytest

from graphpe.ops.message import gine_aggregate_backward


def test_gine_backward_accumulates_into_a_given_gradient():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(6, 5)).astype(np.float32)
    edge_attr = rng.normal(size=(9, 5)).astype(np.float32)
    src, dst = rng.integers(0, 6, 9), rng.integers(0, 6, 9)
    grad_out = rng.normal(size=(6, 5)).astype(np.float32)
    fresh_x, fresh_edge = gine_aggregate_backward(x, edge_attr, src, dst, 1.25, grad_out)
    base = rng.normal(size=(6, 5)).astype(np.float32)
    into = base.copy()
    got_x, got_edge = gine_aggregate_backward(x, edge_attr, src, dst, 1.25, grad_out,
                                              grad_x=into)
    assert got_x is into
    assert np.allclose(got_x, base + fresh_x, atol=1e-6)
    assert np.array_equal(got_edge, fresh_edge)
    with pytest.raises(ValueError, match=r"grad_x must be a writeable C-contiguous float32 "
                                         r"array of shape \(6, 5\)"):
        gine_aggregate_backward(x, edge_attr, src, dst, 1.25, grad_out, grad_x=base.T.copy())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gin_aggregate_and_backward_match_torch_on_a_directed_graph(dtype):
    """``scale x + sum_{j -> i} x_j`` and its gradient against torch's autograd, on random
    directed edges (repeats and self loops included), into a given gradient or fresh."""
    import torch

    from graphpe.ops.message import gin_aggregate, gin_aggregate_backward

    rng = np.random.default_rng(1)
    x = rng.normal(size=(7, 4)).astype(dtype)
    src, dst = rng.integers(0, 7, 15), rng.integers(0, 7, 15)
    grad_out = rng.normal(size=(7, 4)).astype(dtype)
    xt = torch.from_numpy(x).requires_grad_()
    want = 1.5 * xt + torch.zeros_like(xt).index_add(0, torch.from_numpy(dst),
                                                     xt[torch.from_numpy(src)])
    want.backward(torch.from_numpy(grad_out))
    assert np.allclose(gin_aggregate(x, src, dst, 1.5), want.detach().numpy(), atol=1e-6)
    assert np.allclose(gin_aggregate_backward(src, dst, 1.5, grad_out), xt.grad.numpy(),
                       atol=1e-6)
    base = rng.normal(size=(7, 4)).astype(dtype)
    into = base.copy()
    assert gin_aggregate_backward(src, dst, 1.5, grad_out, grad_x=into) is into
    assert np.allclose(into, base + xt.grad.numpy(), atol=1e-6)
    with pytest.raises(ValueError, match=r"grad_x must be a writeable C-contiguous"):
        gin_aggregate_backward(src, dst, 1.5, grad_out, grad_x=base[:3].copy())
    out = np.full_like(x, np.nan)  # values not read
    assert gin_aggregate(x, src, dst, 1.5, out=out) is out
    assert np.allclose(out, want.detach().numpy(), atol=1e-6)
    with pytest.raises(ValueError, match=rf"out must be a C-contiguous {np.dtype(dtype)} array "
                                         r"of shape \(7, 4\)"):
        gin_aggregate(x, src, dst, 1.5, out=np.empty((4, 7), dtype))


def test_gated_aggregate_equals_its_formula_edge_by_edge():
    """GatedGCN's edge logits and gated mean against the formula written per edge in
    numpy (float64), with a gate, a node without incoming edges and parallel edges."""
    from graphpe.ops.message import GATE_EPS, gated_aggregate

    rng = np.random.default_rng(0)
    n, c = 6, 5
    src = np.array([0, 1, 1, 2, 4, 4, 3], dtype=np.int64)
    dst = np.array([1, 0, 2, 2, 3, 3, 0], dtype=np.int64)  # node 5 receives nothing
    xw = rng.standard_normal((n, 4 * c))
    ce = rng.standard_normal((len(src), c))
    bias = rng.standard_normal((3, c))
    gate = rng.random(len(src))
    e_hat, out, inv, mean = gated_aggregate(xw, ce, bias, src, dst, gate)
    a, b, d, e = (xw[:, i * c:(i + 1) * c] for i in range(4))
    num, den = np.zeros((n, c)), np.zeros((n, c))
    for k, (s, t) in enumerate(zip(src, dst, strict=True)):
        logit = d[t] + e[s] + ce[k] + bias[2]
        np.testing.assert_allclose(e_hat[k], logit, rtol=1e-12)
        sigma = gate[k] / (1.0 + np.exp(-logit))
        num[t] += sigma * (b[s] + bias[1])
        den[t] += sigma
    np.testing.assert_allclose(out, a + bias[0] + num / (den + GATE_EPS), rtol=1e-12)
    np.testing.assert_allclose(inv, 1.0 / (den + GATE_EPS), rtol=1e-12)
    np.testing.assert_allclose(mean, num / (den + GATE_EPS), rtol=1e-12)
    np.testing.assert_allclose(out[5], a[5] + bias[0], rtol=1e-12)
