"""The kernels compiled ahead of time (graphpe.ops.aot): the call keys are numba's typing,
the extension gives numba's results, and a stale or missing extension is ignored."""

from __future__ import annotations

import importlib
import json

import numba
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch_geometric.data import Data, InMemoryDataset

from graphpe.ops import aot, aot_build
from graphpe.transforms import (
    LCP,
    RFP,
    RWSE,
    CycleCounts,
    DirectedRWSE,
    LaplacianPE,
    MagneticLaplacianPE,
)

DTYPES = (np.float64, np.float32, np.int64, np.int32, np.bool_, np.uint8, np.complex128)


def _kernels() -> list[aot.Kernel]:
    modules = [importlib.import_module(name) for name in aot.AOT_MODULES]
    return [v for m in modules for v in vars(m).values() if isinstance(v, aot.Kernel)]


@st.composite
def arrays(draw):
    dtype = draw(st.sampled_from(DTYPES))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    array = np.zeros(shape, dtype=dtype)
    view = draw(st.sampled_from(["whole", "transpose", "step", "column"]))
    if view == "transpose":
        array = array.T
    elif view == "step":
        array = array[::2]
    elif view == "column" and array.ndim > 1:
        array = array[:, :1]
    if draw(st.booleans()):
        array.flags.writeable = False
    return array


scalars = st.one_of(st.integers(-2**62, 2**62), st.floats(allow_nan=False), st.booleans(),
                    st.none(), st.sampled_from([np.int64(3), np.float32(1.5), np.int32(2),
                                                np.float64(0.5), np.bool_(True)]))


@given(st.one_of(arrays(), scalars, st.tuples(scalars, arrays())))
@settings(max_examples=200, deadline=None)
def test_arg_key_is_numbas_typing(value):
    """A call's key is the key of the types numba's dispatcher would compile for it."""
    expected = aot.index_key(aot_build.type_source(numba.typeof(value)))
    assert aot.arg_key(value) == expected


def test_arg_key_refuses_what_is_never_compiled_ahead():
    assert aot.arg_key([1, 2]) is None
    assert aot.arg_key(torch.zeros(2)) is None
    assert aot.call_key((np.zeros(2), object())) is None


def test_signatures_name_existing_kernels():
    """Every recorded signature names a kernel of the AOT modules and parses to numba types
    (a renamed kernel would otherwise drop out of the extension silently)."""
    signatures = json.loads(aot.SIGNATURES_PATH.read_text())
    assert signatures
    for qualified, entries in signatures.items():
        module, _, name = qualified.partition(":")
        assert module in aot.AOT_MODULES
        kernel = getattr(importlib.import_module(module), name)
        assert hasattr(kernel, "py_func"), qualified
        for entry in entries:
            args = [aot_build.parse_type(s) for s in entry["args"]]
            assert len(args) == kernel.py_func.__code__.co_argcount, qualified
            aot_build.parse_type(entry["returns"])


def test_stale_extension_is_ignored(monkeypatch):
    """An extension built from other sources (an edited checkout) is never used."""
    aot.compiled_table.cache_clear()
    monkeypatch.setattr(aot, "source_digest", lambda: "edited")
    try:
        assert aot.compiled_table() == {}
        if aot.INDEX_PATH.exists():
            assert aot.extension_status().startswith("built from other kernel sources")
    finally:
        aot.compiled_table.cache_clear()


def test_switched_off_extension_is_ignored(monkeypatch):
    aot.compiled_table.cache_clear()
    monkeypatch.setenv(aot.ENV_SWITCH, "0")
    try:
        assert aot.compiled_table() == {}
        assert aot.extension_status() == "switched off (GRAPHPE_AOT=0)"
    finally:
        aot.compiled_table.cache_clear()


def _graphs() -> list[Data]:
    """Random graphs, one with an isolated node, as stored in a dataset (views) and whole."""
    gen = torch.Generator().manual_seed(0)
    graphs = []
    for n in (5, 9, 14, 31, 80):
        src = torch.randint(0, n - 1, (3 * n,), generator=gen)
        dst = torch.randint(0, n - 1, (3 * n,), generator=gen)
        graphs.append(Data(edge_index=torch.stack([torch.cat([src, dst]),
                                                   torch.cat([dst, src])]), num_nodes=n))
    stored = InMemoryDataset()
    stored.data, stored.slices = InMemoryDataset.collate(graphs)
    return graphs + [stored[i] for i in range(len(graphs))]


@pytest.mark.skipif(not aot.compiled_table(), reason="graphpe._kernels is not built from "
                    "these sources (python -m graphpe.ops.aot_build builds it)")
def test_compiled_ahead_equals_numba(monkeypatch):
    """The encodings through the extension and through numba's JIT, bit for bit."""
    def transforms():  # new ones for each pass: RFP's draws go on from call to call
        return [LaplacianPE(8), RWSE(16), RFP(dim=8, steps=4, seed=0), LCP(),
                DirectedRWSE(8), CycleCounts(6), RWSE(16, estimate="sampled", walks=8),
                RWSE(8, estimate="sampled", walks=8, estimator="transition")]

    graphs = _graphs()
    ahead = [[t(g.clone()) for g in graphs] for t in transforms()]
    kernels = _kernels()
    assert any(kernel.compiled for kernel in kernels)
    for kernel in kernels:
        monkeypatch.setattr(kernel, "compiled", {})
    for transform, outputs in zip(transforms(), ahead, strict=True):
        for g, out in zip(graphs, outputs, strict=True):
            jit = transform(g.clone())
            for key in out.keys():
                if isinstance(out[key], torch.Tensor) and out[key].is_floating_point():
                    assert torch.equal(out[key], jit[key]), (transform, key)


@pytest.mark.skipif(not aot.compiled_table(), reason="graphpe._kernels is not built from "
                    "these sources (python -m graphpe.ops.aot_build builds it)")
def test_the_magnetic_laplacian_compiled_ahead_agrees_with_numba(monkeypatch):
    """The magnetic Laplacian through the extension and through numba's JIT, equal to
    rounding rather than bit for bit: its small Hermitian solver rounds differently as
    compiled fresh by the JIT, loaded from numba's cache or compiled ahead (each of them
    deterministic), as it did before it was compiled ahead."""
    from tests.ops.eigen.test_magnetic import assert_same_eigenpairs

    transform = MagneticLaplacianPE(8, (0.1, 0.25))
    graphs = _graphs()
    ahead = [transform(g.clone()) for g in graphs]
    kernels = _kernels()
    assert any(k.compiled for k in kernels if k.py_func.__name__ == "_magnetic_kernel")
    for kernel in kernels:
        monkeypatch.setattr(kernel, "compiled", {})
    for g, out in zip(graphs, ahead, strict=True):
        jit = transform(g.clone())
        assert torch.equal(out.maglap_mask, jit.maglap_mask)
        torch.testing.assert_close(out.maglap_eigvals, jit.maglap_eigvals, atol=1e-6, rtol=0)
        for slot in range(2):
            assert_same_eigenpairs(out.maglap_eigvals[0, slot].double().numpy(),
                                   torch.view_as_complex(out.maglap_pe[:, slot]).numpy(),
                                   torch.view_as_complex(jit.maglap_pe[:, slot]).numpy())
