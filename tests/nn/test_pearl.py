"""PEARLEncoder: the vectorized encoder against a loop over samples on dense matrices,
permutation equivariance, batch == per graph, draws in train and eval, errors, and the way in
through build_model, the presets, ``graphpe.train.run`` and the command line."""

from __future__ import annotations

import networkx as nx
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch_geometric.data import Batch, Data

from graphpe.nn import PEARLEncoder, build_model
from graphpe.synthetic import molecule_like_graphs

SMALL = {"layers": 2, "hidden": 8, "pe_dim": 6, "mlp_layers": 2, "mlp_hidden": 8}


def small(variant="random", **kw):
    torch.manual_seed(0)
    return PEARLEncoder(5, variant=variant, **{"num_samples": 6, **SMALL, **kw})


def graphs(num=5, min_nodes=3, max_nodes=12, seed=0):
    return molecule_like_graphs(num, min_nodes=min_nodes, max_nodes=max_nodes, seed=seed)


def dense_operators(data: Data) -> tuple[torch.Tensor, torch.Tensor]:
    """0/1 adjacency and L_sym of the undirected simple graph, through networkx."""
    g = nx.Graph()
    g.add_nodes_from(range(data.num_nodes))
    g.add_edges_from((u, v) for u, v in data.edge_index.t().tolist() if u != v)
    a = torch.tensor(nx.to_numpy_array(g, nodelist=range(data.num_nodes)), dtype=torch.float32)
    deg = a.sum(1)
    dis = torch.where(deg > 0, deg.clamp(min=1).rsqrt(), torch.zeros_like(deg))
    lap = torch.diag((deg > 0).float()) - dis[:, None] * a * dis[None, :]
    return a, lap


def loop_reference(enc: PEARLEncoder, data: Data, inputs: torch.Tensor) -> torch.Tensor:
    """The encoder's maths for one graph, one sample ``inputs[:, j]`` at a time, dense."""
    a, lap = dense_operators(data)
    per_sample = []
    for j in range(inputs.size(1)):
        terms = [inputs[:, j]]
        for _ in range(enc.powers - 1):
            terms.append(lap @ terms[-1])
        h = enc.input(torch.stack(terms, -1))
        for i, mlp in enumerate(enc.mlps):
            h = mlp((1 + enc.eps[i]) * h + a @ h)
            if i < enc.num_layers - 1:
                h = enc.norms[i](h)
        per_sample.append(h)
    h = torch.stack(per_sample, 1)
    return enc.out(h.sum(1) if enc.pooling == "sum" else h.mean(1))


@pytest.mark.parametrize("pooling", ["sum", "mean"])
@pytest.mark.parametrize("variant", ["random", "basis"])
def test_vectorized_equals_a_loop_over_samples(variant, pooling):
    enc = small(variant, pooling=pooling, powers=3).eval()
    for data in graphs(3) + [Data(edge_index=torch.tensor([[0, 1], [1, 0]]), num_nodes=4)]:
        n = data.num_nodes
        inputs = torch.randn(n, 6) if variant == "random" else torch.eye(n)
        with torch.no_grad():
            got = enc(data, samples=inputs) if variant == "random" else enc(data)
            want = loop_reference(enc, data, inputs)
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("variant", ["random", "basis"])
def test_shapes_and_edge_cases(variant):
    enc = small(variant)
    batch = Batch.from_data_list(graphs(4))
    assert enc(batch).shape == (batch.num_nodes, 5)
    enc.eval()
    empty = Data(edge_index=torch.empty(2, 0, dtype=torch.long), num_nodes=0)
    assert enc(empty).shape == (0, 5)
    isolated = Data(edge_index=torch.empty(2, 0, dtype=torch.long), num_nodes=3)
    out = enc(isolated)
    assert out.shape == (3, 5) and torch.isfinite(out).all()
    # a directed edge list reads as its undirected graph
    directed = Data(edge_index=torch.tensor([[0, 1, 2], [1, 2, 0]]), num_nodes=3)
    both = Data(edge_index=torch.tensor([[0, 1, 2, 1, 2, 0], [1, 2, 0, 0, 1, 2]]), num_nodes=3)
    torch.testing.assert_close(enc(directed), enc(both))
    assert "variant=" in repr(enc)


@st.composite
def graph_and_permutation(draw, max_nodes: int = 9):
    n = draw(st.integers(2, max_nodes))
    edges = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)),
                          max_size=3 * n))
    ei = torch.tensor(edges, dtype=torch.long).reshape(-1, 2).t().contiguous()
    perm = torch.tensor(draw(st.permutations(list(range(n)))))
    return Data(edge_index=ei, num_nodes=n), perm


def permuted(data: Data, perm: torch.Tensor) -> Data:
    """The same graph with new node ids: new node ``i`` is old node ``perm[i]``."""
    inv = torch.empty_like(perm)
    inv[perm] = torch.arange(perm.numel())
    return Data(edge_index=inv[data.edge_index], num_nodes=data.num_nodes)


BASIS = small("basis", powers=3)


