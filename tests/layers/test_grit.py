import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch_geometric.data import Batch, Data

from graphpe.layers.grit import log_degree, signed_sqrt
from graphpe.nn import GRIT, GPSLayer, GRITAttention, PairFeatureEncoder, build_model
from graphpe.synthetic import molecule_like_graphs
from graphpe.transforms import RRWP, SPD


def molecules(num_graphs=4, seed=0, min_nodes=5, max_nodes=12):
    graphs = molecule_like_graphs(num_graphs, min_nodes=min_nodes, max_nodes=max_nodes, seed=seed)
    gen = torch.Generator().manual_seed(seed)
    for g in graphs:
        g.x = torch.randint(0, 5, (g.num_nodes, 1), generator=gen)
        # a symmetric bond type per undirected edge
        lo = torch.minimum(g.edge_index[0], g.edge_index[1])
        hi = torch.maximum(g.edge_index[0], g.edge_index[1])
        g.edge_attr = (lo * 7 + hi * 3) % 3
    return graphs


def dense_reference(att: GRITAttention, x, pair_dense, log_deg):
    """GRIT's attention for one graph written densely over its n x n pairs (query i, key j),
    with GRIT's own signed square root and a plain softmax over j."""
    n, heads, dim = x.size(0), att.heads, att.head_dim
    q = att.query(x).view(n, heads, dim)
    k, v = att.key_value(x).view(n, 2, heads, dim).unbind(1)
    e_w, e_b = att.pair_in(pair_dense).view(n, n, 2, heads, dim).unbind(2)
    z = (q[:, None] + k[None, :]) * e_w
    z = torch.sqrt(torch.relu(z) + 1e-8) - torch.sqrt(torch.relu(-z) + 1e-8)
    pair = torch.relu(z + e_b)  # [n, n, heads, dim]
    logits = torch.einsum("ijhd,dh->ijh", pair, att.score).clamp(-5, 5)
    alpha = torch.softmax(logits, dim=1)
    out = torch.einsum("ijh,jhd->ihd", alpha, v)
    out = out + torch.einsum("ijh,ijhd,hde->ihe", alpha, pair, att.pair_value)
    out = out.reshape(n, -1)
    out = out * att.degree_coef[:, 0] + out * log_deg * att.degree_coef[:, 1]
    return att.out_proj(out), att.pair_proj(pair.reshape(n, n, -1))


def test_signed_sqrt_matches_grits_formula():
    x = torch.linspace(-4, 4, 101, dtype=torch.float64)
    grit = torch.sqrt(torch.relu(x) + 1e-8) - torch.sqrt(torch.relu(-x) + 1e-8)
    torch.testing.assert_close(signed_sqrt(x), grit, atol=1e-12, rtol=0)
    x.requires_grad_(True)
    signed_sqrt(x).sum().backward()
    assert torch.isfinite(x.grad).all()  # 1 / (2 sqrt(eps)) at 0, not inf


def test_attention_equals_a_dense_per_graph_reference():
    """The pair-list attention over a batch of graphs (all ordered pairs, shuffled) equals the
    dense n x n computation graph by graph."""
    torch.manual_seed(0)
    channels, heads = 12, 3
    att = GRITAttention(channels, heads).double().eval()
    sizes = [1, 4, 7, 5]
    ptr = np.concatenate([[0], np.cumsum(sizes)])
    x = torch.randn(ptr[-1], channels, dtype=torch.float64)
    log_deg = torch.rand(ptr[-1], 1, dtype=torch.float64) * 2
    dense = [torch.randn(n, n, channels, dtype=torch.float64) for n in sizes]
    index, attr = [], []
    for g, n in enumerate(sizes):
        i, j = torch.meshgrid(torch.arange(n), torch.arange(n), indexing="ij")
        index.append(torch.stack([i.flatten(), j.flatten()]) + int(ptr[g]))
        attr.append(dense[g].reshape(n * n, channels))
    index, attr = torch.cat(index, 1), torch.cat(attr)
    shuffle = torch.randperm(index.size(1))  # the order of the pairs does not matter
    nodes, pairs = att(x, attr[shuffle], index[:, shuffle], log_deg)
    unshuffled = torch.empty_like(pairs)
    unshuffled[shuffle] = pairs
    for g, n in enumerate(sizes):
        lo, hi = int(ptr[g]), int(ptr[g + 1])
        ref_nodes, ref_pairs = dense_reference(att, x[lo:hi], dense[g], log_deg[lo:hi])
        torch.testing.assert_close(nodes[lo:hi], ref_nodes, atol=1e-10, rtol=1e-10)
        start = int(sum(s * s for s in sizes[:g]))
        torch.testing.assert_close(unshuffled[start:start + n * n],
                                   ref_pairs.reshape(n * n, -1), atol=1e-10, rtol=1e-10)


