"""graphpe.train under torchrun: 2 processes on the CPU (gloo) against 1 process with the
combined batch."""

from __future__ import annotations

import json
import math
import os
import socket

import pytest
import torch
import torch.multiprocessing as mp

from graphpe.datasets import DatasetBundle, stratified_split
from graphpe.nn import build_model
from graphpe.synthetic import csl_graphs
from graphpe.train import TrainConfig, fit

MODEL = {"model": "gps", "channels": 16, "layers": 2, "out_dim": 10, "node_vocab": 5,
         "task": "graph_classification", "norm": "layer_norm", "mpnn": "gin", "heads": 2}


def bundle() -> DatasetBundle:
    graphs = csl_graphs(per_class=4, seed=0)
    gen = torch.Generator().manual_seed(0)
    for g in graphs:  # distinct node features: no parameter with a vanishing gradient, which
        # Adam would turn float noise into full-size steps for
        g.x = torch.randint(0, 5, (g.num_nodes, 1), generator=gen)
    labels = torch.cat([g.y for g in graphs])
    tr, va, te = stratified_split(labels, fractions=(0.5, 0.25, 0.25), seed=0)
    pick = lambda idx: [graphs[i] for i in idx.tolist()]  # noqa: E731
    return DatasetBundle("CSL", pick(tr), pick(va), pick(te), task="graph_classification",
                         metric="accuracy", out_dim=10, node_vocab=5)


def train(batch_size: int, out_dir: str, precision: str = "fp32") -> dict:
    torch.manual_seed(0)
    model = build_model(MODEL)  # LayerNorm: no batch statistics to differ between processes
    config = TrainConfig(epochs=3, batch_size=batch_size, lr=3e-3, warmup_epochs=1,
                         shuffle=False, progress=False, seed=0, precision=precision)
    record = fit(model, bundle(), config)
    rank = int(os.environ.get("RANK", "0"))
    torch.save(model.state_dict(), os.path.join(out_dir, f"state{rank}.pt"))
    with open(os.path.join(out_dir, f"record{rank}.json"), "w") as f:
        json.dump({k: record[k] for k in ("val", "test", "history", "world_size")}, f)
    return record


def _worker(rank: int, world: int, port: int, out_dir: str, precision: str = "fp32") -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE=str(world), LOCAL_RANK=str(rank))
    torch.set_num_threads(1)
    try:
        train(4, out_dir, precision)
    finally:
        import torch.distributed as dist

        if dist.is_initialized():
            dist.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.skipif(not torch.distributed.is_available(), reason="torch.distributed missing")
