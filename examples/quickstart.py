"""Quickstart: RFP positional encodings in a PyG pipeline, and a GPS model that uses them.

    python examples/quickstart.py

With ZINC on disk this is ``ZINC(root, subset=True, pre_transform=RFP(dim=16, steps=8))``; here
the graphs are generated in code so the example runs anywhere.
"""

import torch
from torch_geometric.loader import DataLoader

import graphpe
from graphpe.encodings import pe_model_config, pe_spec
from graphpe.synthetic import molecule_like_graphs

# one spec: it builds the transform and the matching encoder (settings written once)
spec = pe_spec("rfp", dim=8, steps=4, num_draws=2, seed=0)
rfp = spec.transform()
graphs = [rfp(g) for g in molecule_like_graphs(200, seed=0)]  # as a PyG pre_transform would
for g in graphs:  # a target only the structure determines: the number of rings
    g.y = torch.tensor([float(g.edge_index.size(1) // 2 - g.num_nodes + 1)])

model = graphpe.build_model({
    "model": "gps", "channels": 32, "layers": 2, "out_dim": 1, "node_vocab": 1,
    "pe": pe_model_config([spec]),
})
loader = DataLoader(graphs, batch_size=32, shuffle=True)
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
for epoch in range(5):
    total = 0.0
    for batch in loader:
        opt.zero_grad()
        loss = torch.nn.functional.l1_loss(model(batch).view(-1), batch.y)
        loss.backward()
        opt.step()
        total += loss.item() * batch.num_graphs
    print(f"epoch {epoch + 1}: train MAE {total / len(graphs):.3f}")
print(f"batch.rfp: {list(batch.rfp.shape)} = [nodes, draws, dim * (steps + 1)]")
