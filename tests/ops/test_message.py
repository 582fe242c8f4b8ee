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
