import copy

import numpy as np
import pytest
import torch
from torch import nn
from torch_geometric.data import Batch, Data
from torch_geometric.nn import GINEConv, GPSConv
from torch_geometric.transforms import Compose

from graphpe.encodings import resolve_pe, transforms_of
from graphpe.nn import (
    GINE,
    GPS,
    GatedGCNLayer,
    GINLayer,
    GPSLayer,
    GPSOutput,
    LinearAttention,
    MultiheadGraphAttention,
    RWSEEncoder,
    build_model,
)
from graphpe.nn.transformers import gps_branches
from graphpe.synthetic import molecule_like_graphs

ALL_PE = {"lap": {"k": 6}, "signnet": {"k": 6}, "spe": {"k": 6}, "rwse": {"walk_length": 8},
          "lcp": {}, "rfp": {"dim": 4, "steps": 2}}


def make_batch(num_graphs=5, seed=0, transforms=None):
    graphs = molecule_like_graphs(num_graphs, min_nodes=6, max_nodes=14, seed=seed)
    gen = torch.Generator().manual_seed(seed)
    for g in graphs:
        g.x = torch.randint(0, 5, (g.num_nodes, 1), generator=gen)
        g.edge_attr = torch.randint(0, 3, (g.edge_index.size(1),), generator=gen)
        g.edge_attr = torch.maximum(g.edge_attr, g.edge_attr[_reverse(g.edge_index)])
    t = transforms or Compose(transforms_of(resolve_pe(ALL_PE)))
    return Batch.from_data_list([t(g) for g in graphs])


def _reverse(edge_index):
    """Position of each edge's reverse (the graphs store both directions)."""
    n = int(edge_index.max()) + 1
    keys = edge_index[0] * n + edge_index[1]
    rev = edge_index[1] * n + edge_index[0]
    order = torch.argsort(keys)
    return order[torch.searchsorted(keys[order], rev)]


def permute_batch(batch, perm_per_graph):
    """Permute the nodes inside each graph; node attributes move with their nodes."""
    graphs = []
    for g, perm in zip(batch.to_data_list(), perm_per_graph, strict=True):
        inv = torch.argsort(perm)  # old node i -> new position inv[i]
        new = Data(edge_index=inv[g.edge_index], edge_attr=g.edge_attr, num_nodes=g.num_nodes)
        for key in ("x", "rwse", "lcp", "rfp", *(f"{pe}_{part}" for pe in ("lap", "sn", "spe")
                                                  for part in ("pe", "eigvals", "mask"))):
            new[key] = g[key][perm]
        graphs.append(new)
    return Batch.from_data_list(graphs)


@pytest.mark.parametrize("kind", ["gine", "gps", "gatedgcn", "gps+gatedgcn", "gps+performer"])
def test_permutation_invariance_and_equivariance(kind):
    batch = make_batch()
    rng = np.random.default_rng(0)
    perms = [torch.from_numpy(rng.permutation(int(n))) for n in batch.ptr.diff()]
    permuted = permute_batch(batch, perms)
    # deterministic PEs whose values move with the nodes: RWSE, LCP, SPE (basis invariant),
    # SignNet, and the fixed RFP draws permuted along with the nodes
    pe = {k: v for k, v in ALL_PE.items() if k != "lap"}
    kind, extra = _kind(kind)
    torch.manual_seed(0)
    graph_model = build_model({"model": kind, "channels": 16, "layers": 2, "out_dim": 3,
                               "node_vocab": 5, "edge_vocab": 3, "pe": pe, **extra}).eval()
    with torch.no_grad():
        assert torch.allclose(graph_model(permuted), graph_model(batch), atol=1e-4)
    torch.manual_seed(0)
    node_model = build_model({"model": kind, "channels": 16, "layers": 2, "out_dim": 3,
                              "task": "node_classification", "node_vocab": 5, "edge_vocab": 3,
                              "pe": pe, **extra}).eval()
    with torch.no_grad():
        out, out_perm = node_model(batch), node_model(permuted)
    offset = 0
    for perm in perms:
        n = perm.numel()
        assert torch.allclose(out_perm[offset : offset + n], out[offset : offset + n][perm],
                              atol=1e-4)
        offset += n


def _kind(kind):
    """``gps+gatedgcn``: model ``gps`` with ``mpnn='gatedgcn'``; ``gps+performer`` with
    ``attention='performer'``."""
    if kind == "gps+gatedgcn":
        return "gps", {"mpnn": "gatedgcn"}
    if kind == "gps+performer":
        return "gps", {"attention": "performer"}
    return kind, {}


