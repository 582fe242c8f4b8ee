"""SGFormer and Polynormer (graphpe.nn.scalable) against PyG's models with the same weights,
Polynormer's two stages, build_model's checks, and training on Cora with a PE through
graphpe.train.run."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch_geometric.data import Batch, Data
from torch_geometric.nn.models import Polynormer as PyGPolynormer
from torch_geometric.nn.models import SGFormer as PyGSGFormer

from graphpe.nn import Polynormer, SGFormer, build_model, load_model
from graphpe.train import TrainConfig, run
from tests.conftest import copy_shared

TOL = {"rtol": 1e-5, "atol": 1e-5}
C, OUT = 16, 5


def random_graph(n: int, seed: int, p: float = 0.1) -> Data:
    """An Erdos-Renyi graph (both directions of every edge) with ``C`` Gaussian features."""
    g = torch.Generator().manual_seed(seed)
    upper = torch.triu(torch.rand(n, n, generator=g) < p, diagonal=1)
    edge_index = upper.nonzero().t()
    return Data(x=torch.randn(n, C, generator=g), num_nodes=n,
                edge_index=torch.cat([edge_index, edge_index.flip(0)], 1))


def _graphs() -> list[Data | Batch]:
    """One graph, and a batch of three graphs of equal size (PyG pads nothing then)."""
    return [random_graph(60, 0), Batch.from_data_list([random_graph(20, s) for s in (1, 2, 3)])]


def _pyg_forward(pyg, data) -> torch.Tensor:
    batch = data.get("batch")
    batch = torch.zeros(data.num_nodes, dtype=torch.long) if batch is None else batch
    return pyg(data.x, data.edge_index, batch)


def _with_pyg_weights(ours, pyg):
    """``ours`` with PyG's weights and an identity node embedding (PyG has none)."""
    ours.load_pyg_state_dict(pyg.state_dict())
    with torch.no_grad():
        ours.node_input.layer.weight.copy_(torch.eye(C))
        ours.node_input.layer.bias.zero_()
    return ours


def _check_parity(ours, pyg) -> None:
    """Eval and train mode (dropout 0), on each graph of :func:`_graphs`: log-probabilities,
    and the batch norms' running statistics after the training forwards."""
    for mode in (False, True):
        ours.train(mode), pyg.train(mode)
        for data in _graphs():
            torch.testing.assert_close(F.log_softmax(ours(data), -1), _pyg_forward(pyg, data),
                                       **TOL)
    ours_stats = {k: v for k, v in ours.state_dict().items() if "running_" in k}
    pyg_stats = {k: v for k, v in pyg.state_dict().items() if "running_" in k}
    assert ours_stats.keys() == pyg_stats.keys()
    for key, value in pyg_stats.items():
        torch.testing.assert_close(ours_stats[key], value, **TOL)


@pytest.mark.parametrize("aggregate, heads, layers", [("add", 1, (2, 3)), ("cat", 2, (1, 2)),
                                                      ("add", 4, (3, 1))])
def test_sgformer_equals_pygs(aggregate, heads, layers):
    trans_layers, gnn_layers = layers
    torch.manual_seed(0)
    pyg = PyGSGFormer(C, C, OUT, trans_num_layers=trans_layers, trans_num_heads=heads,
                      trans_dropout=0.0, gnn_num_layers=gnn_layers, gnn_dropout=0.0,
                      graph_weight=0.3, aggregate=aggregate)
    ours = SGFormer(C, gnn_layers, OUT, trans_num_layers=trans_layers, heads=heads,
                    graph_weight=0.3, aggregate=aggregate, node_dim=C, dropout=0.0)
    _check_parity(_with_pyg_weights(ours, pyg), pyg)


POLYNORMER = [
    {},
    {"local_attn": True, "pre_ln": True},
    {"post_bn": False, "qk_shared": True, "beta": 0.6},
    {"local_attn": True, "global_layers": 1, "qk_shared": True},
]


@pytest.mark.parametrize("settings", POLYNORMER, ids=lambda s: ",".join(s) or "defaults")
@pytest.mark.parametrize("stage", ["local", "global"])
def test_polynormer_equals_pygs_in_both_stages(settings, stage):
    torch.manual_seed(0)
    settings = {"global_layers": 2, **settings}
    pyg = PyGPolynormer(C, C, OUT, local_layers=3, in_dropout=0.0, dropout=0.0,
                        global_dropout=0.0, **settings)
    pyg._global = stage == "global"
    ours = Polynormer(C, 3, OUT, in_dropout=0.0, dropout=0.0, node_dim=C,
                      local_epochs=0 if stage == "global" else 5, **settings)
    assert ours.global_stage == pyg._global
    _check_parity(_with_pyg_weights(ours, pyg), pyg)


def test_polynormer_with_heads_equals_pygs_local_stage_and_runs_its_global_one():
    """PyG's global stage fails for heads > 1 (its attention is built for inputs of
    hidden_channels); ours takes the layers' width. The local stage (GATConv's heads) is
    PyG's."""
    torch.manual_seed(0)
    pyg = PyGPolynormer(C, C // 2, OUT, local_layers=2, heads=2, local_attn=True,
                        in_dropout=0.0, dropout=0.0, global_dropout=0.0)
    ours = Polynormer(C, 2, OUT, heads=2, local_attn=True, in_dropout=0.0, dropout=0.0,
                      node_dim=C, local_epochs=1)
    with pytest.raises(RuntimeError, match="size mismatch for global_attn.0.h_lins.weight"):
        ours.load_pyg_state_dict(pyg.state_dict())
    local = {k: v for k, v in pyg.state_dict().items() if not k.startswith("global_attn.")}
    missing, unexpected = ours.load_state_dict(local, strict=False)
    assert not [k for k in missing
                if not k.startswith(("node_input.", "global_attn.", "_extra_state"))]
    assert unexpected == ["lin_in.weight", "lin_in.bias"]
    with torch.no_grad():
        ours.node_input.layer.weight.copy_(torch.eye(C))
        ours.node_input.layer.bias.zero_()
    ours.eval(), pyg.eval()
    data = random_graph(30, 4)
    torch.testing.assert_close(F.log_softmax(ours(data), -1), _pyg_forward(pyg, data), **TOL)
    pyg._global = ours.global_stage = True
    with pytest.raises(RuntimeError, match="shapes cannot be multiplied"):
        _pyg_forward(pyg, data)
    assert torch.isfinite(ours(data)).all()


