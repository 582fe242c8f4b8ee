import pytest
import torch
from torch_geometric.data import Batch, Data

from graphpe.transforms import RFP, LaplacianPE, precompute


def test_shape_and_determinism(families):
    data = families["er23"]
    out = RFP(dim=4, steps=3, num_draws=2, seed=0)(data)
    assert out.rfp.shape == (23, 2, 16)
    again = RFP(dim=4, steps=3, num_draws=2, seed=0)(data)
    assert torch.equal(out.rfp, again.rfp)
    t = RFP(dim=4, steps=3, seed=0)
    first, second = t(data).rfp, t(data).rfp
    assert not torch.equal(first, second)  # successive calls draw new features


def test_works_on_batch_and_small_graphs(families):
    batch = Batch.from_data_list(list(families.values()))
    out = RFP(dim=16, steps=4, seed=1)(batch)  # many graphs have fewer than 16 nodes
    assert out.rfp.shape == (batch.num_nodes, 4, 80)
    assert torch.isfinite(out.rfp).all()


def test_precompute_reproducible(families):
    graphs = list(families.values())
    t = RFP(dim=4, steps=2, seed=3, normalization="l2")
    a = precompute(graphs, t, progress=False)
    b = precompute(graphs, t, progress=False)
    assert all(torch.equal(x.rfp, y.rfp) for x, y in zip(a, b, strict=True))


def test_bad_arguments_and_repr():
    with pytest.raises(ValueError, match="dim must be an int >= 1"):
        RFP(dim=0)
    with pytest.raises(ValueError, match="steps must be an int >= 0"):
        RFP(steps=-1)
    with pytest.raises(ValueError, match="operator must be one of"):
        RFP(operator="laplacian")
    with pytest.raises(ValueError, match="normalization must be one of"):
        RFP(normalization="row")
    assert repr(RFP()) == ("RFP(dim=16, steps=8, num_draws=4, operator='gcn', "
                           "normalization='qr', seed=0, attr_name='rfp')")


def test_negative_num_nodes_is_a_value_error_naming_it():
    """As every other transform (and before any draw): not torch's RuntimeError of a negative
    dimension."""
    from graphpe.ops import random_feature_propagation

    ei = torch.tensor([[0, 1], [1, 0]])
    with pytest.raises(ValueError, match=r"^num_nodes must be non-negative, got -3$"):
        RFP(dim=2, steps=1, seed=0)(Data(edge_index=ei, num_nodes=-3))
    with pytest.raises(ValueError, match=r"^num_nodes must be non-negative, got -3$"):
        random_feature_propagation(ei, -3, torch.randn(0, 1, 2), 1)


class _PathDataset(torch.utils.data.Dataset):
    """Eight copies of one path graph through ``transform`` (as a dataset's ``transform``)."""

    def __init__(self, transform):
        self.transform = transform
        self.path = Data(edge_index=torch.tensor([[0, 1, 1, 2, 2, 3], [1, 0, 2, 1, 3, 2]]),
                         num_nodes=4)

    def __len__(self):
        return 8

    def __getitem__(self, i):
        return self.transform(self.path.clone())


@pytest.mark.parametrize("seed", [None, 7])
def test_dataloader_workers_draw_their_own_streams(seed):
    """A random transform in DataLoader workers: each worker process holds a copy of the
    transform, and copies of one generator would give the graphs loaded side by side the same
    random features. Every graph gets its own draw, and the run is reproducible under
    ``torch.manual_seed``."""
    from torch_geometric.loader import DataLoader

    def draws(transform, key):
        torch.manual_seed(0)
        loader = DataLoader(_PathDataset(transform), batch_size=1, num_workers=2)
        return [b[key] for b in loader]

    rfp = RFP(2, 1, seed=seed)
    first, again = draws(rfp, "rfp"), draws(rfp, "rfp")
    assert len({tuple(x.flatten().tolist()) for x in first}) == 8
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
    signs = draws(LaplacianPE(2, sign="random", seed=seed), "lap_pe")
    assert len({tuple(x.flatten().tolist()) for x in signs}) > 1
    # the main process's stream is untouched by the workers' derivation
    assert rfp._stream == (None, None)
