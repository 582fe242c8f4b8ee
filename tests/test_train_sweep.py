"""Reliability sweep of the paths users take after building a model: ``run``/``fit``, the
``graphpe`` command line (``train``, ``evaluate``, ``precompute``, ``--config``, ``--results``,
``--checkpoint``, ``--resume``) and checkpoints.

Everything is tiny (8 channels, 1 layer, 1-4 epochs) on small datasets generated here, so the
file runs in well under two minutes on one thread. The sweep is a pairwise-covering subset of
model kinds x PEs x tasks x precision x static shapes x DataLoader workers; the other tests
check one property each (resume, seeds, config files, the cache, clear errors).

The sweep found eight bugs, fixed since; their tests pin them: ``evaluate`` ignored the run's
precision and split seed and accepted a dataset the model was not built for, or a training
state; ``--config`` values skipped the flags' type checks and a non-object JSON crashed;
``--resume`` with another model's state was a traceback, and a resumed run's timings counted
only the resumed epochs; ``TrainConfig`` took ``epochs=0`` and negative patience or warm-up.
"""

from __future__ import annotations

import json
import math
import shutil
import types
import warnings
from dataclasses import asdict
from pathlib import Path

import pytest
import torch
from torch_geometric.data import Data
from torch_geometric.loader import DataLoader

import graphpe.train as train_module
from graphpe.datasets import DatasetBundle, node_split_masks
from graphpe.encode import encode_bundle
from graphpe.encodings import pe_model_config, resolve_pe, transforms_of
from graphpe.nn import load_model
from graphpe.records import CHECKPOINT_FORMAT, training_state_path
from graphpe.runtime import compile_support
from graphpe.synthetic import molecule_like_graphs
from graphpe.train import TrainConfig, evaluate, fit, run
from tests.test_cli import run_cli
from tests.test_train import csl_bundle

# ---------------------------------------------------------------------------------------------
# Own datasets (``module:function`` entry points the command line can load, too)
# ---------------------------------------------------------------------------------------------

REG = "tests.test_train_sweep:build_regression"
NODES = "tests.test_train_sweep:build_nodes"


def build_regression(root, pre_transform=None, seed: int = 0, fold: int = 0,
                     download: bool = False) -> DatasetBundle:
    """Graph regression on 40 small molecule-like graphs with atom and bond types (24/8/8);
    ``seed`` draws the graphs (as an own dataset may)."""
    gen = torch.Generator().manual_seed(seed)
    graphs = molecule_like_graphs(40, min_nodes=6, max_nodes=14, seed=seed)
    for g in graphs:
        g.x = torch.randint(0, 4, (g.num_nodes, 1), generator=gen)
        g.edge_attr = torch.randint(0, 3, (g.edge_index.size(1),), generator=gen)
        g.y = torch.tensor([g.num_nodes / 10 + 0.1 * float(g.x.sum()) / g.num_nodes])
    if pre_transform is not None:
        graphs = [pre_transform(g) for g in graphs]
    return DatasetBundle("regression", graphs[:24], graphs[24:32], graphs[32:],
                         task="graph_regression", metric="mae", out_dim=1, node_vocab=4,
                         edge_vocab=3)


def build_nodes(root, pre_transform=None, seed: int = 0, fold: int = 0,
                download: bool = False) -> DatasetBundle:
    """Cora-like node classification: one 60-node graph of 3 communities (a stochastic block
    model), float node features, stratified train/val/test masks (50/25/25)."""
    gen = torch.Generator().manual_seed(seed)
    n, classes = 60, 3
    y = torch.arange(n) % classes
    prob = torch.where(y[:, None] == y[None, :], torch.tensor(0.25), torch.tensor(0.02))
    adj = torch.triu(torch.rand(n, n, generator=gen) < prob, 1)
    edge_index = (adj | adj.T).nonzero().T.contiguous()
    x = torch.randn(n, 5, generator=gen) + torch.nn.functional.one_hot(y, 5).float()
    data = Data(x=x, edge_index=edge_index, y=y, num_nodes=n)
    data.train_mask, data.val_mask, data.test_mask = node_split_masks(
        y, (0.5, 0.25, 0.25), seed=seed, fold=fold)
    if pre_transform is not None:
        data = pre_transform(data)
    return DatasetBundle("sbm", [data], [data], [data], task="node_classification",
                         metric="accuracy", out_dim=classes, node_dim=5)


