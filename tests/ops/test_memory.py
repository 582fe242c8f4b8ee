import platform

import numpy as np
import pytest

from graphpe.ops.memory import release_freed_host_memory


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's malloc_trim")
def test_release_hands_the_freed_heap_back():
    """Blocks of a few hundred KB freed between small survivors stay in glibc's heap (once
    its mmap threshold has risen); releasing hands them back, and the resident size falls."""
    big = np.ones(2 << 20)  # 16 MB, mapped; freed, it raises glibc's mmap threshold to 16 MB
    del big
    blocks, keep = [], []
    for _ in range(200):
        blocks.append(np.ones(300_000 // 8))  # now from the heap
        keep.append(np.ones(200))  # small survivors (malloc'd) between them and above
    del blocks
    kept = _status_kb("VmRSS")  # freed, but still the process's
    assert release_freed_host_memory() is True
    assert _status_kb("VmRSS") < kept - 30_000  # most of the 60 MB handed back


def test_release_is_a_bool_everywhere():
    assert isinstance(release_freed_host_memory(), bool)
