"""The gpse encoding: GPSEPE equals PyG's GPSE (with PyG's VirtualNode) on the same weights and
random inputs, in batches, chunks and precompute; checkpoints of every kind load; bad inputs
refuse."""

import pytest
import torch
import torch_geometric.transforms as T
from torch_geometric.data import Batch, Data
from torch_geometric.nn.models.gpse import IdentityHead

from graphpe.encodings import pe_spec
from graphpe.encodings.gpse import GPSEPE, GPSEEncoder, load_gpse, save_gpse
from graphpe.nn import GPSE
from graphpe.synthetic import molecule_like_graphs
from graphpe.transforms import precompute
from tests.layers.test_gpse import random_pyg_gpse


def graphs():
    out = [Data(edge_index=g.edge_index, num_nodes=g.num_nodes)
           for g in molecule_like_graphs(4, min_nodes=3, max_nodes=14, seed=5)]
    # a graph with an isolated node and a self loop, and a single node
    out.append(Data(edge_index=torch.tensor([[0, 1, 2], [1, 0, 2]]), num_nodes=4))
    out.append(Data(edge_index=torch.zeros(2, 0, dtype=torch.long), num_nodes=1))
    return out


def pyg_encoding(model, data, x):
    """PyG's GPSE on ``data`` with its VirtualNode (as AddGPSE), inputs ``x`` (the virtual
    node's row 0, as PyG's gpse_process): the rows of the real nodes."""
    data = T.VirtualNode()(Data(x=x, edge_index=data.edge_index, num_nodes=data.num_nodes))
    with torch.no_grad():
        out, _ = model(data)
    return out[:-1]


@pytest.fixture
def pyg_model_and_path(tmp_path):
    model = random_pyg_gpse(seed=4)
    path = tmp_path / "pyg_gpse.pt"
    torch.save(model.state_dict(), path)
    model.post_mp = IdentityHead()  # the encoding: the representation before the head
    return model, path


def test_transform_equals_pygs_gpse(pyg_model_and_path):
    theirs, path = pyg_model_and_path
    data_list = graphs()
    batch = Batch.from_data_list(data_list)
    got = GPSEPE(str(path), seed=3)(batch.clone()).gpse
    x = torch.randn(batch.num_nodes, 6, generator=torch.Generator().manual_seed(3))
    expected = torch.cat([pyg_encoding(theirs, d, x[a:b]) for d, a, b in
                          zip(data_list, batch.ptr[:-1], batch.ptr[1:], strict=True)])
    torch.testing.assert_close(got, expected, atol=2e-6, rtol=1e-5)
    # one graph alone
    one = GPSEPE(str(path), seed=7)(data_list[0].clone()).gpse
    x = torch.randn(data_list[0].num_nodes, 6, generator=torch.Generator().manual_seed(7))
    torch.testing.assert_close(one, pyg_encoding(theirs, data_list[0], x), atol=2e-6,
                               rtol=1e-5)


def test_chunks_precompute_and_a_module_give_the_same(pyg_model_and_path):
    _, path = pyg_model_and_path
    batch = Batch.from_data_list(graphs())
    whole = GPSEPE(str(path), seed=1)(batch.clone()).gpse
    chunked = GPSEPE(str(path), seed=1, batch_nodes=10)(batch.clone()).gpse
    torch.testing.assert_close(chunked, whole, atol=1e-6, rtol=1e-5)
    module = GPSEPE(load_gpse(path), seed=1)(batch.clone()).gpse
    torch.testing.assert_close(module, whole, atol=1e-6, rtol=1e-5)
    encoded = precompute(graphs(), [GPSEPE(str(path), seed=1)], progress=False)
    torch.testing.assert_close(torch.cat([d.gpse for d in encoded]), whole, atol=1e-6,
                               rtol=1e-5)
    # successive calls draw fresh inputs
    transform = GPSEPE(str(path), seed=1)
    first, second = transform(batch.clone()).gpse, transform(batch.clone()).gpse
    assert not torch.allclose(first, second)