def not_a_bundle(root, **_):
    """A broken own-dataset hook (returns a list, not a DatasetBundle)."""
    return []


BUNDLES = {"reg": lambda: build_regression(None), "cls": csl_bundle,
           "node": lambda: build_nodes(None)}

# ---------------------------------------------------------------------------------------------
# Checks shared by the tests
# ---------------------------------------------------------------------------------------------

# what README's "Reproducible outputs" promises of --results (metrics, the per-epoch curve, the
# resolved PE specs, the model and training configs, the parameter count, timings, versions)
RECORD_KEYS = {"dataset", "metric", "val", "test", "best_epoch", "epochs_run", "history", "pe",
               "pe_seconds", "model", "model_config", "config", "params", "train_seconds",
               "seconds_per_epoch", "versions", "world_size"}
VERSION_KEYS = {"graphpe", "torch", "torch_geometric", "numpy", "python", "git_commit"}


def jsonable(value):
    return json.loads(json.dumps(value))


def reload_metric(checkpoint, bundle: DatasetBundle, split: str, precision: str) -> float:
    """The metric of ``load_model(checkpoint)`` alone on ``split``, its PEs encoded from the
    specs the checkpoint carries (what ``graphpe evaluate`` is meant to do)."""
    ckpt = torch.load(checkpoint, map_location="cpu", weights_only=True)
    encoded, _ = encode_bundle(bundle, transforms_of(resolve_pe(ckpt["record"]["pe"])))
    loader = DataLoader(getattr(encoded, split), batch_size=256)
    return evaluate(load_model(checkpoint), loader, encoded, "cpu", split, precision=precision)


def check_record_and_checkpoint(record: dict, config: TrainConfig, bundle: DatasetBundle,
                                pe, exact_val: bool = True) -> None:
    """The results JSON holds what the docs say and agrees with itself; the checkpoint rebuilds
    the trained model from the file alone, with the recorded test (and best val) metric."""
    saved = json.loads(Path(config.results).read_text())
    assert saved == jsonable(record)  # the file is the returned record
    assert RECORD_KEYS <= set(saved), RECORD_KEYS - set(saved)
    history = saved["history"]
    assert saved["epochs_run"] == len(history) >= 1
    assert [h["epoch"] for h in history] == list(range(len(history)))
    assert all(math.isfinite(h["train_loss"]) and math.isfinite(h["val"]) for h in history)
    vals = [h["val"] for h in history]
    best = max(vals) if bundle.higher_is_better else min(vals)
    assert saved["val"] == best and saved["best_epoch"] == vals.index(best)
    assert math.isfinite(saved["test"])
    assert saved["config"] == jsonable(asdict(config))
    specs = resolve_pe(pe)
    assert saved["pe"] == jsonable([s.to_dict() for s in specs])
    assert saved["model_config"]["pe"] == jsonable(pe_model_config(specs))
    assert saved["model_config"]["model"] == saved["model"]
    assert saved["model_config"]["task"] == bundle.model_kwargs()["task"]
    assert set(saved["versions"]) == VERSION_KEYS
    assert saved["versions"]["torch"] == torch.__version__ and saved["world_size"] == 1
    ckpt = torch.load(config.checkpoint, map_location="cpu", weights_only=True)
    assert ckpt["format"] == CHECKPOINT_FORMAT
    assert ckpt["record"] == {k: v for k, v in saved.items() if k != "history"}
    model = load_model(config.checkpoint)
    assert not model.training
    assert sum(p.numel() for p in model.parameters()) == saved["params"]
    assert not any(k.startswith("_orig_mod") for k in ckpt["state_dict"])
    assert reload_metric(config.checkpoint, bundle, "test", config.precision) == saved["test"]
    val = reload_metric(config.checkpoint, bundle, "val", config.precision)
    if exact_val:  # the checkpoint holds the best epoch's weights, not the last ones
        assert val == saved["val"]
    else:  # (a compiled model's val, an eager reload: equal up to rounding)
        assert val == pytest.approx(saved["val"], rel=1e-4, abs=1e-5)


