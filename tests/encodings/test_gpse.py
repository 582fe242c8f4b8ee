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
from tests.nn.test_gpse import random_pyg_gpse


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
