"""graphpe.encode_distributed: one graph's encodings computed by 2 gloo ranks, each writing
its rows, assembled by read_encodings into what encode_graph writes; bad inputs refused by
name; ``torchrun -m graphpe encode``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch_geometric.data import Data

from graphpe.encode import encode_graph, read_encodings
from graphpe.encode_distributed import distributed_transform, encode_graph_distributed
from graphpe.transforms import LCP, RWSE
from tests.ops.distributed.graphs import two_components
from tests.ops.distributed.spawn import free_port, run_ranks

PE = "lap:k=4,rfp:dim=4:steps=3:num_draws=2,rwse:walk_length=6,lcp"


def _encode(rank: int, world: int, out: str) -> dict:
    written = encode_graph_distributed(two_components(), PE, out)
    encode_graph_distributed(two_components(), "lap:k=4:sign=random", out + "-random")
    encode_graph_distributed(two_components(isolated=3), PE, out + "-rcm", reorder="rcm")
    errors = {}
    for name, call in {
        "too_many_ranks": lambda: encode_graph_distributed(Data(
            edge_index=torch.zeros(2, 0, dtype=torch.long), num_nodes=1), "lap", out),
        "no_path": lambda: encode_graph_distributed(two_components(), "lap,cycles", out),
        "reorder": lambda: encode_graph_distributed(two_components(), "lap", out,
                                                    reorder="metis"),
    }.items():
        try:
            call()
        except ValueError as error:
            errors[name] = str(error)
    return {"written": {k: str(v) for k, v in written.items()}, "errors": errors}


@pytest.fixture(scope="module")
def encoded(tmp_path_factory):
    out = tmp_path_factory.mktemp("encoded")
    return out, run_ranks(_encode, 2, out, str(out / "enc"))


def test_the_ranks_rows_assemble_into_what_encode_graph_writes(encoded, tmp_path):
    out, ranks = encoded
    graph = two_components()
    assert ranks[1]["written"]["lap"] == str(out / "enc" / "lap.rank1of2.pt")
    got = read_encodings(out / "enc", graph.clone())
    want = read_encodings(Path(encode_graph(
        graph, "lap:k=4,rfp:dim=4:steps=3:num_draws=2,lcp", tmp_path)["lap"]).parent)
    want.update(RWSE(6, estimate="sampled")(graph.clone()).to_dict())
    assert sorted(got) == ["lap_eigvals", "lap_mask", "lap_pe", "lcp", "rfp", "rwse",
                           "rwse_stderr"]
    for key in got:
        assert got[key].dtype == want[key].dtype and got[key].shape == want[key].shape, key
        if key == "lap_mask":
            assert torch.equal(got[key], want[key])
        else:  # RFP: the compiled float64 kernel of a graph this small, to 1e-5
            torch.testing.assert_close(got[key], want[key], rtol=0,
                                       atol=1e-5 if key == "rfp" else 1e-6)


def test_reordered_rows_are_put_back_in_the_graphs_order(encoded, tmp_path):
    """Rows split after a reverse Cuthill-McKee order (two components and three isolated
    nodes: the null space's columns and the sign convention's ties go by the input's ids):
    LapPE and RFP are the single process's; RWSE is a sample of the reordered graph's walks,
    checked against the single process's estimate on the graph relabeled by the same order,
    put back."""
    import numpy as np

    from graphpe.encode_distributed import graph_order

    out, _ = encoded
    graph = two_components(isolated=3)
    got = read_encodings(Path(str(out / "enc") + "-rcm"), graph.clone())
    want = read_encodings(Path(encode_graph(
        graph, "lap:k=4,rfp:dim=4:steps=3:num_draws=2,lcp", tmp_path)["lap"]).parent)
    for key in want:
        torch.testing.assert_close(got[key], want[key], rtol=0,
                                   atol=1e-5 if key == "rfp" else 1e-6)
    order = torch.from_numpy(graph_order(graph, "rcm"))
    assert not torch.equal(order, torch.arange(graph.num_nodes))  # a real reordering
    row_of = torch.empty_like(order)
    row_of[order] = torch.arange(order.numel())
    relabeled = Data(edge_index=row_of[graph.edge_index], num_nodes=graph.num_nodes)
    walks = RWSE(6, estimate="sampled")(relabeled)
    for key in ("rwse", "rwse_stderr"):
        torch.testing.assert_close(got[key][order], walks[key], rtol=0, atol=1e-6)
    record = json.loads((Path(str(out / "enc") + "-rcm") / "lap.json").read_text())
    part = record["partition"]
    assert part["reordering"] == "rcm"
    assert part["node_files"] == ["lap.rank0of2.nodes.pt", "lap.rank1of2.nodes.pt"]
    nodes = [torch.load(Path(str(out / "enc") + "-rcm") / f, weights_only=True)
             for f in part["node_files"]]
    assert torch.equal(torch.cat(nodes), order)
    assert np.array_equal(np.sort(order.numpy()), np.arange(graph.num_nodes))


def test_node_files_that_do_not_cover_the_graph_are_refused(encoded, tmp_path):
    out, _ = encoded
    for f in Path(str(out / "enc") + "-rcm").glob("rfp.*"):
        (tmp_path / f.name).write_bytes(f.read_bytes())
    nodes = torch.load(tmp_path / "rfp.rank1of2.nodes.pt", weights_only=True)
    nodes[0] = nodes[1]
    torch.save(nodes, tmp_path / "rfp.rank1of2.nodes.pt")
    with pytest.raises(ValueError, match=r"rfp.json: the ranks' node files do not name each "
                                         r"of the graph's 130 nodes once$"):
        read_encodings(tmp_path)


def test_random_signs_are_one_flip_per_column_on_every_rank(encoded):
    out, _ = encoded
    got = read_encodings(Path(str(out / "enc") + "-random"), two_components())["lap_pe"]
    canonical = read_encodings(out / "enc")["lap_pe"]
    flips = (got * canonical).sum(0).sign()  # one sign per column, drawn once (rank 0)
    torch.testing.assert_close(got, canonical * flips, rtol=0, atol=1e-7)


def test_the_record_holds_the_partition_and_the_halo_traffic(encoded):
    out, _ = encoded
    record = json.loads((out / "enc" / "rfp.json").read_text())
    part = record["partition"]
    assert part["world"] == 2 and part["bounds"] == [0, 63, 127]
    assert part["files"] == ["rfp.rank0of2.pt", "rfp.rank1of2.pt"]
    for me, other in ((0, 1), (1, 0)):
        rank = part["ranks"][me]
        # what a rank sends per product is the other rank's halo, 2 draws x 4 columns a row
        assert rank["halo_sent_rows"] == part["ranks"][other]["halo"]
        assert rank["exchanges"] == rank["products"] == 3
        assert rank["values_sent"] == rank["halo_sent_rows"] * 8 * 3
        assert rank["bytes_sent"] == 4 * rank["values_sent"]  # float32
    lap = json.loads((out / "enc" / "lap.json").read_text())["partition"]["ranks"]
    assert all(r["products"] > 0 and r["residual"] <= 1e-8 for r in lap)
    rwse = json.loads((out / "enc" / "rwse.json").read_text())
    assert "estimate='sampled'" in rwse["transform"]


def test_a_missing_rank_file_is_named(encoded, tmp_path):
    out, _ = encoded
    for f in (out / "enc").glob("rfp.*"):
        (tmp_path / f.name).write_bytes(f.read_bytes())
    (tmp_path / "rfp.rank1of2.pt").unlink()
    with pytest.raises(FileNotFoundError, match=r"rfp.json: missing the rows of "
                                                r"rfp.rank1of2.pt$"):
        read_encodings(tmp_path)


def test_bad_inputs_are_refused_by_name(encoded):
    errors = encoded[1][0]["errors"]
    assert errors == {
        "too_many_ranks": "cannot partition a graph of 1 nodes over 2 ranks: every rank "
                          "needs at least one node",
        "no_path": "cycles (CycleCounts) has no distributed path; the distributed encodings "
                   "are lap, peg, signnet, spe: Laplacian eigenpairs by distributed "
                   "thick-restart Lanczos; lcp: LCP's node profile; rfp: RFP by distributed "
                   "propagation and CholeskyQR2; rwse: RWSE's random-walk estimate, the walks "
                   "crossing the partition",
        "reorder": "reorder must be one of ('none', 'rcm'), got 'metis'"}
    with pytest.raises(ValueError, match=r"^rwse: estimate='exact' has no distributed path; "
                                         r"the distributed RWSE is the random-walk estimate "
                                         r"\(exact RWSE runs in one process\)$"):
        distributed_transform("rwse", RWSE(4, estimate="exact"))
    assert distributed_transform("rwse", RWSE(4)).estimate == "sampled"
    with pytest.raises(ValueError, match=r"^lcp: the per-edge curvature \(edge_attr_name\) "
                                         r"has no distributed path; the distributed LCP "
                                         r"writes the node profile$"):
        distributed_transform("lcp", LCP(edge_attr_name="orc"))


def test_torchrun_graphpe_encode_writes_each_ranks_rows(tmp_path):
    import numpy as np
    import scipy.sparse as sp

    graph = two_components()
    n = graph.num_nodes
    ei = graph.edge_index.numpy()
    sp.save_npz(tmp_path / "g.npz", sp.csr_matrix((np.ones(ei.shape[1]), (ei[0], ei[1])),
                                                  shape=(n, n)))
    env = dict(os.environ, OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[1]),
                                           os.environ.get("PYTHONPATH", "")]))
    env.pop("WORLD_SIZE", None)
    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
         "--master-port", str(free_port()), "-m", "graphpe", "encode", "--graph",
         str(tmp_path / "g.npz"), "--pe", "lap:k=3", "--out", str(tmp_path / "out"),
         "--reorder", "rcm"],
        env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout[done.stdout.index("{"):])
    assert summary["lap"]["ranks"] == 2
    assert summary["lap"]["files"] == [str(tmp_path / "out" / f"lap.rank{r}of2.pt")
                                       for r in range(2)]
    from graphpe.datasets import read_graph

    whole = read_graph(tmp_path / "g.npz")
    got = read_encodings(tmp_path / "out", whole.clone())
    want = read_encodings(Path(encode_graph(whole, "lap:k=3", tmp_path / "one")["lap"]).parent)
    torch.testing.assert_close(got["lap_pe"], want["lap_pe"], rtol=0, atol=1e-6)
    torch.testing.assert_close(got["lap_eigvals"], want["lap_eigvals"], rtol=0, atol=1e-6)


def test_the_clis_reorderings_are_the_kernels():
    import argparse

    from graphpe.cli.encode import add_encode_arguments
    from graphpe.ops.distributed.partition import REORDERINGS

    parser = argparse.ArgumentParser()
    add_encode_arguments(parser)
    action = next(a for a in parser._actions if a.dest == "reorder")
    assert tuple(action.choices) == REORDERINGS and action.default == "none"


def test_a_ranks_rows_are_read_from_the_edges_that_touch_them():
    from graphpe.encode_distributed import graph_rows
    from graphpe.ops.distributed import local_rows, row_partition
    from graphpe.ops.host import simple_csr

    graph = two_components(weighted=True)
    graph.edge_index = torch.cat([graph.edge_index, graph.edge_index[:, :40],
                                  torch.tensor([[5, 70], [5, 70]])], dim=1)  # duplicates, loops
    graph.edge_weight = torch.cat([graph.edge_weight, graph.edge_weight[:40] * 3,
                                   torch.tensor([0.5, 2.0])])
    whole = simple_csr(graph.edge_index, graph.num_nodes, graph.edge_weight)
    for rank in range(3):
        got = graph_rows(graph, 3, rank)
        want = local_rows(whole, row_partition(graph.num_nodes, 3, rank))
        for field in ("indptr", "indices", "weight", "loops"):
            assert (getattr(got, field) == getattr(want, field)).all(), field
    # reordered: the rows of the graph relabeled by the order (node order[i] is row i)
    order = torch.randperm(graph.num_nodes, generator=torch.Generator().manual_seed(1))
    row_of = torch.empty_like(order)
    row_of[order] = torch.arange(order.numel())
    relabeled = simple_csr(row_of[graph.edge_index], graph.num_nodes, graph.edge_weight)
    for rank in range(3):
        got = graph_rows(graph, 3, rank, order.numpy())
        want = local_rows(relabeled, row_partition(graph.num_nodes, 3, rank))
        for field in ("indptr", "indices", "weight", "loops"):
            assert (getattr(got, field) == getattr(want, field)).all(), field
        assert (got.partition.nodes == order.numpy()[want.partition.lo:want.partition.hi]
                ).all()


def test_an_adjacency_files_rows_and_digest_are_those_of_the_read_graph(tmp_path):
    import numpy as np
    import scipy.sparse as sp

    from graphpe.datasets import read_graph
    from graphpe.datasets.graph_files import adjacency_rows
    from graphpe.encode import graph_digest
    from graphpe.encode_distributed import graph_rows

    graph = two_components(isolated=3)
    n = graph.num_nodes
    ei = graph.edge_index.numpy()
    # duplicate entries of the file are summed by scipy (one edge), as read_graph reads them
    sp.save_npz(tmp_path / "g.npz", sp.coo_matrix((np.ones(ei.shape[1]), (ei[0], ei[1])),
                                                  shape=(n, n)))
    whole = read_graph(tmp_path / "g.npz")
    for rank in range(3):
        got, meta = adjacency_rows(tmp_path / "g.npz", 3, rank)
        want = graph_rows(whole, 3, rank)
        for field in ("indptr", "indices", "weight", "loops"):
            assert (getattr(got, field) == getattr(want, field)).all(), field
        assert meta == {"digest": graph_digest(whole), "num_nodes": n,
                        "num_edges": int(whole.edge_index.size(1))}


def test_a_canonical_csr_file_is_streamed_and_gives_the_read_graphs_rows(tmp_path,
                                                                        monkeypatch):
    """A canonical CSR file (scipy's save_npz of a sorted matrix) is read a few entries at a
    time, never loaded whole: each rank's rows and the digest equal the read graph's, for a
    symmetric and a directed matrix; a file with unsorted columns or a stored zero is read
    whole and made canonical first, as read_graph reads it."""
    import numpy as np
    import scipy.sparse as sp

    import graphpe.datasets.graph_files as graph_files
    import graphpe.encode_distributed as ed
    from graphpe.datasets import read_graph
    from graphpe.encode import graph_digest
    from graphpe.encode_distributed import graph_rows

    n = 120
    sym = sp.random(n, n, density=0.04, random_state=1, format="csr")
    sym = sp.csr_matrix(((sym + sym.T) > 0).astype(np.float64) + sp.eye(n, format="csr"))
    directed = sp.random(n, n, density=0.04, random_state=2, format="csr")
    directed.data[:] = 1.0
    for name, matrix in (("sym", sym), ("directed", directed)):
        matrix.sort_indices()
        sp.save_npz(tmp_path / f"{name}.npz", matrix)
    unsorted = directed.copy()
    row = int(np.flatnonzero(np.diff(unsorted.indptr) >= 2)[0])
    a = unsorted.indptr[row]
    unsorted.indices[[a, a + 1]] = unsorted.indices[[a + 1, a]]
    unsorted.has_sorted_indices = False
    sp.save_npz(tmp_path / "unsorted.npz", unsorted, compressed=False)
    zero = directed.copy()
    zero.data[3] = 0.0
    sp.save_npz(tmp_path / "zero.npz", zero)

    wholes = {name: read_graph(tmp_path / f"{name}.npz")
              for name in ("sym", "directed", "unsorted", "zero")}

    order = np.random.default_rng(3).permutation(n)

    def check(name, world, chunk, order=None):
        whole = wholes[name]
        for rank in range(world):
            got, meta = graph_files.adjacency_rows(tmp_path / f"{name}.npz", world, rank,
                                                   chunk=chunk, order=order)
            want = graph_rows(whole, world, rank, order)
            for field in ("indptr", "indices", "weight", "loops"):
                assert (getattr(got, field) == getattr(want, field)).all(), (name, field)
            assert meta == {"digest": graph_digest(whole), "num_nodes": n,
                            "num_edges": int(whole.edge_index.size(1))}

    for name in ("sym", "zero"):  # a file's order is its read graph's (a stored zero no edge)
        assert (ed.file_order(tmp_path / f"{name}.npz", "rcm")
                == ed.graph_order(wholes[name], "rcm")).all()
    for name in ("unsorted", "zero"):
        assert graph_files.streamed_csr(tmp_path / f"{name}.npz", True, 7) is None
        check(name, 2, 7)
        check(name, 3, 7, order)
    # the canonical files never go through scipy's whole-file load (read_graph does, above)
    monkeypatch.setattr(sp, "load_npz", lambda path: pytest.fail(f"{path} read whole"))
    for name in ("sym", "directed"):
        for world, chunk in ((1, 1 << 20), (3, 7), (4, 1)):
            check(name, world, chunk)
            check(name, world, chunk, order)
