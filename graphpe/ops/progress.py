"""Long calls that show they are alive and can be stopped.

- :func:`progress_bar`: a tqdm bar that appears only once a call has run
  :data:`PROGRESS_DELAY_SECONDS` (short calls print nothing).
- :class:`DelayedBar`: a counter with :func:`progress_bar`'s methods that makes its bar only
  once the delay has passed (no tqdm object for the many short calls).
- :func:`elapsed_bar`: the same for a block that reports no progress of its own: past the
  delay, a bar of the seconds it has run (against a prediction where there is one).
- :func:`run_interruptible`: a native call that releases the GIL (a numba ``nogil`` kernel,
  SuperLU's factorization) run in a worker thread while the calling thread waits in short
  slices. Python handles SIGINT only in the main thread and only between bytecodes, so a
  native call run there cannot be stopped by Ctrl-C until it returns; waiting on it instead
  returns control within a slice. The abandoned call runs on to its end in the background
  (its result is dropped), so every such call is also bounded in time by its caller.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from tqdm.auto import tqdm

# a call shows a progress bar once it has run this long
PROGRESS_DELAY_SECONDS = 10.0
# how often a waiting thread wakes to handle signals and refresh its bar
WAIT_SLICE_SECONDS = 0.05
# how often an elapsed-time bar is redrawn
ELAPSED_REFRESH_SECONDS = 0.5
# how often any bar is redrawn where stderr is not a terminal (a log file, CI): each redraw
# stays in the log, so a few a minute rather than a stream
LOG_REFRESH_SECONDS = 30.0

T = TypeVar("T")


def duration_text(seconds: float) -> str:
    """``seconds`` as a person reads it: ``"42 s"``, ``"12 min"``, ``"3.1 h"``."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def refresh_seconds(terminal_seconds: float = 0.1) -> float:
    """How often a bar is redrawn: ``terminal_seconds`` on a terminal,
    :data:`LOG_REFRESH_SECONDS` where stderr is a file or a pipe."""
    isatty = getattr(sys.stderr, "isatty", None)
    return terminal_seconds if isatty is not None and isatty() else LOG_REFRESH_SECONDS


def progress_bar(desc: str, total: float | None = None, unit: str = "it",
                 disable: bool = False, delay: float | None = None) -> tqdm:
    """A tqdm bar on stderr, shown once it has existed ``delay`` seconds (default
    :data:`PROGRESS_DELAY_SECONDS`; redrawn as :func:`refresh_seconds` says)."""
    return tqdm(total=total, desc=desc, unit=unit,
                delay=PROGRESS_DELAY_SECONDS if delay is None else delay, disable=disable,
                leave=False, dynamic_ncols=True, mininterval=refresh_seconds())


class DelayedBar:
    """A progress counter (``update``, ``n``, ``set_postfix``, ``close``; a context manager)
    that makes its :func:`progress_bar` only once :data:`PROGRESS_DELAY_SECONDS` have passed
    since it was made, at an ``update`` or ``set_postfix``. A short call makes no tqdm object:
    the first in a process costs a millisecond or more (tqdm starts its monitor thread), a
    sizeable share of a LapPE call on a graph of a few thousand nodes."""

    def __init__(self, desc: str, total: float | None = None, unit: str = "it") -> None:
        self.desc, self.total, self.unit = desc, total, unit
        self.n = 0
        self.postfix: dict[str, Any] = {}
        self.bar: tqdm | None = None
        self.start = time.perf_counter()

    def update(self, count: float = 1) -> None:
        self.n += count
        self._show()

    def set_postfix(self, refresh: bool = False, **values: Any) -> None:
        self.postfix = values
        self._show()

    def _show(self) -> None:
        if self.bar is None:
            if time.perf_counter() - self.start < PROGRESS_DELAY_SECONDS:
                return
            self.bar = progress_bar(self.desc, total=self.total, unit=self.unit, delay=0.0)
        self.bar.set_postfix(self.postfix, refresh=False)
        self.bar.update(self.n - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()

    def __enter__(self) -> DelayedBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextlib.contextmanager
def elapsed_bar(desc: str, expected_seconds: float | None = None) -> Iterator[None]:
    """Inside the block, a watcher thread waits :data:`PROGRESS_DELAY_SECONDS`; if the block is
    still running then, a tqdm bar shows the seconds it has run (out of ``expected_seconds``
    where the caller predicts them), redrawn every :data:`ELAPSED_REFRESH_SECONDS` (on a
    terminal; :data:`LOG_REFRESH_SECONDS` into a log) until the block ends. Short blocks print
    nothing and cost one thread start."""
    done = threading.Event()
    delay, refresh = PROGRESS_DELAY_SECONDS, refresh_seconds(ELAPSED_REFRESH_SECONDS)
    start = time.perf_counter()

    def watch() -> None:
        if done.wait(delay):
            return
        total = None if expected_seconds is None else round(float(expected_seconds), 1)
        with tqdm(desc=desc, total=total, unit="s", leave=False, dynamic_ncols=True,
                  bar_format="{desc}: {n:.0f}/{total_fmt} s" if total else
                  "{desc}: {n:.0f} s") as bar:
            while True:
                bar.n = time.perf_counter() - start
                bar.refresh()
                if done.wait(refresh):
                    return

    watcher = threading.Thread(target=watch, name=f"graphpe: {desc}", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()


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
    bar = None  # made once the call has run the delay: most calls end sooner
    try:
        while True:
            worker.join(WAIT_SLICE_SECONDS)
            elapsed = time.perf_counter() - start
            if elapsed >= PROGRESS_DELAY_SECONDS:
                if bar is None:
                    bar = progress_bar(desc, total=total, unit="s", delay=0.0)
                bar.n = round(elapsed if total is None else min(elapsed, total), 1)
                bar.refresh()
            if not worker.is_alive():
                break
    finally:
        if bar is not None:
            bar.close()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]