@pytest.mark.parametrize("kind", ["gine", "gps", "gatedgcn", "gps+gatedgcn", "gps+performer"])
@pytest.mark.parametrize("combine", ["sum", "concat", "split"])
def test_every_parameter_gets_a_gradient(kind, combine):
    batch = make_batch()
    kind, extra = _kind(kind)
    channels = 64 if combine == "split" else 16
    if combine == "split":  # six encoders of 8 channels, the node embedding the other 16
        extra = {**extra, "pe_channels": 8}
    model = build_model({"model": kind, "channels": channels, "layers": 2, "out_dim": 1,
                         "node_vocab": 5, "edge_vocab": 3, "pe": ALL_PE,
                         "pe_combine": combine, "reinject_pe": True, **extra})
    if combine == "split":
        assert model.node_input.layer.embedding_dim == 64 - 6 * 8
    model.train()
    model(batch).pow(2).sum().backward()
    missing = [n for n, p in model.named_parameters() if p.grad is None or not p.grad.any()]
    assert not missing


def test_gps_layer_reproduces_pyg_gpsconv():
    torch.manual_seed(0)
    channels, heads = 16, 4
    batch = make_batch()
    x = torch.randn(batch.num_nodes, channels)
    edge_attr = torch.randn(batch.edge_index.size(1), channels)
    inner = nn.Sequential(nn.Linear(channels, channels), nn.ReLU(), nn.Linear(channels, channels))
    ref = GPSConv(channels, GINEConv(inner), heads=heads, norm="batch_norm")
    # the same construction as GPSConv's: the layer takes its modules
    ours = GPSLayer(channels, GINLayer(copy.deepcopy(inner)),
                    MultiheadGraphAttention(channels, heads), norm="batch_norm")
    ours.load_state_dict(ref.state_dict())
    for mode in ("train", "eval"):
        getattr(ref, mode)()
        getattr(ours, mode)()
        expected = ref(x, batch.edge_index, batch.batch, edge_attr=edge_attr)
        got = ours(x, batch.edge_index, batch.batch, edge_attr)
        assert isinstance(got, GPSOutput) and got.edge_attr is None and got.pair_attr is None
        assert torch.allclose(got.x, expected, atol=1e-6), mode


def test_linear_attention_stays_within_graphs():
    torch.manual_seed(0)
    attn = LinearAttention(8, heads=2)
    x = torch.randn(7, 8)
    batch = torch.tensor([0, 0, 0, 1, 1, 1, 1])
    out = attn(x, batch, 2)
    x2 = x.clone()
    x2[3:] = torch.randn(4, 8)  # change graph 1 only
    assert torch.allclose(attn(x2, batch, 2)[:3], out[:3])
    gin = GINLayer(nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 8)),
                   edge_features=False)
    layer = GPSLayer(8, gin, LinearAttention(8, heads=2))
    assert layer(x, torch.tensor([[0, 1], [1, 0]]), batch).x.shape == (7, 8)


def test_models_without_pe_and_without_edge_features():
    batch = make_batch()
    gin = GINE(16, 2, 1, node_vocab=5)
    assert gin(batch).shape == (5, 1)
    gps = GPS(16, 2, 4, node_vocab=5, task="graph_classification", pool="mean")
    assert gps(batch).shape == (5, 4)


def test_bad_configurations():
    with pytest.raises(ValueError, match="task must be one of"):
        GINE(16, 2, 1, node_vocab=5, task="regression")
    with pytest.raises(ValueError, match="exactly one of node_vocab"):
        GINE(16, 2, 1)
    with pytest.raises(ValueError, match="pool must be one of"):
        GINE(16, 2, 1, node_vocab=5, pool="attention")
    with pytest.raises(ValueError, match="needs edge features"):
        GPS(16, 2, 1, node_vocab=5, mpnn="gine")
    with pytest.raises(ValueError, match="divisible by heads"):
        gps_branches(10, "gin", "multihead", heads=4)
    with pytest.raises(ValueError, match="needs an MPNN, an attention, or both"):
        GPSLayer(16, None, None)
    with pytest.raises(ValueError, match="pe_combine='sum' needs encoders with 16 channels"):
        GINE(16, 2, 1, node_vocab=5, pe_encoders=[RWSEEncoder(8, 4)])
    with pytest.raises(ValueError, match="reinject_pe needs at least one PE encoder"):
        GINE(16, 2, 1, node_vocab=5, reinject_pe=True)
    with pytest.raises(ValueError, match="unknown PE"):
        build_model({"pe": {"magic": {}}, "node_vocab": 5})
    with pytest.raises(ValueError, match="model must be one of"):
        build_model({"model": "gat", "node_vocab": 5})
    with pytest.raises(ValueError, match="num_layers must be a positive int"):
        GINE(16, 0, 1, node_vocab=5)


