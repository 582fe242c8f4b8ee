"""``graphpe train --splits`` and ``graphpe compare``: runs over splits and seeds, the grid's
table (means, paired differences, the two-standard-error marker), its files, resuming, and the
bad inputs, on archives the tests write."""

from __future__ import annotations

import json
import math

import pytest

import graphpe.train
from graphpe.cli import main
from graphpe.compare import compare_table, difference, markdown_table, parse_splits, summarize
from graphpe.train import TrainConfig
from tests.datasets.test_heterophilous import write_archive

FAST = ["--channels", "8", "--layers", "2", "--epochs", "3", "--patience", "10", "--lr",
        "0.01"]


def records(tests, model="gcn", pe="none"):
    return [{"run": f"split{i}", "split": i, "seed": i, "test": t, "val": t,
             "metric": "rocauc", "pe_seconds": 0.5, "seconds_per_epoch": 0.1,
             "model": model, "pe": pe} for i, t in enumerate(tests)]


def test_summary_and_paired_difference():
    base = summarize(records([0.80, 0.82, 0.84]))
    assert base["test_mean"] == pytest.approx(0.82)
    assert base["test_std"] == pytest.approx(0.02)
    cell = summarize(records([0.81, 0.83, 0.86]))
    diff, se = difference(cell, base)
    diffs = [0.01, 0.01, 0.02]
    mean = sum(diffs) / 3
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / 2)
    assert diff == pytest.approx(mean) and se == pytest.approx(sd / math.sqrt(3))
    rows = compare_table({("gcn", "none"): base, ("gcn", "lap"): cell})
    assert rows[1]["significant"] is (abs(diff) > 2 * se)
    table = markdown_table(rows)
    assert "| gcn | lap | 3 | 83.33 ± 2.52 | +1.33 ± 0.33 * |" in table
    # runs not shared: the unpaired error
    other = summarize(records([0.9]) + [])
    other["run_names"] = ["seed7"]
    diff, se = difference(other, base)
    assert se == pytest.approx(math.sqrt(0.02 ** 2 / 3))
    # the costs are medians: one run paused for minutes does not move them
    slowed = records([0.80, 0.82, 0.84])
    slowed[1].update(seconds_per_epoch=5.0, pe_seconds=30.0)
    assert summarize(slowed)["seconds_per_epoch"] == 0.1
    assert summarize(slowed)["pe_seconds"] == 0.5


def test_parse_splits_and_its_errors():
    assert parse_splits("all", 10, "M") == list(range(10))
    assert parse_splits("0,3,7", 10, "M") == [0, 3, 7]
    assert parse_splits(None, 10, "M") == [0]
    with pytest.raises(ValueError, match=r"^Cora has one split: --splits all runs the fixed "
                                         r"splits of a dataset that has several"):
        parse_splits("all", 1, "Cora")
    with pytest.raises(ValueError, match=r"^M: split 12 is out of range; it has 10 splits "
                                         r"\(0-9\)$"):
        parse_splits("0,12", 10, "M")
    with pytest.raises(ValueError, match="takes 'all' or split indices"):
        parse_splits("first", 10, "M")


def test_train_splits_reports_mean_and_std_and_resumes(tmp_path, capsys, monkeypatch):
    write_archive(tmp_path / "g.npz", splits=3)
    results = tmp_path / "out" / "run.json"
    argv = ["train", "--dataset", "graph:g.npz", "--root", str(tmp_path), "--model",
            "res-gcn", *FAST, "--splits", "all", "--results", str(results)]
    main(argv)
    out = capsys.readouterr().out
    summary = json.loads(results.read_text())
    assert summary["runs"] == 3 and len(summary["test"]) == 3
    assert f"test rocauc {summary['test_mean']:.4f} ± {summary['test_std']:.4f} over 3 " \
           "splits" in out
    seeds = [json.loads((tmp_path / "out" / "run.splits" / f"split{s}.json").read_text())
             ["seed"] for s in range(3)]
    assert seeds == [0, 1, 2]  # each split from its own seed

    def no_training(*args, **kwargs):
        raise AssertionError("a finished split was trained again")

    monkeypatch.setattr(graphpe.train, "run", no_training)
    main(argv)
    assert "split2: done before" in capsys.readouterr().out
    assert json.loads(results.read_text())["test"] == summary["test"]


