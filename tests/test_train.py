import json
import math

import pytest
import torch
from torch_geometric.data import Data

from graphpe.datasets import DatasetBundle, load_dataset, stratified_split
from graphpe.encode import pe_transforms
from graphpe.synthetic import csl_graphs
from graphpe.train import TrainConfig, fit, lr_lambda, run
from graphpe.transforms import RWSE, LaplacianPE
from tests.conftest import SHARED_DATA, copy_shared


def csl_bundle():
    graphs = csl_graphs(per_class=4, seed=0)
    labels = torch.cat([g.y for g in graphs])
    tr, va, te = stratified_split(labels, fractions=(0.5, 0.25, 0.25), seed=0)
    pick = lambda idx: [graphs[i] for i in idx.tolist()]  # noqa: E731
    return DatasetBundle("CSL", pick(tr), pick(va), pick(te), task="graph_classification",
                         metric="accuracy", out_dim=10, node_vocab=1)


def test_run_records_checkpoint_and_json(tmp_path):
    config = TrainConfig(epochs=3, batch_size=8, progress=False,
                         checkpoint=str(tmp_path / "best.pt"), results=str(tmp_path / "r.json"))
    record = run(csl_bundle(), ["rwse", "lcp"], model="gps", channels=16, layers=2,
                 config=config)
    assert record["epochs_run"] == 3 and 0.0 <= record["test"] <= 1.0
    assert json.loads((tmp_path / "r.json").read_text())["test"] == record["test"]
    assert [p["name"] for p in record["pe"]] == ["rwse", "lcp"]
    saved = json.loads((tmp_path / "r.json").read_text())
    estimate = {"estimate": "auto", "walks": 256, "walk_seed": 0, "max_exact_seconds": None}
    assert saved["pe"][0] == {"name": "rwse", "walk_length": 16, **estimate}
    assert saved["model_config"]["pe"]["rwse"] == {"walk_length": 16, **estimate}
    assert saved["versions"]["torch"] == torch.__version__ and saved["model"] == "gps"
    # how often each class is predicted on the test split: a constant predictor shows
    counts = saved["test_predicted_classes"]
    assert len(counts) == 10 and sum(counts) == len(csl_bundle().test)
    # the checkpoint alone rebuilds the model
    from graphpe.nn import load_model

    model = load_model(tmp_path / "best.pt")
    assert sum(p.numel() for p in model.parameters()) == record["params"]
    torch.save(model.state_dict(), tmp_path / "bare.pt")
    with pytest.raises(ValueError, match="holds a bare state_dict"):
        load_model(tmp_path / "bare.pt")


def test_early_stopping():
    from graphpe.nn import build_model

    bundle = csl_bundle()
    model = build_model({"channels": 8, "layers": 1, **bundle.model_kwargs()})
    record = fit(model, bundle, TrainConfig(epochs=50, patience=2, lr=0.0, batch_size=8,
                                            progress=False))
    assert record["epochs_run"] == 3  # lr 0: no improvement after the first epoch


def test_schedule_and_bad_pe():
    f = lr_lambda(2, 10)
    assert f(0) == 0.5 and f(1) == 1.0 and f(2) == pytest.approx(1.0) and f(10) == 0.0
    with pytest.raises(ValueError, match="unknown PE"):
        pe_transforms(["lap", "magic"])


def test_stratified_split_is_a_partition():
    labels = torch.arange(50) % 5
    tr, va, te = stratified_split(labels, seed=1, fold=2)
    all_idx = torch.cat([tr, va, te]).sort().values
    assert torch.equal(all_idx, torch.arange(50))
    assert torch.bincount(labels[te]).tolist() == [1] * 5


def test_missing_files_give_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"ZINC: files not found.*raw"):
        load_dataset("ZINC", tmp_path)
    with pytest.raises(FileNotFoundError, match="RELEASE_v1.txt"):
        load_dataset("ogbg-molesol", tmp_path)
    with pytest.raises(FileNotFoundError, match="MUTAG_"):
        load_dataset("MUTAG", tmp_path)
    # a name graphpe does not know is read as a TU dataset, and says so
    with pytest.raises(FileNotFoundError, match="graphpe reads a name it does not know as one"):
        load_dataset("QM9", tmp_path)
    with pytest.raises(ValueError, match="dataset must be a name, got None"):
        load_dataset(None, tmp_path)


