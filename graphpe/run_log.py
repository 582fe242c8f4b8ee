"""What a training run says while it runs: a bar of the batches inside each epoch (rate and
time left) under the bar of the epochs; where no terminal shows bars, log lines (the first
batch's time and the epoch's predicted time, then the batches and the epochs every
:data:`LINE_SECONDS`); and what an interrupted run kept and how to resume it."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Iterable, Iterator
from typing import Any

from tqdm.auto import tqdm

from graphpe.ops.progress import duration_text

LOG = logging.getLogger("graphpe.train")
# Without a terminal (no bars): a batch or epoch line at most this often (the first batch's
# and the first epoch's always).
LINE_SECONDS = 30.0


def batch_count(loader: Any) -> int | None:
    """How many batches ``loader`` yields; None for one that does not know (a sampler)."""
    try:
        return len(loader)
    except TypeError:
        return None


def batch_bar(loader: Iterable[Any], desc: str, enabled: bool) -> Iterable[Any]:
    """``loader`` shown as a bar of its batches (``desc``: ``"epoch 3"``, ``"val"``) below
    the epochs' bar, cleared when done; ``loader`` itself where bars are off or it is one
    batch (a whole graph)."""
    total = batch_count(loader)
    if not enabled or total == 1:
        return loader
    return tqdm(loader, desc=desc, total=total, leave=False, position=1, unit="batch")


def logged_batches(loader: Iterable[Any], name: str, epoch: int, epochs: int,
                   enabled: bool) -> Iterable[Any]:
    """Where bars are off: ``loader``'s batches with INFO lines on the ``graphpe.train``
    logger, the first after the first batch of the run's first epoch (its seconds and what the
    epoch will take at that rate: a sign of life within seconds, where an epoch can take
    minutes), then at most every :data:`LINE_SECONDS` (batches done, rate, time left in the
    epoch). ``loader`` itself where disabled or it is one batch (a whole graph: the epoch
    lines say all)."""
    total = batch_count(loader)
    if not enabled or total == 1:
        return loader
    return _logged(loader, f"{name}: epoch {epoch + 1}/{epochs}", total, first=epoch == 0)


def _logged(loader: Iterable[Any], where: str, total: int | None,
            first: bool) -> Iterator[Any]:
    start = last = time.monotonic()
    of = "" if total is None else f"/{total:,}"
    for done, batch in enumerate(loader, 1):
        yield batch
        now = time.monotonic()
        left = "" if total is None else (
            f", about {duration_text((total - done) * (now - start) / done)} left in the epoch")
        if done == 1 and first:
            LOG.info("%s: batch 1%s took %.2f s%s", where, of, now - start, left)
        elif now - last >= LINE_SECONDS:
            LOG.info("%s: batch %d%s, %.3g batches/s%s", where, done, of,
                     done / (now - start), left)
        else:
            continue
        last = now


class EpochLines:
    """Where bars are off (stderr is not a terminal, or ``progress=False``): an INFO line on
    the ``graphpe.train`` logger after the first epoch and then at most every
    :data:`LINE_SECONDS` (``graphpe train`` shows them on stderr)."""

    def __init__(self, name: str, epochs: int, enabled: bool) -> None:
        self.name, self.epochs, self.enabled = name, epochs, enabled
        self.last = -math.inf

    def start(self, first: int, batches: int | None, params: int) -> None:
        """The line before the first epoch: what trains, from which epoch, in what steps."""
        if not self.enabled:
            return
        steps = ("one full-graph step" if batches == 1 else
                 "batches" if batches is None else f"{batches:,} batches")
        since = f", from epoch {first + 1} (resumed)" if first else ""
        LOG.info("%s: training %s parameters for %d epochs of %s%s", self.name, f"{params:,}",
                 self.epochs, steps, since)

    def __call__(self, epoch: int, train_loss: float, val: float, best: float,
                 seconds: float) -> None:
        now = time.monotonic()
        if not self.enabled or now - self.last < LINE_SECONDS:
            return
        self.last = now
        LOG.info("%s: epoch %d/%d, loss %.4f, val %.4f (best %.4f), %.3g s per epoch",
                 self.name, epoch + 1, self.epochs, train_loss, val, best, seconds)


def interrupted_message(epoch: int, epochs: int, best_epoch: int, state: str | None,
                        results: str | None) -> str:
    """What an interrupted run says: the epochs it finished, what it writes, how to resume
    (``epoch`` -1: interrupted in its first epoch, with nothing finished to keep)."""
    if epoch < 0:
        return (f"interrupted in the first of {epochs} epochs: no epoch finished, so no record "
                "or state is written (a run resumes from the end of an epoch)")
    kept = f"; its record goes to {results}" if results else ""
    resume = (f"; continue with --resume {state}" if state else
              "; a run with --checkpoint PATH keeps a state to resume from")
    return (f"interrupted after epoch {epoch + 1} of {epochs}: the test metric is of the best "
            f"epoch so far ({best_epoch + 1}){kept}{resume}")
