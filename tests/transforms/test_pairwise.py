import pytest
import torch
from torch_geometric.data import Batch, Data
from torch_geometric.loader import DataLoader

from graphpe.synthetic import molecule_like_graphs
from graphpe.transforms import RRWP, SPD, OnTheFlyPE, ResistanceDistance, precompute


def test_pre_transformed_pairs_collate_like_edges_and_equal_the_batch_call():
    """As a pre_transform, each graph's pairs carry local ids; PyG's DataLoader offsets them
    like edge_index, which gives exactly what one call on the Batch writes."""
    graphs = molecule_like_graphs(7, min_nodes=3, max_nodes=11, seed=2)
    transforms = [RRWP(5), SPD(4), ResistanceDistance()]
    encoded = [g.clone() for g in graphs]
    for t in transforms:
        encoded = [t(g) for g in encoded]
    loaded = next(iter(DataLoader(encoded, batch_size=7)))
    batch = Batch.from_data_list([g.clone() for g in graphs])
    fly = OnTheFlyPE(transforms)(batch)
    for name in ("rrwp", "spd", "rd"):
        assert torch.equal(loaded[f"{name}_index"], fly[f"{name}_index"]), name
        torch.testing.assert_close(loaded[name], fly[name], atol=1e-6, rtol=0)
    assert loaded.rrwp.shape == (sum(g.num_nodes ** 2 for g in graphs), 5)
    assert loaded.spd.dtype == torch.long and int(loaded.spd.max()) <= 5


def test_settings_errors_and_precompute_refusal():
    assert repr(RRWP(21)) == "RRWP(num_steps=21, attr_name='rrwp')"
    assert repr(SPD()) == "SPD(max_dist=8, attr_name='spd')"
    with pytest.raises(ValueError, match="num_steps must be a positive int, got 0"):
        RRWP(0)
    with pytest.raises(ValueError, match="max_dist must be a positive int, got 1.5"):
        SPD(1.5)
    data = Data(edge_index=torch.tensor([[0, 1], [1, 0]]), num_nodes=2)
    with pytest.raises(ValueError, match=r"precompute does not handle pairwise encodings yet "
                                         r"\(\['RRWP'\]\)"):
        precompute([data], RRWP(3), progress=False)