def keep_every_state(monkeypatch) -> None:
    """Keep a copy of the training state after every epoch, ``<state>.epoch<N>``: what a run
    killed right after epoch N would have left beside its checkpoint."""
    real = train_module.save_training_state

    def save(path, state):
        real(path, state)
        shutil.copy(path, f"{path}.epoch{state['epoch']}")

    monkeypatch.setattr(train_module, "save_training_state", save)


# ---------------------------------------------------------------------------------------------
# 1. The sweep: run -> results JSON -> checkpoint -> load_model
# ---------------------------------------------------------------------------------------------

RFP = "rfp:dim=4:steps=2:num_draws=2"
SWEEP = [
    # id, data, model, pe, model kwargs, TrainConfig kwargs
    ("gine-none-reg", "reg", "gine", "none", {}, {}),
    ("gin-lcp-reg-bf16", "reg", "gin", "lcp", {}, {"precision": "bf16"}),
    ("gcn-lap-cls-workers", "cls", "gcn", "lap:k=3", {}, {"num_workers": 2}),
    ("gatedgcn-spe-cls", "cls", "gatedgcn", "spe:k=3:m=2:rho_hidden=8:rho_layers=1", {}, {}),
    ("gps-rwse-rrwp-reg-static", "reg", "gps", "rwse:walk_length=4,rrwp:num_steps=4",
     {"heads": 2}, {"static_shapes": True}),
    ("gps-performer-gatedgcn-cls-bf16", "cls", "gps", "rwse:walk_length=4",
     {"heads": 2, "attention": "performer", "mpnn": "gatedgcn"}, {"precision": "bf16"}),
    ("gps-linear-node", "node", "gps", "rwse:walk_length=4", {"heads": 2, "attention": "linear"},
     {}),
    ("gps-attention-only-rfp-reg-static-workers", "reg", "gps", RFP + ":readout=trajectory",
     {"heads": 2, "mpnn": None}, {"static_shapes": True, "num_workers": 2}),
    ("grit-rrwp-reg-bf16", "reg", "grit", "rrwp:num_steps=4", {"heads": 2},
     {"precision": "bf16"}),
    ("graphormer-degree-spd-reg-workers", "reg", "graphormer",
     "degree,spd:max_dist=4:path_hops=2", {"heads": 2}, {"num_workers": 2}),
    ("gcn-lap-rfp-node-bf16", "node", "gcn", "lap:k=3," + RFP, {}, {"precision": "bf16"}),
    ("gin-rfp-cls-no-resample", "cls", "gin", RFP, {}, {"resample_pe": False}),
    ("gine-rfp-rwse-reg-warmup0", "reg", "gine", "rwse:walk_length=4," + RFP, {"dropout": 0.2},
     {"warmup_epochs": 0}),
    ("gps-lap-heat-cls-patience", "cls", "gps", "lap:k=3,heat:times=1/2", {"heads": 2},
     {"patience": 1}),
    ("sgformer-rwse-node-bf16", "node", "sgformer", "rwse:walk_length=4", {"heads": 2},
     {"precision": "bf16"}),
    # the local stage in epoch 0, the global one in epoch 1: the checkpoint keeps its stage
    ("polynormer-lap-node-stages", "node", "polynormer", "lap:k=3", {"local_epochs": 1}, {}),
]