def test_train_splits_prints_the_published_numbers_of_the_same_architecture(tmp_path, capsys):
    """On a benchmark with published results (here Minesweeper, from an archive the test
    writes in PyG's layout), the summary names the paper's number of the model graphpe runs,
    its budget, and this run's at its own, both in percent."""
    write_archive(tmp_path / "minesweeper" / "raw" / "minesweeper.npz", splits=2)
    results = tmp_path / "run.json"
    main(["train", "--dataset", "Minesweeper", "--root", str(tmp_path), "--model", "res-gcn",
          *FAST, "--splits", "all", "--results", str(results)])
    out = capsys.readouterr().out
    summary = json.loads(results.read_text())
    assert [(p["model"], p["mean"], p["std"]) for p in summary["published"]] == [
        ("GCN", 89.75, 0.52)]
    assert ("  beside Platonov et al., ICLR 2023's GCN: 89.75 ± 0.52 (512 channels, 1-5 "
            "layers (5 typical), dropout 0.2, AdamW lr 3e-5, 1,000 full-batch steps, test at "
            "the best validation step, 10 splits); this run, 8 channels, 2 layers, 3 steps: "
            f"{100 * summary['test_mean']:.2f} ± {100 * summary['test_std']:.2f}") in out
    assert len(summary["run_seconds"]) == 2 and all(s > 0 for s in summary["run_seconds"])
    assert (summary["channels"], summary["layers"], summary["epochs"]) == (8, 2, 3)
    assert f"{sum(summary['run_seconds']) / 60:.1f} min of training and encoding in all" in out


@pytest.mark.parametrize("argv, message", [
    (["--splits", "all"], "graph:edges.txt has one split: --splits all"),
    (["--splits", "5"], "split 5 is out of range; it has 1 split (0-0)"),
])
def test_splits_errors_are_one_line(tmp_path, capsys, argv, message):
    (tmp_path / "edges.txt").write_text("0 1\n1 2\n")
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "--dataset", "graph:edges.txt", "--root", str(tmp_path), *argv])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_compare_writes_its_table_json_and_resumes(tmp_path, capsys, monkeypatch):
    write_archive(tmp_path / "g.npz", splits=2)
    out = tmp_path / "grid"
    argv = ["compare", "--dataset", "graph:g.npz", "--root", str(tmp_path), "--model",
            "res-gcn,res-sage", "--pe", "none,rwse:walk_length=4,lap:k=3+rwse:walk_length=4",
            *FAST, "--splits", "all", "--out", str(out)]
    main(argv)
    printed = capsys.readouterr().out
    result = json.loads((out / "compare.json").read_text())
    cells = [(row["model"], row["pe"]) for row in result["rows"]]
    assert cells == [(m, p) for m in ("res-gcn", "res-sage")
                     for p in ("none", "rwse:walk_length=4", "lap:k=3+rwse:walk_length=4")]
    assert all(row["runs"] == 2 for row in result["rows"])
    assert "diff" not in result["rows"][0] and "diff_se" in result["rows"][1]
    assert result["rows"][1]["pe_seconds"] > 0
    assert result["rows"][1]["pe_bytes_per_node"] == 4 * 4  # RWSE: 4 float32 steps a node
    assert result["rows"][0]["pe_bytes_per_node"] == 0
    table = (out / "compare.md").read_text()
    assert table in printed and table.count("\n") == 2 + 6
    assert (out / "runs" / "res-sage" / "lap_k=3+rwse_walk_length=4" / "split1.json").exists()
    assert not list(out.rglob("*.state"))  # finished runs keep no weights
    try:
        import matplotlib  # noqa: F401

        assert (out / "compare.png").stat().st_size > 0
    except ImportError:
        pass

    monkeypatch.setattr(graphpe.train, "run", lambda *a, **k: pytest.fail("retrained"))
    main(argv)
    assert json.loads((out / "compare.json").read_text())["rows"] == result["rows"]
    # run again with one model and one encoding set: the earlier cells stay in the table
    main([*argv[:6], "res-gcn", "--pe", "rwse:walk_length=4", *argv[9:]])
    assert json.loads((out / "compare.json").read_text())["rows"] == result["rows"]


