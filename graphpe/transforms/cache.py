"""precompute's on-disk cache: the key (the transforms' settings and a digest of the data), the
file format (a magic header, the payload's SHA-256, then the ``torch.save`` payload) and its
atomic writes (a temporary file renamed into place; those of writers that died are removed).

A cache file is ``<cache_dir>/<key>.pt`` holding ``{"format", "key", "outputs"}``: the
outputs of :func:`~graphpe.transforms.precompute` concatenated over the dataset's graphs."""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import socket
import tempfile
import time
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path

import torch
from torch import Tensor
from torch_geometric.transforms import BaseTransform

CACHE_FORMAT = 1
_MAGIC = b"GRAPHPE1"


def fingerprint_of(tensors: Iterable[Tensor | None]) -> str:
    """The data's digest: each tensor's dtype and bytes in turn (None skipped)."""
    h = hashlib.sha256()
    for t in tensors:
        if t is not None:
            h.update(str(t.dtype).encode())
            h.update(t.contiguous().numpy().tobytes())
    return h.hexdigest()


def cache_key(transforms: Sequence[BaseTransform], fingerprint: str) -> str:
    """The cache key: the transforms' settings (their ``repr``) and the data's fingerprint."""
    payload = json.dumps([CACHE_FORMAT, [repr(t) for t in transforms], fingerprint])
    return hashlib.sha256(payload.encode()).hexdigest()


def cache_path(cache_dir: str | os.PathLike, key: str) -> Path:
    """The file of ``key`` in ``cache_dir``."""
    return Path(cache_dir) / f"{key}.pt"


# A temporary cache file is named <final name>.<host tag>-<pid>-<random>.tmp, so a later run can
# tell that its writer died (SIGKILL, power loss) before the atomic rename.
STALE_TEMP_SECONDS = 24 * 3600
_TEMP_NAME = re.compile(r"\.([0-9a-f]{8})-(\d+)-[^.]*\.tmp$")


def host_tag() -> str:
    """This host's tag in the names of temporary files: 8 hex digits of its name's hash."""
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: existence check only (POSIX)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def remove_stale_temps(cache_dir: str | os.PathLike, now: float | None = None) -> list[Path]:
    """Delete the temporary files of cache writes that never finished: those whose writer
    process on this host is gone, and any older than :data:`STALE_TEMP_SECONDS` (writers on
    other hosts of a shared folder). Returns the files removed."""
    now = time.time() if now is None else now
    host, removed = host_tag(), []
    for tmp in Path(cache_dir).glob("*.tmp"):
        match = _TEMP_NAME.search(tmp.name)
        if match is None:
            continue
        try:
            age = now - tmp.stat().st_mtime
        except FileNotFoundError:  # its writer just renamed or removed it
            continue
        dead = (os.name == "posix" and match.group(1) == host
                and not _pid_alive(int(match.group(2))))
        if dead or age > STALE_TEMP_SECONDS:
            tmp.unlink(missing_ok=True)
            removed.append(tmp)
    return removed


def save_outputs(path: Path, key: str, outputs: dict[str, Tensor]) -> None:
    """Write ``outputs`` as the cache file of ``key`` at ``path``, atomically: to a temporary
    file beside it, synced, then renamed into place."""
    buf = io.BytesIO()
    torch.save({"format": CACHE_FORMAT, "key": key, "outputs": outputs}, buf)
    payload = buf.getvalue()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f"{path.name}.{host_tag()}-{os.getpid()}-",
                               suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(_MAGIC + hashlib.sha256(payload).digest() + payload)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load_outputs(path: Path, key: str) -> dict[str, Tensor] | None:
    """The cached outputs, or None if the file is absent, damaged (with a warning) or for
    another key."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    head = len(_MAGIC) + 32
    if len(raw) < head or raw[: len(_MAGIC)] != _MAGIC:
        # (stacklevel 3: precompute, the caller of this function's caller)
        warnings.warn(f"cache file {path} is damaged (bad header); recomputing", stacklevel=3)
        return None
    payload = raw[head:]
    if hashlib.sha256(payload).digest() != raw[len(_MAGIC) : head]:
        warnings.warn(f"cache file {path} is damaged (checksum mismatch); recomputing",
                      stacklevel=3)
        return None
    obj = torch.load(io.BytesIO(payload), weights_only=True)
    if obj.get("key") != key or obj.get("format") != CACHE_FORMAT:
        return None
    return obj["outputs"]
