"""The process's host memory: how glibc's allocator keeps or returns freed blocks (no-ops,
returning False, where the C library is not glibc)."""

from __future__ import annotations

import ctypes
import ctypes.util
from functools import cache

# glibc's mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


def retain_freed_host_memory() -> bool:
    """Keep freed host memory in this process for reuse instead of handing it back to the
    operating system (glibc's ``mallopt``: no ``mmap`` for large blocks, no trimming).

    By default glibc maps every block above its threshold (128 KB, raised up to 32 MB as
    blocks are freed) freshly and unmaps it when freed, so every large tensor of a training
    step (GRIT's ``[pairs, channels]`` features: tens of MB) is new memory whose pages fault in
    on first touch. With the blocks kept, later steps reuse them. Process-wide and permanent:
    the resident memory stays at its peak. ``graphpe train`` calls it on the CPU
    (``--no-retain-memory`` not to).
    Returns whether it took effect (False where the C library is not glibc)."""
    libc = _libc()
    if libc is None or not hasattr(libc, "mallopt"):
        return False
    return bool(libc.mallopt(_M_MMAP_THRESHOLD, 1 << 30)) and bool(
        libc.mallopt(_M_TRIM_THRESHOLD, (1 << 31) - 1))


def release_freed_host_memory() -> bool:
    """Hand the freed memory at the top and in the free pages of glibc's heap back to the
    operating system (``malloc_trim(0)``). A loop that allocates and frees blocks of a few
    hundred KB keeps them in the heap once glibc has raised its mmap threshold, and the
    resident size grows with the loop; calling this between its passes keeps it flat.
    Returns whether memory was released (False where the C library is not glibc)."""
    libc = _libc()
    if libc is None or not hasattr(libc, "malloc_trim"):
        return False
    return bool(libc.malloc_trim(0))


@cache
def _libc():
    """The C library, or None."""
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None
