import logging

import pytest
import torch
from tqdm.auto import tqdm

import graphpe.run_log as run_log
import graphpe.train
from graphpe.nn import build_model
from graphpe.records import training_state_path
from graphpe.run_log import EpochLines, batch_bar, interrupted_message, logged_batches
from graphpe.train import TrainConfig, fit
from tests.test_train import csl_bundle


def _model():
    torch.manual_seed(0)
    return build_model({"model": "gine", "channels": 8, "layers": 1, "node_vocab": 1,
                        "out_dim": 10, "task": "graph_classification"})


def test_a_batch_bar_only_where_bars_show_and_there_are_batches():
    loader = [1, 2, 3]
    assert batch_bar(loader, "epoch 1", enabled=False) is loader
    assert batch_bar([1], "val", enabled=True) == [1]  # one batch (a whole graph): no bar
    bar = batch_bar(loader, "epoch 5", enabled=True)
    assert isinstance(bar, tqdm) and bar.desc.startswith("epoch 5") and list(bar) == loader


def test_batch_lines_without_bars_say_the_first_batch_then_every_line_seconds(monkeypatch,
                                                                                caplog):
    loader = list(range(5))
    assert logged_batches(loader, "ZINC", 0, 3, enabled=False) is loader
    assert logged_batches([1], "ZINC", 0, 3, enabled=True) == [1]  # one batch: epoch lines
    clock = iter(float(t) for t in (0, 2, 4, 6, 8, 10, 100, 102, 104, 106, 108, 110))
    monkeypatch.setattr(run_log.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(run_log, "LINE_SECONDS", 5.0)
    with caplog.at_level(logging.INFO, logger="graphpe"):
        assert list(logged_batches(loader, "ZINC", 0, 3, enabled=True)) == loader
        assert list(logged_batches(loader, "ZINC", 1, 3, enabled=True)) == loader
    assert [r.getMessage() for r in caplog.records] == [
        # the run's first batch at once, with the epoch's predicted rest
        "ZINC: epoch 1/3: batch 1/5 took 2.00 s, about 8 s left in the epoch",
        "ZINC: epoch 1/3: batch 4/5, 0.5 batches/s, about 2 s left in the epoch",
        # a later epoch: no first-batch line, the throttled ones only
        "ZINC: epoch 2/3: batch 3/5, 0.5 batches/s, about 4 s left in the epoch"]


def test_epoch_lines_are_throttled(monkeypatch, caplog):
    lines = EpochLines("CSL", 10, enabled=True)
    with caplog.at_level(logging.INFO, logger="graphpe"):
        lines.start(0, 1, 1234)
        lines.start(3, 20, 1234)
        lines(0, 0.5, 0.25, 0.25, 1.5)
        lines(1, 0.4, 0.3, 0.3, 1.5)  # within LINE_SECONDS of the first: not said
        monkeypatch.setattr(run_log, "LINE_SECONDS", 0.0)
        lines(2, 0.3, 0.2, 0.3, 1.25)
        EpochLines("CSL", 10, enabled=False)(0, 0.5, 0.25, 0.25, 1.5)
    assert [r.getMessage() for r in caplog.records] == [
        "CSL: training 1,234 parameters for 10 epochs of one full-graph step",
        "CSL: training 1,234 parameters for 10 epochs of 20 batches, from epoch 4 (resumed)",
        "CSL: epoch 1/10, loss 0.5000, val 0.2500 (best 0.2500), 1.5 s per epoch",
        "CSL: epoch 3/10, loss 0.3000, val 0.2000 (best 0.3000), 1.25 s per epoch"]


def test_an_interrupted_run_keeps_what_finished_and_resumes(tmp_path, caplog):
    def stop_at(epoch_to_stop):
        def train_split(epoch):
            if epoch == epoch_to_stop:
                raise KeyboardInterrupt
            return csl_bundle().train
        return train_split

    checkpoint = str(tmp_path / "a.pt")
    config = TrainConfig(epochs=5, batch_size=8, progress=False, checkpoint=checkpoint,
                         results=str(tmp_path / "a.json"))
    with caplog.at_level(logging.WARNING, logger="graphpe"):
        record = fit(_model(), csl_bundle(), config, train_split=stop_at(3))
    assert record["interrupted_after_epoch"] == 2 and record["epochs_run"] == 3
    assert (tmp_path / "a.json").exists() and (tmp_path / "a.pt").exists()
    state = training_state_path(checkpoint)
    assert [r.getMessage() for r in caplog.records] == [interrupted_message(
        2, 5, record["best_epoch"], state, str(tmp_path / "a.json"))]
    resumed = fit(_model(), csl_bundle(), TrainConfig(
        epochs=5, batch_size=8, progress=False, resume=state), train_split=stop_at(99))
    assert resumed["epochs_run"] == 5 and "interrupted_after_epoch" not in resumed
    with pytest.raises(KeyboardInterrupt):  # nothing finished: nothing to keep
        fit(_Interrupted(), csl_bundle(), TrainConfig(epochs=5, batch_size=8, progress=False))


class _Interrupted(torch.nn.Module):
    """A model stopped by Ctrl-C in its first step."""

    def __init__(self):
        super().__init__()
        self.model = _model()

    def forward(self, batch):
        raise KeyboardInterrupt


def test_the_message_says_how_to_resume():
    assert interrupted_message(2, 5, 1, "a.pt.state", "a.json") == (
        "interrupted after epoch 3 of 5: the test metric is of the best epoch so far (2); "
        "its record goes to a.json; continue with --resume a.pt.state")
    assert interrupted_message(0, 5, 0, None, None).endswith(
        "a run with --checkpoint PATH keeps a state to resume from")


def test_an_interrupt_in_the_first_epoch_says_nothing_was_kept(tmp_path, caplog,
                                                                monkeypatch):
    def stop(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(graphpe.train, "_train_epoch", stop)
    config = TrainConfig(epochs=5, batch_size=8, progress=False,
                         checkpoint=str(tmp_path / "a.pt"), results=str(tmp_path / "a.json"))
    with caplog.at_level(logging.WARNING, logger="graphpe"), pytest.raises(KeyboardInterrupt):
        fit(_model(), csl_bundle(), config)
    assert [r.getMessage() for r in caplog.records] == [interrupted_message(-1, 5, -1, None, None)]
    assert "no epoch finished" in caplog.records[0].getMessage()
    assert not list(tmp_path.iterdir())
