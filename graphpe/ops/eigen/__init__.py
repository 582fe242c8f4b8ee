"""Laplacian eigenpairs (LapPE, SignNet, SPE): the batched torch kernels (:mod:`.tensor`), the
dense per-device solvers (:mod:`.dense`), the sparse Chebyshev solver for large graphs
(:mod:`.sparse`), the ARPACK solvers and the per-component choice among them (:mod:`.krylov`)
and the compiled CPU kernels (:mod:`.compiled`)."""

from graphpe.ops.eigen.dense import batched_eigh, cupy_available
from graphpe.ops.eigen.krylov import (
    SolverChoice,
    choose_sparse_solver,
    lanczos_eigenpairs,
    shift_invert_eigenpairs,
)
from graphpe.ops.eigen.sparse import (
    ComponentBasis,
    SparseEigenpairs,
    chebyshev_eigenpairs,
    component_basis,
)
from graphpe.ops.eigen.tensor import (
    DENSE_MAX_NODES,
    SIGN_MODES,
    Eigenpairs,
    canonical_signs,
    check_eigenpair_options,
    laplacian_eigenpairs,
    random_signs,
    rw_scale,
)

__all__ = [
    "DENSE_MAX_NODES",
    "SIGN_MODES",
    "ComponentBasis",
    "Eigenpairs",
    "SolverChoice",
    "SparseEigenpairs",
    "batched_eigh",
    "canonical_signs",
    "chebyshev_eigenpairs",
    "check_eigenpair_options",
    "choose_sparse_solver",
    "component_basis",
    "cupy_available",
    "lanczos_eigenpairs",
    "laplacian_eigenpairs",
    "random_signs",
    "rw_scale",
    "shift_invert_eigenpairs",
]
