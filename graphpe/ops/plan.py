"""How a kernel computes, as one value: :class:`ExecPlan`.

A kernel's signature lists its maths (the graph, the encoding's settings, the output dtype);
everything that chooses *how* it runs (the implementation, solver, working precision, size
thresholds, memory budgets) travels as one :class:`ExecPlan`. Every plan gives the same
encoding, to the rounding of its working precision and the tolerance of its solver; the parity
tests compare the plans' results.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch

from graphpe.ops.checks import (
    check_choice,
    check_number,
    check_optional_positive_int,
    check_positive_int,
    check_size_limit,
)
from graphpe.ops.host import KERNELS

EIGH_BACKENDS = ("auto", "torch", "cupy", "host")
SPARSE_SOLVERS = ("auto", "chebyshev", "lanczos", "shift_invert", "arpack")
COMPUTE_DTYPES = (None, torch.float32, torch.float64)


@dataclass(frozen=True)
class ExecPlan:
    """Execution settings of graphpe's batched kernels. A field left at None means the kernel's
    own default (stated in each kernel's docstring).

    Args:
        kernel: ``compiled`` (CPU tensors only: one compiled loop over the graphs, see
            :mod:`graphpe.ops.host`), ``tensor`` (padded size buckets, batched torch
            operations, any device) or ``auto`` (``compiled`` on the CPU).
        compute_dtype: working precision of the torch path (None: the kernel's default; the
            compiled kernels compute in float64).
        dense_max_nodes: graphs up to this size take the dense path; larger ones the sparse
            one and are never densified (None: the kernel's default).
        bucket_granularity: (``kernel="tensor"``) size buckets round node counts up to a
            multiple of this (None: exact sizes for 1024+ graphs, else a geometric ladder
            that pads no graph by more than 1.25x, :func:`~graphpe.ops.graph.bucket_growth_for`).
        max_dense_bytes: memory for the padded dense blocks formed at once; a batch of
            mid-sized graphs is processed a group of buckets at a time.
        max_block_bytes: (random walks) memory of one dense block of walk powers.
        sparse_block_bytes: (random walks) memory of one block of sparse walk columns.
        eigh_backend: dense eigensolver of the size buckets
            (:func:`graphpe.ops.eigen.dense.batched_eigh`): ``auto``, ``torch``, ``cupy`` or
            ``host``.
        sparse_solver: eigensolver of graphs above ``dense_max_nodes``: ``chebyshev``
            (Chebyshev-filtered subspace iteration on the graph's device; memory a few
            ``n x (k + 16)`` blocks), ``lanczos`` (thick-restart Lanczos with partial
            reorthogonalization on the null-space-deflated Laplacian per connected
            component, on the CPU; memory ``(max(3k, k + 32) + 1) x n`` float64),
            ``shift_invert`` (ARPACK on ``(L - sigma I)^-1`` with one sparse LU per
            component, sigma just below 0; memory the factor plus the Lanczos vectors),
            ``arpack`` (the former name of ``lanczos``) or ``auto`` (``chebyshev`` on a GPU,
            then Lanczos where it does not converge in ``sparse_max_iter`` filters; on the CPU
            per component: ``shift_invert`` where a Lanczos probe finds tiny gaps and the LU
            factor, predicted from two samples and then measured, fits its budget, else
            ``lanczos``; see :mod:`graphpe.ops.eigen.krylov`).
        sparse_tol: residual tolerance of the sparse eigensolver (None: the kernel's default).
        sparse_max_iter: filter iterations of ``chebyshev``.
        max_memory_bytes: working memory a large-graph kernel may use (random walks above
            ``dense_max_nodes``; shift-invert's sparse factor, also capped at
            :data:`~graphpe.ops.eigen.krylov.FACTOR_MAX_BYTES`): each path has a stated
            memory bound, and a kernel takes a path whose bound fits, or raises a ValueError
            naming the graph's size, the smallest estimate and the budget. None: a quarter
            (:data:`~graphpe.ops.host.MEMORY_BUDGET_FRACTION`) of the memory available at the
            call (psutil, else ``/proc/meminfo``; 1 GiB where neither can be read), see
            :func:`~graphpe.ops.host.memory_budget`.
    """

    kernel: str = "auto"
    compute_dtype: torch.dtype | None = None
    dense_max_nodes: int | None = None
    bucket_granularity: int | None = None
    max_dense_bytes: int = 256 * 2**20
    max_block_bytes: int = 4 * 2**20
    sparse_block_bytes: int = 256 * 2**20
    eigh_backend: str = "auto"
    sparse_solver: str = "auto"
    sparse_tol: float | None = None
    sparse_max_iter: int = 200
    max_memory_bytes: int | None = None

    def __post_init__(self) -> None:
        check_choice("kernel", self.kernel, KERNELS)
        check_choice("compute_dtype", self.compute_dtype, COMPUTE_DTYPES)
        if self.dense_max_nodes is not None:
            check_size_limit("dense_max_nodes", self.dense_max_nodes)
        check_optional_positive_int("bucket_granularity", self.bucket_granularity)
        check_optional_positive_int("max_memory_bytes", self.max_memory_bytes)
        for name in ("max_dense_bytes", "max_block_bytes", "sparse_block_bytes",
                     "sparse_max_iter"):
            check_positive_int(name, getattr(self, name))
        check_choice("eigh_backend", self.eigh_backend, EIGH_BACKENDS)
        check_choice("sparse_solver", self.sparse_solver, SPARSE_SOLVERS)
        if self.sparse_tol is not None:
            check_number("sparse_tol", self.sparse_tol, low=0.0)


DEFAULT_PLAN = ExecPlan()


def execution_plan(**settings: object) -> ExecPlan:
    """``ExecPlan(**settings)``, made and checked once per distinct settings: transforms call
    their kernels once per graph on the ``pre_transform`` path, where building (and checking)
    a new plan each time would cost a noticeable share of the call."""
    try:
        return _cached_plan(tuple(sorted(settings.items())))
    except TypeError:  # an unhashable setting: ExecPlan's check says what is wrong with it
        return ExecPlan(**settings)


@functools.lru_cache(maxsize=256)
def _cached_plan(settings: tuple[tuple[str, object], ...]) -> ExecPlan:
    return ExecPlan(**dict(settings))
