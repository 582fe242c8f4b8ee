"""Laplacian eigenpairs for a whole batch of graphs.

Small graphs (the common case: molecules, TU graphs) are grouped by node count into size
buckets; each bucket is one padded dense ``[B, n, n]`` Laplacian and one batched ``eigh``.
Padded rows get a diagonal entry above the spectrum, so their eigenpairs sort after every real
one and are never selected. Graphs above ``dense_max_nodes`` go to a sparse solver and are never
densified.

Conventions:
- the graph is the undirected simple graph underlying the input (``ops.graph.undirected_simple``);
- the trivial eigenpairs are the eigenvalue-0 ones, one per connected component (isolated nodes
  count as components); by default they are dropped and the next ``k`` are kept;
- a graph with fewer than ``k`` remaining eigenpairs is zero-padded and ``mask`` marks the
  valid columns; padded eigenvalues are ``pad_value``;
- signs are canonical by default (see :func:`canonical_signs`), or random from a generator.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import torch
from torch import Tensor

from graphpe.ops.checks import check_positive_int
from graphpe.ops.eigen.compiled import laplacian_eigenpairs_host
from graphpe.ops.eigen.dense import batched_eigh
from graphpe.ops.eigen.krylov import (
    FACTOR_MAX_BYTES,
    auto_eigenpairs,
    lanczos_eigenpairs,
    shift_invert_eigenpairs,
)
from graphpe.ops.eigen.lanczos import SPARSE_TOL
from graphpe.ops.eigen.sparse import (
    ComponentBasis,
    SparseEigenpairs,
    chebyshev_eigenpairs,
    component_basis,
)
from graphpe.ops.graph import (
    NORMALIZATIONS,
    SizeBucket,
    bucket_groups,
    bucket_growth_for,
    bucket_node_index,
    components_per_graph,
    connected_components,
    dense_adjacency,
    inv_sqrt_degree,
    laplacian_entries,
    node_range_subgraph,
    single_graph_ptr,
    size_buckets,
    sparse_operator,
    undirected_simple,
    validate_graph,
)
from graphpe.ops.host import host_array, memory_budget, numpy_dtype, simple_csr, use_compiled
from graphpe.ops.plan import DEFAULT_PLAN, ExecPlan

# scipy.sparse is imported where it is used: importing it takes ~0.1 s, which a process that
# never meets a large graph need not pay
if TYPE_CHECKING:
    import scipy.sparse as sp

SIGN_MODES = ("canonical", "random", "none")
# Up to this size a dense solve beats the sparse solvers: per molecule-like graph, k = 16, one
# CPU thread, dense (LAPACK dsytrd + bisection) against Chebyshev subspace iteration: 400
# nodes 4.1 ms vs 12.1, 500 nodes 7.5 vs 14.3, 700 nodes 17.3 vs 18.3, 1000 nodes 45 vs 26.
DENSE_MAX_NODES = 640
_FLOAT32_TOL = 1e-5  # residuals float32 SpMM reliably reaches on L_sym


class Eigenpairs(NamedTuple):
    """``eigvals`` ``[G, k]`` per graph, ``eigvecs`` ``[N, k]`` per node, ``mask`` ``[G, k]``
    (True where the column holds a real eigenpair)."""

    eigvals: Tensor
    eigvecs: Tensor
    mask: Tensor


def laplacian_eigenpairs(
    edge_index: Tensor,
    num_nodes: int,
    k: int,
    *,
    ptr: Tensor | None = None,
    edge_weight: Tensor | None = None,
    normalization: str = "sym",
    keep_trivial: bool = False,
    sign: str = "canonical",
    generator: torch.Generator | None = None,
    pad_value: float = 0.0,
    dtype: torch.dtype = torch.float32,
    plan: ExecPlan = DEFAULT_PLAN,
) -> Eigenpairs:
    """The ``k`` smallest (non-trivial) Laplacian eigenpairs of every graph in a batch.

    Args:
        edge_index: ``[2, E]`` edges of all graphs (node ids global to the batch).
        num_nodes: total number of nodes.
        k: eigenpairs kept per graph.
        ptr: ``[G + 1]`` node offsets of the graphs (PyG's ``Batch.ptr``); one graph if None.
        edge_weight: ``[E]`` finite non-negative weights, or None.
        normalization: ``sym`` (``I - D^-1/2 A D^-1/2``), ``rw`` (``I - D^-1 A``; eigenvectors
            ``D^-1/2 u`` rescaled to unit norm) or ``none`` (``D - A``).
        keep_trivial: keep the eigenvalue-0 pairs (one per component) instead of dropping them.
        sign: ``canonical`` (deterministic, see :func:`canonical_signs`), ``random`` (the
            canonical vectors flipped at random per graph and column, from ``generator``) or
            ``none`` (as the solver returns).
        pad_value: eigenvalue written into padded columns.
        dtype: dtype of the returned tensors.
        plan: how to compute (:class:`~graphpe.ops.plan.ExecPlan`): graphs up to
            ``plan.dense_max_nodes`` (default :data:`DENSE_MAX_NODES`) are solved densely, by
            the compiled kernel (one LAPACK ``eigh`` of exactly each graph's size, see
            :mod:`graphpe.ops.eigen.compiled`) or in padded size buckets (``plan.kernel=
            "tensor"``, any device, one batched ``plan.eigh_backend`` solve per bucket, in
            ``plan.compute_dtype``: float64 on the CPU and float32 on GPUs by default); larger
            graphs by ``plan.sparse_solver`` (``chebyshev`` on the graph's device;
            ``lanczos`` and ``shift_invert`` per connected component on the CPU, components
            up to ``dense_max_nodes`` densely; ``auto``: ``chebyshev`` on a GPU, on the CPU
            a choice per component by :func:`~graphpe.ops.eigen.krylov.choose_sparse_solver`).
            Its ``sparse_tol`` is the residual ``||L v - lambda v||`` every pair must reach
            (default :data:`~graphpe.ops.eigen.lanczos.SPARSE_TOL`, ``1e-9``, times ``max deg``
            for ``none``; ``chebyshev`` in float32: ``1e-5``; a float64 Chebyshev solve
            filters its residuals in float32 products, see
            :func:`~graphpe.ops.eigen.sparse.chebyshev_eigenpairs`'s ``filter_dtype``).
    """
    check_eigenpair_options(k, normalization, sign)
    device = edge_index.device
    validate_graph(edge_index, num_nodes, edge_weight, ptr)
    # (the plan's unset fields read here, not through a new plan: this runs once per graph
    # on the pre_transform path, where building a plan would cost a quarter of the call)
    dense_max_nodes = DENSE_MAX_NODES if plan.dense_max_nodes is None else plan.dense_max_nodes
    compute_dtype = plan.compute_dtype or (torch.float64 if device.type == "cpu"
                                           else torch.float32)
    num_graphs = 1 if ptr is None else ptr.numel() - 1
    flips = None
    if sign == "random":
        flips = random_signs(num_graphs, k, generator, compute_dtype, device)
    # An edge of weight 0 connects nothing: it must not merge components.
    linked = edge_index if edge_weight is None else edge_index[:, edge_weight > 0]
    labels = None

    if use_compiled(plan.kernel, device) and ptr is None and num_nodes > dense_max_nodes:
        # one large graph: nothing for the compiled kernel of small graphs (whose input CSR
        # would cost as much as the sparse path's own graph)
        eigvals = torch.full((1, k), pad_value, dtype=compute_dtype)
        eigvecs = torch.zeros(num_nodes, k, dtype=compute_dtype)
        mask = torch.zeros(1, k, dtype=torch.bool)
        ptr, large = single_graph_ptr(num_nodes, device), [0]
    elif use_compiled(plan.kernel, device):
        ptr_np = np.array([0, num_nodes]) if ptr is None else host_array(ptr, np.int64)
        eigvals_np, eigvecs_np, mask_np, large = laplacian_eigenpairs_host(
            simple_csr(edge_index, num_nodes, edge_weight), ptr_np, k, normalization,
            keep_trivial, sign, None if flips is None else host_array(flips, np.float64),
            dense_max_nodes, pad_value, numpy_dtype(dtype))
        eigvals = torch.from_numpy(eigvals_np)
        eigvecs = torch.from_numpy(eigvecs_np)
        mask = torch.from_numpy(mask_np)
        if not large:  # the common case: return without any further tensor work
            return Eigenpairs(eigvals, eigvecs, mask)
        ptr = torch.from_numpy(ptr_np)
    else:
        ptr = single_graph_ptr(num_nodes, device) if ptr is None else ptr.to(device, torch.long)
        sizes = ptr[1:] - ptr[:-1]
        labels = connected_components(linked, num_nodes)
        trivial = components_per_graph(labels, ptr)
        skip = torch.zeros_like(trivial) if keep_trivial else trivial
        eigvals = torch.full((num_graphs, k), pad_value, dtype=compute_dtype, device=device)
        eigvecs = torch.zeros(num_nodes, k, dtype=compute_dtype, device=device)
        mask = torch.zeros(num_graphs, k, dtype=torch.bool, device=device)
        cols = torch.arange(k, device=device)
        # Dense path: one batched eigh per size bucket, a memory-bounded group at a time.
        granularity = plan.bucket_granularity
        buckets = size_buckets(sizes, granularity or 1, dense_max_nodes,
                               growth=bucket_growth_for(sizes) if granularity is None else None)
        itemsize = torch.finfo(compute_dtype).bits // 8
        for group in bucket_groups(buckets, itemsize, plan.max_dense_bytes):
            _dense_group(group, edge_index, edge_weight, ptr, sizes, skip, cols, normalization,
                         sign, flips, pad_value, compute_dtype, plan.eigh_backend, eigvals,
                         eigvecs, mask)
        large = torch.nonzero(sizes > dense_max_nodes).flatten().tolist()

    # Sparse path: graphs too large to densify (few per batch, hence the loop).
    cols = torch.arange(k, device=device)
    for g in large:
        start, end = int(ptr[g]), int(ptr[g + 1])
        sub_ei, sub_w = node_range_subgraph(edge_index, edge_weight, start, end)
        graph = undirected_simple(sub_ei, end - start, sub_w)
        ei, off, diag, deg = laplacian_entries(graph, normalization, compute_dtype)
        solver = plan.sparse_solver
        if solver == "auto":
            solver = auto_sparse_solver(ei.device)
        vals = vecs = None
        if solver == "chebyshev":
            if labels is None:  # (the compiled path): this graph's components only
                sub_linked = graph.edge_index if graph.edge_weight is None else \
                    graph.edge_index[:, graph.edge_weight > 0]
                sub_labels = connected_components(sub_linked, end - start)
            else:
                sub_labels = labels[start:end]
            vals, vecs = _chebyshev_smallest(
                ei, off, diag, deg, sub_labels, k, keep_trivial, normalization,
                plan.sparse_tol, plan.sparse_max_iter, warn=plan.sparse_solver == "chebyshev")
            if vals is None:
                warnings.warn(
                    f"graph {g} ({end - start} nodes): Chebyshev subspace iteration did not "
                    f"converge in {plan.sparse_max_iter} filters; solving it on the CPU "
                    "(Lanczos or shift-invert, per component)",
                    RuntimeWarning, stacklevel=2)
                solver = "auto"
        if vals is None:
            vals, vecs = _sparse_smallest(
                ei, off, diag, deg, k, keep_trivial, normalization, dense_max_nodes,
                plan.sparse_tol, solver, plan.sparse_max_iter,
                max_factor_bytes=min(FACTOR_MAX_BYTES, memory_budget(plan.max_memory_bytes)),
                max_basis_bytes=memory_budget(plan.max_memory_bytes))
            vals = torch.from_numpy(vals)
            vecs = torch.from_numpy(vecs)
        vals = vals.to(eigvals)
        vecs = vecs.to(eigvecs)
        m = vals.numel()
        valid = (cols < m).unsqueeze(0)
        vecs = torch.cat([vecs, vecs.new_zeros(vecs.size(0), k - m)], dim=1).unsqueeze(0)
        scale = rw_scale(inv_sqrt_degree(deg)).unsqueeze(0) if normalization == "rw" else None
        vecs = _finish(vecs, valid, scale, sign, None if flips is None else flips[g : g + 1])
        eigvals[g, :m] = vals
        mask[g, :m] = True
        eigvecs[start:end] = vecs[0]
    return Eigenpairs(eigvals.to(dtype), eigvecs.to(dtype), mask)


def auto_sparse_solver(device: torch.device) -> str:
    """What ``sparse_solver="auto"`` runs on ``device``: ``chebyshev`` on a GPU (the one
    solver that runs there; the CPU's choice where it does not converge), ``auto`` on the CPU
    (a choice per connected component, :func:`~graphpe.ops.eigen.krylov.choose_sparse_solver`)."""
    return "auto" if device.type == "cpu" else "chebyshev"


def check_eigenpair_options(k: int, normalization: str = "sym", sign: str = "canonical") -> None:
    """Raise ``ValueError`` naming the first invalid setting of :func:`laplacian_eigenpairs`
    (shared with ``LaplacianPE``, which checks at construction)."""
    check_positive_int("k", k)
    for name, value, choices in (("normalization", normalization, NORMALIZATIONS),
                                 ("sign", sign, SIGN_MODES)):
        if value not in choices:
            raise ValueError(f"{name} must be one of {choices}, got {value!r}")


def _dense_group(
    group: list[SizeBucket],
    edge_index: Tensor,
    edge_weight: Tensor | None,
    ptr: Tensor,
    sizes: Tensor,
    skip: Tensor,
    cols: Tensor,
    normalization: str,
    sign: str,
    flips: Tensor | None,
    pad_value: float,
    compute_dtype: torch.dtype,
    eigh_backend: str,
    eigvals: Tensor,
    eigvecs: Tensor,
    mask: Tensor,
) -> None:
    """Solve one group of size buckets densely and write the kept pairs into the outputs."""
    device = edge_index.device
    adjacency = dense_adjacency(edge_index, ptr, group, edge_weight, compute_dtype)
    laplacians = [
        _dense_laplacian(adj, bucket_node_index(ptr, bucket)[1], normalization)
        for bucket, adj in zip(group, adjacency, strict=True)
    ]
    solved = batched_eigh([lap for lap, _ in laplacians], eigh_backend)
    for bucket, (_, scale), (vals, vecs) in zip(group, laplacians, solved, strict=True):
        g = bucket.graphs.to(device)
        node, inside = bucket_node_index(ptr, bucket)
        pick = skip[g].unsqueeze(1) + cols.unsqueeze(0)  # [B, k] column of each kept pair
        valid = pick < sizes[g].unsqueeze(1)
        pick = pick.clamp(max=bucket.size - 1)
        sel_vals = torch.gather(vals, 1, pick)
        sel_vecs = torch.gather(vecs, 2, pick.unsqueeze(1).expand(-1, bucket.size, -1))
        sel_vecs = _finish(sel_vecs, valid, scale, sign, None if flips is None else flips[g])
        eigvals[g] = torch.where(valid, sel_vals, torch.full_like(sel_vals, pad_value))
        mask[g] = valid
        eigvecs[node[inside]] = sel_vecs[inside]


def _dense_laplacian(
    adj: Tensor, inside: Tensor, normalization: str
) -> tuple[Tensor, Tensor | None]:
    """Padded dense Laplacians ``[B, n, n]`` from adjacency blocks; padded diagonal entries sit
    above the spectrum so padded eigenpairs sort last. Also returns ``D^-1/2`` for ``rw``."""
    deg = adj.sum(-1)
    if normalization == "none":
        lap = -adj
        # Eigenvalues of D - A are at most 2 * max degree.
        pad = 2.0 * deg.amax(dim=1, keepdim=True) + 1.0
        diag = torch.where(inside, deg, pad)
        lap.diagonal(dim1=-2, dim2=-1).copy_(diag)
        return lap, None
    dis = inv_sqrt_degree(deg)
    lap = adj.mul_(dis.unsqueeze(1)).mul_(dis.unsqueeze(2)).neg_()
    # Chung's convention: 0 on an isolated node's diagonal; 3 > 2 >= every eigenvalue on padding.
    diag = torch.where(inside, (deg > 0).to(adj.dtype), torch.full_like(deg, 3.0))
    lap.diagonal(dim1=-2, dim2=-1).copy_(diag)
    return lap, rw_scale(dis) if normalization == "rw" else None


def rw_scale(dis: Tensor) -> Tensor:
    """The map from ``L_sym`` to ``L_rw`` eigenvectors, ``D^-1/2``, with 1 on isolated nodes:
    their row of ``L_rw = I - D^-1 A`` is zero (Chung's convention), so their trivial
    eigenvector is the indicator, which ``D^-1/2 = 0`` would wipe out."""
    return torch.where(dis > 0, dis, torch.ones_like(dis))


def _finish(
    vecs: Tensor,
    valid: Tensor,
    rw_scale: Tensor | None,
    sign: str,
    flips: Tensor | None,
) -> Tensor:
    """Zero padded columns, map ``L_sym`` vectors to ``L_rw`` ones, and fix signs: ``vecs`` is
    ``[B, n, k]`` with zero padded rows, ``valid`` ``[B, k]``."""
    vecs = vecs * valid.unsqueeze(1)
    if rw_scale is not None:
        vecs = vecs * rw_scale.unsqueeze(2)
        vecs = vecs / vecs.norm(dim=1, keepdim=True).clamp(min=1e-30)
    if sign == "canonical":
        vecs = vecs * canonical_signs(vecs, valid)
    elif sign == "random":
        # flips of the canonical orientation, so the same draws give the same vectors
        # whichever solver ran
        vecs = vecs * (canonical_signs(vecs, valid) * flips.unsqueeze(1))
    return vecs


def canonical_signs(vecs: Tensor, mask: Tensor | None = None, tol: float = 1e-6) -> Tensor:
    """Signs that make eigenvectors canonical: ``vecs`` is ``[..., n, k]`` (padded rows zero),
    the result ``[..., 1, k]`` in ``{-1, +1}`` to multiply it by.

    The sign makes ``sum_i v_i^3`` positive, a rule that does not depend on node order. Where
    that sum is within ``tol`` (relative) of zero, e.g. for a vector that is antisymmetric under
    an automorphism, whose sign no permutation-invariant rule can fix, the entry of largest
    magnitude is made positive, ties (within ``tol``) going to the lowest index. Columns where
    ``mask`` (``[..., k]``) is False get +1.
    """
    third = vecs.pow(3).sum(dim=-2, keepdim=True)
    mag = vecs.abs()
    max_mag = mag.amax(dim=-2, keepdim=True)
    near = mag >= max_mag - tol
    first = torch.argmax(near.to(torch.uint8), dim=-2, keepdim=True)
    at_max = torch.gather(vecs, -2, first)
    scale = max_mag.pow(3).clamp(min=1e-30)
    sign = torch.where(third.abs() > tol * scale, third.sign(), at_max.sign())
    invalid = sign == 0
    if mask is not None:
        invalid = invalid | ~mask.unsqueeze(-2)
    return torch.where(invalid, torch.ones_like(sign), sign)


def random_signs(
    num_graphs: int,
    k: int,
    generator: torch.Generator | None = None,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str = "cpu",
) -> Tensor:
    """Independent random signs ``[G, k]`` (drawn on the generator's device, then moved)."""
    gen_device = generator.device if generator is not None else "cpu"
    bits = torch.randint(0, 2, (num_graphs, k), generator=generator, device=gen_device)
    return (bits * 2 - 1).to(device=device, dtype=dtype)


def _sparse_smallest(
    edge_index: Tensor,
    off: Tensor,
    diag: Tensor,
    deg: Tensor,
    k: int,
    keep_trivial: bool,
    normalization: str,
    dense_max_nodes: int,
    tol: float | None,
    solver: str,
    max_iter: int = 200,
    max_factor_bytes: int = FACTOR_MAX_BYTES,
    max_basis_bytes: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` smallest (non-trivial) eigenpairs of one large graph's symmetric Laplacian, on
    the CPU, one connected component at a time.

    The spectrum of a disconnected graph is the union of its components' spectra, so each
    component is solved on its own with its one trivial pair deflated (Lanczos never meets a
    many-fold eigenvalue 0): components up to ``dense_max_nodes`` densely, larger ones by
    ``solver`` (``lanczos``, ``shift_invert``, or ``auto``: chosen per component by
    :func:`~graphpe.ops.eigen.krylov.choose_sparse_solver`; ``arpack`` is ``lanczos``); then
    the ``k`` smallest are kept. Each component contributes exactly one trivial pair, set to
    its normalized ``D^1/2 1`` (``1`` for ``none``) when kept. ``tol``: the residual
    ``||L v - lambda v||`` (default :data:`~graphpe.ops.eigen.lanczos.SPARSE_TOL`, times
    ``max deg`` for ``none``).
    ``max_factor_bytes`` bounds shift-invert's sparse factor (auto does not choose it beyond;
    an explicit ``shift_invert`` raises ``MemoryError``), ``max_basis_bytes`` Lanczos' basis.
    """
    n = diag.numel()
    r, c = edge_index.cpu().numpy()
    v = off.detach().cpu().numpy().astype(np.float64)
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components as scipy_components

    lap = (sp.coo_matrix((v, (r, c)), shape=(n, n))
           + sp.diags(diag.detach().cpu().numpy().astype(np.float64))).tocsr()
    num_comp, labels = scipy_components(lap, directed=False)
    weight = deg.detach().cpu().numpy().astype(np.float64)
    upper = 2.0 * float(weight.max()) * (1 + 1e-6) if normalization == "none" and n else 2.0
    if tol is None:
        tol = SPARSE_TOL * upper / 2.0
    values: list[float] = []
    columns: list[tuple[np.ndarray, np.ndarray]] = []  # (node ids, vector on them)
    order = np.argsort(labels, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(labels, minlength=num_comp))])
    if num_comp > 1:
        lap = lap[order][:, order].tocsr()  # components become diagonal blocks
    for comp in range(num_comp):
        lo, hi = int(bounds[comp]), int(bounds[comp + 1])
        nodes, size = order[lo:hi], hi - lo
        trivial = np.ones(size) if normalization == "none" else np.sqrt(weight[nodes])
        if not trivial.any():
            trivial = np.ones(size)  # an isolated node
        trivial = trivial / np.linalg.norm(trivial)
        if keep_trivial:
            values.append(0.0)
            columns.append((nodes, trivial))
        want = min(k, size - 1)
        if want <= 0:
            continue
        sub = lap if num_comp == 1 else lap[lo:hi, lo:hi]
        if size <= max(dense_max_nodes, want + 2):
            w, u = np.linalg.eigh(sub.toarray())
            w, u = w[1 : want + 1], u[:, 1 : want + 1]  # column 0 is the trivial pair
        else:
            w, u = _component_smallest(sub.tocsr(), trivial, want, upper, tol, solver,
                                       max_iter, max_factor_bytes, max_basis_bytes)
        for j in range(w.size):
            values.append(float(w[j]))
            columns.append((nodes, u[:, j]))
    pick = np.argsort(np.asarray(values), kind="stable")[:k]
    vals = np.asarray(values)[pick]
    vecs = np.zeros((n, pick.size))
    for col, idx in enumerate(pick):
        nodes, vec = columns[idx]
        vecs[nodes, col] = vec
    return vals, vecs


def _component_smallest(
    lap: sp.csr_matrix, trivial: np.ndarray, k: int, upper: float, tol: float, solver: str,
    max_iter: int, max_factor_bytes: int = FACTOR_MAX_BYTES,
    max_basis_bytes: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` smallest nonzero eigenpairs of one connected component's Laplacian ``lap``
    (null vector ``trivial``) by ``solver`` (``chebyshev``: ``max_iter`` filters, then
    Lanczos), ascending."""
    size = lap.shape[0]
    basis = ComponentBasis(torch.from_numpy(trivial), torch.zeros(size, dtype=torch.long), 1)
    if solver == "auto":
        solved, solver = auto_eigenpairs(lap, k, upper=upper, deflate=basis, tol=tol,
                                         max_factor_bytes=max_factor_bytes,
                                         max_basis_bytes=max_basis_bytes)
    elif solver == "shift_invert":
        solved = shift_invert_eigenpairs(lap, k, upper=upper, deflate=basis, tol=tol,
                                         max_factor_bytes=max_factor_bytes)
    elif solver == "chebyshev":
        # the component's CSR as it is (its diagonal stored, as the Chebyshev operator
        # wants): a COO round trip through coalesce would cost a tenth of the solve
        lap.sort_indices()
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
            operator = torch.sparse_csr_tensor(
                torch.from_numpy(lap.indptr.astype(np.int64)),
                torch.from_numpy(lap.indices.astype(np.int64)), torch.from_numpy(lap.data),
                lap.shape, check_invariants=False)
        solved = _chebyshev_solve(operator, k, upper, basis, tol, max_iter, warn=False)
        if not solved.converged:
            warnings.warn(
                f"chebyshev: a component of {size} nodes did not converge in {max_iter} "
                "filters; solving it with Lanczos", RuntimeWarning, stacklevel=4)
            solver = "lanczos"
            solved = lanczos_eigenpairs(lap, k, upper=upper, deflate=basis, tol=tol,
                                        max_basis_bytes=max_basis_bytes)
    else:
        solved = lanczos_eigenpairs(lap, k, upper=upper, deflate=basis, tol=tol,
                                    max_basis_bytes=max_basis_bytes)
    if not solved.converged:
        warnings.warn(
            f"{solver}: a component of {size} nodes reached residual "
            f"{float(solved.residuals.max()):.2e} > tol {tol:.1e}", RuntimeWarning,
            stacklevel=4)
    return solved.eigvals.numpy(), solved.eigvecs.numpy()


def _chebyshev_smallest(
    edge_index: Tensor,
    off: Tensor,
    diag: Tensor,
    deg: Tensor,
    labels: Tensor,
    k: int,
    keep_trivial: bool,
    normalization: str,
    tol: float | None,
    max_iter: int,
    warn: bool,
) -> tuple[Tensor, Tensor] | tuple[None, None]:
    """The ``k`` smallest (non-trivial) eigenpairs of one large graph's symmetric Laplacian by
    Chebyshev-filtered subspace iteration, on the graph's device; ``(None, None)`` when the
    solver does not converge and ``warn`` is False (the caller falls back to ARPACK).

    The null space is known exactly, one vector per component (``D^1/2 1`` normalized on it;
    ``1`` for ``D - A``, the indicator for an isolated node), so it is deflated rather than
    computed; kept trivial pairs come first, in component order."""
    n = diag.numel()
    dtype = off.dtype
    operator = sparse_operator(edge_index, off, n, diag)
    weight = torch.ones_like(deg) if normalization == "none" else deg.clamp(min=0).sqrt()
    basis = component_basis(labels, weight)
    if normalization == "none":
        upper = 2.0 * float(deg.max()) * (1 + 1e-6) if n else 1.0
    else:
        upper = 2.0
    trivial_count = min(k, basis.count) if keep_trivial else 0
    want = min(k - trivial_count, n - basis.count)
    vals = torch.zeros(trivial_count, dtype=torch.float64, device=deg.device)
    vecs = basis.dense(torch.float64)[:, :trivial_count] if trivial_count else None
    if want > 0:
        scale = upper / 2.0  # the residual floor grows with ||L||: 2 for L_sym
        if tol is None:
            tol = (SPARSE_TOL if dtype == torch.float64 else _FLOAT32_TOL) * scale
        solved = _chebyshev_solve(operator, want, upper, basis, tol, max_iter, warn)
        if not solved.converged and not warn:
            return None, None
        vals = torch.cat([vals, solved.eigvals])
        vecs = solved.eigvecs if vecs is None else torch.cat([vecs, solved.eigvecs], dim=1)
    if vecs is None:
        vecs = deg.new_zeros(n, 0, dtype=torch.float64)
    return vals, vecs


def _chebyshev_solve(
    operator: Tensor,
    k: int,
    upper: float,
    basis: ComponentBasis,
    tol: float,
    max_iter: int,
    warn: bool,
) -> SparseEigenpairs:
    """:func:`~graphpe.ops.eigen.sparse.chebyshev_eigenpairs` in the operator's dtype; a
    float64 operator's filter runs in float32 products (half the bytes moved) on the
    residuals (``filter_dtype``), which keeps float64 accuracy; its Rayleigh-Ritz product is
    the one float64 product of an iteration."""
    gen = torch.Generator().manual_seed(0)
    filter_dtype = torch.float32 if operator.dtype == torch.float64 else None
    return chebyshev_eigenpairs(operator, k, upper=upper, deflate=basis, tol=tol,
                                max_iter=max_iter, generator=gen, warn=warn,
                                filter_dtype=filter_dtype)
