import networkx as nx
import numpy as np
import pytest
import torch
from torch_geometric.data import Batch, Data

from graphpe.nn import LapPEEncoder, LCPEncoder, RWSEEncoder, SignNetEncoder, SPEEncoder
from graphpe.transforms import LCP, RWSE, LaplacianPE
from tests.conftest import nx_to_data


def lap_batch(graphs, k, keep_trivial=True):
    t = LaplacianPE(k, keep_trivial=keep_trivial)
    return Batch.from_data_list([t(g) for g in graphs])


def test_shapes_and_gradients(families):
    graphs = [g for g in families.values() if g.num_nodes > 0]
    batch = LCP()(RWSE(8)(lap_batch(graphs, 6)))
    for enc in (LapPEEncoder(6, 16), SignNetEncoder(6, 16), SPEEncoder(6, 16),
                RWSEEncoder(8, 16), LCPEncoder(5, 16)):
        enc.train()
        out = enc(batch)
        assert out.shape == (batch.num_nodes, 16), type(enc).__name__
        assert torch.isfinite(out).all()
        out.pow(2).sum().backward()
        for name, p in enc.named_parameters():
            assert p.grad is not None and p.grad.abs().sum() > 0, (type(enc).__name__, name)


def flip_columns(batch, signs):
    flipped = batch.clone()
    flipped.lap_pe = batch.lap_pe * signs
    return flipped


def test_signnet_and_spe_sign_invariance(families):
    batch = lap_batch([families["er23"], families["petersen"], families["tree"]], 6)
    signs = torch.tensor([1.0, -1.0, -1.0, 1.0, -1.0, 1.0])
    for enc in (SignNetEncoder(6, 8), SPEEncoder(6, 8)):
        enc.eval()
        assert torch.allclose(enc(flip_columns(batch, signs)), enc(batch), atol=1e-5)


def test_spe_basis_invariance_in_repeated_eigenspaces():
    # C8: eigenvalues 0, (a, a), (b, b), (c, c), 2 -- k = 5 keeps the first two pairs whole
    data = LaplacianPE(5, keep_trivial=True)(nx_to_data(nx.cycle_graph(8)))
    vals = data.lap_eigvals[0]
    assert abs(vals[1] - vals[2]) < 1e-6 and abs(vals[3] - vals[4]) < 1e-6
    rotated = data.clone()
    theta, phi = 0.7, -1.9
    rot = torch.eye(5)
    rot[1:3, 1:3] = torch.tensor([[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]])
    rot[3:5, 3:5] = torch.tensor([[np.cos(phi), np.sin(phi)], [-np.sin(phi), np.cos(phi)]])
    rotated.lap_pe = data.lap_pe @ rot
    enc = SPEEncoder(5, 8).eval()
    assert torch.allclose(enc(rotated), enc(data), atol=1e-5)
    # raw LapPE is not invariant to that rotation
    assert (rotated.lap_pe - data.lap_pe).abs().max() > 0.1


def test_spe_is_stable_where_lappe_is_not():
    # a weighted 8-cycle whose second and third eigenvalues are nearly equal (split ~1e-3);
    # a 1e-3 change of one weight rotates their eigenvectors by O(1)
    g = nx.cycle_graph(8)
    ei = nx_to_data(g).edge_index
    base = torch.ones(ei.size(1))
    base[(ei[0] == 0) & (ei[1] == 1) | (ei[0] == 1) & (ei[1] == 0)] = 1.002
    perturbed = base.clone()
    perturbed[(ei[0] == 4) & (ei[1] == 5) | (ei[0] == 5) & (ei[1] == 4)] = 1.003
    t = LaplacianPE(5, keep_trivial=True)
    a = t(Data(edge_index=ei, edge_weight=base, num_nodes=8))
    b = t(Data(edge_index=ei, edge_weight=perturbed, num_nodes=8))
    assert 0 < float(a.lap_eigvals[0, 2] - a.lap_eigvals[0, 1]) < 5e-3
    torch.manual_seed(0)
    enc = SPEEncoder(5, 8).eval()
    with torch.no_grad():
        spe_a, spe_b = enc(a), enc(b)
    lap_change = float((a.lap_pe - b.lap_pe).norm() / a.lap_pe.norm())
    spe_change = float((spe_a - spe_b).norm() / spe_a.norm())
    assert lap_change > 0.1
    assert lap_change / spe_change > 20, (lap_change, spe_change)