def test_attention_bad_inputs():
    att = GRITAttention(8, 2)
    x = torch.randn(3, 8)
    index = torch.tensor([[0, 1], [1, 0]])
    with pytest.raises(ValueError, match=r"pair_attr must be \[num_pairs, 8\], got \[2, 4\]"):
        att(x, torch.randn(2, 4), index, torch.zeros(3, 1))
    with pytest.raises(ValueError, match=r"pair_index must be \[2, 3\], got \[2, 2\]"):
        att(x, torch.randn(3, 8), index, torch.zeros(3, 1))
    with pytest.raises(ValueError, match=r"pair_index holds node ids outside \[0, 3\)"):
        att(x, torch.randn(2, 8), torch.tensor([[0, 3], [1, 0]]), torch.zeros(3, 1))
    with pytest.raises(ValueError, match="the degree scaler needs log_deg"):
        att(x, torch.randn(2, 8), index)
    with pytest.raises(ValueError, match="channels=10 must be divisible by heads=4"):
        GRITAttention(10, 4)
    with pytest.raises(ValueError, match=r"dropout must be in \[0, 1\)"):
        GRITAttention(8, 2, dropout=1.0)


def test_log_degree():
    edge_index = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])
    torch.testing.assert_close(log_degree(edge_index, 4),
                               torch.log1p(torch.tensor([[1.0], [2.0], [1.0], [0.0]])))


def test_pair_feature_encoder_diagonal_to_nodes():
    graphs = [RRWP(4)(g) for g in molecules(3)]
    batch = Batch.from_data_list(graphs)
    enc = PairFeatureEncoder(4, 6)
    node, pair, index = enc(batch)
    assert pair.shape == (batch.rrwp.size(0), 6) and index is batch.rrwp_index
    diag = batch.rrwp_index[0] == batch.rrwp_index[1]
    values = torch.cat([batch.rrwp[diag], torch.zeros(int(diag.sum()), 1)], 1)
    torch.testing.assert_close(node[batch.rrwp_index[0, diag]], enc.node(values))
    # SPD is categorical; without its diagonal pairs a node gets no node feature
    spd = SPD(3)(molecules(1)[0])
    keep = spd.spd_index[0] != spd.spd_index[1]
    spd.spd_index, spd.spd = spd.spd_index[:, keep], spd.spd[keep]
    node, pair, _ = PairFeatureEncoder(1, 6, "spd", num_categories=5)(spd)
    assert pair.shape == (int(keep.sum()), 6) and not node.any()
    assert PairFeatureEncoder(1, 6, "spd", num_categories=5, node_from_diagonal=False)(spd)[0] \
        is None


def grit_batch(graphs, k=6):
    return Batch.from_data_list([RRWP(k)(g) for g in graphs])


