"""Add Laplacian and random-walk encodings to a dataset and batch it — no download needed.

    python examples/laplacian_pe.py
"""

from torch_geometric.loader import DataLoader

import graphpe
from graphpe.synthetic import molecule_like_graphs

graphs = molecule_like_graphs(500, seed=0)
encoded = graphpe.transforms.precompute(
    graphs, [graphpe.transforms.LaplacianPE(k=8), graphpe.transforms.RWSE(walk_length=16)]
)
batch = next(iter(DataLoader(encoded, batch_size=64)))
print(batch)
print("eigenvalues of the first graph:", batch.lap_eigvals[0])
print("valid columns per node:", batch.lap_mask.sum(1)[:10].tolist())

# The same transforms run on a whole Batch in one call (e.g. inside a training step):
on_the_fly = graphpe.transforms.LaplacianPE(k=8, sign="random", seed=0)(batch)
print("random-sign PE:", on_the_fly.lap_pe.shape)