@pytest.mark.parametrize("name, rel, metric", [
    ("MUTAG", "tu/MUTAG", "accuracy"),
    ("CSL", "csl/CSL", "accuracy"),
    ("ogbg-molesol", "ogb/ogbg_molesol", "rmse"),
    ("ogbg-molbace", "ogb/ogbg_molbace", "rocauc"),
])
def test_offline_datasets_train_one_epoch(tmp_path, name, rel, metric):
    dest = tmp_path / rel.split("/")[-1]
    copy_shared(rel, dest)
    bundle = load_dataset(name, tmp_path)
    assert bundle.metric == metric
    record = run(bundle, ["rwse"], channels=16, layers=2,
                 config=TrainConfig(epochs=1, batch_size=128, progress=False))
    assert record["test"] == record["test"]  # not NaN


def test_offline_zinc(zinc_root, tmp_path):
    (tmp_path / "ZINC").symlink_to(zinc_root, target_is_directory=True)
    bundle = load_dataset("ZINC", tmp_path)
    assert (len(bundle.train), len(bundle.val), len(bundle.test)) == (10000, 1000, 1000)
    assert SHARED_DATA.exists()


def test_node_classification_on_cora(tmp_path):
    copy_shared("planetoid/Cora", tmp_path / "Cora")
    bundle = load_dataset("Cora", tmp_path)
    assert bundle.task == "node_classification" and bundle.out_dim == 7
    record = run(bundle, ["rwse"], channels=16, layers=2,
                 config=TrainConfig(epochs=30, batch_size=1, lr=1e-2, progress=False))
    assert record["test"] > 0.4  # well above the 1/7 of chance after 30 full-batch epochs


@pytest.mark.parametrize("model,pe", [("sage", ["rwse"]), ("gcn", ["rfp"])])
def test_node_classification_on_sampled_mini_batches(tmp_path, model, pe):
    """Cora in NeighborLoader mini-batches (graphpe's sampler): each batch's loss on its seed
    nodes, val/test scored on their seeds; RFP's features redrawn every epoch (a new loader
    over the redrawn graph)."""
    copy_shared("planetoid/Cora", tmp_path / "Cora")
    bundle = load_dataset("Cora", tmp_path)
    config = TrainConfig(epochs=15, batch_size=32, lr=1e-2, progress=False,
                         num_neighbors=(10, 5), results=str(tmp_path / "r.json"))
    record = run(bundle, pe, model=model, channels=32, layers=2, config=config)
    assert record["test"] > 0.4  # chance: 1/7
    assert json.loads((tmp_path / "r.json").read_text())["config"]["num_neighbors"] == [10, 5]
    assert len(record["history"]) == 15


def test_encodings_of_each_sampled_subgraph(tmp_path, monkeypatch):
    """subgraph_pe: nothing is encoded ahead; every batch, training and evaluation, carries
    the encodings of its own subgraph (the transform applied to the batch's edges), not rows
    of the whole graph's."""
    import graphpe.train as train_module

    copy_shared("planetoid/Cora", tmp_path / "Cora")
    bundle = load_dataset("Cora", tmp_path)
    seen = []
    loader = train_module._node_loader

    def spy(*args, **kwargs):
        out = loader(*args, **kwargs)
        seen.append(next(iter(out)))
        return out

    monkeypatch.setattr(train_module, "_node_loader", spy)
    config = TrainConfig(epochs=15, batch_size=32, lr=1e-2, progress=False,
                         num_neighbors=(10, 5), subgraph_pe=True)
    record = run(bundle, "rwse:walk_length=8,lap:k=4", model="sage", channels=32,
                 layers=2, config=config)
    assert record["test"] > 0.4 and record["pe_seconds"] == 0.0  # chance: 1/7
    assert record["config"]["subgraph_pe"] is True
    assert "rwse" not in bundle.train[0]  # the whole graph is never encoded
    assert len(seen) == 3  # val, test, train
    rwse, lap = RWSE(walk_length=8), LaplacianPE(k=4)
    for batch in seen:
        alone = Data(edge_index=batch.edge_index, num_nodes=batch.num_nodes)
        torch.testing.assert_close(batch.rwse, rwse(alone.clone()).rwse)
        torch.testing.assert_close(batch.lap_eigvals, lap(alone.clone()).lap_eigvals)


