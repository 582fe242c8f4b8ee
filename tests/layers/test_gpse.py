"""graphpe.nn.GPSE against PyG's torch_geometric.nn.GPSE: the same weights (a randomly
initialized PyG model, its BatchNorm statistics drawn too) and the same inputs give the same
encodings, head outputs and loss."""

import pytest
import torch
import torch_geometric.transforms as T
from torch_geometric.data import Batch, Data
from torch_geometric.nn import GPSE as PyGGPSE
from torch_geometric.nn.models.gpse import IdentityHead, cosim_col_sep
from torch_geometric.nn.models.gpse import gpse_loss as pyg_gpse_loss

from graphpe.layers.gpse import GPSEConfig, gpse_loss
from graphpe.nn import GPSE
from graphpe.synthetic import molecule_like_graphs

SMALL = {"dim_in": 6, "dim_inner": 16, "layers_mp": 3, "num_node_targets": 5,
         "num_graph_targets": 3, "multi_head_dim_inner": 8}


def random_pyg_gpse(seed=0, **overrides):
    """A PyG GPSE with random weights and BatchNorm statistics, in eval mode."""
    torch.manual_seed(seed)
    model = PyGGPSE(**{**SMALL, **overrides})
    with torch.no_grad():
        for name, buffer in model.named_buffers():
            if name.endswith("running_mean"):
                buffer.normal_()
            elif name.endswith("running_var"):
                buffer.uniform_(0.5, 2.0)
        for name, param in model.named_parameters():
            if "post_layer" in name:  # BatchNorm's affine weights (1 and 0 at init)
                param.normal_()
    return model.eval()


def pyg_batch(num_graphs=4, dim_in=6, seed=0, node_targets=5, graph_targets=3):
    """Graphs with their virtual node (PyG's VirtualNode: last in each graph), random inputs
    with the virtual node's row 0 (as PyG's gpse_process_batch), dummy targets."""
    generator = torch.Generator().manual_seed(seed)
    graphs = []
    for g in molecule_like_graphs(num_graphs, min_nodes=3, max_nodes=12, seed=seed):
        data = Data(edge_index=g.edge_index, num_nodes=g.num_nodes)
        data = T.VirtualNode()(data)
        data.x = torch.randn(data.num_nodes, dim_in, generator=generator)
        data.x[-1] = 0
        data.y = torch.randn(data.num_nodes, node_targets, generator=generator)
        data.y_graph = torch.randn(1, graph_targets, generator=generator)
        graphs.append(data)
    return Batch.from_data_list(graphs)


@pytest.mark.parametrize("overrides", [{}, {"layers_pre_mp": 2},
                                       {"has_bn": False, "layers_mp": 2}])
def test_encoding_equals_pygs(overrides):
    theirs = random_pyg_gpse(**overrides)
    ours = GPSE.from_pyg_state_dict(theirs.state_dict()).eval()
    assert ours.config.layers_mp == theirs.mp.num_layers
    batch = pyg_batch()
    theirs.post_mp = IdentityHead()  # PyG's encoding: the representation before the head
    with torch.no_grad():
        expected, _ = theirs(batch)
        got = ours(batch.x, batch.edge_index)
    torch.testing.assert_close(got, expected, atol=2e-6, rtol=1e-5)


def test_head_and_loss_equal_pygs():
    theirs = random_pyg_gpse(seed=1)
    ours = GPSE.from_pyg_state_dict(theirs.state_dict()).eval()
    batch = pyg_batch(num_graphs=5, seed=3)
    with torch.no_grad():
        pred, true = theirs(batch)
        h = ours(batch.x, batch.edge_index)
        node, graph = ours.head(h, batch.batch, batch.num_graphs)
    real = torch.ones(batch.num_nodes, dtype=torch.bool)
    real[batch.ptr[1:] - 1] = False  # the virtual nodes
    n = int(real.sum())
    torch.testing.assert_close(node[real], pred[:n, :5], atol=2e-6, rtol=1e-5)
    torch.testing.assert_close(graph, pred[n:, 5:], atol=2e-6, rtol=1e-5)