def test_load_pyg_state_dict_rejects_other_sizes():
    pyg = PyGSGFormer(C, C, OUT, trans_num_layers=1)
    with pytest.raises(ValueError, match="missing"):
        SGFormer(C, 3, OUT, trans_num_layers=2, node_dim=C).load_pyg_state_dict(
            pyg.state_dict())
    with pytest.raises(ValueError, match="unexpected"):
        SGFormer(C, 2, OUT, trans_num_layers=1, node_dim=C).load_pyg_state_dict(
            pyg.state_dict())


def test_polynormer_stage_follows_the_epoch_and_travels_with_the_state_dict():
    model = build_model({"model": "polynormer", "channels": 8, "layers": 2, "out_dim": 3,
                         "node_dim": C, "local_epochs": 2})
    assert not model.global_stage
    data = random_graph(25, 5)
    loss = model(data).sum()
    loss.backward()
    idle = {n for n, p in model.named_parameters() if p.grad is None}
    assert idle and all(n.startswith(("ln.", "global_attn.", "pred_global.")) for n in idle)
    for epoch, stage in ((0, False), (1, False), (2, True), (7, True)):
        model.set_epoch(epoch)
        assert model.global_stage is stage
    state = model.state_dict()
    fresh = build_model({"model": "polynormer", "channels": 8, "layers": 2, "out_dim": 3,
                         "node_dim": C, "local_epochs": 2})
    assert not fresh.global_stage
    fresh.load_state_dict(state)
    assert fresh.global_stage
    model.eval(), fresh.eval()
    torch.testing.assert_close(fresh(data), model(data))
    assert build_model({"model": "polynormer", "channels": 8, "layers": 1, "out_dim": 3,
                        "node_dim": C}).global_stage  # local_epochs 0: global throughout


@pytest.mark.parametrize("config, match", [
    ({"model": "sgformer", "task": "graph_regression"}, "node-level model"),
    ({"model": "polynormer", "task": "graph_classification"}, "node-level model"),
    ({"model": "sgformer", "pe": {"rwse": {}}, "reinject_pe": True}, "does not re-inject"),
    ({"model": "sgformer", "aggregate": "mean"}, "aggregate must be one of"),
    ({"model": "polynormer", "heads": 3}, "divisible by heads"),
    ({"model": "polynormer", "local_epochs": -1}, "local_epochs must be a non-negative int"),
    ({"model": "polynormer", "in_dropout": 1.0}, "in_dropout must be in"),
    ({"model": "sgformer", "dropout": 1.0}, "dropout must be in"),
    ({"model": "polynormer", "pe": {"peg": {}}}, "peg gates the messages"),
])
def test_invalid_configs_are_value_errors(config, match):
    with pytest.raises(ValueError, match=match):
        build_model({"channels": 8, "layers": 2, "out_dim": 3, "node_dim": 4, **config})


def _cora(tmp_path):
    from graphpe.datasets import load_dataset

    copy_shared("planetoid/Cora", tmp_path / "Cora")
    return load_dataset("Cora", tmp_path)


def test_sgformer_trains_on_cora_with_a_pe(tmp_path):
    bundle = _cora(tmp_path)
    record = run(bundle, "rwse:walk_length=8", model="sgformer", channels=16, layers=2,
                 config=TrainConfig(epochs=12, batch_size=1, lr=1e-2, warmup_epochs=0,
                                    patience=12, progress=False), trans_num_layers=1,
                 dropout=0.2)
    losses = [h["train_loss"] for h in record["history"]]
    assert losses[-1] < 0.7 * losses[0], losses
    assert record["model_config"]["pe"] == {"rwse": {"walk_length": 8, "estimate": "auto",
                                                     "walks": 256, "walk_seed": 0,
                                                     "max_exact_seconds": None}}
    assert record["val"] > 1 / 7


def test_polynormer_trains_on_cora_in_two_stages(tmp_path, monkeypatch):
    """Three local epochs, then the global stage: fit sets the stage before each epoch, and
    the loss falls within each stage; the checkpoint comes back in its stage."""
    epochs = []
    set_epoch = Polynormer.set_epoch
    monkeypatch.setattr(Polynormer, "set_epoch",
                        lambda self, e: (epochs.append(e), set_epoch(self, e))[1])
    bundle = _cora(tmp_path)
    ckpt = tmp_path / "poly.pt"
    record = run(bundle, "lap:k=4", model="polynormer", channels=16, layers=2,
                 config=TrainConfig(epochs=8, batch_size=1, lr=1e-2, warmup_epochs=0,
                                    patience=8, progress=False, checkpoint=str(ckpt)),
                 local_epochs=3, dropout=0.2, global_layers=1)
    assert epochs == list(range(8))
    losses = [h["train_loss"] for h in record["history"]]
    assert losses[2] < losses[0] and losses[-1] < losses[3], losses
    model = load_model(ckpt)
    assert model.global_stage == (record["best_epoch"] >= 3)