@pytest.mark.parametrize("pair", [{"rrwp": {"num_steps": 5}}, {"spd": {"max_dist": 3}},
                                  {"spd": {"max_dist": 3, "path_hops": 2}}, {"rd": {}}])
def test_gps_with_a_pairwise_attention_bias(pair):
    """build_model's pair entry: the bias reaches the logits (the output changes with it) and
    every parameter, the pair encoder's included (Graphormer's edge encoding with
    path_hops), gets a gradient."""
    from graphpe.transforms import RRWP, SPD, ResistanceDistance

    name = next(iter(pair))
    transform = {"rrwp": RRWP, "spd": SPD, "rd": ResistanceDistance}[name](**pair[name])
    batch = transform(make_batch())
    model = build_model({"model": "gps", "channels": 16, "layers": 2, "out_dim": 1,
                         "node_vocab": 5, "edge_vocab": 3, "heads": 2, "pair": pair})
    model.train()
    out = model(batch)
    out.pow(2).sum().backward()
    missing = [n for n, p in model.named_parameters() if p.grad is None or not p.grad.any()]
    assert not missing
    model.eval()
    with torch.no_grad():
        before = model(batch)
        for p in model.pair_encoder.parameters():  # not a constant: softmax ignores those
            p.add_(torch.randn_like(p))
        assert not torch.allclose(model(batch), before)
    with pytest.raises(ValueError, match="pair .* takes one pairwise encoding and "
                                         "model='gps', 'grit' or 'graphormer'"):
        build_model({"model": "gine", "channels": 8, "layers": 1, "node_vocab": 5,
                     "pair": pair})
    if pair[name].get("path_hops"):
        assert model.pair_encoder.path_hops == 2
        with pytest.raises(ValueError, match=r"path_hops \(Graphormer's edge encoding\) is an "
                                             "attention bias: use model='gps'"):
            build_model({"model": "grit", "channels": 8, "layers": 1, "node_vocab": 5,
                         "edge_vocab": 3, "pair": pair})
        with pytest.raises(ValueError, match="reads the edge features: give edge_vocab"):
            build_model({"model": "gps", "channels": 8, "layers": 1, "node_vocab": 5,
                         "pair": pair})


@pytest.mark.parametrize("kind", ["gcn", "gin"])
def test_gcn_gin_build_and_shapes(kind):
    """GCN/GIN of the LCP paper through build_model: graph and node outputs, continuous x,
    PE encoders, and edge features accepted but unused."""
    from graphpe.nn.models import GCN, GIN

    batch = make_batch()
    batch.x = torch.randn(batch.num_nodes, 7)
    torch.manual_seed(0)
    model = build_model({"model": kind, "channels": 16, "layers": 3, "out_dim": 2,
                         "task": "graph_classification", "node_dim": 7, "edge_vocab": 3,
                         "pool": "mean", "dropout": 0.5})
    assert isinstance(model, GCN if kind == "gcn" else GIN)
    assert model.edge_input is None and len(model.convs) == 3
    assert model(batch).shape == (5, 2)
    model.train()
    model(batch).pow(2).sum().backward()
    missing = [n for n, p in model.named_parameters() if p.grad is None or not p.grad.any()]
    assert not missing
    node = build_model({"model": kind, "channels": 8, "layers": 2, "out_dim": 4,
                        "task": "node_classification", "node_dim": 7,
                        "pe": {"rwse": {"walk_length": 8}, "lcp": {}}, "pe_combine": "concat",
                        "reinject_pe": True}).eval()
    assert node(batch).shape == (batch.num_nodes, 4)
    defaults = (GCN if kind == "gcn" else GIN)(node_dim=3)
    assert defaults.channels == 64 and len(defaults.convs) == 4


