import importlib
import warnings

import pytest
import torch
from torch_geometric.data import Batch, Data, InMemoryDataset
from torch_geometric.transforms import Constant

from graphpe.encodings.transform import PETransform
from graphpe.transforms import RWSE, LaplacianPE, precompute


class TinyDataset(InMemoryDataset):
    def __init__(self, graphs):
        super().__init__(root=None)
        self.data, self.slices = self.collate(graphs)


def with_x(graphs):
    return [Data(x=torch.ones(g.num_nodes, 1), edge_index=g.edge_index, num_nodes=g.num_nodes)
            for g in graphs]


def test_list_equals_per_graph(families):
    graphs = list(families.values())
    out = precompute(graphs, [LaplacianPE(4), RWSE(5)], batch_size=5, progress=False)
    assert len(out) == len(graphs)
    for g, o in zip(graphs, out, strict=True):
        ref = RWSE(5)(LaplacianPE(4)(g))
        assert torch.allclose(o.rwse, ref.rwse)
        assert torch.allclose(o.lap_eigvals, ref.lap_eigvals, atol=1e-6)
        assert torch.equal(o.lap_mask, ref.lap_mask)
        assert "rwse" not in g


def test_in_memory_dataset_fast_path(families):
    graphs = with_x([g for g in families.values() if g.num_nodes > 0])
    ds = TinyDataset(graphs)
    out = precompute(ds, RWSE(6), batch_size=4, progress=False)
    assert isinstance(out, TinyDataset) and len(out) == len(ds)
    assert "rwse" not in ds[0]
    for i, g in enumerate(graphs):
        assert torch.allclose(out[i].rwse, RWSE(6)(g).rwse)
    batch = Batch.from_data_list([out[i] for i in range(3)])
    assert batch.rwse.shape == (sum(g.num_nodes for g in graphs[:3]), 6)


def _graphs_with_attributes(families):
    """Graphs with node, edge and graph attributes of several kinds and a per-graph list."""
    graphs = []
    for i, g in enumerate(g for g in families.values() if g.num_nodes > 0):
        e = g.edge_index.size(1)
        graphs.append(Data(x=torch.arange(g.num_nodes * 2.0).view(-1, 2) + i,
                           edge_index=g.edge_index, edge_attr=torch.full((e, 3), float(i)),
                           y=torch.tensor([i]), name=f"g{i}", num_nodes=g.num_nodes))
    return graphs


def _same_graph(a, b, keys):
    for key in keys:
        if isinstance(b[key], torch.Tensor):
            assert torch.equal(a[key], b[key]), key
        else:
            assert a[key] == b[key], key


@pytest.mark.parametrize("view", ["slice", "index", "tensor", "subset", "nested", "repeated"])
def test_dataset_views_take_the_storage_path(families, view, monkeypatch):
    """dataset[a:b], dataset[idx], Subset (and a Subset of a view) read the storage: no
    per-graph Data is built, and the result holds just those graphs, in order, with every
    attribute and the encoding the graph alone gets."""
    from torch.utils.data import Subset

    module = importlib.import_module("graphpe.transforms.precompute")  # (the package
    # exports the function under the module's name)

    graphs = _graphs_with_attributes(families)
    ds = TinyDataset(graphs)
    n = len(ds)
    picks = {"slice": list(range(2, n - 1)), "index": [n - 1, 0, 3, 2],
             "tensor": [1, 4, 2], "subset": [5, 0, 1], "nested": [3, 1, 2, 0],
             "repeated": [2, 2, 0]}[view]
    if view == "slice":
        sub = ds[2:n - 1]
    elif view == "index":
        sub = ds[picks]
    elif view == "tensor":
        sub = ds[torch.tensor(picks)]
    elif view == "subset":
        sub = Subset(ds, picks)
    elif view == "nested":  # a Subset of a view: graph ds[perm[p]] for each p
        perm = [n - 1 - i for i in range(n)]
        sub = Subset(ds[perm], picks)
        picks = [perm[p] for p in picks]
    else:
        sub = Subset(ds, picks)
    monkeypatch.setattr(module, "structure_of_list", None)  # the per-graph path would fail
    out = precompute(sub, [RWSE(5), LaplacianPE(3)], batch_size=3, progress=False)
    assert isinstance(out, TinyDataset) and len(out) == len(picks)
    assert "rwse" not in ds[0]
    for i, p in enumerate(picks):
        ref = LaplacianPE(3)(RWSE(5)(graphs[p]))
        assert set(out[i].keys()) == set(ref.keys()) and "rwse" in ref
        _same_graph(out[i], ref, ref.keys())