@pytest.mark.parametrize("data, model, pe, model_kwargs, settings",
                         [pytest.param(*case[1:], id=case[0]) for case in SWEEP])
def test_sweep_records_and_reloads(data, model, pe, model_kwargs, settings, tmp_path):
    bundle = BUNDLES[data]()
    config = TrainConfig(epochs=2, batch_size=8, lr=5e-3, progress=False,
                         checkpoint=str(tmp_path / "m.pt"), results=str(tmp_path / "r.json"),
                         **{"warmup_epochs": 1, **settings})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # static shapes on the CPU
        record = run(bundle, pe, model=model, channels=8, layers=1, config=config,
                     **model_kwargs)
    check_record_and_checkpoint(record, config, bundle, pe)
    for key, value in model_kwargs.items():
        assert record["model_config"][key] == value


def test_compiled_run_checkpoint_reloads(tmp_path):
    """compile=True (the one compiled case: it is slow): the checkpoint holds the plain
    module's weights and reloads with load_model alone."""
    reason = compile_support("cpu")
    if reason is not None:
        pytest.skip(reason)
    bundle = build_regression(None)
    config = TrainConfig(epochs=1, batch_size=64, progress=False, compile=True,
                         checkpoint=str(tmp_path / "m.pt"), results=str(tmp_path / "r.json"))
    record = run(bundle, "rwse:walk_length=4", model="gcn", channels=8, layers=1,
                 config=config)
    check_record_and_checkpoint(record, config, bundle, "rwse:walk_length=4", exact_val=False)


# ---------------------------------------------------------------------------------------------
# 2. The command line: train -> results, checkpoint -> evaluate
# ---------------------------------------------------------------------------------------------

def cli_train(tmp_path, *argv: str, dataset: str = REG) -> list[str]:
    return ["train", "--dataset", dataset, "--root", str(tmp_path), "--channels", "8",
            "--layers", "1", "--batch-size", "8", "--no-retain-memory", *argv]


@pytest.mark.parametrize("dataset, argv", [
    pytest.param(REG, ["--model", "gps", "--heads", "2", "--pe", "rwse:walk_length=4," + RFP],
                 id="gps-rfp-regression-fp32"),
    pytest.param(NODES, ["--model", "gcn", "--pe", "lap:k=3"], id="gcn-lap-nodes-fp32"),
    pytest.param(REG, ["--model", "gps", "--heads", "2", "--pe", "rwse:walk_length=4",
                       "--precision", "bf16"], id="gps-rwse-regression-bf16"),
])
def test_cli_evaluate_equals_the_recorded_test_metric(dataset, argv, tmp_path, capsys):
    results, ckpt = tmp_path / "r.json", tmp_path / "m.pt"
    code, _, err = run_cli(cli_train(tmp_path, *argv, "--epochs", "2", "--results",
                                     str(results), "--checkpoint", str(ckpt), dataset=dataset),
                           capsys)
    assert code == 0, err
    record = json.loads(results.read_text())
    code, out, err = run_cli(["evaluate", "--checkpoint", str(ckpt), "--dataset", dataset,
                              "--root", str(tmp_path)], capsys)
    assert code == 0, err
    report = json.loads(out)
    assert report["trained_test"] == record["test"]
    assert report["value"] == record["test"]


# ---------------------------------------------------------------------------------------------
# 3. Resume: an interrupted run continues exactly ("as if never stopped", train.py)
# ---------------------------------------------------------------------------------------------