def test_sampled_mini_batches_are_for_one_graph_and_checked():
    with pytest.raises(ValueError, match="num_neighbors must be ints >= 1 or -1"):
        TrainConfig(num_neighbors=(10, 0))
    with pytest.raises(ValueError, match="^subgraph_pe encodes each sampled subgraph: it needs "
                                         r"num_neighbors \(sampled mini-batches\)$"):
        TrainConfig(subgraph_pe=True)
    with pytest.raises(ValueError, match="is for node-level tasks on one graph; CSL is "
                                         "graph_classification"):
        run(csl_bundle(), [], model="gin", channels=8, layers=1,
            config=TrainConfig(epochs=1, progress=False, num_neighbors=(5,)))


def test_optimizer_is_fused_where_supported():
    from graphpe.train import make_optimizer

    opt = make_optimizer(torch.nn.Linear(3, 2), lr=1e-3, weight_decay=0.0)
    assert isinstance(opt, torch.optim.AdamW) and opt.defaults["fused"]


def test_adam_and_plateau_schedule():
    """optimizer='adam' is torch's Adam (weight decay added to the gradient); the plateau
    schedule multiplies the rate by plateau_factor once plateau_patience epochs pass without a
    better validation metric, never below min_lr, in the metric's direction."""
    from graphpe.train import make_optimizer, make_schedule, step_schedule

    opt = make_optimizer(torch.nn.Linear(3, 2), lr=1e-3, weight_decay=1e-5, kind="adam")
    assert type(opt) is torch.optim.Adam and opt.defaults["weight_decay"] == 1e-5
    config = TrainConfig(schedule="plateau", plateau_factor=0.5, plateau_patience=1,
                         min_lr=3e-4)
    for higher_is_better, vals in ((False, [1.0, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9]),
                                   (True, [0.1, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2])):
        opt = make_optimizer(torch.nn.Linear(3, 2), lr=1e-3, weight_decay=0.0)
        sched = make_schedule(opt, config, higher_is_better)
        rates = []
        for val in vals:
            step_schedule(sched, val)
            rates.append(opt.param_groups[0]["lr"])
        assert rates == pytest.approx([1e-3, 1e-3, 1e-3, 5e-4, 5e-4, 3e-4, 3e-4])
    cosine = make_schedule(opt, TrainConfig(epochs=10, warmup_epochs=2), False)
    assert isinstance(cosine, torch.optim.lr_scheduler.LambdaLR)


def test_the_run_records_each_epochs_rate_and_seconds_and_clips_as_told(monkeypatch):
    from graphpe.nn import build_model

    clipped = []
    original = torch.nn.utils.clip_grad_norm_
    monkeypatch.setattr(torch.nn.utils, "clip_grad_norm_",
                        lambda params, norm: clipped.append(norm) or original(params, norm))
    bundle = csl_bundle()
    for clip_norm in (0.0, 2.0):
        clipped.clear()
        model = build_model({"channels": 8, "layers": 1, **bundle.model_kwargs()})
        record = fit(model, bundle, TrainConfig(
            epochs=3, batch_size=8, progress=False, schedule="plateau", plateau_patience=0,
            plateau_factor=0.5, clip_norm=clip_norm))
        assert clipped == ([] if clip_norm == 0 else [2.0] * len(clipped)) and (
            clip_norm == 0 or clipped)
        history = record["history"]
        assert len(record["epoch_train_seconds"]) == 3
        assert all(seconds > 0 for seconds in record["epoch_train_seconds"])
        # the rate each epoch trained with: halved after every epoch whose validation accuracy
        # is no better than the best before it
        best, rate = -math.inf, 1e-3
        for h in history:
            assert h["lr"] == pytest.approx(rate)
            best, rate = (h["val"], rate) if h["val"] > best else (best, rate / 2)
        assert record["config"]["schedule"] == "plateau"


@pytest.mark.parametrize("settings, message", [
    ({"optimizer": "sgd"}, "optimizer must be one of ('adamw', 'adam'), got 'sgd'"),
    ({"schedule": "step"}, "schedule must be one of ('cosine', 'plateau', 'constant'), got 'step'"),
    ({"plateau_factor": 1.0}, "plateau_factor must be in (0, 1), got 1.0"),
    ({"plateau_patience": -1}, "plateau_patience must be an int >= 0, got -1"),
    ({"min_lr": -1e-5}, "min_lr must be a finite number >= 0, got -1e-05"),
    ({"clip_norm": float("inf")}, "clip_norm must be a finite number >= 0, got inf"),
])
def test_bad_optimizer_and_schedule_settings(settings, message):
    import re

    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        TrainConfig(**settings)