@pytest.mark.parametrize("mpnn", [None, "gine"])
def test_grit_model_trains_every_parameter(mpnn):
    """GRIT (and GPS with GINE beside the GRIT attention): every parameter gets a gradient,
    the pair encoder's and the edge embedding's included."""
    batch = grit_batch(molecules(5))
    model = build_model({"model": "grit", "channels": 16, "layers": 2, "out_dim": 1,
                         "node_vocab": 5, "edge_vocab": 3, "heads": 4, "mpnn": mpnn,
                         "attn_dropout": 0.2, "pair": {"rrwp": {"num_steps": 6}}})
    assert isinstance(model, GRIT)
    model.train()
    out = model(batch)
    assert out.shape == (5, 1)
    out.pow(2).sum().backward()
    missing = [n for n, p in model.named_parameters() if p.grad is None or not p.grad.any()]
    assert not missing


def test_gps_takes_the_grit_attention_beside_gine():
    batch = grit_batch(molecules(3))
    model = build_model({"model": "gps", "attention": "grit", "channels": 8, "layers": 2,
                         "node_vocab": 5, "edge_vocab": 3, "heads": 2,
                         "pair": {"rrwp": {"num_steps": 6}}})
    assert model.layers[0].conv is not None and isinstance(model.layers[0].attn, GRITAttention)
    assert model(batch).shape == (3, 1)


def permuted(graph: Data, perm: torch.Tensor) -> Data:
    inv = torch.argsort(perm)
    return Data(x=graph.x[perm], edge_index=inv[graph.edge_index], edge_attr=graph.edge_attr,
                num_nodes=graph.num_nodes)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_grit_is_invariant_to_node_order(seed):
    """Relabelling the nodes of every graph (the RRWP pairs recomputed on the relabelled
    graphs) leaves the graph outputs unchanged."""
    graphs = molecules(3, seed=seed)
    rng = np.random.default_rng(seed)
    relabelled = [permuted(g, torch.from_numpy(rng.permutation(g.num_nodes))) for g in graphs]
    torch.manual_seed(0)
    model = build_model({"model": "grit", "channels": 8, "layers": 2, "node_vocab": 5,
                         "edge_vocab": 3, "heads": 2, "pair": {"rrwp": {"num_steps": 5}}})
    model.eval()
    with torch.no_grad():
        a = model(grit_batch(graphs, 5))
        b = model(grit_batch(relabelled, 5))
    torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


def test_grit_graph_output_does_not_depend_on_its_batch():
    graphs = molecules(4, seed=3)
    torch.manual_seed(0)
    model = build_model({"model": "grit", "channels": 8, "layers": 2, "node_vocab": 5,
                         "edge_vocab": 3, "heads": 2, "pair": {"spd": {"max_dist": 4}}})
    model.eval()
    spd = SPD(4)
    with torch.no_grad():
        together = model(Batch.from_data_list([spd(g) for g in graphs]))
        alone = torch.cat([model(Batch.from_data_list([spd(g)])) for g in graphs])
    torch.testing.assert_close(together, alone, atol=1e-5, rtol=1e-5)