def test_cli_resume_after_an_interruption_equals_the_uninterrupted_run(tmp_path, capsys,
                                                                       monkeypatch):
    """The same command killed after epoch 1 (mid warm-up) and resumed from the state it left:
    the same curve, learning rates, best epoch, test metric and checkpoint as one run. GPS with
    dropout and RFP drawn afresh every epoch, so every RNG must be restored."""
    keep_every_state(monkeypatch)
    seen: dict = {"optimizer": None, "lrs": []}
    make_optimizer, loss_fn = train_module.make_optimizer, train_module.loss_fn

    def optimizer(*args, **kwargs):  # this run's optimizer
        seen["optimizer"] = make_optimizer(*args, **kwargs)
        return seen["optimizer"]

    def loss(*args):  # the learning rate each step runs with
        seen["lrs"].append(seen["optimizer"].param_groups[0]["lr"])
        return loss_fn(*args)

    monkeypatch.setattr(train_module, "make_optimizer", optimizer)
    monkeypatch.setattr(train_module, "loss_fn", loss)
    argv = ["--model", "gps", "--heads", "2", "--dropout", "0.2", "--pe",
            "rwse:walk_length=4," + RFP, "--epochs", "4", "--warmup", "2", "--lr", "0.01"]
    code, _, err = run_cli(cli_train(tmp_path, *argv, "--checkpoint", str(tmp_path / "a.pt"),
                                     "--results", str(tmp_path / "a.json")), capsys)
    assert code == 0, err
    straight_lrs, seen["lrs"] = seen["lrs"], []
    state = f"{training_state_path(str(tmp_path / 'a.pt'))}.epoch1"
    code, _, err = run_cli(cli_train(tmp_path, *argv, "--checkpoint", str(tmp_path / "b.pt"),
                                     "--results", str(tmp_path / "b.json"), "--resume", state),
                           capsys)
    assert code == 0, err
    steps = 3  # 24 training graphs in batches of 8
    assert straight_lrs[:steps] == [0.005] * steps and straight_lrs[steps] == 0.01  # warm-up
    assert straight_lrs[-1] < 0.01  # cosine decay
    assert seen["lrs"] == straight_lrs[2 * steps:]
    straight, resumed = (json.loads((tmp_path / f"{n}.json").read_text()) for n in "ab")
    assert resumed["history"] == straight["history"]
    for key in ("val", "test", "best_epoch", "epochs_run", "params"):
        assert resumed[key] == straight[key], key
    a, b = (torch.load(tmp_path / f"{n}.pt", weights_only=True)["state_dict"] for n in "ab")
    assert all(torch.equal(a[k], b[k]) for k in a) and a.keys() == b.keys()


def test_resume_restores_the_early_stopping_count(tmp_path, monkeypatch):
    """lr 0: no improvement after epoch 0, so patience 2 stops after epoch 2, also when resumed
    after epoch 1 (one epoch without improvement already counted)."""
    from graphpe.nn import build_model

    keep_every_state(monkeypatch)

    def fit_once(name, resume=None):
        bundle = csl_bundle()
        torch.manual_seed(0)
        model = build_model({"channels": 8, "layers": 1, **bundle.model_kwargs()})
        return fit(model, bundle, TrainConfig(epochs=10, patience=2, lr=0.0, batch_size=8,
                                              progress=False, resume=resume,
                                              checkpoint=str(tmp_path / name)))

    straight = fit_once("a.pt")
    resumed = fit_once("b.pt", resume=f"{training_state_path(str(tmp_path / 'a.pt'))}.epoch1")
    assert straight["epochs_run"] == resumed["epochs_run"] == 3
    assert resumed["history"] == straight["history"] and resumed["test"] == straight["test"]


def test_resumed_record_keeps_the_time_per_epoch(tmp_path, monkeypatch):
    """A fake clock: every epoch (one validation) takes 1 s, so both runs take 1 s per epoch."""
    clock = [0.0]
    real_evaluate = train_module.evaluate

    def timed_evaluate(*args, **kwargs):
        clock[0] += 1.0
        return real_evaluate(*args, **kwargs)

    monkeypatch.setattr(train_module, "evaluate", timed_evaluate)
    monkeypatch.setattr(train_module, "time", types.SimpleNamespace(perf_counter=lambda: clock[0]))
    keep_every_state(monkeypatch)

    def go(**kw):
        return run(build_regression(None), "none", channels=8, layers=1,
                   config=TrainConfig(epochs=4, batch_size=8, progress=False, **kw))

    straight = go(checkpoint=str(tmp_path / "a.pt"))
    assert straight["seconds_per_epoch"] == 1.0
    resumed = go(resume=f"{training_state_path(str(tmp_path / 'a.pt'))}.epoch2")
    assert resumed["epochs_run"] == 4
    assert resumed["seconds_per_epoch"] == pytest.approx(1.0)  # (was 0.25)