def test_compile_falls_back_with_a_warning_where_unsupported(monkeypatch):
    import graphpe.runtime as runtime

    model = torch.nn.Linear(3, 2)
    assert runtime.maybe_compile(model, False, "cpu") is model
    monkeypatch.setattr(runtime, "compile_support", lambda device: "no compiler here")
    with pytest.warns(UserWarning, match="compile=True ignored: no compiler here"):
        assert runtime.maybe_compile(model, True, "cpu") is model


def _eager_and_compiled_histories(**settings) -> tuple[list[dict], list[dict]]:
    """The per-epoch histories of a small GPS run on CSL without and with ``compile=True``
    (other TrainConfig ``settings`` alike); skips where torch.compile is unsupported."""
    from graphpe.runtime import compile_support

    if compile_support("cpu") is not None:
        pytest.skip(compile_support("cpu"))
    eager, compiled = (
        run(csl_bundle(), ["rwse"], model="gps", channels=16, layers=2,
            config=TrainConfig(epochs=2, batch_size=8, progress=False, compile=c,
                               **settings))["history"]
        for c in (False, True))
    return eager, compiled


@pytest.mark.slow
def test_compiled_training_matches_eager():
    eager, compiled = _eager_and_compiled_histories()
    for a, b in zip(eager, compiled, strict=True):
        assert a["train_loss"] == pytest.approx(b["train_loss"], rel=1e-3, abs=1e-4)


@pytest.mark.slow
@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_compiled_mixed_precision_training_follows_eager(precision):
    """``compile=True`` together with mixed precision (autocast inside the compiled model,
    fp16's GradScaler outside it): finite, and the losses of the eager mixed-precision run
    up to bfloat16/float16 rounding."""
    eager, compiled = _eager_and_compiled_histories(precision=precision)
    for a, b in zip(eager, compiled, strict=True):
        assert math.isfinite(b["train_loss"])
        assert a["train_loss"] == pytest.approx(b["train_loss"], rel=0.05)


@pytest.mark.parametrize("pe", [["rwse"], ["rwse", "rrwp"]])
def test_static_shapes_training_matches_eager(pe):
    """Fixed-shape batches (StaticGPS, one shape for the run) train as the eager GPS does,
    with an attention bias too."""
    eager = run(csl_bundle(), pe, model="gps", channels=16, layers=2,
                config=TrainConfig(epochs=2, batch_size=8, progress=False))
    with pytest.warns(UserWarning, match="on the CPU that is slower than the default"):
        static = run(csl_bundle(), pe, model="gps", channels=16, layers=2,
                     config=TrainConfig(epochs=2, batch_size=8, progress=False,
                                        static_shapes=True))
    records = [eager, static]
    eager, static = (r["history"] for r in records)
    for a, b in zip(eager, static, strict=True):
        assert a["train_loss"] == pytest.approx(b["train_loss"], rel=1e-4, abs=1e-5)
        assert a["val"] == b["val"]
    with pytest.raises(ValueError, match="StaticGPS runs a GPS model, got GINE"):
        run(csl_bundle(), ["rwse"], model="gine", channels=8, layers=1,
            config=TrainConfig(epochs=1, batch_size=8, progress=False, static_shapes=True))


@pytest.mark.slow
def test_static_compiled_training_matches_eager():
    eager, compiled = _eager_and_compiled_histories(static_shapes=True)
    for a, b in zip(eager, compiled, strict=True):
        assert a["train_loss"] == pytest.approx(b["train_loss"], rel=1e-3, abs=1e-4)


@pytest.mark.parametrize("schedule", [{}, {"schedule": "plateau", "plateau_patience": 0,
                                           "plateau_factor": 0.5, "optimizer": "adam"}])
def test_resuming_continues_the_run_exactly(tmp_path, schedule):
    """Stopped after 2 epochs and resumed to 4: the same curve and weights as 4 epochs at once
    (optimizer, schedule, best model, early-stopping count and every RNG restored)."""
    from graphpe.nn import build_model
    from graphpe.records import training_state_path

    def model():
        torch.manual_seed(0)
        return build_model({"model": "gps", "channels": 8, "layers": 1, "node_vocab": 1,
                            "out_dim": 10, "task": "graph_classification", "dropout": 0.2})

    def config(epochs, name, resume=None):
        return TrainConfig(epochs=epochs, batch_size=8, progress=False, warmup_epochs=1,
                           checkpoint=str(tmp_path / name), resume=resume, **schedule)

    straight_model = model()
    straight = fit(straight_model, csl_bundle(), config(4, "a.pt"))
    fit(model(), csl_bundle(), config(2, "b.pt"))  # the "interrupted" run
    resumed_model = model()
    resumed = fit(resumed_model, csl_bundle(),
                  config(4, "c.pt", resume=str(training_state_path(str(tmp_path / "b.pt")))))
    for key in ("train_loss", "val", "lr"):
        assert [h[key] for h in resumed["history"]] == [h[key] for h in straight["history"]]
    assert resumed["test"] == straight["test"]
    for a, b in zip(straight_model.state_dict().values(), resumed_model.state_dict().values(),
                    strict=True):
        assert torch.equal(a, b)
    with pytest.raises(ValueError, match="is not a graphpe training state"):
        fit(model(), csl_bundle(), config(4, "d.pt", resume=str(tmp_path / "a.pt")))