def test_loss_equals_pygs_on_sorted_rows():
    """PyG's ``gpse_loss`` (as the GPSE code's ``mae_cosim_col_sep``) stacks the node rows and
    then the graph rows, the graph rows under index -1 shifted to 0, and groups them with
    ``to_dense_batch``, which assumes a sorted index: the graph rows land in its overflow slot
    and the node rows of each group shift by G rows into the previous graph's. On the same
    rows in sorted order (graph rows first) it computes what its comments describe, the
    per-graph column cosine that ``gpse_loss`` computes."""
    generator = torch.Generator().manual_seed(0)
    sizes = torch.tensor([4, 7, 1, 5])
    node_graph = torch.repeat_interleave(torch.arange(4), sizes)
    n, g = int(sizes.sum()), 4
    node_pred, node_true = torch.randn(2, n, 5, generator=generator)
    graph_pred, graph_true = torch.randn(2, g, 3, generator=generator)
    node_true[:, 1] = 0  # a target column that is all 0 (left out of the cosine mean)
    node_true[node_graph == 3, 2] = 0  # and one that is 0 in one graph
    got = gpse_loss(node_pred, node_true, graph_pred, graph_true, node_graph, g)
    pad = torch.nn.functional.pad
    pred = torch.cat([pad(graph_pred, (5, 0)), pad(node_pred, (0, 3))])
    true = torch.cat([pad(graph_true, (5, 0)), pad(node_true, (0, 3))])
    expected = (torch.nn.functional.l1_loss(pred, true)
                + cosim_col_sep(pred, true, torch.cat([torch.full((g,), -1), node_graph + 1])))
    torch.testing.assert_close(got, expected)
    # PyG's own order (node rows first) places the rows elsewhere and differs
    unsorted, _ = pyg_gpse_loss(torch.cat([pred[g:], pred[:g]]), torch.cat([true[g:], true[:g]]),
                                torch.cat([node_graph, torch.full((g,), -1)]))
    assert not torch.isclose(unsorted, got)


def test_pyg_names_round_trip_and_pyg_loads_ours():
    ours = GPSE(GPSEConfig(dim_in=6, dim_inner=16, layers_mp=3, num_node_targets=5,
                           num_graph_targets=3, head_hidden=8))
    theirs = PyGGPSE(**SMALL)
    theirs.load_state_dict(ours.pyg_state_dict())  # strict: every name maps
    back = GPSE.from_pyg_state_dict(theirs.state_dict())
    assert back.config == ours.config
    for (name, a), b in zip(ours.state_dict().items(), back.state_dict().values(), strict=True):
        assert torch.equal(a, b), name


def test_reads_a_gpse_repository_checkpoint_and_a_headless_state():
    theirs = random_pyg_gpse(seed=2)
    wrapped = {"model_state": {f"model.{k}": v for k, v in theirs.state_dict().items()}}
    ours = GPSE.from_pyg_state_dict(wrapped)
    assert ours.config.num_node_targets == 5 and ours.config.num_graph_targets == 3
    headless = {k: v for k, v in theirs.state_dict().items() if not k.startswith("post_mp")}
    bare = GPSE.from_pyg_state_dict(headless)
    assert bare.head is None and bare.config.dim_inner == 16


def test_bad_inputs():
    with pytest.raises(ValueError, match="not a PyG GPSE state_dict"):
        GPSE.from_pyg_state_dict({"lin.weight": torch.zeros(2, 2)})
    with pytest.raises(ValueError, match=r"GPSE expects x \[N, 6\]"):
        GPSE(dim_in=6, dim_inner=8, layers_mp=1)(torch.zeros(3, 5), torch.zeros(2, 0).long())
    with pytest.raises(ValueError, match="dim_inner must be a positive int"):
        GPSEConfig(dim_inner=0)