def test_view_with_a_transform_is_read_graph_by_graph(families):
    graphs = _graphs_with_attributes(families)
    ds = TinyDataset(graphs)
    ds.transform = Constant(2.0)
    out = precompute(ds[1:4], RWSE(4), progress=False)
    assert isinstance(out, list) and len(out) == 3
    for o, g in zip(out, graphs[1:4], strict=True):
        assert torch.equal(o.rwse, RWSE(4)(g).rwse) and torch.all(o.x[:, -1] == 2.0)


def test_other_transforms_applied_after(families):
    graphs = list(families.values())[:4]
    out = precompute(graphs, [RWSE(3), Constant(2.0)], progress=False)
    assert all(torch.all(o.x == 2.0) for o in out)
    with pytest.raises(ValueError, match="must come before other transforms"):
        precompute(graphs, [Constant(), RWSE(3)], progress=False)
    with pytest.raises(ValueError, match="cache_dir caches graphpe transforms only"):
        precompute(graphs, [RWSE(3), Constant()], cache_dir="unused", progress=False)


class CountingRWSE(RWSE):
    calls = 0

    def compute(self, *args, **kwargs):
        CountingRWSE.calls += 1
        return super().compute(*args, **kwargs)


def test_cache_hit_of_unseeded_random_draws_warns(families, tmp_path):
    """seed=None promises fresh draws; a cache hit reuses the first run's, and says so. A
    seeded random transform (reproducible anyway) and a deterministic one hit silently."""
    from graphpe.transforms import RFP

    graphs = list(families.values())
    first = precompute(graphs, RFP(4, 2, seed=None), cache_dir=tmp_path, progress=False)
    with pytest.warns(UserWarning, match=r"RFP with seed=None reuse the random draws cached"):
        again = precompute(graphs, RFP(4, 2, seed=None), cache_dir=tmp_path, progress=False)
    assert all(torch.equal(x.rfp, y.rfp) for x, y in zip(first, again, strict=True))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for transforms in ([RFP(4, 2, seed=1)], [RWSE(3)]):
            precompute(graphs, transforms, cache_dir=tmp_path, progress=False)
            precompute(graphs, transforms, cache_dir=tmp_path, progress=False)


def test_cache_hit_miss_and_damage(families, tmp_path):
    graphs = list(families.values())
    CountingRWSE.calls = 0
    a = precompute(graphs, CountingRWSE(4), cache_dir=tmp_path, progress=False)
    assert CountingRWSE.calls == 1
    files = list(tmp_path.iterdir())
    assert len(files) == 1 and files[0].suffix == ".pt"
    b = precompute(graphs, CountingRWSE(4), cache_dir=tmp_path, progress=False)
    assert CountingRWSE.calls == 1  # served from the cache
    assert all(torch.equal(x.rwse, y.rwse) for x, y in zip(a, b, strict=True))

    precompute(graphs, CountingRWSE(5), cache_dir=tmp_path, progress=False)  # new setting
    assert CountingRWSE.calls == 2 and len(list(tmp_path.iterdir())) == 2
    precompute(graphs[:-1], CountingRWSE(4), cache_dir=tmp_path, progress=False)  # new data
    assert CountingRWSE.calls == 3 and len(list(tmp_path.iterdir())) == 3

    raw = bytearray(files[0].read_bytes())
    raw[-10] ^= 0xFF
    files[0].write_bytes(bytes(raw))
    with pytest.warns(UserWarning, match="checksum mismatch"):
        c = precompute(graphs, CountingRWSE(4), cache_dir=tmp_path, progress=False)
    assert CountingRWSE.calls == 4
    assert all(torch.equal(x.rwse, y.rwse) for x, y in zip(a, c, strict=True))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the rewritten file is whole again
        precompute(graphs, CountingRWSE(4), cache_dir=tmp_path, progress=False)
    assert CountingRWSE.calls == 4
    files[0].write_bytes(b"garbage")
    with pytest.warns(UserWarning, match="bad header"):
        precompute(graphs, CountingRWSE(4), cache_dir=tmp_path, progress=False)
    assert not list(tmp_path.glob("*.tmp"))