@pytest.mark.parametrize("kind", ["gcn", "gin"])
def test_gcn_gin_permutation_invariance(kind):
    batch = make_batch()
    rng = np.random.default_rng(1)
    perms = [torch.from_numpy(rng.permutation(int(n))) for n in batch.ptr.diff()]
    permuted = permute_batch(batch, perms)
    torch.manual_seed(0)
    graph_model = build_model({"model": kind, "channels": 16, "layers": 4, "out_dim": 3,
                               "node_vocab": 5, "pool": "mean", "dropout": 0.5,
                               "pe": {"rwse": {"walk_length": 8}, "lcp": {}}}).eval()
    with torch.no_grad():
        assert torch.allclose(graph_model(permuted), graph_model(batch), atol=1e-5)
    node_model = build_model({"model": kind, "channels": 16, "layers": 3, "out_dim": 3,
                              "task": "node_classification", "node_vocab": 5}).eval()
    with torch.no_grad():
        out, out_perm = node_model(batch), node_model(permuted)
    offset = 0
    for perm in perms:
        n = perm.numel()
        assert torch.allclose(out_perm[offset : offset + n], out[offset : offset + n][perm],
                              atol=1e-5)
        offset += n


def test_gin_matches_pyg_ginconv_stack():
    """Each GIN layer is PyG's GINConv (eps = 0) on the paper's MLP, then ReLU."""
    from torch_geometric.nn import GINConv

    batch = make_batch()
    torch.manual_seed(0)
    model = build_model({"model": "gin", "channels": 8, "layers": 2, "out_dim": 2,
                         "node_vocab": 5}).eval()
    h = model.node_input(batch.x)
    expected = h
    for layer in model.convs:
        ref = GINConv(layer.nn).eval()
        expected = ref(expected, batch.edge_index).relu()
    with torch.no_grad():
        got = model.layers_forward(h, batch, None, None)
    assert torch.allclose(got, expected, atol=1e-5)


def test_unknown_model_name_is_refused():
    with pytest.raises(ValueError, match=r"model must be one of \('gine', 'gps', 'grit', "
                                         r"'gcn', 'sage', 'gin', 'gatedgcn', 'graphormer', "
                                         r"'sgformer', 'polynormer', 'res-gcn', 'res-sage', "
                                         r"'res-gat', 'res-gat-sep', 'res-gt', 'res-gt-sep', "
                                         r"'res-mlp', 'seal'\), got 'gat'"):
        build_model({"model": "gat", "node_vocab": 5})


@pytest.mark.parametrize("kind", ["gine", "gps", "gatedgcn", "gps+gatedgcn"])
def test_peg_gates_are_invariant_to_any_orthogonal_map_of_the_eigenvectors(kind):
    """PEG (EquivStableLapPE): the gates read ||p_i - p_j||^2 only, so rotating the
    eigenvector columns by any orthogonal matrix (sign flips, bases of repeated eigenspaces)
    leaves the model's output unchanged; the gates get gradients and change the output."""
    from graphpe.encodings import resolve_pe, transforms_of

    (transform,) = transforms_of(resolve_pe("peg:k=4"))
    batch = transform(make_batch())
    kind, extra = _kind(kind)
    if kind == "gps":
        extra["heads"] = 2
    torch.manual_seed(0)
    model = build_model({"model": kind, "channels": 16, "layers": 2, "out_dim": 1,
                         "node_vocab": 5, "edge_vocab": 3, "pe": {"peg": {}}, **extra}).eval()
    q, _ = torch.linalg.qr(torch.randn(4, 4, dtype=torch.float64))
    rotated = batch.clone()
    rotated.peg_pe = (batch.peg_pe.double() @ q).float()
    with torch.no_grad():
        before = model(batch)
        assert torch.allclose(model(rotated), before, atol=1e-5)
        for p in model.peg_gates.parameters():
            p.add_(torch.randn_like(p))
        assert not torch.allclose(model(batch), before)
    model.train()
    model(batch).square().sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0
               for p in model.peg_gates.parameters())


def test_peg_bad_uses():
    with pytest.raises(ValueError, match="peg gates the messages of model='gine', 'gps' or "
                                         "'gatedgcn'"):
        build_model({"model": "gcn", "channels": 8, "layers": 1, "node_vocab": 5,
                     "pe": {"peg": {}}})
    model = build_model({"model": "gine", "channels": 8, "layers": 1, "node_vocab": 5,
                         "edge_vocab": 3, "pe": {"peg": {}}})
    with pytest.raises(ValueError, match=r"PEG gates read batch.peg_pe"):
        model(make_batch())
    from graphpe.nn import GINLayer

    layer = GINLayer(torch.nn.Linear(4, 4))
    with pytest.raises(ValueError, match=r"edge_weight must have shape \(2, 1\), got \(2,\)"):
        layer(torch.randn(3, 4), torch.tensor([[0, 1], [1, 2]]), edge_weight=torch.ones(2))