def test_lappe_random_flips_only_in_training(families):
    batch = lap_batch([families["er23"]], 4, keep_trivial=False)
    enc = LapPEEncoder(4, 8)
    enc.eval()
    assert torch.equal(enc(batch), enc(batch))


def test_bad_configurations():
    with pytest.raises(ValueError, match="k must be a positive int"):
        LapPEEncoder(0, 8)
    with pytest.raises(ValueError, match="pooling must be one of"):
        LapPEEncoder(4, 8, pooling="max")
    with pytest.raises(ValueError, match="m must be a positive int"):
        SPEEncoder(4, 8, m=0)
    with pytest.raises(ValueError, match="channels must be a positive int"):
        SignNetEncoder(4, 0)
    with pytest.raises(ValueError, match="expected lap_pe"):
        LapPEEncoder(4, 8)(Data(lap_pe=torch.zeros(3, 5), lap_eigvals=torch.zeros(3, 5),
                                num_nodes=3))
    with pytest.raises(ValueError, match="expected rwse"):
        RWSEEncoder(8, 4)(Data(rwse=torch.zeros(3, 4), num_nodes=3))


def test_a_missing_encoding_says_which_transform_writes_it():
    import pytest
    import torch
    from torch_geometric.data import Data

    from graphpe.nn import LapPEEncoder, RFPEncoder, RWSEEncoder

    data = Data(edge_index=torch.tensor([[0, 1], [1, 0]]), num_nodes=2)
    for encoder, message in ((RWSEEncoder(16, 8), r"no attribute 'rwse': compute it first with "
                              r"graphpe.transforms.RWSE\(16, attr_name='rwse'\)"),
                             (LapPEEncoder(4, 8), r"no attribute 'lap_pe': compute it first "
                              r"with graphpe.transforms.LaplacianPE\(k=4"),
                             (RFPEncoder(8, dim=4, steps=2), "no attribute 'rfp'")):
        with pytest.raises(ValueError, match=message):
            encoder(data)


def test_spectral_structural_encoders():
    import pytest
    import torch
    from torch_geometric.data import Batch, Data

    from graphpe.nn import ElstaticSEEncoder, HKdiagSEEncoder
    from graphpe.synthetic import molecule_like_graphs
    from graphpe.transforms import ElstaticSE, HKdiagSE

    batch = Batch.from_data_list(molecule_like_graphs(6, min_nodes=3, max_nodes=10, seed=1))
    batch = ElstaticSE()(HKdiagSE([1, 2, 4])(batch))
    for enc in (HKdiagSEEncoder(3, 8), ElstaticSEEncoder(8)):
        out = enc(batch)
        assert out.shape == (batch.num_nodes, 8) and torch.isfinite(out).all()
        out.pow(2).sum().backward()
        assert all(p.grad is not None for p in enc.parameters())
    data = Data(edge_index=torch.tensor([[0, 1], [1, 0]]), num_nodes=2)
    with pytest.raises(ValueError, match=r"no attribute 'hkdiag': compute it first with "
                                         r"graphpe.transforms.HKdiagSE\(<3 times>, "
                                         r"attr_name='hkdiag'\)"):
        HKdiagSEEncoder(3, 8)(data)
    with pytest.raises(ValueError, match=r"no attribute 'elstatic': compute it first with "
                                         r"graphpe.transforms.ElstaticSE\(attr_name='elstatic'\)"):
        ElstaticSEEncoder(8)(data)
    with pytest.raises(ValueError, match=r"expected hkdiag \[N, 4\], got \[20, 3\]"):
        HKdiagSEEncoder(4, 8)(Data(hkdiag=torch.zeros(20, 3), num_nodes=20))


