"""The host plumbing shared by the compiled kernels (:mod:`graphpe.ops.host`): the CSR of the
undirected simple graph, the kernel choice, the split of a batch over threads, the dtype check
of the layers' host kernels and the first-compile notice. Each encoding family's compiled
kernels are checked against its tensor kernels in ``tests/ops/<family>/test_parity.py``."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from torch_geometric.data import Batch

from graphpe.ops import (
    laplacian_eigenpairs,
    random_feature_propagation,
    random_walk_landing_probs,
)
from graphpe.ops.graph import undirected_simple
from graphpe.ops.host import aligned_empty, prefetch, simple_csr, use_host_kernels
from graphpe.ops.plan import ExecPlan
from tests.ops.strategies import raw_graph


@settings(max_examples=50, deadline=None)
@given(raw_graph(weighted=True))
def test_simple_csr_is_the_undirected_simple_graph(data):
    """Same edges and weights as ops.graph.undirected_simple, minus edges of weight 0."""
    csr = simple_csr(data.edge_index, data.num_nodes, data.edge_weight)
    ref = undirected_simple(data.edge_index, data.num_nodes, data.edge_weight)
    keep = ref.edge_weight > 0
    rows = np.repeat(np.arange(data.num_nodes), np.diff(csr.indptr))
    assert rows.tolist() == ref.edge_index[0][keep].tolist()
    assert csr.indices.tolist() == ref.edge_index[1][keep].tolist()
    assert csr.weight.tolist() == ref.edge_weight[keep].tolist()


def test_simple_csr_sorts_a_hub_row_past_the_insertion_limit():
    """A hub's row longer than SORT_INSERTION_MAX (merge sorted), with duplicates of other
    weights and self loops: the same graph as ops.graph.undirected_simple."""
    from graphpe.ops.host import SORT_INSERTION_MAX

    rng = np.random.default_rng(0)
    n, hub = 300, 7
    spokes = rng.integers(0, n, 4 * SORT_INSERTION_MAX)  # repeats: duplicate edges
    rows = np.r_[np.full(spokes.size, hub), rng.integers(0, n, 200)]
    cols = np.r_[spokes, rng.integers(0, n, 200)]
    edge_index = torch.from_numpy(np.stack([rows, cols]))
    weight = torch.from_numpy(rng.integers(0, 4, rows.size).astype(np.float64))
    csr = simple_csr(edge_index, n, weight)
    ref = undirected_simple(edge_index, n, weight)
    keep = ref.edge_weight > 0
    assert np.diff(csr.indptr)[hub] > SORT_INSERTION_MAX
    assert csr.indices.tolist() == ref.edge_index[1][keep].tolist()
    assert csr.weight.tolist() == ref.edge_weight[keep].tolist()


def test_compiled_kernel_refuses_gpu_tensors():
    ei = torch.zeros(2, 0, dtype=torch.long, device="meta")
    with pytest.raises(ValueError, match="kernel='compiled' runs on CPU tensors"):
        random_walk_landing_probs(ei, 3, 2, plan=ExecPlan(kernel="compiled"))


def test_unknown_kernel():
    with pytest.raises(ValueError, match=r"kernel must be one of \('auto', 'compiled', "
                                         r"'tensor'\), got 'fast'"):
        random_walk_landing_probs(torch.zeros(2, 0, dtype=torch.long), 3, 2,
            plan=ExecPlan(kernel="fast"))


def test_graph_chunks_cover_every_graph_once():
    from graphpe.ops.host import graph_chunks

    sizes = np.array([5, 300, 7, 7, 900, 40, 1, 0, 260, 33])
    ptr = np.concatenate([[0], np.cumsum(sizes)])
    for threads in (1, 2, 3, 8):
        chunks = graph_chunks(ptr, threads, min_nodes=100)
        assert chunks[0][0] == 0 and chunks[-1][1] == len(sizes)
        assert all(a < b for a, b in chunks)
        assert all(b == c for (_, b), (c, _) in zip(chunks[:-1], chunks[1:], strict=True))
        assert len(chunks) <= threads
    assert graph_chunks(ptr, 8, min_nodes=10_000) == [(0, len(sizes))]  # too little work
    assert graph_chunks(np.array([0]), 4, min_nodes=1) == [(0, 0)]  # no graphs
    import threading

    seen = []
    worker = threading.Thread(target=lambda: seen.append(graph_chunks(ptr, 8, min_nodes=1)))
    worker.start()
    worker.join()
    assert seen == [[(0, len(sizes))]]  # not split again inside a caller's thread


def test_kernels_over_graph_chunks_in_threads_equal_one_call(families, monkeypatch):
    """RWSE, LapPE (canonical and random signs), RFP and RRWP with the graphs split over threads:
    the same bits as one call over all graphs (each graph's rows are its own)."""
    from graphpe.ops import host
    from graphpe.ops.walk import relative_random_walk_probs

    graphs = [g for g in families.values() if g.num_nodes > 0] * 4
    batch = Batch.from_data_list(graphs)
    x0 = torch.randn(batch.num_nodes, 2, 3)

    def encode():
        torch.manual_seed(0)
        gen = torch.Generator().manual_seed(1)
        return [random_walk_landing_probs(batch.edge_index, batch.num_nodes, 6, ptr=batch.ptr),
                *laplacian_eigenpairs(batch.edge_index, batch.num_nodes, 3, ptr=batch.ptr),
                *laplacian_eigenpairs(batch.edge_index, batch.num_nodes, 3, ptr=batch.ptr,
                                      sign="random", generator=gen),
                random_feature_propagation(batch.edge_index, batch.num_nodes, x0, 3,
                                           ptr=batch.ptr),
                *relative_random_walk_probs(batch.edge_index, batch.num_nodes, 4,
                                            ptr=batch.ptr)[:2]]

    monkeypatch.setattr(torch, "get_num_threads", lambda: 1)
    one = encode()
    monkeypatch.setattr(torch, "get_num_threads", lambda: 4)
    monkeypatch.setattr(host, "PARALLEL_MIN_NODES", 8)
    assert len(host.graph_chunks(batch.ptr.numpy())) == 4
    split = encode()
    assert all(torch.equal(a, b) for a, b in zip(one, split, strict=True))


def test_thread_pool_in_a_forked_child():
    """A DataLoader worker is a fork of a process whose pool threads it does not have: the
    child starts its own pool instead of waiting on the parent's forever."""
    import multiprocessing

    from graphpe.ops.host import run_over_graphs

    out = []
    run_over_graphs(lambda a, b: out.append((a, b)), [(0, 1), (1, 2)])  # the parent's pool
    ctx = multiprocessing.get_context("fork")
    child = ctx.Process(target=run_over_graphs, args=(lambda a, b: None, [(0, 1), (1, 2)]))
    child.start()
    child.join(timeout=60)
    if child.is_alive():  # hung on the parent's pool
        child.kill()
    assert child.exitcode == 0 and sorted(out) == [(0, 1), (1, 2)]


def test_host_kernels_take_one_float_dtype_on_the_cpu():
    x, w = torch.ones(3, 2), torch.ones(3, 2, dtype=torch.float64)
    index = torch.zeros(3, dtype=torch.long)
    assert use_host_kernels(x, x, index) and use_host_kernels(w, w)
    # a bfloat16 product beside float32 inputs (torch.autocast): the torch formulation
    assert not use_host_kernels(x, x.bfloat16())
    assert not use_host_kernels(x, w)
    assert not use_host_kernels(x.half())
    assert not use_host_kernels(x, torch.ones(3, 2, device="meta"))


def test_first_compile_is_announced_once(caplog, monkeypatch):
    """A graphpe kernel compiled (not loaded from numba's cache) is announced once per
    process; other packages' functions and a silenced notice say nothing."""
    import logging

    import numba
    from numba.core import event

    from graphpe.ops import aot
    from graphpe.ops.aot import FirstCompileNotice, compile_listener

    monkeypatch.setattr(aot.FIRST_COMPILE_NOTICE, "enabled", False)  # the process's own

    def make(module):
        def twice(x):
            return 2 * x

        twice.__module__ = module
        return numba.njit(twice)  # no cache: compiled on its first call

    notice = FirstCompileNotice()
    with caplog.at_level(logging.WARNING, logger="graphpe"), \
            event.install_listener("numba:compile", compile_listener(notice)):
        make("someone_else")(1)
        assert not caplog.records
        notice.enabled = False
        make("graphpe.fake")(1)
        assert not caplog.records
        notice.enabled = True
        make("graphpe.fake")(1)
        make("graphpe.fake")(1.5)
    assert [r.getMessage()[:55] for r in caplog.records] == [
        "graphpe: compiling its CPU kernels (numba) on first use"]


@pytest.mark.slow  # two fresh interpreters importing torch: ~17 s
def test_no_notice_when_the_kernels_load_from_the_cache(tmp_path):
    """In fresh processes: the first, on an empty numba cache, says it compiles; the second
    loads the kernel from that cache and says nothing."""
    import os
    import subprocess
    import sys

    code = ("import numpy as np\nfrom graphpe.ops.graph import index_range\n"
            "assert index_range(np.array([[0, 3], [1, 2]])) == (0, 3)\n")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True, timeout=300) for _ in range(2)]
    assert [r.returncode for r in runs] == [0, 0], runs[0].stderr[-2000:]
    said = ["graphpe: compiling its CPU kernels (numba) on first use" in r.stderr for r in runs]
    assert said == [True, False], [r.stderr[-1000:] for r in runs]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
@pytest.mark.parametrize("shape", [(0, 64), (1, 1), (7, 5), (1000, 64)])
def test_aligned_empty_starts_on_a_cache_line(shape, dtype):
    a = aligned_empty(shape, dtype)
    assert a.shape == shape and a.dtype == dtype and a.flags.c_contiguous
    assert a.size == 0 or a.ctypes.data % 64 == 0  # (an empty array has no data)
    a[...] = 1  # writable over its whole extent
    assert aligned_empty((3, 3), np.float32, align=4096).ctypes.data % 4096 == 0


def test_prefetch_is_a_hint_inside_compiled_code():
    import numba

    @numba.njit
    def rows_summed(x, order):
        total = 0.0
        for k in range(order.shape[0]):
            if k + 2 < order.shape[0]:
                prefetch(x, order[k + 2], 0)
            total += x[order[k]].sum()
        return total

    x = np.arange(40.0).reshape(8, 5)
    order = np.array([7, 0, 3, 3, 5])
    assert rows_summed(x, order) == x[order].sum()
