"""Laplacian eigenvector positional encodings."""

from __future__ import annotations

import numbers
from dataclasses import dataclass

from torch import Tensor

from graphpe.ops.eigen import DENSE_MAX_NODES, check_eigenpair_options, laplacian_eigenpairs
from graphpe.ops.graph import per_node
from graphpe.ops.plan import ExecPlan, execution_plan
from graphpe.transforms.base import (
    PETransform,
    check_attr_names,
    check_flag,
    check_seed,
    check_size_limit,
    option,
)


@dataclass(eq=False, repr=False)
class LaplacianPE(PETransform):
    r"""Laplacian eigenvector positional encoding (Dwivedi et al., "Benchmarking Graph Neural
    Networks", 2020), computed for a whole batch in one batched ``eigh`` per size bucket.

    For each graph, with :math:`L = I - D^{-1/2} A D^{-1/2}` (``sym``), :math:`I - D^{-1} A`
    (``rw``) or :math:`D - A` (``none``) on the undirected simple graph underlying
    ``edge_index``, the eigenpairs :math:`(\lambda_j, v_j)` are sorted by eigenvalue, the
    trivial ones (:math:`\lambda = 0`, one per connected component) are dropped unless
    ``keep_trivial``, and the next ``k`` are kept. Writes:

    - ``lap_pe`` ``[N, k]``: the eigenvectors, rows are nodes;
    - ``lap_eigvals`` ``[N, k]``: each node carries its graph's eigenvalues, so they batch like
      node features;
    - ``lap_mask`` ``[N, k]`` (bool): False in the columns of a graph with fewer than ``k``
      eigenpairs, where ``lap_pe`` is 0 and ``lap_eigvals`` is ``pad_value``.

    Args:
        k: number of eigenpairs (default 8).
        normalization: ``"sym"``, ``"rw"`` or ``"none"``.
        keep_trivial: keep the eigenvalue-0 pairs (as SPE does).
        sign: ``"canonical"`` (deterministic, independent of node order where the spectrum
            allows), ``"random"`` (canonical, then a random flip per graph and column, for
            augmentation) or ``"none"``.
        seed: seed of the random signs; calls draw successive signs from one generator.
        pad_value: eigenvalue written into padded columns.
        attr_names: names of the three attributes written.
        attr_name: PyG's spelling (``AddLaplacianEigenvectorPE(k, attr_name=...)``): the name of
            the eigenvector attribute alone, None appending the eigenvectors to ``x`` as PyG
            does; eigenvalues and mask keep their names from ``attr_names``.
        dense_max_nodes: larger graphs use a sparse eigensolver and are never densified.
        eigh_backend: dense solver (``"auto"``, ``"torch"``, ``"cupy"``, ``"host"``); on CUDA,
            ``auto`` uses CuPy's batched ``eigh`` above 32 nodes when CuPy is installed.
        sparse_solver: ``"auto"`` (on the CPU, per connected component: shift-invert
            Lanczos where the gaps are tiny and the sparse LU stays small, else Lanczos; on a
            GPU, Chebyshev-filtered subspace iteration), ``"chebyshev"``, ``"lanczos"``,
            ``"shift_invert"`` or ``"arpack"`` (``lanczos``); see
            :class:`graphpe.ops.plan.ExecPlan`.
    """

    k: int = option(8)
    normalization: str = option("sym")
    keep_trivial: bool = option(False, check_flag)
    sign: str = option("canonical")
    seed: int | None = option(None, lambda name, value: check_seed(value, name))
    pad_value: float = option(0.0)
    attr_names: tuple[str, str, str] = option(("lap_pe", "lap_eigvals", "lap_mask"),
                                              lambda _, value: tuple(value))
    # solvers agree to rounding, but a cache must not mix their outputs
    dense_max_nodes: int = option(DENSE_MAX_NODES, check_size_limit)
    sparse_solver: str = option("auto")
    eigh_backend: str = option("auto")
    # PyG's spelling, folded into attr_names
    attr_name: str | None = option("", key=False)

    def validate(self) -> None:
        if self.attr_name != "":  # given: PyG's single name for the eigenvectors
            self.attr_names = (self.attr_name, *self.attr_names[1:])
            self.attr_name = ""
        check_eigenpair_options(self.k, self.normalization, self.sign)
        _ = self.plan  # its construction checks the execution options
        if len(self.attr_names) != 3:
            raise ValueError("attr_names must name (eigenvectors, eigenvalues, mask)")
        # (eigenvectors named None are appended to x, as PyG's attr_name=None)
        check_attr_names(dict(zip(("eigenvectors' name", "eigenvalues' name", "mask's name"),
                                  self.attr_names, strict=True)),
                         optional=("eigenvectors' name",))
        if isinstance(self.pad_value, bool) or not isinstance(self.pad_value, numbers.Real):
            raise ValueError(f"pad_value must be a number, got {self.pad_value!r}")
        self.pad_value = float(self.pad_value)  # (0 and 0.0: one setting, one cache key)

    @property
    def plan(self) -> ExecPlan:
        """The execution options as the kernel takes them."""
        return execution_plan(dense_max_nodes=self.dense_max_nodes,
                              sparse_solver=self.sparse_solver, eigh_backend=self.eigh_backend)

    @property
    def draws_random(self) -> bool:
        return self.sign == "random"

    def compute(
        self,
        edge_index: Tensor,
        num_nodes: int,
        ptr: Tensor | None,
        edge_weight: Tensor | None = None,
    ) -> dict[str, Tensor]:
        pairs = laplacian_eigenpairs(
            edge_index,
            num_nodes,
            self.k,
            ptr=ptr,
            edge_weight=edge_weight,
            normalization=self.normalization,
            keep_trivial=self.keep_trivial,
            sign=self.sign,
            generator=self.draw_generator(),
            pad_value=self.pad_value,
            plan=self.plan,
        )
        vec_name, val_name, mask_name = self.attr_names
        return {
            vec_name: pairs.eigvecs,
            val_name: per_node(pairs.eigvals, ptr, num_nodes),
            mask_name: per_node(pairs.mask, ptr, num_nodes),
        }