def test_checkpoints_and_cache_keys(tmp_path, pyg_model_and_path):
    theirs, path = pyg_model_and_path
    ours = load_gpse(path)
    assert not ours.training and ours.config.dim_inner == 16
    saved = tmp_path / "ours.pt"
    save_gpse(ours, saved, note="kept")
    assert torch.load(saved, weights_only=True)["note"] == "kept"
    again = load_gpse(saved)
    for a, b in zip(ours.state_dict().values(), again.state_dict().values(), strict=True):
        assert torch.equal(a, b)
    wrapped = tmp_path / "repository.pt"  # the files of PyG's GPSE.from_pretrained
    torch.save({"model_state": {f"model.{k}": v for k, v in
                                random_pyg_gpse(seed=4).state_dict().items()}}, wrapped)
    batch = Batch.from_data_list(graphs())
    torch.testing.assert_close(GPSEPE(str(wrapped))(batch.clone()).gpse,
                               GPSEPE(str(path))(batch.clone()).gpse)
    # the cache key holds a digest of the weights: other weights under the same name differ
    key = repr(GPSEPE(str(path)))
    torch.save(random_pyg_gpse(seed=5).state_dict(), path)
    assert repr(GPSEPE(str(path))) != key
    assert "weights=" in repr(GPSEPE(ours)) and "<module>" in repr(GPSEPE(ours))


def test_bad_inputs(tmp_path, pyg_model_and_path):
    _, path = pyg_model_and_path
    data = graphs()[0]
    with pytest.raises(ValueError, match="GPSE encodes with a pretrained model and graphpe "
                                         "ships none: give its checkpoint"):
        GPSEPE()(data.clone())
    with pytest.raises(ValueError, match="GPSE encodes with a pretrained model"):
        pe_spec("gpse").transform()(data.clone())
    with pytest.raises(ValueError, match="GPSE checkpoint '.*missing.pt' not found"):
        GPSEPE(str(tmp_path / "missing.pt"))
    with pytest.raises(ValueError, match="GPSE checkpoint '.*missing.pt' not found"):
        pe_spec("gpse", checkpoint=str(tmp_path / "missing.pt"))
    with pytest.raises(ValueError, match="encodes 16 columns, dim=512 was given: set "
                                         "gpse:dim=16"):
        pe_spec("gpse", checkpoint=str(path)).transform()(data.clone())
    with pytest.raises(ValueError, match="checkpoint must be a path or a graphpe.nn.GPSE"):
        GPSEPE(3)
    not_gpse = tmp_path / "tensor.pt"
    torch.save(torch.zeros(3), not_gpse)
    with pytest.raises(ValueError, match="is not a GPSE checkpoint"):
        load_gpse(not_gpse)
    with pytest.raises(ValueError, match=r"expected gpse \[N, 16\], got \[3, 8\]"):
        GPSEEncoder(16, 4)(torch.zeros(3, 8))


def test_spec_encodes_and_its_encoder_reads_it(pyg_model_and_path):
    _, path = pyg_model_and_path
    spec = pe_spec("gpse", checkpoint=str(path), dim=16, seed=2)
    batch = spec.transform()(Batch.from_data_list(graphs()))
    encoder = spec.encoder(8)
    assert encoder(batch).shape == (batch.num_nodes, 8)
    assert isinstance(GPSE.from_pyg_state_dict(torch.load(path, weights_only=True)), GPSE)


# ----------------------------------------------------------------------------- pretraining
# GPSE's target functions (G-Taxonomy-Workgroup/GPSE, graphgym/transform/posenc_stats.py,
# commit 554a11d; MIT License, Copyright (c) 2023 G-Taxonomy-Workgroup), trimmed to the
# options of its pretraining configs; get_rw_landing_probs's torch_scatter.scatter_add is
# written as index_add.
def gpse_electrostatic(edge_index, num_nodes):
    import scipy.sparse  # noqa: F401  (to_scipy_sparse_matrix)
    from torch_geometric.utils import get_laplacian, to_scipy_sparse_matrix

    lap = to_scipy_sparse_matrix(*get_laplacian(edge_index, normalization=None,
                                                num_nodes=num_nodes)).todense()
    lap = torch.as_tensor(lap)
    dinv = torch.eye(lap.shape[0]) * (lap.diag() ** -1)
    adj = lap.clone().abs()
    adj.fill_diagonal_(0)
    dinv_a = dinv.matmul(adj)
    evals, evecs = torch.linalg.eigh(lap)
    offset = (evals < 1e-6).sum().item()
    if offset == num_nodes:
        return torch.zeros(num_nodes, 7, dtype=torch.float32)
    electrostatic = evecs[:, offset:] / evals[offset:] @ evecs[:, offset:].T
    electrostatic = electrostatic - electrostatic.diag()
    return torch.stack([
        electrostatic.min(dim=0)[0], electrostatic.mean(dim=0), electrostatic.std(dim=0),
        electrostatic.min(dim=1)[0], electrostatic.std(dim=1),
        (dinv_a * electrostatic).sum(dim=0), (dinv_a * electrostatic).sum(dim=1)], dim=1)


