"""Laplacian eigenvectors, RWSE and RFP for one large graph, never densified.

    python examples/large_graph.py              # a 100,000-node graph
    python examples/large_graph.py 2000000      # bigger; use a CUDA device if there is one

Above ``dense_max_nodes`` (384), ``LaplacianPE`` switches to Chebyshev-filtered subspace
iteration on the graph's device (component vectors deflated, residuals checked); RWSE applies
the sparse random-walk matrix to blocks of identity columns; RFP is a sparse product per step.
"""

import sys
import time

import torch
from torch_geometric.data import Data

import graphpe

num_nodes = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
device = "cuda" if torch.cuda.is_available() else "cpu"
gen = torch.Generator().manual_seed(0)
# a random graph with mean degree 8, made connected by a ring through all nodes
edges = torch.randint(0, num_nodes, (2, 4 * num_nodes), generator=gen)
ring = torch.arange(num_nodes)
edges = torch.cat([edges, torch.stack([ring, ring.roll(1)])], dim=1)
data = Data(edge_index=torch.cat([edges, edges.flip(0)], dim=1), num_nodes=num_nodes).to(device)

start = time.perf_counter()
data = graphpe.transforms.LaplacianPE(k=8)(data)
print(f"LapPE k=8 on {num_nodes:,} nodes: {time.perf_counter() - start:.1f} s")
print("eigenvalues:", [round(v, 4) for v in data.lap_eigvals[0].tolist()])

# the same solver as a function, with its residuals
lap = graphpe.ops.laplacian(data.edge_index, num_nodes, dtype=torch.float64)
vecs = data.lap_pe.double()
residual = (lap @ vecs - vecs * data.lap_eigvals[0].double()).norm(dim=0).max()
print(f"largest residual ||L v - lambda v||: {float(residual):.1e}")

start = time.perf_counter()
data = graphpe.transforms.RFP(dim=16, steps=8, num_draws=1, seed=0)(data)
print(f"RFP(16, 8): {time.perf_counter() - start:.1f} s, shape {tuple(data.rfp.shape)}")
