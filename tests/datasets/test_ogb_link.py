"""OGB's link sets (graphpe.datasets.link.load_ogb_link) on tiny copies the tests write in
OGB's layout: the official split and negatives, the Evaluator's metric (Hits@K, and the MRR of
each edge against its own negatives), the graph a model reads, a missing file in one line, and
a link predictor trained on one."""

import numpy as np
import pytest
import torch

pytest.importorskip("ogb")

from graphpe.datasets.link import OGB_LINK_NAMES, load_link_dataset, load_ogb_link  # noqa: E402
from graphpe.datasets.nodes import ogb_files, ogb_meta  # noqa: E402
from tests.datasets.test_nodes import N, _csv, _ring_edges  # noqa: E402

NEGATIVES = 20  # ogbl-citation2's negatives per held-out edge here (1,000 in OGB's files)


def _pairs(rng: np.random.Generator, count: int) -> np.ndarray:
    return rng.integers(0, N, (count, 2))


def write_ogbl(root, name: str, seed: int = 0) -> dict:
    """OGB's raw layout of the link set ``name`` under ``root``, as the official zip unpacks:
    ``RELEASE_v1.txt``, ``raw/*.csv.gz`` and ``split/<split>/{train,valid,test}.pt`` (dicts
    of numpy arrays). The graph holds the training edges; returns the split written."""
    meta = ogb_meta(name)
    rng = np.random.default_rng(seed)
    folder = root / name.replace("-", "_")
    edges = _ring_edges(N)
    order = rng.permutation(len(edges))
    train, valid, test = edges[order[:40]], edges[order[40:50]], edges[order[50:]]
    _csv(folder / "raw" / "edge.csv.gz", train)
    _csv(folder / "raw" / "num-node-list.csv.gz", [[N]])
    _csv(folder / "raw" / "num-edge-list.csv.gz", [[len(train)]])
    if meta["has_node_attr"] == "True":
        _csv(folder / "raw" / "node-feat.csv.gz", rng.standard_normal((N, 4)))
    for key, rows in (("additional node files", N), ("additional edge files", len(train))):
        for extra in meta[key].split(","):
            if extra != "None":  # node_year, edge_weight, edge_year
                _csv(folder / "raw" / f"{extra}.csv.gz", rng.integers(1, 5, (rows, 1)))
    split = {}
    for part, held in (("train", train), ("valid", valid), ("test", test)):
        if name == "ogbl-citation2":
            split[part] = {"source_node": held[:, 0], "target_node": held[:, 1]}
            if part != "train":
                split[part]["target_node_neg"] = rng.integers(0, N, (len(held), NEGATIVES))
        else:
            split[part] = {"edge": held}
            if part != "train":
                split[part]["edge_neg"] = _pairs(rng, 3 * len(held))
        path = folder / "split" / meta["split"] / f"{part}.pt"
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save(split[part], path)
    (folder / "RELEASE_v1.txt").write_text("tiny copy written by the test\n")
    return split


def test_the_written_layout_is_what_the_loader_reads(tmp_path):
    for name in OGB_LINK_NAMES:
        write_ogbl(tmp_path, name)
        folder = tmp_path / name.replace("-", "_")
        written = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
        assert written == sorted(ogb_files(ogb_meta(name), link=True)), name


@pytest.mark.parametrize("name", ["ogbl-collab", "ogbl-ddi", "ogbl-ppa"])
def test_a_hits_set_keeps_its_split_negatives_and_metric(tmp_path, name):
    written = write_ogbl(tmp_path, name)
    split = load_link_dataset(name, tmp_path, seed=5)  # the seed draws nothing: OGB's split
    assert torch.equal(split.train_pos, torch.as_tensor(written["train"]["edge"]).t())
    assert torch.equal(split.test_neg, torch.as_tensor(written["test"]["edge_neg"]).t())
    meta = ogb_meta(name)
    assert split.select_by == meta["eval metric"] and split.negatives_per_positive is None
    assert split.graph.x.shape == ((N, 4) if meta["has_node_attr"] == "True" else (N, 1))
    # the model reads the training edges at test time too, as OGB's examples do by default
    assert torch.equal(split.message_edges("test"), split.message_edges("train"))
    from ogb.linkproppred import Evaluator

    pos, neg = np.linspace(0, 1, 7), np.linspace(-1, 0.5, 50)
    metrics = split.metrics(pos, neg)
    official = Evaluator(name).eval({"y_pred_pos": torch.as_tensor(pos, dtype=torch.float32),
                                     "y_pred_neg": torch.as_tensor(neg, dtype=torch.float32)})
    assert metrics[meta["eval metric"]] == pytest.approx(official[meta["eval metric"]])
    assert {"rocauc", "ap"} <= set(metrics)