@settings(max_examples=40, deadline=None)
@given(graph_and_permutation(), st.booleans())
def test_basis_variant_is_permutation_equivariant(case, training):
    data, perm = case
    enc = BASIS.train(training)
    with torch.no_grad():
        out = enc(data)
        out_perm = enc(permuted(data, perm))
    torch.testing.assert_close(out_perm, out[perm], atol=1e-4, rtol=1e-4)


RANDOM = small("random", powers=2)


@settings(max_examples=40, deadline=None)
@given(graph_and_permutation(), st.booleans())
def test_random_variant_permutes_with_its_draws(case, training):
    data, perm = case
    enc = RANDOM.train(training)
    draws = torch.randn(data.num_nodes, 6)
    with torch.no_grad():
        out = enc(data, samples=draws)
        out_perm = enc(permuted(data, perm), samples=draws[perm])
    torch.testing.assert_close(out_perm, out[perm], atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("pooling", ["sum", "mean"])
@pytest.mark.parametrize("variant", ["random", "basis"])
def test_batch_equals_each_graph_alone(variant, pooling):
    # sizes 3..40: the largest graph changes the padding (basis) and the draw table (random)
    data_list = graphs(6, min_nodes=3, max_nodes=40, seed=3)
    enc = small(variant, pooling=pooling).eval()
    batch = Batch.from_data_list(data_list)
    with torch.no_grad():
        together = enc(batch)
        alone = torch.cat([enc(g) for g in data_list])
        # a batch vector without ptr gives the same
        no_ptr = enc(Data(edge_index=batch.edge_index, batch=batch.batch,
                          num_nodes=batch.num_nodes))
    torch.testing.assert_close(together, alone, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(no_ptr, together)


def test_basis_training_without_batch_norm_is_per_graph():
    # BatchNorm in training mode couples a batch (as everywhere); without it the basis
    # variant's rows are each graph's own, padding included
    data_list = graphs(4, min_nodes=2, max_nodes=20, seed=5)
    enc = small("basis", batch_norm=False).train()
    batch = Batch.from_data_list(data_list)
    torch.testing.assert_close(enc(batch), torch.cat([enc(g) for g in data_list]),
                               atol=1e-5, rtol=1e-5)


def test_random_draws_fresh_in_training_fixed_in_eval():
    batch = Batch.from_data_list(graphs(3))
    enc = small("random")
    assert not torch.equal(enc(batch), enc(batch))  # fresh draws every training call
    enc.eval()
    state = torch.get_rng_state()
    first = enc(batch)
    assert torch.equal(first, enc(batch))
    assert torch.equal(state, torch.get_rng_state())  # eval leaves the training stream alone
    other = small("random", seed=1).eval()
    other.load_state_dict(enc.state_dict())
    assert not torch.equal(first, other(batch))
    # the eval draws: one table row per local node id, whatever the batch
    ptr = batch.ptr
    draws = enc.draws(ptr, batch.num_nodes, torch.device("cpu"), torch.float32)
    first_nodes = draws[ptr[:-1]]
    assert torch.equal(first_nodes, first_nodes[:1].expand_as(first_nodes))


@pytest.mark.parametrize("variant", ["random", "basis"])
def test_gradients_reach_every_parameter(variant):
    enc = small(variant, powers=2)
    enc(Batch.from_data_list(graphs(3))).pow(2).sum().backward()
    for name, p in enc.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_bad_arguments_name_the_problem():
    with pytest.raises(ValueError, match=r"variant must be one of \('random', 'basis'\), "
                                         r"got 'eigen'"):
        PEARLEncoder(8, variant="eigen")
    with pytest.raises(ValueError, match=r"pooling must be one of \('sum', 'mean'\), got 'max'"):
        PEARLEncoder(8, pooling="max")
    with pytest.raises(ValueError, match="num_samples must be a positive int, got 0"):
        PEARLEncoder(8, num_samples=0)
    with pytest.raises(ValueError, match="layers must be a positive int, got 1.5"):
        PEARLEncoder(8, layers=1.5)
    with pytest.raises(ValueError, match="channels must be a positive int, got True"):
        PEARLEncoder(True)
    with pytest.raises(ValueError, match="seed must be an int, got None"):
        PEARLEncoder(8, seed=None)
    big = Data(edge_index=torch.tensor([[0, 1], [1, 0]]), num_nodes=30)
    with pytest.raises(ValueError, match=r"PEARLEncoder\(variant='basis'\) got a graph with 30 "
                                         r"nodes, above max_nodes=20: .*variant='random'"):
        small("basis", max_nodes=20)(big)
    with pytest.raises(ValueError, match="samples are the inputs of variant='random'"):
        small("basis")(big, samples=torch.zeros(30, 6))
    with pytest.raises(ValueError, match=r"samples must have shape \[30, 6\] \(nodes, "
                                         r"num_samples\), got \[30, 5\]"):
        small("random")(big, samples=torch.zeros(30, 5))
    unsorted = Data(edge_index=torch.tensor([[0, 1], [1, 0]]), num_nodes=3,
                    batch=torch.tensor([0, 1, 0]))
    with pytest.raises(ValueError, match="nodes of each graph contiguous"):
        small()(unsorted)
    with pytest.raises(ValueError, match="edge_index contains node index 5"):
        small()(Data(edge_index=torch.tensor([[0], [5]]), num_nodes=3))


@pytest.mark.parametrize("model", ["gine", "gps"])
def test_build_model_with_pearl(model):
    data_list = graphs(4)
    for g in data_list:
        g.x = torch.zeros(g.num_nodes, 1, dtype=torch.long)
    net = build_model({"model": model, "channels": 8, "layers": 1, "node_vocab": 1,
                       "pe": {"pearl": {"variant": "basis", **SMALL}}})
    out = net(Batch.from_data_list(data_list))
    assert out.shape == (4, 1)
    out.sum().backward()
    pe = net.pe_encoders[0]
    assert isinstance(pe, PEARLEncoder) and pe.variant == "basis"
    assert pe.input[0].weight.grad is not None


def test_presets_have_no_transform_for_pearl():
    from graphpe.encodings import pe_model_config, pe_spec, resolve_pe, transforms_of

    specs = resolve_pe("rwse,pearl:num_samples=4:variant=basis")
    assert specs[1].transform() is None
    assert [type(t).__name__ for t in transforms_of(specs)] == ["RWSE"]
    config = pe_model_config(specs)["pearl"]
    assert config["num_samples"] == 4 and config["variant"] == "basis"
    assert PEARLEncoder(8, **config).variant == "basis"
    with pytest.raises(ValueError, match=r"variant must be one of \('random', 'basis'\)"):
        pe_spec("pearl", variant="eigen")
    with pytest.raises(ValueError, match=r"unknown setting\(s\) \['k'\] for PE 'pearl'"):
        pe_spec("pearl", k=3)


def tiny_bundle():
    from graphpe.datasets import DatasetBundle

    data_list = molecule_like_graphs(16, min_nodes=4, max_nodes=10, seed=1)
    for i, g in enumerate(data_list):
        g.x = torch.zeros(g.num_nodes, 1, dtype=torch.long)
        g.y = torch.tensor([float(g.num_nodes % 3 == 0) + 0.1 * i])
    return DatasetBundle("tiny", data_list[:8], data_list[8:12], data_list[12:],
                         task="graph_regression", metric="mae", out_dim=1, node_vocab=1)


@pytest.mark.parametrize("variant", ["random", "basis"])
def test_train_run_with_pearl(variant):
    from graphpe.train import TrainConfig, run

    pe = [{"name": "pearl", "variant": variant, "num_samples": 4, **SMALL}]
    record = run(tiny_bundle(), pe, channels=8, layers=1,
                 config=TrainConfig(epochs=2, batch_size=4, progress=False))
    assert record["epochs_run"] == 2 and record["pe_seconds"] == 0.0
    assert record["pe"][0]["name"] == "pearl" and record["pe"][0]["variant"] == variant
    assert record["model_config"]["pe"]["pearl"]["num_samples"] == 4
    assert torch.isfinite(torch.tensor(record["test"]))


def test_cli_train_with_pearl(tmp_path, capsys, monkeypatch):
    import json
    from pathlib import Path

    from graphpe.cli import main

    examples = Path(__file__).resolve().parents[2] / "examples"
    monkeypatch.syspath_prepend(str(examples))
    results = tmp_path / "r.json"
    main(["train", "--dataset", "own_dataset:build", "--root", str(tmp_path), "--pe",
          "pearl:num_samples=4:layers=2:hidden=8:pe_dim=8:mlp_hidden=8", "--epochs", "1",
          "--channels", "8", "--layers", "1", "--results", str(results),
          "--checkpoint", str(tmp_path / "m.pt")])
    record = json.loads(results.read_text())
    assert record["pe"][0]["name"] == "pearl" and record["pe"][0]["num_samples"] == 4
    capsys.readouterr()
    # the checkpoint alone rebuilds the model; eval draws are seeded, so the metric repeats
    main(["evaluate", "--checkpoint", str(tmp_path / "m.pt"), "--dataset", "own_dataset:build",
          "--root", str(tmp_path)])
    assert json.loads(capsys.readouterr().out)["value"] == pytest.approx(record["test"])
    with pytest.raises(SystemExit):  # nothing to precompute
        main(["precompute", "--dataset", "own_dataset:build", "--root", str(tmp_path),
              "--pe", "pearl", "--cache-dir", str(tmp_path / "cache")])
    assert "is learned inside the model" in capsys.readouterr().err


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
@pytest.mark.parametrize("variant", ["random", "basis"])
def test_cuda_matches_cpu(variant):
    data_list = graphs(5, max_nodes=30, seed=2)
    batch = Batch.from_data_list(data_list)
    enc = small(variant, powers=3).eval()
    with torch.no_grad():
        cpu = enc(batch)
        gpu = enc.cuda()(batch.cuda()).cpu()
    torch.testing.assert_close(gpu, cpu, atol=1e-4, rtol=1e-4)
    enc.train()(batch.cuda()).sum().backward()
    assert all(p.grad is not None for p in enc.parameters())
