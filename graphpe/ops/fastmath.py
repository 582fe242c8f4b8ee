"""Elementwise functions for compiled (numba) loops that leave those loops vectorizable.

libm's ``expf``, which numba calls for ``np.exp``, is a scalar call per element: a loop over a
row that calls it does not vectorize. Here :math:`2^x` is a polynomial on
``[-1/2, 1/2]`` times a power of two built from its exponent bits, inlined into the caller; its
relative error is ~1e-7, float32 rounding. float64 callers of :func:`sigmoid` get libm's
``exp`` (the polynomial is float32-accurate only).
"""

from __future__ import annotations

import math

import numba
import numpy as np
from llvmlite import ir
from numba import types as nb_types
from numba.extending import intrinsic, overload

FASTMATH = {"contract", "arcp", "reassoc", "nsz"}
LOG2E = 1.4426950408889634
_LN2 = 0.6931471805599453
# 1/k! for the Taylor polynomial of e^f, |f| <= ln(2)/2: the first term left out,
# (ln 2 / 2)^8 / 8!, is ~5e-9 relative, under float32's rounding
_C = tuple(1.0 / math.factorial(k) for k in range(8))
# 2^x for x below this is 0 here (exp(-88) and less; torch gives subnormals down to ~1e-45):
# the clamp keeps the exponent bits of 2^k non-negative
_EXP2_FLOOR = -127.0
# and 2^x above this is 2^127 (float32's largest power of two; its exponent bits stay valid)
_EXP2_CEIL = 127.0


@intrinsic
def _float_bits(typingctx, bits):  # pragma: no cover - compiled
    """The float32 whose bit pattern is the low 32 bits of the integer ``bits``."""
    if not isinstance(bits, nb_types.Integer):
        return None

    def codegen(context, builder, signature, args):
        value = args[0]
        if bits.bitwidth != 32:
            value = builder.trunc(value, ir.IntType(32))
        return builder.bitcast(value, ir.FloatType())

    return nb_types.float32(bits), codegen


@numba.njit(cache=True, nogil=True, fastmath=FASTMATH, inline="always")
def exp2_poly(x):  # pragma: no cover - compiled
    """``2^x`` in float32 for ``x <= 127`` (``x`` below -127 gives 0): ``2^k 2^f`` with ``k =
    round(x)``, ``|f| <= 1/2``, a polynomial in ``f ln 2`` and ``2^k`` from its exponent
    bits."""
    v = max(x, np.float32(_EXP2_FLOOR))
    k = np.floor(v + np.float32(0.5))
    f = (v - k) * np.float32(_LN2)
    p = np.float32(_C[7])
    p = p * f + np.float32(_C[6])
    p = p * f + np.float32(_C[5])
    p = p * f + np.float32(_C[4])
    p = p * f + np.float32(_C[3])
    p = p * f + np.float32(_C[2])
    p = p * f + np.float32(_C[1])
    p = p * f + np.float32(_C[0])
    return p * _float_bits((np.int32(k) + np.int32(127)) << np.int32(23))


def sigmoid(x):  # pragma: no cover - replaced by the overload in compiled code
    """``1 / (1 + e^-x)`` inside compiled loops (float32: :func:`exp2_poly`; float64:
    libm)."""
    return 1.0 / (1.0 + math.exp(-x))


@overload(sigmoid, inline="always")
def _sigmoid_overload(x):  # pragma: no cover - compiled
    if x == nb_types.float32:
        def impl(x):
            t = min(-x * np.float32(LOG2E), np.float32(_EXP2_CEIL))
            return np.float32(1.0) / (np.float32(1.0) + exp2_poly(t))
        return impl
    if isinstance(x, nb_types.Float):
        def impl(x):
            return 1.0 / (1.0 + np.exp(-x))
        return impl
    return None
