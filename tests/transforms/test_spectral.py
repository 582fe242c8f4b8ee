"""HKdiagSE, ElstaticSE and HeatKernel as transforms: Data, Batch, DataLoader, precompute and
OnTheFlyPE give the same encodings; settings and errors."""

from __future__ import annotations

import pytest
import torch
from torch_geometric.data import Batch, InMemoryDataset
from torch_geometric.loader import DataLoader

from graphpe.ops.spectral import electrostatic_encoding, heat_kernel_diagonals
from graphpe.ops.walk import heat_kernels
from graphpe.synthetic import molecule_like_graphs
from graphpe.transforms import ElstaticSE, HeatKernel, HKdiagSE, OnTheFlyPE, precompute


class Graphs(InMemoryDataset):
    def __init__(self, graphs):
        super().__init__()
        self.data, self.slices = self.collate(graphs)


def mixed_graphs():
    """Molecule-like graphs plus a disconnected one and one with an isolated node."""
    graphs = molecule_like_graphs(17, min_nodes=3, max_nodes=12, seed=5)
    two = graphs[0].clone()
    two.edge_index = torch.cat([two.edge_index, graphs[1].edge_index + two.num_nodes], 1)
    two.num_nodes = graphs[0].num_nodes + graphs[1].num_nodes
    two.x = torch.cat([graphs[0].x, graphs[1].x])
    lonely = graphs[2].clone()
    lonely.num_nodes = graphs[2].num_nodes + 1
    lonely.x = torch.cat([graphs[2].x, graphs[2].x[:1]])
    return [*graphs, two, lonely]


def transforms():
    return [HKdiagSE([0.5, 1, 3]), ElstaticSE(), ElstaticSE("elstatic_cc", per_component=True),
            HeatKernel([1, 4])]


def test_data_batch_loader_and_on_the_fly_agree():
    graphs = mixed_graphs()
    ts = transforms()
    encoded = [g.clone() for g in graphs]
    for t in ts:
        encoded = [t(g) for g in encoded]
    loaded = next(iter(DataLoader(encoded, batch_size=len(graphs))))
    batch = Batch.from_data_list([g.clone() for g in graphs])
    fly = OnTheFlyPE(ts)(batch)
    direct = batch.clone()
    for t in ts:
        direct = t(direct)
    for name in ("hkdiag", "elstatic", "elstatic_cc", "heat", "heat_index"):
        assert torch.allclose(loaded[name].double(), fly[name].double(), atol=1e-6), name
        assert torch.equal(fly[name], direct[name]), name
    assert loaded.hkdiag.shape == (batch.num_nodes, 3) and loaded.hkdiag.dtype == torch.float32
    assert loaded.elstatic.shape == (batch.num_nodes, 10)
    assert loaded.heat.shape == (sum(g.num_nodes ** 2 for g in graphs), 2)
    # the transforms write what the kernels compute
    torch.testing.assert_close(fly.hkdiag, heat_kernel_diagonals(
        batch.edge_index, batch.num_nodes, [0.5, 1, 3], ptr=batch.ptr))
    torch.testing.assert_close(fly.elstatic_cc, electrostatic_encoding(
        batch.edge_index, batch.num_nodes, ptr=batch.ptr, per_component=True))
    torch.testing.assert_close(fly.heat, heat_kernels(
        batch.edge_index, batch.num_nodes, [1, 4], ptr=batch.ptr).values)
    # the two components differ from one component alone only where GraphGPS's statistics
    # cross components (per_component=False)
    k = len(graphs) - 2
    lo = int(batch.ptr[k])
    n0 = graphs[0].num_nodes
    alone = ElstaticSE()(graphs[0].clone()).elstatic
    torch.testing.assert_close(fly.elstatic_cc[lo:lo + n0], alone)
    assert not torch.allclose(fly.elstatic[lo:lo + n0], alone)


@pytest.mark.parametrize("workers", [1, 2])
def test_precompute_equals_the_transform(tmp_path, workers):
    graphs = mixed_graphs()
    ts = transforms()
    for dataset in (graphs, Graphs([g.clone() for g in graphs])):
        for _ in range(2):  # computed, then read from the cache
            out = precompute(dataset, ts, batch_size=4, num_workers=workers,
                             cache_dir=tmp_path / type(dataset).__name__, progress=False)
            for i, g in enumerate(graphs):
                alone = g.clone()
                for t in ts:
                    alone = t(alone)
                for name in ("hkdiag", "elstatic", "elstatic_cc", "heat", "heat_index"):
                    assert torch.allclose(out[i][name].double(), alone[name].double(),
                                          atol=1e-6), (name, i)
    # another time is another cache entry
    other = precompute(graphs, [HKdiagSE([0.5, 1, 2])], cache_dir=tmp_path / "list",
                       progress=False)
    assert not torch.allclose(other[3].hkdiag, out[3].hkdiag)


def test_settings_repr_and_errors():
    assert repr(HKdiagSE([1, 2])) == ("HKdiagSE(times=(1.0, 2.0), attr_name='hkdiag', "
                                      "normalization='none', keep_trivial=False)")
    assert repr(ElstaticSE()) == "ElstaticSE(attr_name='elstatic', per_component=False)"
    assert repr(HeatKernel(2, keep_trivial=True)) == (
        "HeatKernel(times=(2.0,), attr_name='heat', normalization='none', keep_trivial=True)")
    assert HKdiagSE().times == tuple(float(t) for t in range(1, 17))
    assert HeatKernel().times == (1.0, 2.0, 4.0, 8.0, 16.0)
    for cls in (HKdiagSE, HeatKernel):
        with pytest.raises(ValueError, match="^times must not be empty: give at least one "
                                             "diffusion time$"):
            cls([])
        with pytest.raises(ValueError, match="^times must be finite and non-negative, "
                                             "got -1$"):
            cls([2, -1])
        with pytest.raises(ValueError, match=r"^times must be numbers, got 'x' in \['x'\]$"):
            cls(["x"])
        with pytest.raises(ValueError, match="^times must be a sequence of non-negative "
                                             "numbers, got '1/2'$"):
            cls("1/2")
        with pytest.raises(ValueError, match=r"^normalization must be one of \('none', "
                                             r"'sym'\), got 'rw'$"):
            cls([1], normalization="rw")
        with pytest.raises(ValueError, match="^keep_trivial must be True or False, got 0$"):
            cls([1], keep_trivial=0)
    with pytest.raises(ValueError, match="^per_component must be True or False, got 'yes'$"):
        ElstaticSE(per_component="yes")