def test_resume_with_another_model_is_a_clear_error(tmp_path, capsys):
    ckpt = str(tmp_path / "m.pt")
    code, _, err = run_cli(cli_train(tmp_path, "--epochs", "1", "--checkpoint", ckpt), capsys)
    assert code == 0, err
    code, _, err = run_cli(cli_train(tmp_path, "--epochs", "2", "--channels", "16", "--resume",
                                     str(training_state_path(ckpt))), capsys)
    assert code == 2 and "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith(
        f"graphpe: error: {training_state_path(ckpt)} was written by another model: its "
        "settings differ in ['channels']")


# ---------------------------------------------------------------------------------------------
# 4. Seeds
# ---------------------------------------------------------------------------------------------

def test_same_seed_same_run_other_seed_other_run():
    """CPU, one thread: a seed fixes the whole run (init, shuffle, dropout, fresh RFP draws),
    with or without DataLoader workers; another seed changes it."""
    def seeded(seed, workers=0):
        return run(build_regression(None), "rwse:walk_length=4," + RFP, model="gps", heads=2,
                   dropout=0.2, channels=8, layers=1,
                   config=TrainConfig(epochs=2, batch_size=8, seed=seed, progress=False,
                                      num_workers=workers))

    first, again, workers, other = seeded(0), seeded(0), seeded(0, workers=2), seeded(1)
    for record in (again, workers):
        assert record["history"] == first["history"]
        assert (record["val"], record["test"]) == (first["val"], first["test"])
    assert other["history"][0]["train_loss"] != first["history"][0]["train_loss"]
    assert other["test"] != first["test"]


# ---------------------------------------------------------------------------------------------
# 5. --config files
# ---------------------------------------------------------------------------------------------

def test_json_config_applies_and_flags_override(tmp_path, capsys):
    config = tmp_path / "run.json"
    config.write_text(json.dumps({"model": "gps", "heads": 2, "attn-dropout": 0.1,
                                  "layers": 2, "epochs": 1, "batch_size": 4, "lr": 0.005,
                                  "pe": "rwse:walk_length=3", "seed": 3, "warmup": 0}))
    results = tmp_path / "r.json"
    code, _, err = run_cli(cli_train(tmp_path, "--config", str(config), "--seed", "0",
                                     "--results", str(results)), capsys)
    assert code == 0, err
    record = json.loads(results.read_text())
    model_config, train_config = record["model_config"], record["config"]
    assert model_config["model"] == "gps" and model_config["heads"] == 2
    assert model_config["attn_dropout"] == 0.1 and model_config["pe"]["rwse"]["walk_length"] == 3
    assert (train_config["lr"], train_config["warmup_epochs"]) == (0.005, 0)
    # flags given on the command line win over the file (cli_train passes these)
    assert model_config["layers"] == 1 and train_config["batch_size"] == 8
    assert train_config["seed"] == 0


def test_config_unknown_keys_are_refused(tmp_path, capsys):
    config = tmp_path / "run.toml"
    config.write_text('epochs = 1\nbogus = 2\nwarmup_epochs = 3\n')
    code, _, err = run_cli(cli_train(tmp_path, "--config", str(config)), capsys)
    assert code == 2
    assert err == (f"graphpe: error: --config {config}: unknown option(s) "
                   "['bogus', 'warmup_epochs']\n")


