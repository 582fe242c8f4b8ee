"""Fill-reducing orderings and the exact size of a sparse Cholesky factor, before any numeric
work: what decides, at a known cost, whether factoring a large Laplacian is worth it.

For a symmetric positive definite ``M`` (``L - sigma I`` with ``sigma < 0``) and a symmetric
ordering ``P``, the Cholesky factor ``P M P^T = C C^T`` has a nonzero pattern fixed by the
graph alone (no cancellation is assumed): ``C_ij != 0`` (``i > j``) exactly where ``i`` is
reachable from ``j`` in the graph through nodes ordered before ``j``. Eliminating node ``j``
joins its later neighbours into a clique (the elimination graph); ``|col_j(C)|`` is ``j``'s
degree when it is eliminated. Gaussian elimination without pivoting (SuperLU with the
natural column order and no row interchanges, which a positive definite matrix allows) has
``L``'s pattern equal to ``C``'s and ``U``'s to ``C^T``'s.

- :func:`minimum_degree_order`: the approximate minimum degree ordering (Amestoy, Davis and
  Duff, SIAM J. Matrix Anal. Appl. 1996): eliminate the node of least (approximate) degree
  in the quotient graph, where eliminated nodes are kept as *elements* (the cliques they
  formed) instead of their fill edges, so memory never exceeds the graph's; indistinguishable
  nodes are merged into supervariables and eliminated together. The degree of ``i`` is
  bounded above by ``|A_i| + |L_k \\ i| + sum_e |L_e \\ L_k|`` over the other elements
  ``e`` of ``i``. Nodes of degree above ``dense_degree`` (hubs) are ordered last. The
  elimination stops early, reporting so, once the factor it implies exceeds ``max_fill``
  entries.
- :func:`cholesky_column_counts`: the elimination tree (Liu, ACM TOMS 1986) and the exact
  column counts of ``C`` by row subtrees: row ``i`` of ``C`` holds the nodes on the tree
  paths from each ``j < i`` with ``M_ij != 0`` up to ``i``. Work ``O(nnz(M) + nnz(C))``,
  stopped once ``nnz(C)`` exceeds ``max_fill``: the cost of the analysis is bounded by the
  budget it checks.

Both are compiled loops over int64 arrays with no allocation proportional to the fill.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from graphpe.ops import aot

# a node whose degree exceeds max(DENSE_MIN, DENSE_SCALE sqrt(n)) is ordered last: a hub
# eliminated early joins all its neighbours into one clique, and updating the degrees of a
# hub's neighbours at every step dominates the ordering's time
DENSE_SCALE = 10.0
DENSE_MIN = 16
# the ordering also stops once its work so far, over the share of nodes eliminated, exceeds
# ``max_work`` this many times: per-pivot work grows as elements merge, so the projection is
# about a lower estimate of the total (measured, projection / final work: at most 1.3 on
# co-authorship, road and citation graphs, 1.8 on a grid, 2.7 on Erdos-Renyi graphs, whose
# totals pass any budget anyway); hub-heavy graphs pass it at a third to a half of the budget
PROJECTED_WORK_MARGIN = 2.0


class SymbolicFactor(NamedTuple):
    """An ordering of a symmetric matrix and the exact size of its Cholesky factor.

    ``perm``: the ordering (``perm[i]`` = the old index of new row ``i``); ``column_counts``:
    the entries of each column of the factor below the diagonal, in the new order;
    ``nnz``: entries of the factor, diagonal included (``n + column_counts.sum()``);
    ``flops``: multiply-adds of the Cholesky factorization, ``sum_j c_j (c_j + 3) / 2``;
    ``complete``: False where the analysis stopped at its fill budget (then ``nnz`` is a
    lower bound, ``column_counts`` partial and ``flops`` a lower bound)."""

    perm: np.ndarray
    column_counts: np.ndarray
    nnz: int
    flops: float
    complete: bool


def dense_degree(n: int) -> int:
    """The degree above which :func:`minimum_degree_order` orders a node last."""
    return int(min(max(n - 2, 0), max(DENSE_MIN, DENSE_SCALE * np.sqrt(n))))


def minimum_degree_order(indptr: np.ndarray, indices: np.ndarray,
                         max_fill: int | None = None, max_work: int | None = None,
                         max_flops: float | None = None) -> tuple[np.ndarray, bool, int]:
    """An approximate minimum degree ordering of the symmetric pattern ``(indptr, indices)``
    (CSR of an ``n x n`` matrix; diagonal entries are ignored; both triangles stored).

    Returns ``(perm, complete, work)``: ``perm[i]`` is the node eliminated ``i``-th; ``work``
    counts the list entries the elimination scanned (its time is proportional to it);
    ``complete`` is False where it stopped early, because the factor it implies already held
    more than ``max_fill`` entries below the diagonal or needed more than ``max_flops``
    multiply-adds (hubs excluded: both are lower bounds), or because ``work`` exceeded
    ``max_work``, or its projection ``work / (share of nodes eliminated)`` exceeded
    :data:`PROJECTED_WORK_MARGIN` ``max_work``: then ``perm`` orders the nodes eliminated so
    far first and the rest in their original order."""
    n = indptr.size - 1
    unbounded = np.iinfo(np.int64).max
    perm, complete, work = _amd(np.ascontiguousarray(indptr, dtype=np.int64),
                                np.ascontiguousarray(indices, dtype=np.int64),
                                dense_degree(n), unbounded if max_fill is None else int(max_fill),
                                unbounded if max_work is None else int(max_work),
                                np.inf if max_flops is None else float(max_flops))
    return perm, bool(complete), int(work)


def cholesky_column_counts(indptr: np.ndarray, indices: np.ndarray, perm: np.ndarray,
                           max_fill: int | None = None) -> tuple[np.ndarray, int, bool]:
    """Exact column counts (below the diagonal) of the Cholesky factor of the symmetric
    pattern ``(indptr, indices)`` ordered by ``perm``, in the new order.

    Returns ``(counts, total, complete)``; ``complete`` is False where the count stopped
    once ``total`` exceeded ``max_fill`` (the work is ``O(nnz + max_fill)``)."""
    budget = np.iinfo(np.int64).max if max_fill is None else int(max_fill)
    counts, total, complete = _column_counts(
        np.ascontiguousarray(indptr, dtype=np.int64),
        np.ascontiguousarray(indices, dtype=np.int64),
        np.ascontiguousarray(perm, dtype=np.int64), budget)
    return counts, int(total), bool(complete)


def symbolic_cholesky(indptr: np.ndarray, indices: np.ndarray,
                      max_fill: int | None = None,
                      max_work: int | None = None) -> SymbolicFactor:
    """:func:`minimum_degree_order` then :func:`cholesky_column_counts`: the ordering and the
    exact size and work of the factor of a symmetric pattern, each stopped at ``max_fill``
    entries below the diagonal, the ordering also at ``max_work`` scanned entries. Where the
    ordering stops, nothing is counted (``complete`` False, zero counts)."""
    n = indptr.size - 1
    perm, ordered, _ = minimum_degree_order(indptr, indices, max_fill, max_work)
    if not ordered:
        return SymbolicFactor(perm, np.zeros(n, np.int64), n, 0.0, False)
    counts, total, counted = cholesky_column_counts(indptr, indices, perm, max_fill)
    c = counts.astype(np.float64)
    return SymbolicFactor(perm, counts, n + total, float((c * (c + 3.0) / 2.0).sum()),
                          counted)


@aot.njit(cache=True, nogil=True)
def _remove_from_degree_list(i, degree, head, nxt, prv):
    if nxt[i] != -1:
        prv[nxt[i]] = prv[i]
    if prv[i] != -1:
        nxt[prv[i]] = nxt[i]
    else:
        head[degree[i]] = nxt[i]


@aot.njit(cache=True, nogil=True)
def _compact(iw, pe, length, elen, w, n):
    """Moves the lists of live variables and live elements to the front of ``iw`` (in their
    present order, so nothing is overwritten before it is moved); returns the first free
    position."""
    live = np.empty(n, np.int64)
    count = 0
    for i in range(n):
        if elen[i] >= 0 or (elen[i] == -2 and w[i] != 0):
            live[count] = i
            count += 1
    live = live[:count]
    live = live[np.argsort(pe[live], kind="mergesort")]
    free = 0
    for t in range(count):
        i = live[t]
        start = pe[i]
        pe[i] = free
        for q in range(length[i]):
            iw[free + q] = iw[start + q]
        free += length[i]
    return free


@aot.njit(cache=True, nogil=True)
def _amd(indptr, indices, dense, budget, max_work, max_flops):
    """The elimination loop of :func:`minimum_degree_order`, one pivot per iteration, in the
    paper's steps: select, form the element, set differences, degrees, supervariables."""
    n = indptr.size - 1
    nnz = indptr[n]
    cap = nnz + nnz // 5 + 2 * n + 16
    iw = np.empty(cap, np.int64)
    pe = np.zeros(n, np.int64)
    length = np.zeros(n, np.int64)
    elen = np.zeros(n, np.int64)  # variables: elements first in their list; -1 dead, -2 element
    nv = np.ones(n, np.int64)  # supervariable sizes; negative while in the pivot's element
    degree = np.zeros(n, np.int64)
    w = np.ones(n, np.int64)  # elements: 0 dead, >= mark |Le \ Lk| + mark in this step
    head = np.full(n + 1, -1, np.int64)
    nxt = np.full(n, -1, np.int64)
    prv = np.full(n, -1, np.int64)
    parent = np.full(n, -1, np.int64)
    step = np.full(n, -1, np.int64)
    hhead = np.full(n, -1, np.int64)
    hnext = np.full(n, -1, np.int64)
    hkey = np.zeros(n, np.int64)
    free = 0
    for i in range(n):
        pe[i] = free
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            if j != i:
                iw[free] = j
                free += 1
        length[i] = free - pe[i]
    eliminated = 0
    steps = 0
    is_dense = np.zeros(n, np.bool_)
    for i in range(n):
        if length[i] > dense:
            is_dense[i] = True
            nv[i] = 0
            elen[i] = -1
            w[i] = 0
            eliminated += 1
    for i in range(n):
        if is_dense[i]:
            continue
        d = 0
        for q in range(pe[i], pe[i] + length[i]):
            if nv[iw[q]] > 0:
                d += 1
        degree[i] = d
        if d == 0:  # isolated once hubs are set aside: eliminated at once, no fill
            elen[i] = -2
            w[i] = 0
            step[i] = steps
            steps += 1
            eliminated += 1
        else:
            nxt[i] = head[d]
            if head[d] != -1:
                prv[head[d]] = i
            head[d] = i
    ndense = eliminated  # hubs and the nodes they isolate: the projection counts the rest
    projected = PROJECTED_WORK_MARGIN * float(max_work)
    mark = 2
    lemax = 0
    mindeg = 0
    fill = 0
    flops = 0.0
    complete = True
    work = 0
    while eliminated < n:
        while head[mindeg] == -1:
            mindeg += 1
        k = head[mindeg]
        _remove_from_degree_list(k, degree, head, nxt, prv)
        elenk = elen[k]
        nvk = nv[k]
        eliminated += nvk
        step[k] = steps
        steps += 1
        if elenk > 0 and free + degree[k] >= cap:
            free = _compact(iw, pe, length, elen, w, n)
            if free + degree[k] >= cap:
                grown = np.empty(max(2 * cap, free + degree[k] + n), np.int64)
                grown[:free] = iw[:free]
                iw = grown
                cap = iw.size
        # the new element L_k: the union of k's elements' variables and its own variables
        dk = 0
        nv[k] = -nvk
        own = pe[k]
        pk1 = own if elenk == 0 else free  # in place where k has no element
        pk2 = pk1
        for t in range(elenk + 1):
            if t < elenk:
                e = iw[own + t]
                if w[e] == 0:
                    continue
                start, stop = pe[e], pe[e] + length[e]
            else:
                e = k
                start, stop = own + elenk, own + length[k]
            work += stop - start
            for q in range(start, stop):
                i = iw[q]
                nvi = nv[i]
                if nvi <= 0:
                    continue
                dk += nvi
                nv[i] = -nvi
                iw[pk2] = i
                pk2 += 1
                _remove_from_degree_list(i, degree, head, nxt, prv)
            if e != k:
                parent[e] = k  # absorbed: L_e is inside L_k
                w[e] = 0
        if elenk != 0:
            free = pk2
        degree[k] = dk
        pe[k] = pk1
        length[k] = pk2 - pk1
        elen[k] = -2
        # |L_e \ L_k| for every element e met by a variable of L_k
        for pk in range(pk1, pk2):
            i = iw[pk]
            eln = elen[i]
            if eln <= 0:
                continue
            nvi = -nv[i]
            work += eln
            for q in range(pe[i], pe[i] + eln):
                e = iw[q]
                we = w[e]
                if we >= mark:
                    w[e] = we - nvi
                elif we != 0:
                    w[e] = degree[e] + mark - nvi
        # the approximate degree of each variable of L_k, its lists pruned
        for pk in range(pk1, pk2):
            i = iw[pk]
            p1 = pe[i]
            p2 = p1 + elen[i]
            pn = p1
            work += length[i]
            h = 0
            d = 0
            for q in range(p1, p2):
                e = iw[q]
                if w[e] != 0:
                    dext = w[e] - mark
                    if dext > 0:
                        d += dext
                        iw[pn] = e
                        pn += 1
                        h += e
                    else:  # L_e inside L_k: aggressive absorption
                        parent[e] = k
                        w[e] = 0
            p3 = pn
            for q in range(p2, p1 + length[i]):
                j = iw[q]
                nvj = nv[j]
                if nvj <= 0:  # dead, or in L_k (covered by the element k)
                    continue
                d += nvj
                iw[pn] = j
                pn += 1
                h += j
            if d == 0:  # adjacent to k alone: eliminated with it (mass elimination)
                parent[i] = k
                nvi = -nv[i]
                dk -= nvi
                nvk += nvi
                eliminated += nvi
                nv[i] = 0
                elen[i] = -1
            else:
                degree[i] = min(degree[i], d)
                # k joins i's elements: k (or an absorbed element) was dropped from i's
                # lists above, so there is room for it
                iw[pn] = iw[p3]
                iw[p3] = k
                elen[i] = p3 - p1 + 1
                length[i] = pn - p1 + 1
                h = h % n
                hnext[i] = hhead[h]
                hhead[h] = i
                hkey[i] = h
        degree[k] = dk
        lemax = max(lemax, dk)
        fill += nvk * dk + nvk * (nvk - 1) // 2
        for t in range(nvk):  # columns of counts dk + nvk - 1, ..., dk
            c = dk + t
            flops += c * (c + 3.0) / 2.0
        mark += lemax + 1
        # supervariables: variables of L_k with the same lists are merged
        for pk in range(pk1, pk2):
            i = iw[pk]
            if nv[i] >= 0:
                continue
            hb = hkey[i]
            i = hhead[hb]
            hhead[hb] = -1
            while i != -1 and hnext[i] != -1:
                ln = length[i]
                eln = elen[i]
                work += ln
                for q in range(pe[i], pe[i] + ln):
                    w[iw[q]] = mark
                jlast = i
                j = hnext[i]
                while j != -1:
                    same = length[j] == ln and elen[j] == eln
                    if same:
                        for q in range(pe[j], pe[j] + ln):
                            if w[iw[q]] != mark:
                                same = False
                                break
                    if same:
                        parent[j] = i
                        nv[i] += nv[j]
                        nv[j] = 0
                        elen[j] = -1
                        j = hnext[j]
                        hnext[jlast] = j
                    else:
                        jlast = j
                        j = hnext[j]
                i = hnext[i]
                mark += 1
        # the variables of L_k back into the degree lists
        p = pk1
        remaining = n - eliminated
        for pk in range(pk1, pk2):
            i = iw[pk]
            nvi = -nv[i]
            if nvi <= 0:
                continue
            nv[i] = nvi
            d = min(degree[i] + dk - nvi, remaining - nvi)
            nxt[i] = head[d]
            prv[i] = -1
            if head[d] != -1:
                prv[head[d]] = i
            head[d] = i
            mindeg = min(mindeg, d)
            degree[i] = d
            iw[p] = i
            p += 1
        nv[k] = nvk
        length[k] = p - pk1
        if length[k] == 0:
            w[k] = 0  # a root: no variable left to join
        if elenk != 0:
            free = p
        if fill > budget or work > max_work or flops > max_flops or (
                float(work) * (n - ndense) > projected * (eliminated - ndense)):
            complete = False
            break
    # each variable is eliminated at the step of the pivot it was merged into
    key = np.full(n, steps + 1, np.int64)
    for i in range(n):
        if is_dense[i]:
            key[i] = steps
            continue
        r = i
        while step[r] < 0 and parent[r] != -1:
            r = parent[r]
        key[i] = step[r] if step[r] >= 0 else steps + 1
        # compress the path just walked
        s = i
        while step[s] < 0 and parent[s] != -1 and s != r:
            nx = parent[s]
            parent[s] = r
            s = nx
    return np.argsort(key, kind="mergesort"), complete, work


@aot.njit(cache=True, nogil=True)
def _column_counts(indptr, indices, perm, budget):
    n = indptr.size - 1
    inverse = np.empty(n, np.int64)
    for i in range(n):
        inverse[perm[i]] = i
    tree = np.full(n, -1, np.int64)
    ancestor = np.full(n, -1, np.int64)
    # the elimination tree, with path compression through ``ancestor``
    for k in range(n):
        old = perm[k]
        for p in range(indptr[old], indptr[old + 1]):
            i = inverse[indices[p]]
            while i != -1 and i < k:
                up = ancestor[i]
                ancestor[i] = k
                if up == -1:
                    tree[i] = k
                i = up
    counts = np.zeros(n, np.int64)
    seen = np.full(n, -1, np.int64)
    total = 0
    for k in range(n):
        seen[k] = k
        old = perm[k]
        for p in range(indptr[old], indptr[old + 1]):
            i = inverse[indices[p]]
            if i >= k:
                continue
            while seen[i] != k:  # up the tree to a node already counted in row k
                seen[i] = k
                counts[i] += 1
                total += 1
                i = tree[i]
        if total > budget:
            return counts, total, False
    return counts, total, True


aot.bind(globals())  # the kernels compiled ahead of time, where built (ops.aot)
