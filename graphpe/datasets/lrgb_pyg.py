"""The Long Range Graph Benchmark's sets that PyG's ``LRGBDataset`` reads (Dwivedi et al.,
NeurIPS 2022 Datasets and Benchmarks), each with its official split and metric:

- PascalVOC-SP (21 classes) and COCO-SP (81 classes): node classification on SLIC
  superpixel graphs of images (``x [n, 14]`` float, ``edge_attr [e, 2]`` float), scored by
  the macro F1 over all nodes of a split (:class:`~graphpe.datasets.metrics.MacroF1`). Each
  split is its own graphs and every node is scored (no masks).
- PCQM-Contact: link ranking in molecules (OGB's atom and bond features; ``edge_label_index``
  the candidate pairs of a graph, ``edge_label`` 1 for the pairs in 3-D contact), scored by
  LRGB's filtered mean reciprocal rank
  (:class:`~graphpe.datasets.metrics.FilteredMRR`). graphpe loads it and scores predictions,
  but its models and training loop have no link task yet: ``graphpe train`` refuses it with
  that reason.

Files, in ``LRGBDataset``'s layout (what LRGB's zips unpack to, renamed as PyG's download
does): ``root/pascalvoc-sp/raw/{train,val,test}.pickle`` (LRGB's
``voc_superpixels_edge_wt_region_boundary`` folder), ``root/coco-sp/raw/
{train,val,test}.pickle`` (``coco_superpixels_edge_wt_region_boundary``; PyG maps COCO's 81
non-contiguous category ids to 0..80) and ``root/pcqm-contact/raw/{train,val,test}.pt``
(``pcqmcontact``). Processed once into ``processed/``.
"""

from __future__ import annotations

from pathlib import Path

import torch

from graphpe.datasets.bundle import DatasetBundle, require_files
from graphpe.datasets.metrics import FilteredMRR, MacroF1

#: graphpe's name -> (PyG's name and folder, raw file suffix, classes, LRGB's download folder)
LRGB_SETS = {
    "PascalVOC-SP": ("pascalvoc-sp", "pickle", 21, "voc_superpixels_edge_wt_region_boundary"),
    "COCO-SP": ("coco-sp", "pickle", 81, "coco_superpixels_edge_wt_region_boundary"),
    "PCQM-Contact": ("pcqm-contact", "pt", 1, "pcqmcontact"),
}
LRGB_PYG_NAMES = tuple(LRGB_SETS)


def positive_pairs(data) -> torch.Tensor:
    """A PCQM-Contact graph's pairs in contact, ``[2, p]`` (its ``edge_label_index`` where
    ``edge_label`` is 1): the ``y_true`` entry of :class:`FilteredMRR` for the graph."""
    return data.edge_label_index[:, data.edge_label.view(-1) == 1]


def load_lrgb_pyg(name: str, root: Path, pre_transform, download: bool = False,
                  **_) -> DatasetBundle:
    """PascalVOC-SP, COCO-SP or PCQM-Contact through PyG's ``LRGBDataset`` (see the module
    docstring), its train/val/test files as the three splits."""
    from torch_geometric.datasets import LRGBDataset

    folder, suffix, classes, lrgb_folder = LRGB_SETS[name]
    raw = root / folder / "raw"
    files = [raw / f"{split}.{suffix}" for split in ("train", "val", "test")]
    require_files(name, files, f"{raw}/{{train,val,test}}.{suffix} (LRGBDataset's layout: the "
                  f"files of LRGB's {lrgb_folder} folder)", download, every=True)
    splits = [LRGBDataset(str(root), folder, split=split, pre_transform=pre_transform)
              for split in ("train", "val", "test")]
    if name == "PCQM-Contact":
        from ogb.utils.features import get_atom_feature_dims, get_bond_feature_dims

        return DatasetBundle(name, *splits, task="link_ranking", metric="mrr", out_dim=1,
                             node_vocab=list(get_atom_feature_dims()),
                             edge_vocab=list(get_bond_feature_dims()),
                             evaluator=FilteredMRR())
    data = splits[0]._data
    return DatasetBundle(name, *splits, task="node_classification", metric="f1",
                         out_dim=classes, node_dim=data.x.size(-1),
                         edge_dim=data.edge_attr.size(-1), evaluator=MacroF1())
