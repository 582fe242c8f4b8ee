"""Random feature propagation: the propagation operators, the per-graph normalization
(QR or l2) and the normalized trajectory, as batched torch kernels (any device). The compiled
CPU kernels they match are in :mod:`graphpe.ops.propagate.compiled`.

All operators are built on the undirected simple graph underlying the input
(``ops.graph.undirected_simple``).
"""

from __future__ import annotations

import warnings

import numpy as np
import torch
from torch import Tensor

from graphpe.ops.checks import check_non_negative_int
from graphpe.ops.graph import (
    batch_from_ptr,
    bucket_growth_for,
    bucket_node_index,
    degree,
    edge_values,
    inv_sqrt_degree,
    single_graph_ptr,
    size_buckets,
    sparse_operator,
    undirected_simple,
    validate_graph,
)
from graphpe.ops.host import COMPILED_MAX_NODES, host_array, simple_csr, use_compiled
from graphpe.ops.plan import DEFAULT_PLAN, ExecPlan
from graphpe.ops.propagate.compiled import (
    RANK_BAND,
    normalize_block_host,
    operator_csr,
    propagate_host,
)

OPERATORS = ("adj", "gcn", "rw", "lap_shift")
PROPAGATION_NORMS = ("qr", "l2")


def propagation_operator(
    edge_index: Tensor,
    num_nodes: int,
    kind: str = "gcn",
    edge_weight: Tensor | None = None,
    dtype: torch.dtype = torch.float32,
) -> Tensor:
    """The sparse propagation operator ``S`` ``[N, N]`` (CSR) of the undirected simple graph.

    - ``adj``: ``D^-1/2 A D^-1/2`` (rows of isolated nodes are zero);
    - ``gcn``: ``D~^-1/2 (A + I) D~^-1/2`` with ``D~ = D + I`` (Kipf & Welling);
    - ``rw``: ``D^-1 A``;
    - ``lap_shift``: ``2I - L_sym = I + D^-1/2 A D^-1/2`` (2 on an isolated node), whose dominant
      eigenvectors are the smallest ones of ``L_sym``, so subspace iteration on it approaches
      LapPE.
    """
    if kind not in OPERATORS:
        raise ValueError(f"operator must be one of {OPERATORS}, got {kind!r}")
    validate_graph(edge_index, num_nodes, edge_weight)
    if edge_index.device.type == "cpu":
        # compiled CSR build: a 1M-node / 10M-edge graph in ~1 s, against ~7 s of torch
        # sort/unique/coalesce calls
        indptr, indices, values = operator_csr(
            simple_csr(edge_index, num_nodes, edge_weight), kind)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
            return torch.sparse_csr_tensor(
                torch.from_numpy(indptr), torch.from_numpy(indices),
                torch.from_numpy(values).to(dtype), (num_nodes, num_nodes),
                check_invariants=False)
    graph = undirected_simple(edge_index, num_nodes, edge_weight)
    ei = graph.edge_index
    w = edge_values(graph, dtype)
    deg = degree(ei, num_nodes, w, dtype)
    diag = None
    if kind == "gcn":
        dis = (deg + 1.0).pow(-0.5)
        values = dis[ei[0]] * w * dis[ei[1]]
        diag = dis * dis
    elif kind == "rw":
        inv = torch.where(deg > 0, 1.0 / deg.clamp(min=torch.finfo(dtype).tiny), 0.0)
        values = inv[ei[0]] * w
    else:
        dis = inv_sqrt_degree(deg)
        values = dis[ei[0]] * w * dis[ei[1]]
        if kind == "lap_shift":
            diag = torch.where(deg > 0, torch.ones_like(deg), torch.full_like(deg, 2.0))
    return sparse_operator(ei, values, num_nodes, diag)