def test_two_processes_equal_one_process_with_the_combined_batch(tmp_path, monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    single_dir = tmp_path / "single"
    single_dir.mkdir()
    single = train(8, str(single_dir))  # 2 x 4 graphs per step, as the two processes together
    mp.spawn(_worker, args=(2, _free_port(), str(tmp_path)), nprocs=2, join=True)
    for rank in (0, 1):
        state = torch.load(tmp_path / f"state{rank}.pt")
        want = torch.load(single_dir / "state0.pt")
        for name, value in want.items():
            if name.endswith("attn.in_proj_bias"):
                # the key bias (rows 16-31) shifts every score of a row alike: its exact
                # gradient is 0, so Adam turns rounding noise into steps of size lr there
                value, state[name] = value[:16], state[name][:16]
            torch.testing.assert_close(state[name], value, atol=2e-5, rtol=1e-4, msg=name)
        record = json.loads((tmp_path / f"record{rank}.json").read_text())
        assert record["world_size"] == 2
        # metrics reduced over all processes: the single process's, not averaged averages
        assert record["val"] == pytest.approx(single["val"])
        assert record["test"] == pytest.approx(single["test"])
        for a, b in zip(record["history"], single["history"], strict=True):
            assert a["train_loss"] == pytest.approx(b["train_loss"], rel=1e-5)


def _draws_worker(rank: int, world: int, port: int, out_dir: str) -> None:
    import torch.distributed as dist
    from torch_geometric.data import Batch

    from graphpe.synthetic import csl_graphs
    from graphpe.transforms import RFP, OnTheFlyPE, precompute

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        graphs = csl_graphs(per_class=1, seed=0)[:4]
        batch = Batch.from_data_list(graphs)
        out = {}
        for run in ("a", "b"):  # the same seeded transform built afresh: a reproducible run
            otf = OnTheFlyPE([RFP(4, 2, seed=3)])
            out[f"train_{run}"] = [otf(batch).rfp, otf(batch).rfp]
        out["eval"] = otf.eval()(batch).rfp
        out["precompute"] = precompute(graphs, [RFP(4, 2, seed=3)], progress=False)[0].rfp
        torch.save(out, os.path.join(out_dir, f"draws{rank}.pt"))
    finally:
        dist.destroy_process_group()


@pytest.mark.skipif(not torch.distributed.is_available(), reason="torch.distributed missing")
def test_each_process_draws_its_own_training_stream(tmp_path, monkeypatch):
    """A seeded random transform held by every process of a distributed run: training draws
    (OnTheFlyPE in train mode) differ between processes, and are reproducible per process;
    evaluation draws and precompute are the same in every process."""
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    mp.spawn(_draws_worker, args=(2, _free_port(), str(tmp_path)), nprocs=2, join=True)
    r0, r1 = (torch.load(tmp_path / f"draws{rank}.pt") for rank in (0, 1))
    for r in (r0, r1):
        assert all(torch.equal(a, b) for a, b in zip(r["train_a"], r["train_b"], strict=True))
        assert not torch.equal(r["train_a"][0], r["train_a"][1])  # the stream advances
    assert not torch.equal(r0["train_a"][0], r1["train_a"][0])
    assert torch.equal(r0["eval"], r1["eval"])
    assert torch.equal(r0["precompute"], r1["precompute"])


@pytest.mark.skipif(not torch.distributed.is_available(), reason="torch.distributed missing")
def test_fp16_replicas_stay_identical(tmp_path, monkeypatch):
    """Mixed precision with fp16's loss scaling under two processes: the gradients are
    averaged before the scaler checks them, so every process takes (or skips) the same steps
    and the replicas end bit for bit equal, with finite losses."""
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    mp.spawn(_worker, args=(2, _free_port(), str(tmp_path), "fp16"), nprocs=2, join=True)
    states = [torch.load(tmp_path / f"state{rank}.pt") for rank in (0, 1)]
    for name, value in states[0].items():
        assert torch.equal(value, states[1][name]), name
    records = [json.loads((tmp_path / f"record{rank}.json").read_text()) for rank in (0, 1)]
    assert records[0]["history"] == records[1]["history"]
    assert all(math.isfinite(h["train_loss"]) for h in records[0]["history"])


def _polynormer_worker(rank: int, world: int, port: int, out_dir: str) -> None:
    """Polynormer's two stages under DistributedDataParallel: each leaves parameters without
    gradients, which DDP must be told to look for (``ddp_find_unused_parameters``)."""
    from torch_geometric.data import Data

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE=str(world), LOCAL_RANK=str(rank))
    torch.set_num_threads(1)
    try:
        gen = torch.Generator().manual_seed(0)
        n = 40
        edges = torch.randint(0, n, (2, 120), generator=gen)
        data = Data(x=torch.randn(n, 4, generator=gen), y=torch.randint(0, 3, (n,), generator=gen),
                    edge_index=torch.cat([edges, edges.flip(0)], 1), num_nodes=n)
        data.train_mask = data.val_mask = data.test_mask = torch.ones(n, dtype=torch.bool)
        bundle = DatasetBundle("graph", [data], [data], [data], task="node_classification",
                               metric="accuracy", out_dim=3, node_dim=4)
        torch.manual_seed(0)
        model = build_model({"model": "polynormer", "channels": 8, "layers": 2, "out_dim": 3,
                             "node_dim": 4, "local_epochs": 2, "global_layers": 1})
        record = fit(model, bundle, TrainConfig(epochs=4, batch_size=1, progress=False))
        with open(os.path.join(out_dir, f"poly{rank}.json"), "w") as f:
            json.dump({"epochs": len(record["history"]), "stage": model.global_stage}, f)
    finally:
        import torch.distributed as dist

        if dist.is_initialized():
            dist.destroy_process_group()


@pytest.mark.skipif(not torch.distributed.is_available(), reason="torch.distributed missing")
def test_polynormer_trains_across_its_stages_under_ddp(tmp_path, monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    mp.spawn(_polynormer_worker, args=(2, _free_port(), str(tmp_path)), nprocs=2, join=True)
    for rank in (0, 1):
        assert json.loads((tmp_path / f"poly{rank}.json").read_text())["epochs"] == 4
