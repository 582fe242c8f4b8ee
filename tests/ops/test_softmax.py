"""The compiled keys-first softmax with dropout (graphpe.ops.softmax) against torch."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from graphpe.ops.dropout import dropout_host
from graphpe.ops.softmax import softmax_keys_first, softmax_keys_first_backward


def blocks(graphs: int, n: int, heads: int, spread: float, seed: int):
    """Keys-first scores ``[heads * graphs, n, n]`` and each graph's real key count."""
    gen = torch.Generator().manual_seed(seed)
    counts = torch.randint(1, n + 1, (graphs,), generator=gen)
    counts[0] = n
    scores = torch.randn(heads * graphs, n, n, generator=gen) * spread
    return scores, counts.numpy().astype(np.int64)


def torch_softmax(scores: torch.Tensor, counts: np.ndarray, graphs: int, scale: float):
    """softmax over keys (dim 1) of the first counts[b % graphs] keys, in float64."""
    n = scores.size(1)
    real = torch.arange(n)[None, :] < torch.from_numpy(counts)[:, None]  # [graphs, keys]
    real = real.repeat(scores.size(0) // graphs, 1)[:, :, None]
    logits = (scores.double() * scale).masked_fill(~real, float("-inf"))
    return logits.softmax(1)


@settings(max_examples=30, deadline=None)
@given(graphs=st.integers(1, 5), n=st.integers(1, 40), heads=st.integers(1, 3),
       spread=st.sampled_from([0.1, 3.0, 40.0]), seed=st.integers(0, 1000))
def test_softmax_matches_torch_to_float32_rounding(graphs, n, heads, spread, seed):
    scores, counts = blocks(graphs, n, heads, spread, seed)
    probs = scores.numpy().copy()
    assert softmax_keys_first(probs, counts, graphs, 0.25) is None  # no dropout: no copy
    want = torch_softmax(scores, counts, graphs, 0.25)
    # float32 rounding: a logit x carries ~|x| * 6e-8 relative error into its weight (|x| up
    # to ~50 here); weights below ~1e-38 are written as 0
    np.testing.assert_allclose(probs, want.numpy(), rtol=1e-5, atol=1e-37)
    padding = ~(np.arange(n)[None, :] < counts[:, None])
    assert (probs.reshape(heads, graphs, n, n)[:, padding] == 0).all()


@pytest.mark.parametrize("p", [0.1, 0.5])
def test_dropout_is_the_hashed_mask_of_dropout_host(p):
    scores, counts = blocks(3, 17, 2, 2.0, 0)
    probs = scores.numpy().copy()
    dropped = softmax_keys_first(probs, counts, 3, 0.3, p, (11, 12))
    mask = dropout_host(torch.ones(scores.shape), p, (11, 12)).numpy()
    np.testing.assert_array_equal(dropped, probs * mask)
    kept = dropped[probs > 0] > 0
    assert abs(kept.mean() - (1 - p)) < 0.05


def test_backward_is_the_gradient_of_softmax_and_dropout():
    scores, counts = blocks(4, 13, 2, 2.0, 1)
    logits = scores.double().requires_grad_()
    probs = scores.numpy().copy()
    dropped = softmax_keys_first(probs, counts, 4, 0.5, 0.3, (5, 6))
    mask = torch.from_numpy(dropout_host(torch.ones(scores.shape), 0.3, (5, 6)).numpy())
    upstream = torch.randn(scores.shape, dtype=torch.float64)
    want, = torch.autograd.grad(torch_softmax(logits, counts, 4, 0.5) * mask.double(), logits,
                                upstream)
    grad = upstream.float().numpy()
    softmax_keys_first_backward(grad, probs, dropped, 0.5)
    np.testing.assert_allclose(grad, want.numpy(), atol=1e-6)
    # without dropout, the weights are the probabilities
    probs = scores.numpy().copy()
    assert softmax_keys_first(probs, counts, 4, 0.5) is None
    want, = torch.autograd.grad(torch_softmax(logits, counts, 4, 0.5), logits, upstream)
    grad = upstream.float().numpy()
    softmax_keys_first_backward(grad, probs, probs, 0.5)
    np.testing.assert_allclose(grad, want.numpy(), atol=1e-6)


def test_bad_inputs():
    counts = np.ones(1, np.int64)
    with pytest.raises(ValueError, match=r"softmax_keys_first takes float32 \[blocks, n, n\] "
                                         r"scores, got float64 \(1, 2, 2\)"):
        softmax_keys_first(np.zeros((1, 2, 2)), counts, 1, 1.0)
    with pytest.raises(ValueError, match=r"got float32 \(1, 2, 3\)"):
        softmax_keys_first(np.zeros((1, 2, 3), np.float32), counts, 1, 1.0)
    with pytest.raises(ValueError, match=r"dropout probability must be in \[0, 1\), got 1.0"):
        softmax_keys_first(np.zeros((1, 2, 2), np.float32), counts, 1, 1.0, dropout=1.0)