def test_spe_batch_norm_ignores_padding_and_single_rows(families):
    """SPE's rho normalizes over real entries only: a graph's output in eval() is the same
    alone as next to a larger graph (whose size sets the padding); one node trains."""
    graphs = [families["petersen"], families["path7"]]
    t = LaplacianPE(4, keep_trivial=True, attr_names=("spe_pe", "spe_eigvals", "spe_mask"))
    enc = SPEEncoder(4, 8, attr_names=("spe_pe", "spe_eigvals", "spe_mask"))
    enc.train()
    enc(t(Batch.from_data_list(graphs)))  # moves the running statistics off their start
    enc.eval()
    both = enc(t(Batch.from_data_list(graphs)))
    alone = enc(t(Batch.from_data_list(graphs[1:])))
    assert torch.allclose(both[graphs[0].num_nodes:], alone, atol=1e-5)
    enc.train()
    single = t(Batch.from_data_list([Data(edge_index=torch.zeros(2, 0, dtype=torch.long),
                                          num_nodes=1)]))
    assert enc(single).shape == (1, 8)
    assert SPEEncoder(4, 8, batch_norm=False).rho.norms is None


def test_spe_output_norm_keeps_the_scale_independent_of_graph_size():
    """rho's sum over a graph's n columns grows with n; with ``output_norm`` (the default) the
    pooled features reach the output map standardized (BatchNorm, training mode), whatever
    the sizes, and ``output_norm=False`` keeps the paper's raw sum."""
    graphs = [nx_to_data(nx.cycle_graph(n)) for n in (8, 41, 80)]
    batch = lap_batch(graphs, 7)
    torch.manual_seed(0)
    enc = SPEEncoder(7, 8, rho_hidden=16).train()
    seen = {}
    enc.out.register_forward_hook(lambda m, inputs, out: seen.update(h=inputs[0].detach()))
    enc(batch)
    h = seen["h"]
    # float32 BatchNorm: the pooled sums are large next to their spread, so the normalized
    # mean is zero only to ~1e-5 (it moves at that level with rounding-level changes of the
    # eigenvectors)
    assert torch.allclose(h.mean(0), torch.zeros(16), atol=1e-4)
    assert torch.allclose(h.var(0, unbiased=False), torch.ones(16), atol=1e-3)
    raw = SPEEncoder(7, 8, rho_hidden=16, output_norm=False).train()
    assert raw.out_norm is None and len(list(raw.parameters())) == len(list(enc.parameters())) - 2


def _dense_spe(enc: SPEEncoder, batch) -> torch.Tensor:
    """SPE written graph by graph from its formula, dense: ``W = V diag(phi(lambda)) V^T``
    ``[n, n, m]``, rho's GIN layers as ``(1 + eps) H + A H`` over the node axis of
    ``H [n, n, C]`` with the dense adjacency (``A[v, u]`` counts the edges ``u -> v``), the
    batch norms over the real entries of all graphs together, the sum over columns, the
    output norm and map. The encoder's batched pair-row layout must give the same."""
    graphs = []
    for g in range(batch.num_graphs):
        lo, hi = int(batch.ptr[g]), int(batch.ptr[g + 1])
        vecs, vals = batch.lap_pe[lo:hi], batch.lap_eigvals[lo]
        weights = enc.phi(vals.unsqueeze(-1)) * batch.lap_mask[lo].unsqueeze(-1)
        keep = (batch.edge_index[0] >= lo) & (batch.edge_index[0] < hi)
        src, dst = batch.edge_index[:, keep] - lo
        adj = torch.zeros(hi - lo, hi - lo, dtype=vecs.dtype).index_put_(
            (dst, src), torch.ones(src.numel(), dtype=vecs.dtype), accumulate=True)
        graphs.append((torch.einsum("ik,km,jk->ijm", vecs, weights, vecs), adj))
    rho = enc.rho
    hs = [w for w, _ in graphs]
    for layer, mlp in enumerate(rho.mlps):
        hs = [mlp((1 + rho.eps[layer]) * h + torch.einsum("iu,ujc->ijc", adj, h))
              for h, (_, adj) in zip(hs, graphs, strict=True)]
        if layer < len(rho.mlps) - 1:
            norm = rho.norms[layer]
            flat = norm(torch.cat([h.reshape(-1, h.size(-1)) for h in hs]))
            sizes = [h.shape[0] * h.shape[1] for h in hs]
            hs = [f.view_as(h).relu() for f, h in zip(flat.split(sizes), hs, strict=True)]
    return enc.out(enc.out_norm(torch.cat([h.sum(1) for h in hs])))