def test_random_sign_precompute_is_reproducible(families):
    graphs = list(families.values())
    t = LaplacianPE(4, sign="random", seed=11)
    a = precompute(graphs, t, progress=False)
    b = precompute(graphs, t, progress=False)
    assert all(torch.equal(x.lap_pe, y.lap_pe) for x, y in zip(a, b, strict=True))


def test_bad_arguments(families):
    with pytest.raises(ValueError, match="batch_size must be a positive int, got 0"):
        precompute(list(families.values()), RWSE(2), batch_size=0)
    with pytest.raises(ValueError, match="batch_size must be a positive int, got 2.5"):
        precompute(list(families.values()), RWSE(2), batch_size=2.5)
    with pytest.raises(ValueError, match="graph 0 is a int, not a torch_geometric Data"):
        precompute([3], RWSE(2))
    bad = Data(edge_index=torch.tensor([[0, 1], [1, 0]], dtype=torch.uint8), num_nodes=2)
    with pytest.raises(ValueError, match=r"graph 1: edge_index must have an integer dtype "
                                         r"\(torch.int64 or torch.int32\), got torch.uint8"):
        precompute([families["edge"], bad], RWSE(2))
    with pytest.raises(ValueError, match="graph 0 has no nodes"):
        precompute([Data()], RWSE(2))
    with pytest.raises(ValueError, match="not a transform"):
        precompute(list(families.values()), [3])
    assert issubclass(RWSE, PETransform)


def test_sharded_precompute_equals_one_worker_bit_for_bit(tmp_path):
    """num_workers=2 (threads over contiguous shards) gives one worker's outputs and the same
    cache file; random transforms keep their sequential draws."""
    import torch

    from graphpe.synthetic import molecule_like_graphs
    from graphpe.transforms import LCP, RFP, RWSE, LaplacianPE, precompute

    graphs = molecule_like_graphs(301, seed=3)
    deterministic = [LaplacianPE(4), RWSE(5), LCP()]
    one = precompute(graphs, deterministic, batch_size=64, progress=False,
                     cache_dir=tmp_path / "one")
    two = precompute(graphs, deterministic, batch_size=64, progress=False, num_workers=2,
                     cache_dir=tmp_path / "two")
    for a, b in zip(one, two, strict=True):
        for name in ("lap_pe", "lap_eigvals", "lap_mask", "rwse", "lcp"):
            assert torch.equal(a[name], b[name]), name
    (cache_one,), (cache_two,) = (tmp_path / "one").glob("*.pt"), (tmp_path / "two").glob("*.pt")
    assert cache_one.name == cache_two.name and cache_one.read_bytes() == cache_two.read_bytes()
    rand = [precompute(graphs[:40], RFP(4, 2, seed=1), batch_size=16, progress=False,
                       num_workers=w) for w in (1, 2)]
    assert all(torch.equal(a.rfp, b.rfp) for a, b in zip(*rand, strict=True))
    with pytest.raises(ValueError, match="num_workers must be a positive int, got 0"):
        precompute(graphs, RWSE(3), num_workers=0, progress=False)


def test_several_encodings_appended_to_x(families):
    """Transforms with attr_name=None each append their columns to x, in order, as applying
    them one after another does (lists and the InMemoryDataset path, equal and unequal
    widths, a named encoding in between)."""
    from graphpe.transforms import LCP

    graphs = with_x([g for g in families.values() if g.num_nodes > 0])
    for transforms in ([LCP(attr_name=None), RWSE(16, attr_name=None)],
                       [RWSE(5, attr_name=None), LaplacianPE(3), LCP(attr_name=None)]):
        for data in (graphs, TinyDataset(graphs)):
            out = precompute(data, transforms, batch_size=4, progress=False)
            for i, g in enumerate(graphs):
                ref = g.clone()
                for t in transforms:
                    ref = t(ref)
                assert out[i].x.shape == ref.x.shape
                assert torch.allclose(out[i].x, ref.x, atol=1e-6)
