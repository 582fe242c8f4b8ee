import logging

import pytest
import torch
from tqdm.auto import tqdm

import graphpe.run_log as run_log
from graphpe.nn import build_model
from graphpe.records import training_state_path
from graphpe.run_log import EpochLines, batch_bar, interrupted_message
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


def test_epoch_lines_are_throttled(monkeypatch, caplog):
    lines = EpochLines("CSL", 10, enabled=True)
    with caplog.at_level(logging.INFO, logger="graphpe"):
        lines(0, 0.5, 0.25, 0.25, 1.5)
        lines(1, 0.4, 0.3, 0.3, 1.5)  # within LINE_SECONDS of the first: not said
        monkeypatch.setattr(run_log, "LINE_SECONDS", 0.0)
        lines(2, 0.3, 0.2, 0.3, 1.25)
        EpochLines("CSL", 10, enabled=False)(0, 0.5, 0.25, 0.25, 1.5)
    assert [r.getMessage() for r in caplog.records] == [
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
