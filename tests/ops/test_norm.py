"""The compiled residual batch norm (graphpe.ops.norm) against torch's batch_norm."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from graphpe.ops.norm import batch_norm_backward, batch_norm_forward, batch_norm_inference


@settings(max_examples=40, deadline=None)
@given(rows=st.integers(2, 300), channels=st.integers(1, 70), momentum=st.floats(0.0, 1.0),
       extra=st.booleans(), shift=st.floats(-100.0, 100.0), lin_bias=st.booleans(),
       dtype=st.sampled_from([torch.float32, torch.float64]), seed=st.integers(0, 2**16))
def test_batch_norm_matches_torch(rows, channels, momentum, extra, shift, lin_bias, dtype,
                                  seed):
    """Output, running statistics (unbiased variance), and the gradients of the residual sum,
    the weight and the bias, against ``F.batch_norm`` in training mode under autograd; the
    column sums of the sum's gradient are ~0 (a norm removes shifts). ``lin_bias``: the sum
    is ``(a + c) + b`` with a per-channel ``c`` passed as ``shift``."""
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(rows, channels, generator=g, dtype=dtype) + shift
    b = torch.randn(rows, channels, generator=g, dtype=dtype)
    c_lin = torch.randn(channels, generator=g, dtype=dtype) if lin_bias else None
    add = torch.randn(rows, channels, generator=g, dtype=dtype) if extra else None
    weight = torch.rand(channels, generator=g, dtype=dtype) + 0.5
    bias = torch.randn(channels, generator=g, dtype=dtype)
    grad = torch.randn(rows, channels, generator=g, dtype=dtype)
    running = [torch.randn(channels, generator=g, dtype=dtype),
               torch.rand(channels, generator=g, dtype=dtype) + 0.5]
    ours = [t.clone() for t in running]
    out, xhat, invstd = batch_norm_forward(a.numpy(), b.numpy(), weight.numpy(), bias.numpy(),
                                           1e-5, momentum, ours[0].numpy(), ours[1].numpy(),
                                           None if add is None else add.numpy(),
                                           None if c_lin is None else c_lin.numpy())
    s = ((a if c_lin is None else a + c_lin) + b).requires_grad_()
    w, c = weight.clone().requires_grad_(), bias.clone().requires_grad_()
    want = F.batch_norm(s, running[0], running[1], w, c, True, momentum, 1e-5)
    if add is not None:
        want = want + add
    want.backward(grad)
    # both sides round the batch statistics in float32: a batch whose spread is small
    # against its mean (e.g. 2 rows near 45) loses digits in either, so the tolerance follows
    # that conditioning (|s| / std)
    sd = s.detach().double()
    cond = float((sd.abs().amax(0) / sd.std(0, unbiased=False).clamp_min(1e-12)).max())
    tol = (dict(atol=1e-4 * max(1.0, cond / 10), rtol=1e-4) if dtype == torch.float32
           else dict(atol=1e-10 * max(1.0, cond)))
    assert out.dtype == xhat.dtype == invstd.dtype == a.numpy().dtype
    assert torch.allclose(torch.from_numpy(out), want.detach(), **tol)
    for mine, theirs in zip(ours, running, strict=True):
        assert torch.allclose(mine, theirs, **tol)
    d_s, d_w, d_b, d_s_sum = batch_norm_backward(grad.numpy(), xhat, invstd, weight.numpy())
    scale = grad.abs().max().item() * rows
    assert torch.allclose(torch.from_numpy(d_s), s.grad, **tol)
    assert torch.allclose(torch.from_numpy(d_w), w.grad, atol=tol.get("atol") * scale, rtol=1e-4)
    assert torch.allclose(torch.from_numpy(d_b), c.grad, atol=tol.get("atol") * scale, rtol=1e-4)
    assert np.allclose(d_s_sum, s.grad.sum(0).numpy(), atol=tol.get("atol") * scale)


def test_batch_norm_without_running_statistics_and_bad_input():
    a = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)
    one = np.ones(3, dtype=np.float32)
    out, _, _ = batch_norm_forward(a, a, one, 0 * one, 1e-5)  # momentum None: no update
    assert np.allclose(out.mean(0), 0.0, atol=1e-6)
    with pytest.raises(ValueError, match="training-mode batch norm needs at least 2 rows, got 1"):
        batch_norm_forward(a[:1], a[:1], one, one, 1e-5)


@settings(max_examples=40, deadline=None)
@given(rows=st.integers(1, 300), channels=st.integers(1, 70), extra=st.booleans(),
       lin_bias=st.booleans(), in_place=st.booleans(), residual=st.booleans(),
       dtype=st.sampled_from([torch.float32, torch.float64]), seed=st.integers(0, 2**16))
def test_batch_norm_inference_matches_torch(rows, channels, extra, lin_bias, in_place,
                                            residual, dtype, seed):
    """Evaluation mode: the residual sum mapped by the running statistics, as ``F.batch_norm``
    with ``training=False``; the output may overwrite ``a``. The running statistics are read,
    not changed."""
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(rows, channels, generator=g, dtype=dtype) * 3
    b = torch.randn(rows, channels, generator=g, dtype=dtype)
    c_lin = torch.randn(channels, generator=g, dtype=dtype) if lin_bias else None
    add = torch.randn(rows, channels, generator=g, dtype=dtype) if extra else None
    weight = torch.rand(channels, generator=g, dtype=dtype) + 0.5
    bias = torch.randn(channels, generator=g, dtype=dtype)
    mean = torch.randn(channels, generator=g, dtype=dtype)
    var = torch.rand(channels, generator=g, dtype=dtype) + 0.1
    s = (a if c_lin is None else a + c_lin) + (b if residual else 0)
    want = F.batch_norm(s, mean, var, weight, bias, False, 0.1, 1e-5)
    if add is not None:
        want = want + add
    before = (mean.clone(), var.clone())
    a_np = a.clone().numpy()
    out = batch_norm_inference(a_np, b.numpy() if residual else None, weight.numpy(),
                               bias.numpy(), 1e-5, mean.numpy(), var.numpy(),
                               None if add is None else add.numpy(),
                               None if c_lin is None else c_lin.numpy(),
                               out=a_np if in_place else None)
    assert (out is a_np) == in_place and out.dtype == a_np.dtype
    tol = dict(atol=1e-5, rtol=1e-5) if dtype == torch.float32 else dict(atol=1e-12)
    assert torch.allclose(torch.from_numpy(out), want, **tol)
    assert torch.equal(mean, before[0]) and torch.equal(var, before[1])


def test_batch_norm_forward_without_a_residual():
    """``b=None``: the norm of ``a`` (plus ``shift``) alone, as ``F.batch_norm``."""
    g = torch.Generator().manual_seed(0)
    a = torch.randn(50, 6, generator=g)
    shift = torch.randn(6, generator=g)
    one, zero = torch.ones(6), torch.zeros(6)
    out, _, _ = batch_norm_forward(a.numpy(), None, one.numpy(), zero.numpy(), 1e-5,
                                   shift=shift.numpy())
    want = F.batch_norm(a + shift, None, None, one, zero, True, 0.1, 1e-5)
    assert torch.allclose(torch.from_numpy(out), want, atol=1e-5)
