"""Node-level learning on one graph in mini-batches: PyG's ``NeighborLoader`` batches carry
the rows of encodings computed once on the whole graph (``batch.rwse ==
full.rwse[batch.n_id]``), and GPS with linear or Performer attention, SGFormer and Polynormer
train on them.

Where neither pyg-lib nor torch-sparse is installed (PyG's samplers need one), the loader
takes :class:`TorchNeighborSampler`, the same directional sampling in plain torch: the
loader's own code still cuts the subgraph and copies the node attributes."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
import torch_geometric.typing
from torch_geometric.data import Data
from torch_geometric.loader import NeighborLoader
from torch_geometric.sampler import NeighborSampler, SamplerOutput

from graphpe.encodings import pe_model_config, resolve_pe, transforms_of
from graphpe.nn import build_model

HAS_SAMPLER = torch_geometric.typing.WITH_PYG_LIB or torch_geometric.typing.WITH_TORCH_SPARSE
PE = "rwse:walk_length=8,lap:k=4"
# (PyG's NeighborSampler warns of its deprecated path without pyg-lib: the test's sampler)
pytestmark = pytest.mark.filterwarnings("ignore:Using 'TorchNeighborSampler' without")


class TorchNeighborSampler(NeighborSampler):
    """``NeighborSampler``'s directional sampling of a homogeneous graph without pyg-lib or
    torch-sparse: for every node of the last hop, up to ``num_neighbors[hop]`` of its
    in-edges drawn without replacement (torch's generator), their sources added as new
    nodes in the order met (the seeds first)."""

    def _sample(self, seed: torch.Tensor, seed_time=None, **kwargs) -> SamplerOutput:
        nodes = seed.tolist()
        local = {n: i for i, n in enumerate(nodes)}
        frontier, rows, cols, edges = list(nodes), [], [], []
        sampled_nodes, sampled_edges = [len(nodes)], []
        for k in self.num_neighbors.get_mapped_values():
            new, count = [], 0
            for target in frontier:
                lo, hi = int(self.colptr[target]), int(self.colptr[target + 1])
                ids = torch.arange(lo, hi)
                if 0 <= k < hi - lo:
                    ids = ids[torch.randperm(hi - lo)[:k]]
                for e in ids.tolist():
                    source = int(self.row[e])
                    if source not in local:
                        local[source] = len(nodes)
                        nodes.append(source)
                        new.append(source)
                    rows.append(local[source])
                    cols.append(local[target])
                    edges.append(e)
                    count += 1
            frontier = new
            sampled_nodes.append(len(new))
            sampled_edges.append(count)

        def long(values):
            return torch.tensor(values, dtype=torch.long)

        return SamplerOutput(node=long(nodes), row=long(rows), col=long(cols),
                             edge=long(edges), batch=None, num_sampled_nodes=sampled_nodes,
                             num_sampled_edges=sampled_edges)


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
    sampler = None if HAS_SAMPLER else TorchNeighborSampler(data, num_neighbors=[6, 4])
    return NeighborLoader(data, num_neighbors=[6, 4], batch_size=16, neighbor_sampler=sampler,
                          **options)


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
    for _ in range(10):
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
