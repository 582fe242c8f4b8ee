import copy
import dataclasses
import shutil

import pytest
import torch
from torch import nn
from torch_geometric.nn.norm import BatchNorm as PygBatchNorm

from graphpe.nn import StaticGPS, build_model, static_batch, static_shapes
from graphpe.nn.static import MASKED_LOGIT, masked_batch_norm
from tests.nn.test_models import make_batch


def gps(pe=None, **kwargs):
    torch.manual_seed(0)
    config = {"model": "gps", "channels": 16, "layers": 2, "out_dim": 2, "node_vocab": 5,
              "edge_vocab": 3, "heads": 4,
              "pe": {"rwse": {"walk_length": 8}} if pe is None else pe}
    config.update(kwargs)
    return build_model(config)


def calibrate(*models_and_inputs):
    """A few training-mode forwards without gradients: running statistics near the data's, so
    eval-mode outputs are of order 1 (fresh running stats give activations in the thousands)."""
    with torch.no_grad():
        for model, inputs in models_and_inputs:
            model.train()
            for _ in range(30):
                model(inputs)


def _assert_static_equals_eager_in_training(eager: nn.Module, batch) -> None:
    """StaticGPS on a copy of ``eager`` (training mode) against ``eager``: outputs, every
    gradient and the running statistics of every norm (real rows only)."""
    static_model = copy.deepcopy(eager)
    eager.train()
    static_model.train()
    sb = static_batch(batch, num_graphs=8, graph_size=16, num_edges=512)
    assert sb.edge_mask.sum() == batch.edge_index.size(1)
    out = eager(batch)
    out_static = StaticGPS(static_model)(sb)
    assert out_static.shape == (8, 2)
    torch.testing.assert_close(out_static[: batch.num_graphs], out, rtol=1e-4, atol=1e-4)
    out.square().sum().backward()
    out_static[: batch.num_graphs].square().sum().backward()
    for (name, p), q in zip(eager.named_parameters(), static_model.parameters(), strict=True):
        torch.testing.assert_close(q.grad, p.grad, rtol=1e-3, atol=1e-4, msg=name)
    for (name, p), q in zip(eager.named_buffers(), static_model.buffers(), strict=True):
        torch.testing.assert_close(q, p, rtol=1e-5, atol=1e-6, msg=name)


@pytest.mark.parametrize("pe", [{"rwse": {"walk_length": 8}},
                                {"lap": {"k": 6}, "lcp": {},
                                 "rfp": {"dim": 4, "steps": 2, "readout": "trajectory"}}])
@pytest.mark.parametrize("pool", ["sum", "mean", "max"])
def test_static_equals_eager_in_training(pe, pool):
    eager = gps(pe, pool=pool, attn_dropout=0.0)
    for enc in eager.pe_encoders:
        if hasattr(enc, "random_sign_flip"):  # random draws differ between the two paths
            enc.random_sign_flip = False
    _assert_static_equals_eager_in_training(eager, make_batch(6))


def test_static_equals_eager_in_eval_and_gin():
    batch = make_batch(5, seed=3)
    for kwargs in ({}, {"mpnn": "gin"}, {"mpnn": "gatedgcn"}, {"attention": None}, {"mpnn": None},
                   {"reinject_pe": True, "pe_combine": "concat"},
                   {"pe_combine": "split", "pe_channels": 4, "head_hidden": (8, 4)}):
        eager = gps(**kwargs)
        static_model = copy.deepcopy(eager)
        sb = static_batch(batch)
        calibrate((eager, batch), (StaticGPS(static_model), sb))
        eager.eval()
        static_model.eval()
        torch.testing.assert_close(StaticGPS(static_model)(sb)[: batch.num_graphs],
                                   eager(batch), rtol=1e-4, atol=1e-4, msg=str(kwargs))


@pytest.mark.parametrize("edges", [True, False])
def test_static_gatedgcn_equals_eager_in_training(edges):
    """GPS with GatedGCN: its node and edge norms take their statistics over the real nodes
    and edges only, the edge features flow from layer to layer (three layers: the last one
    without an edge update), and padding edges stay out of every real row."""
    kwargs = {} if edges else {"edge_vocab": None}
    eager = gps(mpnn="gatedgcn", attn_dropout=0.0, layers=3, **kwargs)
    _assert_static_equals_eager_in_training(eager, make_batch(6))