def gpse_lap(edge_index, num_nodes, max_freqs=4):
    import numpy as np
    import torch.nn.functional as F
    from torch_geometric.utils import get_laplacian, to_scipy_sparse_matrix

    lap = to_scipy_sparse_matrix(*get_laplacian(edge_index, normalization="sym",
                                                num_nodes=num_nodes))
    evals, evects = np.linalg.eigh(lap.toarray())
    offset = (abs(evals) < 1e-6).sum().clip(0, num_nodes)
    idx = evals.argsort()[offset:max_freqs + offset]
    evals, evects = evals[idx], np.real(evects[:, idx])
    evals = torch.from_numpy(np.real(evals)).clamp_min(0)
    evects = torch.from_numpy(evects).float()
    evects = evects / evects.norm(p=2, dim=0, keepdim=True).clamp_min(1e-12)
    if num_nodes < max_freqs + offset:
        evects = F.pad(evects, (0, max_freqs + offset - num_nodes), value=float("nan"))
        evals = F.pad(evals, (0, max_freqs + offset - num_nodes), value=float("nan"))
    return evals, evects.abs()


def gpse_rw_landing(ksteps, edge_index, num_nodes):
    from torch_geometric.utils import to_dense_adj

    edge_weight = torch.ones(edge_index.size(1))
    deg = torch.zeros(num_nodes).index_add(0, edge_index[0], edge_weight)
    deg_inv = deg.pow(-1.0)
    deg_inv.masked_fill_(deg_inv == float("inf"), 0)
    if edge_index.numel() == 0:
        return torch.zeros(num_nodes, len(ksteps))
    p = torch.diag(deg_inv) @ to_dense_adj(edge_index, max_num_nodes=num_nodes)
    return torch.cat([torch.diagonal(p.matrix_power(k), dim1=-2, dim2=-1) for k in ksteps],
                     dim=0).transpose(0, 1)


def gpse_heat_diag(edge_index, num_nodes, times):
    import numpy as np
    import torch.nn.functional as F
    from torch_geometric.utils import get_laplacian, to_scipy_sparse_matrix

    lap = to_scipy_sparse_matrix(*get_laplacian(edge_index, normalization=None,
                                                num_nodes=num_nodes))
    evals, evects = (torch.from_numpy(a) for a in np.linalg.eigh(lap.toarray()))
    evects = F.normalize(evects, p=2.0, dim=0)
    keep = evals >= 1e-8
    evals, evects = evals[keep].unsqueeze(-1), evects[:, keep].transpose(0, 1)
    return torch.stack([torch.sum(torch.exp(-t * evals) * evects ** 2, dim=0) for t in times],
                       dim=0).transpose(0, 1)


def gpse_node_targets(data):
    """GPSE's node targets of one graph: ElstaticPE+LapPE+RWSE+HKdiagSE, nan_to_num, then its
    GraphNormalizer (clip_var 1e-5, a fresh GraphNorm with eps 1e-5)."""
    from torch_geometric.nn import GraphNorm

    ei, n = data.edge_index, data.num_nodes
    y = torch.nan_to_num(torch.hstack([
        gpse_electrostatic(ei, n).float(), gpse_lap(ei, n)[1].float(),
        gpse_rw_landing(list(range(2, 22)), ei, n).float(),
        gpse_heat_diag(ei, n, range(1, 21)).float()]))
    y[:, y.var(0) < 1e-5] = 0
    with torch.no_grad():
        return GraphNorm(y.size(1), eps=1e-5)(y)


def ring_molecules(num_graphs, seed):
    return [Data(edge_index=g.edge_index, num_nodes=g.num_nodes) for g in
            molecule_like_graphs(num_graphs, min_nodes=6, max_nodes=20, ring_prob=0.5,
                                 seed=seed)]


def test_targets_equal_gpses_functions():
    from graphpe.ops.cycles import graph_cycle_counts
    from graphpe.pretrain import GPSETargets

    data_list = ring_molecules(6, seed=1)
    batch = GPSETargets()(Batch.from_data_list(data_list))
    assert batch.gpse_y.shape == (batch.num_nodes, 51)
    compared = 0
    for g, data in enumerate(data_list):
        rows = slice(int(batch.ptr[g]), int(batch.ptr[g + 1]))
        got, expected = batch.gpse_y[rows], gpse_node_targets(data)
        evals, _ = gpse_lap(data.edge_index, data.num_nodes, max_freqs=5)
        # |v| is defined where the eigenvalue is simple: compare those columns only
        gaps = evals.diff().abs()
        simple = [j for j in range(4) if gaps[j] > 1e-5 and (j == 0 or gaps[j - 1] > 1e-5)]
        columns = [*range(7), *(7 + j for j in simple), *range(11, 51)]
        compared += len(simple)
        torch.testing.assert_close(got[:, columns], expected[:, columns], atol=2e-4, rtol=1e-3)
        graph = batch.gpse_y_graph[rows][0]
        torch.testing.assert_close(graph[:4], torch.nan_to_num(gpse_lap(
            data.edge_index, data.num_nodes)[0]).float(), atol=1e-5, rtol=1e-5)
        assert torch.equal(graph[4:], graph_cycle_counts(data.edge_index,
                                                         data.num_nodes)[0].float())
    assert compared >= 12  # most eigenvector columns were checked


