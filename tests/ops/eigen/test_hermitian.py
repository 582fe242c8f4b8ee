"""The compiled Hermitian eigensolver (``ops.eigen.hermitian.hermitian_eigh``, behind the
magnetic Laplacian) against numpy's ``eigh``, including matrices whose entries lie near the
bottom of float64's range."""

import numpy as np
import pytest

from graphpe.ops.eigen import hermitian


def solve(a: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    n = a.shape[0]
    ar, ai = a.real.copy(), a.imag.copy()  # the solver works in place
    vr, vi = np.zeros((n, count)), np.zeros((n, count))
    vals = hermitian.hermitian_eigh(ar, ai, n, count, vr, vi,
                                    hermitian.hermitian_scratch(n, count)).copy()
    return vals, vr + 1j * vi


def random_hermitian(rng: np.random.Generator, n: int) -> np.ndarray:
    a = rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))
    return a + a.conj().T


@pytest.mark.parametrize("n", [1, 2, 7, 40, 90])  # 90: above SMALL_EIGH_MAX (LAPACK)
def test_equals_numpy_on_random_hermitian_matrices(n):
    a = random_hermitian(np.random.default_rng(n), n)
    count = min(n, 5)
    vals, vecs = solve(a, count)
    np.testing.assert_allclose(vals, np.linalg.eigvalsh(a)[:count], atol=1e-12, rtol=0)
    np.testing.assert_allclose(a @ vecs, vecs * vals, atol=1e-11, rtol=0)
    np.testing.assert_allclose(vecs.conj().T @ vecs, np.eye(count), atol=1e-12, rtol=0)


@pytest.mark.parametrize("tiny", [1e-155, 1e-158, 1e-160, 1e-200, 1e-300, 5e-324])
def test_entries_near_the_bottom_of_the_float_range_give_finite_pairs(tiny):
    # A Householder step whose only entries to annihilate are ~1e-155 has a reflector norm
    # h ~ |c|^2 that underflows (1 / h overflowed and every pair came back NaN), and a
    # subnormal off-diagonal entry has no finite reciprocal.
    rng = np.random.default_rng(0)
    n = 6
    a = np.diag(rng.uniform(1, 2, n)).astype(complex)
    for i in range(n - 1):
        a[i, i + 1] = rng.uniform(0.1, 1) * np.exp(1j * rng.uniform(0, 6))
        a[i + 1, i] = np.conj(a[i, i + 1])
    a[3, 4] = a[4, 3] = a[4, 5] = a[5, 4] = 0.0
    a[0, 4], a[1, 5] = tiny * (1 + 1j), tiny * 1j
    a[4, 0], a[5, 1] = np.conj(a[0, 4]), np.conj(a[1, 5])
    vals, vecs = solve(a, n)
    np.testing.assert_allclose(vals, np.linalg.eigvalsh(a), atol=1e-14, rtol=0)
    np.testing.assert_allclose(a @ vecs, vecs * vals, atol=1e-14, rtol=0)