def test_static_batch_layout():
    batch = make_batch(4, seed=1)
    batch.y = torch.randn(4)
    sizes = batch.ptr.diff()
    sb = static_batch(batch, num_graphs=6, graph_size=16, num_edges=400)
    assert sb.shape_key == (6, 16, 400)
    assert sb.num_rows == 6 * 16 + 1 and sb.x.size(0) == sb.num_rows
    assert sb.graph_count == 4
    torch.testing.assert_close(sb.graph_mask, torch.tensor([1.0, 1, 1, 1, 0, 0]))
    assert int(sb.node_mask.sum()) == batch.num_nodes
    for g in range(4):  # graph g in rows g*16 .. g*16 + n_g - 1, in order
        rows = slice(g * 16, g * 16 + int(sizes[g]))
        assert bool(sb.node_mask[rows].all())
        assert not bool(sb.node_mask[g * 16 + int(sizes[g]): (g + 1) * 16].any())
        torch.testing.assert_close(sb.x[rows], batch.x[batch.ptr[g]: batch.ptr[g + 1]])
        torch.testing.assert_close(sb.node_attrs["rwse"][rows],
                                   batch.rwse[batch.ptr[g]: batch.ptr[g + 1]])
    # real edges keep their order, mapped to padded rows; padding edges run sink -> sink
    edges = batch.edge_index.size(1)
    graph = batch.batch[batch.edge_index[0]]
    expected = batch.edge_index - batch.ptr[graph] + graph * 16
    torch.testing.assert_close(sb.edge_index[:, :edges], expected)
    assert bool((sb.edge_index[:, edges:] == 6 * 16).all())
    assert sb.edge_attr.size(0) == 400 and bool((sb.edge_attr[edges:] == 0).all())
    torch.testing.assert_close(sb.y[:4], batch.y)
    # defaults: graph count, largest graph and edges rounded up
    d = static_batch(batch, size_multiple=8, edge_multiple=256)
    assert d.shape_key == (4, -(-int(sizes.max()) // 8) * 8, -(-edges // 256) * 256)


def test_static_batch_errors():
    batch = make_batch(4, seed=1)
    largest, edges = int(batch.ptr.diff().max()), batch.edge_index.size(1)
    with pytest.raises(ValueError, match="the batch has 4 graphs, more than num_graphs=3"):
        static_batch(batch, num_graphs=3)
    with pytest.raises(ValueError, match=f"largest graph has {largest} nodes, more than "
                                         f"graph_size={largest - 1}"):
        static_batch(batch, graph_size=largest - 1)
    with pytest.raises(ValueError, match=f"the batch has {edges} edges, more than "
                                         f"num_edges={edges - 1}"):
        static_batch(batch, num_edges=edges - 1)
    with pytest.raises(ValueError, match="graph_size must be a positive int, got 0"):
        static_batch(batch, graph_size=0)
    batch.y = torch.zeros(batch.num_nodes)
    with pytest.raises(ValueError, match=r"y must have one row per graph \(4\), got "
                                         rf"\({batch.num_nodes},\)"):
        static_batch(batch)


def test_static_shapes_hold_every_batch():
    from torch_geometric.loader import DataLoader

    graphs = make_batch(23, seed=2).to_data_list()
    shapes = static_shapes(graphs, 5)
    assert shapes["num_graphs"] == 5 and shapes["graph_size"] % 8 == 0
    keys = {static_batch(b, **shapes).shape_key
            for b in DataLoader(graphs, batch_size=5, shuffle=True)}
    assert keys == {(5, shapes["graph_size"], shapes["num_edges"])}
    with pytest.raises(ValueError, match="needs at least one graph"):
        static_shapes([], 5)


@pytest.mark.parametrize("workers", [0, 2])
def test_static_collate_in_a_torch_loader(workers):
    """The padding as a DataLoader's collate_fn (in worker processes too) gives the batches
    static_batch gives on PyG's collation."""
    from torch.utils.data import DataLoader
    from torch_geometric.data import Batch

    from graphpe.nn import StaticCollate

    graphs = make_batch(11, seed=4).to_data_list()
    for i, g in enumerate(graphs):
        g.y = torch.tensor([float(i)])
    shapes = static_shapes(graphs, 4)
    collate = StaticCollate(**shapes)
    assert repr(collate) == (f"StaticCollate(num_graphs=4, graph_size={shapes['graph_size']}, "
                             f"num_edges={shapes['num_edges']})")
    loader = DataLoader(graphs, batch_size=4, collate_fn=collate, num_workers=workers)
    got = list(loader)
    assert [sb.graph_count for sb in got] == [4, 4, 3]
    for k, sb in enumerate(got):
        ref = static_batch(Batch.from_data_list(graphs[4 * k: 4 * k + 4]), **shapes)
        assert sb.shape_key == ref.shape_key
        for a, b in ((sb.x, ref.x), (sb.edge_index, ref.edge_index), (sb.y, ref.y),
                     (sb.node_mask, ref.node_mask), (sb.node_attrs["rwse"],
                                                     ref.node_attrs["rwse"])):
            torch.testing.assert_close(a, b)


def test_short_last_batch_is_finite():
    """Empty slots (a short last batch): finite outputs, no gradient from them."""
    batch = make_batch(3)
    model = gps(pool="max")
    model.train()
    sb = static_batch(batch, num_graphs=8)
    out = StaticGPS(model)(sb)
    assert bool(torch.isfinite(out).all())
    loss = (out[:3].square().sum(-1) * sb.graph_mask[:3]).sum()
    loss.backward()
    assert all(bool(torch.isfinite(p.grad).all()) for p in model.parameters()
               if p.grad is not None)


def test_many_padding_edges_stay_finite_through_deep_models():
    """The sink row takes every padding edge's message: thousands here, over 12 layers (it
    overflowed to inf, then NaN through the masks, on ZINC before padding rows were reset
    every layer)."""
    batch = make_batch(4)
    eager = gps(attn_dropout=0.0, layers=12)
    static_model = copy.deepcopy(eager)
    eager.train()
    static_model.train()
    sb = static_batch(batch, num_edges=8192)
    out = StaticGPS(static_model)(sb)
    assert bool(torch.isfinite(out).all())
    torch.testing.assert_close(out[: batch.num_graphs], eager(batch), rtol=1e-3, atol=1e-3)
    out.sum().backward()
    assert all(bool(torch.isfinite(p.grad).all()) for p in static_model.parameters()
               if p.grad is not None)


@pytest.mark.parametrize("pyg", [False, True])
@pytest.mark.parametrize("momentum", [0.1, None])
def test_masked_batch_norm_matches_module_on_real_rows(pyg, momentum):
    torch.manual_seed(0)
    x = torch.randn(30, 5) * 3 + 1
    mask = (torch.rand(30) > 0.4).float()
    real = mask.bool()
    norm = PygBatchNorm(5, momentum=momentum) if pyg else nn.BatchNorm1d(5, momentum=momentum)
    with torch.no_grad():
        (norm.module if pyg else norm).weight.uniform_(0.5, 2)
    ref = copy.deepcopy(norm)
    x_ref = x.clone().requires_grad_()
    x_masked = x.clone().requires_grad_()
    for _ in range(2):  # twice: the cumulative average (momentum None) counts batches
        expected = ref(x_ref[real])
        out = masked_batch_norm(norm, x_masked, mask, mask.sum())
    torch.testing.assert_close(out[real], expected)
    expected.sum().backward()
    out[real].sum().backward()
    torch.testing.assert_close(x_masked.grad, torch.where(real.unsqueeze(-1), x_ref.grad, 0.0))
    for a, b in zip(norm.buffers(), ref.buffers(), strict=True):
        torch.testing.assert_close(a, b)
    norm.eval()
    ref.eval()
    torch.testing.assert_close(masked_batch_norm(norm, x, mask, mask.sum()), ref(x))


def test_masked_batch_norm_rejects_other_norms():
    with pytest.raises(ValueError, match="static batches take batch norms .* got LayerNorm"):
        masked_batch_norm(nn.LayerNorm(4), torch.zeros(3, 4), torch.ones(3), torch.tensor(3.0))


def test_unsupported_models_raise():
    with pytest.raises(ValueError, match="StaticGPS runs a GPS model, got GINE"):
        StaticGPS(build_model({"model": "gine", "channels": 8, "node_vocab": 5}))
    with pytest.raises(ValueError, match="does not support the PE encoder SignNetEncoder"):
        StaticGPS(gps({"signnet": {"k": 6}}))
    with pytest.raises(ValueError, match="supports attention 'multihead' or None: a "
                                         "MultiheadGraphAttention, got LinearAttention"):
        StaticGPS(gps(attention="linear"))
    with pytest.raises(ValueError, match="supports norm='batch_norm' or None, got LayerNorm"):
        StaticGPS(gps(norm="layer_norm"))
    with pytest.raises(ValueError, match="graph-level tasks"):
        StaticGPS(gps(task="node_classification"))
    with pytest.raises(ValueError, match="does not support PEG gates"):
        StaticGPS(gps({"rwse": {"walk_length": 8}, "peg": {}}))
    # by the form a model declares: GRIT (a GPS subclass) is not GPS's function, nor is a
    # subclass that overrides forward; one that keeps GPS's forward runs
    with pytest.raises(ValueError, match="StaticGPS runs a GPS model, got GRIT"):
        StaticGPS(build_model({"model": "grit", "channels": 8, "node_vocab": 5,
                               "pair": {"rrwp": {}}}))
    model = gps()

    class Halved(type(model)):
        def forward(self, batch):
            return 0.5 * super().forward(batch)

    class Renamed(type(model)):
        pass

    model.__class__ = Halved
    with pytest.raises(ValueError, match="StaticGPS runs a GPS model, got Halved"):
        StaticGPS(model)
    model.__class__ = Renamed
    assert StaticGPS.unsupported(model) is None


@pytest.mark.parametrize("pair", [{"rrwp": {"num_steps": 5}}, {"spd": {"max_dist": 3}},
                                  {"spd": {"max_dist": 3, "path_hops": 2}}, {"rd": {}}])
def test_static_pair_bias_equals_eager(pair):
    """Attention biases per pair and head (RRWP, SPD, with Graphormer's edge encoding,
    resistance) as one dense [G, heads, S, S] mask: the eager GPS's outputs and gradients, the
    pair encoder's included."""
    from graphpe.transforms import RRWP, SPD, ResistanceDistance

    name = next(iter(pair))
    transform = {"rrwp": RRWP, "spd": SPD, "rd": ResistanceDistance}[name](**pair[name])
    batch = transform(make_batch(5))
    eager = gps(pair=pair, attn_dropout=0.0)
    static_model = copy.deepcopy(eager)
    eager.train()
    static_model.train()
    sb = static_batch(batch, num_graphs=6)
    dense, listed = sb.pair_attrs[name]
    assert dense.shape[:3] == listed.shape == (6, sb.graph_size, sb.graph_size)
    assert int(listed.sum()) == batch[f"{name}_index"].size(1)
    out = eager(batch)
    out_static = StaticGPS(static_model)(sb)[: batch.num_graphs]
    torch.testing.assert_close(out_static, out, rtol=1e-4, atol=1e-4)
    out.square().sum().backward()
    out_static.square().sum().backward()
    for (n, p), q in zip(eager.named_parameters(), static_model.parameters(), strict=True):
        torch.testing.assert_close(q.grad, p.grad, rtol=1e-3, atol=1e-4, msg=n)
    crossed = batch.clone()
    crossed[f"{name}_index"] = crossed[f"{name}_index"].clone()
    crossed[f"{name}_index"][1, 0] = batch.num_nodes - 1  # a node of the last graph
    with pytest.raises(ValueError, match=f"{name}_index holds a pair of nodes from different "
                                         "graphs"):
        static_batch(crossed)
    with pytest.raises(ValueError, match=f"the static batch has no pairwise encoding "
                                         f"'{name}'"):
        StaticGPS(static_model)(static_batch(make_batch(5)))
    if pair[name].get("path_hops"):
        assert sb.pair_attrs["spd_path"][0].shape == (6, sb.graph_size, sb.graph_size, 2)
        with pytest.raises(ValueError, match="the static batch has no 'spd_path'"):
            StaticGPS(static_model)(static_batch(SPD(3)(make_batch(5))))


def test_missing_features_raise():
    batch = make_batch(3)
    sb = static_batch(batch)
    model = StaticGPS(gps())
    with pytest.raises(ValueError, match="the model was built with edge features but the "
                                         "batch has none"):
        model(dataclasses.replace(sb, edge_attr=None))
    with pytest.raises(ValueError, match=r"the model needs node features \(the batch's x\)"):
        model(dataclasses.replace(sb, x=None))


def test_padding_keys_are_masked():
    """Changing what sits in padding rows changes nothing: the attention cannot see them."""
    batch = make_batch(4)
    model = gps(attn_dropout=0.0)
    model.eval()
    sb = static_batch(batch, graph_size=24)
    out = StaticGPS(model)(sb)
    noisy = copy.copy(sb)
    pad = sb.node_mask == 0
    noisy.node_attrs = {k: v.clone() for k, v in sb.node_attrs.items()}
    noisy.node_attrs["rwse"][pad] = torch.randn(int(pad.sum()), 8) * 100
    noisy.x = sb.x.clone()
    noisy.x[pad] = 4
    torch.testing.assert_close(StaticGPS(model)(noisy), out)
    assert MASKED_LOGIT < -1e8


@pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                    reason="torch.compile on the CPU needs a C++ compiler")
# Inductor generates and compiles C++ for the forward and backward (~20-45 s a model): the
# default run traces through AOTAutograd only (``aot_eager``: the same graph capture, so a break
# or host sync fails it just the same); Inductor and the pair and GatedGCN variants run under
# `make test-slow`
@pytest.mark.parametrize("backend", [
    "aot_eager", pytest.param("inductor", marks=pytest.mark.slow)])
@pytest.mark.parametrize("pair", [
    None, pytest.param({"spd": {"max_dist": 3, "path_hops": 2}}, marks=pytest.mark.slow),
    pytest.param("gatedgcn", marks=pytest.mark.slow)])
def test_fullgraph_compile_matches_eager(pair, backend):
    """One graph, no breaks and no host syncs: what CUDA graphs need (also with Graphormer's
    spatial and edge encodings, and with GatedGCN)."""
    from graphpe.transforms import SPD

    batch = make_batch(4)
    model = gps(attn_dropout=0.0, layers=1)
    if pair == "gatedgcn":
        model = gps(attn_dropout=0.0, layers=2, mpnn="gatedgcn")
    elif pair is not None:
        batch = SPD(**pair["spd"])(batch)
        model = gps(attn_dropout=0.0, layers=1, pair=pair)
    model.train()
    sb = static_batch(batch, num_graphs=4, graph_size=16, num_edges=256)
    ref = copy.deepcopy(model)
    compiled = torch.compile(StaticGPS(model), fullgraph=True, dynamic=False, backend=backend)
    out = compiled(sb)
    expected = StaticGPS(ref)(sb)
    torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-4)
    out.sum().backward()
    expected.sum().backward()
    for p, q in zip(model.parameters(), ref.parameters(), strict=True):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-3, atol=1e-4)
    for p, q in zip(model.buffers(), ref.buffers(), strict=True):
        torch.testing.assert_close(p, q)



cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


@pytest.mark.gpu
@cuda
def test_static_on_cuda_matches_cpu():
    batch = make_batch(6)
    pinned = static_batch(batch).pin_memory()
    assert pinned.x.is_pinned() and pinned.node_attrs["rwse"].is_pinned()
    model = gps(attn_dropout=0.0)
    model.train()
    sb = static_batch(batch, num_graphs=8, graph_size=16, num_edges=512)
    expected = StaticGPS(copy.deepcopy(model))(sb)
    out = StaticGPS(model.cuda())(sb.to("cuda"))
    torch.testing.assert_close(out.cpu(), expected, rtol=1e-3, atol=1e-3)


@pytest.mark.gpu
@cuda
@pytest.mark.parametrize("pair", [None, {"spd": {"max_dist": 3, "path_hops": 2}}, "gatedgcn"])
def test_cuda_graph_steps_match_eager(pair):
    """Three training steps replayed as CUDA graphs (``mode='reduce-overhead'``) give the
    parameters of three eager steps (also with Graphormer's spatial and edge encodings, and
    with GatedGCN as the MPNN)."""
    from graphpe.transforms import SPD

    batches = [make_batch(6, seed=s) for s in range(3)]
    shapes = static_shapes([g for b in batches for g in b.to_data_list()], 8)
    if isinstance(pair, dict):  # on the whole batch: after to_data_list, which knows its slices
        batches = [SPD(**pair["spd"])(b) for b in batches]
    for b in batches:
        b.y = torch.randn(b.num_graphs)
    if pair is None:
        model = gps(attn_dropout=0.0)
    elif pair == "gatedgcn":
        model = gps(attn_dropout=0.0, mpnn="gatedgcn")
    else:
        model = gps(attn_dropout=0.0, pair=pair)
    model = model.cuda()
    ref = copy.deepcopy(model)
    runs = []
    for net, compiled in ((model, True), (ref, False)):
        forward = StaticGPS(net)
        if compiled:
            forward = torch.compile(forward, fullgraph=True, dynamic=False,
                                    mode="reduce-overhead")
        opt = torch.optim.Adam(net.parameters(), lr=1e-3)
        net.train()
        losses = []
        for b in batches:
            sb = static_batch(b, **shapes).to("cuda")
            torch.compiler.cudagraph_mark_step_begin()
            opt.zero_grad(set_to_none=True)
            pred = forward(sb)[:, 0]
            loss = ((pred - sb.y).abs() * sb.graph_mask).sum() / sb.graph_count
            loss.backward()
            opt.step()
            losses.append(float(loss))
        runs.append(losses)
    assert runs[0] == pytest.approx(runs[1], rel=1e-3, abs=1e-4)
    for p, q in zip(model.parameters(), ref.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=1e-3, atol=1e-4)