def test_standardize_per_graph_is_a_fresh_graph_norm():
    from torch_geometric.nn import GraphNorm

    from graphpe.pretrain import standardize_per_graph

    y = torch.randn(9, 3, generator=torch.Generator().manual_seed(0))
    y[4:8, 1] = 2.0  # a column constant in a graph
    ptr = torch.tensor([0, 4, 8, 9])  # the last graph has one node
    batch = torch.repeat_interleave(torch.arange(3), ptr.diff())
    expected = GraphNorm(3, eps=1e-5)(y, batch).detach()
    got = standardize_per_graph(y, ptr)
    torch.testing.assert_close(got, expected)
    assert (got[4:8, 1] == 0).all() and (got[8] == 0).all()


def tiny_molecules(root, pre_transform=None, **_):
    """A ``module:function`` dataset for the command line: 24 ring molecules, 16/4/4."""
    from graphpe.datasets import DatasetBundle

    graphs = ring_molecules(24, seed=3)
    return DatasetBundle("tiny", graphs[:16], graphs[16:20], graphs[20:],
                         task="graph_regression", metric="mae", out_dim=1)


TINY = {"dim_inner": 16, "layers_mp": 2, "head_hidden": 8, "batch_size": 8,
        "warmup_epochs": 1}


def test_pretraining_lowers_the_loss():
    from graphpe.pretrain import PretrainConfig, pretrain_gpse

    graphs = ring_molecules(24, seed=3)
    record = pretrain_gpse(graphs[:16], graphs[16:], PretrainConfig(**TINY, epochs=8))
    losses = [h["train_loss"] for h in record["history"]]
    assert all(torch.isfinite(torch.tensor(losses))) and losses[-1] < losses[0]


def test_pretrain_gpse_command_writes_a_checkpoint_the_encoding_reads(tmp_path, capsys):
    import json

    from graphpe.cli import main

    config = tmp_path / "tiny.toml"
    config.write_text("\n".join(f"{k} = {v}" for k, v in TINY.items()))
    out = tmp_path / "gpse.pt"
    main(["pretrain-gpse", "--dataset", "tests.encodings.test_gpse:tiny_molecules", "--root",
          str(tmp_path), "--config", str(config), "--epochs", "2", "--out", str(out)])
    summary = json.loads(capsys.readouterr().out)
    assert summary["train_graphs"] == 16 and summary["best_epoch"] in (0, 1)
    saved = torch.load(out, weights_only=True)
    assert len(saved["pretrain"]["history"]) == 2 and saved["pretrain"]["config"]["epochs"] == 2
    assert all(torch.isfinite(torch.tensor(h["val_loss"])) for h in saved["pretrain"]["history"])
    spec = pe_spec("gpse", checkpoint=str(out), dim=16)
    encoded = spec.transform()(Batch.from_data_list(ring_molecules(3, seed=9)))
    assert encoded.gpse.shape == (encoded.num_nodes, 16) and torch.isfinite(encoded.gpse).all()
    # the weights load into PyG's GPSE as well
    from torch_geometric.nn import GPSE as PyGGPSE

    PyGGPSE(dim_in=20, dim_inner=16, layers_mp=2, multi_head_dim_inner=8).load_state_dict(
        load_gpse(out).pyg_state_dict())


def test_the_config_file_is_the_papers_setup_and_bad_configs_refuse(tmp_path):
    from pathlib import Path

    from graphpe.cli import load_config, main
    from graphpe.pretrain import PretrainConfig

    path = Path(__file__).resolve().parents[2] / "configs" / "pretrain" / "gpse.toml"
    config = PretrainConfig(**load_config(str(path)))
    assert config == PretrainConfig()
    assert config.model_config().num_node_targets == 51
    assert config.model_config().num_graph_targets == 11
    bad = tmp_path / "bad.toml"
    bad.write_text("layers = 3\n")
    with pytest.raises(SystemExit):
        main(["pretrain-gpse", "--dataset", "tests.encodings.test_gpse:tiny_molecules",
              "--root", str(tmp_path), "--config", str(bad), "--out", str(tmp_path / "x.pt")])
    with pytest.raises(ValueError, match="walk_length must be >= 2"):
        PretrainConfig(walk_length=1)
