"""graphpe.warmup: the kernels a user's calls need are compiled ahead of them."""

import importlib
import pkgutil
import re

import pytest
import torch
from numba.core.registry import CPUDispatcher
from torch_geometric.data import Batch, Data
from torch_geometric.loader import DataLoader

import graphpe
from graphpe import warmup
from graphpe.cli import main
from graphpe.encodings import encodings, pair_model_config, pe_model_config, resolve_pe
from graphpe.nn import build_model
from graphpe.ops.aot import Kernel
from graphpe.transforms import precompute


def test_plan_groups_pes_by_family_slowest_first():
    assert [f for f, _ in warmup.plan()] == list(warmup.FAMILIES)
    assert [f for f, _ in warmup.plan(models=False)] == [
        f for f in warmup.FAMILIES if f != "models"]
    assert warmup.plan(["rwse", "lap", "spe", "rwse"], models=False) == [
        ("eigen", ("lap", "spe")), ("walk", ("rwse",))]
    assert warmup.plan(["lcp"]) == [("models", None), ("curvature", ("lcp",))]
    assert warmup.plan(["pearl", "rwse"], models=False) == [("models", None),
                                                            ("walk", ("rwse",))]


def test_bad_arguments():
    with pytest.raises(ValueError, match=re.escape(f"unknown PE name(s) ['nope']; choose "
                                                   f"from {sorted(encodings())}")):
        warmup.plan(["lap", "nope"])
    with pytest.raises(ValueError, match="processes must be a positive int, got 0"):
        warmup.warm_up(["rwse"], processes=0)
    with pytest.raises(ValueError, match="unknown kernel family 'walks'"):
        warmup.warm_family("walks")


def _molecule(n: int, seed: int) -> Data:
    """A ring of ``n`` atoms with a chord and a pendant atom: another shape than warmup's."""
    g = torch.Generator().manual_seed(seed)
    pairs = [(i, (i + 1) % n) for i in range(n)] + [(0, n // 2), (n - 1, n)]
    src, dst = zip(*pairs, strict=True)
    edge_index = torch.tensor([src + dst, dst + src])
    return Data(edge_index=edge_index, num_nodes=n + 1,
                x=torch.randint(0, 4, (n + 1,), generator=g),
                edge_attr=torch.randint(0, 4, (edge_index.size(1),), generator=g),
                y=torch.randn(1, 1, generator=g))


def _kernel_signatures() -> dict[str, set]:
    """The signatures every numba kernel of graphpe holds in this process (compiled ahead,
    compiled here or loaded from the disk cache)."""
    out = {}
    for info in pkgutil.walk_packages(graphpe.__path__, "graphpe."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if getattr(value, "py_func", None) is None or (
                    value.py_func.__module__ != info.name):
                continue
            if isinstance(value, CPUDispatcher):
                out[f"{info.name}.{name}"] = set(value.overloads)
            elif isinstance(value, Kernel):
                out[f"{info.name}.{name}"] = value.signatures_held()
    return out


def test_after_warm_up_a_workload_needs_no_new_kernel():
    """After warm_up, a user's workload (other graphs, sizes and settings; batches from a
    DataLoader; other model shapes) needs no kernel signature that warm_up did not already
    compile or load: none is added, whatever the disk cache holds."""
    warmup.warm_up(["lap", "spe", "signnet", "rwse", "rfp", "lcp", "rrwp"], processes=1)
    graphs = [_molecule(n, seed) for seed, n in enumerate((5, 9, 23, 31))]
    before = _kernel_signatures()
    assert sum(map(len, before.values())) > 20  # the check sees the kernels
    for pe in ({"lap": {"k": 4}}, {"spe": {"k": 6}}, {"rwse": {"walk_length": 8}},
               {"rfp": {"dim": 8, "steps": 3}}, "lcp"):
        transform = resolve_pe(pe)[0].transform()
        for g in graphs:
            transform(g.clone())
        transform(next(iter(DataLoader([g.clone() for g in graphs], batch_size=3))))
        precompute([g.clone() for g in graphs], [transform], progress=False)
    for model, pe in (("gps", "rwse:walk_length=8"), ("gps", "rrwp:num_steps=5"),
                      ("gine", "rwse:walk_length=8"), ("gine", "spe:k=6"),
                      ("gine", "signnet:k=6"), ("gatedgcn", "rwse:walk_length=8")):
        specs = resolve_pe(pe)
        batch = Batch.from_data_list([g.clone() for g in graphs])
        batch = specs[0].transform()(batch)
        config = {"model": model, "channels": 32, "layers": 3, "out_dim": 1,
                  "node_vocab": 4, "edge_vocab": 4, "pe": pe_model_config(specs)}
        if pair_model_config(specs):
            config["pair"] = pair_model_config(specs)
        if model == "gps":
            config.update(heads=4, attn_dropout=0.2)
        net = build_model(config).train()
        net(batch).sum().backward()
        net.eval()
        with torch.no_grad():
            net(batch)
    after = _kernel_signatures()
    added = {name: sigs - before.get(name, set()) for name, sigs in after.items()}
    assert {name: sigs for name, sigs in added.items() if sigs} == {}


def test_processes_compile_side_by_side():
    seconds = warmup.warm_up(["rwse", "lcp"], models=False, processes=2)
    assert list(seconds) == ["curvature", "walk"]
    assert all(s > 0 for s in seconds.values())


def test_cli_warmup(capsys):
    main(["warmup", "--pe", "rwse:walk_length=20", "--no-models", "--processes", "1"])
    out = capsys.readouterr().out
    assert out.splitlines()[0].split()[0] == "walk"
    assert "numba's cache:" in out
    with pytest.raises(SystemExit) as err:
        main(["warmup", "--pe", "lap,nope"])
    assert err.value.code == 2
    assert "unknown PE name(s) ['nope']" in capsys.readouterr().err


@pytest.mark.slow  # graphpe warmup and four training runs in fresh processes: ~3 min
def test_after_graphpe_warmup_the_shipped_commands_compile_nothing(tmp_path):
    """``graphpe warmup`` on an empty numba cache, then ``graphpe train`` as a user runs it
    (TU sets read from PyG's files, CSL generated in code; GINE, GPS and GatedGCN with node
    and pairwise encodings): no run says it compiles."""
    import os
    import subprocess
    import sys

    from tests.conftest import copy_shared

    copy_shared("tu/PROTEINS", tmp_path / "data" / "PROTEINS")
    copy_shared("tu/MUTAG", tmp_path / "data" / "MUTAG")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba"), "OMP_NUM_THREADS": "1"}

    def graphpe(*args):
        run = subprocess.run([sys.executable, "-m", "graphpe", *args], env=env,
                             capture_output=True, text=True, timeout=900, cwd=tmp_path)
        assert run.returncode == 0, run.stderr[-2000:]
        return run.stderr

    graphpe("warmup")
    runs = [("PROTEINS", "gine", "rwse,lap"), ("MUTAG", "gps", "rwse,lcp"),
            ("CSL", "gatedgcn", "rfp"), ("MUTAG", "gps", "rrwp")]
    for dataset, model, pe in runs:
        said = graphpe("train", "--dataset", dataset, "--root", str(tmp_path / "data"),
                       "--model", model, "--pe", pe, "--epochs", "1", "--channels", "16",
                       "--layers", "2")
        assert "compiling its CPU kernels" not in said, (dataset, model, pe, said[-1000:])