@pytest.mark.parametrize("training", [True, False])
def test_spe_equals_its_dense_per_graph_formula(training):
    """Outputs and every gradient of SPEEncoder (pair rows of all graphs in one GIN, on the
    compiled CPU aggregation) against the graph-by-graph dense formula, float64, on graphs of
    different sizes (one smaller than k, so masked eigenpairs) with directed edges."""
    from graphpe.synthetic import molecule_like_graphs

    graphs = molecule_like_graphs(5, min_nodes=3, max_nodes=12, seed=3)
    graphs[1].edge_index = graphs[1].edge_index[:, ::2]  # one direction of each edge
    batch = lap_batch(graphs, 6)
    assert bool((~batch.lap_mask).any())
    batch.lap_pe, batch.lap_eigvals = batch.lap_pe.double(), batch.lap_eigvals.double()
    torch.manual_seed(0)
    enc = SPEEncoder(6, 8, m=4, rho_hidden=16, rho_layers=3).double()
    with torch.no_grad():
        enc.rho.eps.copy_(torch.tensor([0.2, -0.1, 0.4]))
    if not training:  # running statistics away from their start
        enc.train()(batch)
    enc.train(training)
    ref = SPEEncoder(6, 8, m=4, rho_hidden=16, rho_layers=3).double()
    ref.load_state_dict(enc.state_dict())
    ref.train(training)
    got, want = enc(batch), _dense_spe(ref, batch)
    assert torch.allclose(got, want, atol=1e-10), float((got - want).abs().max())
    grad = torch.randn_like(got)
    got_grads = torch.autograd.grad(got, list(enc.parameters()), grad)
    want_grads = torch.autograd.grad(want, list(ref.parameters()), grad)
    for (name, _), a, b in zip(enc.named_parameters(), got_grads, want_grads, strict=True):
        assert torch.allclose(a, b, atol=1e-9), name
    for a, b in zip(enc.buffers(), ref.buffers(), strict=True):
        assert torch.allclose(a.double(), b.double(), atol=1e-12)


def graphormer_edge_bias(data: Data, table: torch.Tensor, hop_weight: torch.Tensor
                         ) -> torch.Tensor:
    """Graphormer v1's edge encoding of one graph whose shortest paths are unique (a tree),
    written densely from networkx's paths: per pair, the edge types along its path embedded
    (``table [types, heads]``), each hop's vector times its matrix, summed over the first
    ``H`` hops and divided by ``clamp(d, 1, H)``; pairs without a path 0."""
    import networkx as nx

    n, hops, heads = data.num_nodes, hop_weight.size(0), table.size(1)
    g = nx.Graph()
    g.add_nodes_from(range(n))
    kind = {}
    for e, (u, v) in enumerate(data.edge_index.t().tolist()):
        g.add_edge(u, v)
        kind.setdefault((u, v), int(data.edge_attr[e]))
    out = torch.zeros(n, n, heads, dtype=torch.float64)
    for i, paths in nx.all_pairs_shortest_path(g):
        for j, path in paths.items():
            d = len(path) - 1
            for t in range(min(d, hops)):
                u, v = path[t], path[t + 1]
                out[i, j] += table[kind.get((u, v), kind.get((v, u)))] @ hop_weight[t]
            out[i, j] /= min(max(d, 1), hops)
    return out.reshape(n * n, heads)


