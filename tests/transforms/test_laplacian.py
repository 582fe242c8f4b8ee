import pytest
import torch
from torch_geometric.data import Batch, Data
from torch_geometric.transforms import AddLaplacianEigenvectorPE, Compose

from graphpe.ops import laplacian
from graphpe.transforms import RWSE, LaplacianPE


def test_writes_attributes_on_data(families):
    data = families["er23"]
    out = LaplacianPE(k=5)(data)
    assert out.lap_pe.shape == (23, 5) and out.lap_pe.dtype == torch.float32
    assert out.lap_eigvals.shape == (23, 5) and out.lap_mask.dtype == torch.bool
    assert torch.all(out.lap_eigvals == out.lap_eigvals[0])  # graph-level values on every node
    assert "lap_pe" not in data  # the input is not modified


def test_batch_equals_per_graph_eigenvalues_and_masks(families):
    graphs = list(families.values())
    t = LaplacianPE(k=6)
    batched = t(Batch.from_data_list(graphs))
    single = Batch.from_data_list([t(g) for g in graphs])
    assert torch.allclose(batched.lap_eigvals, single.lap_eigvals, atol=1e-6)
    assert torch.equal(batched.lap_mask, single.lap_mask)
    # eigenvectors agree wherever the eigenvalue is simple in the whole spectrum (else only the
    # subspace is defined: Petersen's 6th eigenvalue is 4-fold, cut by the selection)
    for g, data in enumerate(graphs):
        rows = slice(int(batched.ptr[g]), int(batched.ptr[g + 1]))
        if rows.stop == rows.start:
            continue
        spectrum = torch.linalg.eigvalsh(laplacian(data.edge_index, data.num_nodes).to_dense())
        vals = single.lap_eigvals[rows][0]
        for j in range(6):
            if not single.lap_mask[rows][0, j]:
                continue
            if torch.sort((spectrum - vals[j]).abs()).values[1] > 1e-4:
                assert torch.allclose(batched.lap_pe[rows, j], single.lap_pe[rows, j], atol=1e-5)


def test_matches_pyg_eigenvalue_subspace_on_connected_graph(families):
    data = families["er23"]
    ours = LaplacianPE(k=4)(data).lap_pe
    ref = AddLaplacianEigenvectorPE(k=4, is_undirected=True)(data.clone()).laplacian_eigenvector_pe
    # PyG flips signs at random; compare up to sign per column
    for j in range(4):
        a, b = ours[:, j], ref[:, j].float()
        assert min((a - b).abs().max(), (a + b).abs().max()) < 1e-4


def test_random_signs_seeded(families):
    data = families["er31"]
    a = LaplacianPE(k=4, sign="random", seed=3)
    b = LaplacianPE(k=4, sign="random", seed=3)
    first_a, first_b = a(data).lap_pe, b(data).lap_pe
    assert torch.equal(first_a, first_b)
    second = a(data).lap_pe  # later calls draw new signs from the same stream
    assert torch.equal(second.abs(), first_a.abs())
    assert torch.equal(b(data).lap_pe, second)


def test_compose_repr_and_custom_names(families):
    t = Compose([LaplacianPE(k=3, attr_names=("pe", "ev", "m")), RWSE(4)])
    out = t(families["cycle8"])
    assert {"pe", "ev", "m", "rwse"} <= set(out.keys())
    assert repr(LaplacianPE(k=3)) == (
        "LaplacianPE(k=3, normalization='sym', keep_trivial=False, sign='canonical', seed=None, "
        "pad_value=0.0, attr_names=('lap_pe', 'lap_eigvals', 'lap_mask'), dense_max_nodes=640, "
        "sparse_solver='auto', eigh_backend='auto')"
    )


def test_bad_arguments():
    with pytest.raises(ValueError, match="k must be a positive int"):
        LaplacianPE(k=0)
    with pytest.raises(ValueError, match="normalization must be one of"):
        LaplacianPE(k=2, normalization="bogus")
    with pytest.raises(ValueError, match="sign must be one of"):
        LaplacianPE(k=2, sign="bogus")
    with pytest.raises(ValueError, match=r"^sparse_solver must be one of \('auto', 'chebyshev', "
                                         r"'lanczos', 'shift_invert', 'arpack'\), "
                                         r"got 'lobpcg'$"):
        LaplacianPE(k=2, sparse_solver="lobpcg")
    with pytest.raises(ValueError, match=r"^eigh_backend must be one of \('auto', 'torch', "
                                         r"'cupy', 'host'\), got 'magma'$"):
        LaplacianPE(k=2, eigh_backend="magma")
    with pytest.raises(ValueError, match="NaN or infinite"):
        LaplacianPE(k=2)(Data(edge_index=torch.tensor([[0], [1]]), num_nodes=2,
                              edge_weight=torch.tensor([float("nan")])))


def test_zero_node_graph_and_graph_without_edges():
    out = LaplacianPE(k=3)(Data(edge_index=torch.zeros(2, 0, dtype=torch.long), num_nodes=0))
    assert out.lap_pe.shape == (0, 3)
    out = LaplacianPE(k=3)(Data(num_nodes=4))
    assert torch.equal(out.lap_pe, torch.zeros(4, 3)) and not out.lap_mask.any()


def test_data_with_batch_vector_but_no_ptr(families):
    graphs = [families["cycle8"], families["er10"]]
    batch = Batch.from_data_list(graphs)
    data = Data(edge_index=batch.edge_index, num_nodes=batch.num_nodes, batch=batch.batch)
    a = LaplacianPE(k=3)(data)
    b = LaplacianPE(k=3)(batch)
    assert torch.allclose(a.lap_eigvals, b.lap_eigvals)


@pytest.mark.parametrize("solver",
                         ["auto", "chebyshev", "lanczos", "shift_invert", "arpack"])
def test_large_graphs_switch_to_the_sparse_solver(solver):
    import networkx as nx

    from tests.conftest import nx_to_data

    data = nx_to_data(nx.connected_watts_strogatz_graph(300, 6, 0.3, seed=4))
    dense = LaplacianPE(k=5)(data)
    sparse = LaplacianPE(k=5, dense_max_nodes=100, sparse_solver=solver)(data)
    assert torch.allclose(sparse.lap_eigvals, dense.lap_eigvals, atol=1e-5)
    # canonical signs: the same vectors wherever the eigenvalue is simple (here: all five)
    assert torch.allclose(sparse.lap_pe, dense.lap_pe, atol=1e-4)