def test_compare_on_seeds_for_a_graph_level_set(tmp_path, capsys):
    main(["compare", "--dataset", "CSL", "--root", str(tmp_path), "--model", "gin",
          "--pe", "none,rwse:walk_length=4", "--seeds", "2", "--channels", "8", "--layers", "1",
          "--epochs", "1", "--out", str(tmp_path / "grid")])
    rows = json.loads((tmp_path / "grid" / "compare.json").read_text())["rows"]
    assert [row["run_names"] for row in rows] == [["seed0", "seed1"]] * 2


def test_compare_refuses_train_only_flags(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["compare", "--dataset", "CSL", "--root", str(tmp_path), "--out",
              str(tmp_path / "g"), "--results", "x.json"])
    assert "compare keeps every run's record" in capsys.readouterr().err


def test_train_config_schedule_constant():
    config = TrainConfig(schedule="constant", warmup_epochs=2)
    factor = graphpe.train.lr_lambda(config.warmup_epochs, None)
    assert [factor(e) for e in range(4)] == [0.5, 1.0, 1.0, 1.0]


def test_progress_bars_follow_the_terminal(monkeypatch):
    """--progress defaults to whether stderr is a terminal (a log file gets no bars)."""
    import sys

    from graphpe.cli import build_parser
    from graphpe.cli.train import train_config

    args = build_parser().parse_args(["train", "--dataset", "CSL", "--root", "x"])
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    assert train_config(args).progress is False
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert train_config(args).progress is True
    args = build_parser().parse_args(["train", "--dataset", "CSL", "--root", "x",
                                      "--no-progress"])
    assert train_config(args).progress is False


def test_an_interrupted_split_is_not_kept_as_done(tmp_path, capsys, monkeypatch):
    write_archive(tmp_path / "g.npz", splits=2)
    real_run = graphpe.train.run

    def interrupted(*args, **kwargs):
        record = real_run(*args, **kwargs)
        record["interrupted_after_epoch"] = 1
        return record

    monkeypatch.setattr(graphpe.train, "run", interrupted)
    argv = ["train", "--dataset", "graph:g.npz", "--root", str(tmp_path), "--model",
            "res-gcn", *FAST, "--splits", "all", "--results", str(tmp_path / "run.json")]
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 130
    assert capsys.readouterr().err.endswith("graphpe: interrupted\n")
    assert not (tmp_path / "run.splits" / "split0.json").exists()
    assert (tmp_path / "run.splits" / "state" / "split0.pt.state").exists()  # resumable


def test_a_grid_grows_and_keeps_only_cells_of_its_settings(tmp_path, capsys):
    write_archive(tmp_path / "g.npz", splits=2)
    out = tmp_path / "grid"
    base = ["compare", "--dataset", "graph:g.npz", "--root", str(tmp_path), "--model",
            "res-gcn", "--splits", "all", "--out", str(out), *FAST]
    main([*base, "--pe", "none"])
    main([*base, "--pe", "rwse:walk_length=4"])
    rows = json.loads((out / "compare.json").read_text())["rows"]
    assert [(r["pe"], r["runs"]) for r in rows] == [("none", 2), ("rwse:walk_length=4", 2)]
    assert "diff_se" in rows[1]  # paired with the earlier grid's none
    # a grid of other settings (more epochs) does not show cells trained at three
    main([*base, "--pe", "lap:k=3", "--epochs", "4"])
    rows = json.loads((out / "compare.json").read_text())["rows"]
    assert [r["pe"] for r in rows] == ["lap:k=3"]