def test_graphormer_edge_encoding_equals_its_dense_formula_and_batches():
    """SPD(path_hops=H) + PairBiasEncoder(path_hops=H) on trees (one shortest path per pair,
    so any path rule gives the same) and a forest piece: Graphormer's formula per graph, and
    a collated batch (graph-local edge ids offset by the encoder) gives each graph's rows."""
    import networkx as nx

    from graphpe.nn import PairBiasEncoder
    from graphpe.transforms import SPD

    trees = [nx.random_labeled_tree(n, seed=n) for n in (1, 2, 7, 11)]
    trees.append(nx.disjoint_union(nx.path_graph(4), nx.star_graph(3)))
    graphs = []
    for k, tree in enumerate(trees):
        data = nx_to_data(tree)
        data.edge_attr = torch.arange(data.edge_index.size(1)) * (k + 1) % 4
        graphs.append(SPD(4, path_hops=3)(data))
    torch.manual_seed(0)
    enc = PairBiasEncoder(1, 2, "spd", num_categories=6, path_hops=3, edge_vocab=4).double()
    batch = Batch.from_data_list(graphs)
    bias, index = enc(batch)
    assert torch.equal(index, batch.spd_index)
    start = 0
    for data in graphs:
        rows = slice(start, start + data.num_nodes ** 2)
        want = graphormer_edge_bias(data, enc.edge_embedding.layer.weight.detach(),
                                    enc.hop_weight.detach())
        want = want + enc.table.weight.detach()[data.spd.clamp(max=5)]
        torch.testing.assert_close(bias[rows].detach(), want, rtol=1e-12, atol=1e-12)
        alone, _ = enc(data)
        torch.testing.assert_close(alone, bias[rows], rtol=0, atol=0)
        start = rows.stop
    bias.square().sum().backward()
    assert enc.hop_weight.grad.abs().sum() > 0
    assert enc.edge_embedding.layer.weight.grad.abs().sum() > 0


def test_graphormer_edge_encoding_reads_continuous_and_multi_column_edges():
    """Continuous edge features go through a linear map, several categorical columns are
    embedded and summed; a path's hops beyond path_hops and pairs with no path add 0."""
    from graphpe.nn import PairBiasEncoder
    from graphpe.transforms import SPD

    data = nx_to_data(nx.path_graph(5))
    data = SPD(6, path_hops=2)(data)
    data.edge_attr = torch.randn(data.edge_index.size(1), 3, dtype=torch.float64)
    enc = PairBiasEncoder(1, 2, "spd", num_categories=8, path_hops=2, edge_dim=3).double()
    bias, _ = enc(data)
    lin = enc.edge_embedding.layer
    w = enc.hop_weight.detach()
    path = data.spd_path
    for p in range(path.size(0)):
        ids = [e for e in path[p].tolist() if e >= 0]
        want = sum((lin(data.edge_attr[e]) @ w[t] for t, e in enumerate(ids)),
                   torch.zeros(2, dtype=torch.float64)) / max(len(ids), 1)
        want = want + enc.table.weight[min(int(data.spd[p]), 7)]
        torch.testing.assert_close(bias[p], want)
    data.edge_attr = torch.randint(0, 3, (data.edge_index.size(1), 2))
    enc = PairBiasEncoder(1, 2, "spd", num_categories=8, path_hops=2, edge_vocab=[3, 3])
    emb = enc.edge_embedding(data.edge_attr)
    torch.testing.assert_close(emb, enc.edge_embedding.layer.weight[data.edge_attr[:, 0]]
                               + enc.edge_embedding.layer.weight[data.edge_attr[:, 1] + 3])
    assert enc(data)[0].shape == (25, 2)


def test_graphormer_edge_encoding_errors():
    from graphpe.nn import PairBiasEncoder
    from graphpe.transforms import SPD

    with pytest.raises(ValueError, match=r"path_hops \(Graphormer's edge encoding\) reads the "
                                         r"edge features: give edge_vocab"):
        PairBiasEncoder(1, 2, "spd", num_categories=4, path_hops=2)
    with pytest.raises(ValueError, match="path_hops must be a non-negative int, got -1"):
        PairBiasEncoder(1, 2, "spd", num_categories=4, path_hops=-1)
    enc = PairBiasEncoder(1, 2, "spd", num_categories=4, path_hops=3, edge_vocab=2)
    data = nx_to_data(nx.path_graph(3))
    data.edge_attr = torch.zeros(data.edge_index.size(1), dtype=torch.long)
    with pytest.raises(ValueError, match=r"expected spd_path \[9, 3\] \(the encoder's "
                                         r"path_hops\), got \[9, 2\]"):
        enc(SPD(2, path_hops=2)(data.clone()))
    with pytest.raises(ValueError, match=r"no attribute 'spd_path': compute it first with "
                                         r"graphpe.transforms.SPD\(path_hops=3"):
        enc(SPD(2)(data.clone()))
    bare = SPD(2, path_hops=3)(data.clone())
    del bare.edge_attr
    with pytest.raises(ValueError, match=r"reads the edge features batch.edge_attr, and the "
                                         r"batch has none"):
        enc(bare)


