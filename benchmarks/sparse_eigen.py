"""The k smallest non-trivial eigenpairs of L_sym of one large graph: graphpe's
Chebyshev-filtered subspace iteration against ``scipy.sparse.linalg.eigsh`` (ARPACK), measured
in the same run, on the same CSR matrix.

    python benchmarks/sparse_eigen.py                       # 10k, 100k, 1M nodes
    python benchmarks/sparse_eigen.py --sizes 10000 --families er --quick

Families (all connected, so the trivial space is one vector for both solvers):
- ``er``: Erdos-Renyi with mean degree 10 plus a random Hamiltonian cycle (an expander);
- ``chunglu``: power-law degrees (Chung-Lu, exponent 2.5, mean degree ~8) plus a random cycle;
- ``grid``: a square 2-D grid (tiny spectral gaps, the hard case for Krylov methods).

graphpe runs in float64 (``tol=1e-8`` on ``||Lv - lambda v||``), in float32 SpMM
(``tol=1e-5``), and with float32 products filtering the residuals of a float64 solve to 1e-8
(``filter_dtype``, ``laplacian_eigenpairs``'s float64 path); ARPACK runs
``eigsh(L, k+1, which='SA', tol=1e-8)`` in a subprocess that is stopped after
``--arpack-seconds``. Accuracy is measured against ARPACK where it finished: the largest
eigenvalue difference and the sine of the largest principal angle between the two
k-dimensional eigenspaces (meaningful when lambda_k < lambda_{k+1}; the gap is printed).
Residuals of graphpe's pairs are recomputed in float64. Default: one torch thread (scipy's
SpMV is single-threaded).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import report  # noqa: E402

from graphpe.ops.eigen.sparse import chebyshev_eigenpairs, component_basis  # noqa: E402
from graphpe.ops.graph import laplacian_entries, sparse_operator, undirected_simple  # noqa: E402


def random_cycle(n: int, rng: np.random.Generator) -> np.ndarray:
    perm = rng.permutation(n)
    return np.stack([perm, np.roll(perm, 1)])


def make_graph(family: str, n: int, seed: int = 0) -> tuple[np.ndarray, int]:
    """``[2, E]`` edges (one direction) of a connected graph with about ``n`` nodes."""
    rng = np.random.default_rng(seed)
    if family == "er":
        edges = rng.integers(0, n, size=(2, 5 * n))
        return np.concatenate([edges, random_cycle(n, rng)], axis=1), n
    if family == "chunglu":
        weight = (np.arange(1, n + 1) / n) ** (-1 / 1.5)
        prob = weight / weight.sum()
        edges = rng.choice(n, size=(2, 3 * n), p=prob)
        return np.concatenate([edges, random_cycle(n, rng)], axis=1), n
    if family == "grid":
        side = int(round(np.sqrt(n)))
        idx = np.arange(side * side).reshape(side, side)
        right = np.stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()])
        down = np.stack([idx[:-1, :].ravel(), idx[1:, :].ravel()])
        return np.concatenate([right, down], axis=1), side * side
    raise ValueError(f"unknown family {family!r}")


def laplacian_parts(edges: np.ndarray, n: int):
    ei = torch.from_numpy(edges).long()
    graph = undirected_simple(torch.cat([ei, ei.flip(0)], dim=1), n)
    return laplacian_entries(graph, "sym", torch.float64)


def arpack_worker(edges_path: str, n: int, k: int, tol: float, queue) -> None:
    import scipy.sparse.linalg as spla

    edges = np.load(edges_path)
    ei, off, diag, _ = laplacian_parts(edges, n)
    lap = (sp.coo_matrix((off.numpy(), ei.numpy()), shape=(n, n))
           + sp.diags(diag.numpy())).tocsr()
    start = time.perf_counter()
    w, u = spla.eigsh(lap, k=k + 2, which="SA", tol=tol)
    seconds = time.perf_counter() - start
    order = np.argsort(w)
    queue.put((seconds, w[order], u[:, order]))


def run_arpack(edges: np.ndarray, n: int, k: int, tol: float, limit: float):
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "edges.npy")
        np.save(path, edges)
        ctx = mp.get_context("spawn")
        queue = ctx.Queue()
        proc = ctx.Process(target=arpack_worker, args=(path, n, k, tol, queue))
        proc.start()
        try:
            result = queue.get(timeout=limit + 120)  # + building the matrix
        except Exception:
            result = None
        proc.terminate()
        proc.join()
    return result


def run_graphpe(ei, off, diag, deg, n: int, k: int, dtype: torch.dtype, tol: float,
                mixed: bool = False):
    """One solve; ``mixed``: float32 products on the residuals of a ``dtype`` solve (what
    ``laplacian_eigenpairs`` does for float64)."""
    basis = component_basis(torch.zeros(n, dtype=torch.long), deg.sqrt())
    op = sparse_operator(ei, off.to(dtype), n, diag.to(dtype))
    gen = torch.Generator().manual_seed(0)
    start = time.perf_counter()
    res = chebyshev_eigenpairs(op, k, upper=2.0, deflate=basis, tol=tol, max_iter=1000,
                               generator=gen, warn=False,
                               filter_dtype=torch.float32 if mixed else None)
    seconds = time.perf_counter() - start
    op64 = sparse_operator(ei, off, n, diag)
    vecs = res.eigvecs.double()
    residual = (op64 @ vecs - vecs * res.eigvals).norm(dim=0).max().item()
    return seconds, res, residual


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--families", default="er,chunglu,grid")
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--modes", default="float64,float32,mixed",
                    help="graphpe runs: float64, float32, mixed (float32 products, float64 "
                         "residuals)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--arpack-seconds", type=float, default=600.0)
    ap.add_argument("--quick", action="store_true", help="ARPACK budget 60 s")
    ap.add_argument("--json", type=Path, default=Path("benchmarks/results/sparse_eigen.json"))
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    limit = 60.0 if args.quick else args.arpack_seconds
    rows = []
    for n_req in (int(s) for s in args.sizes.split(",")):
        for family in args.families.split(","):
            edges, n = make_graph(family, n_req)
            ei, off, diag, deg = laplacian_parts(edges, n)
            nnz = ei.size(1) + n
            print(f"{family} n={n:,} nnz={nnz:,}", flush=True)
            ref = run_arpack(edges, n, args.k, 1e-8, limit)
            if ref is not None:
                ref_seconds, w, u = ref
                ref_vals, ref_vecs = w[1 : args.k + 1], u[:, 1 : args.k + 1]
                gap = float(w[args.k + 1] - w[args.k])
                rows.append({"graph": family, "nodes": n, "nnz": nnz, "method": "ARPACK eigsh",
                             "seconds": ref_seconds, "gap_k": gap})
            else:
                rows.append({"graph": family, "nodes": n, "nnz": nnz,
                             "method": f"ARPACK eigsh (stopped, > {limit:.0f} s)"})
            modes = {"float64": (torch.float64, 1e-8, False),
                     "float32": (torch.float32, 1e-5, False),
                     "mixed": (torch.float64, 1e-8, True)}
            for dtype, tol, mixed in (modes[m] for m in args.modes.split(",")):
                seconds, res, residual = run_graphpe(ei, off, diag, deg, n, args.k, dtype, tol,
                                                     mixed)
                label = "float32 products, float64" if mixed else str(dtype)[6:]
                row = {"graph": family, "nodes": n, "nnz": nnz,
                       "method": f"graphpe ChFSI {label} tol={tol:.0e}",
                       "seconds": seconds, "iterations": res.iterations,
                       "converged": res.converged, "residual": residual}
                if ref is not None:
                    ours = res.eigvecs.double().numpy()
                    sines = np.linalg.svd(ref_vecs.T @ ours, compute_uv=False)
                    row["eig_err"] = float(np.abs(res.eigvals.numpy() - ref_vals).max())
                    row["subspace_sin"] = float(np.sqrt(max(0.0, 1 - sines.min() ** 2)))
                    row["speedup"] = ref_seconds / seconds
                rows.append(row)
                print(f"  {row['method']}: {seconds:.2f} s, {res.iterations} iterations",
                      flush=True)
    columns = [("graph", "graph", ""), ("nodes", "nodes", ","), ("nnz", "nnz", ","),
               ("method", "method", ""), ("seconds", "seconds", ".2f"),
               ("iterations", "iters", "d"), ("residual", "max resid", ".1e"),
               ("eig_err", "max |dlambda|", ".1e"), ("subspace_sin", "sin angle", ".1e"),
               ("gap_k", "gap_k", ".1e"), ("speedup", "vs ARPACK", ".1f")]
    report(rows, columns, f"k={args.k} smallest non-trivial eigenpairs of L_sym "
           f"({args.threads} torch thread(s))", args.json)
    args.json.write_text(json.dumps({"k": args.k, "threads": args.threads, "rows": rows},
                                    indent=2))


if __name__ == "__main__":
    main()
