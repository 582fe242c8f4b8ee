"""LCP's compiled host kernels (``ExecPlan(kernel="compiled")``) against the tensor kernels
(``ExecPlan(kernel="tensor")``), on generated batches of awkward graphs."""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from graphpe.ops import local_curvature_profile
from graphpe.ops.plan import ExecPlan
from tests.ops.strategies import batch_of, raw_graph


@settings(max_examples=50, deadline=None)
@given(st.lists(raw_graph(), min_size=1, max_size=5),
       st.sampled_from(["orc", "orc_bounds", "forman", "afrc"]), st.sampled_from([0.0, 0.5]))
def test_curvature_profile_compiled_equals_tensor(graphs, curvature, alpha):
    if curvature in ("forman", "afrc"):
        alpha = 0.0
    batch = batch_of(graphs)
    args = (batch.edge_index, batch.num_nodes, curvature, alpha)
    ours = local_curvature_profile(*args, ptr=batch.ptr, plan=ExecPlan(kernel="compiled"))
    ref = local_curvature_profile(*args, ptr=batch.ptr, plan=ExecPlan(kernel="tensor"))
    for a, b in zip(ours, ref, strict=True):
        torch.testing.assert_close(a, b, atol=1e-12, rtol=0)