@pytest.mark.parametrize("text", ["epochs = 1.5\n", "epochs = 1\nseed = 0.5\n"])
def test_config_value_of_a_wrong_type_is_a_clear_error(text, tmp_path, capsys):
    config = tmp_path / "run.toml"
    config.write_text(text)
    code, _, err = run_cli(cli_train(tmp_path, "--config", str(config)), capsys)
    assert code == 2 and "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith(f"graphpe: error: --config {config}: ")
    assert "invalid int value" in err


def test_config_json_must_be_an_object(tmp_path, capsys):
    config = tmp_path / "run.json"
    config.write_text('["--epochs", "1"]')
    code, _, err = run_cli(cli_train(tmp_path, "--config", str(config)), capsys)
    assert code == 2 and err == (f"graphpe: error: --config {config}: expected a table of "
                                 "options (a JSON object), got a list\n")


# ---------------------------------------------------------------------------------------------
# 6. The PE cache across runs
# ---------------------------------------------------------------------------------------------

def test_cache_dir_is_reused_and_never_stale(tmp_path, capsys):
    cache = str(tmp_path / "cache")

    def train(pe, name, *extra):
        code, _, err = run_cli(cli_train(tmp_path, "--pe", pe, "--epochs", "1", "--cache-dir",
                                         cache, "--results", str(tmp_path / name), *extra),
                               capsys)
        assert code == 0, err
        return (err.count("cache hit"), err.count("cache written"),
                json.loads((tmp_path / name).read_text()))

    hits, written, first = train("rwse:walk_length=4,lap:k=3", "a.json")
    assert (hits, written) == (0, 3)  # train, val, test
    hits, written, second = train("rwse:walk_length=4,lap:k=3", "b.json")
    assert (hits, written) == (3, 0)  # nothing recomputed
    assert second["history"] == first["history"] and second["test"] == first["test"]
    # other settings or other graphs: computed afresh, never the stale entries
    hits, written, longer = train("rwse:walk_length=6,lap:k=3", "c.json")
    assert (hits, written) == (0, 3)
    assert longer["model_config"]["pe"]["rwse"]["walk_length"] == 6
    hits, written, _ = train("rwse:walk_length=4,lap:k=3", "d.json", "--seed", "1")
    assert (hits, written) == (0, 3)
    code, _, err = run_cli(["precompute", "--dataset", REG, "--root", str(tmp_path), "--pe",
                            "rwse:walk_length=6,lap:k=3", "--cache-dir", cache], capsys)
    assert code == 0 and err.count("cache hit") == 3 and "cache written" not in err


# ---------------------------------------------------------------------------------------------
# 7. Bad input: one "graphpe: error:" line (last on stderr, after any progress bar), exit 2
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("argv, message", [
    (["--pe", "rwse:walk_length=abc"], "rwse: walk_length must be a positive int, got 'abc'"),
    (["--pe", "lap:k=0"], "lap: k must be a positive int, got 0"),
    (["--pe", "lap:"], "--pe: '' in 'lap:' is not key=value"),
    (["--pe", "rwse,rwse"], "each PE may appear once, got ['rwse', 'rwse']"),
    (["--pe", "rrwp"], "pairwise encodings (['rrwp']) are attention biases or GRIT's pair "
                       "features: use model='gps', 'grit' or 'graphormer'"),
    (["--model", "gps", "--pe", "rrwp,spd"], "one pairwise encoding at a time, got "
                                             "['rrwp', 'spd']"),
    (["--model", "gps", "--heads", "3"], "channels=8 must be divisible by heads=3"),
    (["--model", "gps", "--static-shapes", "--pe", "rfp"],
     "StaticGPS does not support the PE encoder RFPEncoder"),
    (["--dataset", NODES, "--model", "gps", "--static-shapes"],
     "StaticGPS runs graph-level tasks"),
    (["--num-workers", "-1"], "num_workers must be a non-negative int, got -1"),
    (["--resume", "/nonexistent/m.pt.state"], "/nonexistent/m.pt.state: no such file "
                                              "(expected a graphpe training state"),
    (["--dataset", "tests.test_train_sweep:no_such"],
     "dataset 'tests.test_train_sweep:no_such': module 'tests.test_train_sweep' has no "
     "function 'no_such'"),
    (["--dataset", "tests.test_train_sweep:not_a_bundle"],
     "dataset 'tests.test_train_sweep:not_a_bundle': not_a_bundle() must return a "
     "graphpe.datasets.DatasetBundle, got list"),
])
def test_bad_input_is_one_clear_line(argv, message, tmp_path, capsys):
    code, _, err = run_cli(cli_train(tmp_path, "--epochs", "1", *argv), capsys)
    assert code == 2 and "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith("graphpe: error: " + message)