def test_retain_freed_host_memory_takes_effect_on_glibc():
    import platform

    from graphpe.runtime import retain_freed_host_memory

    took = retain_freed_host_memory()
    if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
        assert took
    x = torch.randn(300_000, 16)  # large blocks still allocate, free and compute as before
    assert torch.equal((x + x) - x, x)


@pytest.mark.parametrize("static", [False, True])
def test_worker_processes_give_the_same_run(static):
    """Training batches prepared in DataLoader worker processes (collation, and the static
    padding by StaticCollate) train exactly as those prepared in the loop."""
    import warnings

    records = []
    for workers in (0, 2):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # static shapes on the CPU
            records.append(run(csl_bundle(), ["rwse"], model="gps", channels=16, layers=2,
                               config=TrainConfig(epochs=2, batch_size=8, progress=False,
                                                  static_shapes=static, num_workers=workers)))
    for a, b in zip(*(r["history"] for r in records), strict=True):
        assert a["train_loss"] == b["train_loss"] and a["val"] == b["val"]
    with pytest.raises(ValueError, match="num_workers must be a non-negative int, got -1"):
        run(csl_bundle(), ["rwse"], model="gine", channels=8, layers=1,
            config=TrainConfig(epochs=1, batch_size=8, progress=False, num_workers=-1))


def molecule_bundle():
    """Graph regression on small molecule-like graphs with atom and bond types (GPS then takes
    GINE and, in float32 on the CPU, the fused layer)."""
    from graphpe.synthetic import molecule_like_graphs

    gen = torch.Generator().manual_seed(0)
    graphs = molecule_like_graphs(48, min_nodes=6, max_nodes=16, seed=0)
    for g in graphs:
        g.x = torch.randint(0, 5, (g.num_nodes, 1), generator=gen)
        g.edge_attr = torch.randint(0, 3, (g.edge_index.size(1),), generator=gen)
        g.y = torch.tensor([float(g.num_nodes) / 10 + 0.1 * float(g.x.sum()) / g.num_nodes])
    return DatasetBundle("molecules", graphs[:32], graphs[32:40], graphs[40:],
                         task="graph_regression", metric="mae", out_dim=1, node_vocab=5,
                         edge_vocab=3)


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_mixed_precision_training_follows_float32(precision, tmp_path):
    """The same run in mixed precision: finite, and the first epochs' losses close to float32's
    (the step differs only by the products' rounding)."""
    from graphpe.nn import build_model

    def train(precision, epochs=3, name="a.pt", resume=None):
        torch.manual_seed(0)
        model = build_model({"model": "gps", "channels": 16, "layers": 2, "heads": 2,
                             "attn_dropout": 0.0, **molecule_bundle().model_kwargs(),
                             "pe": {"rwse": {"walk_length": 4}}})
        config = TrainConfig(epochs=epochs, batch_size=8, progress=False, warmup_epochs=1,
                             precision=precision, checkpoint=str(tmp_path / name),
                             resume=resume)
        bundle, _ = pe_bundle(molecule_bundle())
        return fit(model, bundle, config), model

    ref, _ = train("fp32", name="ref.pt")
    mixed, mixed_model = train(precision)
    assert mixed["config"]["precision"] == precision
    losses = [h["train_loss"] for h in mixed["history"]]
    assert all(math.isfinite(v) for v in losses) and math.isfinite(mixed["test"])
    assert losses[0] == pytest.approx(ref["history"][0]["train_loss"], rel=0.05)
    # the loss scale of fp16 is part of the state: resuming continues the run exactly
    from graphpe.records import training_state_path

    state = torch.load(training_state_path(str(tmp_path / "a.pt")), weights_only=True)
    assert ("scale" in state["scaler"]) == (precision == "fp16")
    train(precision, epochs=2, name="b.pt")
    resumed, resumed_model = train(precision, epochs=3, name="c.pt",
                                   resume=str(training_state_path(str(tmp_path / "b.pt"))))
    assert [h["train_loss"] for h in resumed["history"]] == losses
    for a, b in zip(mixed_model.state_dict().values(), resumed_model.state_dict().values(),
                    strict=True):
        assert torch.equal(a, b)


