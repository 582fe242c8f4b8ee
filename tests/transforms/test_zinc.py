"""Cross-checks on real molecules: ZINC-12k copied from ../shared/data (skipped if absent)."""

import numpy as np
import torch
from torch_geometric.transforms import AddRandomWalkPE

from graphpe.transforms import RWSE, LaplacianPE, precompute


def test_zinc_val_against_references(zinc_root):
    from torch_geometric.datasets import ZINC

    ds = ZINC(str(zinc_root), subset=True, split="val")
    out = precompute(ds, [LaplacianPE(8), RWSE(16)], progress=False)
    assert len(out) == len(ds) == 1000
    for i in range(0, 1000, 7):
        g, o = ds[i], out[i]
        assert torch.allclose(o.rwse, AddRandomWalkPE(16)(g).random_walk_pe, atol=1e-6)
        n = g.num_nodes
        a = np.zeros((n, n))
        a[g.edge_index[0].numpy(), g.edge_index[1].numpy()] = 1
        d = a.sum(1)
        w = np.linalg.eigvalsh(np.eye(n) - a / np.sqrt(np.outer(d, d)))
        m = min(8, n - 1)
        assert np.allclose(o.lap_eigvals[0, :m].numpy(), w[1 : 1 + m], atol=1e-5)
        assert o.lap_mask[0].sum() == m
