"""Encodings computed inside a mixed-precision step (``torch.autocast``) come out exactly as
outside it: the transforms turn autocast off around their work.

On the CPU the transforms run compiled kernels that autocast does not touch; the batched torch
kernels (what a CUDA batch runs) would have their products cast to bfloat16, so these tests
run those kernels on the CPU.
"""

from __future__ import annotations

import importlib
import pkgutil

import pytest
import torch
from torch_geometric.data import Batch

import graphpe.ops
from graphpe.encodings.transform import without_autocast
from graphpe.synthetic import molecule_like_graphs
from graphpe.transforms import RFP, RWSE, HKdiagSE, LaplacianPE, OnTheFlyPE


@pytest.fixture
def tensor_kernels(monkeypatch):
    """The batched torch kernels on CPU tensors (``kernel='auto'`` picks them on CUDA)."""
    for info in pkgutil.walk_packages(graphpe.ops.__path__, "graphpe.ops."):
        module = importlib.import_module(info.name)
        if hasattr(module, "use_compiled"):
            monkeypatch.setattr(module, "use_compiled", lambda kernel, device: False)


def _batch() -> Batch:
    return Batch.from_data_list(molecule_like_graphs(8, min_nodes=6, max_nodes=30, seed=0))


def _encoded(transform, batch: Batch) -> dict[str, torch.Tensor]:
    if hasattr(transform, "reset_generator"):
        transform.reset_generator()  # the same draws each call
    out = transform(batch.clone())
    return {k: out[k] for k in out.keys() if k not in batch.keys()}


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("make", [lambda: RWSE(8), lambda: RFP(dim=4, steps=3, seed=0),
                                  lambda: LaplacianPE(4), lambda: HKdiagSE([1.0, 4.0])],
                         ids=["rwse", "rfp", "lap", "hkdiag"])
def test_transform_ignores_autocast(make, dtype, tensor_kernels):
    transform, batch = make(), _batch()
    ref = _encoded(transform, batch)
    with torch.autocast("cpu", dtype=dtype):
        got = _encoded(transform, batch)
    assert ref.keys() == got.keys() and ref
    for key in ref:
        assert got[key].dtype == ref[key].dtype
        assert torch.equal(got[key], ref[key]), key


def test_on_the_fly_ignores_autocast(tensor_kernels):
    module, batch = OnTheFlyPE([RWSE(8), RFP(dim=4, steps=3, seed=0)]).eval(), _batch()
    ref = module(batch)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = module(batch)
    for key in ("rwse", "rfp"):
        assert got[key].dtype == torch.float32 and torch.equal(got[key], ref[key])


def test_without_autocast_restores_it():
    with torch.autocast("cpu", dtype=torch.bfloat16):
        with without_autocast():
            assert not torch.is_autocast_enabled("cpu")
            assert torch.mm(torch.ones(2, 2), torch.ones(2, 2)).dtype == torch.float32
        assert torch.is_autocast_enabled("cpu")
        assert torch.mm(torch.ones(2, 2), torch.ones(2, 2)).dtype == torch.bfloat16


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_encodings_ignore_autocast():
    batch = _batch().to("cuda")
    module = OnTheFlyPE([RWSE(8), RFP(dim=4, steps=3, seed=0), LaplacianPE(4)],
                        compute_on="device").eval()
    ref = module(batch)
    with torch.autocast("cuda", dtype=torch.float16):
        got = module(batch)
    for key in ("rwse", "rfp", "lap_pe"):
        assert got[key].dtype == torch.float32 and torch.equal(got[key], ref[key]), key
