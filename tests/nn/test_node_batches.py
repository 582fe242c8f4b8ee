"""Node-level learning on one graph in mini-batches: PyG's ``NeighborLoader`` batches carry
the rows of encodings computed once on the whole graph (``batch.rwse ==
full.rwse[batch.n_id]``), and GPS with linear or Performer attention, SGFormer and Polynormer
train on them.

The loader is :func:`graphpe.sampling.neighbor_loader`: PyG's own loader (it cuts the
subgraph and copies the node attributes) with graphpe's compiled sampler, which needs neither
pyg-lib nor torch-sparse (tests/ops/test_neighbors.py checks the sampler)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch_geometric.data import Data
from torch_geometric.loader import NeighborLoader

from graphpe.encodings import pe_model_config, resolve_pe, transforms_of
from graphpe.nn import build_model
from graphpe.sampling import neighbor_loader

PE = "rwse:walk_length=8,lap:k=4"


def community_graph(seed: int = 0, blocks: int = 3, size: int = 40) -> Data:
    """Three communities (dense inside, sparse between), labels the community, node features
    the label's one-hot under noise; every PE of :data:`PE` computed once on the whole
    graph."""
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(blocks).repeat_interleave(size)
    n = blocks * size
    p = torch.where(y[:, None] == y[None, :], 0.15, 0.01)
    upper = torch.triu(torch.rand(n, n, generator=g) < p, diagonal=1).nonzero().t()
    x = F.one_hot(y, blocks).float() + 1.5 * torch.randn(n, blocks, generator=g)
    data = Data(x=x, y=y, num_nodes=n, edge_index=torch.cat([upper, upper.flip(0)], 1))
    for transform in transforms_of(resolve_pe(PE)):
        data = transform(data)
    return data


def loader(data: Data, **options) -> NeighborLoader:
    return neighbor_loader(data, [6, 4], batch_size=16, **options)


def test_neighbor_loader_batches_carry_the_whole_graphs_encoding_rows():
    torch.manual_seed(0)
    full = community_graph()
    assert full.rwse.shape == (120, 8) and full.lap_pe.shape == (120, 4)
    seen = torch.zeros(full.num_nodes, dtype=torch.bool)
    for batch in loader(full, shuffle=True):
        for key in ("rwse", "lap_pe", "lap_eigvals", "lap_mask", "x", "y"):
            assert torch.equal(batch[key], full[key][batch.n_id]), key
        # the seeds first, then their sampled neighbors; every edge is an edge of the graph
        assert batch.num_nodes == batch.n_id.numel() >= batch.batch_size
        assert torch.equal(full.edge_index[:, batch.e_id], batch.n_id[batch.edge_index])
        seen[batch.n_id[:batch.batch_size]] = True
    assert seen.all()  # one epoch's seeds cover the graph


@pytest.mark.parametrize("config", [
    {"model": "gps", "mpnn": "gin", "attention": "linear", "heads": 2},
    {"model": "gps", "mpnn": "gin", "attention": "performer", "heads": 2},
    {"model": "sgformer", "trans_num_layers": 1, "dropout": 0.1},
    {"model": "polynormer", "global_layers": 1, "dropout": 0.1},
], ids=lambda c: "-".join(str(v) for v in c.values()))
def test_models_train_on_neighbor_loader_batches(config):
    """A few epochs over NeighborLoader batches of the seeds' subgraphs, each batch carrying
    its nodes' PE rows: the loss on the seed nodes falls, and the model evaluated on the whole
    graph (the attention over all its nodes) beats chance."""
    torch.manual_seed(0)
    full = community_graph()
    model = build_model({"channels": 16, "layers": 2, "out_dim": 3, "node_dim": 3,
                         "task": "node_classification",
                         "pe": pe_model_config(resolve_pe(PE)), **config})
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(15):
        model.train()
        total = 0.0
        for batch in loader(full, shuffle=True):
            opt.zero_grad()
            out = model(batch)[:batch.batch_size]  # the seed nodes' rows come first
            loss = F.cross_entropy(out, batch.y[:batch.batch_size])
            loss.backward()
            opt.step()
            total += float(loss.detach()) * batch.batch_size
        losses.append(total / full.num_nodes)
    model.eval()
    with torch.no_grad():
        accuracy = (model(full).argmax(-1) == full.y).float().mean()
    assert losses[-1] < 0.8 * losses[0], losses
    assert accuracy > 0.6, accuracy  # chance: 1/3