def random_feature_propagation(
    edge_index: Tensor,
    num_nodes: int,
    x0: Tensor,
    steps: int,
    operator: str = "gcn",
    normalization: str = "qr",
    *,
    ptr: Tensor | None = None,
    edge_weight: Tensor | None = None,
    dtype: torch.dtype = torch.float32,
    plan: ExecPlan = DEFAULT_PLAN,
) -> Tensor:
    """Random Feature Propagation of the initial features ``x0`` ``[N, draws, d]`` on every
    graph of a batch: the normalized trajectory as ``[N, draws, (steps + 1) * d]`` (blocks
    ``X_0, X_1, ..., X_L`` side by side), with the operator of :func:`propagation_operator`
    and the per-graph normalization of :func:`propagate`.

    ``plan.kernel``: ``compiled`` (CPU tensors: one compiled loop over graphs and draws, float64,
    Gram-Schmidt orthonormalization, see :func:`graphpe.ops.propagate.compiled.propagate_host`),
    ``tensor`` (sparse products and bucketed batched QR in ``dtype``, any device; a single huge
    graph runs fastest here, on all threads) or ``auto`` (``compiled`` for CPU batches of
    graphs up to :data:`~graphpe.ops.host.COMPILED_MAX_NODES` nodes).

    One rank rule for both paths: ``qr`` sets a column to zero where its remainder is at most
    :func:`rank_tolerance` ``(dtype)`` of its block's largest column, the tolerance of the
    trajectory's precision (the compiled path iterates in float64 but cuts at the same place),
    so both equal :func:`propagate` on ``x0`` cast to ``dtype``.
    """
    steps = check_non_negative_int("steps", steps)
    if operator not in OPERATORS:
        raise ValueError(f"operator must be one of {OPERATORS}, got {operator!r}")
    if normalization not in PROPAGATION_NORMS:
        raise ValueError(
            f"normalization must be one of {PROPAGATION_NORMS}, got {normalization!r}")
    validate_graph(edge_index, num_nodes, edge_weight, ptr)
    if x0.dim() != 3 or x0.size(0) != num_nodes:
        raise ValueError(f"x0 must be [num_nodes={num_nodes}, draws, d], got {list(x0.shape)}")
    draws, d = x0.size(1), x0.size(2)
    width = (steps + 1) * d
    device = edge_index.device
    compiled = use_compiled(plan.kernel, device)
    ptr_np = None
    if compiled:
        ptr_np = np.array([0, num_nodes]) if ptr is None else host_array(ptr, np.int64)
        biggest = int(np.diff(ptr_np).max(initial=0))
        compiled = plan.kernel == "compiled" or biggest <= COMPILED_MAX_NODES
    if compiled:
        stored = np.float32 if dtype == torch.float32 else np.float64
        traj = propagate_host(simple_csr(edge_index, num_nodes, edge_weight), ptr_np,
                              operator, host_array(x0, np.float64), steps, normalization,
                              rank_tol=rank_tolerance(dtype), out_dtype=stored)
        return torch.from_numpy(traj.reshape(num_nodes, draws, width)).to(dtype)
    op = propagation_operator(edge_index, num_nodes, operator, edge_weight, dtype=dtype)
    traj = propagate(op, x0.to(device, dtype), steps, normalization, ptr=ptr)
    # [L+1, N, draws, d] -> [N, draws, (L+1) d]
    return traj.permute(1, 2, 0, 3).reshape(num_nodes, draws, width).to(dtype)


def column_norms(x: Tensor) -> Tensor:
    """The 2-norms of the columns of ``x`` ``[..., n, d]``, as ``[..., d]``: the same sum of
    squares as ``x.norm(dim=-2)``."""
    # (torch's norm over the rows of a tall row-major block reduces with strides, several
    # times slower on the CPU than squaring and summing)
    return x.square().sum(-2).sqrt_()


