import json

import pytest

from graphpe.cli import main
from graphpe.demo import demo
from graphpe.encodings import parse_pe
from tests.conftest import bench_module, copy_shared


def test_demo_runs_every_pe(capsys):
    rows = demo(epochs=2)
    assert [r["pe"] for r in rows] == ["none", "lap", "rwse", "rfp", "lcp", "spe"]
    assert "test acc" in capsys.readouterr().out


def test_train_and_precompute_commands(tmp_path, capsys):
    copy_shared("tu/MUTAG", tmp_path / "MUTAG")
    out = tmp_path / "r.json"
    main(["train", "--dataset", "MUTAG", "--root", str(tmp_path), "--pe", "lap,rwse",
          "--epochs", "2", "--channels", "16", "--layers", "2", "--results", str(out)])
    assert json.loads(out.read_text())["dataset"] == "MUTAG"
    main(["precompute", "--dataset", "MUTAG", "--root", str(tmp_path), "--pe", "rwse",
          "--cache-dir", str(tmp_path / "cache")])
    assert list((tmp_path / "cache").glob("*.pt"))
    with pytest.raises(SystemExit):
        main(["bench", "no-such-benchmark"])


def run_cli(argv, capsys):
    """(exit code, stdout, stderr) of ``graphpe argv``."""
    code = 0
    try:
        main(argv)
    except SystemExit as exit_:
        code = exit_.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_own_dataset_config_results_checkpoint_and_evaluate(tmp_path, capsys, monkeypatch):
    """A new user's path: an own dataset from the CLI, a config file, a results file that says
    how the run was made, a checkpoint that rebuilds its model alone."""
    from pathlib import Path

    examples = Path(__file__).resolve().parents[1] / "examples"
    monkeypatch.syspath_prepend(str(examples))
    config = tmp_path / "run.toml"
    config.write_text('model = "gps"\nchannels = 16\nlayers = 2\nepochs = 2\nbatch-size = 32\n'
                      'pe = "rwse:walk_length=6,lap:k=3"\nwarmup = 1\npool = "mean"\n'
                      'weight-decay = 3e-6\n')
    results, ckpt = tmp_path / "r.json", tmp_path / "best.pt"
    code, out, err = run_cli(["train", "--dataset", "own_dataset:build", "--root",
                              str(tmp_path), "--config", str(config), "--layers", "1",
                              "--results", str(results), "--checkpoint", str(ckpt),
                              "--cache-dir", str(tmp_path / "cache"), "--precision", "bf16"],
                             capsys)
    assert code == 0, err
    record = json.loads(results.read_text())
    assert record["config"]["precision"] == "bf16"
    assert record["model_config"]["layers"] == 1  # the flag overrides the file
    assert record["model_config"]["model"] == "gps" and record["config"]["warmup_epochs"] == 1
    assert record["model_config"]["pool"] == "mean"
    assert record["config"]["weight_decay"] == 3e-6
    assert record["pe"] == [{"name": "rwse", "walk_length": 6, "estimate": "auto", "walks": 256,
                             "walk_seed": 0, "max_exact_seconds": None},
                            {"name": "lap", "k": 3, "normalization": "sym",
                             "sign": "canonical", "hidden": None}]
    assert "cache written" in err
    code, out, err = run_cli(["evaluate", "--checkpoint", str(ckpt), "--dataset",
                              "own_dataset:build", "--root", str(tmp_path)], capsys)
    assert code == 0, err
    assert json.loads(out)["value"] == pytest.approx(record["test"])
    code, _, err = run_cli(["precompute", "--dataset", "own_dataset:build", "--root",
                            str(tmp_path), "--pe", "rwse:walk_length=6,lap:k=3",
                            "--cache-dir", str(tmp_path / "cache")], capsys)
    assert code == 0 and "cache hit" in err