def pe_bundle(bundle):
    from graphpe.encode import encode_bundle

    transforms, _ = pe_transforms({"rwse": {"walk_length": 4}})
    return encode_bundle(bundle, transforms)


def test_bad_precision_is_refused():
    with pytest.raises(ValueError, match=r"^precision must be one of \('fp32', 'bf16', 'fp16'\), "
                                         r"got 'fp8'$"):
        TrainConfig(precision="fp8")


def test_a_node_sets_one_graph_is_encoded_once(monkeypatch):
    """train, val and test of a node set are one graph: encode_bundle computes its encodings
    once and the encoded splits stay one object (one collated batch for the whole run)."""
    import graphpe.encode as encode
    from graphpe.datasets.bundle import DatasetBundle as Bundle
    from graphpe.synthetic import social_like_graph

    graph = social_like_graph(200, mean_degree=4.0)
    bundle = Bundle("g", [graph], [graph], [graph], task="node_classification",
                    metric="accuracy", out_dim=2)
    bundle.val = bundle.test = bundle.train
    calls = []
    real = encode.precompute
    monkeypatch.setattr(encode, "precompute", lambda *a, **k: calls.append(1) or real(*a, **k))
    encoded, _ = encode.encode_bundle(bundle, pe_transforms(["rwse"])[0])
    assert len(calls) == 1 and encoded.train is encoded.val is encoded.test
    assert encoded.train[0].rwse.shape == (200, 16)


def graphgps_weighted_cross_entropy(pred, true):
    """GraphGPS's ``weighted_cross_entropy`` (rampasek/GraphGPS,
    graphgps/loss/weighted_cross_entropy.py, MIT licence), its multiclass branch, without the
    cfg switch: the reference of ``loss_fn(..., class_weights=True)``."""
    V = true.size(0)
    n_classes = pred.shape[1]
    label_count = torch.bincount(true)
    label_count = label_count[label_count.nonzero(as_tuple=True)].squeeze()
    cluster_sizes = torch.zeros(n_classes, device=pred.device).long()
    cluster_sizes[torch.unique(true)] = label_count
    weight = (V - cluster_sizes).float() / V
    weight *= (cluster_sizes > 0).float()
    pred = torch.nn.functional.log_softmax(pred, dim=-1)
    return torch.nn.functional.nll_loss(pred, true, weight=weight)


def test_class_weighted_loss_equals_graphgps():
    from graphpe.train import loss_fn

    gen = torch.Generator().manual_seed(0)
    for n, classes in ((50, 6), (7, 3), (200, 2)):
        out = torch.randn(n, classes, generator=gen, requires_grad=True)
        y = torch.randint(0, classes, (n,), generator=gen)
        y[0] = 1  # at least two classes present; some may be absent
        ours = loss_fn("node_classification", out, y, class_weights=True)
        torch.testing.assert_close(ours, graphgps_weighted_cross_entropy(out, y))
        assert not torch.equal(ours, loss_fn("node_classification", out, y))
    # one class in the batch: it weighs nothing, the loss is 0 rather than 0 / 0
    out = torch.randn(5, 3, generator=gen, requires_grad=True)
    loss = loss_fn("graph_classification", out, torch.full((5,), 2), class_weights=True)
    loss.backward()
    assert loss.item() == 0.0 and torch.isfinite(out.grad).all()


def test_class_weighted_training_and_its_checks():
    record = run(csl_bundle(), [], model="gin", channels=8, layers=1,
                 config=TrainConfig(epochs=1, progress=False, class_weights=True))
    assert record["config"]["class_weights"] is True and math.isfinite(record["val"])
    bundle = csl_bundle()
    bundle.task = "graph_regression"
    with pytest.raises(ValueError, match="^class_weights weighs the classes of a classification "
                                         "task; CSL is graph_regression$"):
        run(bundle, [], model="gin", channels=8, layers=1,
            config=TrainConfig(epochs=1, progress=False, class_weights=True))