def test_citation2_scores_each_edge_against_its_own_negatives(tmp_path):
    written = write_ogbl(tmp_path, "ogbl-citation2")
    split = load_ogb_link("ogbl-citation2", tmp_path)
    valid = written["valid"]
    assert split.negatives_per_positive == NEGATIVES and split.select_by == "mrr"
    assert torch.equal(split.val_pos, torch.as_tensor(
        np.stack([valid["source_node"], valid["target_node"]])))
    # the negatives of edge i are the i-th group, each starting at its edge's source
    assert split.val_neg.shape == (2, len(valid["source_node"]) * NEGATIVES)
    assert torch.equal(split.val_neg[0, NEGATIVES:2 * NEGATIVES],
                       torch.full((NEGATIVES,), int(valid["source_node"][1])))
    assert torch.equal(split.val_neg[1, :NEGATIVES], torch.as_tensor(valid["target_node_neg"][0]))
    rng = np.random.default_rng(1)
    pos = rng.standard_normal(len(valid["source_node"]))
    neg = rng.standard_normal(pos.size * NEGATIVES)
    ranks = 1 + (neg.reshape(pos.size, NEGATIVES) > pos[:, None]).sum(1)  # no ties here
    assert split.metrics(pos, neg)["mrr"] == pytest.approx(np.mean(1 / ranks), rel=1e-6)


def test_a_missing_file_is_one_line_naming_it(tmp_path):
    write_ogbl(tmp_path, "ogbl-collab")
    (tmp_path / "ogbl_collab" / "split" / "time" / "valid.pt").unlink()
    with pytest.raises(FileNotFoundError) as err:
        load_ogb_link("ogbl-collab", tmp_path)
    message = str(err.value)
    assert "\n" not in message and "1 missing: split/time/valid.pt" in message
    with pytest.raises(FileNotFoundError, match=r"^ogbl-ddi: files not found"):
        load_ogb_link("ogbl-ddi", tmp_path)


def test_a_link_predictor_trains_on_an_ogb_set_by_its_metric(tmp_path):
    from graphpe.link import fit_link
    from graphpe.train_config import TrainConfig

    write_ogbl(tmp_path, "ogbl-ddi")
    split = load_ogb_link("ogbl-ddi", tmp_path)
    record = fit_link(split, ("rwse",), "gcn", channels=8, layers=2,
                      config=TrainConfig(epochs=3, lr=0.01, patience=3, progress=False))
    assert record["select_by"] == "hits@20" and 0 <= record["test"]["hits@20"] <= 1
    assert 1 <= record["best_epoch"] <= 3


def test_the_command_line_trains_on_an_ogb_set_and_names_one_not_there(tmp_path, capsys):
    import json

    from tests.test_cli import run_cli

    write_ogbl(tmp_path, "ogbl-ddi")
    out = tmp_path / "ddi.json"
    base = ["train", "--task", "link", "--root", str(tmp_path), "--model", "gcn", "--channels",
            "8", "--layers", "2", "--epochs", "2", "--pe", "rwse"]
    code, _, err = run_cli([*base, "--dataset", "ogbl-ddi", "--results", str(out)], capsys)
    assert code == 0, err
    record = json.loads(out.read_text())
    assert record["dataset"] == "ogbl-ddi" and record["select_by"] == "hits@20"
    code, _, err = run_cli([*base, "--dataset", "ogbl-ppa"], capsys)
    assert code == 2 and err.startswith("graphpe: error: ogbl-ppa: files not found")
    assert err.count("\n") == 1