@pytest.mark.parametrize(("argv", "message"), [
    (["train", "--dataset", "own_dataset:build", "--root", ".", "--pe", "magic"],
     "graphpe: error: unknown PE 'magic'; choose from"),
    (["train", "--dataset", "own_dataset:build", "--root", ".", "--pe", "rwse:steps=3"],
     "graphpe: error: unknown setting(s) ['steps'] for PE 'rwse'"),
    (["train", "--dataset", "NO_SUCH_TU_SET", "--root", "/nonexistent"],
     "graphpe: error: NO_SUCH_TU_SET: files not found under the given root"),
    (["train", "--dataset", "MUTAG", "--root", "/nonexistent", "--pe", "lap:k=-3"],
     "graphpe: error: lap: k must be a positive int, got -3"),  # before the files are missed
    (["compare", "--dataset", "MUTAG", "--root", "/nonexistent", "--model", "gcn", "--pe",
      "none,rwsee", "--seeds", "2", "--out", "/nonexistent/grid"],
     "graphpe: error: unknown PE 'rwsee' (did you mean 'rwse' or 'drwse'?); choose from"),
    (["train", "--dataset", "MUTAG", "--root", "/nonexistent"],
     "graphpe: error: MUTAG: files not found under the given root. Place "
     "/nonexistent/MUTAG/raw/MUTAG_*.txt (a TU dataset), or"),
    (["train", "--dataset", "Zinc", "--root", "/nonexistent"],
     "graphpe: error: Zinc: files not found under the given root. Place "
     "/nonexistent/Zinc/raw/Zinc_*.txt if it is a TU dataset (did you mean ZINC? graphpe "
     "reads a name it does not know as one), or"),
    (["train", "--dataset", "nomodule:build", "--root", "."],
     "graphpe: error: dataset 'nomodule:build': cannot import module 'nomodule'"),
    (["train", "--dataset", "ogbg-code", "--root", "."],
     "graphpe: error: ogbg-code: graphpe loads the OGB molecule sets (ogbg-mol*), ogbg-ppa"),
    (["train", "--dataset", "ogbg-ppa", "--root", "."],
     "graphpe: error: ogbg-ppa: files not found under the given root"),
    (["precompute", "--dataset", "MUTAG", "--root", ".", "--pe", "rwse"],
     "graphpe: error: precompute writes a cache: give --cache-dir"),
    (["train", "--dataset", "MUTAG", "--root", ".", "--config", "/nonexistent.toml"],
     "graphpe: error: --config /nonexistent.toml"),
    (["train", "--dataset", "own_dataset:build", "--root", ".", "--mpnn", "gatedgcn"],
     "graphpe: error: --mpnn sets the local MPNN of --model gps or grit, not gine"),
    (["train", "--dataset", "own_dataset:build", "--root", ".", "--model", "grit",
      "--attention", "performer"],
     "graphpe: error: --attention sets the global attention of --model gps, not grit"),
])
def test_cli_errors_are_one_line_and_exit_2(argv, message, capsys, monkeypatch):
    from pathlib import Path

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "examples"))
    code, _, err = run_cli(argv, capsys)
    assert code == 2 and err.startswith(message) and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_missing_files_name_the_flag_and_cuda_is_checked(tmp_path, capsys):
    import torch

    code, _, err = run_cli(["train", "--dataset", "MUTAG", "--root", str(tmp_path)], capsys)
    assert code == 2 and "--download on the command line" in err and "shared" not in err
    if not torch.cuda.is_available():
        code, _, err = run_cli(["train", "--dataset", "MUTAG", "--root", str(tmp_path),
                                "--device", "cuda"], capsys)
        assert code == 2 and "this PyTorch sees no CUDA device" in err


def test_version_and_help(capsys):
    from graphpe import __version__

    code, out, _ = run_cli(["--version"], capsys)
    assert code == 0 and out.strip() == f"graphpe {__version__}"
    code, out, _ = run_cli(["train", "--help"], capsys)
    assert code == 0 and "(default: 64)" in out and "module:function" in out
    help_words = "".join(out.split())  # (argparse wraps the help at spaces and hyphens)
    assert "epochsoflinearlearning-ratewarm-up" in help_words
    for name in ("PubMed", "ogbn-arxiv", "ogbn-proteins", "ogbn-papers100M", "Flickr", "Reddit",
                 "WikiCS", "Amazon-Photo", "Coauthor-Physics", "graph:PATH"):
        assert name in help_words, name


