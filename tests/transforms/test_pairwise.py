import networkx as nx
import pytest
import torch
from torch_geometric.data import Batch
from torch_geometric.loader import DataLoader

from graphpe.synthetic import molecule_like_graphs
from graphpe.transforms import RRWP, SPD, OnTheFlyPE, ResistanceDistance, precompute
from tests.conftest import nx_to_data


def test_pre_transformed_pairs_collate_like_edges_and_equal_the_batch_call():
    """As a pre_transform, each graph's pairs carry local ids; PyG's DataLoader offsets them
    like edge_index, which gives exactly what one call on the Batch writes."""
    graphs = molecule_like_graphs(7, min_nodes=3, max_nodes=11, seed=2)
    transforms = [RRWP(5), SPD(4, path_hops=3), ResistanceDistance()]
    encoded = [g.clone() for g in graphs]
    for t in transforms:
        encoded = [t(g) for g in encoded]
    loaded = next(iter(DataLoader(encoded, batch_size=7)))
    batch = Batch.from_data_list([g.clone() for g in graphs])
    fly = OnTheFlyPE(transforms)(batch)
    for name in ("rrwp", "spd", "rd"):
        assert torch.equal(loaded[f"{name}_index"], fly[f"{name}_index"]), name
        torch.testing.assert_close(loaded[name], fly[name], atol=1e-6, rtol=0)
    # path edges are graph-local ids: not offset by the collation, equal all the same
    assert torch.equal(loaded.spd_path, fly.spd_path) and loaded.spd_path.shape[1] == 3
    assert loaded.rrwp.shape == (sum(g.num_nodes ** 2 for g in graphs), 5)
    assert loaded.spd.dtype == torch.long and int(loaded.spd.max()) <= 5


def test_settings_and_errors():
    assert repr(RRWP(21)) == "RRWP(num_steps=21, attr_name='rrwp')"
    assert repr(SPD()) == "SPD(max_dist=8, attr_name='spd')"
    with pytest.raises(ValueError, match="num_steps must be a positive int, got 0"):
        RRWP(0)
    with pytest.raises(ValueError, match="max_dist must be a positive int, got 1.5"):
        SPD(1.5)
    assert repr(SPD(path_hops=5)) == "SPD(max_dist=8, attr_name='spd', path_hops=5)"
    assert SPD(path_hops=5).pair_attributes() == {"spd", "spd_index", "spd_path"}
    with pytest.raises(ValueError, match="path_hops must be a non-negative int, got -1"):
        SPD(path_hops=-1)


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("local", [False, True])
def test_precompute_stores_pairs_per_graph_like_edges(tmp_path, workers, local):
    """precompute on a list and on an InMemoryDataset, chunked and threaded: each graph gets
    its own pairs with local ids (what the transform gives it alone), and the DataLoader's
    batches equal one call on the Batch; a second run reads the cache. ``local``: pairs
    within 2 hops, whose number per graph depends on its edges."""
    from torch_geometric.data import InMemoryDataset

    class Graphs(InMemoryDataset):
        def __init__(self, graphs):
            super().__init__()
            self.data, self.slices = self.collate(graphs)

    graphs = molecule_like_graphs(23, min_nodes=3, max_nodes=12, seed=4)
    def make():
        return ([RRWP(4, hops=2), SPD(3, local=True, path_hops=2)] if local
                else [RRWP(4), SPD(3, path_hops=2)])

    transforms = make()
    for dataset in (graphs, Graphs([g.clone() for g in graphs])):
        for _ in range(2):  # computed, then from the cache
            out = precompute(dataset, transforms, batch_size=5, num_workers=workers,
                             cache_dir=tmp_path / type(dataset).__name__, progress=False)
            for i, g in enumerate(graphs):
                rrwp, spd = make()
                alone = spd(rrwp(g.clone()))
                for name in ("rrwp_index", "rrwp", "spd_index", "spd", "spd_path"):
                    assert torch.equal(out[i][name], alone[name].to(out[i][name].dtype)) or \
                        torch.allclose(out[i][name], alone[name], atol=1e-6), (name, i)
            loaded = next(iter(DataLoader(out, batch_size=23)))
            fly = OnTheFlyPE(transforms)(Batch.from_data_list([g.clone() for g in graphs]))
            assert torch.equal(loaded.spd_index, fly.spd_index)
            assert torch.equal(loaded.spd, fly.spd)
            assert torch.equal(loaded.spd_path, fly.spd_path)


def test_local_pairs_collate_like_edges_and_equal_the_batch_call():
    """RRWP(hops=) and SPD(local=True) on single graphs, collated by the DataLoader, equal the
    transform on the whole Batch (pair indices offset like edge_index)."""
    graphs = [nx_to_data(nx.path_graph(6)), nx_to_data(nx.cycle_graph(5)),
              nx_to_data(nx.star_graph(4))]
    for transform in (RRWP(4, hops=2), SPD(3, local=True, path_hops=2)):
        one_by_one = Batch.from_data_list([transform(g) for g in graphs])
        whole = transform(Batch.from_data_list(graphs))
        name = transform.attr_name
        assert torch.equal(one_by_one[f"{name}_index"], whole[f"{name}_index"])
        assert torch.equal(one_by_one[name], whole[name])
        if isinstance(transform, SPD):
            assert torch.equal(one_by_one.spd_path, whole.spd_path)
    assert "hops=2" in repr(RRWP(4, hops=2)) and "hops" not in repr(RRWP(4))
    assert "local=True" in repr(SPD(3, local=True))