def test_evaluate_on_a_mismatched_dataset_is_a_clear_error(tmp_path, capsys):
    ckpt = str(tmp_path / "m.pt")
    code, _, err = run_cli(cli_train(tmp_path, "--epochs", "1", "--checkpoint", ckpt), capsys)
    assert code == 0, err
    code, _, err = run_cli(["evaluate", "--checkpoint", ckpt, "--dataset", NODES, "--root",
                            str(tmp_path)], capsys)
    assert code == 2 and err.strip().splitlines()[-1].startswith(
        f"graphpe: error: {ckpt} was not trained for {NODES}: ")


def test_evaluate_of_a_training_state_names_it(tmp_path, capsys):
    ckpt = str(tmp_path / "m.pt")
    code, _, err = run_cli(cli_train(tmp_path, "--epochs", "1", "--checkpoint", ckpt), capsys)
    assert code == 0, err
    code, _, err = run_cli(["evaluate", "--checkpoint", str(training_state_path(ckpt)),
                            "--dataset", REG, "--root", str(tmp_path)], capsys)
    assert code == 2 and "training state" in err and "bare state_dict" not in err


@pytest.mark.parametrize("setting", [{"epochs": 0}, {"patience": -1}, {"warmup_epochs": -1}])
def test_train_config_refuses_meaningless_values(setting):
    (name, value), = setting.items()
    low = 1 if name == "epochs" else 0
    with pytest.raises(ValueError, match=rf"^{name} must be an int >= {low}, got {value}$"):
        TrainConfig(**setting)


def test_evaluate_defaults_to_the_runs_split_seed(tmp_path, capsys):
    """The dataset here is drawn from the seed (as a TU split is): a run trained with --seed 1
    is evaluated on its own split unless --seed says otherwise."""
    ckpt = str(tmp_path / "m.pt")
    code, _, err = run_cli(cli_train(tmp_path, "--epochs", "1", "--seed", "1", "--checkpoint",
                                     ckpt), capsys)
    assert code == 0, err
    evaluate = ["evaluate", "--checkpoint", ckpt, "--dataset", REG, "--root", str(tmp_path)]
    code, out, err = run_cli(evaluate, capsys)
    assert code == 0, err
    report = json.loads(out)
    assert report["value"] == report["trained_test"]
    code, out, err = run_cli([*evaluate, "--seed", "0"], capsys)
    assert code == 0, err
    assert json.loads(out)["value"] != report["trained_test"]  # another draw of the data


def test_switches_set_in_a_config_file_can_be_turned_off(tmp_path, capsys):
    config = tmp_path / "run.toml"
    config.write_text('model = "gps"\nheads = 2\nepochs = 1\ngraph-token = true\n'
                      'pool = "token"\n')
    results = tmp_path / "r.json"
    code, _, err = run_cli(cli_train(tmp_path, "--config", str(config), "--no-graph-token",
                                     "--pool", "sum", "--results", str(results)), capsys)
    assert code == 0, err
    assert "graph_token" not in json.loads(results.read_text())["model_config"]
    config.write_text('epochs = 1\ncompile = "yes"\n')
    code, _, err = run_cli(cli_train(tmp_path, "--config", str(config)), capsys)
    assert code == 2 and err == (f"graphpe: error: --config {config}: compile takes true or "
                                 "false, got 'yes'\n")
