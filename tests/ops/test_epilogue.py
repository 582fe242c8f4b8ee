"""The compiled bias/ReLU epilogues (graphpe.ops.epilogue) against torch."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from graphpe.ops.epilogue import bias_relu_, relu_backward_, residual_relu


@settings(max_examples=30, deadline=None)
@given(rows=st.integers(0, 200), channels=st.integers(1, 140),
       dtype=st.sampled_from([torch.float32, torch.float64]), seed=st.integers(0, 2**16))
def test_bias_relu_and_its_backward_match_torch(rows, channels, dtype, seed):
    """``ReLU(z + b)`` in place, and its backward: the masked gradient (in place) and the
    bias gradient, against torch's ``relu``, ``threshold_backward`` and column sum under
    autograd."""
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(rows, channels, generator=g, dtype=dtype)
    z[::3, ::2] = 0.0  # on the kink: ReLU's gradient there is 0, as torch's
    bias = torch.randn(channels, generator=g, dtype=dtype)
    bias[::4] = 0.0
    grad = torch.randn(rows, channels, generator=g, dtype=dtype)
    zz, bb = z.clone().requires_grad_(), bias.clone().requires_grad_()
    want = F.relu(zz + bb)
    want.backward(grad)
    out = z.clone()
    assert bias_relu_(out.numpy(), bias.numpy()) is not None
    assert torch.equal(out, want.detach())
    masked = grad.clone()
    d_bias = relu_backward_(masked.numpy(), out.numpy())
    assert torch.equal(masked, zz.grad)
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    assert d_bias.dtype == masked.numpy().dtype
    assert torch.allclose(torch.from_numpy(d_bias), bb.grad, atol=tol * max(rows, 1))


def test_epilogues_reject_bad_input():
    x = np.zeros((4, 3), dtype=np.float32)
    with pytest.raises(ValueError, match=r"bias must be \[3\], got \(4,\)"):
        bias_relu_(x, np.zeros(4, dtype=np.float32))
    with pytest.raises(ValueError, match=r"bias must have the dtype of x \(float32\), got "
                                         r"float64"):
        bias_relu_(x, np.zeros(3))
    with pytest.raises(ValueError, match=r"expected a writeable C-contiguous \[N, C\] array, "
                                         r"got shape \(3, 4\)"):
        bias_relu_(x.T, np.zeros(4, dtype=np.float32))
    with pytest.raises(ValueError, match=r"out must be \(4, 3\), got \(4, 2\)"):
        relu_backward_(x, np.zeros((4, 2), dtype=np.float32))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_residual_relu(dtype):
    rng = np.random.default_rng(0)
    v, x = (rng.standard_normal((37, 11)).astype(dtype) for _ in range(2))
    out = residual_relu(v, x)
    assert out.dtype == dtype and np.array_equal(out, x + np.maximum(v, 0))
    with pytest.raises(ValueError, match=r"v and x must be \[N, C\] arrays of one shape and "
                                         r"dtype, got \(37, 11\) float\d\d and \(37, 10\)"):
        residual_relu(v, x[:, :10])
