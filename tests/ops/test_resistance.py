"""graphpe.ops.resistance: effective resistance of query pairs from a grounded sparse factor,
against the dense pseudo-inverse (graphpe.ops.walk.resistance_distances) and against the graph
with each pair's own edge removed."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from graphpe.ops.link import without_pairs
from graphpe.ops.resistance import pair_resistance
from graphpe.ops.walk import resistance_distances


def _graph(seed: int, n: int = 40, extra: int = 30) -> tuple[torch.Tensor, int]:
    """A tree plus ``extra`` random edges on ``n - 8`` nodes, a 7-node path (another
    component, all bridges) and an isolated node; both directions."""
    g = torch.Generator().manual_seed(seed)
    big = n - 8
    tree = torch.stack([torch.randint(0, i, (1,), generator=g)[0] for i in range(1, big)])
    edges = [torch.stack([tree, torch.arange(1, big)]),
             torch.randint(0, big, (2, extra), generator=g),
             torch.stack([torch.arange(big, big + 6), torch.arange(big + 1, big + 7)])]
    e = torch.cat(edges, dim=1)
    e = e[:, e[0] != e[1]]
    return torch.cat([e, e.flip(0)], dim=1), n


def _dense(edge_index: torch.Tensor, n: int) -> np.ndarray:
    enc = resistance_distances(edge_index, n, dtype=torch.float64)
    out = np.full((n, n), np.inf)
    out[enc.pair_index[0].numpy(), enc.pair_index[1].numpy()] = enc.values.numpy()
    return out


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_pair_resistance_equals_the_pseudo_inverse(seed):
    edge_index, n = _graph(seed)
    g = torch.Generator().manual_seed(seed)
    pairs = torch.cat([torch.randint(0, n, (2, 300), generator=g),
                       torch.tensor([[0, 5, 33, 39, 32], [0, 0, 38, 1, 39]])], dim=1)
    got = pair_resistance(edge_index, n, pairs).numpy()
    want = _dense(edge_index, n)[pairs[0].numpy(), pairs[1].numpy()]
    assert np.array_equal(np.isinf(got), np.isinf(want))
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-9, atol=1e-10)
    np.testing.assert_array_equal(got, pair_resistance(edge_index, n, pairs.flip(0)).numpy())
    assert got[-5] == 0.0 and np.isinf(got[-1])  # u = u; the isolated node


def test_without_own_edge_is_the_graph_without_that_edge():
    edge_index, n = _graph(3)
    src, dst = edge_index[:, :60]
    pairs = torch.stack([src, dst])
    got = pair_resistance(edge_index, n, pairs, without_own_edge=True).numpy()
    for q in range(pairs.size(1)):
        pair = pairs[:, q: q + 1]
        alone = pair_resistance(without_pairs(edge_index, pair, n), n, pair).numpy()[0]
        if np.isinf(alone):
            assert np.isinf(got[q])  # a bridge: its ends fall apart
        else:
            assert got[q] == pytest.approx(alone, rel=1e-8)
    # on the path every edge is a bridge; a non-edge pair is unchanged
    path = torch.tensor([[32, 33], [33, 36]])
    assert pair_resistance(edge_index, n, path[:, :1], without_own_edge=True)[0].isinf()
    assert pair_resistance(edge_index, n, torch.tensor([[32], [35]]),
                           without_own_edge=True)[0] == pytest.approx(3.0)


def test_the_sketch_is_unbiased_and_within_its_spread():
    """``sketch=k``: each estimate a mean of k squares around the exact value (relative
    spread sqrt(2 / k)); the mean over seeds converges to it; zeros and infinities exact."""
    edge_index, n = _graph(7)
    g = torch.Generator().manual_seed(1)
    pairs = torch.cat([torch.randint(0, 32, (2, 200), generator=g),
                       torch.tensor([[3, 0, 39], [3, 35, 2]])], dim=1)
    exact = pair_resistance(edge_index, n, pairs).numpy()
    k = 400
    draws = np.stack([pair_resistance(edge_index, n, pairs, sketch=k, seed=s).numpy()
                      for s in range(20)])
    assert np.all(draws[:, -3] == 0.0) and np.all(np.isinf(draws[:, -2:]))
    positive = exact[:-3] > 0
    relative = draws[:, :-3][:, positive] / exact[:-3][positive] - 1.0
    spread = np.sqrt(2.0 / k)
    assert np.abs(relative).max() < 6 * spread
    assert abs(relative.std() - spread) < 0.25 * spread
    # the mean of 20 draws: within 6 standard errors of the exact value, pair by pair
    assert np.abs(relative.mean(axis=0)).max() < 6 * spread / np.sqrt(20)
    np.testing.assert_array_equal(
        pair_resistance(edge_index, n, pairs, sketch=k, seed=3).numpy(), draws[3])


def test_pair_resistance_bad_input():
    edge_index, n = _graph(0)
    with pytest.raises(ValueError, match=r"^pairs must be a \[2, Q\] tensor of node ids, got "
                                         r"\[3, 2\]$"):
        pair_resistance(edge_index, n, torch.zeros(3, 2, dtype=torch.long))
    with pytest.raises(ValueError, match="pairs name node 40, outside the graph's 40 nodes"):
        pair_resistance(edge_index, n, torch.tensor([[0], [40]]))
    with pytest.raises(MemoryError, match="factor_laplacian: the LU factor would take more "
                                          "than max_factor_bytes=64 bytes"):
        pair_resistance(edge_index, n, torch.tensor([[0], [1]]), max_factor_bytes=64)
    with pytest.raises(ValueError, match="sketch must be a positive int, got 0"):
        pair_resistance(edge_index, n, torch.tensor([[0], [1]]), sketch=0)
    with pytest.raises(ValueError, match=r"^without_own_edge needs the exact resistance"):
        pair_resistance(edge_index, n, torch.tensor([[0], [1]]), sketch=8,
                        without_own_edge=True)
