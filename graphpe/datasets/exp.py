"""EXP (Abboud et al., "The Surprising Power of Graph Neural Networks with Random Node
Initialization", IJCAI 2021): 1200 pairs of graphs that 1-WL cannot tell apart, read from its
text file; it has no download."""

from __future__ import annotations

from pathlib import Path

import torch
from torch_geometric.data import Data, InMemoryDataset

from graphpe.datasets.bundle import DatasetBundle, stratified_split

EXP_SOURCE = "https://github.com/ralphabb/GNN-RNI (Data/EXP/GRAPHSAT.txt)"


def read_exp(path: str | Path) -> list[Data]:
    """Read EXP (Abboud et al., 2021) from its text file ``GRAPHSAT.txt``.

    Format (the GIN repository's): the first line is the number of graphs; each graph is a line
    ``n label`` followed by ``n`` lines ``node_label num_neighbours nbr_1 ... nbr_k``. Node labels
    become one-hot ``x`` ``[n, 2]``, the graph label ``y`` ``[1]``.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(
            f"EXP: {path} not found. EXP has no download: place GRAPHSAT.txt (1200 graphs) "
            f"there, from {EXP_SOURCE}")
    lines = iter(path.read_text().split("\n"))
    num_graphs = int(next(lines).strip())
    graphs = []
    for _ in range(num_graphs):
        n, label = (int(v) for v in next(lines).split())
        node_labels, rows, cols = [], [], []
        for i in range(n):
            values = [int(v) for v in next(lines).split()]
            node_labels.append(values[0])
            nbrs = values[2 : 2 + values[1]]
            rows += [i] * len(nbrs)
            cols += nbrs
        edge_index = torch.tensor([rows, cols], dtype=torch.long).reshape(2, -1)
        x = torch.nn.functional.one_hot(torch.tensor(node_labels), 2).float()
        graphs.append(Data(x=x, edge_index=edge_index, y=torch.tensor([label]), num_nodes=n))
    return graphs


class EXP(InMemoryDataset):
    """EXP as a PyG dataset: reads ``root/raw/GRAPHSAT.txt`` (or ``root/GRAPHSAT.txt``)."""

    def __init__(self, root: str | Path, transform=None, pre_transform=None) -> None:
        self._source = Path(root) / "GRAPHSAT.txt"
        super().__init__(str(root), transform, pre_transform)
        self.load(self.processed_paths[0])

    @property
    def raw_file_names(self) -> list[str]:
        return ["GRAPHSAT.txt"]

    @property
    def processed_file_names(self) -> list[str]:
        return ["exp.pt"]

    def download(self) -> None:
        if self._source.exists():
            Path(self.raw_dir).mkdir(parents=True, exist_ok=True)
            (Path(self.raw_dir) / "GRAPHSAT.txt").write_bytes(self._source.read_bytes())
            return
        read_exp(Path(self.raw_dir) / "GRAPHSAT.txt")  # raises with the expected location

    def process(self) -> None:
        graphs = read_exp(self.raw_paths[0])
        if self.pre_transform is not None:
            graphs = [self.pre_transform(g) for g in graphs]
        self.save(graphs, self.processed_paths[0])


def load_exp(root: Path, pre_transform, seed: int = 0, fold: int = 0,
             download: bool = False, **_) -> DatasetBundle:
    if download and not (root / "EXP" / "raw" / "GRAPHSAT.txt").exists():
        raise FileNotFoundError(f"EXP has no download: place GRAPHSAT.txt under "
                                f"{root / 'EXP' / 'raw'}, from {EXP_SOURCE}")
    ds = EXP(root / "EXP", pre_transform=pre_transform)
    train, val, test = stratified_split(ds._data.y, seed=seed, fold=fold)
    return DatasetBundle("EXP", ds[train], ds[val], ds[test], task="graph_classification",
                         metric="accuracy", out_dim=2, node_dim=2)
