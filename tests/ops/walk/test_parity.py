"""RWSE's compiled host kernel (``ExecPlan(kernel="compiled")``) against the batched tensor kernel
(``ExecPlan(kernel="tensor")``), on generated batches of awkward graphs (RRWP's and SPD's are in
``test_pairs.py``)."""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from graphpe.ops import random_walk_landing_probs
from graphpe.ops.plan import ExecPlan
from tests.ops.strategies import batch_of, raw_graph


@settings(max_examples=60, deadline=None)
@given(st.lists(raw_graph(weighted=True), min_size=1, max_size=5), st.integers(1, 9))
def test_landing_probs_compiled_equals_tensor(graphs, walk_length):
    batch = batch_of(graphs)
    args = (batch.edge_index, batch.num_nodes, walk_length)
    kw = dict(ptr=batch.ptr, edge_weight=batch.get("edge_weight"))
    ours = random_walk_landing_probs(*args, **kw, plan=ExecPlan(kernel="compiled"))
    ref = random_walk_landing_probs(*args, **kw,
        plan=ExecPlan(kernel="tensor", compute_dtype=torch.float64))
    torch.testing.assert_close(ours, ref.float(), atol=1e-6, rtol=0)


def test_landing_probs_exact_where_the_walk_is():
    """On a triangle the 2-step return probability is exactly 1/2 (float64 inside)."""
    ei = torch.tensor([[0, 1, 1, 2, 2, 0], [1, 0, 2, 1, 0, 2]])
    rwse = random_walk_landing_probs(ei, 3, 3, plan=ExecPlan(kernel="compiled"))
    assert rwse[:, 1].tolist() == [0.5, 0.5, 0.5]
    assert rwse[:, 2].tolist() == [0.25, 0.25, 0.25]
