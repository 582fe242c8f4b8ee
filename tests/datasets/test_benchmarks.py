"""benchmarking-gnns' MNIST, CIFAR10, PATTERN, CLUSTER (PyG's GNNBenchmarkDataset) and
MalNet-Tiny (PyG's MalNetTiny) from tiny files the tests write in PyG's raw layouts: split
sizes, features as GraphGPS feeds them, the weighted accuracy against a hand computation, the
missing-file errors, and node classification over many graphs trained end to end."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from graphpe.datasets import WeightedAccuracy, load_dataset


def ring(n: int) -> torch.Tensor:
    """Both directions of the ring over ``n`` nodes."""
    i = torch.arange(n)
    j = (i + 1) % n
    return torch.stack([torch.cat([i, j]), torch.cat([j, i])])


def write_benchmark(root, name, sizes, graph):
    """PyG's layout of benchmarking-gnns' file: ``root/NAME/raw/NAME_v2.pt``, a list of the
    three splits, each a list of dicts (``graph(k)`` the k-th graph's)."""
    raw = root / name / "raw"
    raw.mkdir(parents=True)
    k = iter(range(sum(sizes)))
    torch.save([[graph(next(k)) for _ in range(size)] for size in sizes],
               raw / f"{name}_v2.pt")


def sbm_graph(k: int, classes: int = 2) -> dict:
    """A PATTERN-like graph: one-hot node features, a node label per node (node i of graph k
    is class (i + k) % classes), a useless edge feature."""
    n = 6 + k % 3
    edge_index = ring(n)
    return {"x": torch.nn.functional.one_hot(torch.arange(n) % 3, 3).float(),
            "edge_index": edge_index, "edge_attr": torch.ones(edge_index.size(1), 1),
            "y": (torch.arange(n) + k) % classes}


def image_graph(k: int, channels: int = 1) -> dict:
    n = 5 + k % 2
    edge_index = ring(n)
    return {"x": torch.rand(n, channels), "pos": torch.rand(n, 2), "edge_index": edge_index,
            "edge_attr": torch.rand(edge_index.size(1)), "y": torch.tensor([k % 10])}


def test_pattern_and_cluster_are_node_tasks_over_many_graphs(tmp_path):
    write_benchmark(tmp_path, "PATTERN", (6, 2, 3), sbm_graph)
    bundle = load_dataset("PATTERN", tmp_path)
    assert (len(bundle.train), len(bundle.val), len(bundle.test)) == (6, 2, 3)
    assert (bundle.task, bundle.metric, bundle.out_dim) == ("node_classification",
                                                            "weighted_accuracy", 2)
    assert bundle.higher_is_better and isinstance(bundle.evaluator, WeightedAccuracy)
    graph = bundle.train[0]
    assert graph.x.shape == (6, 3) and graph.y.shape == (6,) and graph.get("edge_attr") is None
    assert bundle.node_dim == 3 and bundle.edge_dim is None
    assert graph.get("train_mask") is None  # every node of a split's graphs is scored
    write_benchmark(tmp_path, "CLUSTER", (3, 1, 1), lambda k: sbm_graph(k, classes=6))
    cluster = load_dataset("CLUSTER", tmp_path)
    assert cluster.out_dim == 6 and len(cluster.train) == 3


@pytest.mark.parametrize("name, channels", [("MNIST", 1), ("CIFAR10", 3)])
def test_image_graphs_feed_intensity_and_position(tmp_path, name, channels):
    torch.manual_seed(0)
    graphs = [image_graph(k, channels) for k in range(7)]
    write_benchmark(tmp_path, name, (4, 2, 1), lambda k: graphs[k])
    bundle = load_dataset(name, tmp_path)
    assert (len(bundle.train), len(bundle.val), len(bundle.test)) == (4, 2, 1)
    assert (bundle.task, bundle.metric, bundle.out_dim) == ("graph_classification",
                                                            "accuracy", 10)
    assert bundle.node_dim == channels + 2 and bundle.edge_dim == 1
    first = bundle.train[0]
    assert torch.equal(first.x, torch.cat([graphs[0]["x"], graphs[0]["pos"]], dim=-1))
    assert torch.equal(first.edge_attr, graphs[0]["edge_attr"].view(-1, 1))
    assert int(bundle.test[0].y) == 6


def test_weighted_accuracy_is_benchmarking_gnns(tmp_path):
    y_true = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2])
    y_pred = np.array([0, 1, 0, 1, 1, 2, 0, 3, 2])
    # per class of the confusion matrix (0, 1, 2 and the only-predicted 3): 2/3, 2/2, 2/4, 0
    want = (2 / 3 + 1 + 2 / 4 + 0) / 4
    got = WeightedAccuracy().eval({"y_true": y_true, "y_pred": y_pred[:, None]})
    assert got == {"weighted_accuracy": pytest.approx(want)}
    with pytest.raises(ValueError, match="one class label"):
        WeightedAccuracy().eval({"y_true": y_true, "y_pred": np.zeros((9, 3))})


