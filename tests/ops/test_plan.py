"""ExecPlan: the execution settings of the kernels as one checked value."""

from __future__ import annotations

import pytest
import torch

from graphpe.ops import laplacian_eigenpairs, random_walk_landing_probs
from graphpe.ops.plan import DEFAULT_PLAN, ExecPlan, execution_plan


@pytest.mark.parametrize("kwargs, message", [
    ({"kernel": "fast"}, r"^kernel must be one of \('auto', 'compiled', 'tensor'\), got 'fast'$"),
    ({"eigh_backend": "magma"}, r"^eigh_backend must be one of \('auto', 'torch', 'cupy', "
                                r"'host'\), got 'magma'$"),
    ({"sparse_solver": "lobpcg"}, r"^sparse_solver must be one of \('auto', 'chebyshev', "
                                  r"'lanczos', 'shift_invert', 'arpack'\), got 'lobpcg'$"),
    ({"compute_dtype": torch.float16}, r"^compute_dtype must be one of \(None, torch.float32, "
                                       r"torch.float64\), got torch.float16$"),
    ({"dense_max_nodes": -1}, r"^dense_max_nodes must be an int >= 0, got -1$"),
    ({"bucket_granularity": 0}, r"^bucket_granularity must be a positive int or None, got 0$"),
    ({"max_dense_bytes": 0}, r"^max_dense_bytes must be a positive int, got 0$"),
    ({"sparse_max_iter": True}, r"^sparse_max_iter must be a positive int, got True$"),
    ({"sparse_tol": -1e-3}, r"^sparse_tol must be a finite number >= 0, got -0.001$"),
])
def test_bad_settings_name_what_is_allowed(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ExecPlan(**kwargs)


def test_plans_are_values():
    assert DEFAULT_PLAN == ExecPlan() and hash(DEFAULT_PLAN) == hash(ExecPlan())
    made = execution_plan(dense_max_nodes=5, sparse_solver="arpack")
    assert made == ExecPlan(dense_max_nodes=5, sparse_solver="arpack")
    assert execution_plan(dense_max_nodes=5, sparse_solver="arpack") is made  # made once
    with pytest.raises(ValueError, match=r"^dense_max_nodes must be an int >= 0, got -1$"):
        execution_plan(dense_max_nodes=-1)


def test_plans_give_the_same_encoding():
    # a path and a cycle, through every kernel and with the dense limit below both graphs
    ei = torch.tensor([[0, 1, 1, 2, 3, 4, 4, 5, 5, 3], [1, 0, 2, 1, 4, 3, 5, 4, 3, 5]])
    ptr = torch.tensor([0, 3, 6])
    want = random_walk_landing_probs(ei, 6, 4, ptr=ptr)
    pairs = laplacian_eigenpairs(ei, 6, 2, ptr=ptr, dtype=torch.float64)
    for plan in (ExecPlan(kernel="tensor"), ExecPlan(kernel="compiled", dense_max_nodes=0),
                 ExecPlan(kernel="tensor", dense_max_nodes=0, compute_dtype=torch.float64)):
        torch.testing.assert_close(random_walk_landing_probs(ei, 6, 4, ptr=ptr, plan=plan),
                                   want, atol=1e-6, rtol=0)
        got = laplacian_eigenpairs(ei, 6, 2, ptr=ptr, dtype=torch.float64, plan=plan)
        torch.testing.assert_close(got.eigvals, pairs.eigvals, atol=1e-8, rtol=0)