def test_grit_bad_configurations():
    with pytest.raises(ValueError, match="attention='grit' needs a PairFeatureEncoder with 8 "
                                         "channels as pair_encoder"):
        build_model({"model": "grit", "channels": 8, "layers": 1, "node_vocab": 5})
    with pytest.raises(ValueError, match="GRIT's attention is 'grit', got 'multihead'"):
        GRIT(8, 1, 1, node_vocab=5, attention="multihead")
    with pytest.raises(ValueError, match="a PairFeatureEncoder feeds attention='grit'"):
        build_model({"model": "gps", "channels": 8, "layers": 1, "node_vocab": 5,
                     "pair_encoder": PairFeatureEncoder(5, 8)})
    layer = GPSLayer(8, None, GRITAttention(8, heads=2))
    with pytest.raises(ValueError, match="GRIT's attention needs pair_attr"):
        layer(torch.randn(3, 8), torch.tensor([[0, 1], [1, 0]]))
    # pairs cut to fewer hops than an edge spans: the edge embedding has no pair to go to
    graph = RRWP(4, hops=0)(molecules(1)[0])
    model = build_model({"model": "grit", "channels": 8, "layers": 1, "node_vocab": 5,
                         "edge_vocab": 3, "heads": 2, "pair": {"rrwp": {"num_steps": 4}}})
    with pytest.raises(ValueError, match="an edge of edge_index is not among the pairs"):
        model(Batch.from_data_list([graph]))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_compiled_kernels_equal_the_torch_formulation(dtype):
    """The compiled CPU kernels (graphpe.ops.pair_attention) give the torch formulation's
    outputs and gradients, for the inputs and every parameter; some pairs sit on ReLU's
    inactive side and some logits at the clamp."""
    torch.manual_seed(1)
    sizes = [3, 6, 1, 5]
    ptr = np.concatenate([[0], np.cumsum(sizes)])
    index = torch.cat([torch.stack(torch.meshgrid(torch.arange(n), torch.arange(n),
                                                  indexing="ij")).reshape(2, -1) + int(ptr[g])
                       for g, n in enumerate(sizes)], 1)
    x = torch.randn(int(ptr[-1]), 8, dtype=dtype)
    pair_attr = torch.randn(index.size(1), 8, dtype=dtype) * 3
    log_deg = torch.rand(int(ptr[-1]), 1, dtype=dtype)
    results = []
    for use_kernels in (True, False):
        torch.manual_seed(2)
        att = GRITAttention(8, 2, clamp=1.0).to(dtype)
        att.use_kernels = use_kernels
        xi, pi = x.clone().requires_grad_(True), pair_attr.clone().requires_grad_(True)
        nodes, pairs = att(xi, pi, index, log_deg)
        (nodes.sin().sum() + pairs.cos().sum()).backward()
        results.append([nodes, pairs, xi.grad, pi.grad,
                        *(p.grad for p in att.parameters())])
    tol = 1e-10 if dtype == torch.float64 else 2e-5
    for got, want in zip(*results, strict=True):
        torch.testing.assert_close(got, want, atol=tol, rtol=tol)


def test_compiled_kernels_pass_gradcheck():
    from graphpe.layers.grit import _PairScores, _PairWeightedSums

    torch.manual_seed(3)
    n, heads, dim = 4, 2, 3
    index = torch.tensor([[0, 0, 1, 2, 3, 3, 1], [0, 1, 2, 2, 0, 3, 1]])
    q, k, v = (torch.randn(n, heads * dim, dtype=torch.float64, requires_grad=True)
               for _ in range(3))
    ewb = torch.randn(index.size(1), 2 * heads * dim, dtype=torch.float64, requires_grad=True)
    score = torch.randn(dim, heads, dtype=torch.float64, requires_grad=True)
    alpha = torch.rand(index.size(1), heads, dtype=torch.float64, requires_grad=True)
    pair = torch.randn(index.size(1), heads * dim, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda *a: _PairScores.apply(*a, index[0], index[1]), (q, k, ewb, score))
    assert torch.autograd.gradcheck(
        lambda *a: _PairWeightedSums.apply(*a, index[0], index[1], n), (alpha, v, pair))


def test_grit_attends_over_local_pairs_of_larger_graphs():
    """With RRWP(K, hops=r) only the pairs within r hops exist: GRIT attends over those (every
    node has its own pair, so every softmax has a key) and trains."""
    graphs = molecules(3, seed=5, min_nodes=30, max_nodes=40)
    batch = Batch.from_data_list([RRWP(5, hops=2)(g) for g in graphs])
    full = sum(g.num_nodes ** 2 for g in graphs)
    assert batch.rrwp.size(0) < full
    model = build_model({"model": "grit", "channels": 8, "layers": 2, "node_vocab": 5,
                         "edge_vocab": 3, "heads": 2, "pair": {"rrwp": {"num_steps": 5}}})
    out = model(batch)
    assert torch.isfinite(out).all()
    out.sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)
