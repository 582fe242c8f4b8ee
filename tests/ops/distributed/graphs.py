"""Small graphs of the distributed tests: a random graph of two components (an
Erdos-Renyi-like graph and a path), weighted or not."""

from __future__ import annotations

import torch
from torch_geometric.data import Data


def two_components(n: int = 120, path: int = 7, degree: float = 6.0, seed: int = 0,
                   weighted: bool = False, isolated: int = 0) -> Data:
    """``n`` random nodes of average degree about ``degree`` (made connected by a ring),
    then a path of ``path`` nodes, then ``isolated`` nodes without edges; directed edges as
    drawn (graphpe symmetrizes)."""
    gen = torch.Generator().manual_seed(seed)
    m = int(n * degree / 2)
    src = torch.randint(0, n, (m,), generator=gen)
    dst = torch.randint(0, n, (m,), generator=gen)
    ring = torch.arange(n)
    chain = torch.arange(n, n + path - 1)
    edge_index = torch.stack([torch.cat([src, ring, chain]),
                              torch.cat([dst, (ring + 1) % n, chain + 1])])
    data = Data(edge_index=edge_index, num_nodes=n + path + isolated)
    if weighted:
        data.edge_weight = 0.5 + torch.rand(edge_index.size(1), generator=gen)
    return data
