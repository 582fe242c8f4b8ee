"""Batched dense eigensolvers: CPU results, backend dispatch, and the check that repairs bad
GPU results (exercised here with corrupted results; the CUDA runs are in test_cuda.py)."""

import numpy as np
import pytest
import torch

from graphpe.ops.eigen import dense as be


def symmetric_batches(seed=0):
    gen = torch.Generator().manual_seed(seed)
    out = []
    for b, n in ((5, 3), (7, 33), (2, 60)):
        a = torch.randn(b, n, n, generator=gen, dtype=torch.float64)
        out.append(a + a.transpose(1, 2))
    return out


@pytest.mark.parametrize("threads", [1, 2])
def test_cpu_matches_numpy(threads):
    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        mats = symmetric_batches()
        for m, (vals, vecs) in zip(mats, be.batched_eigh(mats), strict=True):
            assert np.allclose(vals.numpy(), np.linalg.eigvalsh(m.numpy()))
            assert torch.allclose(m @ vecs, vecs * vals.unsqueeze(1), atol=1e-10)
    finally:
        torch.set_num_threads(old)


def test_bad_backend_and_cupy_on_cpu_raise():
    mats = symmetric_batches()
    with pytest.raises(ValueError, match=r"^backend must be one of \('auto', 'torch', 'cupy', "
                                         r"'host'\), got 'magma'$"):
        be.batched_eigh(mats, "magma")
    with pytest.raises(ValueError, match=r"^the cupy backend needs CUDA tensors, got CPU ones$"):
        be.batched_eigh(mats, "cupy")
    assert be.batched_eigh([]) == []


def test_check_repairs_corrupted_results_with_a_warning():
    m = symmetric_batches()[1]
    vals, vecs = torch.linalg.eigh(m)
    good_vals, good_vecs = vals.clone(), vecs.clone()
    vals[2, 0] = float("nan")  # a solver that returned NaN
    vecs[4] = torch.eye(m.size(-1), dtype=m.dtype)  # one that did not converge
    with pytest.warns(RuntimeWarning, match=r"2 of 7 matrices of size 33 failed the residual "
                                            r"check; solved again with LAPACK on the host"):
        fixed_vals, fixed_vecs = be._checked(m, vals, vecs, None)
    assert torch.allclose(fixed_vals, good_vals)
    assert torch.allclose(m @ fixed_vecs, fixed_vecs * fixed_vals.unsqueeze(1), atol=1e-10)
    # untouched where the result was good
    assert torch.equal(fixed_vecs[0], good_vecs[0])


def test_check_passes_good_float32_results_silently(recwarn):
    m = symmetric_batches()[2].float() / 20
    vals, vecs = torch.linalg.eigh(m)
    out_vals, out_vecs = be._checked(m, vals, vecs, None)
    assert out_vals is vals and out_vecs is vecs and not recwarn.list


def test_auto_dispatch_by_size_and_cupy(monkeypatch):
    small = torch.zeros(4, 32, 32)
    large = torch.zeros(4, 33, 33)
    assert be._device_solver(small, "auto") is torch.linalg.eigh
    assert be._device_solver(large[:1], "auto") is torch.linalg.eigh  # one matrix: syevd
    monkeypatch.setattr(be, "cupy_available", lambda: True)
    assert be._device_solver(large, "auto") is be.cupy_eigh
    monkeypatch.setattr(be, "cupy_available", lambda: False)
    assert be._device_solver(large, "auto") is None  # LAPACK on the host
    assert be._device_solver(large, "torch") is torch.linalg.eigh
