"""Long calls that show they are alive and can be stopped.

- :func:`progress_bar`: a tqdm bar that appears only once a call has run
  :data:`PROGRESS_DELAY_SECONDS` (short calls print nothing).
- :func:`run_interruptible`: a native call that releases the GIL (a numba ``nogil`` kernel,
  SuperLU's factorization) run in a worker thread while the calling thread waits in short
  slices. Python handles SIGINT only in the main thread and only between bytecodes, so a
  native call run there cannot be stopped by Ctrl-C until it returns; waiting on it instead
  returns control within a slice. The abandoned call runs on to its end in the background
  (its result is dropped), so every such call is also bounded in time by its caller.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from tqdm.auto import tqdm

# a call shows a progress bar once it has run this long
PROGRESS_DELAY_SECONDS = 10.0
# how often a waiting thread wakes to handle signals and refresh its bar
WAIT_SLICE_SECONDS = 0.05

T = TypeVar("T")


def progress_bar(desc: str, total: float | None = None, unit: str = "it",
                 disable: bool = False) -> tqdm:
    """A tqdm bar on stderr, shown once the call has run :data:`PROGRESS_DELAY_SECONDS`."""
    return tqdm(total=total, desc=desc, unit=unit, delay=PROGRESS_DELAY_SECONDS,
                disable=disable, leave=False, dynamic_ncols=True)


def run_interruptible(call: Callable[..., T], *args: Any, desc: str = "native call",
                      expected_seconds: float | None = None) -> T:
    """``call(*args)`` in a worker thread, the calling thread waiting in
    :data:`WAIT_SLICE_SECONDS` slices: a KeyboardInterrupt (or any signal handler's
    exception) is raised here within a slice, whatever ``call`` is doing. Past
    :data:`PROGRESS_DELAY_SECONDS` a bar shows the seconds elapsed against
    ``expected_seconds`` (the caller's prediction) where given. ``call`` must release the
    GIL for the wait to help; its exceptions are raised here."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = call(*args)
        except BaseException as exc:  # handed to the waiting thread
            outcome["error"] = exc

    worker = threading.Thread(target=target, name=f"graphpe: {desc}", daemon=True)
    start = time.perf_counter()
    worker.start()
    total = None if expected_seconds is None else max(float(expected_seconds), 1e-3)
    with progress_bar(desc, total=total, unit="s") as bar:
        while worker.is_alive():
            worker.join(WAIT_SLICE_SECONDS)
            elapsed = time.perf_counter() - start
            if elapsed >= PROGRESS_DELAY_SECONDS:
                bar.n = round(elapsed if total is None else min(elapsed, total), 1)
                bar.refresh()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]