def test_gps_layer_with_gatedgcn_is_graphgps_custom_gatedgcn_layer():
    """GraphGPS's GPSLayer with local_gnn_type='CustomGatedGCN' (graphgps/layer/gps_layer.py):
    h_local = norm1_local(GatedGCN(h)) (the GatedGCN layer adds the residual and applies the
    dropout itself), h_attn = norm1_attn(h + attn(h)), h = h_local + h_attn, then
    norm2(h + FFN(h)); the updated edges come back. Written with torch's own
    MultiheadAttention over the dense batch, as GraphGPS does."""
    from torch_geometric.utils import to_dense_batch

    torch.manual_seed(0)
    batch = make_batch()
    x = torch.randn(batch.num_nodes, 16)
    e = torch.randn(batch.edge_index.size(1), 16)
    layer = GPSLayer(16, GatedGCNLayer(16), MultiheadGraphAttention(16, 4)).train()
    assert isinstance(layer.conv, GatedGCNLayer) and layer.norm1 is not None
    out, new_e, new_pairs = layer(x, batch.edge_index, batch.batch, e)
    assert new_pairs is None
    # the reference, with copies of the layer's modules (their running statistics advance
    # once per forward, as the layer's)
    ref = copy.deepcopy(layer)
    for module in (ref.norm1, ref.norm2, ref.norm3, ref.conv.bn_node_x, ref.conv.bn_edge_e):
        module.reset_running_stats()
    mha = nn.MultiheadAttention(16, 4, batch_first=True)
    mha.in_proj_weight.data.copy_(layer.attn.in_proj_weight)
    mha.in_proj_bias.data.copy_(layer.attn.in_proj_bias)
    mha.out_proj.load_state_dict(layer.attn.out_proj.state_dict())
    local, local_e = ref.conv(x, batch.edge_index, e)
    h_local = ref.norm1(local)
    dense, mask = to_dense_batch(x, batch.batch)
    h_attn = ref.norm2(x + mha(dense, dense, dense, key_padding_mask=~mask,
                               need_weights=False)[0][mask])
    h = h_local + h_attn
    expected = ref.norm3(h + ref.mlp(h))
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(new_e, local_e)


def _layout_of(batch):
    from graphpe.layers.attention import layout_from_batch

    return layout_from_batch(batch.batch, batch.num_nodes)


def test_gatedgcn_models_thread_the_edge_features_through_the_layers():
    """Layer l + 1 reads the edge features layer l wrote (GPS with mpnn='gatedgcn' and the
    plain GatedGCN stack); without edge features every edge starts from one learned
    vector."""
    torch.manual_seed(0)
    batch = make_batch()
    for kind, extra in (("gatedgcn", {}), ("gps", {"mpnn": "gatedgcn"})):
        model = build_model({"model": kind, "channels": 16, "layers": 3, "out_dim": 1,
                             "node_vocab": 5, "edge_vocab": 3, **extra}).eval()
        seen = []

        def record(module, args, out, seen=seen):
            seen.append((args[2], out[1]))

        convs = model.convs if kind == "gatedgcn" else [layer.conv for layer in model.layers]
        for conv in convs:
            conv.register_forward_hook(record)
        with torch.no_grad():
            model(batch)
        assert len(seen) == 3
        for (_, written), (read, _) in zip(seen[:-1], seen[1:], strict=True):
            assert read is written
        # no edge features: a learned start vector, which gets a gradient
        bare = build_model({"model": kind, "channels": 16, "layers": 2, "out_dim": 1,
                            "node_vocab": 5, **extra})
        assert bare.edge_start is not None
        bare(batch).square().sum().backward()
        assert bare.edge_start.grad is not None and bare.edge_start.grad.abs().sum() > 0


def test_gatedgcn_bad_configurations():
    with pytest.raises(ValueError, match="mpnn='gatedgcn' updates the edge features, "
                                         "attention='grit' the pair features"):
        gps_branches(16, "gatedgcn", "grit")
    with pytest.raises(ValueError, match=r"GatedGCNLayer needs edge_attr \[num_edges, 16\]"):
        GPSLayer(16, GatedGCNLayer(16), None)(torch.randn(3, 16),
                                              torch.tensor([[0, 1], [1, 2]]))