def test_tu_datasets_keep_their_edge_features(tmp_path):
    from graphpe.datasets import load_dataset

    copy_shared("tu/MUTAG", tmp_path / "MUTAG")
    bundle = load_dataset("MUTAG", tmp_path)
    assert bundle.edge_dim == 4 and bundle.train[0].edge_attr.shape[1] == 4


def test_config_gallery_files_are_valid():
    """Every file in configs/ sets only options train knows and parses its PE specs ("none"
    where the mirrored setup has no PE, as GraphGPS's ogbg-ppa)."""
    from pathlib import Path

    from graphpe.cli import build_parser, command_parser, load_config, typed_config
    from graphpe.encodings import resolve_pe

    actions = {a.dest: a for a in command_parser(build_parser(), "train")._actions}
    files = sorted((Path(__file__).resolve().parents[1] / "configs").glob("*.toml"))
    assert len(files) >= 3
    for path in files:
        values = load_config(str(path))
        assert set(values) <= set(actions), path.name
        typed_config(values, actions)  # types and choices as the flags check them
        assert values["pe"] == "none" or resolve_pe(parse_pe(values["pe"])), path.name


def test_a_toml_config_reads_through_tomli_where_tomllib_is_missing(tmp_path, monkeypatch):
    """Python 3.10 has no tomllib: load_config then imports the tomli package (a dependency
    there), the same parser; here the standard module stands in for it."""
    import sys

    import tomllib

    from graphpe.cli import load_config

    path = tmp_path / "run.toml"
    path.write_text('model = "gps"\nbatch-size = 32\n')
    monkeypatch.setitem(sys.modules, "tomllib", None)  # import tomllib now fails
    monkeypatch.setitem(sys.modules, "tomli", tomllib)
    assert load_config(str(path)) == {"model": "gps", "batch_size": 32}


def test_datasets_graphpe_does_not_list_train_from_the_cli(tmp_path, capsys):
    """A TU set and an OGB molecule set outside graphpe's lists (PTC_MR, ogbg-mollipo) take
    the generic loaders. Offline, their files are stand-ins copied from MUTAG and
    ogbg-molesol under the new names; with internet, --download fetches the real ones."""
    import shutil

    copy_shared("tu/MUTAG", tmp_path / "MUTAG")
    (tmp_path / "PTC_MR" / "raw").mkdir(parents=True)
    for f in (tmp_path / "MUTAG" / "raw").glob("MUTAG_*.txt"):
        shutil.copy(f, tmp_path / "PTC_MR" / "raw" / f.name.replace("MUTAG", "PTC_MR"))
    results = tmp_path / "tu.json"
    code, _, err = run_cli(["train", "--dataset", "PTC_MR", "--root", str(tmp_path), "--pe",
                            "rwse", "--epochs", "1", "--channels", "8", "--layers", "1",
                            "--results", str(results)], capsys)
    assert code == 0, err
    record = json.loads(results.read_text())
    assert record["dataset"] == "PTC_MR" and record["model_config"]["edge_dim"] == 4
    copy_shared("ogb/ogbg_molesol", tmp_path / "ogbg_mollipo")
    shutil.rmtree(tmp_path / "ogbg_mollipo" / "processed", ignore_errors=True)
    results = tmp_path / "ogb.json"
    code, _, err = run_cli(["train", "--dataset", "ogbg-mollipo", "--root", str(tmp_path),
                            "--pe", "rwse", "--epochs", "1", "--channels", "8", "--layers", "1",
                            "--results", str(results)], capsys)
    assert code == 0, err
    record = json.loads(results.read_text())
    assert record["dataset"] == "ogbg-mollipo" and record["metric"] == "rmse"