def test_a_grid_stopped_by_an_error_keeps_every_earlier_row(tmp_path, capsys, monkeypatch):
    write_archive(tmp_path / "g.npz", splits=2)
    out = tmp_path / "grid"
    base = ["compare", "--dataset", "graph:g.npz", "--root", str(tmp_path), "--model",
            "res-gcn,res-sage", "--splits", "all", "--out", str(out), *FAST]
    main([*base, "--pe", "none"])
    rows = json.loads((out / "compare.json").read_text())["rows"]
    real_run = graphpe.train.run

    def failing(bundle, pe, **kwargs):
        if pe != "none":
            raise ValueError("this encoding does not fit the graph")
        return real_run(bundle, pe, **kwargs)

    monkeypatch.setattr(graphpe.train, "run", failing)
    # res-gcn's none is read back, its rwse fails before res-sage's none is read again
    with pytest.raises(SystemExit):
        main([*base, "--pe", "none,rwse:walk_length=4"])
    assert json.loads((out / "compare.json").read_text())["rows"] == rows


def test_an_encoding_too_small_for_the_graph_is_refused_before_any_cell(tmp_path, capsys,
                                                                          monkeypatch):
    """The pre-flight: every encoding whose transform refuses graphs of the dataset's size is
    named in one error before the first cell trains, not when the grid reaches it."""
    write_archive(tmp_path / "g.npz", num_nodes=1100, splits=2)
    monkeypatch.setattr(graphpe.train, "run", lambda *a, **k: pytest.fail("trained"))
    with pytest.raises(SystemExit):
        main(["compare", "--dataset", "graph:g.npz", "--root", str(tmp_path), "--model",
              "res-gcn", "--pe", "none,rwse:walk_length=4,hkdiag+lap:k=3,rrwp,drwse",
              "--splits", "all", "--out", str(tmp_path / "grid"), *FAST])
    err = capsys.readouterr().err
    assert ("graph:g.npz's largest graph has 1,100 nodes, more than hkdiag (max_nodes=1,024), "
            "rrwp (max_nodes=1,024) take: each computes densely per graph (n x n values); "
            "drop them from --pe") in err
    assert "drwse" not in err  # its limit, 2,048 nodes, holds the graph
    assert not (tmp_path / "grid" / "runs").exists()


def test_a_cell_whose_encoding_refuses_the_graph_is_recorded_and_the_grid_goes_on(
        tmp_path, capsys, monkeypatch):
    """An encoding that refuses the graph once it reaches it (exact curvature past its
    transport budget, here 10 cells: a cost, not a size the pre-flight knows) leaves its cell
    refused, with the reason, in the table and the JSON; the cells after it train."""
    from graphpe.ops.curvature import tensor

    real_check = tensor.check_transport_budget
    monkeypatch.setattr(tensor, "check_transport_budget",
                        lambda cost, max_transport_cells: real_check(cost, 10))
    write_archive(tmp_path / "g.npz", splits=2)
    out = tmp_path / "grid"
    main(["compare", "--dataset", "graph:g.npz", "--root", str(tmp_path), "--model",
          "res-gcn", "--pe", "none,lcp,rwse:walk_length=4", "--splits", "all", "--out",
          str(out), *FAST])
    printed = capsys.readouterr().out
    rows = {row["pe"]: row for row in json.loads((out / "compare.json").read_text())["rows"]}
    refused = rows["lcp"]
    assert refused["runs"] == 0 and "past max_transport_cells=10" in refused["refused"]
    assert "diff" not in refused
    assert rows["rwse:walk_length=4"]["runs"] == 2 and "diff" in rows["rwse:walk_length=4"]
    table = (out / "compare.md").read_text()
    assert "| res-gcn | lcp | 0 | refused (1) |" in table
    assert f"1. res-gcn with lcp: {refused['refused']}" in table
    assert table in printed
