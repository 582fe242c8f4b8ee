"""Batched dense symmetric eigensolvers, picked per device and matrix size.

- CPU: LAPACK through ``torch.linalg.eigh``. LAPACK solves the matrices of a batch one after
  another on one core, so with several torch threads the batches (size buckets) are spread
  over a thread pool (``eigh`` releases the GIL).
- CUDA: ``torch.linalg.eigh`` uses cuSOLVER's batched Jacobi solver only up to ``n = 32``;
  above that it loops over the batch with a per-matrix solver (pytorch/pytorch#175585 and
  #174674). So larger batches go to CuPy's batched ``eigh`` through DLPack, with no copy,
  when CuPy is installed (the ``gpu`` extra), and otherwise to LAPACK on the host.

Results of the GPU solvers are checked (one batched product: finite values and
``max |A v - lambda v| <= check_tol * max(1, |lambda|)``); matrices that fail are solved again
on the host in float64, with a warning. Nothing silently wrong comes back.
"""

from __future__ import annotations

import importlib.util
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import torch
from torch import Tensor

from graphpe.ops.plan import EIGH_BACKENDS

TORCH_BATCHED_MAX = 32  # largest n that torch's CUDA eigh solves with syevjBatched

Solver = Callable[[Tensor], tuple[Tensor, Tensor]]


def cupy_available() -> bool:
    """Whether CuPy can be imported (it is only used on CUDA tensors)."""
    return importlib.util.find_spec("cupy") is not None


def batched_eigh(
    matrices: list[Tensor],
    backend: str = "auto",
    check_tol: float | None = None,
) -> list[tuple[Tensor, Tensor]]:
    """Eigenvalues (ascending) and eigenvectors of every ``[B, n, n]`` symmetric batch.

    Args:
        matrices: batches, all on one device; each solved as one batched call.
        backend: ``auto`` (see the module docstring), ``torch`` (``torch.linalg.eigh`` on the
            tensors' device), ``cupy`` (CUDA tensors only; raises if CuPy is missing) or
            ``host`` (LAPACK on the CPU, results copied back).
        check_tol: residual tolerance of the check on GPU results; ``1e-3`` for float32,
            ``1e-8`` for float64 by default (eigenvalues of a Laplacian are O(1)).
    """
    if backend not in EIGH_BACKENDS:
        raise ValueError(f"backend must be one of {EIGH_BACKENDS}, got {backend!r}")
    if not matrices:
        return []
    device = matrices[0].device
    if device.type == "cpu":
        if backend == "cupy":
            raise ValueError("the cupy backend needs CUDA tensors, got CPU ones")
        return _host_eigh(matrices)
    if backend == "host":
        return [(v.to(device), u.to(device))
                for v, u in _host_eigh([m.cpu() for m in matrices])]
    if backend == "cupy" and not cupy_available():
        raise ImportError("backend='cupy' needs CuPy: pip install 'graphpe[gpu]'")
    out: list[tuple[Tensor, Tensor] | None] = [None] * len(matrices)
    to_host = []
    for i, m in enumerate(matrices):
        solver = _device_solver(m, backend)
        if solver is None:
            to_host.append(i)
            continue
        vals, vecs = solver(m)
        out[i] = _checked(m, vals, vecs, check_tol)
    if to_host:
        solved = _host_eigh([matrices[i].cpu() for i in to_host])
        for i, (vals, vecs) in zip(to_host, solved, strict=True):
            out[i] = (vals.to(device), vecs.to(device))
    return out  # type: ignore[return-value]


def _device_solver(m: Tensor, backend: str) -> Solver | None:
    """The GPU solver for one batch, or None for the host."""
    if backend == "torch":
        return torch.linalg.eigh
    if backend == "cupy":
        return cupy_eigh
    # auto
    if m.size(-1) <= TORCH_BATCHED_MAX or m.dim() == 2 or m.size(0) == 1:
        return torch.linalg.eigh
    return cupy_eigh if cupy_available() else None


def cupy_eigh(m: Tensor) -> tuple[Tensor, Tensor]:
    """CuPy's batched ``eigh`` on a CUDA tensor, shared through DLPack (no copy) and run on
    torch's current stream, so no synchronization is needed on either side."""
    import cupy

    stream = torch.cuda.current_stream(m.device)
    with cupy.cuda.Device(m.device.index), cupy.cuda.ExternalStream(stream.cuda_stream):
        vals, vecs = cupy.linalg.eigh(cupy.from_dlpack(m.contiguous()))
        return torch.from_dlpack(vals), torch.from_dlpack(vecs)


def _checked(
    m: Tensor, vals: Tensor, vecs: Tensor, check_tol: float | None
) -> tuple[Tensor, Tensor]:
    """Re-solve on the host, in float64, the matrices whose GPU result is not finite or whose
    residual is above tolerance."""
    if check_tol is None:
        check_tol = 1e-8 if m.dtype == torch.float64 else 1e-3
    residual = (m @ vecs - vecs * vals.unsqueeze(-2)).abs().amax(dim=(-2, -1))
    scale = vals.abs().amax(dim=-1).clamp(min=1.0)
    bad = ~torch.isfinite(residual) | ~(residual <= check_tol * scale)
    if m.dim() == 2:
        bad = bad.reshape(1)
    if not bool(bad.any()):
        return vals, vecs
    idx = torch.nonzero(bad).flatten()
    warnings.warn(
        f"batched eigh on {m.device}: {idx.numel()} of {bad.numel()} matrices of size "
        f"{m.size(-1)} failed the residual check; solved again with LAPACK on the host",
        RuntimeWarning,
        stacklevel=3,
    )
    batch = m.reshape(-1, m.size(-2), m.size(-1))[idx].cpu().double()
    fixed_vals, fixed_vecs = torch.linalg.eigh(batch)
    vals = vals.reshape(-1, vals.size(-1)).clone()
    vecs = vecs.reshape(-1, *vecs.shape[-2:]).clone()
    vals[idx] = fixed_vals.to(vals)
    vecs[idx] = fixed_vecs.to(vecs)
    return vals.reshape(m.shape[:-1]), vecs.reshape(m.shape)


def _host_eigh(matrices: list[Tensor]) -> list[tuple[Tensor, Tensor]]:
    threads = torch.get_num_threads()
    if threads <= 1 or len(matrices) <= 1:
        return [torch.linalg.eigh(m) for m in matrices]
    # the largest batches first, so the pool ends evenly
    order = sorted(range(len(matrices)), key=lambda i: -matrices[i].numel())
    with ThreadPoolExecutor(max_workers=threads) as pool:
        results = dict(zip(order, pool.map(torch.linalg.eigh, [matrices[i] for i in order]),
                           strict=True))
    return [results[i] for i in range(len(matrices))]
