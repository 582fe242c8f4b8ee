"""Long calls show they are alive: the progress bars of the large-graph paths appear past the
delay (a zero delay here), a path predicted to take minutes is announced by a warning, and
run_interruptible hands back the worker's result or its exception."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import torch

from graphpe.ops import laplacian_eigenpairs, progress
from graphpe.ops.host import simple_csr
from graphpe.ops.plan import ExecPlan
from graphpe.ops.walk import large
from graphpe.ops.walk.large import large_landing_probs
from graphpe.synthetic import road_like_graph, social_like_graph
from tests.ops.walk.test_large import dense_reference


@pytest.fixture
def no_delay(monkeypatch):
    monkeypatch.setattr(progress, "PROGRESS_DELAY_SECONDS", 0.0)


def test_rwse_blocked_path_shows_progress_and_runs_in_rounds(no_delay, monkeypatch, capsys):
    graph = social_like_graph(600, seed=4)
    n = graph.num_nodes
    csr = simple_csr(graph.edge_index, n)
    whole = np.empty((n, 8))
    large_landing_probs(csr, 8, whole, budget=2**30, path="blocked", components=False)
    assert "RWSE (" in capsys.readouterr().err
    monkeypatch.setattr(large, "BLOCKED_ROUND_SECONDS", 1e-9)  # one block per round
    rounds = np.empty((n, 8))
    large_landing_probs(csr, 8, rounds, budget=2**30, path="blocked", components=False)
    assert np.array_equal(rounds, whole)
    np.testing.assert_allclose(whole, dense_reference(graph.edge_index, n, 8), atol=1e-12)


def test_a_path_predicted_to_take_minutes_is_announced(monkeypatch, caplog):
    monkeypatch.setattr(large, "LONG_PATH_SECONDS", 0.0)
    graph = road_like_graph(60, seed=1)
    csr = simple_csr(graph.edge_index, graph.num_nodes)
    with caplog.at_level(logging.WARNING, logger="graphpe"):
        large_landing_probs(csr, 16, np.empty((graph.num_nodes, 16)), budget=2**30,
                            components=False)
    said = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(said) == 1 and said[0].startswith(f"RWSE of a {graph.num_nodes:,}-node graph")
    assert "rwse:max_exact_seconds=60 estimates a graph past a minute" in said[0]


def test_lanczos_and_shift_invert_show_progress(no_delay, capsys):
    graph = road_like_graph(150, seed=1)
    for solver, label in (("lanczos", "lanczos ("), ("shift_invert", "shift-invert (")):
        laplacian_eigenpairs(graph.edge_index, graph.num_nodes, 4, dtype=torch.float64,
                             plan=ExecPlan(dense_max_nodes=100, sparse_solver=solver))
        err = capsys.readouterr().err
        assert label in err, solver
    assert "sparse LU factor" in err  # the factorization's own bar, in seconds


def test_run_interruptible_returns_or_raises_what_the_call_did():
    assert progress.run_interruptible(sum, [1, 2, 3]) == 6
    with pytest.raises(ZeroDivisionError):
        progress.run_interruptible(lambda: 1 / 0)


def test_a_long_block_shows_the_seconds_it_has_run(monkeypatch, capsys):
    import time

    monkeypatch.setattr(progress, "PROGRESS_DELAY_SECONDS", 0.02)
    monkeypatch.setattr(progress, "ELAPSED_REFRESH_SECONDS", 0.02)
    with progress.elapsed_bar("a long block", expected_seconds=60.0):
        time.sleep(0.3)
    err = capsys.readouterr().err
    assert "a long block" in err and "/60" in err
    with progress.elapsed_bar("a short block"):  # under the delay: nothing shown
        pass
    assert "a short block" not in capsys.readouterr().err


def test_bars_into_a_log_are_redrawn_a_few_times_a_minute(monkeypatch):
    """Where stderr is a file or a pipe every redraw stays in the log: bars redraw every
    LOG_REFRESH_SECONDS there, at their own pace on a terminal."""
    import io

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(progress.sys, "stderr", io.StringIO())
    assert progress.refresh_seconds(0.5) == progress.LOG_REFRESH_SECONDS == 30.0
    assert progress.progress_bar("into a log").mininterval == 30.0
    monkeypatch.setattr(progress.sys, "stderr", Terminal())
    assert progress.refresh_seconds(0.5) == 0.5
    assert progress.progress_bar("on a terminal").mininterval == 0.1


@pytest.mark.parametrize("name", ["lap", "rwse", "rfp", "lcp", "maglap"])
def test_every_encoding_on_a_large_graph_shows_that_it_runs(name, monkeypatch, capsys):
    """Any transform call on a graph past WATCHED_NODES shows the seconds it has run once it
    passes the delay (a delay of zero here, a graph made to count as large)."""
    import time

    from graphpe.encodings import pe_spec
    from graphpe.encodings import transform as base

    monkeypatch.setattr(progress, "PROGRESS_DELAY_SECONDS", 0.0)
    monkeypatch.setattr(progress, "ELAPSED_REFRESH_SECONDS", 0.01)
    monkeypatch.setattr(base, "WATCHED_NODES", 100)
    transform = pe_spec(name).transform()
    compute = transform.compute

    def slow_compute(*args, **kwargs):  # long enough for the bar to draw at least once
        time.sleep(0.1)
        return compute(*args, **kwargs)

    monkeypatch.setattr(transform, "compute", slow_compute)
    graph = road_like_graph(400, seed=1)
    transform(graph)
    err = capsys.readouterr().err
    assert f"{type(transform).__name__}(" in err and f"on {graph.num_nodes:,} nodes" in err


def test_a_delayed_bar_makes_no_bar_before_its_delay_and_one_after(monkeypatch, capsys):
    monkeypatch.setattr(progress, "PROGRESS_DELAY_SECONDS", 3600.0)
    with progress.DelayedBar("short", total=5, unit="solve") as bar:
        bar.update(2)
        bar.update(3)
        bar.set_postfix(products=7)
        assert bar.n == 5 and bar.bar is None
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(progress, "PROGRESS_DELAY_SECONDS", 0.0)
    with progress.DelayedBar("long", total=5, unit="solve") as bar:
        bar.update(2)
        bar.n = 4  # a caller may set the count, as Lanczos sets its converged pairs
        bar.set_postfix(products=7)
        assert bar.bar is not None and bar.bar.n == 4 and bar.bar.postfix == "products=7"
    assert "long" in capsys.readouterr().err
