"""The directed random walk's return probabilities (graphpe.ops.walk.directed), against dense
matrix powers and by their symmetries."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch_geometric.data import Data

from graphpe.ops.walk.directed import directed_landing_probs


def dense_reference(num_nodes, edge_index, walk_length, weight=None, sink="stay"):
    """``diag(P^t)`` by numpy matrix powers: ``A[i, j]`` the largest weight of the edges
    ``i -> j``, ``P = D_out^-1 A`` with the sink rule on the rows without out-edges."""
    a = np.zeros((num_nodes, num_nodes))
    w = np.ones(edge_index.shape[1]) if weight is None else weight.double().numpy()
    for (i, j), wij in zip(edge_index.T.tolist(), w, strict=True):
        a[i, j] = max(a[i, j], wij)
    out_degree = a.sum(1)
    p = np.divide(a, out_degree[:, None], out=np.zeros_like(a), where=out_degree[:, None] > 0)
    sinks = np.flatnonzero(out_degree == 0)
    if sink == "stay":
        p[sinks, sinks] = 1.0
    elif sink == "teleport":
        p[sinks, :] = 1.0 / num_nodes
    return np.stack([np.diag(np.linalg.matrix_power(p, t)) for t in range(1, walk_length + 1)],
                    axis=1)


def random_digraph(seed, n=None, weighted=False):
    """A directed graph with the inputs' awkward cases: sinks, isolated nodes, self loops,
    duplicate edges (of different weights), two-way edges and a second component."""
    rng = np.random.default_rng(seed)
    n = n or int(rng.integers(5, 15))
    a = rng.random((n, n)) < rng.uniform(0.1, 0.35)
    np.fill_diagonal(a, False)
    a[rng.integers(n)] = False  # a sink, at least
    src, dst = np.nonzero(a)
    pairs = list(zip(src.tolist(), dst.tolist(), strict=True))
    pairs += [pairs[k] for k in rng.integers(len(pairs), size=3)] if pairs else []
    pairs += [(v, v) for v in rng.choice(n, 2, replace=False).tolist()]
    # a directed 3-cycle feeding a sink, and an isolated node
    pairs += [(n, n + 1), (n + 1, n + 2), (n + 2, n), (n + 2, n + 3)]
    order = rng.permutation(len(pairs))
    edge_index = torch.tensor([pairs[k] for k in order], dtype=torch.long).T
    weight = (torch.tensor(rng.uniform(0.1, 3.0, edge_index.size(1))) if weighted else None)
    return Data(edge_index=edge_index, edge_weight=weight, num_nodes=n + 5)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("sink", ["stay", "teleport", "vanish"])
@pytest.mark.parametrize("weighted", [False, True])
def test_equals_dense_matrix_powers(seed, sink, weighted):
    data = random_digraph(seed, weighted=weighted)
    ours = directed_landing_probs(data.edge_index, data.num_nodes, 9,
                                  edge_weight=data.edge_weight, sink=sink, dtype=torch.float64)
    ref = dense_reference(data.num_nodes, data.edge_index, 9, data.edge_weight, sink)
    np.testing.assert_allclose(ours.numpy(), ref, atol=1e-12, rtol=0)
    assert directed_landing_probs(data.edge_index, data.num_nodes, 9,
                                  edge_weight=data.edge_weight, sink=sink).dtype == torch.float32


def test_the_sink_rules_on_a_path_into_a_sink():
    # 0 -> 1 -> 2, and 3 isolated: 2 and 3 are sinks; no walk returns to 0 or 1
    edge_index = torch.tensor([[0, 1], [1, 2]])
    stay = directed_landing_probs(edge_index, 4, 3, sink="stay")
    assert stay.tolist() == [[0, 0, 0], [0, 0, 0], [1, 1, 1], [1, 1, 1]]
    vanish = directed_landing_probs(edge_index, 4, 3, sink="vanish")
    assert not vanish.any()
    # teleport: from a sink to each of the 4 nodes with probability 1/4
    teleport = directed_landing_probs(edge_index, 4, 2, sink="teleport", dtype=torch.float64)
    assert teleport[3, 0] == 0.25 and teleport[2, 0] == 0.25
    # 0 -> 1 -> 2 -> teleport to 0: back after 3 steps with probability 1/4
    assert directed_landing_probs(edge_index, 4, 3, sink="teleport")[0, 2] == 0.25
    # a directed cycle returns at every multiple of its length, whatever the rule
    ring = torch.tensor([[0, 1, 2], [1, 2, 0]])
    for sink in ("stay", "teleport", "vanish"):
        assert directed_landing_probs(ring, 3, 6, sink=sink)[0].tolist() == [0, 0, 1, 0, 0, 1]


def test_direction_matters():
    # 0 -> 1, 0 -> 2, 1 -> 0: node 2 is a sink (it stays); reversed, 2 is a source that no
    # walk comes back to, and 0 has one way out instead of two
    edge_index = torch.tensor([[0, 0, 1], [1, 2, 0]])
    forward = directed_landing_probs(edge_index, 3, 2)
    backward = directed_landing_probs(edge_index.flip(0), 3, 2)
    assert forward[:, 1].tolist() == [0.5, 0.5, 1.0]
    assert backward[:, 1].tolist() == [1.0, 1.0, 0.0]


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), sink=st.sampled_from(["stay", "teleport", "vanish"]))
def test_relabelling_the_nodes_permutes_the_rows(seed, sink):
    data = random_digraph(seed, weighted=True)
    perm = torch.randperm(data.num_nodes, generator=torch.Generator().manual_seed(seed))
    inverse = torch.argsort(perm)
    ours = directed_landing_probs(data.edge_index, data.num_nodes, 6, sink=sink,
                                  edge_weight=data.edge_weight, dtype=torch.float64)
    permuted = directed_landing_probs(inverse[data.edge_index], data.num_nodes, 6, sink=sink,
                                      edge_weight=data.edge_weight, dtype=torch.float64)
    torch.testing.assert_close(permuted, ours[perm], atol=1e-12, rtol=0)


def test_bad_inputs_name_the_problem():
    with pytest.raises(ValueError, match="^edge_weight contains negative values$"):
        directed_landing_probs(torch.tensor([[0], [1]]), 2, 3, edge_weight=torch.tensor([-1.0]))
    with pytest.raises(ValueError, match="^directed_landing_probs densifies each graph: a graph "
                                         "of 5 nodes is above max_nodes=4$"):
        directed_landing_probs(torch.tensor([[0], [1]]), 5, 3, max_nodes=4)
    with pytest.raises(ValueError, match=r"^sink must be one of \('stay', 'teleport', "
                                         r"'vanish'\), got 'loop'$"):
        directed_landing_probs(torch.tensor([[0], [1]]), 2, 3, sink="loop")
