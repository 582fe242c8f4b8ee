"""The one-node GINE model layer (graphpe.layers.fused_gine, and GIN without edge features) against
the module-by-module path."""

from __future__ import annotations

import copy

import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from torch_geometric.data import Batch

import graphpe.layers.fused_gine as fused_gine
from graphpe.nn import GINE, LapPEEncoder
from graphpe.synthetic import molecule_like_graphs
from graphpe.transforms import LaplacianPE


def _batch(num_graphs: int, seed: int, peg: bool = False, directed: bool = False) -> Batch:
    gen = torch.Generator().manual_seed(seed)
    graphs = molecule_like_graphs(num_graphs, min_nodes=2, max_nodes=20, seed=seed)
    for g in graphs:
        # continuous node features: a batch norm over rows that are all equal (the symmetric
        # nodes of a molecule with few atom types) or over 2 rows has a zero input gradient
        # that both paths compute as amplified rounding noise, nothing to compare
        g.x = torch.randn(g.num_nodes, 3, generator=gen)
        g.edge_attr = torch.randint(0, 3, (g.edge_index.size(1),), generator=gen)
        if directed:  # one direction of each edge: messages flow one way
            keep = g.edge_index[0] < g.edge_index[1]
            g.edge_index, g.edge_attr = g.edge_index[:, keep], g.edge_attr[keep]
    if peg:
        graphs = [LaplacianPE(3, attr_names=("peg_pe", "peg_eigvals", "peg_mask"))(g)
                  for g in graphs]
    return Batch.from_data_list(graphs)


def _pair(seed: int, edges: bool = True, **kwargs) -> tuple[GINE, GINE]:
    torch.manual_seed(seed)
    fused = GINE(16, 3, 1, node_dim=3, edge_vocab=3 if edges else None, **kwargs)
    with torch.no_grad():  # a learned eps away from its initial 0
        for i, conv in enumerate(fused.convs):
            conv.eps.fill_(0.1 * (i + 1))
    plain = copy.deepcopy(fused)
    plain.fused = False
    return fused, plain


@settings(max_examples=20, deadline=None)
@given(num_graphs=st.integers(1, 12), momentum=st.sampled_from([0.1, 0.5]),
       edges=st.booleans(), directed=st.booleans(), seed=st.integers(0, 2**16))
def test_fused_gine_equals_the_module_path(num_graphs, momentum, edges, directed, seed):
    """Output, the gradients of every parameter (eps included) and the running statistics,
    over two training steps' forward and backward; GINE, and GIN without edge features, on
    undirected or directed edges."""
    batch = _batch(num_graphs, seed, directed=directed)
    assume(batch.num_edges > 0 and batch.num_nodes > 3)
    fused, plain = _pair(seed, edges)
    for model in (fused, plain):
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm1d):
                m.momentum = momentum
    grad = torch.randn(num_graphs, 1, generator=torch.Generator().manual_seed(seed))
    # the batch norms' outputs feed ReLUs: one within rounding of 0 may take either side in
    # either path (their float32 statistics round differently), and its gradient then flows
    # in one path only; such ties are left out
    nearest = []
    for bn in (m for m in plain.modules() if isinstance(m, torch.nn.BatchNorm1d)):
        bn.register_forward_hook(lambda mod, args, out: nearest.append(out.abs().min()))
    for _ in range(2):
        outs = []
        for model in (fused, plain):
            model.train().zero_grad()
            out = model(batch)
            out.backward(grad)
            outs.append(out)
        assume(min(nearest) > 2e-5)
        assert torch.allclose(outs[0], outs[1], atol=1e-4, rtol=1e-4)
        scale = max(p.grad.abs().max().item() for p in plain.parameters())
        for (name, a), b in zip(fused.named_parameters(), plain.parameters(), strict=True):
            assert torch.allclose(a.grad, b.grad, atol=2e-5 * max(scale, 1.0), rtol=1e-3), name
    for (name, a), b in zip(fused.named_buffers(), plain.buffers(), strict=True):
        assert torch.allclose(a.double(), b.double(), atol=1e-5, rtol=1e-5), name
    # evaluation without autograd (the fused inference) from those running statistics
    for mode in (torch.no_grad, torch.inference_mode):
        with mode():
            got, want = fused.eval()(batch), plain.eval()(batch)
        assert torch.allclose(got, want, atol=1e-4, rtol=1e-4)


def test_fused_gine_runs_only_where_it_computes_the_layer(monkeypatch):
    calls = []
    real = fused_gine._FusedGINELayer.apply

    def counted(*args):
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(fused_gine._FusedGINELayer, "apply", counted)
    batch = _batch(4, 0)

    def fused_layers(model, batch=batch) -> int:
        calls.clear()
        model(batch)
        return len(calls)

    fused, plain = _pair(0)
    assert fused_layers(fused.train()) == 3
    assert fused_layers(plain.train()) == 0
    assert fused_layers(fused.eval()) == 0  # evaluation under autograd: the module path
    inference = []
    real_inference = fused_gine.fused_gine_inference

    def counted_inference(*args):
        inference.append(1)
        return real_inference(*args)

    monkeypatch.setattr(fused_gine, "fused_gine_inference", counted_inference)
    with torch.no_grad():
        fused(batch)
    assert inference == [1, 1, 1]
    fused.train()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert fused_layers(fused) == 0
    assert fused_layers(_pair(0, dropout=0.2)[0].train()) == 0
    assert fused_layers(copy.deepcopy(fused).double(),
                        Batch.from_data_list(batch.to_data_list())) == 0
    hooked = copy.deepcopy(fused)
    hooked.convs[1].nn[0].register_forward_hook(lambda *args: None)
    assert fused_layers(hooked) == 2
    peg_batch = _batch(4, 0, peg=True)
    peg = _pair(0, peg_attr="peg_pe")[0].train()
    assert fused_layers(peg, peg_batch) == 0  # PEG gates weight the messages
    assert fused_layers(_pair(0, edges=False)[0].train()) == 3  # GIN: no edge features
    reinject = GINE(16, 2, 1, node_dim=3, edge_vocab=3, reinject_pe=True,
                    pe_encoders=[LapPEEncoder(3, 16, attr_names=("peg_pe", "peg_eigvals",
                                                                 "peg_mask"))]).train()
    assert fused_layers(reinject, peg_batch) == 2


def test_fused_gine_rejects_node_ids_out_of_range():
    batch = _batch(3, 0)
    bad = batch.edge_index.clone()
    bad[0, 0] = batch.num_nodes
    batch.edge_index = bad
    with pytest.raises(ValueError, match=r"edge_index holds node ids outside"):
        _pair(0)[0].train()(batch)