def test_grit_trains_from_the_cli_and_its_checkpoint_reloads(tmp_path, capsys, monkeypatch):
    from pathlib import Path

    examples = Path(__file__).resolve().parents[1] / "examples"
    monkeypatch.syspath_prepend(str(examples))
    results, ckpt = tmp_path / "r.json", tmp_path / "grit.pt"
    code, _, err = run_cli(["train", "--dataset", "own_dataset:build", "--root", str(tmp_path),
                            "--model", "grit", "--pe", "rrwp:num_steps=6", "--channels", "16",
                            "--layers", "2", "--heads", "2", "--attn-dropout", "0.2",
                            "--epochs", "1", "--results", str(results),
                            "--checkpoint", str(ckpt)], capsys)
    assert code == 0, err
    record = json.loads(results.read_text())
    assert record["model_config"]["model"] == "grit"
    assert record["model_config"]["pair"] == {"rrwp": {"num_steps": 6, "hops": None}}
    assert record["model_config"]["attn_dropout"] == 0.2
    code, out, err = run_cli(["evaluate", "--checkpoint", str(ckpt), "--dataset",
                              "own_dataset:build", "--root", str(tmp_path)], capsys)
    assert code == 0, err
    assert json.loads(out)["value"] == pytest.approx(record["test"])


def test_static_shapes_flag_trains_a_gps(tmp_path, capsys, monkeypatch):
    from pathlib import Path

    examples = Path(__file__).resolve().parents[1] / "examples"
    monkeypatch.syspath_prepend(str(examples))
    results = tmp_path / "r.json"
    code, _, err = run_cli(["train", "--dataset", "own_dataset:build", "--root", str(tmp_path),
                            "--model", "gps", "--pe", "rwse:walk_length=6", "--channels", "16",
                            "--layers", "1", "--epochs", "1", "--static-shapes",
                            "--num-workers", "2", "--results", str(results)], capsys)
    assert code == 0, err
    record = json.loads(results.read_text())
    assert record["config"]["static_shapes"] is True and record["epochs_run"] == 1
    assert record["config"]["num_workers"] == 2  # the batches padded in worker processes
    code, _, err = run_cli(["train", "--dataset", "own_dataset:build", "--root", str(tmp_path),
                            "--model", "gine", "--epochs", "1", "--static-shapes"], capsys)
    assert code == 2 and "StaticGPS runs a GPS model, got GINE" in err


@pytest.mark.parametrize("argv", [["--model", "gatedgcn"],
                                  ["--model", "gps", "--mpnn", "gatedgcn", "--heads", "2"],
                                  ["--model", "gps", "--attention", "performer", "--heads", "2"],
                                  ["--model", "gps", "--graph-token", "--pool", "token"],
                                  ["--model", "graphormer", "--heads", "2", "--pe",
                                   "degree,spd:max_dist=4"]])
def test_gatedgcn_and_performer_train_from_the_cli_and_their_checkpoints_reload(
        argv, tmp_path, capsys, monkeypatch):
    from pathlib import Path

    examples = Path(__file__).resolve().parents[1] / "examples"
    monkeypatch.syspath_prepend(str(examples))
    results, ckpt = tmp_path / "r.json", tmp_path / "m.pt"
    code, _, err = run_cli(["train", "--dataset", "own_dataset:build", "--root", str(tmp_path),
                            *argv, *([] if "--pe" in argv else ["--pe", "rwse:walk_length=6"]),
                            "--channels", "16",
                            "--layers", "2", "--epochs", "1", "--results", str(results),
                            "--checkpoint", str(ckpt)], capsys)
    assert code == 0, err
    record = json.loads(results.read_text())
    assert record["model_config"]["model"] == argv[1]
    if "--mpnn" in argv:
        assert record["model_config"]["mpnn"] == "gatedgcn"
    if "--attention" in argv:
        assert record["model_config"]["attention"] == "performer"
    if "--graph-token" in argv:
        assert record["model_config"]["graph_token"] is True
        assert record["model_config"]["pool"] == "token"
    if argv[1] == "graphormer":
        assert record["model_config"]["pair"] == {"spd": {"max_dist": 4, "local": False,
                                                          "path_hops": 0}}
        assert record["model_config"]["heads"] == 2
    code, out, err = run_cli(["evaluate", "--checkpoint", str(ckpt), "--dataset",
                              "own_dataset:build", "--root", str(tmp_path)], capsys)
    assert code == 0, err
    assert json.loads(out)["value"] == pytest.approx(record["test"])


