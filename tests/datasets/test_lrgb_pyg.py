"""PascalVOC-SP, COCO-SP and PCQM-Contact through PyG's LRGBDataset, from tiny files the tests
write in its raw layout: split sizes and shapes, macro F1 and LRGB's filtered MRR against hand
computations, the missing-file error, and the clear refusal to train PCQM-Contact."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch

from graphpe.datasets import FilteredMRR, MacroF1, load_dataset
from graphpe.datasets.lrgb_pyg import positive_pairs


def superpixel_graph(k: int, labels) -> tuple:
    """One graph as LRGB's pickles hold it: ``(x [n, 14], edge_attr [e, 2], edge_index,
    y [n])``."""
    n = 4 + k % 3
    i = torch.arange(n)
    edge_index = torch.stack([torch.cat([i, (i + 1) % n]), torch.cat([(i + 1) % n, i])])
    y = torch.tensor([labels[(j + k) % len(labels)] for j in range(n)])
    return (torch.rand(n, 14), torch.rand(edge_index.size(1), 2), edge_index, y)


def write_superpixels(root, folder, sizes, labels):
    raw = root / folder / "raw"
    raw.mkdir(parents=True)
    k = 0
    for split, size in zip(("train", "val", "test"), sizes, strict=True):
        graphs = [superpixel_graph(k + j, labels) for j in range(size)]
        k += size
        with open(raw / f"{split}.pickle", "wb") as f:
            pickle.dump(graphs, f)


def test_pascalvoc_sp_is_node_classification_scored_by_macro_f1(tmp_path):
    torch.manual_seed(0)
    write_superpixels(tmp_path, "pascalvoc-sp", (5, 2, 2), labels=list(range(21)))
    bundle = load_dataset("PascalVOC-SP", tmp_path)
    assert (len(bundle.train), len(bundle.val), len(bundle.test)) == (5, 2, 2)
    assert (bundle.task, bundle.metric, bundle.out_dim) == ("node_classification", "f1", 21)
    assert (bundle.node_dim, bundle.edge_dim) == (14, 2) and bundle.higher_is_better
    graph = bundle.train[0]
    assert graph.x.dtype == torch.float32 and graph.y.shape == (4,)
    assert graph.get("train_mask") is None  # every node scored
    assert isinstance(bundle.evaluator, MacroF1)


def test_coco_sp_maps_cocos_category_ids(tmp_path):
    write_superpixels(tmp_path, "coco-sp", (2, 1, 1), labels=[0, 13, 90])
    bundle = load_dataset("COCO-SP", tmp_path)
    assert bundle.out_dim == 81
    assert set(bundle.train[0].y.tolist()) <= {0, 12, 80}  # PyG's remapping to 0..80
    assert 80 in bundle.train[0].y.tolist()


def test_macro_f1_is_sklearns():
    from sklearn.metrics import f1_score

    y_true = np.array([0, 0, 1, 1, 2, 2, 2, 3])
    y_pred = np.array([0, 1, 1, 1, 2, 0, 2, 4])
    # by hand: class 0 P 1/2 R 1/2 -> 1/2; class 1 P 2/3 R 1 -> 4/5; class 2 P 1 R 2/3 ->
    # 4/5; class 3 (never predicted) 0; class 4 (never true) 0
    want = (0.5 + 0.8 + 0.8 + 0 + 0) / 5
    got = MacroF1().eval({"y_true": y_true[:, None], "y_pred": y_pred[:, None]})
    assert got == {"f1": pytest.approx(want)}
    assert got["f1"] == pytest.approx(f1_score(y_true, y_pred, average="macro",
                                                zero_division=0))


def contact_graph(k: int) -> tuple:
    """One PCQM-Contact graph as LRGB's ``.pt`` files hold it: ``(x [n, 9], edge_attr [e, 3],
    edge_index, edge_label_index, edge_label)``."""
    n = 5
    i = torch.arange(n - 1)
    edge_index = torch.stack([torch.cat([i, i + 1]), torch.cat([i + 1, i])])
    label_index = torch.tensor([[0, 0, 1, 2], [2, 3, 4, 4]])
    label = torch.tensor([1, 0, 1, 0]) if k % 2 == 0 else torch.zeros(4, dtype=torch.long)
    return (torch.zeros(n, 9, dtype=torch.long), torch.zeros(edge_index.size(1), 3,
                                                             dtype=torch.long),
            edge_index, label_index, label)


def write_contact(root, sizes):
    raw = root / "pcqm-contact" / "raw"
    raw.mkdir(parents=True)
    for split, size in zip(("train", "val", "test"), sizes, strict=True):
        torch.save([contact_graph(k) for k in range(size)], raw / f"{split}.pt")


def test_filtered_mrr_is_lrgbs():
    # graph 1: positives (0, 1) and (0, 2); row 0 scores [0.9, 0.5, 0.7, 0.8]
    score = np.array([[0.9, 0.5, 0.7, 0.8], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0.]])
    pos = np.array([[0, 0], [1, 2]])
    # raw ranks: (0,1) behind 0.9, 0.7, 0.8 -> 4; (0,2) behind 0.9, 0.8 -> 3
    # filtered (the other positive left out): (0,1) -> 3 (0.9, 0.8); (0,2) -> 3
    # graph 2: no positive pair -> 0 (as LRGB's head counts it)
    got = FilteredMRR().eval({"y_pred": [score, np.zeros((2, 2))],
                              "y_true": [pos, np.zeros((2, 0))]})
    assert got["mrr"] == pytest.approx((1 / 3 + 1 / 3) / 2 / 2)
    assert got["mrr_raw"] == pytest.approx((1 / 4 + 1 / 3) / 2 / 2)
    assert got["hits@3"] == pytest.approx(0.5) and got["hits@1"] == 0.0


def test_pcqm_contact_loads_scores_and_refuses_to_train(tmp_path, capsys):
    write_contact(tmp_path, (4, 2, 2))
    bundle = load_dataset("PCQM-Contact", tmp_path)
    assert (len(bundle.train), len(bundle.val), len(bundle.test)) == (4, 2, 2)
    assert (bundle.task, bundle.metric) == ("link_ranking", "mrr") and bundle.higher_is_better
    graph = bundle.test[0]
    assert graph.x.shape == (5, 9) and graph.edge_label_index.shape == (2, 4)
    assert positive_pairs(graph).tolist() == [[0, 1], [2, 4]]
    # the evaluator on dot products of node embeddings, as LRGB's head scores pairs
    emb = torch.eye(5)
    emb[0, 2] = emb[1, 4] = 1.0  # (0, 2) and (1, 4) score 1, every other pair 0 or less
    scores = [(emb @ emb.T).numpy() for _ in bundle.test]
    got = bundle.evaluator.eval({"y_pred": scores,
                                 "y_true": [positive_pairs(g).numpy() for g in bundle.test]})
    # graph 0: (0,2) ranks behind (0,0) only -> 1/2; (1,4) behind (1,1) only -> 1/2;
    # graph 1 has no positive pair -> 0
    assert got["mrr"] == pytest.approx(0.25)
    with pytest.raises(ValueError, match="link-ranking task"):
        bundle.model_kwargs()
    from tests.test_cli import run_cli

    code, _, err = run_cli(["train", "--dataset", "PCQM-Contact", "--root", str(tmp_path),
                            "--epochs", "1"], capsys)
    assert code == 2 and "no link_ranking task yet" in err and "FilteredMRR" in err


def test_missing_lrgb_files_are_named(tmp_path):
    with pytest.raises(FileNotFoundError) as error:
        load_dataset("PascalVOC-SP", tmp_path)
    message = str(error.value)
    assert message.startswith("PascalVOC-SP: files not found under the given root.")
    assert f"{tmp_path}/pascalvoc-sp/raw/{{train,val,test}}.pickle" in message
    assert "voc_superpixels_edge_wt_region_boundary" in message and "--download" in message
    with pytest.raises(FileNotFoundError, match=r"pcqm-contact/raw/\{train,val,test\}\.pt"):
        load_dataset("PCQM-Contact", tmp_path)
