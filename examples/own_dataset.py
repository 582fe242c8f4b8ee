"""Train on an own dataset: a ``module:function`` that returns a ``DatasetBundle``.

    PYTHONPATH=examples graphpe train --dataset own_dataset:build --root /tmp/own --pe rwse,lap
    python examples/own_dataset.py                 # the same from Python

``build(root, pre_transform=None, seed=0, fold=0, download=False)`` is all graphpe needs: it
gets the folder given as ``--root`` and returns the splits and what the model must know (task,
metric, output width, node/edge feature vocabularies or widths). Here the graphs are generated:
molecule-like graphs labelled by their number of rings (a target only the structure gives).
"""

from __future__ import annotations

import torch

from graphpe.datasets import DatasetBundle, stratified_split
from graphpe.synthetic import molecule_like_graphs


def build(root, pre_transform=None, seed: int = 0, fold: int = 0,
          download: bool = False) -> DatasetBundle:
    graphs = molecule_like_graphs(300, seed=seed)
    for g in graphs:
        g.x = torch.zeros(g.num_nodes, 1, dtype=torch.long)  # no node features: one category
        rings = g.edge_index.size(1) // 2 - g.num_nodes + 1
        g.y = torch.tensor([min(rings, 3)])
    if pre_transform is not None:
        graphs = [pre_transform(g) for g in graphs]
    labels = torch.cat([g.y for g in graphs])
    train, val, test = stratified_split(labels, seed=seed, fold=fold)
    pick = lambda idx: [graphs[i] for i in idx.tolist()]  # noqa: E731
    return DatasetBundle("rings", pick(train), pick(val), pick(test),
                         task="graph_classification", metric="accuracy", out_dim=4,
                         node_vocab=1)


if __name__ == "__main__":
    from graphpe.train import TrainConfig, run

    record = run(build("/tmp/own"), {"rwse": {"walk_length": 8}, "lap": {"k": 4}},
                 model="gine", channels=32, layers=3,
                 config=TrainConfig(epochs=10, batch_size=32, progress=False))
    print(f"test accuracy {record['test']:.3f} with {record['params']:,} parameters")