@pytest.mark.parametrize("argv", [["--model", "sgformer", "--heads", "2"],
                                  ["--model", "polynormer", "--local-epochs", "1"]])
def test_scalable_transformers_train_on_cora_from_the_cli(argv, tmp_path, capsys):
    """SGFormer and Polynormer (its warm-up epoch, then the global stage) with a PE on a node
    classification dataset; their checkpoints reload."""
    copy_shared("planetoid/Cora", tmp_path / "Cora")
    results, ckpt = tmp_path / "r.json", tmp_path / "m.pt"
    code, _, err = run_cli(["train", "--dataset", "Cora", "--root", str(tmp_path), *argv,
                            "--pe", "rwse:walk_length=6", "--channels", "16", "--layers", "2",
                            "--epochs", "2", "--results", str(results),
                            "--checkpoint", str(ckpt)], capsys)
    assert code == 0, err
    record = json.loads(results.read_text())
    assert record["model_config"]["model"] == argv[1] and record["epochs_run"] == 2
    assert record["model_config"][argv[2][2:].replace("-", "_")] == int(argv[3])
    code, out, err = run_cli(["evaluate", "--checkpoint", str(ckpt), "--dataset", "Cora",
                              "--root", str(tmp_path)], capsys)
    assert code == 0, err
    assert json.loads(out)["value"] == pytest.approx(record["test"])
    code, _, err = run_cli(["train", "--dataset", "Cora", "--root", str(tmp_path),
                            "--model", "sgformer", "--local-epochs", "1"], capsys)
    assert code == 2 and "--local-epochs sets the local warm-up of --model polynormer, not " \
                         "sgformer" in err


def test_sampled_mini_batches_from_the_cli_and_a_config(tmp_path, capsys):
    """--num-neighbors 10,5 (or a config's list) trains GraphSAGE on NeighborLoader batches;
    a bad fan-out is a usage error."""
    copy_shared("planetoid/Cora", tmp_path / "Cora")
    config = tmp_path / "sage.toml"
    config.write_text('model = "sage"\nnum-neighbors = [10, 5]\nbatch-size = 32\n')
    results = tmp_path / "r.json"
    code, _, err = run_cli(["train", "--config", str(config), "--dataset", "Cora", "--root",
                            str(tmp_path), "--channels", "16", "--layers", "2", "--epochs", "2",
                            "--results", str(results)], capsys)
    assert code == 0, err
    record = json.loads(results.read_text())
    assert record["config"]["num_neighbors"] == [10, 5] and record["model"] == "sage"
    code, _, err = run_cli(["train", "--config", str(config), "--dataset", "Cora", "--root",
                            str(tmp_path), "--channels", "16", "--layers", "2", "--epochs", "1",
                            "--pe", "rwse:walk_length=4", "--subgraph-pe", "--results",
                            str(results)], capsys)
    assert code == 0, err
    record = json.loads(results.read_text())
    assert record["config"]["subgraph_pe"] is True and record["pe_seconds"] == 0.0
    code, _, err = run_cli(["train", "--dataset", "Cora", "--root", str(tmp_path),
                            "--num-neighbors", "10,x"], capsys)
    assert code == 2 and "argument --num-neighbors: expected ints like 15,10,5 (in-edges per " \
                         "node in each hop, -1 all), got '10,x'" in err


def test_graph_token_is_a_gps_flag(tmp_path, capsys, monkeypatch):
    from pathlib import Path

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "examples"))
    code, _, err = run_cli(["train", "--dataset", "own_dataset:build", "--root", str(tmp_path),
                            "--model", "gine", "--graph-token", "--epochs", "1"], capsys)
    assert code == 2 and ("--graph-token sets a graph token of --model gps or graphormer, not "
                          "gine") in err
    code, _, err = run_cli(["train", "--dataset", "own_dataset:build", "--root", str(tmp_path),
                            "--model", "gps", "--pool", "token", "--epochs", "1"], capsys)
    assert code == 2 and "pool='token' reads the graph token: it needs graph_token=True" in err
    code, _, err = run_cli(["train", "--dataset", "own_dataset:build", "--root", str(tmp_path),
                            "--model", "gine", "--heads", "2", "--epochs", "1"], capsys)
    assert code == 2 and "--heads sets the attention heads of --model gps, grit, graphormer, " \
                         "sgformer, polynormer, res-gat, res-gat-sep, res-gt or res-gt-sep, " \
                         "not gine" in err