def test_degree_encoder_embeds_networkx_degrees_clamped():
    """Graphormer's centrality encoding: the vector of each node's degree in networkx's
    directed graph of the edges (duplicates and self loops counted as there), degrees above
    max_degree on the last vector; directed adds in- and out-degree vectors."""
    from graphpe.nn import DegreeEncoder

    edges = [(0, 1), (1, 0), (1, 2), (2, 1), (1, 3), (3, 1), (1, 4), (4, 1), (2, 2), (0, 3)]
    data = Data(edge_index=torch.tensor(edges).t(), num_nodes=6)
    g = nx.MultiDiGraph()
    g.add_nodes_from(range(6))
    g.add_edges_from(edges)
    enc = DegreeEncoder(8, max_degree=3)
    want_out = torch.tensor([min(g.out_degree(i), 3) for i in range(6)])
    torch.testing.assert_close(enc(data), enc.out_degree.weight[want_out])
    directed = DegreeEncoder(8, max_degree=3, directed=True)
    want_in = torch.tensor([min(g.in_degree(i), 3) for i in range(6)])
    torch.testing.assert_close(directed(data), directed.out_degree.weight[want_out]
                               + directed.in_degree.weight[want_in])
    batch = Batch.from_data_list([data, data])
    torch.testing.assert_close(enc(batch), torch.cat([enc(data), enc(data)]))
    with pytest.raises(ValueError, match="max_degree must be a positive int, got 0"):
        DegreeEncoder(8, max_degree=0)


def test_graphormer_from_the_presets():
    """Graphormer's three encodings through one spec list: degree (no transform), SPD with
    the path edges; a GPS without message passing trains on them."""
    from graphpe.encodings import pair_model_config, pe_model_config, resolve_pe, transforms_of
    from graphpe.nn import build_model

    specs = resolve_pe("degree:max_degree=8,spd:max_dist=5:path_hops=3")
    assert [s.transform() is None for s in specs] == [True, False]
    graphs = [nx_to_data(nx.cycle_graph(5)), nx_to_data(nx.path_graph(4))]
    for k, g in enumerate(graphs):
        g.x = torch.zeros(g.num_nodes, dtype=torch.long)
        g.edge_attr = torch.arange(g.edge_index.size(1)) % 3
        g.y = torch.tensor([1.0])
        for t in transforms_of(specs):
            graphs[k] = g = t(g)
    pe = pe_model_config(specs)
    assert pe == {"degree": {"max_degree": 8, "directed": False}}
    model = build_model({"model": "gps", "mpnn": None, "channels": 16, "layers": 2,
                         "out_dim": 1, "node_vocab": 2, "edge_vocab": 3, "heads": 2,
                         "pe": pe, "pair": pair_model_config(specs)})
    assert model.pair_encoder.path_hops == 3
    out = model(Batch.from_data_list(graphs))
    out.sum().backward()
    assert model.pe_encoders[0].out_degree.weight.grad.abs().sum() > 0


def test_spe_refuses_a_graph_whose_pairs_exceed_free_memory(monkeypatch):
    import graphpe.layers.encoders as encoders

    n = 300
    data = LaplacianPE(4, attr_name="lap_pe", keep_trivial=True)(
        nx_to_data(nx.path_graph(n)))
    encoder = SPEEncoder(4, 8, m=4, rho_hidden=8, rho_layers=2)
    need = n * n * encoder.floats_per_pair * 4
    monkeypatch.setattr(encoders, "available_memory_bytes", lambda: need - 1)
    with pytest.raises(ValueError, match=r"^spe: a graph of 300 nodes gives 90,000 node pairs, "
                                         r"about 0\.0 GiB for the encoder with 0\.0 GiB free; "
                                         r"this encoder is for molecule-scale graphs, use "
                                         r"signnet or lap on large graphs$"):
        encoder(data)
    monkeypatch.setattr(encoders, "available_memory_bytes", lambda: need)
    assert encoder(data).shape == (n, 8)