def test_gps_builds_no_parameters_its_layers_never_read_and_old_checkpoints_still_load():
    """Without attention a GPS layer has no norm2, and with mpnn gin or None (and an attention
    other than GRIT's) the model has no edge embedding: parameters without gradients make
    DistributedDataParallel fail. State dicts saved with them still load."""
    base = {"model": "gps", "channels": 8, "layers": 2, "out_dim": 1, "node_vocab": 5,
            "edge_vocab": 3}
    no_attention = build_model({**base, "attention": None})
    assert all(layer.norm2 is None for layer in no_attention.layers)
    for mpnn in ("gin", None):
        assert build_model({**base, "mpnn": mpnn}).edge_input is None
    assert build_model(base).edge_input is not None  # auto: GINE reads them
    # the state dicts graphpe wrote before: the unread modules' entries are dropped on load
    state = no_attention.state_dict()
    for i in range(2):
        state[f"layers.{i}.norm2.module.weight"] = torch.ones(8)
        state[f"layers.{i}.norm2.module.bias"] = torch.zeros(8)
    no_attention.load_state_dict(state)
    no_mpnn = build_model({**base, "mpnn": None})
    state = no_mpnn.state_dict()
    state["edge_input.layer.weight"] = torch.zeros(3, 8)
    no_mpnn.load_state_dict(state)
    with pytest.raises(RuntimeError, match="Unexpected key"):  # anything else is still strict
        no_mpnn.load_state_dict({**state, "layers.0.surprise": torch.zeros(1)})


@pytest.mark.parametrize("module", ["gcn", "sage", "gat-sep"])
def test_residual_gnn_is_platonov_et_als_model(module):
    """Input map, Dropout, GELU, the residual blocks, LayerNorm, a linear head (their
    model.py), with their parameter count: one Linear(F, d), per block a LayerNorm and the
    feed-forward (its input twice as wide for sage / gat-sep), a LayerNorm, Linear(d, 1)."""
    torch.manual_seed(0)
    n, features, dim, layers = 30, 7, 16, 3
    ei = torch.randint(0, n, (2, 90))
    batch = Data(x=torch.randn(n, features), edge_index=ei, num_nodes=n)
    model = build_model({"model": f"res-{module}", "channels": dim, "layers": layers,
                         "out_dim": 1, "task": "node_classification", "node_dim": features,
                         "dropout": 0.2, "heads": 4}).eval()
    h = torch.nn.functional.gelu(model.node_input(batch.x))
    for block in model.blocks:
        h = block(h, ei)
    assert torch.allclose(model(batch), model.head(model.output_norm(h)), atol=1e-6)
    wide = 2 if module in ("sage", "gat-sep") else 1
    attention = dim * dim + dim + 2 * dim * 4 + 4 if module == "gat-sep" else 0
    per_block = 2 * dim + (wide * dim * dim + dim) + (dim * dim + dim) + attention
    expected = (features * dim + dim) + layers * per_block + 2 * dim + (dim + 1)
    assert sum(p.numel() for p in model.parameters()) == expected
    assert len(model.head) == 1  # a linear head, as theirs


@pytest.mark.parametrize("model_name", ["gcn", "sage"])
def test_classic_gnn_with_skip_and_norm_is_luo_et_als_layer(model_name):
    """residual + norm: h' = Dropout(ReLU(Norm(conv(h) + W_s h))) in every layer (Luo et al.'s
    tuned classic GNNs), a linear head with head_hidden=()."""
    torch.manual_seed(0)
    n = 25
    ei = torch.randint(0, n, (2, 80))
    batch = Batch.from_data_list([Data(x=torch.randn(n, 3), edge_index=ei, num_nodes=n)])
    model = build_model({"model": model_name, "channels": 8, "layers": 3, "out_dim": 2,
                         "task": "node_classification", "node_dim": 3, "residual": True,
                         "norm": "batch", "head_hidden": ()}).eval()
    h = model.node_input(batch.x)
    for conv, skip, norm in zip(model.convs, model.skips, model.norms, strict=True):
        h = torch.relu(norm(conv(h, ei) + skip(h)))
    assert torch.allclose(model(batch), model.head(h), atol=1e-5)
    plain = build_model({"model": model_name, "channels": 8, "layers": 3, "out_dim": 2,
                         "task": "node_classification", "node_dim": 3})
    assert plain.skips is None and plain.norms is None
    with pytest.raises(ValueError, match=r"norm must be one of \('batch', 'layer'\) or None"):
        build_model({"model": model_name, "channels": 8, "layers": 1, "out_dim": 1,
                     "task": "node_classification", "node_dim": 3, "norm": "group"})
