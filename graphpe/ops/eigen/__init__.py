"""Laplacian eigenpairs (LapPE, SignNet, SPE): the batched torch kernels (:mod:`.tensor`), the
dense per-device solvers (:mod:`.dense`), the sparse Chebyshev solver for large graphs
(:mod:`.sparse`), the Lanczos and shift-invert solvers and the per-component choice among them
(:mod:`.krylov`), fill-reducing orderings and the exact analysis of a sparse factor
(:mod:`.ordering`) and the compiled CPU kernels (:mod:`.compiled`)."""

from graphpe.ops.eigen.dense import batched_eigh, cupy_available
from graphpe.ops.eigen.krylov import (
    SolverChoice,
    auto_eigenpairs,
    choose_sparse_solver,
    lanczos_eigenpairs,
    shift_invert_eigenpairs,
)
from graphpe.ops.eigen.ordering import SymbolicFactor, minimum_degree_order
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
    "SymbolicFactor",
    "auto_eigenpairs",
    "batched_eigh",
    "canonical_signs",
    "chebyshev_eigenpairs",
    "check_eigenpair_options",
    "choose_sparse_solver",
    "component_basis",
    "cupy_available",
    "lanczos_eigenpairs",
    "laplacian_eigenpairs",
    "minimum_degree_order",
    "random_signs",
    "rw_scale",
    "shift_invert_eigenpairs",
]
