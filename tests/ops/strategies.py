"""Hypothesis strategies and helpers shared by the compiled-vs-tensor parity tests of the
encoding families (``tests/ops/<family>/test_parity.py``) and the host plumbing's tests."""

from __future__ import annotations

import torch
from hypothesis import strategies as st
from torch_geometric.data import Batch, Data


@st.composite
def raw_graph(draw, max_nodes: int = 14, weighted: bool = False) -> Data:
    """A graph as users hand it over: any edge list (directions, duplicates, loops)."""
    n = draw(st.integers(0, max_nodes))
    if n == 0:
        edges = []
    else:
        edges = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)),
                              max_size=3 * n))
    ei = torch.tensor(edges, dtype=torch.long).reshape(-1, 2).t().contiguous()
    data = Data(edge_index=ei, num_nodes=n)
    if weighted:
        w = draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0]), min_size=ei.size(1),
                          max_size=ei.size(1)))
        data.edge_weight = torch.tensor(w, dtype=torch.float64)
    return data


def batch_of(graphs: list[Data]) -> Batch:
    return Batch.from_data_list(graphs)