def test_encodings_lists_the_registry_and_writes_the_docs_table(tmp_path, capsys):
    from graphpe.encodings import encodings
    from graphpe.encodings.registry import DOCS_TABLE_END, DOCS_TABLE_START, markdown_table

    main(["encodings"])
    out = capsys.readouterr().out
    assert all(f"{name} (" in out for name in encodings())
    assert "walk_length=16" in out
    page = tmp_path / "page.md"
    page.write_text(f"# title\n{DOCS_TABLE_START}\nold\n{DOCS_TABLE_END}\nafter\n")
    main(["encodings", "--write-docs", str(page)])
    assert page.read_text() == (f"# title\n{DOCS_TABLE_START}\n{markdown_table()}\n"
                                f"{DOCS_TABLE_END}\nafter\n")


def test_csl_trains_from_an_empty_root(tmp_path, capsys):
    out = tmp_path / "r.json"
    code, _, err = run_cli(["train", "--dataset", "CSL", "--root", str(tmp_path / "empty"),
                            "--pe", "rwse", "--epochs", "1", "--channels", "8", "--layers", "1",
                            "--results", str(out)], capsys)
    assert code == 0, err
    assert json.loads(out.read_text())["dataset"] == "CSL (generated in code)"


def test_an_offline_download_is_one_line(tmp_path, capsys, monkeypatch):
    from urllib.error import URLError

    import graphpe.datasets as datasets

    def offline(*args, **kwargs):
        raise URLError(OSError("[Errno -3] Temporary failure in name resolution"))

    monkeypatch.setitem(datasets.LOADERS, "ZINC", offline)
    code, _, err = run_cli(["train", "--dataset", "ZINC", "--root", str(tmp_path), "--download",
                            "--epochs", "1"], capsys)
    assert code == 2
    assert err.strip().splitlines() == [
        f"graphpe: error: ZINC: the download failed ([Errno -3] Temporary failure in name "
        f"resolution); on a machine without network place the dataset's files under "
        f"{tmp_path} instead"]
    code, _, err = run_cli(["train", "--dataset", "EXP", "--root", str(tmp_path), "--download",
                            "--epochs", "1"], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "EXP has no download" in err and "shared" not in err


def test_pyg_example_config_is_the_parity_benchmarks_graphpe_side(tmp_path):
    """configs/zinc_gps_pyg_example.toml gives ``graphpe train`` the model and the fit that
    benchmarks/zinc_parity.py trains against PyG's examples/graph_gps.py."""
    from pathlib import Path

    from graphpe.cli import build_parser
    from graphpe.cli.__init__ import _parse_with_config_file
    from graphpe.cli.train import model_options, train_config

    repo = Path(__file__).resolve().parents[1]
    config = str(repo / "configs" / "zinc_gps_pyg_example.toml")
    argv = ["train", "--dataset", "ZINC", "--root", str(tmp_path), "--config", config]
    args = _parse_with_config_file(build_parser(), argv, config)
    bench = bench_module("zinc_parity")
    model = {"model": args.model, "channels": args.channels, "layers": args.layers,
             **model_options(args)}
    assert model == {**bench.GRAPHPE_MODEL, "dropout": 0.0}
    assert args.pe == bench.GRAPHPE_PE
    fit = train_config(args)
    assert (fit.optimizer, fit.schedule, fit.lr, fit.weight_decay, fit.batch_size) == \
        ("adam", "plateau", bench.LR, bench.WEIGHT_DECAY, bench.BATCH)
    assert (fit.plateau_factor, fit.plateau_patience, fit.min_lr, fit.clip_norm, fit.epochs) \
        == (bench.FACTOR, bench.PLATEAU_PATIENCE, bench.MIN_LR, 0.0, 100)
    assert fit.patience >= fit.epochs  # no early stopping


def test_head_hidden_flag_checks_its_widths(capsys):
    code, _, err = run_cli(["train", "--dataset", "ZINC", "--head-hidden", "32,0"], capsys)
    assert code == 2 and "expected positive ints like 32,16 (layer widths), got '32,0'" in err


def test_the_model_declaration_drives_the_cli():
    from graphpe.cli import build_parser, command_parser
    from graphpe.cli.train import MODEL_FLAGS
    from graphpe.nn.build import MODELS

    actions = {a.dest: a for a in command_parser(build_parser(), "train")._actions}
    assert tuple(actions["model"].choices) == tuple(MODELS)
    assert set(MODEL_FLAGS) <= set(actions)  # every model flag is a flag of train
    assert {name for kind in MODELS.values() for name in kind.takes} == set(MODEL_FLAGS)


def test_residual_and_norm_are_gcn_and_sage_flags(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["train", "--dataset", "CSL", "--root", str(tmp_path), "--model", "gps",
              "--norm", "batch", "--epochs", "1"])
    assert "--norm sets a normalization in the layers of --model gcn or sage, not gps" in \
        capsys.readouterr().err


def test_a_damaged_checkpoint_is_one_line(tmp_path, capsys):
    import torch

    path = tmp_path / "model.pt"
    torch.save({"state_dict": {"w": torch.randn(1000)}}, path)
    path.write_bytes(path.read_bytes()[:1500])
    code, _, err = run_cli(["evaluate", "--checkpoint", str(path), "--dataset", "MUTAG",
                            "--root", str(tmp_path)], capsys)
    assert code == 2 and err.startswith(f"graphpe: error: {path}: not readable as a graphpe "
                                        "checkpoint (train --checkpoint) (")
    assert len(err.strip().splitlines()) == 1


def test_log_lines_carry_one_prefix():
    import logging

    from graphpe.cli import PrefixFormatter

    def line(message):
        record = logging.LogRecord("graphpe.ops.aot", logging.WARNING, __file__, 1, message,
                                   None, None)
        return PrefixFormatter().format(record)

    assert line("graphpe: compiling its CPU kernels") == "graphpe: compiling its CPU kernels"
    assert line("cache hit") == "graphpe: cache hit"


def test_third_party_warnings_are_hidden_and_graphpes_kept():
    import warnings

    from graphpe.cli import quiet_third_party_warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        quiet_third_party_warnings()
        warnings.warn("The given NumPy array is not writable, and PyTorch does not support "
                      "non-writable tensors", UserWarning, stacklevel=2)
        warnings.warn("You are using `torch.load` with `weights_only=False`", FutureWarning,
                      stacklevel=2)
        warnings.warn("GPSLayer: edge_attr is given, but the conv declares no `reads`",
                      UserWarning, stacklevel=2)
    assert [str(w.message)[:8] for w in caught] == ["GPSLayer"]


def test_train_task_link_on_cora_and_its_bad_settings(tmp_path, capsys):
    """``graphpe train --task link``: a link predictor on Cora's edges split by the seed, its
    record written with the pair features asked; a node-level dataset, --splits, a hop cap of 0
and an unknown pair feature are one line each."""
    copy_shared("planetoid/Cora", tmp_path / "Cora")
    out = tmp_path / "link.json"
    base = ["train", "--task", "link", "--dataset", "Cora", "--root", str(tmp_path),
            "--model", "gcn", "--channels", "16", "--layers", "2", "--epochs", "3"]
    code, printed, err = run_cli([*base, "--pe", "lap", "--pair-pe", "spd,cn,ppr,resistance",
                                  "--results", str(out)], capsys)
    assert code == 0, err
    record = json.loads(out.read_text())
    assert record["dataset"] == "Cora" and record["max_dist"] == 3
    assert record["pair_features"] == ["spd", "cn", "ppr", "resistance"]
    assert record["model_config"]["pair_dim"] == 5 + 3 + 2 + 1
    assert set(record["test"]) == {"rocauc", "ap", "hits@20", "hits@50", "hits@100"}
    assert json.loads(printed)["test"] == record["test"]
    for extra, message in (
            (["--splits", "all"], "graphpe: error: --task link splits the graph's edges by "
                                  "--seed; --splits picks the fixed node splits"),
            (["--pair-max-dist", "0"], "graphpe: error: max_dist must be a positive int, "
                                       "got 0"),
            (["--pair-pe", "spd,katz"], "graphpe: error: unknown pair feature 'katz'; known: "
                                        "spd, cn, ppr, resistance, rrwp, heat (or none)")):
        code, _, err = run_cli([*base, *extra], capsys)
        assert code == 2 and message in err
    code, _, err = run_cli([*base[:4], "MUTAG", *base[5:]], capsys)
    assert code == 2 and ("link prediction reads Cora, CiteSeer, PubMed, ogbl-collab, "
                          "ogbl-ddi, ogbl-ppa, ogbl-citation2, got 'MUTAG'" in err)
    code, _, err = run_cli([*base[:4], "ogbl-ddi", *base[5:], "--link-negatives", "heart"],
                           capsys)
    assert code == 2 and "graphpe: error: --link-negatives heart builds HeaRT's negatives " \
                         "for the random splits of Cora, CiteSeer, PubMed; ogbl-ddi" in err


def test_train_task_link_under_heart_ranks_each_edge_among_its_negatives(tmp_path, capsys):
    copy_shared("planetoid/Cora", tmp_path / "Cora")
    out = tmp_path / "heart.json"
    code, printed, err = run_cli(
        ["train", "--task", "link", "--dataset", "Cora", "--root", str(tmp_path), "--model",
         "gcn", "--channels", "8", "--layers", "1", "--epochs", "2", "--pair-pe", "none",
         "--link-negatives", "heart", "--results", str(out)], capsys)
    assert code == 0, err
    record = json.loads(out.read_text())
    assert record["dataset"] == "Cora (HeaRT)" and record["select_by"] == "mrr"
    assert {"mrr", "hits@1", "hits@10", "hits@100", "rocauc"} <= set(record["test"])
    assert 0 < record["test"]["mrr"] <= 1


def test_train_task_link_trains_seal_and_refuses_its_wrong_flags(tmp_path, capsys):
    """``graphpe train --task link --model seal``: SEAL on Cora's labeled enclosing subgraphs,
    its record written; encodings for SEAL, and SEAL's flags on another model, are one line
    each."""
    copy_shared("planetoid/Cora", tmp_path / "Cora")
    out = tmp_path / "seal.json"
    base = ["train", "--task", "link", "--dataset", "Cora", "--root", str(tmp_path),
            "--model", "seal", "--channels", "8", "--layers", "1", "--epochs", "1"]
    code, printed, err = run_cli([*base, "--hops", "1", "--labels", "de", "--results",
                                  str(out)], capsys)
    assert code == 0, err
    record = json.loads(out.read_text())
    assert (record["model"], record["hops"], record["labels"]) == ("seal", 1, "de")
    assert set(record["test"]) == {"rocauc", "ap", "hits@20", "hits@50", "hits@100"}
    assert json.loads(printed)["model"] == "seal"
    code, _, err = run_cli([*base, "--pe", "rwse"], capsys)
    assert code == 2 and ("graphpe: error: --model seal reads no encodings: its subgraphs' "
                          "nodes carry their labels (--labels), got --pe rwse") in err
    code, _, err = run_cli([*base[:8], "gcn", *base[9:], "--hops", "2"], capsys)
    assert code == 2 and ("graphpe: error: --hops sets the enclosing subgraphs' radius of "
                          "--model seal, not gcn") in err


def test_compare_refuses_the_link_task(tmp_path, capsys):
    code, _, err = run_cli(["compare", "--task", "link", "--dataset", "Cora", "--root",
                            str(tmp_path), "--model", "gcn", "--pe", "none", "--out",
                            str(tmp_path / "grid")], capsys)
    assert code == 2 and "graphpe: error: compare runs node- and graph-level grids; --task " \
                         "link trains with graphpe train" in err