def orthonormalize(x: Tensor, out: Tensor | None = None, scale_columns: bool = False) -> Tensor:
    """Orthonormal basis ``Q`` of the columns of each ``[..., n, d]`` block, with
    ``X = Q R`` and ``diag(R) >= 0`` (so ``Q`` is unique for full-rank blocks and continuous in
    ``X``). Blocks with ``n < d`` get ``n`` columns followed by zero columns, and columns
    beyond a block's numerical rank are zero. ``scale_columns`` (one ``[n, d]`` block) first
    scales every column to unit norm, read off the Gram matrix's diagonal with no extra pass:
    a block whose columns differ in size by orders of magnitude (a filtered subspace) keeps
    its small columns, which the rank cut would otherwise take for noise.

    Cholesky-QR, done twice for accuracy (Fukaya et al. 2014): two Gram products and small
    triangular inverses; blocks whose Gram matrix is not safely positive definite
    (rank-deficient, or ``n < d``) go through Gram-Schmidt twice with a rank cut
    (:func:`_gram_schmidt`, the compiled CPU kernel's rule) instead. For one tall ``[n, d]``
    block the first-pass ``Q`` is only formed in cache-sized row chunks (to get the second
    Gram matrix) and the result is one product ``X (R_1^-1 R_2^-1)`` written into ``out``.
    """
    n, d = x.shape[-2], x.shape[-1]
    if scale_columns and x.dim() != 2:
        raise ValueError(f"scale_columns takes one [n, d] block, got shape {tuple(x.shape)}")
    if n < d or n == 0:
        return _into(_gram_schmidt(x), out)
    gram = gram_matrix(x)
    scale = None
    if scale_columns:
        norms = gram.diagonal().sqrt()
        scale = torch.where(norms > 1e-150, 1.0 / norms, torch.zeros_like(norms))
        gram = gram * scale.unsqueeze(0) * scale.unsqueeze(1)
    r1, ok1 = cholesky_r_inv(gram, x.dtype)
    if ok1 is None:
        return _into(_gram_schmidt(x if scale is None else x * scale.to(x.dtype)), out)
    if scale is not None:
        r1 = scale.unsqueeze(1).to(r1.dtype) * r1  # X diag(scale) R1^-1
    if x.dim() == 2:
        # On the CPU the first-pass Q is formed in cache-sized row chunks; on a GPU one
        # product (an [n, d] temporary) beats a thousand small launches (36x slower measured
        # on a 1M-node graph on an H200).
        chunk = max(1, (1 << 16) // max(d, 1)) if x.device.type == "cpu" else n
        gram2 = torch.zeros(d, d, dtype=torch.float64, device=x.device)
        for lo in range(0, n, chunk):
            q = x[lo : lo + chunk] @ r1.to(x.dtype)
            gram2 += gram_matrix(q)
        r2, ok2 = cholesky_r_inv(gram2, x.dtype)
        if ok2 is None or not bool(ok1 & ok2):
            return _into(_gram_schmidt(x if scale is None else x * scale.to(x.dtype)), out)
        combined = (r1 @ r2).to(x.dtype)
        return x @ combined if out is None else torch.matmul(x, combined, out=out)
    q1 = x @ r1.to(x.dtype)
    r2, ok2 = cholesky_r_inv(gram_matrix(q1), x.dtype)
    if ok2 is None:
        return _into(_gram_schmidt(x), out)
    good = ok1 & ok2
    q2 = q1 @ r2.to(x.dtype)
    if not bool(good.all()):
        # the rank-cutting Gram-Schmidt for the rejected blocks only: it is the slow path
        # (d sequential steps), so it should not run over the whole batch
        bad = (~good).nonzero(as_tuple=True)
        q2[bad] = _gram_schmidt(x[bad])
    return _into(q2, out)


def _into(value: Tensor, out: Tensor | None) -> Tensor:
    return value if out is None else out.copy_(value)


def gram_matrix(x: Tensor) -> Tensor:
    """``X^T X`` of each ``[..., n, d]`` block, formed in ``x``'s dtype, as float64."""
    return (x.transpose(-2, -1) @ x).double()


def cholesky_r_inv(gram: Tensor, data_dtype: torch.dtype) -> tuple[Tensor, Tensor | None]:
    """``R^-1`` (float32/64 as the caller's data, from a float64 Gram) of Cholesky-QR, and which
    blocks succeeded; None where none did.

    A Gram product formed in the data's precision carries an absolute error of about
    ``eps * |X|^2``, so a pivot of ``R`` below ``sqrt(eps)`` of the largest is noise, not rank
    (a rank-deficient float32 block would pass as full rank and its last column come out as
    amplified noise). Blocks are accepted only with every pivot above 1e-5 (float64) or 1e-2
    (float32 and below) of the largest, where Cholesky-QR twice is accurate; the others go
    through Gram-Schmidt and its rank cut."""
    chol, info = torch.linalg.cholesky_ex(gram)  # lower: gram = L L^T, R = L^T
    diag = chol.diagonal(dim1=-2, dim2=-1)
    # reject near-singular blocks: Cholesky-QR loses accuracy as cond(X)^2 grows
    scale = gram.diagonal(dim1=-2, dim2=-1).amax(-1, keepdim=True).clamp(min=1e-300).sqrt()
    floor = 1e-5 if data_dtype == torch.float64 else 1e-2
    ok = (info == 0) & (diag > floor * scale).all(-1)
    if not bool(ok.any()):
        return gram, None
    eye = torch.eye(chol.size(-1), dtype=chol.dtype, device=chol.device)
    safe = torch.where(ok.reshape(ok.shape + (1, 1)), chol, eye)
    l_inv = torch.linalg.solve_triangular(safe, eye.expand_as(safe), upper=False)
    return l_inv.transpose(-2, -1), ok  # R^-1 = (L^T)^-1 = (L^-1)^T


def rank_tolerance(dtype: torch.dtype) -> float:
    """Relative size below which a column's remainder (after projecting out the earlier
    columns) counts as numerically zero. 1e-6 in float64; in float32 the rounding noise of one
    propagation step alone reaches ~1e-6 of the block's scale, so 1e-4 keeps noise from being
    mistaken for rank (and half precision gets 1e-2)."""
    if dtype == torch.float64:
        return 1e-6
    return 1e-4 if dtype == torch.float32 else 1e-2


def _gram_schmidt(x: Tensor) -> Tensor:
    """Orthonormal columns of each ``[..., n, d]`` block by classical Gram-Schmidt done twice
    (CGS2, "twice is enough", Giraud et al. 2005), the rule of the compiled CPU kernel
    (:func:`graphpe.ops.propagate.compiled.propagate_host`): a column whose remainder after
    projecting out the earlier ones is at most ``rank_tolerance * (largest column norm)``
    becomes zero and the next columns go on without it; a block with a remainder within
    :data:`~graphpe.ops.propagate.compiled.RANK_BAND` of the cut is decided by the compiled
    kernel's order-free rule. So a rank-deficient block gets zero
    columns exactly where its rank is not increased, independently of any arbitrary completion
    (Householder QR would orthogonalize the later columns against one), and the CPU and GPU
    paths agree.
    ``d`` steps of batched products, whatever the number of blocks: on a GPU this is far
    cheaper than batched Householder QR of many small blocks."""
    shape, (n, d) = x.shape, x.shape[-2:]
    x = x.reshape(-1, n, d)  # one batch axis: the projections become single baddbmm calls
    tol = rank_tolerance(x.dtype)
    floor = (tol * x.square().sum(-2).amax(-1).sqrt()).reshape(-1, 1, 1)
    q = torch.zeros_like(x)
    near_cut = torch.zeros(x.size(0), 1, 1, dtype=torch.bool, device=x.device)
    for c in range(d):
        v = x[..., c : c + 1]  # [b, n, 1]
        if c:
            basis = q[..., :c]
            for _ in range(2):
                v = torch.baddbmm(v, basis, basis.transpose(1, 2) @ v, alpha=-1)
        norm = torch.linalg.vector_norm(v, dim=1, keepdim=True)
        near_cut |= (floor > 0) & ((norm - floor).abs() <= RANK_BAND * floor)
        inv = torch.where(norm > floor, norm.clamp(min=torch.finfo(x.dtype).tiny).reciprocal(),
                          0.0)
        torch.mul(v, inv, out=q[..., c : c + 1])
    # a remainder near the cut: the compiled kernel's order-free rule decides that block's
    # columns, so the kept ones depend neither on the node order nor on the path
    for b in near_cut.flatten().nonzero().flatten().tolist():
        block = normalize_block_host(x[b].detach().cpu().double().numpy(), tol)
        q[b] = torch.from_numpy(block).to(q.device, q.dtype)
    return q.reshape(shape)


# normalize_per_graph pads a batch to its largest graph when that tensor has at most this many
# entries, per device type: padding there costs less than the calls of more buckets. On the CPU 4
# MiB of float32 (beyond it the padding's arithmetic costs more: all of ZINC's training set, 16
# features over 8 steps by kernel="tensor", 1.07 s in exact-size buckets against 1.81 s in one). On
# a GPU the arithmetic is nearly free and every call costs a launch: the same 10,000 graphs padded
# to 37 nodes (5.9M entries) in one bucket take 3,197 tensor calls and 37 host syncs instead of
# 43,197 and 604 (counted on the CPU); 128 MiB of float32 bounds the padded tensor. Other
# accelerators take the GPU's value.
ONE_BUCKET_MAX_ENTRIES = {"cpu": 1 << 20, "cuda": 1 << 25}


def normalize_per_graph(
    x: Tensor,
    ptr: Tensor,
    mode: str = "qr",
    block: int | None = None,
    out: Tensor | None = None,
) -> Tensor:
    """Normalize node features ``x`` ``[N, C]`` graph by graph.

    - ``l2``: every column scaled to unit norm over each graph's nodes (zero columns stay 0);
    - ``qr``: each graph's ``[n_g, block]`` column blocks replaced by their orthonormal basis
      (:func:`orthonormalize`), graphs grouped by size into buckets so that each bucket is one
      batched call. ``block`` (default ``C``) splits the columns into independent draws.

    Never per batch and never per row: row normalization is not power iteration. ``out`` (which
    may be ``x`` itself) receives the result; a single large graph is then normalized without
    allocating another ``[N, C]`` tensor.
    """
    if mode not in PROPAGATION_NORMS:
        raise ValueError(f"normalization must be one of {PROPAGATION_NORMS}, got {mode!r}")
    num_nodes, channels = x.shape
    num_graphs = ptr.numel() - 1
    block = channels if block is None else block
    if channels % block:
        raise ValueError(f"block={block} does not divide the {channels} columns")
    draws = channels // block
    if mode == "l2":
        if num_graphs == 1:
            # column norms from the Gram diagonal: a GEMM reads x once, fast and allocation-free
            norm = (x.transpose(0, 1) @ x).diagonal().clamp(min=0).sqrt()
            inv = torch.where(norm > 0, 1.0 / norm.clamp(min=1e-30), torch.zeros_like(norm))
            return x.mul(inv) if out is None else torch.mul(x, inv, out=out)
        graph = batch_from_ptr(ptr, num_nodes)
        sq = torch.zeros(num_graphs, channels, dtype=x.dtype, device=x.device)
        norm = sq.index_add_(0, graph, x * x).sqrt()
        inv = torch.where(norm > 0, 1.0 / norm.clamp(min=1e-30), torch.zeros_like(norm))
        return x * inv[graph] if out is None else torch.mul(x, inv[graph], out=out)
    if num_graphs == 1 and draws == 1:
        return orthonormalize(x, out=out)
    result = torch.empty_like(x) if out is None or out is x else out
    sizes = ptr[1:] - ptr[:-1]
    # Zero rows change neither the Gram matrix nor the Gram-Schmidt projections of the real rows, so
    # graphs padded to a common size get exactly their own basis (zero on the padding). A
    # training-size batch uses a few coarse buckets (few calls, some padding); a dataset chunk has
    # enough graphs of every size for exact-size buckets to pay. Orthonormalizing is linear in the
    # padded size (n * block^2 per block, unlike an n^3 eigh), while every bucket costs a fixed
    # number of calls (block sequential steps where a block is rank-deficient): a batch whose padded
    # tensor is small goes in one bucket. On an H200 16 features over 8 steps for 128 ZINC graphs
    # was launch-bound, 8,300 kernel launches in seven buckets for 15 ms of GPU work.
    n_max = int(sizes.max()) if num_graphs else 0
    limit = ONE_BUCKET_MAX_ENTRIES.get(x.device.type, ONE_BUCKET_MAX_ENTRIES["cuda"])
    if num_graphs * n_max * channels <= limit:
        buckets = size_buckets(sizes, granularity=max(n_max, 1))
    else:
        buckets = size_buckets(sizes, growth=bucket_growth_for(sizes))
    for bucket in buckets:
        node, inside = bucket_node_index(ptr, bucket)
        b, n = node.shape
        blocks = x[node] * inside.unsqueeze(-1).to(x.dtype)
        blocks = blocks.reshape(b, n, draws, block).transpose(1, 2)  # [b, draws, n, block]
        q = orthonormalize(blocks).transpose(1, 2).reshape(b, n, channels)
        result[node[inside]] = q[inside]
    return result if out is None or result is out else out.copy_(result)


def propagate(
    operator: Tensor | tuple[Tensor, Tensor],
    x0: Tensor,
    steps: int,
    normalization: str = "qr",
    ptr: Tensor | None = None,
    normalize_initial: bool = True,
) -> Tensor:
    """Random Feature Propagation (Eliasof et al., ICML 2023): the normalized trajectory
    ``[X_0, X_1, ..., X_L]`` with ``X_l = normalize(S X_{l-1})``, per graph.

    Args:
        operator: ``S`` as a sparse ``[N, N]`` tensor (see :func:`propagation_operator`), or as
            ``(edge_index, values)`` meaning ``S_ij = values[e]`` for edge ``e = (i, j)``; the
            edge form is differentiable in ``values`` (a learned operator).
        x0: ``[N, d]`` or ``[N, draws, d]`` initial features (e.g. Gaussian draws).
        steps: number of propagation steps ``L``.
        normalization: ``qr`` (per-graph orthonormal basis: subspace iteration) or ``l2``
            (per-graph unit columns: power iteration per column).
        ptr: ``[G + 1]`` node offsets of the graphs; one graph if None.
        normalize_initial: normalize ``X_0`` too, so every block has the same scale.

    Returns ``[L + 1, N, d]`` (or ``[L + 1, N, draws, d]``). With ``qr`` and enough steps, the
    span of ``X_L`` approaches the dominant ``d``-dimensional invariant subspace of ``S``.
    """
    steps = check_non_negative_int("steps", steps)
    if normalization not in PROPAGATION_NORMS:
        raise ValueError(
            f"normalization must be one of {PROPAGATION_NORMS}, got {normalization!r}"
        )
    if x0.dim() not in (2, 3):
        raise ValueError(f"x0 must be [N, d] or [N, draws, d], got {list(x0.shape)}")
    num_nodes = x0.size(0)
    shape = x0.shape
    block = shape[-1]
    x = x0.reshape(num_nodes, shape[1:].numel())  # explicit width: N may be 0
    if ptr is None:
        ptr = single_graph_ptr(num_nodes, x0.device)
    ptr = ptr.to(device=x0.device, dtype=torch.long)
    if int(ptr[-1]) != num_nodes:
        raise ValueError(f"ptr ends at {int(ptr[-1])} but x0 has {num_nodes} rows")
    differentiable = x.requires_grad
    if isinstance(operator, tuple):
        edge_index, values = operator
        differentiable = differentiable or values.requires_grad

        def apply(h: Tensor, buf: Tensor | None) -> Tensor:
            msg = values.unsqueeze(-1) * h[edge_index[1]]
            return torch.zeros_like(h).index_add(0, edge_index[0], msg)
    else:
        if operator.shape != (num_nodes, num_nodes):
            raise ValueError(
                f"operator must be [{num_nodes}, {num_nodes}], got {list(operator.shape)}"
            )
        differentiable = differentiable or operator.requires_grad

        def apply(h: Tensor, buf: Tensor | None) -> Tensor:
            if buf is None or operator.layout != torch.sparse_csr:
                return torch.sparse.mm(operator, h)
            return torch.mm(operator, h, out=buf)

    if differentiable:  # autograd: no in-place writes
        x = normalize_per_graph(x, ptr, normalization, block) if normalize_initial else x
        out = [x]
        for _ in range(steps):
            x = normalize_per_graph(apply(x, None), ptr, normalization, block)
            out.append(x)
        return torch.stack(out).reshape((steps + 1,) + tuple(shape))
    # Inference: write every step straight into the trajectory and reuse one product buffer;
    # fresh [N, C] allocations cost page faults comparable to the normalization itself.
    traj = torch.empty((steps + 1,) + tuple(x.shape), dtype=x.dtype, device=x.device)
    if normalize_initial:
        normalize_per_graph(x, ptr, normalization, block, out=traj[0])
    else:
        traj[0].copy_(x)
    buf = torch.empty_like(x)
    for step in range(1, steps + 1):
        product = apply(traj[step - 1], buf)
        normalize_per_graph(product, ptr, normalization, block, out=traj[step])
    return traj.reshape((steps + 1,) + tuple(shape))
