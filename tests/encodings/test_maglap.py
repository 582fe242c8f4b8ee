import numpy as np
import pytest
import torch
from torch_geometric.data import Batch, Data

from graphpe.encodings import pe_spec, resolve_pe
from graphpe.encodings.maglap import MagLapEncoder, MagLapNodeEncoder, MagneticLaplacianPE
from graphpe.nn.build import build_model
from graphpe.ops.eigen.magnetic import magnetic_eigenpairs
from graphpe.transforms import LaplacianPE, OnTheFlyPE, precompute
from tests.ops.eigen.test_magnetic import (
    assert_same_eigenpairs,
    clusters,
    noisy_batch,
    random_digraph,
)


def complex_pe(data, name="maglap_pe"):
    return torch.view_as_complex(data[name].double().contiguous())


# ---------------------------------------------------------------------------------------------
# The transform against LapPE, batching, the compiled pairs


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("normalization", ["sym", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_q0_equals_laplacian_pe_of_the_symmetrized_graph(seed, normalization, weighted):
    ei, weight, n = random_digraph(300 + seed, sizes=(9, 6), isolated=2, weighted=weighted)
    k = 10
    data = Data(edge_index=ei, edge_weight=weight, num_nodes=n)
    # (the kernels, in float64: tests/ops/eigen/test_magnetic.py)
    ours = MagneticLaplacianPE(k, 0.0, normalization=normalization)(data.clone())
    lap = LaplacianPE(k, normalization=normalization, keep_trivial=True)(data.clone())
    torch.testing.assert_close(ours.maglap_eigvals[:, 0], lap.lap_eigvals, atol=1e-6, rtol=0)
    assert torch.equal(ours.maglap_mask, lap.lap_mask)
    assert ours.maglap_pe[..., 1].abs().max() < 1e-6  # real vectors
    # canonical phases give LapPE's canonical signs: equal where eigenvalues are simple
    assert_same_eigenpairs(lap.lap_eigvals[0].double().numpy(),
                           complex_pe(ours)[:, 0].numpy(),
                           lap.lap_pe.double().numpy().astype(np.complex128))


@pytest.mark.parametrize("dense_max_nodes", [640, 10])  # 10: some graphs on the sparse path
def test_the_transform_writes_the_compiled_pairs(dense_max_nodes):
    ei, weight, ptr = noisy_batch(7, weighted=True)
    data = Batch.from_data_list([
        Data(edge_index=ei[:, (ei[0] >= ptr[g]) & (ei[0] < ptr[g + 1])] - ptr[g],
             edge_weight=weight[(ei[0] >= ptr[g]) & (ei[0] < ptr[g + 1])],
             num_nodes=int(ptr[g + 1] - ptr[g])) for g in range(ptr.numel() - 1)])
    q = (0.1, 0.3)
    pairs = magnetic_eigenpairs(data.edge_index, data.num_nodes, 5, q, ptr=data.ptr,
                                edge_weight=data.edge_weight, kernel="compiled",
                                dense_max_nodes=dense_max_nodes)
    out = MagneticLaplacianPE(5, q, dense_max_nodes=dense_max_nodes)(data)
    assert torch.equal(out.maglap_pe, torch.view_as_real(pairs.eigvecs).float())
    assert torch.equal(out.maglap_eigvals, pairs.eigvals.float()[data.batch])
    assert torch.equal(out.maglap_mask, pairs.mask[data.batch])


@pytest.mark.parametrize("q", [(0.1,), (0.0, 0.15, 0.5)])
def test_a_batch_equals_each_graph_alone_and_small_graphs_are_padded(q):
    graphs = []
    for i, (sizes, isolated) in enumerate([((9,), 0), ((3,), 0), ((), 1), ((7, 5), 2),
                                           ((2,), 0), ((11,), 1)]):
        ei, _, n = random_digraph(400 + i, sizes=sizes, isolated=isolated, p=0.5)
        graphs.append(Data(edge_index=ei, num_nodes=n))
    k = 6
    t = MagneticLaplacianPE(k, q)
    batch = t(Batch.from_data_list([g.clone() for g in graphs]))
    alone = [t(g.clone()) for g in graphs]
    assert batch.maglap_pe.shape == (batch.num_nodes, len(q), k, 2)
    assert batch.maglap_eigvals.shape == (batch.num_nodes, len(q), k)
    assert batch.maglap_mask.shape == (batch.num_nodes, k)
    for g, one in enumerate(alone):
        rows = slice(int(batch.ptr[g]), int(batch.ptr[g + 1]))
        part = {name: batch[name][rows] for name in t.attr_names}
        torch.testing.assert_close(part["maglap_eigvals"], one.maglap_eigvals, atol=1e-6,
                                   rtol=0)
        assert torch.equal(part["maglap_mask"], one.maglap_mask)
        for slot in range(len(q)):
            assert_same_eigenpairs(one.maglap_eigvals[0, slot].double().numpy(),
                                   complex_pe(part)[:, slot].numpy(),
                                   complex_pe(one)[:, slot].numpy())
    small = alone[1]  # 3 nodes: columns 3.. are padding
    assert small.maglap_mask[0].tolist() == [True] * 3 + [False] * 3
    assert not small.maglap_pe[:, :, 3:].any() and not small.maglap_eigvals[:, :, 3:].any()
    one_node = alone[2]
    assert one_node.maglap_eigvals.abs().max() == 0  # Chung's convention: L = [0]
    torch.testing.assert_close(one_node.maglap_pe[0, :, 0], torch.tensor([[1.0, 0.0]] * len(q)))


# ---------------------------------------------------------------------------------------------
# The transform in the pipeline, the encoder, the declaration


def _graphs(count=5, seed=600):
    graphs = []
    for i in range(count):
        ei, _, n = random_digraph(seed + i, sizes=(4 + i, 3), isolated=i % 2)
        graphs.append(Data(edge_index=ei, num_nodes=n, x=torch.zeros(n, 1, dtype=torch.long),
                           y=torch.tensor([float(i)])))
    return graphs


def test_precompute_and_on_the_fly_equal_the_transform():
    graphs = _graphs()
    t = MagneticLaplacianPE(4, (0.1, 0.2))
    expected = t(Batch.from_data_list([g.clone() for g in graphs]))
    out = precompute(graphs, t, batch_size=3, progress=False)
    fly = OnTheFlyPE([t])(Batch.from_data_list(graphs))
    for name in t.attr_names:
        torch.testing.assert_close(Batch.from_data_list(out)[name], expected[name],
                                   atol=1e-6, rtol=0)
        torch.testing.assert_close(fly[name], expected[name], atol=1e-6, rtol=0)
    config = {"model": "gps", "channels": 8, "layers": 1, "node_vocab": 1, "heads": 2,
              "pe": {"maglap": {"k": 4, "q": [0.1, 0.2]}}}
    model = torch.nn.Sequential(OnTheFlyPE([t]), build_model(config))
    result = model(Batch.from_data_list(graphs))
    result.sum().backward()
    assert result.shape == (len(graphs), 1)


def _double_encoder(q_count, k):
    torch.manual_seed(0)
    return MagLapEncoder(k, q_count, 6, m=4, rho_hidden=8).double().eval()


def test_the_encoder_is_phase_basis_and_permutation_invariant():
    k, q = 6, (0.0, 0.2)
    ei, _, n = random_digraph(700, sizes=(5, 4), isolated=2)  # q = 0: eigenvalue 0 is 4-fold
    data = MagneticLaplacianPE(k, q)(Data(edge_index=ei, num_nodes=n))
    encoder = _double_encoder(len(q), k)
    out = encoder(data)
    assert out.shape == (n, 6)
    vecs = complex_pe(data)  # [n, Q, k]
    vals = data.maglap_eigvals[0].double()
    gen = torch.Generator().manual_seed(1)
    # any unit factor per column, and any unitary map within each eigenspace kept whole
    turn = torch.polar(torch.ones(len(q), k, dtype=torch.float64),
                       torch.rand(len(q), k, generator=gen, dtype=torch.float64) * 6.28)
    mixed = vecs * turn
    for slot in range(len(q)):
        for run in clusters(vals[slot].numpy(), gap=1e-5):
            if len(run) > 1 and run[-1] < k - 1:
                a = torch.randn(len(run), len(run), dtype=torch.complex128, generator=gen)
                unitary, _ = torch.linalg.qr(a)
                mixed[:, slot, list(run)] = mixed[:, slot, list(run)] @ unitary
    assert any(len(r) > 1 for r in clusters(vals[0].numpy(), gap=1e-5))  # the test bites
    other = data.clone()
    other.maglap_pe = torch.view_as_real(mixed).contiguous()
    torch.testing.assert_close(encoder(other), out, atol=1e-10, rtol=0)
    # relabelling the nodes permutes the rows
    perm = torch.randperm(n, generator=gen)
    inv = torch.argsort(perm)
    relabelled = Data(edge_index=inv[ei], num_nodes=n, maglap_pe=data.maglap_pe[perm],
                      maglap_eigvals=data.maglap_eigvals[perm], maglap_mask=data.maglap_mask[perm])
    torch.testing.assert_close(encoder(relabelled), out[perm], atol=1e-10, rtol=0)


def test_the_encoder_reads_a_batch_as_each_graph_alone():
    graphs = [MagneticLaplacianPE(4, (0.1, 0.3))(g) for g in _graphs(3)]
    encoder = _double_encoder(2, 4)
    batch = encoder(Batch.from_data_list(graphs))
    alone = torch.cat([encoder(Batch.from_data_list([g])) for g in graphs])
    torch.testing.assert_close(batch, alone, atol=1e-10, rtol=0)


def test_the_declaration_builds_transform_encoder_and_model():
    spec = resolve_pe("maglap:q=0.05/0.1/0.15:k=4")
    (spec,) = spec
    assert spec.q == (0.05, 0.1, 0.15) and spec.k == 4
    assert spec == pe_spec("maglap", q=[0.05, 0.1, 0.15], k=4)
    assert pe_spec("maglap", q=0.2).q == (0.2,)
    t = spec.transform()
    assert isinstance(t, MagneticLaplacianPE) and t.q == (0.05, 0.1, 0.15)
    graphs = [t(g) for g in _graphs(3)]
    config = {"model": "gps", "channels": 8, "layers": 1, "node_vocab": 1, "heads": 2,
              "pe": {"maglap": spec.settings}}
    model = build_model(config)
    out = model(Batch.from_data_list(graphs))
    assert out.shape == (3, 1) and torch.isfinite(out).all()
    # the defaults: {"maglap": {}}
    default = [pe_spec("maglap").transform()(g) for g in _graphs(2)]
    out = build_model({**config, "pe": {"maglap": {}}})(Batch.from_data_list(default))
    assert out.shape == (2, 1) and torch.isfinite(out).all()
    with pytest.raises(ValueError, match=r"expected maglap_pe \[N, 3, 8, 2\], got \[.*, 3, 4, 2\]"):
        build_model({**config, "pe": {"maglap": {**spec.settings, "k": 8}}})(
            Batch.from_data_list(graphs))


def test_bad_settings_and_inputs_name_the_problem():
    for bad in (-0.1, 0.6, [], [0.1, 0.7], True, "0.1", float("nan")):
        with pytest.raises(ValueError, match=r"^q must be a number in \[0, 0.5\] or a non-empty "
                                             r"list of them, got "):
            MagneticLaplacianPE(4, bad)
    with pytest.raises(ValueError, match="^k must be a positive int, got 0$"):
        MagneticLaplacianPE(0)
    with pytest.raises(ValueError, match=r"^normalization must be one of \('sym', 'none'\), "
                                         r"got 'rw'$"):
        MagneticLaplacianPE(normalization="rw")
    with pytest.raises(ValueError, match="^relative_q must be True or False, got 'yes'$"):
        MagneticLaplacianPE(relative_q="yes")
    with pytest.raises(ValueError, match="both name 'a'"):
        MagneticLaplacianPE(attr_names=("a", "a", "b"))
    with pytest.raises(ValueError, match=r"^maglap: q must be a number in \[0, 0.5\]"):
        pe_spec("maglap", q=[0.1, 1.0])
    with pytest.raises(ValueError, match="the batch has no attribute 'maglap_pe'"):
        MagLapEncoder(4, 1, 8)(Data(edge_index=torch.zeros(2, 0, dtype=torch.long),
                                    num_nodes=2))
    assert repr(MagneticLaplacianPE(3, (0.1, 0.2))) == (
        "MagneticLaplacianPE(k=3, q=(0.1, 0.2), relative_q=False, normalization='sym', "
        "attr_names=('maglap_pe', 'maglap_eigvals', 'maglap_mask'), dense_max_nodes=640)")
    assert repr(pe_spec("maglap", k=3)) == (
        "MagLapSpec(k=3, q=[0.1], relative_q=False, normalization='sym', nodewise=False, m=8, "
        "rho_hidden=32, rho_layers=2, hidden=16)")
    with pytest.raises(ValueError, match="^maglap: nodewise must be True or False, got 'yes'$"):
        pe_spec("maglap", nodewise="yes")
    with pytest.raises(ValueError, match="^hidden must be a positive int, got 0$"):
        MagLapNodeEncoder(4, 1, 8, hidden=0)
    with pytest.raises(ValueError,
                       match=r"^expected maglap_pe \[N, 1, 4, 2\], got \[3, 1, 5, 2\]$"):
        MagLapNodeEncoder(4, 1, 8)(Data(maglap_pe=torch.zeros(3, 1, 5, 2), num_nodes=3))


# ---------------------------------------------------------------------------------------------
# The node-wise encoder (MagLapNet), for one large graph


def _node_encoder(q_count, k, hidden=5):
    torch.manual_seed(0)
    return MagLapNodeEncoder(k, q_count, 6, hidden=hidden).double().eval()


def test_the_node_encoder_equals_its_formula_per_node():
    k, q = 5, (0.1, 0.25)
    ei, _, n = random_digraph(710, sizes=(6, 3), isolated=1)
    small = Data(edge_index=torch.tensor([[0, 1], [1, 2]]), num_nodes=3)  # 3 < k: padded
    data = Batch.from_data_list([MagneticLaplacianPE(k, q)(g) for g in
                                 (Data(edge_index=ei, num_nodes=n), small)])
    n = data.num_nodes
    assert not data.maglap_mask.all()
    encoder = _node_encoder(len(q), k)
    out = encoder(data)
    phi, rho = encoder.phi, encoder.rho
    vecs, vals = data.maglap_pe.double(), data.maglap_eigvals.double()
    for i in range(n):
        parts = []
        for slot in range(len(q)):
            for j in range(k):
                x = vecs[i, slot, j]
                h = torch.cat([phi(x) + phi(-x), vals[i, slot, j:j + 1]])
                parts.append(h if data.maglap_mask[i, j] else torch.zeros_like(h))
        torch.testing.assert_close(out[i], rho(torch.cat(parts)), atol=1e-12, rtol=0)


def test_the_node_encoder_is_sign_invariant_and_permutation_equivariant():
    k, q = 4, (0.2,)
    graphs = [MagneticLaplacianPE(k, q)(g) for g in _graphs(3)]
    batch = Batch.from_data_list(graphs)
    encoder = _node_encoder(len(q), k)
    out = encoder(batch)
    # each eigenvector's sign, and whatever sits in a padded column
    gen = torch.Generator().manual_seed(2)
    signs = torch.randint(0, 2, (1, len(q), k, 1), generator=gen).double() * 2 - 1
    other = batch.clone()
    other.maglap_pe = batch.maglap_pe.double() * signs
    other.maglap_pe[~batch.maglap_mask[:, None, :].expand(-1, len(q), -1)] = 7.0
    torch.testing.assert_close(encoder(other), out, atol=1e-12, rtol=0)
    # rows are nodes: a batch is each graph alone, a permutation permutes the rows
    alone = torch.cat([encoder(Batch.from_data_list([g])) for g in graphs])
    torch.testing.assert_close(out, alone, atol=1e-12, rtol=0)
    perm = torch.randperm(batch.num_nodes, generator=gen)
    moved = Data(maglap_pe=batch.maglap_pe[perm], maglap_eigvals=batch.maglap_eigvals[perm],
                 maglap_mask=batch.maglap_mask[perm], num_nodes=batch.num_nodes)
    torch.testing.assert_close(encoder(moved), out[perm], atol=1e-12, rtol=0)


def test_nodewise_maglap_trains_on_a_graph_past_the_pairwise_encoder():
    (spec,) = resolve_pe("maglap:k=4:nodewise=true:hidden=8")
    assert isinstance(spec.encoder(16), MagLapNodeEncoder)
    assert isinstance(pe_spec("maglap", k=4).encoder(16), MagLapEncoder)
    # 200,000 nodes of one graph: the pairwise encoder's n^2 rows would be 4e10
    n, gen = 200_000, torch.Generator().manual_seed(3)
    src = torch.arange(n - 1)
    graph = Data(edge_index=torch.stack([src, src + 1]), num_nodes=n,
                 x=torch.zeros(n, 1, dtype=torch.long), y=torch.randint(0, 3, (n,)),
                 maglap_pe=torch.randn(n, 1, 4, 2, generator=gen) / n ** 0.5,
                 maglap_eigvals=torch.rand(1, 1, 4, generator=gen).expand(n, 1, 4),
                 maglap_mask=torch.ones(n, 4, dtype=torch.bool))
    config = {"model": "gcn", "channels": 16, "layers": 2, "node_vocab": 1, "out_dim": 3,
              "task": "node_classification", "pe": {"maglap": spec.settings}}
    model = build_model(config)
    out = model(Batch.from_data_list([graph]))
    torch.nn.functional.cross_entropy(out, graph.y).backward()
    assert out.shape == (n, 3) and torch.isfinite(out).all()
    grads = [p.grad for p in model.parameters() if p.requires_grad]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)


def test_the_pairwise_encoder_refuses_a_graph_past_free_memory(monkeypatch):
    import graphpe.layers.encoders as encoders

    k, q = 4, (0.0, 0.25)
    ei, _, n = random_digraph(5, sizes=(120,), p=0.05, isolated=0)
    data = MagneticLaplacianPE(k, q)(Data(edge_index=ei, num_nodes=n))
    encoder = MagLapEncoder(k, len(q), 6, m=4, rho_hidden=8)
    need = n * n * encoder.floats_per_pair * 4
    monkeypatch.setattr(encoders, "available_memory_bytes", lambda: need - 1)
    with pytest.raises(ValueError, match=r"^maglap: a graph of 120 nodes gives 14,400 node "
                                         r"pairs, .* use maglap:nodewise=true on large graphs$"):
        encoder(data)
    monkeypatch.setattr(encoders, "available_memory_bytes", lambda: need)
    assert encoder(data).shape == (n, 6)