def test_missing_benchmark_files_are_named(tmp_path):
    with pytest.raises(FileNotFoundError) as error:
        load_dataset("PATTERN", tmp_path)
    message = str(error.value)
    assert message.startswith("PATTERN: files not found under the given root.")
    assert str(tmp_path / "PATTERN" / "raw" / "PATTERN_v2.pt") in message
    assert "--download" in message and "\n" not in message
    with pytest.raises(FileNotFoundError, match="split_info_tiny/type/"):
        load_dataset("MalNet-Tiny", tmp_path)


def write_malnet(root, split):
    """PyG's MalNetTiny layout: an ``.edgelist`` per graph (5 header lines, then ``u v``
    lines) under ``raw/malnet-graphs-tiny/<type>/<family>/``, the split's file names (without
    the suffix) in ``raw/split_info_tiny/type/<split>.txt``."""
    raw = root / "MalNetTiny" / "raw"
    (raw / "split_info_tiny" / "type").mkdir(parents=True)
    for part, names in split.items():
        for k, name in enumerate(names):
            path = raw / "malnet-graphs-tiny" / f"{name}.edgelist"
            path.parent.mkdir(parents=True, exist_ok=True)
            edges = [f"{i} {(i + 1) % (4 + k)}" for i in range(4 + k)]
            path.write_text("#\n#\n#\n#\n#\n" + "\n".join(edges) + "\n")
        (raw / "split_info_tiny" / "type" / f"{part}.txt").write_text(
            "".join(f"{name}\n" for name in names))


def test_malnet_tiny_split_and_degree_profile(tmp_path):
    write_malnet(tmp_path, {"train": ["adware/a/g0", "trojan/b/g1", "adware/a/g2"],
                            "val": ["benign/c/g3"], "test": ["trojan/b/g4", "addisplay/d/g5"]})
    bundle = load_dataset("MalNet-Tiny", tmp_path)
    assert (len(bundle.train), len(bundle.val), len(bundle.test)) == (3, 1, 2)
    assert (bundle.task, bundle.metric, bundle.out_dim) == ("graph_classification",
                                                            "accuracy", 5)
    graph = bundle.train[1]  # a directed 5-cycle: in and out degree 1 everywhere
    assert graph.x.shape == (5, 5) and bundle.node_dim == 5
    assert [int(g.y) for g in bundle.train] == [0, 1, 0] and int(bundle.test[0].y) == 1


def test_pattern_trains_end_to_end(tmp_path):
    """Node classification over many graphs: batches of whole graphs, no masks, every node
    trained on and scored by the weighted accuracy."""
    from graphpe.train import TrainConfig, evaluate, run

    write_benchmark(tmp_path, "PATTERN", (8, 3, 3), sbm_graph)
    bundle = load_dataset("PATTERN", tmp_path)
    record = run(bundle, "rwse:walk_length=4", model="gps", channels=8, layers=1,
                 config=TrainConfig(epochs=2, batch_size=4, progress=False))
    assert record["metric"] == "weighted_accuracy" and 0.0 <= record["test"] <= 1.0

    class Constant(torch.nn.Module):  # class 1 for every node: half of each graph is right
        def forward(self, batch):
            return torch.tensor([[0.0, 1.0]]).expand(batch.num_nodes, 2)

    from torch_geometric.loader import DataLoader

    score = evaluate(Constant(), DataLoader(bundle.test, batch_size=2), bundle, "cpu", "test")
    assert score == pytest.approx(0.5)  # class 0 all wrong, class 1 all right
