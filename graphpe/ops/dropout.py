"""Dropout masks on the host CPU from a counter-based hash, in one pass.

Element ``i`` of a call keeps its value when a keyed hash of ``i`` lands above the drop
probability ``p``, and the kept values are scaled by ``1 / (1 - p)``: one compiled loop over
the tensor that vectorizes (no state carried from one element to the next), where
``torch.rand_like`` with the mask's comparison, scaling and product is four passes.

The hash is two rounds of Wellons' ``lowbias32`` integer mixer, each keyed by a 32-bit word
drawn from torch's default generator, so ``torch.manual_seed`` fixes the masks as it fixes
``torch.rand``'s (the masks themselves differ from torch's). The drop probability is used at
a resolution of ``2^-24``.
"""

from __future__ import annotations

import numba
import numpy as np
import torch
from llvmlite import ir
from numba import types as nb_types
from numba.extending import intrinsic
from torch import Tensor

from graphpe.ops.host import host_empty

# Keep/drop decisions use the top 24 bits of the hash: p is rounded to a multiple of 2^-24
DROPOUT_BITS = 24


_I32 = ir.IntType(32)


def _lowbias32(builder: ir.IRBuilder, x: ir.Value) -> ir.Value:
    # lowbias32 (C. Wellons, "Hash function prospector"): a bijection on 32 bits whose output
    # bits each flip with probability ~1/2 when any input bit flips
    for shift, factor in ((16, 0x7FEB352D), (15, 0x846CA68B)):
        x = builder.mul(builder.xor(x, builder.lshr(x, ir.Constant(_I32, shift))),
                        ir.Constant(_I32, factor))
    return builder.xor(x, builder.lshr(x, ir.Constant(_I32, 16)))


@intrinsic
def keyed_hash(typingctx, index, key0, key1):  # pragma: no cover - compiled
    """``lowbias32(lowbias32(index ^ key0) ^ key1)`` on uint32 values. Written as LLVM IR on
    32-bit integers, so that vector loops multiply in 32-bit lanes (numba types a product of
    two uint32 as uint64)."""
    sig = nb_types.uint32(nb_types.uint32, nb_types.uint32, nb_types.uint32)

    def codegen(context, builder, signature, args):
        x, k0, k1 = args
        return _lowbias32(builder, builder.xor(_lowbias32(builder, builder.xor(x, k0)), k1))

    return sig, codegen


@numba.njit(cache=True, nogil=True)
def _dropout(values, out, key0, key1, threshold, scale):  # pragma: no cover - compiled
    k0 = np.uint32(key0)
    k1 = np.uint32(key1)
    t = np.uint32(threshold)
    shift = np.uint32(32 - DROPOUT_BITS)
    for i in range(values.shape[0]):
        h = keyed_hash(np.uint32(i), k0, k1)
        # branch-free (the loop vectorizes): the kept flag as a 0/1 factor
        out[i] = values[i] * (scale * ((h >> shift) >= t))


def dropout_keys() -> tuple[int, int]:
    """Two 32-bit hash keys drawn from torch's default generator (one mask's worth)."""
    key0, key1 = torch.randint(0, 2**32, (2,), dtype=torch.int64).tolist()
    return key0, key1


def dropout_host(values: Tensor, p: float, keys: tuple[int, int] | None = None) -> Tensor:
    """``values * mask`` with ``mask`` ``1 / (1 - p)`` with probability ``1 - p``, else 0,
    independently per element: a new tensor, ``values`` unchanged. CPU float32/float64
    tensors (any shape; made contiguous). ``keys`` (default: fresh :func:`dropout_keys`) fix
    the mask: the same keys on a tensor of the same size give the same mask, which is how a
    backward applies the forward's mask without storing it."""
    if not 0.0 <= p < 1.0:
        raise ValueError(f"dropout probability must be in [0, 1), got {p!r}")
    if values.device.type != "cpu" or values.dtype not in (torch.float32, torch.float64):
        raise ValueError("dropout_host takes a CPU float32 or float64 tensor, got "
                         f"{values.dtype} on {values.device.type}")
    if values.numel() >= 2**32:
        raise ValueError("dropout_host counts elements in 32 bits: at most 2^32 - 1 of them")
    flat = values.detach().contiguous().view(-1).numpy()
    out = host_empty(flat.shape, flat.dtype)
    key0, key1 = dropout_keys() if keys is None else keys
    threshold = round(p * 2**DROPOUT_BITS)
    _dropout(flat, out, key0, key1, threshold, flat.dtype.type(1.0 / (1.0 - p)))
    return torch.from_numpy(out).view(values.shape)
